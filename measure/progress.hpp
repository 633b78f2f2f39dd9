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
#include "formats/measurement_records.hpp"

namespace ks {

// The compute is a fixed amount of work, a busy loop over a 256 KiB buffer
// (cache-resident, so the memory traffic is the collective's) that takes
// compute_factor x the all-reduce's alone time by itself; poll_fractions are
// the poll intervals, as fractions of that alone time, in work (0: no
// poll). The same work alone is timed in every repetition, so what the
// collective costs the compute (interference) shows beside how far it got.
// Every rank takes part; the points are the largest rank's medians over
// `repeats`.
std::vector<ProgressPoint> measure_progress(Comm& comm, const std::vector<double>& sizes, const std::vector<double>& poll_fractions,
                                            double compute_factor, int repeats);

}  // namespace ks
