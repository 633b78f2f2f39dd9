#pragma once
// kanscale calibrate: measures what a calibration needs on this machine
// (kernels, the runtime's memory, all-reduce and broadcast sweeps per
// transport, the interference benchmark), at the plan's rank count, and
// fits it. The jobs are validate's schedule (make_schedule) without live
// cases; the fit is validate's (fit_measured).
#include <string>

#include "plan.hpp"

namespace ks {

// Runs the microbenchmarks of `plan` (its `calibration: measure:` section,
// `plan.rounds` times) in out_dir and fits one calibration per transport
// into out_dir/results/calibration-<transport>.yaml, each with its fit
// report and the measurement files it was fitted from beside it. The
// plan's cases, if any, are not run. Returns the exit code.
int run_calibration(const ValidationPlan& plan, const std::string& out_dir, const std::string& exe);

// The jobs run_calibration would run, per round, one line each (what, ranks
// and how they start, kanscale's arguments, the file each leaves), without
// running or probing anything: any machine can print a GPU plan's.
std::string calibration_dry_run(const ValidationPlan& plan);

}  // namespace ks
