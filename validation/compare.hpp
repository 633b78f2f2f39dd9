#pragma once
// Live runs against predictions: the metrics of one run, the median over
// rounds and its spread, errors per metric, the verdict against the plan's
// bound, and speedups.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "plan.hpp"
#include "sim/point.hpp"

namespace ks {

struct Metrics {
  double iteration_s = 0, compute_s = 0, comm_s = 0, exposed_s = 0, samples_per_s = 0;
  double peak_memory_bytes = 0;
  std::vector<double> bucket_s;  // each bucket's all-reduce (steady plan)
};

struct CaseResult {
  ValidationCase c;
  Metrics predicted;
  std::vector<Metrics> rounds;  // live, one per round
  Metrics live;                 // median over rounds
  double noise_pct = 0;         // spread of the rounds' iteration times (round_spread) / median
  double exposed_noise_pct = 0;  // spread of the rounds' exposed communication, over the median iteration
  // speedup over the same case on one rank (0: no such case)
  double speedup_predicted = 0, speedup_live = 0;
  // the prediction's interval on the iteration time (none: the calibration
  // records no measured uncertainty)
  std::optional<Band> interval;
};

// Signed percentage error of a prediction (positive: predicted too high).
double pct_error(double predicted, double measured);
// Communication metrics can be ~0: their error is stated as a percentage of
// the measured iteration time.
double pct_of_iteration(double predicted, double measured, double iteration);

struct MetricSummary {
  std::string metric;
  double mean_abs_pct = 0, max_abs_pct = 0;
  std::string worst_case;
  int cases = 0;
};
std::vector<MetricSummary> summarize(const std::vector<CaseResult>& results);

// How the intervals did on the judged cases that have one: how many hold
// the measured iteration time (the median over rounds), and the median
// half-width as a share of the prediction.
struct Coverage {
  int cases = 0, inside = 0;
  double median_half_width_pct = 0;
  double pct() const { return cases > 0 ? 100.0 * inside / cases : 0.0; }
};
Coverage interval_coverage(const std::vector<CaseResult>& results);

// The error and the intervals per rank count (issue 56: how the error grows
// from the calibration's ranks to those it never measured). Oversubscribed
// cases are counted apart (shown, not judged): their mean error is kept,
// their coverage not counted.
struct RanksSummary {
  int ranks = 0;
  int judged = 0, oversubscribed = 0;
  double mean_abs_pct = 0;        // over the judged cases (0: none)
  double mean_signed_pct = 0;     // the same, signed: too slow (+) or too fast (-)
  double oversubscribed_mean_abs_pct = 0;
  Coverage coverage;              // of the judged cases with an interval
};
std::vector<RanksSummary> per_rank_count(const std::vector<CaseResult>& results);

// The mean noise floor of the judged (not oversubscribed) cases.
double mean_noise_pct(const std::vector<CaseResult>& results);

// The plan's bound on the iteration time: mean |error| <= bound_mean_pct and
// every case's |error| <= max(bound_max_pct, its noise floor); or, with a
// noise-derived bound, every case within max(floor, factor x mean noise).
// Oversubscribed cases are reported but not judged. Returns true when met;
// `why` says which case or mean broke it.
bool judge(const std::vector<CaseResult>& results, const ValidationPlan& plan, std::string* why);

Metrics median_of(const std::vector<Metrics>& rounds);
// The spread of one metric over the rounds: 1.4826 x the median absolute
// deviation, a robust standard deviation (0 for one round).
double round_spread(const std::vector<Metrics>& rounds, double Metrics::*field);
// Speedups over the one-rank case of the same model, batch and bucket cap.
void attach_speedups(std::vector<CaseResult>& results);

// The metrics of one live run (a kanscale train --json file): medians over
// its steady steps; the peak memory is the device's on cuda, the resident
// set's on the CPU.
Metrics live_metrics(const std::string& path, const std::string& backend);
// The same from a live run already read (read_live_run: the file, or an
// error naming it as missing); `path` names it in errors.
nlohmann::json read_live_run(const std::string& path);
Metrics live_metrics(const nlohmann::json& run, const std::string& path, const std::string& backend);
// Each rank's own median compute time over the steady steps of one live run
// (a kanscale train --json file), in rank order: what rank_spread_sigma
// takes. Empty when the file records no per-step compute (PyTorch's runs)
// or no rank has a positive one.
std::vector<double> rank_compute_medians(const std::string& path);

}  // namespace ks
