#pragma once
// How much a rank's compute slows while its all-reduce is in flight: the
// calibration's `interference`. The compute is the KAN's forward+backward
// on the CPU path; the communication one non-blocking all-reduce per round,
// launched with the compute and progressed by MPI_Test between layers, as
// the trainer does. A small all-reduce inside a long compute makes this a
// weak signal (0.03 to 2 per second of collective across runs here); where
// bench progress has measured the interference per transport
// (mpi_progress), the replay uses that instead.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "comm.hpp"
#include "kan.hpp"

namespace ks {

struct InterferenceResult {
  double alone_s = 0;      // median forward+backward time, no communication
  double with_comm_s = 0;  // median while all-reduces run
  double alone_iqr_s = 0, with_comm_iqr_s = 0;
  std::int64_t allreduces = 0;  // rounds whose all-reduce finished within the compute
  double allreduce_alone_s = 0;  // median time of the same all-reduce with no compute
  // Growth of the peak resident set over the first of those all-reduces:
  // the MPI library's own copy of a message in flight (non-blocking
  // collectives).
  double inflight_bytes = 0;
  // Slowdown of the whole round: with / alone - 1.
  double interference() const { return alone_s > 0 ? with_comm_s / alone_s - 1.0 : 0.0; }
  // In the simulator's terms: compute lost per second the collective is in
  // flight, (with - alone) / allreduce_alone: the replay slows compute by
  // this factor only while a collective runs.
  double interference_per_collective_second() const {
    return allreduce_alone_s > 0 ? std::max(0.0, (with_comm_s - alone_s) / allreduce_alone_s) : 0.0;
  }
};

// Alternates rounds alone and with communication (so drifts in machine
// speed hit both alike); every rank takes part.
InterferenceResult measure_interference(Comm& comm, KanNet& net, int batch, double allreduce_bytes, int repeats);

}  // namespace ks
