// kanscale validate --corpus (report.md, corpus.json) and kanscale fit
// --priors (the priors file): the writers over corpus_score's numbers.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/output_files.hpp"
#include "common/error.hpp"
#include "corpus_score.hpp"
#include "formats/provenance.hpp"
#include "model/statistics.hpp"
#include "model/units.hpp"
#include "sim/report.hpp"

namespace ks {

namespace fs = std::filesystem;

static std::string unscored_reason(const CorpusEntry& e) {
  if (e.cls == "unmodelled") {
    const auto& env = e.system.nccl_env;
    if (env.count("NCCL_P2P_DISABLE") && env.at("NCCL_P2P_DISABLE") == "1") return "unmodelled: P2P disabled (data through host memory)";
    if (env.count("NCCL_ALGO") && env.at("NCCL_ALGO") != "ring" && env.at("NCCL_ALGO") != "Ring" && env.at("NCCL_ALGO") != "Tree")
      return "unmodelled: NCCL_ALGO=" + env.at("NCCL_ALGO");
    if (e.system.network == "ethernet") return "unmodelled: an Ethernet network (EFA, TCPX, Slingshot or NCCL's sockets)";
    return "unmodelled: NVLS, CollNet/SHARP or PAT in use (the entry's note)";
  }
  if (e.health == "unhealthy") return "unhealthy (posted because something was wrong)";
  return "scored: false";
}

static void class_table(std::ostringstream& md, const std::vector<ClassStats>& st) {
  md << "| class / regime | n | datasheet: mean abs err | its 90% interval covers | priors' medians: mean abs err | median | max | "
        "their 90% interval covers |\n|---|---|---|---|---|---|---|---|\n";
  for (const auto& c : st)
    md << "| " << c.cls << " | " << c.n << " | " << printf_number("%.1f%%", c.datasheet_mean_abs_pct) << " | " << c.ds_covered << " of "
       << c.with_interval << " | " << printf_number("%.1f%%", c.mean_abs_pct) << " | " << printf_number("%.1f%%", c.median_abs_pct) << " | "
       << printf_number("%.1f%%", c.max_abs_pct) << " | " << c.covered << " of " << c.with_interval
       << (c.with_interval < c.n ? " (" + std::to_string(c.n - c.with_interval) + " without an interval)" : "") << " |\n";
}

static void point_table(std::ostringstream& md, const std::vector<ScoredPoint>& sp) {
  md << "| entry | class | regime | size | ranks | model's choice | measured | datasheet (90%) | error | priors' medians (90%) | "
        "error | priors (bandwidth; latency) |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& s : sp) {
    md << "| " << s.p.entry << " | " << s.p.cls << " | " << s.p.regime << " | " << format_bytes(s.p.size_bytes) << " | " << s.p.ranks
       << " | " << s.p.algorithm << " | " << printf_number("%.4g us", s.p.measured_s * 1e6) << " | " << printf_number("%.4g us", s.datasheet_s * 1e6)
       << (s.has_interval ? " (" + printf_number("%.4g", s.ds_lo_s * 1e6) + "-" + printf_number("%.4g", s.ds_hi_s * 1e6) + ")" + (s.ds_covered ? "" : " **missed**")
                          : std::string(" (no interval)"))
       << " | " << printf_number("%+.1f%%", s.datasheet_error_pct()) << " | " << printf_number("%.4g us", s.predicted_s * 1e6)
       << (s.has_interval ? " (" + printf_number("%.4g", s.lo_s * 1e6) + "-" + printf_number("%.4g", s.hi_s * 1e6) + ")" + (s.covered ? "" : " **missed**")
                          : std::string(" (no interval)"))
       << " | " << printf_number("%+.1f%%", s.error_pct()) << " | " << s.eta.scope << " x" << printf_number("%.3g", s.eta.median) << "; "
       << s.lambda.scope << " x" << printf_number("%.3g", s.lambda.median) << " |\n";
  }
}

