#pragma once
// What the CPU and the CUDA trainer loops share (measure/trainer.cpp,
// measure/trainer_cuda.cpp) besides the reducer (reducer.hpp) and the
// checkpoints (checkpoint.hpp): the setup (data, model, optimizer, resume,
// DDP's construction broadcast, bucket plans), the records each iteration
// leaves and the report (train_report.cpp). Not a public interface.
#include <chrono>
#include <nlohmann/json.hpp>
#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "adam.hpp"
#include "comm.hpp"
#include "data.hpp"
#include "kan.hpp"
#include "model/buckets.hpp"
#include "formats/trace.hpp"
#include "trainer.hpp"
#include "workbench.hpp"

namespace ks::train_detail {

struct IterRecord {
  std::int64_t step = 0;
  int rank = 0;
  int batch = 0;
  bool first = false;  // DDP's first iteration (one bucket)
  double start_s = 0, end_s = 0, compute_s = 0, comm_s = 0, exposed_s = 0, loss = 0;
  std::vector<double> bucket_s;  // each bucket's all-reduce, from its start (launched, previous done) to its end
};

// What each rank sends rank 0 for the report, as named JSON fields (a NaN
// loss travels as null).
nlohmann::json to_json(const IterRecord& r);
IterRecord iter_record_from_json(const nlohmann::json& j);

struct Setup {
  Setup(Dataset d, KanNet n) : data(std::move(d)), net(std::move(n)) {}
  Dataset data;
  KanNet net;
  Adam adam;
  std::int64_t start_step = 0, batch = 0, ipe = 0, total_steps = 0;  // ipe: iterations per epoch
  DdpBucketPlans plans;
  std::vector<std::size_t> param_elements;  // each parameter's size, definition order
};

// Which samples this rank trains on at a step: DistributedSampler's shard
// of the step's epoch (recomputed when the epoch changes), sliced by batch.
class StepBatches {
 public:
  StepBatches(std::int64_t dataset_size, int world, int rank, std::uint64_t seed, std::int64_t batch, std::int64_t ipe)
      : size_(dataset_size), world_(world), rank_(rank), seed_(seed), batch_(batch), ipe_(ipe) {}
  // The step's sample indices (its batch may be short at an epoch's end).
  struct Slice {
    const std::int64_t* index;
    int size;
  };
  Slice at(std::int64_t step) {
    const int epoch = static_cast<int>(step / ipe_);
    if (epoch != epoch_) {
      // the epoch's fixed cost outside every iteration: the sampler's
      // permutation of the whole dataset, then this rank's shard of it
      const Stopwatch watch;
      shard_ = shard_indices(size_, world_, rank_, seed_, epoch);
      epoch_ = epoch;
      epoch_start_s_.push_back(watch.seconds());
    }
    const std::int64_t lo = (step % ipe_) * batch_;
    const std::int64_t hi = std::min<std::int64_t>(lo + batch_, static_cast<std::int64_t>(shard_.size()));
    return {shard_.data() + lo, static_cast<int>(hi - lo)};
  }

 private:
  std::int64_t size_;
  int world_, rank_;
  std::uint64_t seed_;
  std::int64_t batch_, ipe_;
  std::vector<std::int64_t> shard_;
  int epoch_ = -1;
  std::vector<double> epoch_start_s_;

 public:
  // the time each epoch start took (resuming mid-epoch counts as one)
  const std::vector<double>& epoch_start_s() const { return epoch_start_s_; }
};

// Data, model and optimizer (from --resume when given, every setting that
// decides the arithmetic checked), parameters broadcast from rank 0 over
// `host` (host memory), the bucket plans.
Setup prepare(const TrainOptions& o, Comm& host);

struct ReportContext {
  std::int64_t start_step, step, total_steps, batch;
  double last_loss;
  double device_peak_bytes;  // < 0: no device
  std::string backend;       // the gradient all-reduce's: self, mpi, nccl
  std::vector<double> epoch_start_s;  // this rank's per-epoch fixed costs (StepBatches)
};
// Rank 0 prints the summary and writes --json/--csv/--trace (atomically);
// returns the exit code (1 when interrupted).
TrainResult report(const TrainOptions& o, Comm& host, const KanNet& net, const std::vector<IterRecord>& records,
                   const std::vector<TraceSlice>& slices, const ReportContext& c);

// What every iteration ends with, on both loops: its record kept (a recent
// window only, unless --json or --csv wants them all), the progress line,
// the periodic checkpoint.
void end_step(const TrainOptions& o, int rank, std::int64_t step, std::int64_t total_steps, const IterRecord& rec,
              std::vector<IterRecord>& records, const std::function<void(std::int64_t)>& save_everywhere);

// SIGINT/SIGTERM set a flag (checked between iterations) while active.
struct StopOnSignal {
  bool active;
  void (*old_int)(int) = nullptr;
  void (*old_term)(int) = nullptr;
  explicit StopOnSignal(bool on);
  ~StopOnSignal();
};
bool stop_requested();

}  // namespace ks::train_detail
