#include "report.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "formats/provenance.hpp"
#include "base/output_files.hpp"
#include "base/plot.hpp"
#include "model/units.hpp"
#include "validation/schedule.hpp"

namespace ks {

PlotSpec scatter_plot(const std::vector<CaseResult>& rs) {
  PlotSpec p{"predicted_vs_measured", "Predicted against measured iteration time", "measured iteration (ms)",
             "predicted iteration (ms), with its interval", Axis::log10, Axis::log10, false, true, "predicted = measured",
             "Error bars: the prediction's interval (where the calibration has measured uncertainty).", {}};
  const char* names[] = {"1 rank", "several ranks", "oversubscribed (not judged)"};
  std::vector<PlotSeries> groups(3);
  for (int g = 0; g < 3; ++g) groups[static_cast<std::size_t>(g)] = {names[g], {}, false, 0};
  const double nan = std::nan("");
  for (const auto& r : rs) {
    const std::size_t g = r.c.oversubscribed ? 2 : r.c.ranks > 1 ? 1 : 0;
    groups[g].points.push_back({r.live.iteration_s * 1e3, r.predicted.iteration_s * 1e3, r.interval ? r.interval->lo * 1e3 : nan,
                                r.interval ? r.interval->hi * 1e3 : nan});
  }
  for (auto& g : groups)
    if (!g.points.empty()) p.series.push_back(std::move(g));
  return p;
}

PlotSpec errors_plot(const std::vector<CaseResult>& rs) {
  PlotSpec p{"error_per_case", "Iteration-time error per case", "case (in the order of the table in the report)",
             "predicted / measured - 1 (percent)", Axis::linear, Axis::linear, false, false, "",
             "Error bars at 0: +- each case's noise floor (robust spread of its rounds).", {}};
  const double nan = std::nan("");
  PlotSeries judged{"judged", {}, false, 1}, over{"oversubscribed (not judged)", {}, false, 2}, noise{"noise floor (+-)", {}, false, 3};
  for (std::size_t i = 0; i < rs.size(); ++i) {
    const double x = static_cast<double>(i + 1);
    const double e = pct_error(rs[i].predicted.iteration_s, rs[i].live.iteration_s);
    (rs[i].c.oversubscribed ? over : judged).points.push_back({x, e, nan, nan});
    noise.points.push_back({x, 0.0, -rs[i].noise_pct, rs[i].noise_pct});
  }
  for (PlotSeries* s : {&judged, &over, &noise})
    if (!s->points.empty()) p.series.push_back(std::move(*s));
  p.xmin = 0.5;
  p.xmax = static_cast<double>(rs.size()) + 0.5;
  p.xtic = 1;
  return p;
}

std::vector<OpCompare> op_comparison(const std::vector<TraceSlice>& sim, const std::vector<TraceSlice>& live) {
  auto op_name = [](const std::string& n) {
    for (const char* whole : {"adam", "copy_back"})
      if (n.rfind(std::string(whole) + " ", 0) == 0) return std::string(whole);
    return n;
  };
  std::map<std::string, OpCompare> by;
  for (const auto& s : sim)
    if (s.track == 0 && s.category != "wait") by[op_name(s.name)].predicted_s += s.t1_s - s.t0_s;
  for (const auto& s : live)
    if (s.track == 0 && s.category != "wait") by[op_name(s.name)].live_s += s.t1_s - s.t0_s;
  std::vector<OpCompare> out;
  for (auto& [name, c] : by) {
    if (c.live_s <= 0 || c.predicted_s <= 0) continue;  // only ops both sides time
    c.op = name;
    out.push_back(c);
  }
  std::stable_sort(out.begin(), out.end(), [](const OpCompare& a, const OpCompare& b) { return a.live_s > b.live_s; });
  return out;
}

namespace {
// Rank 0's slices of one iteration, on a time axis starting at 0.
std::vector<TraceSlice> rank0_iteration(const std::vector<TraceSlice>& all, std::int64_t iteration) {
  std::vector<TraceSlice> v;
  double t0 = 1e300;
  for (const auto& s : all) {
    if (s.rank != 0 || s.iteration != iteration) continue;
    v.push_back(s);
    t0 = std::min(t0, s.t0_s);
  }
  for (auto& s : v) {
    s.t0_s -= t0;
    s.t1_s -= t0;
  }
  return v;
}
}  // namespace

std::vector<TraceSlice> live_iteration(const nlohmann::json& trace, int steps) {
  return rank0_iteration(read_trace_slices(trace), steps - 1);  // the last steady iteration
}

std::vector<TraceSlice> simulated_iteration(const ScalingPoint& pt) {
  std::int64_t last = 0;
  for (const auto& s : pt.trace)
    if (s.rank == 0) last = std::max(last, s.iteration);
  return rank0_iteration(pt.trace, last);
}

namespace {
std::string coverage_text(const Coverage& c, const ValidationPlan& plan) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(1);
  if (c.cases == 0) {
    o << "90% intervals: none (" << (plan.interval_samples == 0 ? "interval_samples: 0" : "the calibration records no measured uncertainty")
      << ")";
  } else {
    o << "90% intervals (" << plan.interval_samples << " samples: the fits' covariances, the live runs' model, communication and drift errors, the jitter and the ranks' spread, as each "
      << "calibration records them): " << c.inside << " of " << c.cases
      << " judged cases inside, coverage " << c.pct() << "%; median half-width " << c.median_half_width_pct << "% of the prediction";
  }
  return o.str();
}
}  // namespace

