#pragma once
// Shared by the CPU and the CUDA kernel microbenchmarks (kernel_bench.cpp,
// kernel_bench_cuda.cpp). Not a public interface.
#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "comm.hpp"
#include "data.hpp"
#include "kernel_bench.hpp"
#include "model/statistics.hpp"

namespace ks {

class Gpu;

namespace kernel_bench_detail {

// A timed sample of a warm op lasts at least this long (the workbench scales
// the calls in it): a 2 us kernel is read over 50 calls, not one. Ops timed
// with evicted caches keep one call per sample (the eviction is per sample).
inline constexpr double kMinSampleS = 1e-4;

using AddRow = std::function<void(const std::string& op, const std::string& detail, double flops, double bytes,
                                  const Stat& t, double workspace_bytes)>;

// What the batch benchmark gathers from: 4 x batch samples of the shape's
// widths held in memory, each value from `draw` (the gather's time depends
// on the widths, not the values).
template <typename Draw>
Dataset held_batch_source(const KernelShape& s, Draw&& draw) {
  std::vector<float> x(static_cast<std::size_t>(4 * s.batch) * s.in), y(static_cast<std::size_t>(4 * s.batch) * s.out);
  for (auto& v : x) v = draw();
  for (auto& v : y) v = draw();
  return Dataset::held(static_cast<int>(s.in), static_cast<int>(s.out), std::move(x), std::move(y));
}

// Times shape `si` of the plan on the GPU (CUDA events around each op,
// every rank at once) and adds its rows; returns the peak device bytes a
// training step of that one-layer net allocates (parameters, gradients,
// Adam state, a bucket, activations and workspaces).
double measure_shape_cuda(Comm& comm, Gpu& gpu, const KernelPlan& plan, std::size_t si, const AddRow& add);

}  // namespace kernel_bench_detail
}  // namespace ks
