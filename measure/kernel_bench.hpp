#pragma once
// kanscale measure kernels: times every op of kanscale's training iteration
// (the cost classes of model/kan_model.hpp) over a grid of shapes, on the
// CPU or the CUDA path, with each shape's peak memory. Under mpirun every
// rank times at once (the neighbours' load is part of what is measured);
// the concurrency is recorded.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "comm.hpp"
#include "formats/measurement_records.hpp"

namespace ks {

struct KernelShape {
  std::int64_t batch, in, out;
  int G, k;
};

struct KernelPlan {
  std::string name = "cli";
  std::vector<KernelShape> shapes;
  std::string backend = "cpu";  // cpu | cuda
  int repeats = 15, warmup = 3, threads = 1;  // repeats: at most, with a target
  double target_rel_halfwidth = 0;  // > 0: an op's repeats stop once its median is known to it (all ranks agreeing)
  std::uint64_t seed = 1;
  double flush_bytes = 0;  // caches evicted (a buffer this large touched) before every timed repetition
  int max_shapes = 0;  // stop after this many new shapes (0: all); for tests of --resume
};

// Reads configs/measure/*.yaml; errors name file, line and key.
KernelPlan load_kernel_plan(const std::string& path);

// What an earlier, interrupted run of the same plan finished (--resume).
struct KernelsResume {
  std::vector<KernelRecord> rows;
  std::vector<KernelMemoryRecord> memory;
  std::size_t shapes_done = 0;
  nlohmann::json metadata;  // the file's own: its date and machine ceilings are kept
};
// Reads a resume file: its settings must be `meta`'s (this run's metadata),
// shapes_done within the plan's `plan_shapes` and matched by the memory
// entries, every row's field present and typed; anything else is an
// InputError naming the file and key.
KernelsResume read_kernels_resume(const std::string& path, const nlohmann::json& meta, std::size_t plan_shapes);
// Runs the plan on every rank; rank 0 returns all ranks' rows and writes
// the files (JSON with metadata, CSV with units in every column) after
// every shape, so an interrupted run loses at most the shape in progress;
// `resume` (a JSON file of the same plan) continues after its last shape.
std::vector<KernelRecord> run_kernel_plan(Comm& comm, const KernelPlan& plan, const std::string& json,
                                          const std::string& csv, const std::string& command_line,
                                          const std::string& resume = "");

}  // namespace ks
