#include "progress.hpp"

#include <algorithm>
#include <chrono>

#include "model/statistics.hpp"

namespace ks {
namespace {

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Arithmetic over a small buffer until `until` (steady clock seconds).
class BusyLoop {
 public:
  BusyLoop() : buf_(65536, 1.0f) {}
  void run_until(double until) {
    float acc = sink_;
    while (now_s() < until)
      for (std::size_t k = 0; k < 4096; ++k) {
        acc += buf_[k] * 1.0001f;
        buf_[k] = acc * 1e-9f + 1.0f;
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
    // every rank computes for the same time: the largest rank's median
    const double C = comm.allreduce_max(summarize(alone).median);
    for (const double f : poll_fractions) {
      const double T = compute_factor * C, d = f * C;
      std::vector<double> waits, computes;
      for (int r = 0; r < repeats; ++r) {
        comm.barrier();
        const int h = comm.iallreduce_sum(buf.data(), buf.size());
        const double t0 = now_s(), end = t0 + T;
        if (d > 0) {
          bool done = false;
          for (double next = t0 + d; next < end; next += d) {
            busy.run_until(next);
            if (!done) done = comm.test(h);
          }
        }
        busy.run_until(end);
        const double t1 = now_s();
        comm.wait(h);
        comm.release();
        waits.push_back(now_s() - t1);
        computes.push_back(t1 - t0);
      }
      ProgressPoint p;
      p.bytes = static_cast<double>(buf.size()) * 4.0;
      p.alone_s = C;
      p.poll_interval_s = d;
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
