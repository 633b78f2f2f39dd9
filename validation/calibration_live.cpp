#include "calibration_live.hpp"
#include "formats/config_files.hpp"
#include "formats/calibration_file.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>

#include "compare.hpp"
#include "model/fit.hpp"
#include "model/live_fit.hpp"
#include "model/statistics.hpp"
#include "schedule.hpp"
#include "sim/point.hpp"

namespace ks {

namespace {
struct LivePoint {
  int ranks = 1;
  std::size_t index = 0;
  Workload workload;
  Cluster cluster;  // oversubscribed runs get their ranks on one node
  double measured_s = 0, measured_comm_s = 0, measured_compute_s = 0, measured_peak_bytes = 0;
  std::vector<double> rounds_s;  // each round's iteration time
  // per round: the steady steps the stopping rule took, and the start-up of
  // the process when the run was its first (PyTorch's runs record it; -1: none)
  std::vector<double> steady_steps, startup_s;
  ScalingPoint predicted;  // from the microbenchmark terms alone
};

// widths, grid and batch (the fit report's name for a calibration run)
std::string shape_of(const ValidationCase& c) {
  std::string s;
  for (auto w : c.widths) s += std::to_string(w) + "-";
  return s + "G" + std::to_string(c.grid_size) + " b" + std::to_string(c.batch);
}

ScalingPoint predict(const LivePoint& lp, const Calibration& cal) {
  StudyOptions o;
  o.gpus = {lp.ranks};
  return simulate_point(lp.cluster, lp.workload, cal, o, layout_for(lp.cluster, lp.ranks, std::nullopt));
}
}  // namespace


namespace {
// The calibration's live runs of `transport` (and one rank), their rounds'
// medians read from dir, each predicted by `base`.
std::vector<LivePoint> live_points(const ValidationPlan& p, const std::string& dir, const std::string& transport, const Cluster& cluster,
                                   const Calibration& base) {
  std::vector<LivePoint> points;
  for (std::size_t i = 0; i < p.measure.live.size(); ++i) {
    const ValidationCase& lc = p.measure.live[i];
    // (a pytorch plan's runs name no transport: its one calibration is gloo's)
    if (lc.ranks > 1 && lc.transport != transport && p.implementation != "pytorch") continue;
    LivePoint lp;
    lp.ranks = lc.ranks;
    lp.index = i;
    lp.workload = load_workload(dir + "/" + live_cal_workload(i));
    lp.cluster = cluster;
    if (lc.ranks > cluster.gpus_per_node * cluster.nodes) lp.cluster.gpus_per_node = lc.ranks;
    std::vector<Metrics> rounds;
    for (int r = 0; r < p.rounds; ++r) {
      const std::string path = dir + "/" + live_cal_file(i, r);
      const nlohmann::json j = read_live_run(path);
      rounds.push_back(live_metrics(j, path, p.backend));
      const auto& prov = j.value("provenance", nlohmann::json::object());
      if (j.contains("summary") && j["summary"].contains("steps") && j["summary"]["steps"].is_number())
        lp.steady_steps.push_back(j["summary"]["steps"].get<double>() - prov.value("warmup_steps", 0));
      const auto& pr = prov.value("process", nlohmann::json::object());
      lp.startup_s.push_back(pr.is_object() && pr.value("run_in_process", 0) == 1 ? pr.value("startup_s", 0.0) : -1.0);
    }
    const Metrics med = median_of(rounds);
    lp.measured_s = med.iteration_s;
    lp.measured_comm_s = med.comm_s;
    lp.measured_compute_s = med.compute_s;
    lp.measured_peak_bytes = med.peak_memory_bytes;
    for (const auto& m : rounds) lp.rounds_s.push_back(m.iteration_s);
    lp.predicted = predict(lp, base);
    points.push_back(std::move(lp));
  }
  return points;
}

// Each shape alone at one rank: the trainer against the microbenchmark terms.
void report_one_rank_ratios(const ValidationPlan& p, const std::vector<const LivePoint*>& one_rank, std::ostream& report) {
  report << "  1 rank, measured / predicted per shape:";
  std::vector<double> logs;
  for (const LivePoint* lp : one_rank) {
    const double pred = lp->predicted.iteration_s.median;
    if (!(pred > 0) || !(lp->measured_s > 0)) continue;
    const double ratio = lp->measured_s / pred;
    logs.push_back(std::log(ratio));
    report << " " << shape_of(p.measure.live[lp->index]) << " " << std::setprecision(3) << ratio << ";";
  }
  if (!logs.empty()) {
    double m = 0, v = 0;
    for (double x : logs) m += x / static_cast<double>(logs.size());
    for (double x : logs) v += (x - m) * (x - m) / static_cast<double>(logs.size());
    report << " geometric mean " << std::exp(m) << ", spread (sigma of the log) " << std::sqrt(v);
  }
  report << "\n";
}

// The stopping rule and what it took (steady steps per run), and the
// start-up each process paid (PyTorch's runs record it: the torch import
// and the process group), as the live points read them.
void report_sampling(const ValidationPlan& p, const std::vector<LivePoint>& points, std::ostream& report) {
  std::vector<double> steps, startup;
  for (const auto& lp : points) {
    steps.insert(steps.end(), lp.steady_steps.begin(), lp.steady_steps.end());
    for (double s : lp.startup_s)
      if (s >= 0) startup.push_back(s);
  }
  report << "  stopping rule: a run's steps until every rank's median step is known to +-" << p.measure.target_rel_halfwidth * 100
         << "% (95% interval, order statistics), at most " << p.measure.cap_samples << " steady steps";
  if (!steps.empty()) {
    std::sort(steps.begin(), steps.end());
    report << "; taken: " << steps.front() << " to " << steps.back() << " (median " << quantile(steps, 0.5) << ") over " << steps.size()
           << " runs";
  }
  report << "\n";
  if (!startup.empty())
    report << "  start-up (the interpreters' torch import and the gloo group): median " << std::setprecision(3) << quantile(startup, 0.5)
           << " s a process, paid by " << startup.size() << " processes for " << steps.size() << " runs\n";
}
}  // namespace

void fit_live_terms(const ValidationPlan& p, const std::string& dir, const std::string& transport, CalibrationFile& file,
                    std::ostream& report) {
  const Cluster cluster = load_cluster(p.cluster_file);
  // a rank's speed that persists through a run: each multi-rank run's (and
  // round's) ranks' own median compute, before any other term, which are
  // then fitted with the ranks' spread in the prediction (PyTorch's runs
  // record no per-step compute)
  std::vector<std::vector<double>> rank_medians;
  for (std::size_t i = 0; i < p.measure.live.size() && p.implementation != "pytorch"; ++i) {
    const ValidationCase& lc = p.measure.live[i];
    if (lc.ranks < 2 || lc.oversubscribed || lc.transport != transport) continue;
    for (int r = 0; r < p.rounds; ++r)
      if (auto m = rank_compute_medians(dir + "/" + live_cal_file(i, r)); m.size() >= 2) rank_medians.push_back(std::move(m));
  }
  file.rank_sigma = rank_spread_sigma(rank_medians);
  file.rank_sigma_runs = static_cast<int>(rank_medians.size());
  Calibration base = parse_calibration(write_calibration(file, ""), file.name, cluster, Precision::fp32);
  base.rank_sigma = file.rank_sigma;  // (the file's live section, its place, is written once it has terms)
  const std::vector<LivePoint> points = live_points(p, dir, transport, cluster, base);
  std::map<int, std::vector<const LivePoint*>> by_ranks;
  for (const auto& lp : points) by_ranks[lp.ranks].push_back(&lp);
  report << "live (" << (p.implementation == "pytorch" ? "PyTorch DDP" : "kanscale's trainer")
         << " on the calibration's own shapes; "
         << (p.implementation == "pytorch" ? "measured - predicted non-compute" : "the measured all-reduces = comm_factor x predicted; measured compute")
         << " = compute_factor x predicted compute + host_overhead):\n";
  if (!rank_medians.empty()) {
    report << "  a rank's persistent speed: each rank's median compute about its run's, over " << rank_medians.size()
           << " multi-rank run(s) x round(s): lognormal sigma " << file.rank_sigma;
    if (const auto two = rank_spread_factors(file.rank_sigma, 2); !two.empty())
      report << " (the slower of 2 ranks at x" << std::setprecision(3) << two.back() << " in the predictions)";
    report << "\n";
  }
  report_sampling(p, points, report);
  if (by_ranks.count(1)) report_one_rank_ratios(p, by_ranks[1], report);
  auto run_of = [&](std::size_t i, const ScalingPoint& pt) {
    const LivePoint& lp = points[i];
    // (their steady buckets, for a cost per bucket)
    LiveRun r{shape_of(p.measure.live[lp.index]), lp.ranks, pt.compute_s.median, pt.iteration_s.median - pt.compute_s.median,
              lp.measured_s, static_cast<int>(pt.steady_plan.size())};
    r.comm_s = pt.comm_s.median;
    r.measured_comm_s = lp.measured_comm_s;
    r.point = i;
    if (p.implementation != "pytorch") r.measured_compute_s = lp.measured_compute_s;
    return r;
  };
  std::vector<LiveRun> runs;
  for (std::size_t i = 0; i < points.size(); ++i) runs.push_back(run_of(i, points[i].predicted));
  // kanscale's trainer: first how its all-reduces run against the sweep's
  // (per rank count), then the compute terms on what that leaves (each run
  // re-predicted with the factor). PyTorch's runs record no communication.
  auto fit_terms = [&](const std::vector<LiveRun>& subset, std::ostream* rep) {
    std::map<int, std::vector<const LiveRun*>> multi;
    for (const auto& r : subset)
      if (r.ranks > 1 && p.implementation != "pytorch") multi[r.ranks].push_back(&r);
    std::map<int, double> factor;
    std::map<int, std::string> comm_why;
    Calibration c = base;
    for (const auto& [ranks, rs] : multi) {
      std::string& why = comm_why[ranks];
      factor[ranks] = fit_comm_factor(rs, why);
      if (rep) *rep << "  " << ranks << " rank(s): " << why << "\n";
      if (factor[ranks] != 1.0) c.live_terms.push_back(Calibration::LiveTerm{ranks, 1.0, 0.0, 0.0, factor[ranks]});
    }
    std::vector<LiveRun> refit;
    for (const auto& r : subset) refit.push_back(factor.count(r.ranks) && factor[r.ranks] != 1.0 ? run_of(r.point, predict(points[r.point], c)) : r);
    auto terms = fit_live_term_set(refit, rep);
    for (auto& t : terms)
      if (factor.count(t.term.ranks)) {
        t.term.comm_factor = factor[t.term.ranks];
        t.comm_why = comm_why[t.term.ranks];
      }
    return terms;
  };
  file.live = fit_terms(runs, &report);
  // the spread that is left, with the terms applied: in sample, and out of
  // sample (each shape predicted by the terms fitted without its runs), by the replay
  const LiveModelErrors errors = live_model_errors(runs, file.live, [&](std::size_t i, const std::vector<CalibrationFile::FittedLive>& terms) {
    Calibration c = base;
    for (const auto& fl : terms) c.live_terms.push_back(fl.term);
    return predict(points[i], c).iteration_s.median;
  }, [&](const std::vector<LiveRun>& subset) { return fit_terms(subset, nullptr); });
  file.model_error_in_sample_sigma = errors.in_sample_sigma;
  file.model_error_sigma = errors.loo_sigma;
  int comm_n = 0;
  file.comm_error_sigma = comm_error_loo(runs, &comm_n);
  file.unwatched_error_sigma = unwatched_compute_sigma(runs, &file.unwatched_runs);
  {
    // peak memory: what the runs hold beyond the memory model, the error left, the error with none
    std::vector<MemoryRun> mem;
    for (const auto& lp : points) mem.push_back({shape_of(p.measure.live[lp.index]), lp.measured_peak_bytes, lp.predicted.memory.peak_bytes});
    const MemoryLive ml = fit_memory_live(mem);
    file.memory_extra_bytes = ml.extra_bytes;
    file.memory_error_sigma = ml.loo_sigma;
    file.unwatched_memory_sigma = ml.unwatched_sigma;
    file.memory_runs = ml.runs;
  }
  const int n = errors.runs, loo_n = errors.loo_runs;
  const std::size_t n_shapes = static_cast<std::size_t>(errors.shapes);
  // run-to-run drift: each round's mean log deviation over the runs, a
  // random effect per round; its spread (n - 1) over the rounds
  std::vector<std::vector<double>> per_round;
  for (const auto& lp : points) per_round.push_back(lp.rounds_s);
  file.drift_sigma = round_drift_sigma(per_round);
  file.drift_rounds = p.rounds;
  file.live_from = "results/livecal-*.json, " + std::to_string(points.size()) + " runs x " + std::to_string(p.rounds) + " round(s)";
  report << "  model error, in sample (RMS of log(measured / corrected prediction) over " << n << " runs): "
         << file.model_error_in_sample_sigma << "\n"
         << "  model error, leave one shape out (each of " << n_shapes << " shapes predicted by the terms fitted without it; "
         << loo_n << " runs): " << file.model_error_sigma << "\n"
         << "  all-reduce time, leave one shape out (each shape's all-reduces per iteration against the communication"
         << " factor fitted without it; " << comm_n << " runs): " << file.comm_error_sigma << (comm_n == 0 ? " (no runs with communication)" : "") << "\n"
         << "  unwatched: the compute predicted with no live term (microbenchmarks only), RMS of log(measured / predicted) over "
         << file.unwatched_runs << " runs: " << file.unwatched_error_sigma << "\n"
         << "  peak memory over " << file.memory_runs << " runs: " << format_bytes(file.memory_extra_bytes)
         << " beyond the memory model (median of measured - predicted); error with it, leave one shape out: " << file.memory_error_sigma
         << "; with none: " << file.unwatched_memory_sigma << "\n"
         << "  run-to-run drift (sigma of the rounds' mean log deviation, a random effect per run; " << p.rounds
         << " round(s)): " << file.drift_sigma << (p.rounds < 2 ? " (one round: not measured)" : "") << "\n";
}

}  // namespace ks
