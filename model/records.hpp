#pragma once
// What kanscale's measurements hold, as plain records: the rows of measure
// kernels, the points of measure allreduce/broadcast, a train run's summary,
// bench interference and bench progress, and a nccl-tests log's table. The
// fits (calibration_fit) take them; formats/measurement_records and
// formats/nccl_tests_log read and write their files.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "machine.hpp"

namespace ks {

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
  int samples = 0;  // timed samples taken (the stopping rule's; 0: not recorded)
  bool layer() const { return op == "kan_forward" || op == "kan_backward"; }
};

// The peak memory of a one-layer training step at one shape, on one rank.
struct KernelMemoryRecord {
  std::int64_t in = 0, out = 0, batch = 0;
  int grid_size = 0, spline_order = 0;
  double peak_bytes = 0;
  int rank = 0;
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

// The collective a sweep file measured, as its reader recognised metadata.op
// (none: absent or another collective).
enum class SweptCollective { none, allreduce, broadcast };

struct CollectiveSweepFile {
  std::string path;
  bool has_metadata = false;
  std::string op, backend = "mpi", library = "?", date_utc = "?";
  SweptCollective collective = SweptCollective::none;
  std::optional<int> ranks;
  bool nonblocking = false;
  std::vector<std::string> hosts;
  bool has_points = false;
  std::vector<CollectivePoint> points;
};

// ---------------------------------------------------------------- train --json: its summary
// Steady state, per metric: the median over ranks of each rank's median over
// its steady iterations, and the p95 over ranks.
struct TrainSummary {
  struct MedianP95 {
    double median = 0, p95 = 0;
  };
  // compute, communication and exposed are NaN where not measured (a PyTorch
  // run: torch runs the reducer inside backward)
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

// ---------------------------------------------------------------- measure torch-ops
// One PyTorch op class timed at one shape (measure/python/kanscale_torch/
// op_bench.py): one repetition makes `calls` calls of the class touching
// `elements` elements in all (the class's own size measure).
struct TorchOpRecord {
  std::string cls;  // "forward:bases", "backward:spline_linear@first", "adam", "reducer", ...
  double calls = 1, elements = 0;
  std::int64_t batch = 0, in = 0, out = 0;  // the layer's (a per-model class: the model's in and out)
  int grid_size = 0, spline_order = 0;
  std::vector<std::int64_t> widths;  // the model the layer belongs to
  double time_median_s = 0, time_iqr_s = 0;
  int reps = 0;
  // A GPU job's trace (calibrate --from-trace): the device's time for the
  // unit, the summed durations of the kernels, copies and sets its events
  // launched (matched by correlation id), the median over the steps; and
  // what the cluster's datasheet roofline gives the unit's ops (their flops
  // and bytes, the launch left out). Unset: a CPU job.
  std::optional<double> device_median_s;
  double device_roofline_s = 0;
  // the shape it was measured at: records with the same key are held out together
  std::string shape_key() const {
    std::string k;
    for (auto w : widths) k += std::to_string(w) + ",";
    return k + std::to_string(in) + "x" + std::to_string(out) + "G" + std::to_string(grid_size) + "k" + std::to_string(spline_order) + "B" +
           std::to_string(batch);
  }
};
struct TorchOpsFile {
  std::string path;
  std::string torch = "?", blas = "?", python = "?", date_utc = "?";
  Machine machine;  // cpu_model and cores
  int threads = 1;  // intra-op threads
  int dropped = 0;  // differences (DDP minus bare) at or below 0, left out
  std::vector<TorchOpRecord> records;
  // "torch 1.13.0a0, libopenblasp-r0.3.21.so, Python 3.11.2, 1 thread"
  std::string fingerprint() const;
};

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

// ---------------------------------------------------------------- nccl-tests logs
// One row of a nccl-tests table (formats/nccl_tests_log reads any version's layout).
struct NcclTestsRow {
  double bytes = 0;
  std::int64_t count = 0;
  std::string type, redop;
  double time_us[2] = {0, 0}, algbw_GBps[2] = {0, 0}, busbw_GBps[2] = {0, 0};  // out-of-place, in-place
  int line = 0;
};

struct NcclTestsLog {
  std::string file;
  int ranks = 0;  // from the Rank lines
  int nodes = 0;  // distinct hosts
  std::vector<std::string> hosts;
  std::string nccl_version;  // "NCCL version 2.14.3+cuda11.7" when logged
  std::vector<NcclTestsRow> rows;
};

}  // namespace ks
