#pragma once
// A posterior calibration (source: posterior, written by kanscale study
// --infer): a datasheet calibration whose settings (study/settings keys)
// were conditioned on a source's findings. The prediction takes its point;
// its bands are the spread of the predictions over its draws.
#include <vector>

#include "model/config.hpp"
#include "sim/point.hpp"

namespace ks {

// Applies settings to a case, in order; an unknown key or a bad value is an
// InputError that names the file, line and key it came from.
void apply_posterior_settings(Cluster& c, Calibration& cal, Workload& w, StudyOptions& o,
                              const std::vector<PosteriorSettings::Entry>& entries);

// Every entry of the point and of the draws applied to a copy of the case:
// the errors come before anything runs.
void check_posterior(const Cluster& c, const Calibration& cal, const Workload& w, const StudyOptions& o);

// The study at the calibration's point (applied to copies of the case as
// given), with each point's iteration and speedup bands the central
// o.interval_level of the draws' predictions (each draw applied to the case
// as given, in place of the point); no bands when o.interval_samples is 0 or
// there are no draws.
StudyResult run_posterior_study(const Cluster& c, const Workload& w, const Calibration& cal, const StudyOptions& o);

}  // namespace ks
