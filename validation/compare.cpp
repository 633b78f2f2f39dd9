#include "compare.hpp"

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

#include "formats/measurement_records.hpp"
#include <limits>

#include "model/statistics.hpp"
#include "formats/yaml_reader.hpp"

namespace ks {

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
    for (const auto& m : rounds) {
      if (std::isnan(get(m))) return std::numeric_limits<double>::quiet_NaN();  // not measured
      v.push_back(get(m));
    }
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
  for (double x : v)
    if (std::isnan(x)) return std::numeric_limits<double>::quiet_NaN();  // not measured
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
       [](const CaseResult& r) { return r.c.ranks > 1 && !r.live.bucket_s.empty(); }},
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
      if (std::isnan(e)) continue;  // not measured (a PyTorch run's compute/communication split)
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
        if (std::isnan(e)) continue;  // not measured
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

Coverage interval_coverage(const std::vector<CaseResult>& results) {
  Coverage c;
  std::vector<double> half;
  for (const auto& r : results) {
    if (r.c.oversubscribed || !r.interval || !(r.predicted.iteration_s > 0)) continue;
    ++c.cases;
    c.inside += r.live.iteration_s >= r.interval->lo && r.live.iteration_s <= r.interval->hi;
    half.push_back(100.0 * (r.interval->hi - r.interval->lo) / 2 / r.predicted.iteration_s);
  }
  if (!half.empty()) c.median_half_width_pct = median(half);
  return c;
}

std::vector<RanksSummary> per_rank_count(const std::vector<CaseResult>& results) {
  std::map<int, std::vector<const CaseResult*>> by;
  for (const auto& r : results) by[r.c.ranks].push_back(&r);
  std::vector<RanksSummary> out;
  for (const auto& [ranks, rs] : by) {
    RanksSummary s;
    s.ranks = ranks;
    std::vector<CaseResult> judged;
    double over_sum = 0;
    for (const CaseResult* r : rs) {
      const double e = pct_error(r->predicted.iteration_s, r->live.iteration_s);
      if (r->c.oversubscribed) {
        ++s.oversubscribed;
        over_sum += std::fabs(e);
        continue;
      }
      ++s.judged;
      s.mean_abs_pct += std::fabs(e);
      s.mean_signed_pct += e;
      judged.push_back(*r);
    }
    if (s.judged > 0) {
      s.mean_abs_pct /= s.judged;
      s.mean_signed_pct /= s.judged;
    }
    if (s.oversubscribed > 0) s.oversubscribed_mean_abs_pct = over_sum / s.oversubscribed;
    s.coverage = interval_coverage(judged);
    out.push_back(s);
  }
  return out;
}

nlohmann::json read_live_run(const std::string& path) {
  if (!std::filesystem::exists(path)) throw InputError(path + ": missing (did every job of the schedule run?)");
  return read_json_file(path, "a kanscale train --json file");
}

Metrics live_metrics(const std::string& path, const std::string& backend) { return live_metrics(read_live_run(path), path, backend); }

Metrics live_metrics(const nlohmann::json& j, const std::string& path, const std::string& backend) {
  if (!j.is_object() || !j.contains("summary")) throw InputError(path + ": not a kanscale train --json file (no summary)");
  const TrainSummary s = train_summary_from_json(j["summary"], path);
  Metrics m;
  m.iteration_s = s.iteration_s.median;
  m.compute_s = s.compute_s.median;
  m.comm_s = s.communication_s.median;
  m.exposed_s = s.exposed_communication_s.median;
  m.samples_per_s = s.samples_per_s;
  m.peak_memory_bytes = backend == "cuda" && s.peak_device_bytes ? *s.peak_device_bytes : s.peak_rss_bytes;
  m.bucket_s = s.bucket_communication_s;
  return m;
}

std::vector<double> rank_compute_medians(const std::string& path) {
  const nlohmann::json j = read_json_file(path, "a kanscale train --json file");
  if (!j.is_object() || !j.contains("iterations") || !j["iterations"].is_array()) return {};
  std::map<int, std::vector<double>> per_rank;
  for (const auto& it : j["iterations"]) {
    if (!it.is_object() || it.value("first_iteration", false)) continue;
    const auto rank = it.find("rank"), compute = it.find("compute_time_s");
    if (rank == it.end() || compute == it.end() || !rank->is_number_integer() || !compute->is_number()) continue;
    per_rank[rank->get<int>()].push_back(compute->get<double>());
  }
  std::vector<double> out;
  for (auto& [rank, v] : per_rank) out.push_back(median(v));
  if (std::none_of(out.begin(), out.end(), [](double t) { return t > 0; })) return {};
  return out;
}

}  // namespace ks
