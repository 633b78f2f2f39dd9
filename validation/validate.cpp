#include "validate.hpp"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "kanscale/build_info.hpp"
#include "measure/sweep_options.hpp"
#include "model/calibration_fit.hpp"
#include "model/statistics.hpp"
#include "model/units.hpp"
#include "model/yaml_reader.hpp"
#include "sim/report.hpp"
#include "sim/study.hpp"
#include "validation/process.hpp"

namespace ks {

std::string ValidationCase::label() const {
  std::string w;
  for (auto x : widths) w += (w.empty() ? "" : "-") + std::to_string(x);
  return "np" + std::to_string(ranks) + " [" + w + "] G" + std::to_string(grid_size) + " b" + std::to_string(batch) +
         " cap " + format_bytes(bucket_cap_bytes) + (transport.empty() ? "" : " " + transport) +
         (oversubscribed ? " (oversubscribed)" : "");
}

namespace {

// The MPI transports a plan can name, as Open MPI MCA settings.
//  shm:      shared memory between the ranks of a node (the vader BTL);
//  tcp:      TCP over the loopback interface;
//  tcp-slow: TCP with 16 KiB socket buffers, which caps the loopback's
//            all-reduce bandwidth near 0.7 GB/s (measured here: a 1 MiB
//            all-reduce 1.4 ms against 0.3 ms on plain tcp), a network
//            slower than the cores, as between nodes, where communication
//            dominates. The microbenchmarks that calibrate it run with the
//            same settings.
std::vector<std::pair<std::string, std::string>> transport_mca(const std::string& t) {
  if (t == "shm") return {{"btl", "self,vader"}};
  if (t == "tcp") return {{"btl", "self,tcp"}};
  if (t == "tcp-slow") return {{"btl", "self,tcp"}, {"btl_tcp_sndbuf", "16384"}, {"btl_tcp_rcvbuf", "16384"}};
  return {};
}
bool known_transport(const std::string& t) { return !transport_mca(t).empty(); }

std::string at(const std::string& path, const YAML::Node& n, const std::string& key) {
  return path + ":" + std::to_string(n.Mark().line + 1) + ":" + std::to_string(n.Mark().column + 1) + ": key '" + key + "': ";
}

std::vector<std::vector<std::int64_t>> widths_list(const std::string& path, const YAML::Node& ws, const std::string& key) {
  if (!ws.IsSequence() || ws.size() == 0) throw InputError(at(path, ws, key) + "expected a list of widths lists such as [[16, 32, 1]]");
  std::vector<std::vector<std::int64_t>> out;
  for (std::size_t i = 0; i < ws.size(); ++i) {
    const std::string k = key + "[" + std::to_string(i) + "]";
    if (!ws[i].IsSequence() || ws[i].size() < 2) throw InputError(at(path, ws[i], k) + "expected at least 2 entries");
    std::vector<std::int64_t> w;
    for (std::size_t j = 0; j < ws[i].size(); ++j) {
      std::int64_t v = 0;
      try {
        v = ws[i][j].as<std::int64_t>();
      } catch (...) {
        v = 0;
      }
      if (v < 1) throw InputError(at(path, ws[i][j], k) + "expected positive integers");
      // the trainer keeps widths in ints
      if (v > YamlMap::kIntMax)
        throw InputError(at(path, ws[i][j], k) + "must be at most " + std::to_string(YamlMap::kIntMax) + ", got " + ws[i][j].Scalar());
      w.push_back(v);
    }
    if (const std::string why = kan_size_problem(KanShape{w, 5, 3}); !why.empty()) throw InputError(at(path, ws[i], k) + why);
    out.push_back(w);
  }
  return out;
}

void must_exist(YamlMap& m, const std::string& key, const std::string& file) {
  if (!std::ifstream(file)) m.fail(key, "file \"" + file + "\" does not exist");
}

}  // namespace

ValidationPlan load_validation_plan(const std::string& path) {
  YamlMap m = YamlMap::load_file(path);
  const YAML::Node root = YAML::LoadFile(path);
  ValidationPlan p;
  p.file = path;
  p.name = m.string("name");
  p.cluster_file = m.string("cluster");
  must_exist(m, "cluster", p.cluster_file);
  p.backend = m.choice_opt("backend", {"cpu", "cuda"}).value_or("cpu");
  p.launcher = m.choice_opt("launcher", {"mpirun", "srun"}).value_or("mpirun");
  p.gpus_per_node = static_cast<int>(m.integer_opt("gpus_per_node", 1).value_or(0));
  p.steps = static_cast<int>(m.integer_opt("steps", 3).value_or(30));
  // every round runs every case: a thousand is already weeks of running
  p.rounds = static_cast<int>(m.integer_opt("rounds", 1, 1000).value_or(3));
  p.spline_order = static_cast<int>(m.integer_opt("spline_order", 1).value_or(3));
  // calibration: a file, "datasheet", or {measure: {...}} within the rounds
  if (!root["calibration"]) m.fail("calibration", "missing required key (a calibration file, datasheet, or {measure: ...})");
  if (root["calibration"].IsMap()) {
    YamlMap c = m.map("calibration");
    YamlMap ms = c.map("measure");
    p.measure.enabled = true;
    p.measure.ranks = static_cast<int>(ms.integer("ranks", 1));
    p.measure.kernels_plan = ms.string("kernels");
    must_exist(ms, "kernels", p.measure.kernels_plan);
    p.measure.allreduce = ms.string_opt("allreduce").value_or(p.measure.allreduce);
    if (ms.has("broadcast")) {
      p.measure.broadcast = ms.string("broadcast");
      if (p.measure.broadcast.find_first_not_of(" \t") == std::string::npos)
        ms.fail("broadcast", "expected sweep options such as \"-b 8 -e 1M -f 2 -n 50 -w 10\"");
      if (p.measure.ranks < 2) ms.fail("broadcast", "a broadcast sweep needs ranks of 2 or more");
    }
    p.measure.interference_bytes = ms.string_opt("interference").value_or("");
    if (!p.measure.interference_bytes.empty()) {
      try {
        if (!(parse_size_bytes(p.measure.interference_bytes) > 0)) throw UnitError("must be greater than zero");
      } catch (const UnitError& e) {
        ms.fail("interference", e.what());
      }
    }
    if (ms.has("transports")) {
      for (const auto& t : ms.string_list("transports")) {
        if (!known_transport(t)) ms.fail("transports", "expected shm, tcp or tcp-slow, got \"" + t + "\"");
        p.measure.transports.push_back(t);
      }
    }
    if (p.measure.transports.empty()) p.measure.transports.push_back("");
    ms.finish();
    c.finish();
  } else {
    const std::string cal = m.string("calibration");
    if (cal == "datasheet") {
      p.datasheet = true;
    } else {
      p.calibration_file = cal;
      must_exist(m, "calibration", cal);
    }
  }
  if (auto b = m.map_opt("bound")) {
    if (b->has("noise_factor")) {
      p.noise_factor = b->number("noise_factor", Bound::positive);
      p.noise_floor_pct = b->number_opt("floor_pct", Bound::non_negative).value_or(0.0);
      p.exposed_floor_pct = b->number_opt("exposed_floor_pct", Bound::non_negative).value_or(0.0);
    } else {
      p.bound_mean_pct = b->number("mean_abs_pct", Bound::positive);
      p.bound_max_pct = b->number("max_abs_pct", Bound::positive);
    }
    b->finish();
  }
  if (auto pub = m.map_opt("published")) {
    p.published.enabled = true;
    p.published.workload = pub->string("workload");
    must_exist(*pub, "workload", p.published.workload);
    if (pub->has("gpus")) {
      p.published.gpus.clear();
      for (auto g : pub->integer_list("gpus", 1, 2)) p.published.gpus.push_back(static_cast<int>(g));
    }
    p.published.speedup = pub->number("speedup", Bound::positive);
    p.published.efficiency = pub->number("efficiency_pct", Bound::positive);
    const auto ov = pub->number_list_opt("overhead_pct", Bound::non_negative);
    if (!ov || ov->size() != 2) pub->fail("overhead_pct", "expected [lowest, highest] in percent");
    p.published.overhead_min_pct = (*ov)[0];
    p.published.overhead_max_pct = (*ov)[1];
    pub->ignore("model_widths");
    if (root["published"]["model_widths"])
      p.published.model_widths = widths_list(path, root["published"]["model_widths"], "published.model_widths");
    p.published.source = pub->string("source");
    pub->finish();
  }
  if (root["cases"]) {
    YamlMap c = m.map("cases");
    const auto ranks = c.integer_list("ranks", 1, 1);
    std::vector<std::int64_t> over;
    if (c.has("oversubscribed_ranks")) over = c.integer_list("oversubscribed_ranks", 1, 1);
    const auto grids = c.integer_list("grid_sizes", 1, 1);
    const auto batches = c.integer_list("batch_per_gpu", 1, 1);
    std::vector<std::string> transports = {""};
    if (c.has("transports")) {
      transports = c.string_list("transports");
      for (const auto& t : transports)
        if (!known_transport(t)) c.fail("transports", "expected shm, tcp or tcp-slow, got \"" + t + "\"");
    }
    if (!c.has("widths")) c.fail("widths", "missing required key");
    c.ignore("widths");
    const auto widths = widths_list(path, root["cases"]["widths"], "cases.widths");
    std::vector<double> caps;
    const YAML::Node cs = root["cases"]["bucket_caps"];
    c.ignore("bucket_caps");
    if (!cs || !cs.IsSequence() || cs.size() == 0) c.fail("bucket_caps", "expected a list of sizes such as [\"1MiB\", \"64KiB\"]");
    for (std::size_t i = 0; i < cs.size(); ++i) {
      if (!cs[i].IsScalar())
        throw InputError(at(path, cs[i], "cases.bucket_caps[" + std::to_string(i) + "]") + "wrong type: expected a size such as \"1MiB\"");
      try {
        const double v = parse_size_bytes(cs[i].Scalar());
        if (!(v > 0)) throw UnitError("must be greater than zero");
        caps.push_back(v);
      } catch (const std::exception& e) {
        throw InputError(at(path, cs[i], "cases.bucket_caps[" + std::to_string(i) + "]") + e.what());
      }
    }
    c.finish();
    auto add_all = [&](const std::vector<std::int64_t>& rs, bool oversub) {
      // oversubscribed ranks (reported, not judged) run on the first transport only
      const std::vector<std::string> ts = oversub ? std::vector<std::string>{transports.front()} : transports;
      for (const auto& t : ts)
        for (auto r : rs)
          for (const auto& w : widths)
            for (auto g : grids)
              for (auto b : batches)
                for (double cap : caps) {
                  ValidationCase vc;
                  vc.ranks = static_cast<int>(r);
                  vc.widths = w;
                  vc.grid_size = static_cast<int>(g);
                  vc.batch = b;
                  vc.bucket_cap_bytes = cap;
                  vc.transport = r > 1 ? t : "";
                  vc.oversubscribed = oversub;
                  // One-rank cases do not communicate: one per transport list,
                  // and one per bucket-cap list (the cap only regroups the
                  // same gradient copies; it is the speedups' baseline).
                  if (r == 1) vc.bucket_cap_bytes = caps.front();
                  bool dup = false;
                  for (const auto& e : p.cases)
                    dup = dup || (e.ranks == vc.ranks && e.widths == vc.widths && e.grid_size == vc.grid_size &&
                                  e.batch == vc.batch && e.bucket_cap_bytes == vc.bucket_cap_bytes &&
                                  e.transport == vc.transport && e.oversubscribed == vc.oversubscribed);
                  if (!dup) p.cases.push_back(vc);
                }
    };
    add_all(ranks, false);
    add_all(over, true);
    if (p.measure.enabled) {
      for (const auto& vc : p.cases) {
        if (vc.ranks < 2) continue;
        if (std::find(p.measure.transports.begin(), p.measure.transports.end(), vc.transport) == p.measure.transports.end())
          m.fail("calibration", "the cases use transport \"" + vc.transport + "\", which calibration.measure.transports does not measure");
      }
    }
  } else if (!p.published.enabled) {
    m.fail("cases", "missing required key (or a published: section)");
  }
  m.finish();
  return p;
}

double pct_error(double predicted, double measured) { return measured != 0 ? 100.0 * (predicted - measured) / measured : 0.0; }
double pct_of_iteration(double predicted, double measured, double iteration) {
  return iteration > 0 ? 100.0 * (predicted - measured) / iteration : 0.0;
}

namespace {
// Largest per-bucket error, as a share of the measured iteration (buckets
// compared index by index; a missing one counts as 0).
double bucket_error_pct(const CaseResult& r) {
  const std::size_t n = std::max(r.predicted.bucket_s.size(), r.live.bucket_s.size());
  double worst = 0;
  for (std::size_t b = 0; b < n; ++b) {
    const double p = b < r.predicted.bucket_s.size() ? r.predicted.bucket_s[b] : 0.0;
    const double m = b < r.live.bucket_s.size() ? r.live.bucket_s[b] : 0.0;
    const double e = pct_of_iteration(p, m, r.live.iteration_s);
    if (std::fabs(e) > std::fabs(worst)) worst = e;
  }
  return worst;
}
}  // namespace

Metrics median_of(const std::vector<Metrics>& rounds) {
  auto med = [&](auto get) {
    std::vector<double> v;
    for (const auto& m : rounds) v.push_back(get(m));
    return median(v);
  };
  Metrics m;
  m.iteration_s = med([](const Metrics& x) { return x.iteration_s; });
  m.compute_s = med([](const Metrics& x) { return x.compute_s; });
  m.comm_s = med([](const Metrics& x) { return x.comm_s; });
  m.exposed_s = med([](const Metrics& x) { return x.exposed_s; });
  m.samples_per_s = med([](const Metrics& x) { return x.samples_per_s; });
  m.peak_memory_bytes = med([](const Metrics& x) { return x.peak_memory_bytes; });
  std::size_t nb = 0;
  for (const auto& r : rounds) nb = std::max(nb, r.bucket_s.size());
  for (std::size_t b = 0; b < nb; ++b) {
    std::vector<double> v;
    for (const auto& r : rounds)
      if (b < r.bucket_s.size()) v.push_back(r.bucket_s[b]);
    m.bucket_s.push_back(median(v));
  }
  return m;
}

double round_spread(const std::vector<Metrics>& rounds, double Metrics::*field) {
  // a robust standard deviation: 1.4826 x the median absolute deviation
  // (a normal sample's sigma; one odd round out of three does not set it)
  if (rounds.size() < 2) return 0.0;
  std::vector<double> v;
  for (const auto& m : rounds) v.push_back(m.*field);
  const double med = median(v);
  for (auto& x : v) x = std::fabs(x - med);
  return 1.4826 * median(v);
}

void attach_speedups(std::vector<CaseResult>& results) {
  for (auto& r : results) {
    r.speedup_live = r.speedup_predicted = 0;
    if (r.c.ranks < 2) continue;
    for (const auto& base : results) {
      // the one-rank case of the same model and batch (one rank runs a single bucket cap)
      if (base.c.ranks != 1 || base.c.widths != r.c.widths || base.c.grid_size != r.c.grid_size || base.c.batch != r.c.batch)
        continue;
      // throughput ratio (per-rank batch fixed: the study's weak-per-GPU, strong-per-sample form)
      if (base.live.samples_per_s > 0) r.speedup_live = r.live.samples_per_s / base.live.samples_per_s;
      if (base.predicted.samples_per_s > 0) r.speedup_predicted = r.predicted.samples_per_s / base.predicted.samples_per_s;
      break;
    }
  }
}

std::vector<MetricSummary> summarize(const std::vector<CaseResult>& results) {
  struct Def {
    const char* name;
    double (*err)(const CaseResult&);
    bool (*applies)(const CaseResult&);
  };
  static const auto all = [](const CaseResult&) { return true; };
  static const Def defs[] = {
      {"iteration time", [](const CaseResult& r) { return pct_error(r.predicted.iteration_s, r.live.iteration_s); }, all},
      {"compute time", [](const CaseResult& r) { return pct_error(r.predicted.compute_s, r.live.compute_s); }, all},
      {"communication time (% of iteration)",
       [](const CaseResult& r) { return pct_of_iteration(r.predicted.comm_s, r.live.comm_s, r.live.iteration_s); }, all},
      {"communication per bucket, worst bucket (% of iteration)", [](const CaseResult& r) { return bucket_error_pct(r); },
       [](const CaseResult& r) { return r.c.ranks > 1; }},
      {"exposed communication (% of iteration)",
       [](const CaseResult& r) { return pct_of_iteration(r.predicted.exposed_s, r.live.exposed_s, r.live.iteration_s); }, all},
      {"samples/s", [](const CaseResult& r) { return pct_error(r.predicted.samples_per_s, r.live.samples_per_s); }, all},
      {"speedup over 1 rank (and efficiency)", [](const CaseResult& r) { return pct_error(r.speedup_predicted, r.speedup_live); },
       [](const CaseResult& r) { return r.speedup_live > 0 && r.speedup_predicted > 0; }},
      {"peak memory", [](const CaseResult& r) { return pct_error(r.predicted.peak_memory_bytes, r.live.peak_memory_bytes); },
       [](const CaseResult& r) { return r.live.peak_memory_bytes > 0; }}};
  std::vector<MetricSummary> out;
  for (const auto& d : defs) {
    MetricSummary s;
    s.metric = d.name;
    for (const auto& r : results) {
      if (r.c.oversubscribed || !d.applies(r)) continue;
      const double e = std::fabs(d.err(r));
      s.mean_abs_pct += e;
      ++s.cases;
      if (e >= s.max_abs_pct) {
        s.max_abs_pct = e;
        s.worst_case = r.c.label();
      }
    }
    if (s.cases) s.mean_abs_pct /= s.cases;
    out.push_back(s);
  }
  return out;
}

double mean_noise_pct(const std::vector<CaseResult>& results) {
  double sum = 0;
  int n = 0;
  for (const auto& r : results)
    if (!r.c.oversubscribed) {
      sum += r.noise_pct;
      ++n;
    }
  return n ? sum / n : 0;
}

bool judge(const std::vector<CaseResult>& results, const ValidationPlan& plan, std::string* why) {
  const auto s = summarize(results);
  const double mean_noise = mean_noise_pct(results);
  std::ostringstream o;
  o << std::fixed << std::setprecision(1);
  if (plan.noise_factor > 0) {
    // a bound derived from the noise measured in this very run
    const double bound = std::max(plan.noise_floor_pct, plan.noise_factor * mean_noise);
    for (const auto& r : results) {
      if (r.c.oversubscribed) continue;
      const double e = std::fabs(pct_error(r.predicted.iteration_s, r.live.iteration_s));
      if (e > bound) {
        o << r.c.label() << ": |error| " << e << "% exceeds the noise-derived bound " << bound << "% (max(" << plan.noise_floor_pct
          << "%, " << plan.noise_factor << " x the mean noise floor " << mean_noise << "%))";
        if (why) *why = o.str();
        return false;
      }
    }
    if (plan.exposed_floor_pct > 0) {
      for (const auto& r : results) {
        if (r.c.oversubscribed || r.c.ranks < 2) continue;
        const double e = std::fabs(pct_of_iteration(r.predicted.exposed_s, r.live.exposed_s, r.live.iteration_s));
        const double b = std::max(plan.exposed_floor_pct, plan.noise_factor * r.exposed_noise_pct);
        if (e > b) {
          o << r.c.label() << ": exposed communication off by " << e << "% of the iteration, beyond the bound " << b << "% (max("
            << plan.exposed_floor_pct << "%, " << plan.noise_factor << " x its spread over the rounds " << r.exposed_noise_pct << "%))";
          if (why) *why = o.str();
          return false;
        }
      }
    }
    return true;
  }
  if (s[0].mean_abs_pct > plan.bound_mean_pct && s[0].mean_abs_pct > mean_noise) {
    o << "mean |error| of the iteration time " << s[0].mean_abs_pct << "% exceeds the bound " << plan.bound_mean_pct
      << "% (mean noise floor " << mean_noise << "%)";
    if (why) *why = o.str();
    return false;
  }
  for (const auto& r : results) {
    if (r.c.oversubscribed) continue;
    const double e = std::fabs(pct_error(r.predicted.iteration_s, r.live.iteration_s));
    if (e > std::max(plan.bound_max_pct, r.noise_pct)) {
      o << r.c.label() << ": |error| " << e << "% exceeds the bound " << plan.bound_max_pct << "% and its noise floor "
        << r.noise_pct << "%";
      if (why) *why = o.str();
      return false;
    }
  }
  return true;
}

namespace {
std::string svg_scatter(const std::vector<CaseResult>& rs) {
  double mx = 0;
  for (const auto& r : rs) mx = std::max({mx, r.live.iteration_s, r.predicted.iteration_s});
  mx *= 1.1e3;  // ms
  const int W = 420, H = 420, M = 50;
  auto X = [&](double ms) { return M + (W - 2 * M) * ms / mx; };
  auto Y = [&](double ms) { return H - M - (H - 2 * M) * ms / mx; };
  std::ostringstream o;
  o << std::fixed << std::setprecision(1);
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H << "\" font-family=\"sans-serif\" font-size=\"11\">\n"
    << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    << "<line x1=\"" << X(0) << "\" y1=\"" << Y(0) << "\" x2=\"" << X(mx) << "\" y2=\"" << Y(mx) << "\" stroke=\"#999\" stroke-dasharray=\"4\"/>\n"
    << "<line x1=\"" << X(0) << "\" y1=\"" << Y(0) << "\" x2=\"" << X(mx) << "\" y2=\"" << Y(0) << "\" stroke=\"black\"/>\n"
    << "<line x1=\"" << X(0) << "\" y1=\"" << Y(0) << "\" x2=\"" << X(0) << "\" y2=\"" << Y(mx) << "\" stroke=\"black\"/>\n"
    << "<text x=\"" << W / 2 << "\" y=\"" << H - 12 << "\" text-anchor=\"middle\">measured iteration (ms)</text>\n"
    << "<text x=\"14\" y=\"" << H / 2 << "\" transform=\"rotate(-90 14," << H / 2 << ")\" text-anchor=\"middle\">predicted iteration (ms)</text>\n"
    << "<text x=\"" << X(mx) << "\" y=\"" << Y(0) + 14 << "\" text-anchor=\"end\">" << mx << "</text>\n";
  for (const auto& r : rs) {
    o << "<circle cx=\"" << X(r.live.iteration_s * 1e3) << "\" cy=\"" << Y(r.predicted.iteration_s * 1e3) << "\" r=\"4\" fill=\""
      << (r.c.oversubscribed ? "#d62728" : r.c.ranks > 1 ? "#1f77b4" : "#2ca02c") << "\"><title>" << r.c.label() << "</title></circle>\n";
  }
  o << "</svg>\n";
  return o.str();
}

std::string svg_errors(const std::vector<CaseResult>& rs) {
  const int W = 40 + 22 * static_cast<int>(rs.size()), H = 260, M = 40;
  double mx = 10;
  for (const auto& r : rs) mx = std::max({mx, std::fabs(pct_error(r.predicted.iteration_s, r.live.iteration_s)), r.noise_pct});
  auto Y = [&](double pct) { return H / 2 - (H / 2 - M) * pct / mx; };
  std::ostringstream o;
  o << std::fixed << std::setprecision(1);
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H << "\" font-family=\"sans-serif\" font-size=\"10\">\n"
    << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    << "<line x1=\"30\" y1=\"" << Y(0) << "\" x2=\"" << W << "\" y2=\"" << Y(0) << "\" stroke=\"black\"/>\n"
    << "<text x=\"2\" y=\"" << Y(mx) + 4 << "\">+" << mx << "%</text><text x=\"2\" y=\"" << Y(-mx) << "\">-" << mx << "%</text>\n";
  for (std::size_t i = 0; i < rs.size(); ++i) {
    const double e = pct_error(rs[i].predicted.iteration_s, rs[i].live.iteration_s);
    const double x = 36 + 22.0 * static_cast<double>(i);
    o << "<rect x=\"" << x << "\" y=\"" << std::min(Y(e), Y(0)) << "\" width=\"14\" height=\"" << std::fabs(Y(e) - Y(0))
      << "\" fill=\"" << (rs[i].c.oversubscribed ? "#d62728" : "#1f77b4") << "\"><title>" << rs[i].c.label() << ": " << e
      << "%</title></rect>\n"
      << "<line x1=\"" << x - 2 << "\" x2=\"" << x + 16 << "\" y1=\"" << Y(rs[i].noise_pct) << "\" y2=\"" << Y(rs[i].noise_pct)
      << "\" stroke=\"#ff7f0e\"/><line x1=\"" << x - 2 << "\" x2=\"" << x + 16 << "\" y1=\"" << Y(-rs[i].noise_pct) << "\" y2=\""
      << Y(-rs[i].noise_pct) << "\" stroke=\"#ff7f0e\"/>\n";
  }
  o << "</svg>\n";
  return o.str();
}

}  // namespace

namespace {

// ---------------------------------------------------------------- the schedule

struct Job {
  std::string what;  // for progress lines
  int ranks = 1;
  std::string transport;
  bool oversubscribed = false;
  std::vector<std::string> args;  // kanscale's arguments (the executable goes before), relative to the run directory
  std::string output;   // the file it must leave
};

std::string transport_tag(const std::string& t) { return t.empty() ? "default" : t; }
std::string kernels_file(int round) { return "results/kernels-r" + std::to_string(round) + ".json"; }
std::string allreduce_file(const std::string& t, int round) {
  return "results/allreduce-" + transport_tag(t) + "-r" + std::to_string(round) + ".json";
}
std::string broadcast_file(const std::string& t, int round) {
  return "results/broadcast-" + transport_tag(t) + "-r" + std::to_string(round) + ".json";
}
std::string runtime_file(int round) { return "results/runtime-1rank-r" + std::to_string(round) + ".json"; }
std::string interference_file(int round) { return "results/interference-r" + std::to_string(round) + ".json"; }
std::string live_file(std::size_t c, int round) { return "results/live-c" + std::to_string(c) + "-r" + std::to_string(round) + ".json"; }
std::string trace_file(std::size_t c) { return "results/trace-c" + std::to_string(c) + ".json"; }
std::string calibration_out(const std::string& t) { return "results/calibration-" + transport_tag(t) + ".yaml"; }

// The case whose live and simulated timelines the report shows side by
// side: the judged multi-rank case with the most communication per sample.
std::size_t timeline_case(const ValidationPlan& p) {
  std::size_t best = 0;
  double best_ratio = -1;
  for (std::size_t i = 0; i < p.cases.size(); ++i) {
    const auto& c = p.cases[i];
    if (c.oversubscribed) continue;
    double params = 0;
    for (std::size_t l = 0; l + 1 < c.widths.size(); ++l) params += static_cast<double>(c.widths[l] * c.widths[l + 1]);
    const double ratio = (c.ranks > 1 ? 1e6 : 0) + params * (c.grid_size + p.spline_order) / static_cast<double>(c.batch);
    if (ratio > best_ratio) {
      best_ratio = ratio;
      best = i;
    }
  }
  return best;
}

// A sweep job's arguments: the plan's options as words (never through a
// shell), then what the schedule sets.
std::vector<std::string> sweep_args(const std::string& op, const std::string& options, const std::string& backend,
                                    const std::string& json) {
  std::vector<std::string> args = {"measure", op};
  for (auto& w : split_words(options)) args.push_back(w);
  args.insert(args.end(), {"--backend", backend == "cuda" ? "nccl" : "mpi", "--json", json});
  return args;
}

std::vector<std::vector<Job>> make_schedule(const ValidationPlan& p) {
  std::vector<std::vector<Job>> rounds(static_cast<std::size_t>(p.rounds));
  const std::size_t shown = timeline_case(p);
  for (int r = 0; r < p.rounds; ++r) {
    auto& jobs = rounds[static_cast<std::size_t>(r)];
    if (p.measure.enabled) {
      const int n = p.measure.ranks;
      jobs.push_back({"kernels", n, "", false,
                      {"measure", "kernels", "--plan", "measure-plan.yaml", "--backend", p.backend, "--json", kernels_file(r)},
                      kernels_file(r)});
      if (n > 1) {
        // the runtime's own memory at one rank per node (the kernels above
        // give it at n): one shape, only its runtime memory is used
        jobs.push_back({"runtime memory, 1 rank", 1, "", false,
                        {"measure", "kernels", "--plan", "measure-plan.yaml", "--max-shapes", "1", "--backend", p.backend, "--json",
                         runtime_file(r)},
                        runtime_file(r)});
        for (const auto& t : p.measure.transports) {
          jobs.push_back({"all-reduce sweep " + transport_tag(t), n, t, false,
                          sweep_args("allreduce", p.measure.allreduce, p.backend, allreduce_file(t, r)), allreduce_file(t, r)});
          // DDP broadcasts the module's buffers every iteration: its own sweep
          if (!p.measure.broadcast.empty())
            jobs.push_back({"broadcast sweep " + transport_tag(t), n, t, false,
                            sweep_args("broadcast", p.measure.broadcast, p.backend, broadcast_file(t, r)), broadcast_file(t, r)});
        }
        if (!p.measure.interference_bytes.empty() && p.backend == "cpu")
          jobs.push_back({"interference", n, "", false,
                          {"bench", "interference", "--workload", "interference-workload.yaml", "--bytes", p.measure.interference_bytes,
                           "--json", interference_file(r)},
                          interference_file(r)});
      }
    }
    for (std::size_t c = 0; c < p.cases.size(); ++c) {
      const auto& vc = p.cases[c];
      std::vector<std::string> args = {"train", "--quiet", "--backend", p.backend, "--workload", "cases/case" + std::to_string(c) + ".yaml",
                                       "--steps", std::to_string(p.steps), "--json", live_file(c, r)};
      if (r == 0 && c == shown) args.insert(args.end(), {"--trace", trace_file(c)});
      jobs.push_back({vc.label(), vc.ranks, vc.transport, vc.oversubscribed, args, live_file(c, r)});
    }
  }
  return rounds;
}

std::string case_workload(const ValidationCase& c, const ValidationPlan& p, int index) {
  std::ostringstream w;
  w << "# " << c.label() << " (written by kanscale validate from " << p.file << ")\n"
    << "name: case" << index << "\nkan:\n  widths: [";
  for (std::size_t i = 0; i < c.widths.size(); ++i) w << (i ? ", " : "") << c.widths[i];
  w << "]\n  grid_size: " << c.grid_size << "\n  spline_order: " << p.spline_order << "\ntask: teacher\nbatch_per_gpu: " << c.batch
    << "\ndataset_size: " << c.batch * c.ranks * (p.steps + 2) << "\nseed: 11\nimplementation: kanscale\nddp:\n  bucket_cap: \""
    << static_cast<long long>(c.bucket_cap_bytes) << "B\"\n  first_bucket: \""
    << static_cast<long long>(std::min(c.bucket_cap_bytes, 1048576.0)) << "B\"\n";
  return w.str();
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The run directory: case workloads, the measurement plan, results/.
void prepare_dir(const ValidationPlan& p, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir + "/cases", ec);
  std::filesystem::create_directories(dir + "/results", ec);
  if (ec) throw std::runtime_error(dir + ": cannot create directory: " + ec.message());
  std::vector<std::pair<std::string, std::string>> files;
  for (std::size_t i = 0; i < p.cases.size(); ++i)
    files.emplace_back(dir + "/cases/case" + std::to_string(i) + ".yaml", case_workload(p.cases[i], p, static_cast<int>(i)));
  if (p.measure.enabled) {
    files.emplace_back(dir + "/measure-plan.yaml", slurp(p.measure.kernels_plan));
    files.emplace_back(dir + "/interference-workload.yaml", slurp("configs/workloads/default.yaml"));
  }
  write_files_atomic(files);
}

// Open MPI refuses to run as root without these (CI and containers run as root).
const std::vector<std::string> kRootEnv = {"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"};

// How a job's ranks start here (mpirun, oversubscribed when asked) or in an
// emitted script: the words before the executable. One rank starts under
// mpirun too, as under srun, so that every job has MPI started (its memory
// is the runtime's).
std::vector<std::string> launch_local(const Job& j) {
  if (j.ranks <= 1 && j.transport.empty() && !build::have_mpi) return {};  // a build without MPI runs one rank alone
  std::vector<std::string> w = {"mpirun", "-np", std::to_string(j.ranks), "--oversubscribe"};
  for (const auto& [key, value] : transport_mca(j.transport)) w.insert(w.end(), {"--mca", key, value});
  return w;
}

// The same as a line of a script (the environment first).
std::string launch_local_line(const Job& j) {
  const auto w = launch_local(j);
  return w.empty() ? "" : shell_words(kRootEnv) + " " + shell_words(w) + " ";
}

std::string launch_srun(const Job& j, int per_node, bool gpus) {
  std::vector<std::string> env;
  for (const auto& [key, value] : transport_mca(j.transport)) env.push_back("OMPI_MCA_" + key + "=" + value);
  // oversubscribed: every rank on one node, more tasks than its CPUs
  const int nodes = j.oversubscribed ? 1 : (j.ranks + per_node - 1) / per_node;
  const int on_node = j.oversubscribed ? j.ranks : std::min(j.ranks, per_node);
  std::vector<std::string> w = {"srun", "--nodes=" + std::to_string(nodes), "--ntasks=" + std::to_string(j.ranks),
                                "--ntasks-per-node=" + std::to_string(on_node)};
  if (j.oversubscribed) w.push_back("--overcommit");
  if (gpus) w.push_back("--gpus-per-task=1");
  return (env.empty() ? "" : shell_words(env) + " ") + shell_words(w) + " ";
}

// Runs kanscale (or anything) in the run directory with its output in `log`
// (relative to dir); a non-zero exit is an error quoting the log's tail.
void run_in(const std::vector<std::string>& argv, const std::string& dir, const std::string& log, const std::string& what) {
  const int status = run_process({argv, dir, log, kRootEnv});
  if (status != 0) {
    std::string tail = slurp(dir + "/" + log);
    if (tail.size() > 600) tail = "..." + tail.substr(tail.size() - 600);
    throw std::runtime_error(what + ": the run failed (" + shell_words(argv) + "), exit status " + std::to_string(status) + ":\n" + tail);
  }
}

void run_job(const Job& j, const std::string& dir, const std::string& exe) {
  std::vector<std::string> argv = launch_local(j);
  argv.push_back(exe);
  argv.insert(argv.end(), j.args.begin(), j.args.end());
  run_in(argv, dir, "results/last-job.log", j.what);
}

}  // namespace

void check_sweep_options(const ValidationPlan& p) {
  if (!p.measure.enabled || p.measure.ranks < 2) return;
  for (const std::string op : {"allreduce", "broadcast"}) {
    const std::string& text = op == "allreduce" ? p.measure.allreduce : p.measure.broadcast;
    if (op == "broadcast" && text.empty()) continue;
    // the job's own arguments, through measure's own parser
    const auto args = sweep_args(op, text, p.backend, "x.json");
    try {
      for (const auto& w : split_words(text)) {
        const std::string name = w.substr(0, w.find('='));
        for (const char* own : {"--json", "--csv", "--resume", "--backend", "--check-options", "--max-points", "--help", "-h"})
          if (name == own) throw InputError(name + " is set by the schedule, not by the plan");
      }
      const ParsedSweep parsed = parse_sweep_options(op, {args.begin() + 2, args.end()});
      if (parsed.help) throw InputError("the options print help instead of measuring");
      if (parsed.check_only) throw InputError("--check-options: the sweep would not measure");
    } catch (const InputError& e) {
      throw InputError(p.file + ": key 'calibration.measure." + op + "': \"" + text + "\": " + e.what());
    }
  }
}

// Slurm reads #SBATCH lines itself, not through a shell: the plan's name
// keeps its letters, digits, '.', '_' and '-'; anything else becomes '_'.
std::string slurm_job_name(const std::string& name) {
  std::string s = "kanscale-validate-";
  for (unsigned char ch : name) s += std::isalnum(ch) || ch == '.' || ch == '_' || ch == '-' ? static_cast<char>(ch) : '_';
  return s;
}

void emit_validation(const ValidationPlan& p, const std::string& dir, const std::string& exe) {
  for (const auto* text : {&p.file, &dir, &exe})
    for (unsigned char ch : *text)
      if (ch < 0x20 || ch == 0x7f) throw InputError("validate --emit: the plan's path, the directory or the executable's path holds a control character; "
                         "it cannot go into a job script");
  prepare_dir(p, dir);
  const auto rounds = make_schedule(p);
  const Cluster cluster = load_cluster(p.cluster_file);
  const int per_node = p.gpus_per_node > 0 ? p.gpus_per_node : cluster.gpus_per_node;
  int max_ranks = 1;
  for (const auto& r : rounds)
    for (const auto& j : r) max_ranks = std::max(max_ranks, j.ranks);
  std::ostringstream sh, sb;
  const std::string about =
      "# Written by kanscale validate --emit from " + p.file + " (kanscale " + build::version + ", " + build::git_hash + ").\n"
      "# Rounds of microbenchmarks and live runs, interleaved; every job leaves a file in results/.\n"
      "# Afterwards: kanscale validate " + p.file + " --collect <this directory> --out <report directory>\n"
      "set -euo pipefail\n";
  // the executable's path is data to the shell: quoted, never expanded
  const std::string tail = "KANSCALE_BUILT=" + shell_quote(exe) + "\nKANSCALE=\"${KANSCALE:-$KANSCALE_BUILT}\"\n";
  // Slurm runs a copy of the batch script from its spool directory: it goes
  // to the directory written here (KANSCALE_RUN_DIR if the files moved)
  std::string abs_dir = dir;
  {
    char buf[4096];
    if (dir.empty() || dir[0] != '/') {
      if (getcwd(buf, sizeof buf)) abs_dir = std::string(buf) + "/" + dir;
    }
  }
  const std::string head = about + "cd \"$(dirname \"$0\")\"\n" + tail;
  const std::string head_slurm = about + "RUN_DIR=" + shell_quote(abs_dir) + "\ncd \"${KANSCALE_RUN_DIR:-$RUN_DIR}\"\n" + tail;
  sh << "#!/usr/bin/env bash\n" << head;
  sb << "#!/usr/bin/env bash\n#SBATCH --job-name=" << slurm_job_name(p.name) << "\n#SBATCH --nodes="
     << (max_ranks + per_node - 1) / per_node << "\n#SBATCH --ntasks-per-node=" << per_node << "\n";
  if (p.backend == "cuda") sb << "#SBATCH --gres=gpu:" << per_node << "\n";
  sb << "#SBATCH --time=02:00:00\n" << head_slurm;
  for (std::size_t r = 0; r < rounds.size(); ++r) {
    sh << "\n# round " << r + 1 << "\n";
    sb << "\n# round " << r + 1 << "\n";
    for (const auto& j : rounds[r]) {
      sh << "echo " << shell_quote(j.what) << "\n" << launch_local_line(j) << "\"$KANSCALE\" " << shell_words(j.args) << "\n";
      sb << "echo " << shell_quote(j.what) << "\n" << launch_srun(j, per_node, p.backend == "cuda") << "\"$KANSCALE\" " << shell_words(j.args)
         << "\n";
    }
  }
  std::ostringstream readme;
  readme << "kanscale validate: " << p.name << " (" << p.file << ")\n\n"
         << "run-mpirun.sh     runs every round here, with mpirun (as on a workstation or inside an allocation)\n"
         << "run-slurm.sbatch  the same as a Slurm batch job (srun per job; " << per_node << " ranks per node)\n"
         << "cases/            the live cases' workloads\n"
         << "results/          where every job writes its JSON\n\n"
         << "Then: kanscale validate " << p.file << " --collect " << dir << " --out REPORT_DIR\n";
  write_files_atomic({{dir + "/run-mpirun.sh", sh.str()}, {dir + "/run-slurm.sbatch", sb.str()}, {dir + "/README.txt", readme.str()}});
  chmod((dir + "/run-mpirun.sh").c_str(), 0755);
  chmod((dir + "/run-slurm.sbatch").c_str(), 0755);
}

namespace {

// ---------------------------------------------------------------- comparison

struct Slice {
  std::string name, cat;
  int track;
  double t0, t1;
};

// One iteration of rank 0 from the live trace (the last steady one) and
// from the replay, on one time axis each starting at 0.
std::string svg_timelines(const std::vector<Slice>& sim, const std::vector<Slice>& live, const std::string& title) {
  double span = 1e-9;
  for (const auto* v : {&sim, &live})
    for (const auto& s : *v) span = std::max(span, s.t1);
  const int W = 900, lane = 18, M = 110;
  const int H = 40 + 4 * (lane + 6) + 50;
  auto X = [&](double t) { return M + (W - M - 20) * t / span; };
  auto color = [](const std::string& cat) {
    if (cat == "forward") return "#2ca02c";
    if (cat == "backward") return "#1f77b4";
    if (cat == "comm") return "#d62728";
    if (cat == "wait" || cat == "comm_wait") return "#bbbbbb";
    if (cat == "optimizer") return "#9467bd";
    if (cat == "grad_copy" || cat == "copy_back") return "#ff7f0e";
    return "#8c564b";
  };
  std::ostringstream o;
  o << std::fixed << std::setprecision(1);
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\" font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    << "<text x=\"10\" y=\"18\">" << title << "</text>\n";
  const char* lanes[4] = {"simulated compute", "simulated comm", "live compute", "live comm"};
  for (int l = 0; l < 4; ++l) {
    const double y = 34 + l * (lane + 6);
    o << "<text x=\"6\" y=\"" << y + 13 << "\">" << lanes[l] << "</text>\n";
    const auto& v = l < 2 ? sim : live;
    for (const auto& s : v) {
      if (s.track != l % 2) continue;
      o << "<rect x=\"" << X(s.t0) << "\" y=\"" << y << "\" width=\"" << std::max(0.5, X(s.t1) - X(s.t0)) << "\" height=\"" << lane
        << "\" fill=\"" << color(s.cat) << "\"><title>" << s.name << ": " << (s.t1 - s.t0) * 1e3 << " ms</title></rect>\n";
    }
  }
  const double ya = 34 + 4 * (lane + 6) + 8;
  o << "<line x1=\"" << X(0) << "\" y1=\"" << ya << "\" x2=\"" << X(span) << "\" y2=\"" << ya << "\" stroke=\"black\"/>\n"
    << "<text x=\"" << X(0) << "\" y=\"" << ya + 14 << "\">0</text><text x=\"" << X(span) << "\" y=\"" << ya + 14
    << "\" text-anchor=\"end\">" << std::setprecision(3) << span * 1e3 << " ms</text>\n";
  const char* legend[][2] = {{"forward", "#2ca02c"}, {"backward", "#1f77b4"}, {"gradient copies", "#ff7f0e"},
                             {"all-reduce", "#d62728"}, {"waiting", "#bbbbbb"}, {"Adam", "#9467bd"}, {"other", "#8c564b"}};
  for (int i = 0; i < 7; ++i) {
    const double x = M + 112.0 * i;
    o << "<rect x=\"" << x << "\" y=\"" << ya + 22 << "\" width=\"10\" height=\"10\" fill=\"" << legend[i][1] << "\"/><text x=\"" << x + 14
      << "\" y=\"" << ya + 31 << "\">" << legend[i][0] << "</text>\n";
  }
  o << "</svg>\n";
  return o.str();
}

std::vector<Slice> live_iteration(const nlohmann::json& trace, int steps) {
  // rank 0, the last steady iteration
  const std::int64_t step = steps - 1;
  std::vector<Slice> v;
  double t0 = 1e300;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X" || e["pid"] != 0 || e["args"]["iteration"] != step) continue;
    const double a = e["ts"].get<double>() * 1e-6, b = a + e["dur"].get<double>() * 1e-6;
    v.push_back({e["name"], e["cat"], e["tid"], a, b});
    t0 = std::min(t0, a);
  }
  for (auto& s : v) {
    s.t0 -= t0;
    s.t1 -= t0;
  }
  return v;
}

std::vector<Slice> simulated_iteration(const ScalingPoint& pt) {
  int last = 0;
  for (const auto& s : pt.trace)
    if (s.rank == 0) last = std::max(last, s.iteration);
  std::vector<Slice> v;
  double t0 = 1e300;
  for (const auto& s : pt.trace) {
    if (s.rank != 0 || s.iteration != last) continue;
    v.push_back({s.name, s.category, s.track, s.t0_s, s.t1_s});
    t0 = std::min(t0, s.t0_s);
  }
  for (auto& s : v) {
    s.t0 -= t0;
    s.t1 -= t0;
  }
  return v;
}

Metrics live_metrics(const std::string& path, const std::string& backend) {
  if (!std::filesystem::exists(path)) throw InputError(path + ": missing (did every job of the schedule run?)");
  const std::string text = read_input_file(path, "a kanscale train --json file");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    throw InputError(path + ": not a kanscale train --json file: " + e.what());
  }
  if (!j.contains("summary")) throw InputError(path + ": not a kanscale train --json file (no summary)");
  const auto& s = j["summary"];
  Metrics m;
  m.iteration_s = s["iteration_time_s"]["median"];
  m.compute_s = s["compute_time_s"]["median"];
  m.comm_s = s["communication_time_s"]["median"];
  m.exposed_s = s["exposed_communication_s"]["median"];
  m.samples_per_s = s["samples_per_s"];
  if (backend == "cuda" && s.contains("peak_device_bytes") && s["peak_device_bytes"].is_number())
    m.peak_memory_bytes = s["peak_device_bytes"];
  else
    m.peak_memory_bytes = s.value("peak_rss_bytes", 0.0);
  if (s.contains("bucket_communication_s")) m.bucket_s = s["bucket_communication_s"].get<std::vector<double>>();
  return m;
}

