// kanscale measure kernels on the CUDA path: every op of the iteration timed
// with CUDA events on the compute stream (launch included, as in training),
// each repetition synchronised, all ranks of a node at once.
#include <algorithm>
#include <random>

#include "adam.hpp"
#include "data.hpp"
#include "gpu.hpp"
#include "kan.hpp"
#include "kernel_bench_detail.hpp"
#include "workbench_gpu.hpp"
#include "model/kan_model.hpp"

namespace ks::kernel_bench_detail {

namespace {

// The plan's warm-up and repeats on the device's clock, calls scaled to a
// sample of at least kMinSampleS (kernel_bench_detail.hpp).
template <typename F>
Stat time_gpu(Comm& comm, Gpu& gpu, F&& f, int warmup, int reps) {
  GpuEventClock clock(gpu);
  return time_calls(Repeats{warmup, reps, 1, kMinSampleS}, std::forward<F>(f), clock,
                    TimerHooks{[&] { comm.barrier(); }, [&] { gpu.synchronize(); }, {}});
}

}  // namespace

double measure_shape_cuda(Comm& comm, Gpu& gpu, const KernelPlan& plan, std::size_t si, const AddRow& add) {
  const KernelShape& s = plan.shapes[si];
  const int B = static_cast<int>(s.batch), rank = comm.rank();
  KanNet net = init_kan({s.in, s.out}, s.G, s.k, plan.seed + si);
  KanLayer& L = net.layers[0];
  std::mt19937 gen(static_cast<unsigned>(plan.seed * 7919 + si + 101 * rank));
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  randomize_parameters(L, [&] { return u(gen); });
  std::vector<float> x(static_cast<std::size_t>(B) * s.in), t(static_cast<std::size_t>(B) * s.out), dy(t.size());
  for (auto& v : x) v = u(gen);  // fresh random inputs, never zeros
  for (auto& v : t) v = u(gen);
  for (auto& v : dy) v = u(gen);

  gpu.synchronize();
  const double base = gpu.allocated_bytes();
  gpu.reset_peak();
  double peak = 0;
  {
    KanGpuNet dnet(gpu, net, B);
    const std::size_t P = static_cast<std::size_t>(net.parameter_count());
    float* bucket = gpu.alloc(P);
    float* ddy = gpu.alloc(dy.size());
    float* ddx = gpu.alloc(x.size());
    gpu.copy(ddy, dy.data(), dy.size(), GpuStream::compute);
    dnet.forward(x.data(), t.data(), B);  // the batch and targets on the device
    gpu.synchronize();

    const auto fw = kanscale_layer_forward(s.in, s.out, s.G, s.k, s.batch);
    const double C = s.G + s.k;
    const double ws = 4.0 * (static_cast<double>(s.batch) * s.in * (C + s.k + 1 + 2) + s.in * C * s.out);
    add("kan_forward", "", fw.flops, fw.bytes, time_gpu(comm, gpu, [&] { dnet.layer_forward(0, B); }, plan.warmup, plan.repeats), ws);
    for (bool need_dx : {true, false}) {
      const auto bw = kanscale_layer_backward(s.in, s.out, s.G, s.k, s.batch, need_dx);
      const Stat tb = time_gpu(comm, gpu, [&] { dnet.layer_backward(0, ddy, need_dx ? ddx : nullptr); }, plan.warmup, plan.repeats);
      add("kan_backward", need_dx ? "with input gradient" : "without input gradient", bw.flops, bw.bytes, tb,
          ws + 4.0 * (static_cast<double>(s.batch) * s.in * (C + 1) + s.in * C * s.out));
    }
    const double n = static_cast<double>(t.size());
    add("mse", "", 5 * n, 16 * n, time_gpu(comm, gpu, [&] { dnet.loss_only(B); }, plan.warmup, plan.repeats), 0);
    const auto prefs = kan_parameter_refs(net);
    Adam hyper;
    std::size_t off = 0;
    for (std::size_t p = 0; p < prefs.size(); ++p) {
      const std::size_t m = prefs[p].size();
      const int pi = static_cast<int>(p);
      add("bucket_copy", prefs[p].name, static_cast<double>(m), 8.0 * m,
          time_gpu(comm, gpu, [&] { gpu.scale_copy(dnet.grad(pi), bucket + off, m, 0.5f, GpuStream::compute); }, plan.warmup,
                   plan.repeats),
          0);
      add("copy_back", prefs[p].name, 0, 8.0 * m,
          time_gpu(comm, gpu, [&] { gpu.copy(dnet.grad(pi), bucket + off, m, GpuStream::compute); }, plan.warmup, plan.repeats), 0);
      std::int64_t step = 0;
      add("adam", prefs[p].name, 10.0 * m, 28.0 * m,
          time_gpu(comm, gpu, [&] { dnet.adam_step_param(hyper, ++step, pi, dnet.grad(pi)); }, plan.warmup, plan.repeats), 0);
      off += m;
    }
    // the batch: gathered on the host (random samples in memory), copied in
    {
      const Dataset data = held_batch_source(s, [&] { return u(gen); });
      const auto idx = shard_indices(4 * s.batch, 1, 0, plan.seed, 0);
      float* X = gpu.alloc_host(x.size());
      float* T = gpu.alloc_host(t.size());
      // gathered on the host and copied in: the host's clock, settled on the device
      HostClock clock([&] { gpu.synchronize(); });
      const Stat times = time_calls(
          Repeats{plan.warmup, plan.repeats},
          [&] {
            for (int i = 0; i < B; ++i)
              data.sample(idx[static_cast<std::size_t>(i)], X + static_cast<std::size_t>(i) * s.in, T + static_cast<std::size_t>(i) * s.out);
            gpu.copy(dnet.input(), X, x.size(), GpuStream::compute);
          },
          clock);
      gpu.free_host(X);
      gpu.free_host(T);
      add("load_batch", "", 0, 8.0 * s.batch * static_cast<double>(s.in + s.out), times, 0);
    }
    gpu.synchronize();
    peak = gpu.peak_bytes() - base;
    gpu.free(bucket);
    gpu.free(ddy);
    gpu.free(ddx);
  }
  return peak;
}

}  // namespace ks::kernel_bench_detail
