#include "measure/mpi_progress.hpp"

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
  // a unit: `block` dependent multiply-adds (4096: several microseconds)
  explicit BusyLoop(std::size_t block = 4096) : block_(block), buf_(16 * block, 1.0f) {}
  void run(std::int64_t units) {
    float acc = sink_;
    for (std::int64_t u = 0; u < units; ++u) {
      const std::size_t base = static_cast<std::size_t>(u % 16) * block_;
      for (std::size_t k = 0; k < block_; ++k) {
        acc += buf_[base + k] * 1.0001f;
        buf_[base + k] = acc * 1e-9f + 1.0f;
      }
    }
    sink_ = acc;
  }
  float sink() const { return sink_; }

 private:
  std::size_t block_;
  std::vector<float> buf_;
  float sink_ = 0;
};

// The loop's time per unit on this rank, every rank at once (as in the
// points): the largest rank's median of 5 timings of `units` units.
double unit_seconds(Comm& comm, BusyLoop& busy, int units) {
  std::vector<double> unit_s;
  for (int r = 0; r < 5; ++r) {
    comm.barrier();
    const double t0 = now_s();
    busy.run(units);
    unit_s.push_back((now_s() - t0) / units);
  }
  return comm.allreduce_max(summarize(unit_s).median);
}

// One non-blocking all-reduce of buf[0, n) launched and waited for, alone:
// the largest rank's median over `repeats` (after one warm-up).
double allreduce_alone_s(Comm& comm, float* buf, std::size_t n, int repeats) {
  std::vector<double> alone;
  for (int r = 0; r <= repeats; ++r) {
    comm.barrier();
    const double t0 = now_s();
    comm.wait(comm.iallreduce_sum(buf, n));
    comm.release();
    if (r > 0) alone.push_back(now_s() - t0);
  }
  return comm.allreduce_max(summarize(alone).median);
}

}  // namespace

std::vector<ProgressPoint> measure_progress(Comm& comm, const std::vector<double>& sizes, const std::vector<double>& poll_fractions,
                                            double compute_factor, int repeats) {
  BusyLoop busy;
  const double per_unit = unit_seconds(comm, busy, 200);
  std::vector<ProgressPoint> out;
  for (const double bytes : sizes) {
    std::vector<float> buf(static_cast<std::size_t>(std::max(1.0, bytes / 4)), 1.0f);
    // every rank computes the same work: the largest rank's median
    const double C = allreduce_alone_s(comm, buf.data(), buf.size(), repeats);
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

std::vector<OverlapPoint> measure_overlap(Comm& comm, const std::vector<double>& sizes, double gap, int repeats) {
  BusyLoop busy(256);  // fine units: a tenth of a 4 KiB all-reduce is under a microsecond
  const double per_unit = unit_seconds(comm, busy, 3000);
  std::vector<OverlapPoint> out;
  for (const double bytes : sizes) {
    const std::size_t n = static_cast<std::size_t>(std::max(1.0, bytes / 4));
    std::vector<float> a(n, 1.0f), b(n, 1.0f);
    OverlapPoint p;
    p.bytes = static_cast<double>(n) * 4.0;
    p.alone_s = allreduce_alone_s(comm, a.data(), n, repeats);
    const auto gap_units = std::max<std::int64_t>(1, std::llround(gap * p.alone_s / per_unit));
    const auto poll_units = std::max<std::int64_t>(1, std::llround(0.1 * p.alone_s / per_unit));
    std::vector<double> pair, staggered, gaps;
    for (int r = 0; r < repeats; ++r) {
      // the three interleaved, so that drift hits them alike
      comm.barrier();
      double t0 = now_s();
      const int h1 = comm.iallreduce_sum(a.data(), n);
      const int h2 = comm.iallreduce_sum(b.data(), n);
      comm.wait(h1);
      comm.wait(h2);
      comm.release();
      pair.push_back(now_s() - t0);
      comm.barrier();
      t0 = now_s();
      busy.run(gap_units);
      gaps.push_back(now_s() - t0);
      comm.barrier();
      t0 = now_s();
      const int g1 = comm.iallreduce_sum(a.data(), n);
      bool done = false;
      for (std::int64_t u = 0; u < gap_units;) {
        const std::int64_t k = std::min(poll_units, gap_units - u);
        busy.run(k);
        u += k;
        if (!done) done = comm.test(g1);
      }
      const int g2 = comm.iallreduce_sum(b.data(), n);
      comm.wait(g1);
      comm.wait(g2);
      comm.release();
      staggered.push_back(now_s() - t0);
    }
    p.pair_s = comm.allreduce_max(summarize(pair).median);
    p.staggered_s = comm.allreduce_max(summarize(staggered).median);
    p.gap_s = comm.allreduce_max(summarize(gaps).median);
    out.push_back(p);
  }
  comm.barrier();
  if (busy.sink() == 12345.0f) comm.barrier();  // keeps the loop's work observable
  return out;
}

}  // namespace ks
