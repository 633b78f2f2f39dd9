#pragma once
// How much a rank's compute slows while its all-reduce is in flight: the
// calibration's `interference`. The compute is the KAN's forward+backward
// on the CPU path; the communication a non-blocking all-reduce progressed
// by MPI_Test between layers, as the trainer does, restarted whenever it
// finishes so that it covers the whole measurement.
#include <cstdint>
#include <vector>

#include "comm.hpp"
#include "kan.hpp"

namespace ks {

struct InterferenceResult {
  double alone_s = 0;      // median forward+backward time, no communication
  double with_comm_s = 0;  // median while all-reduces run
  double alone_iqr_s = 0, with_comm_iqr_s = 0;
  std::int64_t allreduces = 0;  // completed during the measurement
  double interference() const { return alone_s > 0 ? with_comm_s / alone_s - 1.0 : 0.0; }
};

// Alternates rounds alone and with communication (so drifts in machine
// speed hit both alike); every rank takes part.
InterferenceResult measure_interference(Comm& comm, KanNet& net, int batch, double allreduce_bytes, int repeats);

}  // namespace ks
