// The inference's outputs (study/infer.hpp: infer_files).
#include <algorithm>
#include <cmath>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/plot.hpp"
#include "infer.hpp"
#include "sim/report.hpp"

namespace ks {

namespace {

constexpr double kPinnedBelow = 0.5;  // an unknown whose 90% range narrowed to at most half the prior's is pinned down

// a string as YAML reads it back (a JSON string is a YAML one)
std::string yaml_quote(const std::string& t) { return nlohmann::json(t).dump(); }

std::string num(double v) {
  if (!std::isfinite(v)) return "";
  return printf_number("%.4g", v);
}

double on_scale(const Unknown& u, double v) { return u.log_scale() ? std::log(v) : v; }

// One reading's inference: its conditioned run and its leave-one-out runs.
struct Inferred {
  std::string reading;
  std::vector<bool> use, inf;
  const SmcResult* main = nullptr;
  std::vector<LeftOut> loo;
  std::vector<bool> loo_exact;  // whether each left-out run reached every other finding
  int resists = -1;             // when the conditioned run did not reach tolerance 0: the finding held least often
};

std::vector<Inferred> inferred_of(const InferRun& run) {
  std::vector<Inferred> out;
  for (const auto& [reading, use] : readings_of(run.preds)) {
    Inferred x;
    x.reading = reading;
    x.use = use;
    x.inf = informative(run.rates, use);
    for (const SmcRun& r : run.runs) {
      if (r.reading != reading) continue;
      if (r.left_out < 0) {
        x.main = &r.result;
        continue;
      }
      x.loo.push_back(predict_left_out(r.result.population, run.preds, static_cast<std::size_t>(r.left_out)));
      x.loo_exact.push_back(r.result.exact);
    }
    if (x.main && !x.main->exact && !x.main->population.empty()) {
      double least = 2;
      for (std::size_t i = 0; i < run.preds.size(); ++i) {
        if (!x.inf[i]) continue;
        double n = 0;
        for (const Draw& d : x.main->population) n += holds(run.preds[i], d.values[i]) ? 1 : 0;
        n /= static_cast<double>(x.main->population.size());
        if (n < least) least = n, x.resists = static_cast<int>(i);
      }
    }
    out.push_back(std::move(x));
  }
  return out;
}

const std::vector<Draw>& posterior_draws(const Inferred& x) {
  static const std::vector<Draw> none;
  return x.main ? x.main->population : none;
}

// An unknown's posterior: its 90% range and median, and how far it narrowed
// (the 90% range's width on the unknown's scale over the prior's, which is
// 90% of the range for a uniform prior); a choice: each choice's share.
struct UnknownPosterior {
  Quantiles q;
  double narrowed_to = 1;
  std::vector<double> shares;  // choices
  bool pinned = false;
};

UnknownPosterior posterior_of(const InferRun& run, const Inferred& x, std::size_t k) {
  const Unknown& u = run.unknowns[k];
  UnknownPosterior p;
  std::vector<double> v;
  for (const Draw& d : posterior_draws(x)) v.push_back(d.theta[k]);
  p.q = quantiles(v);
  if (u.kind == Unknown::Kind::choice) {
    p.shares.assign(u.choices.size(), 0.0);
    for (double c : v) p.shares.at(static_cast<std::size_t>(c)) += 1.0 / static_cast<double>(v.size());
    p.pinned = !v.empty() && *std::max_element(p.shares.begin(), p.shares.end()) >= 0.9;
    return p;
  }
  const double prior = 0.9 * (on_scale(u, u.hi) - on_scale(u, u.lo));
  if (!v.empty() && prior > 0) p.narrowed_to = (on_scale(u, p.q.hi) - on_scale(u, p.q.lo)) / prior;
  p.pinned = !v.empty() && p.narrowed_to <= kPinnedBelow;
  return p;
}

std::string prior_text(const Unknown& u) {
  if (u.kind == Unknown::Kind::choice) {
    std::string t;
    for (const auto& c : u.choices) t += (t.empty() ? "" : ", ") + c;
    return "[" + t + "]";
  }
  return "[" + u.text(u.lo) + ", " + u.text(u.hi) + "]";
}

std::string posterior_text(const Unknown& u, const UnknownPosterior& p) {
  if (p.q.n == 0) return "no draw accepted";
  if (u.kind == Unknown::Kind::choice) {
    std::string t;
    for (std::size_t i = 0; i < u.choices.size(); ++i) t += (i ? ", " : "") + u.choices[i] + " " + printf_number("%.0f%%", 100 * p.shares[i]);
    return t;
  }
  return "[" + u.text(p.q.lo) + ", " + u.text(p.q.hi) + "], median " + u.text(p.q.median);
}

std::string posterior_yaml(const StudySpec& s, const InferRun& run, const Inferred& x) {
  std::ostringstream y;
  y << "# kanscale study --infer: the settings of what the source leaves unsaid that reproduce its findings together\n"
    << "# (rejection ABC over the study's unknowns; docs/studies.md, \"Inference\")\n"
    << "kind: kanscale-posterior\n"
    << "conditioned_on: " << yaml_quote("the paper's findings (" + s.published.source + "), overhead read as " + x.reading + " communication") << "\n"
    << "study: " << yaml_quote(s.file) << "\n"
    << "prior_draws: " << run.prior.size() << "\n"
    << "usable: " << std::count_if(run.prior.begin(), run.prior.end(), [](const Draw& d) { return d.ok; }) << "\n"
    << "simulations: " << (x.main ? x.main->simulated : 0) << "   # ABC-SMC, after the prior's draws\n"
    << "population: " << posterior_draws(x).size() << "\n"
    << "exact: " << (x.main && x.main->exact ? "true   # every informative finding holds in every particle" : "false  # the budget ended first: tolerance above 0") << "\n"
    << "tolerances: [";
  if (x.main)
    for (std::size_t i = 0; i < x.main->tolerances.size(); ++i) y << (i ? ", " : "") << num(x.main->tolerances[i]);
  y << "]\n"
    << "findings:\n";
  for (std::size_t i = 0; i < run.preds.size(); ++i) {
    if (!x.use[i]) continue;
    y << "  - {id: " << run.preds[i].id << ", target: " << yaml_quote(run.preds[i].target) << ", prior_rate: " << num(run.rates[i])
      << ", informative: " << (x.inf[i] ? "true" : "false") << "}\n";
  }
  y << "unknowns:\n";
  for (std::size_t k = 0; k < run.unknowns.size(); ++k) {
    const Unknown& u = run.unknowns[k];
    const UnknownPosterior p = posterior_of(run, x, k);
    y << "  - {key: " << u.key << ", prior: " << yaml_quote(prior_text(u)) << ", posterior: " << yaml_quote(posterior_text(u, p));
    if (u.kind != Unknown::Kind::choice && p.q.n > 0) y << ", narrowed_to: " << num(p.narrowed_to);
    y << ", pinned: " << (p.pinned ? "true" : "false") << "}\n";
  }
  return y.str();
}

std::string findings_csv(const InferRun& run, const std::vector<Inferred>& xs) {
  std::ostringstream c;
  c << "finding,informative,reproduced,value,target\n";
  for (const Inferred& x : xs)
    for (std::size_t i = 0; i < run.preds.size(); ++i) {
      if (!x.use[i]) continue;
      std::vector<double> v;
      std::size_t hit = 0;
      for (const Draw& d : posterior_draws(x)) {
        v.push_back(d.values[i]);
        hit += holds(run.preds[i], d.values[i]) ? 1 : 0;
      }
      const bool reproduced = !v.empty() && 2 * hit >= v.size();
      c << x.reading << ":" << run.preds[i].id << "," << (x.inf[i] ? "yes" : "no") << "," << (reproduced ? "yes" : "no") << ","
        << num(quantiles(v).median) << "," << csv_escape(run.preds[i].target) << "\n";
    }
  return c.str();
}

std::string loo_csv(const InferRun& run, const std::vector<Inferred>& xs) {
  std::ostringstream c;
  c << "finding,median,lo90,hi90,published,inside\n";
  for (const Inferred& x : xs)
    for (const LeftOut& l : x.loo)
      c << x.reading << ":" << run.preds[l.predicate].id << "," << num(l.value.median) << "," << num(l.value.lo) << "," << num(l.value.hi)
        << "," << csv_escape(run.preds[l.predicate].target) << "," << (l.inside ? "yes" : "no") << "\n";
  return c.str();
}

std::string predictive_csv(const StudySpec& s, const InferRun& run, int cluster_gpus_per_node) {
  std::ostringstream c;
  c << "gpus,gpus_per_node,hypothetical,metric,median,lo90,hi90,draws\n";
  std::size_t col = 0;
  for (int gpn : s.infer.predict_gpus_per_node)
    for (int g : predictive_gpus(s))
      for (const char* m : {"speedup", "overhead_exposed_pct", "overhead_total_pct"}) {
        std::vector<double> v;
        for (const Draw& d : run.predictive)
          if (d.extra.size() > col) v.push_back(d.extra[col]);
        const Quantiles q = quantiles(v);
        c << g << "," << gpn << "," << (gpn > cluster_gpus_per_node ? "yes" : "no") << "," << m << "," << num(q.median) << "," << num(q.lo)
          << "," << num(q.hi) << "," << q.n << "\n";
        ++col;
      }
  return c.str();
}

std::string sensitivity_csv(const std::vector<std::pair<const InferRun*, std::vector<Inferred>>>& runs) {
  std::ostringstream c;
  c << "ranges,reading,unknown,prior,posterior,narrowed_to,pinned,exact\n";
  for (const auto& [run, xs] : runs)
    for (const Inferred& x : xs)
      for (std::size_t k = 0; k < run->unknowns.size(); ++k) {
        const Unknown& u = run->unknowns[k];
        const UnknownPosterior p = posterior_of(*run, x, k);
        c << (run->range_scale == 1 ? "as given" : "x" + num(run->range_scale)) << "," << x.reading << "," << u.key << ","
          << csv_escape(prior_text(u)) << "," << csv_escape(posterior_text(u, p)) << ","
          << (u.kind == Unknown::Kind::choice || p.q.n == 0 ? "" : num(p.narrowed_to)) << "," << (p.pinned ? "yes" : "no") << ","
          << (x.main && x.main->exact ? "yes" : "no") << "\n";
      }
  return c.str();
}

// The mechanisms a real DDP job has that could make a resisting finding hold
// (the study's candidates; docs/studies.md).
std::string missing_physics(const InferRun& run, const Inferred& x) {
  if (x.resists < 0) return "";
  const std::string& id = run.preds[static_cast<std::size_t>(x.resists)].id;
  std::string why;
  if (id == "speedup")
    why = "a cost that grows with the GPU count beyond the replay's: a data loader on the critical path, or a per-step host "
          "synchronisation that exposes the all-reduce";
  else if (id.rfind("overhead_", 0) == 0)
    why = "NCCL's algorithm choice across node counts on PCIe A100s with one NIC per node (the tree/ring switch), or inter-node "
          "latency beyond the datasheet's";
  else if (id == "weak_drop_then_plateau")
    why = "a fixed cost the first extra GPU adds and later ones do not: the intra-node hop through host shared memory, or a per-step "
          "synchronisation that appears with the first all-reduce";
  else
    why = "the memory model's terms at the model sizes (activations against parameters)";
  return "Within the budget no setting reproduced every informative finding of the " + x.reading + " reading together (final tolerance " +
         num(x.main->tolerances.back()) + "); the one that resists is **" + id + "** (held least often in the final population). Mechanisms of a real DDP job that would produce it: " + why + ".\n";
}

std::string smc_line(const Inferred& x) {
  if (!x.main) return "no run";
  std::string t;
  for (double e : x.main->tolerances) t += (t.empty() ? "" : ", ") + num(e);
  return std::to_string(x.main->simulated) + " simulations, tolerances " + t + (x.main->exact ? " (exact)" : " (budget spent above 0)");
}

std::string findings_table(const InferRun& run, const std::vector<Inferred>& xs) {
  std::ostringstream md;
  md << "| reading | finding | target | prior rate | informative | posterior: holds in | left out: median [90%] | inside |\n"
        "|---|---|---|---|---|---|---|---|\n";
  for (const Inferred& x : xs)
    for (std::size_t i = 0; i < run.preds.size(); ++i) {
      if (!x.use[i]) continue;
      std::string left = "-", inside = "-";
      for (std::size_t j = 0; j < x.loo.size(); ++j)
        if (x.loo[j].predicate == i) {
          const LeftOut& l = x.loo[j];
          left = num(l.value.median) + " [" + num(l.value.lo) + ", " + num(l.value.hi) + "]" + (x.loo_exact[j] ? "" : " (others not all reached)");
          inside = l.inside ? "yes" : "**no**";
        }
      double n = 0;
      std::size_t P = 0;  // the draws that replayed it
      for (const Draw& d : posterior_draws(x)) {
        if (!std::isfinite(d.values[i])) continue;
        ++P;
        n += holds(run.preds[i], d.values[i]) ? 1 : 0;
      }
      md << "| " << x.reading << " | " << run.preds[i].text << " | " << run.preds[i].target << " | " << printf_number("%.1f%%", 100 * run.rates[i])
         << " | " << (x.inf[i] ? "yes" : "no") << " | " << (P ? printf_number("%.0f%%", 100 * n / static_cast<double>(P)) : "-") << " | " << left
         << " | " << inside << " |\n";
    }
  return md.str();
}

std::string report_md(const StudySpec& s, const InferRun& run, const InferRun& doubled, const std::vector<Inferred>& xs,
                      const std::vector<Inferred>& dxs, double wall_s, int ranks, const std::string& cmdline) {
  std::ostringstream md;
  md << "# " << s.name << ": the findings explained\n\n`" << cmdline << "`\n\n"
     << "ABC-SMC (docs/studies.md, \"Inference\"): " << run.prior.size() << " draws from the prior (every unknown uniform over its range on "
     << "its own scale) decide which findings are informative (the prior satisfies one in less than " << printf_number("%.0f%%", 100 * kInformativeBelow)
     << " of them) and seed a population of " << s.infer.population << "; each run then spends at most " << s.infer.budget
     << " simulations (1-" << s.published.gpus << " GPUs strong and weak, and the " << s.published.model_widths.size()
     << " model sizes each). " << ranks << " rank(s), " << printf_number("%.1f", wall_s) << " s for everything below.\n\n"
     << "## Findings\n\n" << findings_table(run, xs);
  for (const Inferred& x : xs) md << "\n" << x.reading << ": " << smc_line(x) << ".\n" << missing_physics(run, x);
  md << "\n## Posterior (ranges as given, and doubled)\n\n| unknown | prior | " << xs.front().reading << " | " << xs.back().reading
     << " | doubled prior | doubled, " << dxs.front().reading << " | doubled, " << dxs.back().reading << " |\n|---|---|---|---|---|---|---|\n";
  for (std::size_t k = 0; k < run.unknowns.size(); ++k) {
    auto cell = [&](const InferRun& r, const Inferred& x) {
      const UnknownPosterior p = posterior_of(r, x, k);
      return posterior_text(r.unknowns[k], p) + (p.pinned ? " (**pinned**)" : "");
    };
    md << "| " << run.unknowns[k].key << " | " << prior_text(run.unknowns[k]) << " | " << cell(run, xs.front()) << " | " << cell(run, xs.back())
       << " | " << prior_text(doubled.unknowns[k]) << " | " << cell(doubled, dxs.front()) << " | " << cell(doubled, dxs.back()) << " |\n";
  }
  md << "\nDoubled ranges: " << dxs.front().reading << ": " << smc_line(dxs.front()) << "; " << dxs.back().reading << ": " << smc_line(dxs.back())
     << ".\n\n## Posterior predictive (" << xs.front().reading << " reading, " << run.predictive.size() << " posterior draws)\n\n"
     << "More than " << (s.scenario_bases.empty() ? 0 : s.scenario_bases.front().cluster_config.gpus_per_node)
     << " GPUs per node would be hypothetical on this cluster; predictive.csv has the values.\n";
  return md.str();
}

// ------------------------------------------------------------ what users see

// The unknowns of the job, not the machine: a posterior calibration leaves them out.
bool machine_key(const std::string& k) {
  for (const char* job : {"batch_mode", "batch_per_gpu", "global_batch", "hidden_width", "grid_size", "epoch_overhead"})
    if (k == job) return false;
  return true;
}

// A value as a setting reads it back, at full precision.
std::string setting_text(const Unknown& u, double v) {
  switch (u.kind) {
    case Unknown::Kind::factor: return printf_number("%.6gx", v);
    case Unknown::Kind::time: return printf_number("%.6gus", v * 1e6);
    case Unknown::Kind::choice: return u.choices.at(static_cast<std::size_t>(v));
    default: return printf_number("%.0f", v);
  }
}

std::string settings_map(const InferRun& run, const Draw& d) {
  std::string t;
  for (std::size_t k = 0; k < run.unknowns.size(); ++k)
    if (machine_key(run.unknowns[k].key))
      t += (t.empty() ? "" : ", ") + run.unknowns[k].key + ": " + yaml_quote(setting_text(run.unknowns[k], d.theta[k]));
  return "{" + t + "}";
}

// The particle nearest the findings (the smallest distance; the first of equals).
const Draw* nearest(const InferRun& run, const Inferred& x) {
  const std::vector<double> scales = value_scales(run.prior, run.preds);
  const Draw* best = nullptr;
  double bd = 0;
  for (const Draw& d : posterior_draws(x)) {
    const double dd = distance(d, run.preds, x.inf, scales);
    if (!best || dd < bd) best = &d, bd = dd;
  }
  return best;
}

// The first reading's machine settings as a calibration: the particle
// nearest the findings as its point, the run without the first finding's
// predictive draws as its band.
std::string calibration_yaml(const StudySpec& s, const InferRun& run, const Inferred& x) {
  const Draw* point = nearest(run, x);
  if (!point) return "";
  const std::string cluster = s.clusters.empty() ? std::string() : s.clusters.front().cluster.name;
  std::ostringstream y;
  y << "# CONDITIONED ON THE PAPER'S FINDINGS, not measured: the machine's unknowns of study " << s.name << " as\n"
    << "# kanscale study --infer left them (docs/studies.md, \"Inference\"). `simulate --calibration` on cluster " << cluster << "\n"
    << "# predicts at `point` (the particle nearest the findings) and draws its band from `draws`.\n"
    << "name: " << s.name << "-posterior\n"
    << "source: posterior\n"
    << "concurrency: 1\n"
    << "fitted_from: " << yaml_quote("the datasheet calibration, its machine's unknowns set by kanscale study " + s.file + " --infer") << "\n"
    << "posterior:\n"
    << "  conditioned_on: " << yaml_quote("the paper's findings (" + s.published.source + "), overhead read as " + x.reading + " communication" +
                                          (x.main && x.main->exact ? "" : "; approximate: tolerance " + num(x.main ? x.main->tolerances.back() : 0.0) + " above 0")) << "\n"
    << "  point: " << settings_map(run, *point) << "\n";
  if (!run.without.empty()) {
    y << "  band_without: " << run.without << "\n  draws:\n";
    for (const Draw& d : run.predictive_without) y << "    - " << settings_map(run, d) << "\n";
  }
  return y.str();
}

// The posterior predictive's speedup at the cluster's GPUs per node: x, median, 90% band.
std::vector<std::array<double, 4>> speedup_band(const StudySpec& s, const std::vector<Draw>& draws, int gpn) {
  std::vector<std::array<double, 4>> pts = {{1, 1, 1, 1}};
  const std::vector<int> gpus = predictive_gpus(s);
  std::size_t col = 0;
  for (int per_node : s.infer.predict_gpus_per_node)
    for (int g : gpus) {
      if (per_node == gpn) {
        std::vector<double> v;
        for (const Draw& d : draws)
          if (d.extra.size() > col) v.push_back(d.extra[col]);
        const Quantiles q = quantiles(v);
        if (q.n > 0) pts.push_back({static_cast<double>(g), q.median, q.lo, q.hi});
      }
      col += 3;
    }
  return pts;
}

PlotSpec posterior_plot(const StudySpec& s, const InferRun& run, const Inferred& x, int gpn) {
  PlotSpec p{"posterior_speedup", plot_safe_text("Strong scaling, conditioned on the findings (" + s.name + ", " + x.reading + " overhead)"),
             "GPUs", "speedup over 1 GPU", Axis::log2, Axis::log2};
  p.diagonal = true;
  p.diagonal_title = "ideal";
  p.band_title = "90 percent posterior band";
  p.note = "posterior predictive of kanscale study --infer at " + std::to_string(gpn) + " GPUs per node";
  p.series.push_back({"every finding: median", speedup_band(s, run.predictive, gpn)});
  if (!run.without.empty()) {
    PlotSeries w{plot_safe_text("without " + run.without + ": median"), speedup_band(s, run.predictive_without, gpn)};
    w.dashed = true;
    p.series.push_back(std::move(w));
  }
  if (s.published.speedup) {
    const double m = s.published.speedup_match > 0 ? s.published.speedup_match : s.published.speedup_tol;
    const double g = s.published.gpus;
    p.published.push_back({g, *s.published.speedup, g, g, *s.published.speedup - m, *s.published.speedup + m});
  }
  return p;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> infer_files(const StudySpec& s, const InferRun& run, const InferRun& doubled, double wall_s,
                                                             int ranks, const std::string& cmdline) {
  const std::vector<Inferred> xs = inferred_of(run), dxs = inferred_of(doubled);
  const int gpn = s.scenario_bases.empty() ? 0 : s.scenario_bases.front().cluster_config.gpus_per_node;
  const PlotSpec plot = posterior_plot(s, run, xs.front(), gpn);
  std::vector<std::pair<std::string, std::string>> files = {{"posterior.yaml", posterior_yaml(s, run, xs.front())},
                                                             {"findings.csv", findings_csv(run, xs)},
                                                             {"loo.csv", loo_csv(run, xs)},
                                                             {"predictive.csv", predictive_csv(s, run, gpn)},
                                                             {"sensitivity.csv", sensitivity_csv({{&run, xs}, {&doubled, dxs}})},
                                                             {"report.md", report_md(s, run, doubled, xs, dxs, wall_s, ranks, cmdline)},
                                                             {plot.name + ".gp", gnuplot_script(plot)},
                                                             {plot.name + ".dat", gnuplot_data(plot)}};
  if (std::string cal = calibration_yaml(s, run, xs.front()); !cal.empty()) files.emplace_back("calibration.yaml", std::move(cal));
  return files;
}

}  // namespace ks
