#pragma once
// The live terms of a calibration: what kanscale train, run on the
// calibration's own shapes (calibration.measure.live, never a validation
// case's), costs beyond the prediction from the microbenchmark terms. Per
// ranks on a node: measured - predicted non-compute time is fitted as
// compute_factor x predicted compute + host_overhead (relative least
// squares, non-negative); the runs' remaining spread around the corrected
// prediction is the model error the intervals carry.
#include <ostream>
#include <string>
#include <vector>

#include "model/calibration_file.hpp"
#include "plan.hpp"

namespace ks {

// One op of a one-rank live run: its cost class, the time the
// microbenchmark terms predict and the trainer's median.
struct LiveOpPoint {
  std::string cost_class;
  double predicted_s = 0, live_s = 0;
  double elements = 0;  // the KAN layers' (sample, input) pairs
};

// Per cost class with at least one point more than its terms: live =
// factor x predicted + fixed, and for the KAN layers + per_element x
// elements (the basis evaluations the kernel plan's shapes cannot tell from
// the FLOPs); relative least squares, non-negative; every 4th point held out
// from 8 points on. A class whose factor comes out 0 gets no term.
std::vector<CalibrationFile::FittedLiveOp> fit_live_ops(const std::vector<LiveOpPoint>& points);

// Fits file.live_ops, file.live and file.model_error_sigma for `transport`'s calibration
// from the live runs the rounds left in dir (one-rank runs and the
// transport's multi-rank runs); the fit's lines go to `report`.
void fit_live_terms(const ValidationPlan& plan, const std::string& dir, const std::string& transport, CalibrationFile& file,
                    std::ostream& report);

}  // namespace ks
