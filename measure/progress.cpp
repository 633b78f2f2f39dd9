#include "progress.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "model/statistics.hpp"
#include "workbench.hpp"

namespace ks {
namespace {

// seconds on one Stopwatch started with the program's first reading
double now_s() {
  static const Stopwatch epoch;
  return epoch.seconds();
}

// Arithmetic over a 256 KiB buffer in units of 4096 updates: the compute,
// given as work so that a collective's interference shows as time.
class BusyLoop {
 public:
  BusyLoop() : buf_(65536, 1.0f) {}
  void run(std::int64_t units) {
    float acc = sink_;
    for (std::int64_t u = 0; u < units; ++u) {
      const std::size_t base = static_cast<std::size_t>(u % 16) * 4096;
      for (std::size_t k = 0; k < 4096; ++k) {
        acc += buf_[base + k] * 1.0001f;
        buf_[base + k] = acc * 1e-9f + 1.0f;
      }
    }
    sink_ = acc;
  }
  float sink() const { return sink_; }

 private:
  std::vector<float> buf_;
  float sink_ = 0;
};

}  // namespace

std::vector<ProgressPoint> measure_progress(Comm& comm, const std::vector<double>& sizes, const std::vector<double>& poll_fractions,
                                            double compute_factor, int repeats) {
  BusyLoop busy;
  // the loop's speed on this rank, every rank at once (as in the points)
  std::vector<double> unit_s;
  for (int r = 0; r < 5; ++r) {
    comm.barrier();
    const double t0 = now_s();
    busy.run(200);
    unit_s.push_back((now_s() - t0) / 200);
  }
  const double per_unit = comm.allreduce_max(summarize(unit_s).median);
  std::vector<ProgressPoint> out;
  for (const double bytes : sizes) {
    std::vector<float> buf(static_cast<std::size_t>(std::max(1.0, bytes / 4)), 1.0f);
    // the all-reduce alone (one warm-up)
    std::vector<double> alone;
    for (int r = 0; r <= repeats; ++r) {
      comm.barrier();
      const double t0 = now_s();
      comm.wait(comm.iallreduce_sum(buf.data(), buf.size()));
      comm.release();
      if (r > 0) alone.push_back(now_s() - t0);
    }
    // every rank computes the same work: the largest rank's median
    const double C = comm.allreduce_max(summarize(alone).median);
    const auto units = std::max<std::int64_t>(1, std::llround(compute_factor * C / per_unit));
    for (const double f : poll_fractions) {
      // polls every `every` units (0: none)
      const std::int64_t every = f > 0 ? std::max<std::int64_t>(1, std::llround(f * C / per_unit)) : 0;
      std::vector<double> waits, computes, computes_alone;
      for (int r = 0; r < repeats; ++r) {
        // the same work alone, interleaved (drift hits both alike)
        comm.barrier();
        double t0 = now_s();
        busy.run(units);
        computes_alone.push_back(now_s() - t0);
        comm.barrier();
        const int h = comm.iallreduce_sum(buf.data(), buf.size());
        t0 = now_s();
        bool done = false;
        for (std::int64_t u = 0; u < units;) {
          const std::int64_t n = every > 0 ? std::min(every, units - u) : units;
          busy.run(n);
          u += n;
          if (every > 0 && u < units && !done) done = comm.test(h);
        }
        const double t1 = now_s();
        comm.wait(h);
        comm.release();
        waits.push_back(now_s() - t1);
        computes.push_back(t1 - t0);
      }
      const double alone_compute = summarize(computes_alone).median;
      ProgressPoint p;
      p.bytes = static_cast<double>(buf.size()) * 4.0;
      p.alone_s = C;
      p.compute_alone_s = comm.allreduce_max(alone_compute);
      // the poll interval in time of the work alone (the same ranks' figure)
      p.poll_interval_s = every > 0 ? static_cast<double>(every) / static_cast<double>(units) * p.compute_alone_s : 0.0;
      p.compute_s = comm.allreduce_max(summarize(computes).median);
      p.wait_s = comm.allreduce_max(summarize(waits).median);
      out.push_back(p);
    }
  }
  comm.barrier();
  if (busy.sink() == 12345.0f) comm.barrier();  // keeps the loop's work observable
  return out;
}

}  // namespace ks
