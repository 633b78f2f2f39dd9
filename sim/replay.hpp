#pragma once
// The DDP replay: every rank's compute track and communication track for a
// number of iterations, driven by the event core.
#include <cstdint>
#include <string>
#include <vector>

#include "model/buckets.hpp"
#include "model/collectives.hpp"
#include "model/kan_model.hpp"
#include "formats/trace.hpp"

namespace ks {

// One iteration's bucket plan with the cost of each bucket's all-reduce.
struct PlannedBuckets {
  std::vector<Bucket> buckets;
  std::vector<CollectiveEstimate> allreduce;  // per bucket
};

struct ReplayInput {
  int ranks = 1;
  std::vector<Op> ops;                   // one iteration, in execution order
  std::vector<double> op_time_s;         // nominal duration of each op (on the device, with a host track)
  // The host track: where the device runs ops asynchronously behind the
  // host thread that dispatches them (CUDA), op_host_s[i] is op i's host
  // time (Python, the dispatcher, autograd's bookkeeping, the launch) and
  // op_time_s[i] its device time. Per rank and stage the host issues the ops
  // in order; the device runs each once it is issued and the previous one
  // is done; the host runs at most launch_queue_depth device ops ahead of
  // the device (the launch queue). A bucket is ready when the device has
  // run its last gradient's copy. At the end of backward the host does not
  // wait for the all-reduces (NCCL's wait makes the device stream wait): it
  // goes on dispatching the optimizer, which the device runs after the last
  // all-reduce. Empty: one track, an op runs on the host that dispatches it
  // (the CPU backend), op_time_s its whole cost.
  std::vector<double> op_host_s;
  int launch_queue_depth = 1024;
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
  double exposed_s = 0;   // compute idle while a collective is outstanding (with a host track: what that wait
                          // added to the iteration, less what the host's dispatch of the optimizer hid)
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

// The median over ranks of each rank's mean steady iteration time
// (iterations 1 to I-1), the figure a study's bands are made of, equal to
// what replay() gives (sim/point.s simulate_point) but without replaying
// every rank:
//  - When every rank starts its optimizer tail at the end of the
//    iteration's last all-reduce (nothing a rank does after launching the
//    last bucket outlasts that all-reduce), an iteration's global timeline
//    (when each collective starts and ends) depends only on the ranks whose
//    launches come last. A rank's launches are monotone in its start offset
//    (the previous iteration's tail, its jitter factor) and in this
//    iteration's factor, and the interference slowdown is the same for all,
//    so only the ranks on the Pareto front of (offset, factor) can decide
//    it: with the buffer broadcast, which every rank leaves together, just
//    the last to launch the broadcast and the slowest in the main phase.
//  - Those ranks (the union over iterations, a handful) are replayed with
//    their own jitter draws; every other rank's iteration times follow from
//    the iterations' ends: the end of the last all-reduce plus its own tail.
// When the condition does not hold, every rank is replayed; so too when a
// collective progresses only inside MPI (steps > 1), since its next step
// waits for the poll of every rank.
struct IterationMedian {
  double steady_s = 0;
  int ranks_replayed = 0;
  bool reduced = false;  // false: a full replay (why_full says why)
  std::string why_full;
};
// The jitter factors of ranks [0, n) in iterations [0, I), as the replay
// draws them (they depend only on the seed, the sigma, the rank and the
// iteration), kept for replays that draw the same ones: a study's points in
// one interval sample share their seed, so the largest point's table holds
// every smaller one's.
class JitterTable {
 public:
  // rank r's factor in iteration i at [r * iterations + i]
  const double* factors(std::uint64_t seed, double sigma, int ranks, int iterations);
 private:
  std::uint64_t seed_ = 0;
  double sigma_ = -1;
  int iterations_ = 0, ranks_ = 0;
  std::vector<double> f_;
};
IterationMedian replay_iteration_median(const ReplayInput& in, JitterTable* table = nullptr);
// The same figure from a replay of every rank.
IterationMedian replay_iteration_median_full(const ReplayInput& in);

}  // namespace ks
