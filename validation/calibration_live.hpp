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
#include "model/statistics.hpp"  // round_drift_sigma
#include "plan.hpp"

namespace ks {

// A fit of (compute_factor, host_overhead_s): whether (factor, overhead)
// differs from (1, 0) at 95% (a Wald test with the fit's covariance; one
// degree of freedom when the fit dropped a term).
bool live_term_differs_from_none(const LinearFit& f);

// One live run as the live terms see it: its shape ((widths, G, batch)),
// rank count, the microbenchmark prediction's compute and the rest of its
// iteration (iteration - compute), and the measured median iteration.
struct LiveRun {
  std::string shape;
  int ranks = 1;
  double compute_s = 0, rest_s = 0, measured_s = 0;
  // steady buckets of the run; with runs of 2 or more bucket counts at a
  // rank count, none of which recorded its compute, the fit adds a cost per
  // bucket
  int buckets = 0;
  // the gradient all-reduces' time per iteration, predicted and measured (0:
  // not recorded: no communication factor from this run)
  double comm_s = 0, measured_comm_s = 0;
  // the compute its trainer measured (0: not recorded, as PyTorch's runs:
  // the compute terms then take measured_s - rest_s)
  double measured_compute_s = 0;
  std::size_t point = 0;  // the caller's index of the run (a refit re-predicts it)
};

// The communication factor of one rank count: measured = comm_factor x
// predicted all-reduce time per iteration (relative least squares through
// the origin over the runs that recorded both), from at least 3 runs and
// within 0.01-100; 1 (none) otherwise. `why` gives it with its standard
// error (from the residuals) and whether it differs from 1 at 95%.
double fit_comm_factor(const std::vector<const LiveRun*>& runs, std::string& why);
// The communication factor's error out of sample: over the runs at 2 or
// more ranks that recorded both all-reduce times, each shape's runs
// predicted by the factor fitted (fit_comm_factor, its rule to keep one
// included) to the other shapes' runs of its rank count: RMS of
// log(measured / (factor x predicted)). 0 when no shape can be left out (a
// rank count with fewer than 2 shapes); `terms` (when given) counts the runs it averaged.
double comm_error_loo(const std::vector<LiveRun>& runs, int* terms = nullptr);
// Whether a rank count's live terms predict shapes they were not fitted to
// better than none: each shape's runs predicted by the terms fitted (the
// same features, relative least squares) to the other shapes' runs, RMS of
// log(target / prediction) with the terms and with none (compute x 1).
// X, y: the runs' rows as fit_live_term_set builds them. A shape whose rest
// is too few runs for the terms is not left out (folds counts those that are).
struct ShapeCv {
  int folds = 0;
  double fitted_rms = 0, none_rms = 0;
};
ShapeCv leave_one_shape_out(const std::vector<const LiveRun*>& runs, const std::vector<std::vector<double>>& X,
                            const std::vector<double>& y, const std::vector<std::string>& features);

// The live terms, per rank count (+ per_bucket x buckets for PyTorch runs,
// see LiveRun::buckets): target = compute_factor x compute + host_overhead,
// the target being the run's measured compute where it recorded one, else
// measured - rest (relative least squares, non-negative; an
// explicit none with too few runs, or where it does not predict the shapes
// left out better than none does: leave_one_shape_out; with fewer than two
// shapes to leave out, where it does not differ from none at 95%). The report's lines go to `report` when given.
std::vector<CalibrationFile::FittedLive> fit_live_term_set(const std::vector<LiveRun>& runs, std::ostream* report);

// The model error left with the live terms, as RMS of log(measured /
// predicted): in sample (with `all`, fit_live_term_set's terms on every
// run), and leave one shape out (each shape's runs predicted by the terms
// fitted without them). predict(i, terms) is run i's predicted iteration
// time with those terms.
struct LiveModelErrors {
  double in_sample_sigma = 0, loo_sigma = 0;
  int runs = 0, loo_runs = 0, shapes = 0;
  std::map<std::string, double> loo_rms_by_shape;
};
// `fit` fits the terms to a subset of the runs (fit_live_term_set when unset).
LiveModelErrors live_model_errors(
    const std::vector<LiveRun>& runs, const std::vector<CalibrationFile::FittedLive>& all,
    const std::function<double(std::size_t, const std::vector<CalibrationFile::FittedLive>&)>& predict,
    const std::function<std::vector<CalibrationFile::FittedLive>(const std::vector<LiveRun>&)>& fit = nullptr);

// Fits file.live, file.model_error_sigma (leave one shape out: each shape's
// runs predicted by the terms fitted without them), its in-sample value and
// file.drift_sigma for `transport`'s calibration
// from the live runs the rounds left in dir (one-rank runs and the
// transport's multi-rank runs); the fit's lines go to `report`.
void fit_live_terms(const ValidationPlan& plan, const std::string& dir, const std::string& transport, CalibrationFile& file,
                    std::ostream& report);

}  // namespace ks