// Fits the calibration(s) from the rounds' microbenchmarks (the fit of
// kanscale fit, model/calibration_fit), each with its report beside it.
// Files are named relative to `dir` in the calibration, as the equivalent
// `kanscale fit` command run in `dir` names them (its header records that
// command).
void fit_measured(const ValidationPlan& p, const std::string& dir) {
  for (const auto& t : p.measure.transports) {
    std::vector<std::string> kernels, runtime, collectives, interference;
    for (int r = 0; r < p.rounds; ++r) kernels.push_back(kernels_file(r));
    if (p.measure.ranks > 1) {
      for (int r = 0; r < p.rounds; ++r) runtime.push_back(runtime_file(r));
      for (int r = 0; r < p.rounds; ++r) collectives.push_back(allreduce_file(t, r));
      if (!p.measure.broadcast.empty())
        for (int r = 0; r < p.rounds; ++r) collectives.push_back(broadcast_file(t, r));
      if (!p.measure.interference_bytes.empty() && p.backend == "cpu")
        for (int r = 0; r < p.rounds; ++r) interference.push_back(interference_file(r));
    }
    const std::string name = p.name + "-" + transport_tag(t);
    std::string cmdline = "kanscale fit --name " + name + " --out " + calibration_out(t);
    auto list = [&](const char* flag, const std::vector<std::string>& files) {
      if (files.empty()) return;
      cmdline += std::string(" ") + flag;
      for (const auto& f : files) cmdline += " " + f;
    };
    list("--kernels", kernels);
    list("--runtime-memory", runtime);
    list("--collectives", collectives);
    list("--interference", interference);
    auto in_dir = [&](std::vector<std::string> files) {
      for (auto& f : files) f = dir + "/" + f;
      return files;
    };
    FitInputs in = read_fit_inputs(in_dir(kernels), in_dir(collectives), in_dir(interference), {}, in_dir(runtime));
    for (auto* records : {&in.kernels, &in.runtime_memory})
      for (auto& f : *records) f.path = f.path.substr(dir.size() + 1);
    for (auto& f : in.collectives) f.path = f.path.substr(dir.size() + 1);
    for (auto& f : in.interference) f.path = f.path.substr(dir.size() + 1);
    const std::string report = "results/fit-report-" + transport_tag(t) + ".txt";
    CalibrationFit fit;
    try {
      fit = fit_calibration(in, name);
    } catch (const InputError& e) {
      write_files_atomic({{dir + "/" + report, std::string(e.what()) + "\n"}});
      throw InputError(std::string("the fit failed on the rounds' measurements: ") + e.what());
    }
    write_files_atomic({{dir + "/" + calibration_out(t), write_calibration(fit.file, fit_header(cmdline))},
                        {dir + "/" + report, fit.report + "wrote " + calibration_out(t) + "\n"}});
  }
}