static nlohmann::json point_json(const ScoredPoint& s) {
  nlohmann::json j = {{"id", s.p.entry},
                      {"class", s.p.cls},
                      {"regime", s.p.regime},
                      {"size_bytes", s.p.size_bytes},
                      {"ranks", s.p.ranks},
                      {"predicted", s.predicted_s},
                      {"measured", s.p.measured_s},
                      {"datasheet", s.datasheet_s},
                      {"error_pct", s.error_pct()},
                      {"datasheet_error_pct", s.datasheet_error_pct()}};
  j["lo"] = s.has_interval ? nlohmann::json(s.lo_s) : nlohmann::json(nullptr);
  j["hi"] = s.has_interval ? nlohmann::json(s.hi_s) : nlohmann::json(nullptr);
  j["covered"] = s.has_interval ? nlohmann::json(s.covered) : nlohmann::json(nullptr);
  j["datasheet_centred"] = {{"predicted", s.datasheet_s},
                            {"lo", s.has_interval ? nlohmann::json(s.ds_lo_s) : nlohmann::json(nullptr)},
                            {"hi", s.has_interval ? nlohmann::json(s.ds_hi_s) : nlohmann::json(nullptr)},
                            {"covered", s.has_interval ? nlohmann::json(s.ds_covered) : nlohmann::json(nullptr)}};
  j["prior_scope"] = {{"bandwidth", s.eta.scope}, {"latency", s.lambda.scope}};
  return j;
}

static nlohmann::json stats_json(const ClassStats& c) {
  return {{"n", c.n},
          {"mean_abs_pct", c.mean_abs_pct},
          {"median_abs_pct", c.median_abs_pct},
          {"max_abs_pct", c.max_abs_pct},
          {"datasheet_mean_abs_pct", c.datasheet_mean_abs_pct},
          {"with_interval", c.with_interval},
          {"datasheet_coverage", c.with_interval ? nlohmann::json(static_cast<double>(c.ds_covered) / c.with_interval) : nlohmann::json(nullptr)},
          {"coverage", c.with_interval ? nlohmann::json(c.coverage()) : nlohmann::json(nullptr)}};
}

// The three criteria, each with its numbers, for both ways of using
// the priors; and which way the leave-one-out favours per regime.
static void criteria(std::ostringstream& md, const std::vector<ClassStats>& st) {
  auto find = [&](const std::string& k) -> const ClassStats* {
    for (const auto& c : st)
      if (c.cls == k) return &c;
    return nullptr;
  };
  md << "\n## Criteria (every class together)\n\n| regime | target | datasheet | priors' medians | 90% coverage, datasheet-centred | "
        "90% coverage, priors' medians | the leave-one-out favours |\n|---|---|---|---|---|---|---|\n";
  for (const char* r : {"bandwidth", "middle", "latency"}) {
    const ClassStats* c = find(std::string("all/") + r);
    if (!c) continue;
    const double target = std::string(r) == "bandwidth" ? 15 : std::string(r) == "latency" ? 30 : -1;
    auto verdict = [&](double v) { return printf_number("%.1f%%", v) + (target < 0 ? "" : v <= target ? " (met)" : " (missed)"); };
    auto cover = [&](int k) {
      return std::to_string(k) + " of " + std::to_string(c->with_interval) +
             (c->with_interval ? printf_number(" (%.0f%%)", 100.0 * k / c->with_interval) + (k >= 0.85 * c->with_interval ? " met" : " missed") : "");
    };
    md << "| " << r << " | " << (target < 0 ? std::string("none set") : printf_number("mean abs err within %.0f%%", target)) << " | "
       << verdict(c->datasheet_mean_abs_pct) << " | " << verdict(c->mean_abs_pct) << " | " << cover(c->ds_covered) << " | "
       << cover(c->covered) << " | " << (c->datasheet_mean_abs_pct <= c->mean_abs_pct ? "datasheet-centred" : "priors' medians")
       << " |\n";
  }
  md << "\nCoverage target: at least 85% of the scored points.\n";
}

static const CorpusEntry* entry_of(const std::vector<CorpusEntry>& entries, const std::string& id) {
  for (const auto& e : entries)
    if (e.id == id) return &e;
  return nullptr;
}

// The points outside an interval, with what their source says of them.
static void misses(std::ostringstream& md, const std::vector<ScoredPoint>& sp, const std::vector<CorpusEntry>& entries) {
  md << "\n## Misses\n\nEvery point outside either 90% interval, with its entry's health note (the reason lies there or in "
        "the hardware; nothing here was tuned to it).\n\n| entry | regime | datasheet error | priors' error | outside | health note |\n"
        "|---|---|---|---|---|---|\n";
  for (const auto& s : sp) {
    if (!s.has_interval || (s.covered && s.ds_covered)) continue;
    const CorpusEntry* e = entry_of(entries, s.p.entry);
    md << "| " << s.p.entry << " | " << s.p.regime << " | " << printf_number("%+.1f%%", s.datasheet_error_pct()) << " | " << printf_number("%+.1f%%", s.error_pct())
       << " | " << (!s.ds_covered && !s.covered ? "both" : !s.ds_covered ? "datasheet-centred" : "priors' medians") << " | "
       << (e ? e->health_note : "") << " |\n";
  }
}