namespace {

// The report's table of cases: predicted against measured, metric by metric.
std::string cases_table(const std::vector<CaseResult>& results) {
  std::ostringstream table;
  table << std::fixed << std::setprecision(3);
  table << "| case | predicted iter (ms) | measured iter (ms) | error | noise | compute err | comm pred/meas (ms) | comm share "
           "| exposed pred/meas (ms) | buckets pred/meas (ms) | speedup pred/meas | peak memory pred/meas |\n"
           "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : results) {
    // "-" for what the live run does not measure (a PyTorch run's compute/communication split)
    auto num = [](double x, int digits, const char* unit = "") {
      if (std::isnan(x)) return std::string("-");
      std::ostringstream o;
      o << std::fixed << std::setprecision(digits) << x << unit;
      return o.str();
    };
    std::ostringstream bk;
    bk << std::fixed << std::setprecision(3);
    for (std::size_t b = 0; b < std::max(r.predicted.bucket_s.size(), r.live.bucket_s.size()) && r.c.ranks > 1; ++b)
      bk << (b ? ", " : "") << (b < r.predicted.bucket_s.size() ? r.predicted.bucket_s[b] * 1e3 : 0.0) << "/"
         << (r.live.bucket_s.empty() ? std::string("-") : num(b < r.live.bucket_s.size() ? r.live.bucket_s[b] * 1e3 : 0.0, 3));
    table << "| " << r.c.label() << " | " << r.predicted.iteration_s * 1e3 << " | " << r.live.iteration_s * 1e3 << " | "
          << std::setprecision(1) << pct_error(r.predicted.iteration_s, r.live.iteration_s) << "% | " << r.noise_pct << "% | "
          << num(pct_error(r.predicted.compute_s, r.live.compute_s), 1, "%") << " | " << num(r.predicted.comm_s * 1e3, 3) << " / "
          << num(r.live.comm_s * 1e3, 3) << " | "
          << num(r.live.iteration_s > 0 ? 100 * r.live.comm_s / r.live.iteration_s : 0.0, 0, "%") << " | "
          << num(r.predicted.exposed_s * 1e3, 3) << " / " << num(r.live.exposed_s * 1e3, 3) << " | " << std::setprecision(3)
          << (r.c.ranks > 1 ? bk.str() : "-") << " | " << std::setprecision(2)
          << (r.speedup_live > 0 ? std::to_string(r.speedup_predicted).substr(0, 4) + " / " + std::to_string(r.speedup_live).substr(0, 4)
                                 : std::string("-"))
          << " | " << format_bytes(r.predicted.peak_memory_bytes) << " / " << format_bytes(r.live.peak_memory_bytes) << " |\n";
  }
  return table.str();
}

