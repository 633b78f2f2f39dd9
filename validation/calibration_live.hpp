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

#include "model/calibration_file.hpp"
#include "plan.hpp"

namespace ks {

// Fits file.live and file.model_error_sigma for `transport`'s calibration
// from the live runs the rounds left in dir (one-rank runs and the
// transport's multi-rank runs); the fit's lines go to `report`.
void fit_live_terms(const ValidationPlan& plan, const std::string& dir, const std::string& transport, CalibrationFile& file,
                    std::ostream& report);

}  // namespace ks
