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
// A JSON library error as a reader shows it: the message without nlohmann's
// "[json.exception.KIND.N]" tag.
std::string json_message(const std::exception& e);
nlohmann::json read_json_file(const std::string& path, const char* what);

// ---------------------------------------------------------------- measure kernels
// One row of measure kernels: one op timed at one shape on one rank.
struct KernelRecord {
  std::string op;              // one of kanscale_cost_classes()
  std::string detail;          // e.g. which parameter a copy was for
  std::string cache = "warm";  // warm | cold (caches evicted before each repetition)
  // the shape measured (every row carries it; only layers' times depend on it)
  std::int64_t batch = 0, in = 0, out = 0;
  int grid_size = 0, spline_order = 0;
  double flops = 0, bytes = 0;
  double time_median_s = 0, time_iqr_s = 0, time_cv = 0;
  bool unstable = false;  // the repetitions' CV above 5%: too spread to trust
  double workspace_bytes = 0;
  int rank = 0;
  bool layer() const { return op == "kan_forward" || op == "kan_backward"; }
};
nlohmann::json to_json(const KernelRecord& r);
// Row `index` of `path` (an InputError names rows[index].<key>). With
// `complete` every field the writer writes is required (a resume writes them
// back); otherwise what a fit reads: op, time, FLOPs and bytes, a layer's
// shape, and for a warm layer whether it was stable and its CV.
KernelRecord kernel_record_from_json(const nlohmann::json& r, const std::string& path, std::size_t index, bool complete);

// The peak memory of a one-layer training step at one shape, on one rank.
struct KernelMemoryRecord {
  std::int64_t in = 0, out = 0, batch = 0;
  int grid_size = 0, spline_order = 0;
  double peak_bytes = 0;
  int rank = 0;
};
nlohmann::json to_json(const KernelMemoryRecord& r);
// memory[index]: the shape and peak required (rank too with `complete`);
// a shape kanscale could not have measured is refused.
KernelMemoryRecord kernel_memory_from_json(const nlohmann::json& r, const std::string& path, std::size_t index, bool complete);

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
// One point of a sweep, as measure allreduce/broadcast writes it (nccl-tests'
// columns: times in microseconds, bandwidths in GB/s). Fields are optional
// so that a file from another or an older writer can still be read; what a
// fit needs of them is the fit's business, what a resume needs is checked by
// collective_point_from_json(..., complete = true).
struct CollectiveTiming {
  std::optional<double> time_us, algbw_GBps, busbw_GBps, launch_us;
  std::optional<std::int64_t> wrong;  // -1: not checked
};
struct CollectivePoint {
  double size_bytes = 0;
  std::optional<std::int64_t> count;
  std::string type = "float", redop = "sum";
  int root = -1;  // broadcast's root; -1 for all-reduce
  std::optional<CollectiveTiming> out_of_place, in_place;
};
nlohmann::json to_json(const CollectivePoint& p);
// Point `index` of `path`: types checked (an InputError names
// points[index].<key>); with `complete`, every field that the sweep writes
// must be there (count, and time, bandwidths and #wrong on both sides).
CollectivePoint collective_point_from_json(const nlohmann::json& p, const std::string& path, std::size_t index, bool complete);

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
  // per epoch, outside every iteration (the sampler's shuffle): the slowest
  // rank's median over the epoch starts it ran
  std::optional<double> epoch_fixed_s;
  // Each compute op (track 0, waits left out) per steady iteration: the
  // median over ranks of each rank's median, in the order the ops first ran.
  std::vector<std::pair<std::string, double>> op_s;
};
nlohmann::json to_json(const TrainSummary& s);
// The "summary" object of a train --json file, every field checked
// (InputError naming `path` and the key).
TrainSummary train_summary_from_json(const nlohmann::json& summary, const std::string& path);

// ---------------------------------------------------------------- bench interference
struct InterferenceFile {
  std::string path;
  std::string command_line;
  int ranks = 1, threads_per_rank = 1;
  double allreduce_bytes = 0;
  // rank 0's forward+backward alone and with an all-reduce in flight (medians)
  double alone_s = 0, with_communication_s = 0;
  // slowdown while communicating: rank 0's, mean and worst over ranks
  double interference_rank0 = 0, interference_mean = 0, interference_max = 0;
  double allreduce_alone_s = 0;
  double per_collective_second = 0;  // compute lost per second of collective in flight (mean over ranks): the fit's input
  std::optional<double> inflight_memory_bytes_max;
};
nlohmann::json to_json(const InterferenceFile& f);
InterferenceFile read_interference_file(const std::string& path);

// ---------------------------------------------------------------- bench progress
// How far a non-blocking all-reduce gets while its ranks compute (the
// calibration's mpi_progress): each point launches the all-reduce,
// computes for compute_s calling MPI_Test every poll_interval_s (0: never),
// then waits; wait_s is what the wait took (medians over repetitions, the
// largest rank's). The compute is work that takes compute_alone_s by
// itself; compute_s is what it took with the all-reduce in flight, and the
// polls come at every poll_interval_s of it (in time of the work alone).
struct ProgressPoint {
  double bytes = 0;
  double alone_s = 0;          // the same all-reduce with nothing else to do
  double poll_interval_s = 0;  // 0: no poll until the wait
  double compute_s = 0;
  double wait_s = 0;
  double compute_alone_s = 0;  // 0: not measured (then the fit leaves the interference out)
};
// the message sizes bench progress measures (and a plan may ask for)
constexpr double kProgressMinBytes = 4, kProgressMaxBytes = 4.0 * 1024 * 1024 * 1024;
struct ProgressFile {
  std::string path;
  std::string command_line;
  int ranks = 1;
  std::string mpi_library, cpu_model, date_utc;  // where and when it was measured
  std::vector<ProgressPoint> points;
};
nlohmann::json to_json(const ProgressFile& f);
ProgressFile read_progress_file(const std::string& path);

}  // namespace ks
