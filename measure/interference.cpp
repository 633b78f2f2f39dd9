#include "interference.hpp"

#include <algorithm>
#include <chrono>
#include <random>

#include "kan_cpu.hpp"
#include "model/statistics.hpp"
#include "trainer.hpp"
#include "workbench.hpp"

namespace ks {

InterferenceResult measure_interference(Comm& comm, KanNet& net, int batch, double allreduce_bytes, int repeats) {
  KanCpuNet cpu(net);
  std::mt19937 gen(static_cast<unsigned>(17 + comm.rank()));
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> X(static_cast<std::size_t>(batch) * net.layers.front().in), T(static_cast<std::size_t>(batch) * net.layers.back().out);
  for (auto& v : X) v = u(gen);
  for (auto& v : T) v = u(gen);
  std::vector<float> buf(static_cast<std::size_t>(allreduce_bytes / 4), 1.0f);
  InterferenceResult res;
  // One all-reduce per round with communication, started before the compute
  // and progressed between layers, so every rank issues the same collectives
  // in the same order; the time to finish it after the compute is not
  // counted (it is communication, not slowed compute).
  auto run = [&](bool comm_on) {
    int handle = -1;
    bool done = true;
    if (comm_on) {
      handle = comm.iallreduce_sum(buf.data(), buf.size());
      done = false;
    }
    auto progress = [&] {
      if (!done && comm.test(handle)) done = true;
    };
    const Stopwatch watch;
    cpu.forward(X.data(), T.data(), batch, [&](int) { progress(); });
    cpu.backward([](int) {}, [&](int) { progress(); });
    const double t = watch.seconds();
    if (comm_on) {
      if (done) ++res.allreduces;  // finished within the compute
      comm.wait(handle);
      comm.release();
    }
    return t;
  };
  std::vector<double> alone, with, ar;
  const double peak_before = peak_rss_bytes();  // the message buffer is allocated and touched
  // the all-reduce alone, blocking, no compute
  for (int r = 0; r < repeats; ++r) {
    comm.barrier();
    const Stopwatch watch;
    const int h = comm.iallreduce_sum(buf.data(), buf.size());
    comm.wait(h);
    comm.release();
    ar.push_back(watch.seconds());
    // after the first: the library's copy of one message in flight (later
    // repetitions add what the allocator keeps of freed copies, measured
    // here: 1.06x the message after one or five, 2.07x after twenty)
    if (r == 0) res.inflight_bytes = peak_rss_bytes() - peak_before;
  }
  run(false);  // warm-up
  for (int r = 0; r < repeats; ++r) {
    comm.barrier();
    alone.push_back(run(false));
    comm.barrier();
    with.push_back(run(true));
  }
  comm.barrier();
  const auto a = summarize(alone), w = summarize(with);
  res.alone_s = a.median;
  res.alone_iqr_s = a.iqr;
  res.with_comm_s = w.median;
  res.with_comm_iqr_s = w.iqr;
  res.allreduce_alone_s = summarize(ar).median;
  return res;
}

}  // namespace ks
