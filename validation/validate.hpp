#pragma once
// kanscale validate: live runs of a plan's cases (the trainer under mpirun)
// beside the simulator's predictions of the same cases, with the error per
// metric judged against the plan's bound and the noise measured across
// rounds.
#include <cstdint>
#include <string>
#include <vector>

namespace ks {

struct ValidationCase {
  int ranks = 1;
  std::vector<std::int64_t> widths;
  int grid_size = 5;
  std::int64_t batch = 256;
  double bucket_cap_bytes = 25.0 * 1048576;
  bool oversubscribed = false;  // more ranks than cores: reported apart
  std::string label() const;
};

struct ValidationPlan {
  std::string name, file;
  std::string cluster_file, calibration_file;
  std::string backend = "cpu";
  int steps = 30, rounds = 3, spline_order = 3;
  double bound_mean_pct = 5, bound_max_pct = 10;
  std::vector<ValidationCase> cases;
};

// Reads validation/plans/*.yaml; a missing file, an unknown backend or zero
// ranks is an InputError naming file, line and key, before anything runs.
ValidationPlan load_validation_plan(const std::string& path);

struct Metrics {
  double iteration_s = 0, compute_s = 0, comm_s = 0, exposed_s = 0, samples_per_s = 0;
};

struct CaseResult {
  ValidationCase c;
  Metrics predicted;
  std::vector<Metrics> rounds;  // live, one per round
  Metrics live;                 // median over rounds
  double noise_pct = 0;         // spread of the rounds' iteration times: (max - min) / median
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
};
std::vector<MetricSummary> summarize(const std::vector<CaseResult>& results);

// The plan's bound on the iteration time: mean |error| <= bound_mean_pct and
// every case's |error| <= max(bound_max_pct, its noise floor). Oversubscribed
// cases are reported but not judged. Returns true when met; `why` says which
// case or mean broke it.
bool judge(const std::vector<CaseResult>& results, const ValidationPlan& plan, std::string* why);

Metrics median_of(const std::vector<Metrics>& rounds);

// Runs everything (live cases interleaved round by round, predictions) and
// writes the report into out_dir (report.md, results.json, and SVG plots).
// `exe` is the kanscale executable for the live runs. Returns the exit code.
int run_validation(const ValidationPlan& plan, const std::string& out_dir, const std::string& exe, const std::string& cmdline);

}  // namespace ks