nlohmann::json cases_json(const std::vector<CaseResult>& results) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& r : results) {
    auto mj = [](const Metrics& m) {
      return nlohmann::json{{"iteration_time_s", m.iteration_s}, {"compute_time_s", m.compute_s}, {"communication_time_s", m.comm_s},
                            {"exposed_communication_s", m.exposed_s}, {"samples_per_s", m.samples_per_s},
                            {"peak_memory_bytes", m.peak_memory_bytes}};
    };
    // compact: each round's iteration time, not its every metric (issue 54: evidence at a glance)
    nlohmann::json rounds = nlohmann::json::array();
    for (const auto& m : r.rounds) rounds.push_back(m.iteration_s);
    j.push_back({{"case", r.c.label()}, {"ranks", r.c.ranks}, {"transport", r.c.transport}, {"oversubscribed", r.c.oversubscribed},
                 {"predicted", mj(r.predicted)}, {"measured_median", mj(r.live)}, {"round_iteration_time_s", rounds}, {"noise_pct", r.noise_pct},
                 {"iteration_error_pct", pct_error(r.predicted.iteration_s, r.live.iteration_s)},
                 {"speedup_predicted", r.speedup_predicted}, {"speedup_measured", r.speedup_live},
                 {"iteration_interval_s", r.interval ? nlohmann::json{{"lo", r.interval->lo}, {"hi", r.interval->hi}} : nlohmann::json(nullptr)}});
  }
  return j;
}

// The error and the intervals per rank count, for report.md (none with one count).
std::string per_ranks_table(const std::vector<CaseResult>& results) {
  const auto rows = per_rank_count(results);
  if (rows.size() < 2) return "";
  std::ostringstream t;
  t << std::fixed << std::setprecision(1)
    << "## Error per rank count\n\nMean |error| and mean signed error of the iteration time over each rank count's judged cases; "
       "oversubscribed cases (more ranks than cores) apart, not judged.\n\n"
    << "| ranks | judged | mean abs error | mean signed error | 90% intervals covering | oversubscribed (mean abs error) |\n"
       "|---|---|---|---|---|---|\n";
  for (const auto& r : rows) {
    t << "| " << r.ranks << " | " << r.judged << " | ";
    if (r.judged) t << r.mean_abs_pct << "% | " << std::showpos << r.mean_signed_pct << std::noshowpos << "% | ";
    else t << "- | - | ";
    if (r.coverage.cases) t << r.coverage.inside << " of " << r.coverage.cases << " | ";
    else t << "- | ";
    if (r.oversubscribed) t << r.oversubscribed << " (" << r.oversubscribed_mean_abs_pct << "%) |\n";
    else t << "- |\n";
  }
  return t.str() + "\n";
}

nlohmann::json per_ranks_json(const std::vector<CaseResult>& results) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& r : per_rank_count(results))
    a.push_back({{"ranks", r.ranks}, {"judged", r.judged}, {"mean_abs_pct", r.mean_abs_pct}, {"mean_signed_pct", r.mean_signed_pct},
                 {"intervals", r.coverage.cases}, {"inside", r.coverage.inside}, {"oversubscribed", r.oversubscribed},
                 {"oversubscribed_mean_abs_pct", r.oversubscribed_mean_abs_pct}});
  return a;
}

// results.json: the run's verdict, its intervals, the summaries and every case (compact).
nlohmann::json results_json(const ValidationPlan& plan, const ValidationOutcome& o, double mean_noise, int heavy, int judged) {
  nlohmann::json sj = nlohmann::json::array();
  for (const auto& s : o.summary)
    sj.push_back({{"metric", s.metric}, {"cases", s.cases}, {"mean_abs_pct", s.mean_abs_pct}, {"max_abs_pct", s.max_abs_pct},
                  {"worst_case", s.worst_case}});
  return {{"plan", plan.file}, {"bound_met", o.ok && !o.incomplete()}, {"why", o.why}, {"mean_noise_pct", mean_noise},
          {"incomplete", o.incomplete()}, {"missing", o.missing}, {"cases_total", o.cases_total},
          {"communication_heavy_cases", heavy}, {"judged_cases", judged}, {"machine", o.machine},
          {"intervals", {{"samples", plan.interval_samples}, {"level", 0.9}, {"cases", o.coverage.cases}, {"inside", o.coverage.inside},
                         {"coverage_pct", o.coverage.pct()}, {"median_half_width_pct", o.coverage.median_half_width_pct}}},
          {"summary", sj}, {"per_ranks", per_ranks_json(o.results)}, {"cases", cases_json(o.results)}};
}

}  // namespace