std::string calibration_label(const ValidationPlan& p, const std::string& dir, const ValidationCase& c) {
  if (p.datasheet) return "the datasheet calibration of " + p.cluster_file;
  if (p.measure.enabled) return dir + "/" + calibration_out(c.ranks > 1 ? c.transport : p.measure.transports.front());
  return p.calibration_file;
}

}  // namespace

int collect_validation(const ValidationPlan& plan, const std::string& dir, const std::string& out_dir, const std::string& cmdline) {
  const Cluster cluster = load_cluster(plan.cluster_file);
  {
    struct stat st {};
    if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) throw InputError(dir + ": no such directory (written by --emit?)");
  }
  {  // every job of the schedule must have left its file
    std::vector<std::string> missing;
    for (const auto& round : make_schedule(plan))
      for (const auto& j : round)
        if (!std::ifstream(dir + "/" + j.output)) missing.push_back(j.output);
    if (!missing.empty()) {
      std::string list;
      for (std::size_t i = 0; i < missing.size() && i < 5; ++i) list += (i ? ", " : "") + missing[i];
      throw InputError(dir + ": " + std::to_string(missing.size()) + " job output(s) missing (" + list +
                       (missing.size() > 5 ? ", ..." : "") + "): did every job of the schedule run?");
    }
  }
  if (plan.measure.enabled) fit_measured(plan, dir);
  std::vector<CaseResult> results(plan.cases.size());
  const std::size_t shown = timeline_case(plan);
  std::vector<Slice> sim_slices;
  for (std::size_t i = 0; i < plan.cases.size(); ++i) {
    const ValidationCase& vc = plan.cases[i];
    results[i].c = vc;
    const Workload w = load_workload(dir + "/cases/case" + std::to_string(i) + ".yaml");
    // predictions: from the calibration only (microbenchmarks or datasheet), never from the live cases
    const Calibration k = plan.datasheet ? datasheet_calibration(cluster, w.precision)
                                         : load_calibration(calibration_label(plan, dir, vc), cluster, w.precision);
    StudyOptions o;
    o.gpus = {vc.ranks};
    o.trace = i == shown;
    o.trace_ranks = {0};
    Cluster cl = cluster;
    if (vc.ranks > cluster.gpus_per_node * cluster.nodes) cl.gpus_per_node = vc.ranks;  // oversubscribed
    const ScalingPoint pt = simulate_point(cl, w, k, o, vc.ranks);
    Metrics& m = results[i].predicted;
    m = {pt.iteration_s.median, pt.compute_s.median, pt.comm_s.median, pt.exposed_s.median, pt.samples_per_s, pt.memory.peak_bytes, {}};
    for (const auto& b : pt.steady_plan) m.bucket_s.push_back(b.end_s - b.start_s);
    if (i == shown) sim_slices = simulated_iteration(pt);
    for (int r = 0; r < plan.rounds; ++r) results[i].rounds.push_back(live_metrics(dir + "/" + live_file(i, r), plan.backend));
  }
  for (auto& r : results) {
    r.live = median_of(r.rounds);
    // noise floors: the robust standard deviation of the rounds' medians,
    // over the median iteration (one round: none)
    r.noise_pct = 100.0 * round_spread(r.rounds, &Metrics::iteration_s) / std::max(1e-300, r.live.iteration_s);
    r.exposed_noise_pct = 100.0 * round_spread(r.rounds, &Metrics::exposed_s) / std::max(1e-300, r.live.iteration_s);
  }
  attach_speedups(results);
  const auto summary = summarize(results);
  std::string why;
  const bool ok = judge(results, plan, &why);

  std::ostringstream table;
  table << std::fixed << std::setprecision(3);
  table << "| case | predicted iter (ms) | measured iter (ms) | error | noise | compute err | comm pred/meas (ms) | comm share "
           "| exposed pred/meas (ms) | buckets pred/meas (ms) | speedup pred/meas | peak memory pred/meas |\n"
           "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  int heavy = 0, judged = 0;
  for (const auto& r : results) {
    std::ostringstream bk;
    bk << std::fixed << std::setprecision(3);
    for (std::size_t b = 0; b < std::max(r.predicted.bucket_s.size(), r.live.bucket_s.size()) && r.c.ranks > 1; ++b)
      bk << (b ? ", " : "") << (b < r.predicted.bucket_s.size() ? r.predicted.bucket_s[b] * 1e3 : 0.0) << "/"
         << (b < r.live.bucket_s.size() ? r.live.bucket_s[b] * 1e3 : 0.0);
    table << "| " << r.c.label() << " | " << r.predicted.iteration_s * 1e3 << " | " << r.live.iteration_s * 1e3 << " | "
          << std::setprecision(1) << pct_error(r.predicted.iteration_s, r.live.iteration_s) << "% | " << r.noise_pct << "% | "
          << pct_error(r.predicted.compute_s, r.live.compute_s) << "% | " << std::setprecision(3) << r.predicted.comm_s * 1e3
          << " / " << r.live.comm_s * 1e3 << " | " << std::setprecision(0)
          << (r.live.iteration_s > 0 ? 100 * r.live.comm_s / r.live.iteration_s : 0.0) << "% | " << std::setprecision(3)
          << r.predicted.exposed_s * 1e3 << " / " << r.live.exposed_s * 1e3 << " | "
          << (r.c.ranks > 1 ? bk.str() : "-") << " | " << std::setprecision(2)
          << (r.speedup_live > 0 ? std::to_string(r.speedup_predicted).substr(0, 4) + " / " + std::to_string(r.speedup_live).substr(0, 4)
                                 : std::string("-"))
          << " | " << format_bytes(r.predicted.peak_memory_bytes) << " / " << format_bytes(r.live.peak_memory_bytes) << " |\n";
  }
  for (const auto& r : results) {
    if (r.c.oversubscribed) continue;
    ++judged;
    heavy += r.live.iteration_s > 0 && r.live.comm_s >= 0.3 * r.live.iteration_s;
  }
  std::ostringstream sum;
  sum << std::fixed << std::setprecision(1) << "| metric | cases | mean abs error | max abs error | worst case |\n|---|---|---|---|---|\n";
  for (const auto& s : summary)
    sum << "| " << s.metric << " | " << s.cases << " | " << s.mean_abs_pct << "% | " << s.max_abs_pct << "% | " << s.worst_case << " |\n";
  const double mean_noise = mean_noise_pct(results);
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
  std::string cal_text = plan.datasheet ? "the datasheet calibration of `" + plan.cluster_file + "`"
                         : plan.measure.enabled ? "fitted from microbenchmarks measured in every round, interleaved with the live runs (`" +
                                                      dir + "/results/calibration-*.yaml`, fit reports beside them)"
                                                : "`" + plan.calibration_file + "` (from microbenchmarks only)";
  std::ostringstream md;
  md << "# kanscale validate: " << plan.name << "\n\n"
     << "Plan `" << plan.file << "`; cluster `" << plan.cluster_file << "`; backend " << plan.backend << "; calibration " << cal_text
     << "; " << plan.rounds << " rounds of " << plan.steps << " steps per case, cases interleaved within each round"
     << (plan.measure.enabled ? " after that round's microbenchmarks" : "") << ". kanscale " << build::version << " ("
     << build::git_hash << ").\n\n"
     << "Errors are (predicted - measured) / measured; communication errors are stated as a share of the measured iteration. "
     << "The noise floor of a case is the robust standard deviation (1.4826 x the median absolute deviation) of its rounds' "
        "median iteration times, over their median. "
     << "Speedups are throughputs over the same model and batch on one rank. Peak memory: the largest rank's resident set (CPU) or device "
     << "allocations (CUDA) against the calibrated memory model. Oversubscribed cases (more ranks than cores) are shown but not "
     << "judged.\n\n"
     << "## Summary\n\n" << sum.str() << "\nCommunication-heavy cases (measured communication at least 30% of the iteration): "
     << heavy << " of " << judged << " judged.\n\nBound on the iteration time: " << bound.str() << ": **"
     << (ok ? "met" : "exceeded: " + why) << "**\n\n"
     << "## Cases\n\n" << table.str() << "\n![predicted vs measured](predicted_vs_measured.svg)\n\n"
     << "Predicted against measured iteration time (green: 1 rank, blue: several, red: oversubscribed; dashed: equal).\n\n"
     << "![error per case, noise floor in orange](error_per_case.svg)\n\n"
     << "Iteration-time error per case, in the order of the table (orange: +- the case's noise floor).\n\n";
  std::vector<std::pair<std::string, std::string>> files;
  const std::string tf = dir + "/" + trace_file(shown);
  if (!plan.cases.empty() && std::ifstream(tf)) {
    std::ifstream in(tf);
    const auto live = live_iteration(nlohmann::json::parse(in), plan.steps);
    files.emplace_back(out_dir + "/timeline.svg",
                       svg_timelines(sim_slices, live, "rank 0, one steady iteration: " + plan.cases[shown].label()));
    md << "![simulated and live timelines](timeline.svg)\n\nOne steady iteration of rank 0 of " << plan.cases[shown].label()
       << ", simulated (top) and live (bottom, round 1's last iteration), each from its own start.\n\n";
  }
  md << "`" << cmdline << "`\n";
  nlohmann::json j = nlohmann::json::array();
  for (const auto& r : results) {
    auto mj = [](const Metrics& m) {
      return nlohmann::json{{"iteration_time_s", m.iteration_s}, {"compute_time_s", m.compute_s}, {"communication_time_s", m.comm_s},
                            {"exposed_communication_s", m.exposed_s}, {"samples_per_s", m.samples_per_s},
                            {"peak_memory_bytes", m.peak_memory_bytes}, {"bucket_communication_s", m.bucket_s}};
    };
    nlohmann::json rounds = nlohmann::json::array();
    for (const auto& m : r.rounds) rounds.push_back(mj(m));
    j.push_back({{"case", r.c.label()}, {"ranks", r.c.ranks}, {"transport", r.c.transport}, {"oversubscribed", r.c.oversubscribed},
                 {"predicted", mj(r.predicted)}, {"measured_median", mj(r.live)}, {"rounds", rounds}, {"noise_pct", r.noise_pct},
                 {"iteration_error_pct", pct_error(r.predicted.iteration_s, r.live.iteration_s)},
                 {"speedup_predicted", r.speedup_predicted}, {"speedup_measured", r.speedup_live}});
  }
  nlohmann::json sj = nlohmann::json::array();
  for (const auto& s : summary)
    sj.push_back({{"metric", s.metric}, {"cases", s.cases}, {"mean_abs_pct", s.mean_abs_pct}, {"max_abs_pct", s.max_abs_pct},
                  {"worst_case", s.worst_case}});
  files.emplace_back(out_dir + "/report.md", md.str());
  files.emplace_back(out_dir + "/results.json",
                     nlohmann::json{{"plan", plan.file}, {"bound_met", ok}, {"why", why}, {"mean_noise_pct", mean_noise},
                                    {"communication_heavy_cases", heavy}, {"judged_cases", judged},
                                    {"summary", sj}, {"cases", j}}
                             .dump(2) +
                         "\n");
  files.emplace_back(out_dir + "/predicted_vs_measured.svg", svg_scatter(results));
  files.emplace_back(out_dir + "/error_per_case.svg", svg_errors(results));
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  write_files_atomic(files);
  std::cout << "kanscale validate: " << plan.name << " (" << results.size() << " cases x " << plan.rounds << " rounds)\n\n"
            << sum.str() << "\n" << table.str() << "\nbound " << (ok ? "met" : "EXCEEDED: " + why) << "; report: " << out_dir
            << "/report.md\n";
  return ok ? 0 : 1;
}

