#pragma once
// A fitted calibration as its file holds it: the terms kanscale fit
// measured, each with the quality of its fit, and where they came from
// (formats/calibration_file writes it).
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config.hpp"
#include "fit.hpp"

namespace ks {

struct FittedOp {
  std::string op;  // a kanscale cost class
  bool layer = false;  // kan_forward / kan_backward: flop, byte, element and weight terms; else fixed + bytes
  OpCost cost;         // combine: sum
  LinearFit fit;
};

struct FittedMpiRegime {
  MpiRegime regime;              // latency unset: not measured (the link's defaults)
  std::optional<LinearFit> fit;  // the latency-bandwidth fit
  std::optional<LinearFit> launch_fit;
};

// A PyTorch op class (kanscale measure torch-ops): calls x fixed +
// elements x per_element. The fit's held-out error is leave-one-shape-out:
// each shape's records predicted by the fit without them.
struct FittedTorchOp {
  std::string cls;
  TorchOpCost cost;
  LinearFit fit;
  int shapes = 0;
  std::string note;  // where per_element came from when it was not fitted ("" : fitted over the shapes)
  std::string source;  // what it was fitted from beyond the file's fitted_from ("" : nothing to add): a trace's events
  // A GPU job's traces: the device's time for the class's kernels, its fit
  // (unset where its per_element is the datasheet's: device_note says so)
  std::optional<TorchOpCost> device;
  std::optional<LinearFit> device_fit;
  std::string device_note;
};

struct CalibrationFile {
  std::string name;
  std::string fitted_from;  // the measurement files, with their machine and date
  int concurrency = 1;      // ranks per node the compute terms were measured at
  Machine machine;          // from the first kernels file that records one

  // compute (written when any op was fitted)
  double jitter_sigma = 0;
  std::optional<double> interference;  // unset: not measured (written as 0)
  std::vector<std::pair<double, double>> cache_probe;  // [bytes, GB/s]
  std::vector<FittedOp> ops, ops_cold;

  // collectives, mpi family
  std::vector<FittedMpiRegime> mpi_regimes;
  std::optional<MpiBroadcast> mpi_broadcast;
  std::optional<LinearFit> mpi_broadcast_fit;
  std::optional<MpiProgress> mpi_progress;  // bench progress's fit
  std::string mpi_progress_note;            // its quality, for the file's comment
  // collectives, gloo family (torch.distributed sweeps)
  std::optional<GlooTerm> gloo_allreduce, gloo_broadcast;
  std::optional<LinearFit> gloo_allreduce_fit, gloo_broadcast_fit;
  // PyTorch's op classes
  std::vector<FittedTorchOp> torch_ops;
  // the host's time per iteration outside every op class (a trace's glue
  // between ops: calibrate --from-trace), and where it came from
  std::optional<double> host_overhead_s;
  std::string host_overhead_note;
  std::string torch_fingerprint;
  bool torch_host_has_launch = false;  // torch_ops' host costs hold the kernels' launches (a GPU job's traces)
  // collectives, nccl family: bus bandwidth per level, and how many sweeps each came from
  bool nccl = false;
  std::optional<double> nccl_bus_bw_intra_Bps, nccl_bus_bw_inter_Bps;
  int nccl_intra_sweeps = 0, nccl_inter_sweeps = 0;
  std::string nccl_held_out_note;  // the held-out sizes' error, for the file's comment

  // memory
  std::optional<double> runtime_bytes;                 // one rank per node
  std::optional<double> runtime_per_local_peer_bytes;  // per other rank of the node
  std::string runtime_what;     // what the runtime measurement counted
  std::string runtime_measured;  // per peer: "12 MiB at 1, 14 MiB at 2"
  std::optional<double> collective_in_flight;
  std::optional<LinearFit> memory_fit;  // peak = fixed + per_parameter x P + activation_factor x A
  // live trainer runs on the calibration's own shapes (validation/calibration_live)
  struct FittedLive {
    Calibration::LiveTerm term;
    LinearFit fit;  // measured - predicted non-compute ~ factor x predicted compute + host
    std::string none_because;  // set: the compute terms are none, (1, 0)
    std::string comm_why;      // the communication factor's fit, for the file's comment (kanscale's trainer)
  };
  std::vector<FittedLive> live;
  double model_error_sigma = 0;            // leave one shape out: what the intervals carry
  int trace_loo_steps = 0;                 // calibrate --from-trace: the traced steps model_error_sigma is over (no live terms)
  double model_error_in_sample_sigma = 0;  // the same on the runs the terms were fitted to (for people)
  double comm_error_sigma = 0;             // leave one shape out on the all-reduce times (comm_error_loo)
  double unwatched_error_sigma = 0;        // the compute's error with no live term (unwatched_compute_sigma)
  int unwatched_runs = 0;
  // peak memory over the live runs (fit_memory_live): the bytes beyond the
  // model, the error left with them (leave one shape out) and with none
  double memory_extra_bytes = 0, memory_error_sigma = 0, unwatched_memory_sigma = 0;
  int memory_runs = 0;
  double drift_sigma = 0;                  // the live runs' round-to-round random effect
  std::optional<double> kernel_drift_sigma;  // the same over the kernels files (rounds) of one plan; unset: one file
  int drift_rounds = 0;
  double rank_sigma = 0;    // the ranks' persistent spread within a run (rank_spread_sigma)
  int rank_sigma_runs = 0;  // the multi-rank runs (x rounds) it pooled; 0: none, not written
  std::string live_from;  // the files, for people

  // a compute: section (kanscale's kernels, or a measured interference alone: PyTorch's gloo threads)
  bool has_compute() const { return !ops.empty() || !ops_cold.empty() || interference.has_value() || host_overhead_s.has_value(); }
  bool has_memory() const {
    return runtime_bytes || runtime_per_local_peer_bytes || collective_in_flight || memory_fit;
  }
};

}  // namespace ks