// What each scored entry's datasheet cluster assumed where the entry is silent.
static void assumptions(std::ostringstream& md, const std::vector<CorpusEntry>& entries) {
  md << "\n## Assumed where an entry is silent\n\n| entry | assumed |\n|---|---|\n";
  for (const auto& e : entries) {
    if (e.kind != "nccl_allreduce" || !e.scored) continue;
    const CorpusCluster cc = datasheet_cluster(e);
    std::string a;
    for (const auto& x : cc.assumptions) a += (a.empty() ? "" : "; ") + x;
    if (cc.cluster && !a.empty()) md << "| " << e.id << " | " << a << " |\n";
  }
}

// The unscored entries, each with the datasheet model's error per regime
// where a cluster can be built from it (shown, never scored or fitted).
static void unscored(std::ostringstream& md, const std::vector<CorpusEntry>& entries, std::vector<CorpusSkip>& skipped) {
  std::vector<CorpusSkip> cannot;
  const auto pts = corpus_points(entries, cannot, false);
  md << "\n## Not scored\n\n| entry | class | why | datasheet error (shown only) |\n|---|---|---|---|\n";
  for (const auto& e : entries) {
    if (e.kind != "nccl_allreduce" || e.scored) continue;
    std::string errs;
    for (const auto& p : pts)
      if (p.entry == e.id) errs += (errs.empty() ? "" : ", ") + p.regime + " " + printf_number("%+.1f%%", (p.model_s() / p.measured_s - 1) * 100);
    for (const auto& c : cannot)
      if (c.entry == e.id) errs = "cannot be predicted: " + c.why;
    md << "| " << e.id << " | " << e.cls << " | " << unscored_reason(e) << " | " << errs << " |\n";
  }
  for (const auto& s : skipped) {
    const CorpusEntry* e = entry_of(entries, s.entry);
    md << "| " << s.entry << " | " << (e ? e->cls : "") << " | scored, but cannot be predicted: " << s.why << " | |\n";
  }
}

// The KAN timings beside kanscale's one-GPU datasheet prediction (shown: a
// prior needs two machines left once one is left out).
static void kan_section(std::ostringstream& md, const std::vector<CorpusEntry>& entries) {
  std::vector<CorpusSkip> skipped;
  const auto kp = kan_points(entries, skipped);
  std::set<std::string> gpus;
  for (const auto& k : kp) gpus.insert(k.gpu);
  md << "\n## KAN timings on GPUs (shown, not scored)\n\nefficient-kan rows with shape and batch stated, against the replay on a "
        "one-GPU datasheet cluster of the entry's GPU (device: roofline at the sheet's peaks; host: the shipped PyTorch host "
        "terms and 5 us a launch; a phase takes the slower track). " << gpus.size() << " GPU(s): a compute prior needs at least "
        "two machines left after leaving one out, so none is fitted and the compute side keeps the CPU stand-in.\n\n"
        "| entry | GPU | shape | phase | measured | predicted | host / device | predicted / measured |\n|---|---|---|---|---|---|---|---|\n";
  for (const auto& k : kp)
    md << "| " << k.entry << " | " << k.gpu << " | " << k.shape << " | " << k.phase << " | " << printf_number("%.3g ms", k.measured_s * 1e3) << " | "
       << printf_number("%.3g ms", k.predicted_s * 1e3) << " | " << printf_number("%.3g", k.host_s * 1e3) << " / " << printf_number("%.3g ms", k.device_s * 1e3) << " | "
       << printf_number("%.2f", k.predicted_s / k.measured_s) << " |\n";
  for (const auto& s : skipped) md << "| " << s.entry << " | | | | | cannot be predicted: " << s.why << " | | |\n";
}

// An output inside the corpus or the GPU sheets would replace or add an input.
static void refuse_inside_inputs(const std::string& out, const std::vector<std::string>& dirs) {
  const fs::path o = fs::weakly_canonical(fs::absolute(out));
  for (const auto& d : dirs) {
    const fs::path in = fs::weakly_canonical(fs::absolute(d));
    const auto rel = o.lexically_relative(in);
    if (!rel.empty() && *rel.begin() != "..")
      throw InputError("--out " + out + ": lies inside the input directory " + d + "; an output never replaces or adds to an input");
  }
}

