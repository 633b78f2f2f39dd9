#include "verdict.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "common/error.hpp"
#include "model/statistics.hpp"

namespace ks {

namespace {
std::string fmt(const char* f, double x) {
  char b[64];
  std::snprintf(b, sizeof b, f, x);
  return b;
}
}  // namespace

bool RepeatVerdict::passed() const {
  if (inconclusive) return false;
  for (const auto& c : criteria)
    if (!c.pass) return false;
  return true;
}

int RepeatVerdict::exit_code() const { return inconclusive ? 3 : passed() ? 0 : 1; }

std::string RepeatVerdict::text() const {
  std::ostringstream o;
  for (const auto& c : criteria) o << "  " << (c.pass ? "pass" : "FAIL") << "  " << c.name << ": " << c.detail << "\n";
  if (!groups.empty()) o << "  where each group's bias is (points of the measured iteration; not judged) and its coverage:\n";
  for (const auto& g : groups) {
    o << "    " << g.group << " " << fmt("%+.1f%%", g.bias_pct);
    if (g.has_parts)
      o << " = compute " << fmt("%+.1f", g.compute_pts) << " + exposed communication " << fmt("%+.1f", g.exposed_pts) << " + the rest "
        << fmt("%+.1f", g.bias_pct - g.compute_pts - g.exposed_pts);
    if (g.with_interval > 0)
      o << "; coverage " << g.inside << " of " << g.with_interval << " (" << fmt("%.1f%%", 100.0 * g.inside / g.with_interval) << ")";
    o << "\n";
  }
  o << "  the other runs as predictor: mean " << fmt("%.1f%%", others_mean_pct) << ", p90 " << fmt("%.1f%%", others_p90_pct) << "\n";
  if (inconclusive)
    o << "verdict: inconclusive: this machine does not repeat (the other runs' predictor p90 " << fmt("%.1f%%", others_p90_pct)
      << " is above the plan's limit)\n";
  else
    o << "verdict: " << (passed() ? "pass" : "fail") << "\n";
  return o.str();
}

RepeatVerdict judge_repeat_runs(const std::vector<ValidationRun>& runs, const ValidationPlan& plan) {
  if (runs.size() < 3) throw InputError("the repeat-run verdict needs at least three runs, got " + std::to_string(runs.size()));
  const VerdictThresholds& t = plan.verdict;
  const Repeatability rep = repeatability(runs);
  const std::size_t n = runs.size(), nc = rep.cases.size();
  RepeatVerdict v;
  for (const auto& rr : rep.runs) {
    v.others_mean_pct += rr.others.mean_abs_pct / static_cast<double>(n);
    v.others_p90_pct += rr.others.p90_abs_pct / static_cast<double>(n);
  }
  // per run, in the first run's case order: signed error, group keys, interval
  // group -> its bias and parts (sums over the runs of each run's group
  // mean; every run holds the same cases, so every group is in all n) and
  // its coverage
  std::map<std::string, GroupSplit> split;
  int case_runs = 0, too_fast = 0, with_interval = 0, inside = 0;
  std::vector<double> half_widths;
  std::ostringstream a_detail;
  bool a_pass = true;
  for (std::size_t k = 0; k < n; ++k) {
    const ValidationRun& run = runs[k];
    std::map<std::string, std::size_t> index;
    for (std::size_t c = 0; c < run.cases.size(); ++c) index[run.cases[c]] = c;
    double mean_abs = 0;
    std::map<std::string, std::pair<double, int>> run_groups;
    std::map<std::string, std::pair<double, double>> run_parts;  // group -> (compute, exposed) point sums
    std::map<std::string, int> run_with_parts;
    for (std::size_t c = 0; c < nc; ++c) {
      const std::size_t i = index.at(rep.cases[c]);
      const double meas = run.measured_s[i], pred = run.predicted_s.at(i);
      if (!(pred > 0)) throw InputError(run.path + ": case \"" + rep.cases[c] + "\" has no prediction to judge");
      const double err = 100.0 * (pred - meas) / meas;
      mean_abs += std::fabs(err) / static_cast<double>(nc);
      ++case_runs;
      too_fast += pred < meas;
      const double lo = run.interval_lo_s.at(i), hi = run.interval_hi_s.at(i);
      const bool has_interval = std::isfinite(lo) && std::isfinite(hi), in = has_interval && meas >= lo && meas <= hi;
      auto at = [&](const std::vector<double>& v) { return i < v.size() ? v[i] : std::nan(""); };
      const double dc = 100.0 * (at(run.predicted_compute_s) - at(run.measured_compute_s)) / meas;
      const double de = 100.0 * (at(run.predicted_exposed_s) - at(run.measured_exposed_s)) / meas;
      for (const std::string& g : {"ranks " + std::to_string(run.ranks.at(i)) + (run.transport.at(i).empty() ? "" : " " + run.transport.at(i)),
                                   "model " + run.model.at(i)}) {
        run_groups[g].first += err;
        run_groups[g].second += 1;
        GroupSplit& sp = split[g];
        ++sp.case_runs;
        sp.with_interval += has_interval;
        sp.inside += in;
        if (std::isfinite(dc) && std::isfinite(de)) {
          run_parts[g].first += dc;
          run_parts[g].second += de;
          ++run_with_parts[g];
        }
      }
      if (has_interval) {
        ++with_interval;
        inside += in;
        half_widths.push_back(100.0 * (hi - lo) / 2 / pred);
      }
    }
    const double limit = std::max(plan.bound_mean_pct, t.mean_factor * rep.runs[k].others.mean_abs_pct + t.mean_points);
    const bool ok = mean_abs <= limit;
    a_pass = a_pass && ok;
    a_detail << (k ? "; " : "") << "run " << k + 1 << " " << fmt("%.1f%%", mean_abs) << (ok ? " <= " : " > ") << fmt("%.1f%%", limit);
    for (const auto& [g, s] : run_groups) {
      GroupSplit& sp = split[g];
      sp.bias_pct += s.first / s.second;
      // the parts only where every case-run of the group has them
      const bool all = run_with_parts[g] == s.second;
      sp.has_parts = (k == 0 || sp.has_parts) && all;
      if (all) {
        sp.compute_pts += run_parts[g].first / s.second;
        sp.exposed_pts += run_parts[g].second / s.second;
      }
    }
  }
  v.criteria.push_back({"(a) mean |error| per run within max(bound, " + fmt("%g", t.mean_factor) + " x the other runs' mean + " +
                            fmt("%g", t.mean_points) + " points)",
                        a_pass, a_detail.str()});
  // (b) signed bias per group, averaged over runs
  bool b_pass = true;
  std::ostringstream b_detail;
  std::string worst;
  double worst_abs = -1;
  for (auto& [g, sp] : split) {
    const double bias = sp.bias_pct / static_cast<double>(n);
    if (std::fabs(bias) > t.group_bias_pct) b_pass = false;
    if (std::fabs(bias) > worst_abs) {
      worst_abs = std::fabs(bias);
      worst = g + " " + fmt("%+.1f%%", bias);
    }
    b_detail << (b_detail.tellp() > 0 ? ", " : "") << g << " " << fmt("%+.1f%%", bias);
    sp.group = g;
    sp.bias_pct = bias;
    sp.compute_pts /= static_cast<double>(n);
    sp.exposed_pts /= static_cast<double>(n);
    v.groups.push_back(sp);
  }
  v.criteria.push_back({"(b) signed mean error per group within +-" + fmt("%g%%", t.group_bias_pct), b_pass,
                        b_detail.str() + " (largest: " + worst + ")"});
  // (c) too fast share
  const double share = 100.0 * too_fast / std::max(1, case_runs);
  v.criteria.push_back({"(c) case-runs predicted too fast within " + fmt("%g", t.too_fast_min_pct) + "-" + fmt("%g%%", t.too_fast_max_pct),
                        share >= t.too_fast_min_pct && share <= t.too_fast_max_pct,
                        std::to_string(too_fast) + " of " + std::to_string(case_runs) + " (" + fmt("%.1f%%", share) + ")"});
  // (d) pooled coverage at a bounded half-width
  if (with_interval == 0) {
    v.criteria.push_back({"(d) coverage", false, "no case has an interval (the calibration records no measured uncertainty)"});
  } else {
    const double cov = 100.0 * inside / with_interval;
    const double hw = median(half_widths), hw_limit = t.half_width_factor * v.others_p90_pct;
    v.criteria.push_back({"(d) coverage pooled over the runs >= " + fmt("%g%%", t.coverage_min_pct) + " at a median half-width <= " +
                              fmt("%g", t.half_width_factor) + " x the other runs' p90",
                          cov >= t.coverage_min_pct && hw <= hw_limit,
                          std::to_string(inside) + " of " + std::to_string(with_interval) + " (" + fmt("%.1f%%", cov) + "), median half-width " +
                              fmt("%.1f%%", hw) + " against " + fmt("%.1f%%", hw_limit)});
  }
  v.inconclusive = v.others_p90_pct > t.inconclusive_p90_pct;
  return v;
}

}  // namespace ks