std::string ValidationOutcome::incomplete_text() const {
  std::string list;
  for (std::size_t i = 0; i < missing.size() && i < 8; ++i) list += (i ? ", " : "") + missing[i];
  if (missing.size() > 8) list += ", ... (" + std::to_string(missing.size()) + " files)";
  return "incomplete: " + std::to_string(results.size()) + " of " + std::to_string(cases_total) + " cases judged (not judged as met); missing " +
         list;
}

bool write_validation_report(const ValidationPlan& plan, const std::string& dir, const std::string& out_dir, const std::string& cmdline,
                             const ValidationOutcome& o) {
  const std::string table = cases_table(o.results);
  int heavy = 0, judged = 0;
  for (const auto& r : o.results) {
    if (r.c.oversubscribed) continue;
    ++judged;
    heavy += r.live.iteration_s > 0 && r.live.comm_s >= 0.3 * r.live.iteration_s;
  }
  std::ostringstream sum;
  sum << std::fixed << std::setprecision(1) << "| metric | cases | mean abs error | max abs error | worst case |\n|---|---|---|---|---|\n";
  for (const auto& s : o.summary) {
    if (s.cases == 0) {  // no case has it (a PyTorch run's compute/communication split is not measured)
      sum << "| " << s.metric << " | 0 | - | - | not measured |\n";
      continue;
    }
    sum << "| " << s.metric << " | " << s.cases << " | " << s.mean_abs_pct << "% | " << s.max_abs_pct << "% | " << s.worst_case << " |\n";
  }
  const double mean_noise = mean_noise_pct(o.results);
  std::ostringstream bound;
  bound << std::fixed << std::setprecision(1);
  if (plan.noise_factor > 0) {
    bound << "every case within max(" << plan.noise_floor_pct << "%, " << plan.noise_factor << " x the mean noise floor "
          << mean_noise << "%) = " << std::max(plan.noise_floor_pct, plan.noise_factor * mean_noise) << "%";
    if (plan.exposed_floor_pct > 0)
      bound << "; every multi-rank case's exposed communication within max(" << plan.exposed_floor_pct << "%, " << plan.noise_factor
            << " x its spread over the rounds) of the iteration";
  }
  else
    bound << "mean " << plan.bound_mean_pct << "%, every case " << plan.bound_max_pct << "% or its noise floor";
  std::string cal_text = plan.datasheet ? "the datasheet calibration of `" + plan.cluster_shown + "`"
                         : plan.measure.enabled ? "fitted from microbenchmarks measured in every round, interleaved with the live runs (`" +
                                                      dir + "/results/calibration-*.yaml`, fit reports beside them)"
                                                : "`" + plan.calibration_shown + "`";
  std::ostringstream md;
  md << "# kanscale validate: " << plan.name << "\n\n"
     << "Plan `" << plan.file << "`; cluster `" << plan.cluster_shown << "`; backend " << plan.backend << "; calibration " << cal_text
     << "; " << plan.rounds << " rounds of " << plan.steps << " steps per case, cases interleaved within each round"
     << (plan.measure.enabled ? " after that round's microbenchmarks" : "") << ". " << describe(provenance()) << ".\n\n"
     << (o.machine.empty() ? std::string("The calibration records no machine.")
                           : "Machine: " + o.machine + (plan.measure.enabled ? " (the fingerprint the rounds' kernel measurements recorded; the live runs ran beside them)"
                                                                               : " (where the calibration was measured)"))
     << "\n\n"
     << (o.live_runs.empty() ? std::string() : "Live runs: " + o.live_runs + ".\n\n")
     << "Errors are (predicted - measured) / measured; communication errors are stated as a share of the measured iteration. "
     << "The noise floor of a case is the robust standard deviation (1.4826 x the median absolute deviation) of its rounds' "
        "median iteration times, over their median. "
     << "Speedups are throughputs over the same model and batch on one rank. Peak memory: the largest rank's resident set (CPU) or device "
     << "allocations (CUDA) against the calibrated memory model. Oversubscribed cases (more ranks than cores) are shown but not "
     << "judged.\n\n"
     << "## Summary\n\n" << sum.str() << "\nCommunication-heavy cases (measured communication at least 30% of the iteration): "
     << heavy << " of " << judged << " judged.\n\nBound on the iteration time: " << bound.str() << ": **"
     << (o.incomplete() ? o.incomplete_text() : o.ok ? "met" : "exceeded: " + o.why) << "**\n\n" << coverage_text(o.coverage, plan) << "\n\n"
     << per_ranks_table(o.results) << "## Cases\n\n" << table << "\n";
  if (judged > 0)
    md << "![predicted vs measured](predicted_vs_measured.png)\n\n"
       << "Predicted against measured iteration time, log axes (dotted: equal; error bars: the prediction's interval). "
       << "gnuplot renders it from predicted_vs_measured.gp and .dat beside it.\n\n"
       << "![error per case, with each case's noise floor](error_per_case.png)\n\n"
       << "Iteration-time error per case, in the order of the table (error bars at 0: +- the case's noise floor; "
          "error_per_case.gp and .dat beside it).\n\n";
  else
    md << "No plots: no case was judged.\n\n";
  std::vector<std::pair<std::string, std::string>> files;
  std::vector<std::string> plots;  // rendered by gnuplot after everything is written
  // a plot that cannot be scripted costs the picture, never the results
  auto add_plot = [&](const PlotSpec& p) {
    try {
      files.emplace_back(out_dir + "/" + p.name + ".gp", gnuplot_script(p));
      files.emplace_back(out_dir + "/" + p.name + ".dat", gnuplot_data(p));
      plots.push_back(p.name);
    } catch (const std::exception& e) {
      std::cerr << "validate: plot " << p.name << " left out: " << e.what() << "\n";
    }
  };
  const std::string tf = dir + "/" + trace_file(o.shown);
  if (!plan.cases.empty() && !o.sim_slices.empty() && std::ifstream(tf)) {
    std::ifstream in(tf);
    const auto live = live_iteration(nlohmann::json::parse(in), plan.steps);
    const auto ops = op_comparison(o.sim_slices, live);
    if (!ops.empty()) {
      double tl = 0, tp = 0;
      md << "Where one steady iteration's compute goes in " << plan.cases[o.shown].label()
         << ", op by op (rank 0, round 1's last iteration; live against predicted, each op summed over the iteration):\n\n"
         << "| op | live | predicted | live / predicted |\n|---|---|---|---|\n";
      for (const auto& c : ops) {
        md << "| " << c.op << " | " << format_time(c.live_s) << " | " << format_time(c.predicted_s) << " | " << std::fixed
           << std::setprecision(2) << c.live_s / c.predicted_s << " |\n";
        tl += c.live_s;
        tp += c.predicted_s;
      }
      md << "| all of these | " << format_time(tl) << " | " << format_time(tp) << " | " << std::fixed << std::setprecision(2) << tl / tp
         << " |\n\n";
    }
  }
  md << "`" << cmdline << "`\n";
  files.emplace_back(out_dir + "/report.md", md.str());
  files.emplace_back(out_dir + "/results.json", results_json(plan, o, mean_noise, heavy, judged).dump(1) + "\n");
  if (judged > 0) {  // (no point to draw: gnuplot would only complain)
    add_plot(scatter_plot(o.results));
    add_plot(errors_plot(o.results));
  }
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  write_owned_files(out_dir, files);
  // the plots are rendered last: a failure costs the pictures, never the run's results
  render_plots_or_warn("validate", out_dir, plots);
  std::cout << "kanscale validate: " << plan.name << " (" << o.results.size() << " cases x " << plan.rounds << " rounds)\n\n"
            << sum.str() << "\n" << table << "\nbound " << (o.incomplete() ? o.incomplete_text() : o.ok ? "met" : "EXCEEDED: " + o.why) << "; "
            << coverage_text(o.coverage, plan) << "; report: " << out_dir << "/report.md\n";
  return o.ok && !o.incomplete();
}

}  // namespace ks
