#pragma once
// How far a non-blocking all-reduce gets while its ranks compute, the
// measurement behind the calibration's mpi_progress (model/config.hpp). Per
// message size: the all-reduce alone, then launched before a stretch of
// compute that calls MPI_Test every poll interval (or never) and waited for
// after it. A library that progresses on its own finishes within the
// compute; one that moves data only inside MPI calls leaves the wait most
// of its time.
#include <algorithm>
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

// Two non-blocking all-reduces of one size in flight at once, as the
// trainer has them when a bucket is ready before the one before it is done
// (the replay runs one collective at a time). Per size, the largest rank's
// medians over `repeats`, each from the first launch to both done:
//  - alone_s: one all-reduce, launched and waited for;
//  - pair_s: two launched back to back, then both waited for;
//  - staggered_s: the second launched after `gap` x alone_s of compute
//    that calls MPI_Test every tenth of alone_s (as the trainer polls),
//    then both waited for;
//  - gap_s: that compute alone.
// One after another, a pair would take 2 alone_s, and the staggered pair
// max(2 alone_s, gap_s + alone_s); the hidden share of the second,
// (one after another - measured) / alone_s, is what the replay lacks.
struct OverlapPoint {
  double bytes = 0;
  double alone_s = 0, pair_s = 0, staggered_s = 0, gap_s = 0;
  double hidden_pair() const { return alone_s > 0 ? (2 * alone_s - pair_s) / alone_s : 0.0; }
  double hidden_staggered() const { return alone_s > 0 ? (std::max(2 * alone_s, gap_s + alone_s) - staggered_s) / alone_s : 0.0; }
};
std::vector<OverlapPoint> measure_overlap(Comm& comm, const std::vector<double>& sizes, double gap, int repeats);

}  // namespace ks
