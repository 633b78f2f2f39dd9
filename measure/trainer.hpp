#pragma once
// The live data-parallel trainer: efficient-kan's KAN trained with MSE and
// Adam, its gradients synchronised the way PyTorch DDP does it (parameters
// broadcast from rank 0 at start; the grids broadcast before each forward
// when broadcast_buffers; each gradient copied into its bucket scaled by
// 1/world; a bucket launched once its gradients are ready and every earlier
// bucket was launched; a wait for all buckets before the step). The bucket
// plans come from model/'s planner, the one the simulator uses.
#include <cstdint>
#include <optional>
#include <string>

#include "formats/measurement_records.hpp"
#include "comm.hpp"
#include "model/config.hpp"

namespace ks {

struct TrainOptions {
  Workload workload;
  std::int64_t steps = -1;  // optimizer steps in all; -1: the workload's epochs
  int epochs = -1;          // overrides the workload's
  int threads = 1;          // CPU threads per rank
  std::uint64_t seed = 0;
  std::string json, csv, trace;
  std::string checkpoint;             // written at the end (and on SIGINT/SIGTERM)
  std::int64_t checkpoint_every = 0;  // also every N steps
  std::string resume;                 // a checkpoint to continue from
  double inject_delay_s = 0;          // added to every bucket's all-reduce
  bool quiet = false;
  bool print_summary = true;
  std::string command_line;
};

struct TrainResult {
  int exit_code = 0;                    // the process's: 1 when interrupted
  std::optional<TrainSummary> summary;  // rank 0's: what --json's "summary" holds
};

// Runs the training on this process group; rank 0 prints the summary and
// writes the outputs.
TrainResult run_train(const TrainOptions& o, Comm& comm);

// The same on the CUDA backend: the model on this rank's GPU (the node-local
// rank modulo the visible devices), NCCL between ranks bootstrapped over
// `host`. Throws when the build or the machine has no CUDA/NCCL.
TrainResult run_train_cuda(const TrainOptions& o, Comm& host);


// The process's peak resident set since it started or since the last
// reset_peak_rss (VmHWM), bytes.
double peak_rss_bytes();
// Returns the heap's free memory to the system and restarts the peak from
// the resident set now (/proc/self/clear_refs), so that a run after
// another in one process reports its own peak; false where it cannot.
bool reset_peak_rss();

}  // namespace ks
