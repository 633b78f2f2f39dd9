#pragma once
// How far a non-blocking all-reduce gets while its ranks compute, the
// measurement behind the calibration's mpi_progress (model/config.hpp). Per
// message size: the all-reduce alone, then launched before a stretch of
// compute that calls MPI_Test every poll interval (or never) and waited for
// after it. A library that progresses on its own finishes within the
// compute; one that moves data only inside MPI calls leaves the wait most
// of its time.
#include <vector>

#include "comm.hpp"
#include "model/measurement_records.hpp"

namespace ks {

// The compute is a busy loop over a 256 KiB buffer (cache-resident, so the
// memory traffic is the collective's), compute_factor x the all-reduce's
// alone time long; poll_fractions are the poll intervals as fractions of
// that alone time (0: no poll). Every rank takes part; the points are the
// largest rank's medians over `repeats`.
std::vector<ProgressPoint> measure_progress(Comm& comm, const std::vector<double>& sizes, const std::vector<double>& poll_fractions,
                                            double compute_factor, int repeats);

}  // namespace ks