// Each CPU's eager per-op cost against the prior of the others (a CPU each).
static void dispatch_section(std::ostringstream& md, const std::vector<CorpusEntry>& entries) {
  const auto ds = dispatch_samples(entries);
  md << "\n## PyTorch's eager per-op host cost on CPUs\n\nEach entry's eager rows' median (one CPU each) against the "
        "lognormal prior of the other CPUs, its 90% interval that of one more CPU.\n\n"
        "| entry | measured | prior of the others (median) | 90% interval | covered |\n|---|---|---|---|---|\n";
  for (const auto& s : ds) {
    const FactorPrior p = fit_factor_prior(ds, "dispatch", s.system);
    const double h = p.log_half_width(0.90);
    md << "| " << s.entry << " | " << printf_number("%.3g us", s.ratio) << " | "
       << (p.usable() ? printf_number("%.3g us", p.median) + " | " + printf_number("%.3g", p.median * std::exp(-h)) + "-" + printf_number("%.3g us", p.median * std::exp(h)) +
                            " | " + (s.ratio >= p.median * std::exp(-h) && s.ratio <= p.median * std::exp(h) ? "yes" : "**no**")
                      : std::string("none (fewer than two other CPUs) | | "))
       << " |\n";
  }
}

int validate_corpus(const std::string& corpus_dir, const std::string& gpus_dir, const std::string& gpus_shown, const std::string& out_dir,
                    const std::string& cmdline) {
  check_outputs_spare_inputs({corpus_dir, gpus_dir}, {{out_dir, "--out", true}});
  refuse_inside_inputs(out_dir, {corpus_dir, gpus_dir});
  check_owned_dir(out_dir, "--out");
  const auto entries = load_corpus(corpus_dir, gpus_dir);
  std::vector<CorpusSkip> skipped;
  const auto pts = corpus_points(entries, skipped);
  const auto sp = score_points(pts);
  const auto st = class_stats(sp);

  std::map<std::string, int> per_class;
  for (const auto& e : entries) ++per_class[e.kind + " / " + e.cls + (e.scored ? "" : " (unscored)")];
  std::ostringstream md;
  const auto prov = provenance(cmdline, Dated::no);
  md << "# The corpus of public GPU measurements, predicted from datasheets\n\n"
     << describe(prov) << ". Corpus: " << entries.size() << " entries (" << corpus_dir << "); GPU sheets: " << gpus_shown << ".\n\n"
     << "Each scored all-reduce entry is predicted from a datasheet cluster built from its own description (kanscale's NCCL "
        "2.14 tuning model), then with the priors: the bandwidth factor (measured busbw / the model's, bandwidth-bound rows) "
        "and the latency factor (measured time / the model's, latency-bound rows) fitted from every OTHER system, its own "
        "left out. One point per entry and regime: the lower-median row of its sizes there. Error = predicted / measured "
        "time - 1.\n\n## Corpus size\n\n| kind / class | entries |\n|---|---|\n";
  for (const auto& [k, n] : per_class) md << "| " << k << " | " << n << " |\n";
  md << "\n## Per class and regime\n\n";
  class_table(md, st);
  criteria(md, st);
  md << "\n## Every point\n\n";
  point_table(md, sp);
  misses(md, sp, entries);
  assumptions(md, entries);
  unscored(md, entries, skipped);
  kan_section(md, entries);
  dispatch_section(md, entries);
  md << "\nThe DDP entry is read and checked but not scored here (issue 58 explains FinisTerrae III).\n";
  if (fs::exists(fs::path(corpus_dir) / "SEARCHES.md"))
    md << "The searches that built the corpus: SEARCHES.md beside its entries.\n";

  nlohmann::json j;
  j[kProvenanceKey] = to_json(prov);
  j["corpus"] = corpus_dir;
  j["unit"] = "s";
  j["entries"] = nlohmann::json::array();
  for (const auto& s : sp) j["entries"].push_back(point_json(s));
  for (const auto& c : st) j["classes"][c.cls] = stats_json(c);
  for (const auto& s : skipped) j["skipped"].push_back({{"id", s.entry}, {"why", s.why}});
  write_owned_files(out_dir, {{out_dir + "/report.md", md.str()}, {out_dir + "/corpus.json", j.dump(2) + "\n"}});
  std::cout << md.str();
  return 0;
}

// A YAML double-quoted scalar: backslashes, quotes and control characters escaped.
static std::string yaml_quoted(const std::string& s) {
  std::string q = "\"";
  for (unsigned char ch : s) {
    if (ch == '\\' || ch == '"') q += '\\', q += static_cast<char>(ch);
    else if (ch < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", ch);
      q += b;
    }
    else q += static_cast<char>(ch);
  }
  return q + "\"";
}

