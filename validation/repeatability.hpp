#pragma once
// How well the live measurements of a plan repeat from one validation run
// to the next, and what that leaves any predictor: the same judged cases
// measured in two or more runs (their results.json), each run predicted
// from the others' measurements. A model cannot be shown to be closer to a
// machine than the machine is to itself; this is that distance, measured.
//
// The prediction of run k's case c from the others is the geometric mean of
// the others' medians. Its error is measured with no assumption. Under the
// assumption that the runs' log times scatter independently around each
// case's expected time with one spread, a perfect predictor (the expected
// time) has log errors smaller by sqrt((n-1)/n); that estimate is stated
// apart.
#include <string>
#include <vector>

#include "plan.hpp"

namespace ks {

struct ValidationRun {
  std::string path;     // its results.json
  std::string plan;     // the plan it ran, as recorded
  std::string machine;  // the calibration's machine, as recorded
  double mean_noise_pct = 0;      // within the run: the mean spread of its cases' rounds
  double model_mean_abs_pct = 0;  // the prediction's iteration-time error in that run
  double model_max_abs_pct = 0;
  std::vector<std::string> cases;  // judged cases (not oversubscribed), by label
  std::vector<double> measured_s;  // their measured median iteration times
  std::vector<double> noise_pct;   // their noise floors (the rounds' spread; 0 when not recorded)
  // the prediction of each, its interval (NaN: none), and its groups
  std::vector<double> predicted_s, interval_lo_s, interval_hi_s;
  std::vector<int> ranks;
  std::vector<std::string> transport, model;  // model: the widths, as the label gives them ("[16-32-1]")
  // the iteration's parts, measured (medians) and predicted: compute and
  // exposed communication (NaN where the file does not record them)
  std::vector<double> measured_compute_s, measured_exposed_s, predicted_compute_s, predicted_exposed_s;
};

// A validate results.json, or a report directory that holds one. Throws
// InputError (file, key, what was expected) on anything else.
ValidationRun read_validation_run(const std::string& path);

struct ErrorSummary {
  double mean_abs_pct = 0, max_abs_pct = 0;
  double p90_abs_pct = 0;  // nearest-rank: the half-width an interval centred on this prediction needs to hold 90% of cases
  std::string worst_case;
};

struct RunRepeatability {
  std::string path;
  // the run's overall speed against the others': the geometric mean over
  // cases of (others' prediction / measured), in percent off 1
  double shift_pct = 0;
  ErrorSummary others;          // the others' geometric mean as the prediction
  ErrorSummary others_shifted;  // the same, divided by the run's shift (a predictor that also knew how fast the run was overall)
  ErrorSummary perfect;         // estimate: the others' log errors x sqrt((n-1)/n)
  ErrorSummary perfect_shifted;
  std::vector<double> others_log, perfect_log;  // per case (the first run's order): log(prediction / measured)
};

struct Repeatability {
  std::vector<std::string> cases;             // the judged cases every run measured
  std::vector<std::vector<double>> measured;  // [run][case], seconds
  std::vector<std::vector<double>> noise_pct; // [run][case], each case's noise floor in that run
  std::vector<RunRepeatability> runs;
};

// Needs at least two runs of the same plan with the same judged cases
// (throws InputError otherwise).
Repeatability repeatability(const std::vector<ValidationRun>& runs);

// Whether predictions with these errors (log(prediction / measured), the
// cases in `measured_s`' order, each with its noise floor) meet the plan's
// bound on the iteration time: compare.hpp's judge, on cases made of them.
bool meets_plan_bound(const std::vector<double>& log_errors, const std::vector<double>& measured_s,
                      const std::vector<double>& noise_pct, const ValidationPlan& plan);

// report.md, repeatability.json and a gnuplot plot of each run's measured
// times against the runs' geometric mean, written atomically into out_dir;
// the summary printed. Returns whether a predictor as good as the other runs
// met the plan's bound in every run.
bool write_repeatability_report(const std::vector<ValidationRun>& runs, const Repeatability& r, const ValidationPlan& plan,
                                const std::string& out_dir, const std::string& cmdline);

}  // namespace ks
