#pragma once
// kanscale measure kernels: times every op of kanscale's training iteration
// (the cost classes of model/kan_model.hpp) over a grid of shapes, on the
// CPU or the CUDA path, with each shape's peak memory. Under mpirun every
// rank times at once (the neighbours' load is part of what is measured);
// the concurrency is recorded.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <map>
#include <string>
#include <utility>
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
  // flush_between_repeats: "Nx_llc": instead of a fixed size, the ranks on a
  // node together touch N times their last-level cache (each rank N x LLC /
  // the ranks sharing it, at least one LLC), sized at run time (llc_flush)
  double flush_llc_multiple = 0;
  int max_shapes = 0;  // stop after this many new shapes (0: all); for tests of --resume
  // A calibration's later rounds (--skip-from): these classes (an op, or
  // "op@cold"), each with its error then, are timed at the plan's first,
  // third, fifth... shapes only: their fit predicted each left-out shape of
  // the earlier rounds within skip_under on average (CPU path only).
  std::map<std::string, double> skip_classes;
  double skip_under = 0;
  std::vector<std::string> skip_from;
};

// Reads configs/measure/*.yaml; errors name file, line and key.
KernelPlan load_kernel_plan(const std::string& path);

// The last-level cache this CPU sees (sysfs: the highest cache level's
// index, unified or data) and how many CPUs share it; {0, 0} where unread.
struct LastLevelCache {
  double bytes = 0;
  int sharing_cpus = 0;
};
LastLevelCache last_level_cache(const std::string& sysfs_cpu = "/sys/devices/system/cpu/cpu0");

// A rank's eviction buffer under an "Nx_llc" rule, with `ranks_here` ranks
// on the node: N x LLC / the ranks that share it (the fewer of ranks_here
// and its sharing CPUs), at least one LLC; 64 MiB where the LLC is unknown.
// `why` (may be null) says how it was sized.
double llc_flush_bytes(double multiple, int ranks_here, const LastLevelCache& llc, std::string* why = nullptr);

// "64MiB" or "2x_llc" (flush_between_repeats, measure kernels --flush): the
// size, or the multiple of the LLC (the other 0). UnitError when neither.
std::pair<double, double> parse_flush(const std::string& text);

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
