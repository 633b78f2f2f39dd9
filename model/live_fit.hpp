#pragma once
// The pure fits behind a calibration's live terms (validation/calibration_live
// measures the runs and predicts them; these fit what they cost beyond the
// prediction): the compute factor and overhead per rank count with a Wald test
// against none, the communication factor, leave-one-shape-out checks, and the
// model error in and out of sample. No file, no process, no simulator: the
// predictions come in as numbers (LiveRun) or as a callback.
#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "model/fit.hpp"
#include "model/fitted_calibration.hpp"

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

// The error of an answer that watched no job (microbenchmarks only): RMS of
// log(the live target / the predicted compute) over the runs, with no live
// term applied; `runs` gets how many counted. This is what a calibration
// without live runs leaves out of its intervals (issue 57's "unwatched").
double unwatched_compute_sigma(const std::vector<LiveRun>& runs, int* counted);
// Peak memory against the memory model over live runs (the same treatment
// as the compute's): the bytes the runs hold beyond the model (the median of
// measured - predicted over the runs, none when not positive: a process's
// interpreter, libraries and allocator pools the model does not count), the
// model error left with it, each shape's runs predicted by the extra of the
// other shapes' (RMS of log(measured / (predicted + extra))), and the error
// with none (an answer that watched no job: RMS of log(measured / predicted)).
struct MemoryRun {
  std::string shape;
  double measured_bytes = 0, predicted_bytes = 0;
};
struct MemoryLive {
  double extra_bytes = 0, loo_sigma = 0, unwatched_sigma = 0;
  int runs = 0, shapes = 0;
};
MemoryLive fit_memory_live(const std::vector<MemoryRun>& runs);

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

}  // namespace ks
