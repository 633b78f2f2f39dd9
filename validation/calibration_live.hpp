#pragma once
// The live terms of a calibration: what kanscale train, run on the
// calibration's own shapes (calibration.measure.live, never a validation
// case's), costs beyond the prediction from the microbenchmark terms. Per
// ranks on a node: first the trainer's gradient all-reduces against the
// predicted ones (comm_factor), then, re-predicted with it, the compute the
// trainer measured (PyTorch's runs, which record no split: the measured
// time less the predicted non-compute) fitted as compute_factor x predicted
// compute + host_overhead (relative least squares, non-negative). The
// compute terms are kept only where they predict the shapes left out
// better than none (factor 1, overhead 0), else written as an explicit
// none: otherwise they would carry a few shapes' own errors and the
// machine's run-to-run drift to every other shape. The one-rank runs'
// measured / predicted per shape goes to the report (their spread is what
// the kernel model misses at shapes it never saw). The runs' remaining
// spread around the corrected prediction is the model error the intervals
// carry.
#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "formats/calibration_file.hpp"
#include "model/live_fit.hpp"
#include "model/statistics.hpp"  // round_drift_sigma
#include "plan.hpp"

namespace ks {

// Fits file.live, file.model_error_sigma (leave one shape out: each shape's
// runs predicted by the terms fitted without them), its in-sample value and
// file.drift_sigma for `transport`'s calibration
// from the live runs the rounds left in dir (one-rank runs and the
// transport's multi-rank runs); the fit's lines go to `report`.
void fit_live_terms(const ValidationPlan& plan, const std::string& dir, const std::string& transport, CalibrationFile& file,
                    std::ostream& report);

}  // namespace ks
