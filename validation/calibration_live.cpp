#include "calibration_live.hpp"

#include <cmath>
#include <iomanip>
#include <map>

#include "compare.hpp"
#include "model/fit.hpp"
#include "model/statistics.hpp"
#include "schedule.hpp"
#include "sim/study.hpp"

namespace ks {

namespace {
struct LivePoint {
  int ranks = 1;
  std::size_t index = 0;
  Workload workload;
  Cluster cluster;  // oversubscribed runs get their ranks on one node
  double measured_s = 0;
  std::map<std::string, double> op_s;  // the trainer's per-op medians (median over rounds)
};

ScalingPoint predict(const LivePoint& lp, const Calibration& cal) {
  StudyOptions o;
  o.gpus = {lp.ranks};
  return simulate_point(lp.cluster, lp.workload, cal, o, layout_for(lp.cluster, lp.ranks, std::nullopt));
}
// The live summary's op names: Adam and the copy-back are one slice each
// in the trainer, one op per parameter in the model.
std::string live_op_key(const Op& op) {
  return op.cost_class == "adam" || op.cost_class == "copy_back" ? op.cost_class : op.name;
}
}  // namespace

std::vector<CalibrationFile::FittedLiveOp> fit_live_ops(const std::vector<LiveOpPoint>& points) {
  std::vector<CalibrationFile::FittedLiveOp> out;
  for (const auto& cls : kanscale_cost_classes()) {
    const bool kan = cls == "kan_forward" || cls == "kan_backward";
    std::vector<std::vector<double>> X;
    std::vector<double> y;
    for (const auto& p : points)
      if (p.cost_class == cls && p.predicted_s > 0 && p.live_s > 0) {
        X.push_back(kan ? std::vector<double>{p.predicted_s, 1.0, p.elements} : std::vector<double>{p.predicted_s, 1.0});
        y.push_back(p.live_s);
      }
    const std::size_t terms = kan ? 3 : 2;
    if (X.size() < terms + 1) continue;
    std::vector<bool> hold(X.size(), false);
    if (X.size() >= 8)
      for (std::size_t i = 3; i < X.size(); i += 4) hold[i] = true;
    const LinearFit f = fit_relative_nonneg(kan ? std::vector<std::string>{"factor", "fixed_s", "per_element_s"}
                                                : std::vector<std::string>{"factor", "fixed_s"},
                                            X, y, hold);
    if (!f.active[0] || !(f.coef[0] > 0)) continue;
    Calibration::LiveOp op{f.coef[0], f.active[1] ? f.coef[1] : 0.0};
    if (kan && f.active[2]) op.per_element_s = f.coef[2];
    out.push_back({cls, op, f});
  }
  return out;
}

void fit_live_terms(const ValidationPlan& p, const std::string& dir, const std::string& transport, CalibrationFile& file,
                    std::ostream& report) {
  const Cluster cluster = load_cluster(p.cluster_file);
  file.live.clear();
  file.live_ops.clear();
  const Calibration micro = parse_calibration(write_calibration(file, ""), file.name, cluster, Precision::fp32);
  std::vector<LivePoint> points;
  for (std::size_t i = 0; i < p.measure.live.size(); ++i) {
    const ValidationCase& lc = p.measure.live[i];
    if (lc.ranks > 1 && lc.transport != transport) continue;
    LivePoint lp;
    lp.ranks = lc.ranks;
    lp.index = i;
    lp.workload = load_workload(dir + "/" + live_cal_workload(i));
    lp.cluster = cluster;
    if (lc.ranks > cluster.gpus_per_node * cluster.nodes) lp.cluster.gpus_per_node = lc.ranks;
    std::vector<Metrics> rounds;
    std::map<std::string, std::vector<double>> ops;  // op -> each round's median
    for (int r = 0; r < p.rounds; ++r) {
      const std::string f = dir + "/" + live_cal_file(i, r);
      rounds.push_back(live_metrics(f, p.backend));
      for (const auto& [name, t] : live_op_times(f)) ops[name].push_back(t);
    }
    lp.measured_s = median_of(rounds).iteration_s;
    for (auto& [name, v] : ops) lp.op_s[name] = median(v);
    points.push_back(std::move(lp));
  }
  // 1. per op, from the one-rank runs: what the trainer's sequence of ops
  // costs beyond each op's microbenchmark
  std::vector<LiveOpPoint> op_points;
  for (const auto& lp : points) {
    if (lp.ranks != 1) continue;
    const ReplayInput in = make_replay_input(lp.cluster, lp.workload, micro, layout_for(lp.cluster, 1, std::nullopt), lp.workload.batch_per_gpu, 1);
    std::map<std::string, LiveOpPoint> by;
    for (std::size_t k = 0; k < in.ops.size(); ++k) {
      LiveOpPoint& q = by[live_op_key(in.ops[k])];
      q.cost_class = in.ops[k].cost_class;
      q.predicted_s += in.op_time_s[k];
      q.elements += in.ops[k].elements;
    }
    for (auto& [key, q] : by) {
      const auto it = lp.op_s.find(key);
      if (it == lp.op_s.end()) continue;
      q.live_s = it->second;
      op_points.push_back(q);
    }
  }
  file.live_ops = fit_live_ops(op_points);
  report << "live ops (kanscale train's per-op medians on the calibration's own shapes, one rank; live = factor x predicted + fixed):\n";
  if (file.live_ops.empty()) report << "  none (" << op_points.size() << " op points; no class with 3)\n";
  for (const auto& o : file.live_ops)
    report << std::setprecision(4) << "  " << o.cost_class << ": factor " << o.op.factor << " (+- " << o.fit.std_err[0] << "), fixed "
           << o.op.fixed_s * 1e6 << " us (+- " << o.fit.std_err[1] * 1e6 << "), " << o.fit.n_fit << " points"
           << (o.op.per_element_s > 0 ? ", per element " + std::to_string(o.op.per_element_s * 1e9) + " ns" : std::string()) << ", rms relative residual " << o.fit.rms_rel_residual
           << (o.fit.n_holdout > 0 ? ", held out " + std::to_string(o.fit.n_holdout) + ": mean " + std::to_string(100 * o.fit.holdout_mean_abs_rel) + "%" : std::string())
           << "\n";
  const Calibration base = parse_calibration(write_calibration(file, ""), file.name, cluster, Precision::fp32);
  std::map<int, std::vector<const LivePoint*>> by_ranks;
  for (const auto& lp : points) by_ranks[lp.ranks].push_back(&lp);
  report << "live (kanscale train on the calibration's own shapes; measured - predicted non-compute = compute_factor x predicted "
            "compute + host_overhead):\n";
  for (const auto& [ranks, pts] : by_ranks) {
    std::vector<std::vector<double>> X;
    std::vector<double> y;
    for (const LivePoint* lp : pts) {
      const ScalingPoint pt = predict(*lp, base);
      const double rest = pt.iteration_s.median - pt.compute_s.median;
      const double target = lp->measured_s - rest;
      if (!(target > 0) || !(pt.compute_s.median > 0)) continue;
      X.push_back({pt.compute_s.median, 1.0});
      y.push_back(target);
    }
    if (X.size() < 3) {
      report << "  " << ranks << " rank(s): " << X.size() << " usable run(s), too few for two terms; none\n";
      continue;
    }
    const LinearFit f = fit_relative_nonneg({"compute_factor", "host_overhead_s"}, X, y, std::vector<bool>(X.size(), false));
    if (!f.active[0] || !(f.coef[0] > 0)) {
      report << "  " << ranks << " rank(s): the compute factor came out 0; none\n";
      continue;
    }
    CalibrationFile::FittedLive fl;
    fl.term = Calibration::LiveTerm{ranks, f.coef[0], f.active[1] ? f.coef[1] : 0.0};
    fl.fit = f;
    file.live.push_back(fl);
    report << std::setprecision(4) << "  " << ranks << " rank(s), " << X.size() << " runs: compute_factor " << fl.term.compute_factor
           << " (+- " << f.std_err[0] << "), host_overhead " << fl.term.host_overhead_s * 1e6 << " us (+- " << f.std_err[1] * 1e6
           << "), rms relative residual " << f.rms_rel_residual << "\n";
  }
  // the spread that is left, with the terms applied
  Calibration corrected = base;
  for (const auto& fl : file.live) corrected.live_terms.push_back(fl.term);
  double sum2 = 0;
  int n = 0;
  for (const auto& lp : points) {
    const double pred = predict(lp, corrected).iteration_s.median;
    if (!(pred > 0) || !(lp.measured_s > 0)) continue;
    const double e = std::log(lp.measured_s / pred);
    sum2 += e * e;
    ++n;
  }
  file.model_error_sigma = n > 0 ? std::sqrt(sum2 / n) : 0.0;
  file.live_from = "results/livecal-*.json, " + std::to_string(points.size()) + " runs x " + std::to_string(p.rounds) + " round(s)";
  report << "  model error (RMS of log(measured / corrected prediction) over " << n << " runs): " << file.model_error_sigma << "\n";
}

}  // namespace ks
