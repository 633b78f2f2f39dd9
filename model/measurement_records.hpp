#pragma once
// The measurement files kanscale writes (measure kernels, measure allreduce
// and broadcast, bench interference) as typed records, read in one place:
// every field's type and range is checked here, and an InputError names the
// file, the row and the key. What a field means for a fit (a time must be
// positive, a point must have no wrong results) is the fit's business
// (calibration_fit).
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "machine.hpp"

namespace ks {

// A JSON file, parsed; InputError for a directory, a file that cannot be
// opened or text that is not JSON (`what`: the kind of file expected).
nlohmann::json read_json_file(const std::string& path, const char* what);

// ---------------------------------------------------------------- measure kernels
struct KernelRecord {
  std::string op;             // one of kanscale_cost_classes()
  std::string cache = "warm";  // warm | cold (caches evicted before each repetition)
  double time_median_s = 0, flops = 0, bytes = 0;
  // layers (kan_forward, kan_backward) only: the shape
  double batch = 0, in = 0, out = 0, grid_size = 0, spline_order = 0;
  // warm layers only: whether the repetitions were too spread to trust,
  // and their coefficient of variation (read when stable)
  bool unstable = false;
  double time_cv = 0;
  bool layer() const { return op == "kan_forward" || op == "kan_backward"; }
};

// The peak memory of a one-layer training step at one shape.
struct KernelMemoryRecord {
  std::int64_t in = 0, out = 0, batch = 0;
  int grid_size = 0, spline_order = 0;
  double peak_bytes = 0;
};

struct KernelsFile {
  std::string path;
  std::string host = "?", cpu_model = "?", date_utc = "?", git_hash = "?";
  Machine machine;  // metadata.machine (empty in files from before it was recorded)
  int ranks = 1;
  double ranks_per_node = 1;  // metadata.concurrency_ranks_per_node
  std::vector<std::pair<double, double>> cache_probe;  // [bytes, GB/s]
  std::optional<double> runtime_memory_bytes;
  std::optional<std::string> runtime_memory_what;
  std::vector<KernelMemoryRecord> memory;
  std::vector<KernelRecord> rows;
};
KernelsFile read_kernels_file(const std::string& path);
// metadata.machine as measure kernels writes it (read back by read_kernels_file).
nlohmann::json machine_json(const Machine& m);

// A kernels file read only for its runtime memory (fit --runtime-memory).
KernelsFile read_runtime_memory_file(const std::string& path);

// ---------------------------------------------------------------- measure allreduce / broadcast
struct CollectiveTiming {
  std::optional<double> time_us, busbw_GBps, launch_us;
  std::optional<std::int64_t> wrong;
};
struct CollectivePoint {
  double size_bytes = 0;
  std::optional<CollectiveTiming> out_of_place, in_place;
};
struct CollectiveSweepFile {
  std::string path;
  bool has_metadata = false;
  std::string op, backend = "mpi", library = "?", date_utc = "?";
  std::optional<int> ranks;
  bool nonblocking = false;
  std::vector<std::string> hosts;
  bool has_points = false;
  std::vector<CollectivePoint> points;
};
CollectiveSweepFile read_collective_sweep_file(const std::string& path);

// ---------------------------------------------------------------- train --json: its summary
// Steady state, per metric: the median over ranks of each rank's median over
// its steady iterations, and the p95 over ranks.
struct TrainSummary {
  struct MedianP95 {
    double median = 0, p95 = 0;
  };
  MedianP95 iteration_s, compute_s, communication_s, exposed_communication_s;
  double samples_per_s = 0;
  double peak_rss_bytes = 0;                 // the largest rank's
  std::optional<double> peak_device_bytes;   // the largest rank's device allocations (CUDA)
  double final_loss = 0;
  std::int64_t steps = 0;
  bool interrupted = false;
  std::vector<double> bucket_communication_s;  // per bucket of the steady plan
};
nlohmann::json to_json(const TrainSummary& s);
// The "summary" object of a train --json file, every field checked
// (InputError naming `path` and the key).
TrainSummary train_summary_from_json(const nlohmann::json& summary, const std::string& path);

// ---------------------------------------------------------------- bench interference
struct InterferenceFile {
  std::string path;
  double per_collective_second = 0;  // compute lost per second of collective in flight (mean)
  double allreduce_bytes = 0;
  int ranks = 1;
  std::optional<double> inflight_memory_bytes_max;
};
InterferenceFile read_interference_file(const std::string& path);

}  // namespace ks