int run_validation(const ValidationPlan& plan, const std::string& out_dir, const std::string& exe, const std::string& cmdline) {
  if (plan.cases.empty()) return published_comparison(plan, out_dir, cmdline);
  const std::string dir = out_dir + "/work";
  prepare_dir(plan, dir);
  const auto rounds = make_schedule(plan);
  std::size_t total = 0, done = 0;
  for (const auto& r : rounds) total += r.size();
  const bool tty = isatty(STDERR_FILENO) != 0;
  for (std::size_t r = 0; r < rounds.size(); ++r) {
    for (const auto& j : rounds[r]) {
      run_job(j, dir, exe);
      ++done;
      if (tty) std::cerr << "\rround " << r + 1 << "/" << rounds.size() << ": " << done << "/" << total << " jobs   " << std::flush;
    }
    if (!tty) std::cerr << "round " << r + 1 << "/" << rounds.size() << ": " << done << "/" << total << " jobs done\n";
  }
  if (tty) std::cerr << "\n";
  const int rc = collect_validation(plan, dir, out_dir, cmdline);
  if (plan.published.enabled) published_comparison(plan, out_dir + "/published", cmdline);
  return rc;
}

int published_comparison(const ValidationPlan& plan, const std::string& out_dir, const std::string& cmdline) {
  if (!plan.published.enabled) throw InputError(plan.file + ": the plan has no published: section");
  const PublishedSpec& pub = plan.published;
  const Cluster c = load_cluster(plan.cluster_file);
  const Workload w = load_workload(pub.workload);
  const Calibration k = datasheet_calibration(c, w.precision);  // datasheet only: nothing tuned to the figures
  StudyOptions o;
  o.gpus = pub.gpus;
  o.scaling = Scaling::strong;
  const StudyResult strong = run_study(c, w, k, o);
  o.scaling = Scaling::weak;
  const StudyResult weak = run_study(c, w, k, o);
  const ScalingPoint& top = strong.points.back();
  std::ostringstream md, rows;
  md << std::fixed << std::setprecision(2);
  rows << std::fixed << std::setprecision(2);
  auto dev = [](double pred, double published) { return 100.0 * (pred - published) / published; };
  rows << "| strong scaling: speedup at " << top.gpus << " GPUs | " << pub.speedup << "x | " << top.speedup << "x | "
       << std::showpos << dev(top.speedup, pub.speedup) << std::noshowpos << "% |\n";
  rows << "| strong scaling: parallel efficiency at " << top.gpus << " GPUs | " << pub.efficiency << "% | " << 100 * top.efficiency
       << "% | " << std::showpos << dev(100 * top.efficiency, pub.efficiency) << std::noshowpos << "% |\n";
  double ex_lo = 1e9, ex_hi = 0, tot_lo = 1e9, tot_hi = 0;
  std::ostringstream ex_seq, tot_seq;
  ex_seq << std::fixed << std::setprecision(1);
  tot_seq << std::fixed << std::setprecision(1);
  std::vector<double> ex_v;
  for (const auto& pt : strong.points) {
    if (pt.gpus < 2) continue;
    ex_lo = std::min(ex_lo, 100 * pt.overhead_exposed);
    ex_hi = std::max(ex_hi, 100 * pt.overhead_exposed);
    tot_lo = std::min(tot_lo, 100 * pt.overhead_total);
    tot_hi = std::max(tot_hi, 100 * pt.overhead_total);
    ex_seq << (ex_v.empty() ? "" : ", ") << pt.gpus << ": " << 100 * pt.overhead_exposed << "%";
    tot_seq << (ex_v.empty() ? "" : ", ") << pt.gpus << ": " << 100 * pt.overhead_total << "%";
    ex_v.push_back(pt.overhead_exposed);
  }
  bool monotonic = true;
  for (std::size_t i = 1; i < ex_v.size(); ++i) monotonic = monotonic && ex_v[i] >= ex_v[i - 1];
  rows << "| communication overhead, exposed (range over 2.." << top.gpus << " GPUs) | " << pub.overhead_min_pct << "-"
       << pub.overhead_max_pct << "% | " << ex_lo << "-" << ex_hi << "% (" << ex_seq.str() << ") | low end "
       << std::showpos << ex_lo - pub.overhead_min_pct << ", high end " << ex_hi - pub.overhead_max_pct << std::noshowpos
       << " points |\n";
  rows << "| communication overhead, total (range) | " << pub.overhead_min_pct << "-" << pub.overhead_max_pct << "% | " << tot_lo << "-"
       << tot_hi << "% (" << tot_seq.str() << ") | low end " << std::showpos << tot_lo - pub.overhead_min_pct << ", high end "
       << tot_hi - pub.overhead_max_pct << std::noshowpos << " points |\n";
  rows << "| overhead across GPU counts | not monotonic | " << (monotonic ? "monotonic (rises with GPU count)" : "not monotonic")
       << " | " << (monotonic ? "different shape" : "same shape") << " |\n";
  // weak scaling: per-GPU throughput against one GPU
  std::ostringstream wk;
  wk << std::fixed << std::setprecision(1);
  double base = 0, drop = 0, lo = 1e300, hi = 0;
  for (const auto& pt : weak.points) {
    const double per_gpu = pt.samples_per_s / pt.gpus;
    if (pt.gpus == 1) base = per_gpu;
  }
  for (const auto& pt : weak.points) {
    const double rel = base > 0 ? pt.samples_per_s / pt.gpus / base : 0;
    wk << (pt.gpus == weak.points.front().gpus ? "" : ", ") << pt.gpus << ": " << 100 * rel << "%";
    if (pt.gpus >= 2) {
      lo = std::min(lo, rel);
      hi = std::max(hi, rel);
      if (drop == 0) drop = 1 - rel;
    }
  }
  const bool weak_same = drop > 0 && (hi - lo) < drop;
  rows << "| weak scaling: per-GPU throughput against 1 GPU | drops from 1 to several GPUs, then stable | " << wk.str() << " | "
       << (weak_same ? "same shape" : "different shape") << " (drop 1->2: " << 100 * drop << "%, spread over 2.." << top.gpus
       << ": " << 100 * (hi - lo) << " points) |\n";
  // model size
  std::ostringstream ms;
  ms << std::fixed << std::setprecision(3);
  bool ratio_up = true, time_up = true;
  double prev_ratio = -1, prev_time = -1, prev_params = -1;
  std::vector<double> exps;
  ms << "| widths | parameters | peak memory per GPU | parameter-to-memory ratio | epoch time at " << top.gpus << " GPUs |\n|---|---|---|---|---|\n";
  for (const auto& widths : pub.model_widths) {
    Workload wm = w;
    wm.widths = widths;
    StudyOptions om;
    om.gpus = {top.gpus};
    const StudyResult r = run_study(c, wm, k, om);
    const ScalingPoint& pt = r.points.back();
    const double ratio = pt.memory.parameter_to_memory_ratio();
    std::string ws;
    for (auto x : widths) ws += (ws.empty() ? "" : ", ") + std::to_string(x);
    ms << "| [" << ws << "] | " << r.parameters << " | " << format_bytes(pt.memory.peak_bytes) << " | " << 100 * ratio << "% | "
       << format_time(pt.epoch_s) << " |\n";
    if (prev_ratio >= 0) {
      ratio_up = ratio_up && ratio > prev_ratio;
      time_up = time_up && pt.epoch_s > prev_time;
      exps.push_back(std::log(pt.epoch_s / prev_time) / std::log(static_cast<double>(r.parameters) / prev_params));
    }
    prev_ratio = ratio;
    prev_time = pt.epoch_s;
    prev_params = static_cast<double>(r.parameters);
  }
  if (!pub.model_widths.empty()) {
    std::ostringstream e;
    e << std::fixed << std::setprecision(2);
    for (std::size_t i = 0; i < exps.size(); ++i) e << (i ? ", " : "") << exps[i];
    rows << "| model size: parameter-to-memory ratio as models grow | improves | " << (ratio_up ? "improves" : "does not always improve")
         << " | " << (ratio_up ? "same trend" : "different trend") << " |\n";
    rows << "| model size: training time as models grow | grows unfavourably | " << (time_up ? "grows" : "does not always grow")
         << " (epoch time ~ parameters^" << e.str() << " between sizes) | " << (time_up ? "grows; see the exponents" : "different trend")
         << " |\n";
  }
  md << "# kanscale against the published figures: " << plan.name << "\n\n"
     << "Published: " << pub.source << ". Predicted: `kanscale` with the datasheet calibration of `" << plan.cluster_file
     << "` (nothing fitted, nothing tuned to these figures), workload `" << pub.workload << "` (" << strong.parameters
     << " parameters, batch " << w.batch_per_gpu << " per GPU, implementation " << (w.implementation == Implementation::kanscale ? "kanscale" : "efficient-kan")
     << "). kanscale " << build::version << " (" << build::git_hash << ").\n\n"
     << "| figure | published | predicted | deviation |\n|---|---|---|---|\n" << rows.str() << "\n"
     << "Overhead is stated both ways: exposed (compute idle waiting for communication, per iteration) and total "
     << "(communication busy time, per iteration); the study does not say which it reports.\n\n";
  if (!pub.model_widths.empty()) md << "## Model size\n\n" << ms.str() << "\n";
  md << "## What is unknown about the published setup\n\n"
     << "Only the abstract is public: the widths, grid size, batch size, dataset size, number of epochs, what \"overhead\" "
        "measures, the software versions beyond NCCL 2.14.3 seen in other jobs on the machine, and the InfiniBand rate "
        "(HDR 200 Gb/s or HDR100) are not known. The workload above is a stand-in of the kind the study describes; the "
        "deviations are stated as they come out, not minimised.\n\n`"
     << cmdline << "`\n";
  nlohmann::json j = {{"plan", plan.file}, {"source", pub.source}, {"workload", pub.workload},
                      {"published", {{"speedup", pub.speedup}, {"efficiency_pct", pub.efficiency},
                                     {"overhead_pct", {pub.overhead_min_pct, pub.overhead_max_pct}}}},
                      {"predicted", {{"gpus", top.gpus}, {"speedup", top.speedup}, {"efficiency_pct", 100 * top.efficiency},
                                     {"overhead_exposed_pct", {ex_lo, ex_hi}}, {"overhead_total_pct", {tot_lo, tot_hi}},
                                     {"overhead_monotonic", monotonic}, {"weak_same_shape", weak_same},
                                     {"ratio_improves", ratio_up}}}};
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  write_files_atomic({{out_dir + "/report.md", md.str()}, {out_dir + "/results.json", j.dump(2) + "\n"}});
  std::cout << md.str();
  return 0;
}

}  // namespace ks