static void prior_yaml(std::ostringstream& y, const std::string& cls, const FactorPrior& p) {
  y << "    " << cls << ": {scope: " << p.scope << ", median: " << printf_number("%.4g", p.median) << ", sigma: " << printf_number("%.4g", p.sigma)
    << ", df: " << p.df << ", systems: " << p.systems << ", rms: " << printf_number("%.4g", p.rms) << ", compute_capabilities: [";
  bool first = true;
  for (double c : p.ccs) y << (first ? "" : ", ") << printf_number("%g", c), first = false;
  y << "]}\n";
}

int fit_priors(const std::string& corpus_dir, const std::string& gpus_dir, const std::string& out_file, const std::string& cmdline) {
  check_outputs_spare_inputs({corpus_dir, gpus_dir}, {{out_file, "--out", false}});
  refuse_inside_inputs(out_file, {corpus_dir, gpus_dir});
  check_output_path(out_file, "--out");
  const auto entries = load_corpus(corpus_dir, gpus_dir);
  std::vector<CorpusSkip> skipped;
  const auto pts = corpus_points(entries, skipped);
  const auto bw = bandwidth_samples(pts), lat = latency_samples(pts);
  std::ostringstream y;
  const auto prov = provenance(cmdline, Dated::yes);
  y << "# What real systems achieve of their datasheet (kanscale fit --priors), as lognormal factors per link class:\n"
       "#   bandwidth: measured busbw / kanscale's NCCL model on datasheet links (bandwidth-bound rows, from 64 MiB)\n"
       "#   latency:   measured time / the model's (latency-bound rows, to 64 KiB)\n"
       "# median = exp(mean log factor) over the class's systems; sigma: the within-class spread pooled over classes\n"
       "# (scope class) or over all systems (scope pooled, fewer than 2 in the class). 90% interval of one more system:\n"
       "# median x exp(+-t(0.95; df) sigma sqrt(1 + 1/systems)); centred on the datasheet (factor 1, what validate --corpus\n"
       "# found better at both ends): exp(+-t(0.95; systems) rms), rms the log factors' root mean square about 0.\n"
       "# docs/models.md, \"Priors from public measurements\".\n"
       "kind: kanscale-priors\n"
       "fitted_from:\n  corpus: " << yaml_quoted(corpus_dir) << "\n  kanscale: " << yaml_quoted(describe(prov)) << "\n  command: "
    << yaml_quoted(cmdline) << "\n  date: " << yaml_quoted(prov.date_utc) << "\n  entries:\n";
  for (const auto* v : {&bw, &lat})
    for (const auto& s : *v)
      y << "    - {entry: " << s.entry << ", class: " << s.cls << ", " << (v == &bw ? "bandwidth" : "latency") << ": "
        << printf_number("%.4g", s.ratio) << "}\n";
  y << "nccl:\n";
  for (const auto* v : {&bw, &lat}) {
    y << "  " << (v == &bw ? "bandwidth" : "latency") << ":\n";
    for (const char* cls : {"nvswitch", "nvlink", "pcie", "infiniband", "roce"}) prior_yaml(y, cls, fit_factor_prior(*v, cls));
  }
  const FactorPrior d = fit_factor_prior(dispatch_samples(entries), "dispatch");
  y << "# PyTorch's eager per-op host cost (Python, the dispatcher) on a CPU, microseconds: lognormal over the dispatch\n"
       "# entries' CPUs (each the median of its eager rows): every dispatch's host cost where PyTorch runs on a GPU node that\n"
       "# no PyTorch calibration measured (formats' with_default_host_terms; its sigma, t-inflated, is the interval's host part)\n"
       "dispatch:\n  per_op_us: {scope: " << d.scope << ", median: " << printf_number("%.4g", d.median) << ", sigma: " << printf_number("%.4g", d.sigma)
    << ", df: " << d.df << ", cpus: " << d.systems << ", from: " << nlohmann::json(d.from).dump() << "}\n";
  y << "# the datasheet model's own error per regime, every class together: RMS over machines of log(measured / model)\n"
       "datasheet_error:\n";
  for (const char* r : {"latency", "middle", "bandwidth"}) {
    const auto m = rms_over_machines(regime_samples(pts, r));
    y << "  " << r << ": {rms: " << printf_number("%.4g", m.rms) << ", machines: " << m.machines << "}\n";
  }
  std::vector<FactorSample> every;
  for (const char* r : {"latency", "middle", "bandwidth"})
    for (const auto& s : regime_samples(pts, r)) every.push_back(s);
  const auto all = rms_over_machines(every, true);
  y << "  all: {rms: " << printf_number("%.4g", all.rms) << ", machines: " << all.machines << "}   # each machine's mean square over its points\n";
  write_files_atomic({{out_file, y.str()}});
  std::cout << y.str();
  return 0;
}

}  // namespace ks
