#pragma once
// The DDP replay: every rank's compute track and communication track for a
// number of iterations, driven by the event core.
#include <cstdint>
#include <string>
#include <vector>

#include "model/buckets.hpp"
#include "model/collectives.hpp"
#include "model/kan_model.hpp"
#include "model/trace.hpp"

namespace ks {

// One iteration's bucket plan with the cost of each bucket's all-reduce.
struct PlannedBuckets {
  std::vector<Bucket> buckets;
  std::vector<CollectiveEstimate> allreduce;  // per bucket
};

struct ReplayInput {
  int ranks = 1;
  std::vector<Op> ops;                   // one iteration, in execution order
  std::vector<double> op_time_s;         // nominal duration of each op
  PlannedBuckets first;                  // plan of the first iteration
  PlannedBuckets steady;                 // plan of every later iteration
  bool broadcast_buffers = true;
  double broadcast_bytes = 0;
  CollectiveEstimate broadcast;
  double host_overhead_s = 0;  // per iteration, after the optimizer step
  double jitter_sigma = 0;     // lognormal sigma of a rank's per-iteration compute factor
  double interference = 0;     // compute slowdown fraction while a collective runs
  std::vector<double> rank_factor;  // per-rank compute slowdown (stragglers); empty: all 1
  int iterations = 5;
  bool include_first = true;  // false: every iteration uses the steady plan
  std::uint64_t seed = 0;
  std::vector<int> trace_ranks;  // ranks whose timelines are recorded
};

struct RankIteration {
  double start_s = 0, end_s = 0;
  double compute_s = 0;   // busy time of the compute track
  double comm_s = 0;      // busy time of the communication track (incl. waiting for peers)
  double exposed_s = 0;   // compute idle while a collective is outstanding
  double iteration_s() const { return end_s - start_s; }
};

struct CollectiveRecord {
  int iteration = 0;
  int bucket = -1;  // -1: the buffer broadcast
  double bytes = 0;
  std::string label;  // algorithm/protocol
  double start_s = 0, end_s = 0;
};

struct ReplayResult {
  std::vector<std::vector<RankIteration>> iterations;  // [iteration][rank]
  std::vector<CollectiveRecord> collectives;
  std::vector<TraceSlice> trace;
  std::uint64_t events = 0;
};

ReplayResult replay(const ReplayInput& in);

}  // namespace ks
