#pragma once
// The validation report's two plots, gnuplot's (base/plot): predicted
// against measured iteration times, and the error per case with its noise
// floor; report.md also compares one steady iteration op by op.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "compare.hpp"
#include "base/plot.hpp"
#include "sim/point.hpp"

namespace ks {

// Predicted against measured iteration time on log axes, as a gnuplot plot.
PlotSpec scatter_plot(const std::vector<CaseResult>& results);
// Each case's iteration-time error in percent, with its noise floor.
PlotSpec errors_plot(const std::vector<CaseResult>& results);

std::vector<TraceSlice> live_iteration(const nlohmann::json& trace, int steps);

// One iteration's compute track, op by op, live against simulated: each op's
// time summed over the iteration (per-parameter Adam and copy-back steps
// as one op each, as the trainer times them), largest live first.
struct OpCompare {
  std::string op;
  double live_s = 0, predicted_s = 0;
};
std::vector<OpCompare> op_comparison(const std::vector<TraceSlice>& sim, const std::vector<TraceSlice>& live);
std::vector<TraceSlice> simulated_iteration(const ScalingPoint& point);

// What the comparison of a plan's cases came to.
struct ValidationOutcome {
  std::vector<CaseResult> results;
  std::vector<MetricSummary> summary;
  bool ok = false;  // the plan's bound held
  std::string why;  // where it did not
  std::size_t shown = 0;  // the case whose timelines are drawn
  std::vector<TraceSlice> sim_slices;  // its simulated iteration
  Coverage coverage;                   // of the predictions' intervals
  std::string machine;                 // where the calibration was measured (its fingerprint), "" when unrecorded
  std::string live_runs;               // what the live runs ran on (PyTorch: machine, torch, BLAS), "" when unrecorded
  // --collect of a run whose jobs did not all leave their files: the
  // missing files; the cases judged are those complete (never met then)
  std::vector<std::string> missing;
  std::size_t cases_total = 0;
  bool incomplete() const { return !missing.empty(); }
  std::string incomplete_text() const;  // "incomplete: N of M cases judged; missing: ..."
};
// Writes report.md, a compact results.json (per case: medians, each round's
// iteration time, no per-bucket or per-iteration arrays) and the two plots
// into out_dir (dir: the run directory, for the live trace) and prints the summary; returns ok.
bool write_validation_report(const ValidationPlan& plan, const std::string& dir, const std::string& out_dir, const std::string& cmdline,
                             const ValidationOutcome& outcome);

}  // namespace ks
