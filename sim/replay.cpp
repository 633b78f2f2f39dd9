#include "sim/replay.hpp"

#include <algorithm>
#include <cstdint>
#include <cmath>
#include <stdexcept>

#include "sim/event_queue.hpp"
#include "sim/huge_pages.hpp"
#include "model/rng.hpp"

namespace ks {
namespace {

enum Stage : std::uint8_t { kPre, kWaitBcast, kMain, kWaitFinal, kTail, kDone };
enum Kind : std::uint32_t { kWorkDone, kCollEnd };
// An event's payload, 32 bits (the event core packs it beside the sequence
// number): the kind in the top bit, the rank or collective below it.
struct Payload {
  std::uint32_t bits;
  static Payload make(Kind kind, int id) { return Payload{(static_cast<std::uint32_t>(kind) << 31) | static_cast<std::uint32_t>(id)}; }
  Kind kind() const { return static_cast<Kind>(bits >> 31); }
  int id() const { return static_cast<int>(bits & 0x7FFFFFFFu); }
};

// How one iteration's work splits on the compute track.
struct IterPlan {
  const PlannedBuckets* pb = nullptr;
  std::vector<int> pre_ops, main_ops, tail_ops;  // op indices
  double pre_work = 0, main_work = 0, tail_work = 0;
  std::vector<double> seg_end;             // cumulative main work at each segment end
  std::vector<std::vector<int>> ready_at;  // buckets complete at each segment end
  // Buckets launch strictly in order once ready: after segment s's end a
  // rank has launched buckets [0, launch_upto[s]), every bucket below that
  // being complete by then (a function of the plan alone, so no rank keeps
  // its own ready flags).
  std::vector<int> launch_upto;
  // What each op advances its stage's work coordinate by: its nominal time
  // with one track; with a host track, how far it moves the device's
  // frontier (two_track_stage).
  std::vector<double> work;
  // A host track (ReplayInput::op_host_s): the host's nominal time at the
  // end of the main stage, and the tail's host-bound length: the most, over
  // its ops j, of the host's time to issue ops 1..j plus the device's for
  // ops j..n (tail_work is the device's alone).
  bool two_track = false;
  double main_host = 0, tail_host = 0;
};

// One stage's ops on a host track and a device track that start together
// at 0: the host issues op i after op i-1 (and, for a device op, once the
// device op launch_queue_depth launches back is done: the launch queue);
// the device runs it once issued and once the previous one is done. Each
// op's work is how far it moves the frontier (when both tracks are past
// it); returns the host's time at the stage's end.
double two_track_stage(const ReplayInput& in, const std::vector<int>& idx, std::vector<double>& work) {
  const std::size_t depth = static_cast<std::size_t>(std::max(1, in.launch_queue_depth));
  std::vector<double> ring(std::min(depth, idx.size()), 0.0);  // device ends of the last `depth` device ops
  std::size_t launched = 0;
  double host = 0, frontier = 0;
  for (int i : idx) {
    const double d = in.op_time_s[static_cast<std::size_t>(i)];
    const bool device = d > 0;
    if (device && launched >= depth) host = std::max(host, ring[launched % depth]);
    host += in.op_host_s[static_cast<std::size_t>(i)];
    const double before = frontier;
    frontier = std::max(frontier, host) + d;
    if (device) ring[launched++ % depth] = frontier;
    work[static_cast<std::size_t>(i)] = frontier - before;
  }
  return host;
}

// The tail with a host track: its device time alone (the sum), and its
// host-bound length C = max_j (h_1 + ... + h_j + d_j + ... + d_n), so that a
// tail whose device is free from T0 and whose host starts issuing at H0
// ends at max(T0 + sum, H0 + C) (the launch queue does not bind in the
// tail: Adam's ops for a KAN are far fewer than its depth).
void two_track_tail(const ReplayInput& in, const std::vector<int>& idx, double& device_sum, double& host_bound) {
  device_sum = 0;
  for (int i : idx) device_sum += in.op_time_s[static_cast<std::size_t>(i)];
  double host = 0, rest = device_sum;
  host_bound = 0;
  for (int i : idx) {
    host += in.op_host_s[static_cast<std::size_t>(i)];
    host_bound = std::max(host_bound, host + rest);
    rest -= in.op_time_s[static_cast<std::size_t>(i)];
  }
}

// Whether some collective of the plan moves in steps (progress by polls).
bool polls_needed(const ReplayInput& in, const PlannedBuckets& pb) {
  if (in.broadcast_buffers && in.broadcast.steps > 1) return true;
  return std::any_of(pb.allreduce.begin(), pb.allreduce.end(), [](const CollectiveEstimate& e) { return e.steps > 1; });
}

IterPlan make_plan(const ReplayInput& in, const PlannedBuckets& pb) {
  IterPlan p;
  p.pb = &pb;
  const auto& ops = in.ops;
  std::vector<int> ready_pos;  // per parameter: position in main_ops of its bucket copy
  for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
    const Phase ph = ops[i].phase;
    if (ph == Phase::zero_grad) {
      p.pre_ops.push_back(i);
    } else if (ph == Phase::copy_back || ph == Phase::optimizer) {
      p.tail_ops.push_back(i);
    } else {
      if (ops[i].ready_param >= 0) {
        if (static_cast<int>(ready_pos.size()) <= ops[i].ready_param) ready_pos.resize(ops[i].ready_param + 1, -1);
        ready_pos[ops[i].ready_param] = static_cast<int>(p.main_ops.size());
      }
      p.main_ops.push_back(i);
    }
  }
  p.work = in.op_time_s;
  p.two_track = !in.op_host_s.empty();
  if (p.two_track) {
    if (in.op_host_s.size() != in.op_time_s.size()) throw std::invalid_argument("op_host_s needs one host time per op");
    two_track_stage(in, p.pre_ops, p.work);
    p.main_host = two_track_stage(in, p.main_ops, p.work);
    two_track_tail(in, p.tail_ops, p.tail_work, p.tail_host);
  } else {
    for (int i : p.tail_ops) p.tail_work += p.work[static_cast<std::size_t>(i)];
  }
  for (int i : p.pre_ops) p.pre_work += p.work[static_cast<std::size_t>(i)];
  std::vector<double> cum(p.main_ops.size() + 1, 0.0);
  for (std::size_t j = 0; j < p.main_ops.size(); ++j) cum[j + 1] = cum[j] + p.work[static_cast<std::size_t>(p.main_ops[j])];
  p.main_work = cum.back();
  // The segments end where a bucket completes, after the copy of its
  // last-ready gradient (-1: a poll, no bucket).
  std::vector<std::pair<double, int>> ends;  // (main work at the end, bucket)
  for (int b = 0; b < static_cast<int>(pb.buckets.size()); ++b) {
    int pos = -1;
    for (int prm : pb.buckets[b].params) {
      if (prm >= static_cast<int>(ready_pos.size()) || ready_pos[prm] < 0)
        throw std::logic_error("parameter without a gradient-ready op");
      pos = std::max(pos, ready_pos[prm]);
    }
    ends.emplace_back(cum[pos + 1], b);
  }
  // With collectives that progress only inside MPI, also where the rank
  // polls them: after each layer's backward and its gradient copies (the
  // trainer's MPI_Test), i.e. before the first backward op of every layer.
  if (polls_needed(in, pb)) {
    int layer = -1;
    bool any = false;
    for (std::size_t j = 0; j < p.main_ops.size(); ++j) {
      const Op& o = ops[p.main_ops[j]];
      if (o.phase != Phase::backward) continue;
      if (!any || o.layer != layer) ends.emplace_back(cum[j], -1);
      any = true;
      layer = o.layer;
    }
  }
  std::sort(ends.begin(), ends.end());
  for (const auto& [at, b] : ends) {
    if (p.seg_end.empty() || p.seg_end.back() != at) {
      p.seg_end.push_back(at);
      p.ready_at.emplace_back();
    }
    if (b >= 0) p.ready_at.back().push_back(b);
  }
  if (p.seg_end.empty() || p.seg_end.back() < p.main_work) {
    p.seg_end.push_back(p.main_work);
    p.ready_at.emplace_back();
  }
  std::vector<char> ready(pb.buckets.size(), 0);
  int next = 0;
  for (const auto& at : p.ready_at) {
    for (int b : at) ready[static_cast<std::size_t>(b)] = 1;
    while (next < static_cast<int>(ready.size()) && ready[static_cast<std::size_t>(next)]) ++next;
    p.launch_upto.push_back(next);
  }
  return p;
}

// Everything an event of rank r touches, in one cache line: at tens of
// thousands of ranks the events visit the ranks in no order and each
// separate per-rank array, or a second line, cost a cache miss per event
// (issue 29). The iteration's compute and exposed times are summed here and
// written to the result once, when the iteration ends. What only a traced
// rank needs (its slot, its position in the stage's work) is kept apart.
struct alignas(64) RankState {
  double factor = 1.0;  // this iteration's jitter
  union {
    double piece_start = 0;  // computing: when the current piece of work began
    double wait_start;       // in a wait stage: when the wait began
  };
  double work_left = 0;   // nominal seconds of work left in the current piece
  double compute_s = 0;   // this iteration's busy time so far
  double exposed_s = 0;   // this iteration's waits so far
  double main_start = 0;  // when this iteration's main stage began (a host track's tail starts from it)
  std::uint32_t pending = 0;  // the current piece's event (sequence numbers fit 32 bits)
  int iter = 0;
  std::uint16_t seg = 0, next_launch = 0;  // at most kMaxBuckets
  Stage stage = kPre;
  bool slowed = false;       // the current piece runs at 1 + interference
  bool launch_tail = false;  // the current piece is the last launches' CPU time
  bool traced = false;       // trace_slot_ holds its slot
};
static_assert(sizeof(RankState) == 64, "a rank's state is one cache line");
constexpr std::size_t kMaxBuckets = 0xFFFF;  // RankState's 16-bit segment and launch counters

struct Piece {
  int iter;
  Stage stage;
  double t0, t1, w0, w1;
};

class Sim {
 public:
  // `ids`: the run's ranks to replay (replayed rank j draws the jitter and
  // straggler factor of rank ids[j]); null: all in.ranks of them.
  // `plans`: the first and steady plans when the caller has made them.
  Sim(const ReplayInput& in, const std::vector<int>* ids, const IterPlan* plans = nullptr)
      : in_(in), n_(ids ? static_cast<int>(ids->size()) : in.ranks), ids_(ids), rng_(in.seed) {
    if (n_ < 1) throw std::invalid_argument("replay needs at least one rank");
    if (in.iterations < 1) throw std::invalid_argument("replay needs at least one iteration");
    if (!plans) {
      own_plans_[0] = make_plan(in, in.first);
      own_plans_[1] = make_plan(in, in.steady);
      plans = own_plans_;
    }
    plans_ = plans;
    for (int k = 0; k < 2; ++k)
      if (plans_[k].pb && (plans_[k].pb->buckets.size() > kMaxBuckets || plans_[k].seg_end.size() >= kMaxBuckets))
        throw std::invalid_argument("replay: more than 65,535 buckets or compute segments in an iteration");
    // Global collective sequence: per iteration [broadcast], buckets in order.
    for (int i = 0; i < in.iterations; ++i) {
      const IterPlan& p = plan(i);
      coll_offset_.push_back(static_cast<int>(colls_.size()));
      if (in.broadcast_buffers) add_coll(i, -1, in.broadcast_bytes, in.broadcast);
      for (std::size_t b = 0; b < p.pb->buckets.size(); ++b)
        add_coll(i, static_cast<int>(b), p.pb->buckets[b].bytes, p.pb->allreduce[b]);
    }
    // One row per collective of an iteration, reused by the next: a rank
    // starts iteration i + 1 only once the last collective of i has ended
    // (and been read), so at most one iteration's rows are live; with a row
    // per collective of the replay, 5 iterations at 65,536 ranks took 34 MB
    // (issue 60). Every entry is written by its rank's launch before the
    // collective can end and read it.
    std::size_t per_iter = 0;
    for (int i = 0; i < in.iterations; ++i)
      per_iter = std::max<std::size_t>(per_iter, static_cast<std::size_t>(last_coll(i) - coll_offset_[i] + 1));
    launch_time_.resize(per_iter * static_cast<std::size_t>(n_));
    waiting_flag_.assign(static_cast<std::size_t>(n_), 0);
    ranks_.resize(n_);
    main_computing_.assign((static_cast<std::size_t>(n_) + 63) / 64, 0);
    comm_acc_.assign(static_cast<std::size_t>(n_), 0.0);
    for (int r : in.trace_ranks) {
      if (r >= 0 && r < n_ && !ranks_[r].traced) {
        ranks_[r].traced = true;
        if (trace_slot_.empty()) trace_slot_.assign(static_cast<std::size_t>(n_), -1);
        trace_slot_[static_cast<std::size_t>(r)] = static_cast<int>(pieces_.size());
        pieces_.emplace_back();
        trace_pos_.push_back(0);
        traced_.push_back(r);
      }
    }
    traced_in_order_ = traced_;
    std::sort(traced_in_order_.begin(), traced_in_order_.end());
    result_.iterations.assign(in.iterations, std::vector<RankIteration>(n_));
    // The near heap holds a bucket's events or a few buckets' (58 at most at
    // 65,536 ranks in `bench sim`); it grows if a batch needs more. A
    // reserve of 2 per rank had made the heap a 6 MiB block with a huge
    // page resident for those few (issue 60).
    q_.reserve(std::min<std::size_t>(static_cast<std::size_t>(n_) * 2 + 16, 4096));
  }

  ReplayResult run() {
    for (int r = 0; r < n_; ++r) start_iteration(r, 0.0);
    while (!q_.empty()) {
      const auto e = q_.pop();
      // the next event's rank, fetched while this one is handled (the
      // ranks come in no order: at scale each is a cache miss)
      if (Payload next{}; q_.peek(next) && next.kind() == kWorkDone) prefetch_rank(next);
      // and those of the events a bucket ahead, when the queue moves on
      q_.visit_upcoming([this](Payload p) {
        if (p.kind() == kWorkDone) prefetch_rank(p);
      });
      if (e.payload.kind() == kWorkDone) work_done(e.payload.id(), e.time);
      else step_end(e.payload.id(), e.time);
    }
    for (int r = 0; r < n_; ++r)
      if (ranks_[r].stage != kDone) throw std::logic_error("replay deadlocked");
    result_.events = q_.popped();
    // (a reduced replay, for its timeline only, leaves the labels out)
    // a collective's time as the trainers count it: from its first step, or
    // the end of the one before it if later (they end in order)
    for (std::size_t g = 0; g < colls_.size(); ++g) {
      const Collective& c = colls_[g];
      const double start = g > 0 ? std::max(c.start_s, colls_[g - 1].end_s) : c.start_s;
      result_.collectives.push_back(CollectiveRecord{c.iter, c.bucket, c.bytes, ids_ ? std::string() : c.est->label(), start, c.end_s});
    }
    build_trace();
    return std::move(result_);
  }

 private:
  void prefetch_rank(Payload p) const {
    const RankState* ns = &ranks_[static_cast<std::size_t>(p.id())];
    __builtin_prefetch(ns);
    __builtin_prefetch(reinterpret_cast<const char*>(ns) + 64);
  }
  const IterPlan& plan(int iter) const { return (iter == 0 && in_.include_first) ? plans_[0] : plans_[1]; }

  void add_coll(int iter, int bucket, double bytes, const CollectiveEstimate& est) {
    Collective c;
    c.iter = iter;
    c.bucket = bucket;
    c.bytes = bytes;
    c.duration_s = est.time_s;
    c.steps = std::max(1, est.steps);
    c.est = &est;
    colls_.push_back(std::move(c));
  }
  // collective g's launch times, one per rank (the row of its place in its iteration)
  double* launch_row(int g) {
    return &launch_time_[static_cast<std::size_t>(g - coll_offset_[colls_[g].iter]) * static_cast<std::size_t>(n_)];
  }
  int coll_index(int iter, int bucket) const { return coll_offset_[iter] + (in_.broadcast_buffers ? 1 : 0) + bucket; }
  int last_coll(int iter) const {
    return iter + 1 < static_cast<int>(coll_offset_.size()) ? coll_offset_[iter + 1] - 1 : static_cast<int>(colls_.size()) - 1;
  }

  // ---- compute track
  void schedule_piece(int r, double now) {
    RankState& s = ranks_[r];
    s.slowed = s.stage == kMain && comm_active_;
    double dur = s.work_left * s.factor * mult(s);
    if (s.stage == kTail) dur += in_.host_overhead_s;
    set_main_computing(r, s.stage == kMain);
    s.pending = static_cast<std::uint32_t>(q_.schedule(now + dur, Payload::make(kWorkDone, r)));
  }
  void set_main_computing(int r, bool on) {
    const auto i = static_cast<std::size_t>(r);
    const std::uint64_t bit = std::uint64_t{1} << (i % 64);
    main_computing_[i / 64] = on ? (main_computing_[i / 64] | bit) : (main_computing_[i / 64] & ~bit);
  }
  // the current slowdown (interference); 1.0 exactly when none
  double mult(const RankState& s) const { return s.slowed ? 1.0 + in_.interference : 1.0; }
  // a stage begins: its work position (kept for traced ranks only) is 0
  void stage_pos_reset(const RankState& s, int r) {
    if (s.traced) trace_pos_[static_cast<std::size_t>(trace_slot_[static_cast<std::size_t>(r)])] = 0;
  }
  void begin_work(int r, double work, double now) {
    RankState& s = ranks_[r];
    s.piece_start = now;
    s.work_left = work;
    schedule_piece(r, now);
  }
  // Account for the piece that ends now; returns the work it did.
  void close_piece(int r, double now, double work_done) {
    RankState& s = ranks_[r];
    s.compute_s += now - s.piece_start;
    if (s.traced) {
      const auto slot = static_cast<std::size_t>(trace_slot_[static_cast<std::size_t>(r)]);
      double t1 = now;
      if (s.stage == kTail) t1 -= in_.host_overhead_s;
      double& pos = trace_pos_[slot];
      pieces_[slot].push_back(Piece{s.iter, s.stage, s.piece_start, t1, pos, pos + work_done});
      pos += work_done;
    }
  }
  // The slowdown changed while r computes: split its piece and reschedule.
  void reschedule(int r, double now) {
    RankState& s = ranks_[r];
    const double done = std::min(s.work_left, (now - s.piece_start) / (s.factor * mult(s)));
    close_piece(r, now, done);
    s.work_left -= done;
    q_.cancel(s.pending);
    s.piece_start = now;
    schedule_piece(r, now);
  }

  void start_iteration(int r, double now) {
    RankState& s = ranks_[r];
    result_.iterations[s.iter][r].start_s = now;
    const int id = ids_ ? (*ids_)[static_cast<std::size_t>(r)] : r;
    s.factor = rng_.lognormal_mean_one(in_.jitter_sigma, static_cast<std::uint64_t>(id), static_cast<std::uint64_t>(s.iter));
    if (!in_.rank_factor.empty()) s.factor *= in_.rank_factor.at(static_cast<std::size_t>(id));
    s.stage = kPre;
    stage_pos_reset(s, r);
    s.next_launch = 0;
    s.compute_s = 0;
    s.exposed_s = 0;
    begin_work(r, plan(s.iter).pre_work, now);
  }

  void enter_main(int r, double now) {
    RankState& s = ranks_[r];
    s.stage = kMain;
    s.seg = 0;
    stage_pos_reset(s, r);
    s.main_start = now;
    begin_work(r, plan(s.iter).seg_end[0], now);
  }

  // Rank r starts waiting inside MPI (for the broadcast or the all-reduces).
  void enter_wait(int r, Stage stage, double now) {
    ranks_[r].stage = stage;
    ranks_[r].wait_start = now;
    waiting_flag_[static_cast<std::size_t>(r)] = 1;
    ++waiting_;
  }

  void end_wait(int r, double now, const char* what) {
    RankState& s = ranks_[r];
    waiting_flag_[static_cast<std::size_t>(r)] = 0;
    --waiting_;
    s.exposed_s += now - s.wait_start;
    if (s.traced && now > s.wait_start) {
      result_.trace.push_back(TraceSlice{r, 0, s.iter, what, "wait", s.wait_start, now, 0});
    }
  }

  void work_done(int r, double now) {
    RankState& s = ranks_[r];
    set_main_computing(r, false);
    close_piece(r, now, s.work_left);
    s.work_left = 0;
    const IterPlan& p = plan(s.iter);
    switch (s.stage) {
      case kPre:
        if (in_.broadcast_buffers) {
          enter_wait(r, kWaitBcast, now);
          launch(r, coll_offset_[s.iter], now);
          poll(r, now);
        } else {
          enter_main(r, now);
        }
        break;
      case kMain: {
        if (s.launch_tail) {  // the last launches' CPU time is done: wait
          s.launch_tail = false;
          enter_wait(r, kWaitFinal, now);
          if (colls_[last_coll(s.iter)].ended) finish_wait_final(r, now);
          else poll(r, now);
          break;
        }
        // Launch strictly in bucket order. Each launch call holds the
        // compute track for its own CPU time (MPI's non-blocking initiation).
        double launch_cpu = 0;
        const int upto = p.launch_upto[static_cast<std::size_t>(s.seg)];
        while (s.next_launch < upto) {
          const int it = s.iter;
          const int b = s.next_launch++;
          launch(r, coll_index(it, b), now);
          launch_cpu += p.pb->allreduce[static_cast<std::size_t>(b)].launch_s;
        }
        // the rank is inside MPI here (its launches, the trainer's poll)
        poll(r, now);
        if (s.seg + 1 < static_cast<int>(p.seg_end.size())) {
          ++s.seg;
          begin_work(r, p.seg_end[s.seg] - p.seg_end[s.seg - 1] + launch_cpu / s.factor, now);
        } else if (launch_cpu > 0) {
          // the last launches: their CPU time before the final wait
          ++s.seg;
          s.launch_tail = true;
          begin_work(r, launch_cpu / s.factor, now);
        } else {
          enter_wait(r, kWaitFinal, now);
          if (colls_[last_coll(s.iter)].ended) finish_wait_final(r, now);
        }
        break;
      }
      case kTail: {
        RankIteration& ri = result_.iterations[s.iter][r];
        ri.end_s = now;
        ri.compute_s = s.compute_s;
        ri.exposed_s = s.exposed_s;
        ri.comm_s = comm_acc_[static_cast<std::size_t>(r)];  // every collective of the iteration has ended
        comm_acc_[static_cast<std::size_t>(r)] = 0;
        if (s.iter + 1 < in_.iterations) {
          ++s.iter;
          start_iteration(r, now);
        } else {
          s.stage = kDone;
        }
        break;
      }
      default:
        throw std::logic_error("work finished in a waiting stage");
    }
  }

  void finish_wait_final(int r, double now) {
    RankState& s = ranks_[r];
    end_wait(r, now, "wait for all-reduce");
    s.stage = kTail;
    stage_pos_reset(s, r);
    const IterPlan& p = plan(s.iter);
    double work = p.tail_work;
    if (p.two_track) {
      // a host track: the host has issued the tail's ops since it left the
      // main stage; the device runs them from now (two_track_tail). What
      // the wait cost is what it added to the iteration: the host's
      // dispatch of the tail hid the rest of it.
      const double host_at = s.main_start + p.main_host * s.factor;
      work = std::max(work, (host_at - now) / s.factor + p.tail_host);
      const double unwaited = std::max(p.tail_work, (host_at - s.wait_start) / s.factor + p.tail_host);
      s.exposed_s -= std::min(now - s.wait_start, (unwaited - work) * s.factor);
    }
    begin_work(r, work, now);
  }

  // ---- communication track
  // Every collective that all ranks have launched is in flight; their steps
  // share one wire and run one at a time (a pair of all-reduces waited for
  // at once takes at least as long as one after another: `bench overlap`),
  // but a rank's entry into MPI (a launch, a poll, a wait) advances every
  // collective in flight, as libnbc's progress does with each outstanding
  // schedule. Collectives end in order (the trainers' FIFO accounting): one
  // whose steps are done ends when the one before it has.
  void launch(int r, int g, double now) {
    launch_row(g)[r] = now;
    if (++colls_[g].launched == n_) {
      poll(r, now);  // the launch is inside MPI: it first advances what is in flight
      start_coll(g, now);
    }
  }

  void set_comm_active(bool active, double now) {
    if (comm_active_ == active) return;
    comm_active_ = active;
    if (in_.interference <= 0) return;
    q_.begin_batch();
    for (std::size_t w = 0; w < main_computing_.size(); ++w)  // the ranks in ascending order
      for (std::uint64_t bits = main_computing_[w]; bits != 0; bits &= bits - 1)
        reschedule(static_cast<int>(w * 64 + static_cast<std::size_t>(__builtin_ctzll(bits))), now);
    q_.end_batch();
  }

  // A collective's first step needs no poll: the launch posted it (libnbc
  // starts its first round in MPI_Iallreduce); it runs once the wire is free.
  void start_coll(int g, double now) {
    inflight_.push_back(g);  // full launches come in order: ascending
    colls_[g].ready = true;
    dispatch(now);
  }

  // The wire, if free, runs the next step of the oldest collective whose
  // step is ready. A collective moves in steps, each an equal share of its
  // time (one step: it progresses on its own); after a step the next waits
  // until every rank has been inside MPI since it ended: at once for the
  // ranks waiting, at the next poll or launch for those computing.
  // Interference (the compute lost while data moves) applies while a step
  // runs, not while the wire is idle.
  void dispatch(double now) {
    if (wire_ >= 0) return;
    for (const int g : inflight_) {
      Collective& c = colls_[g];
      if (!c.ready) continue;
      c.ready = false;
      wire_ = g;
      // (the two orders of scheduling and rescheduling the computing ranks
      // are those of the one-at-a-time replay, whose event ties they keep)
      if (c.steps_done == 0) {
        c.start_s = now;
        q_.schedule(now + c.duration_s / c.steps, Payload::make(kCollEnd, g));
        set_comm_active(true, now);
      } else {
        set_comm_active(true, now);
        q_.schedule(now + c.duration_s / c.steps, Payload::make(kCollEnd, g));
      }
      return;
    }
    set_comm_active(false, now);
  }
  void step_end(int g, double now) {
    Collective& c = colls_[g];
    wire_ = -1;
    if (++c.steps_done >= c.steps) {
      coll_finished(g, now);
      return;
    }
    if (waiting_ == n_) {
      // every rank waits in MPI: the rest follow back to back, one event
      wire_ = g;
      q_.schedule(now + c.duration_s / c.steps * (c.steps - c.steps_done), Payload::make(kCollEnd, g));
      c.steps_done = c.steps - 1;
      return;
    }
    c.step_pending = true;
    c.in_mpi = waiting_flag_;
    c.in_mpi_count = waiting_;
    dispatch(now);
  }
  // Rank r is inside MPI now (a launch, a poll, or the start of a wait).
  void poll(int r, double now) {
    bool any = false;
    for (const int g : inflight_) {
      Collective& c = colls_[g];
      if (!c.step_pending || c.in_mpi[static_cast<std::size_t>(r)]) continue;
      c.in_mpi[static_cast<std::size_t>(r)] = 1;
      if (++c.in_mpi_count == n_) {
        c.step_pending = false;
        c.ready = true;
        any = true;
      }
    }
    if (any) dispatch(now);
  }

  void coll_finished(int g, double now) {
    Collective& c = colls_[g];
    c.finished = true;
    std::vector<char>().swap(c.in_mpi);
    inflight_.erase(std::find(inflight_.begin(), inflight_.end(), g));
    if (g > 0 && !colls_[g - 1].ended) {  // ends with the one before it
      dispatch(now);
      return;
    }
    int last = g;
    while (true) {
      record_end(last, now);
      if (last + 1 >= static_cast<int>(colls_.size()) || !colls_[last + 1].finished) break;
      ++last;
    }
    dispatch(now);  // the slowdown stays as it is when another step follows
    for (int k = g; k <= last; ++k) wake_ranks(k, now);
  }

  void record_end(int g, double now) {
    Collective& c = colls_[g];
    c.ended = true;
    c.end_s = now;
    const int it = c.iter;
    const double prev_end = g > 0 ? colls_[g - 1].end_s : 0.0;
    const std::string name = traced_.empty() ? std::string()
                             : c.bucket < 0  ? "broadcast buffers"
                                             : "allreduce bucket " + std::to_string(c.bucket);
    // every rank's share, without touching its state (at scale each rank's
    // state is a cache miss, and this runs once per collective)
    const double* launched_at = launch_row(g);
    for (int r = 0; r < n_; ++r) comm_acc_[static_cast<std::size_t>(r)] += now - std::max(launched_at[r], prev_end);
    for (int r : traced_in_order_) {
      const double busy_from = std::max(launched_at[r], prev_end);
      const double start = std::max(c.start_s, busy_from);
      if (start > busy_from)
        result_.trace.push_back(TraceSlice{r, 1, it, "wait for peers: " + name, "comm_wait", busy_from, start, c.bytes});
      result_.trace.push_back(TraceSlice{r, 1, it, name + " (" + c.est->label() + ")", "comm", start, now, c.bytes});
    }
  }

  void wake_ranks(int g, double now) {
    const Collective& c = colls_[g];
    const int it = c.iter;
    const bool is_bcast = c.bucket < 0;
    const bool is_last = g == last_coll(it);
    if (!is_bcast && !is_last) return;  // no rank waits on this one alone
    for (int r = 0; r < n_; ++r) {
      RankState& s = ranks_[r];
      if (s.iter != it) continue;
      if (is_bcast && s.stage == kWaitBcast) {
        end_wait(r, now, "wait for broadcast");
        enter_main(r, now);
      } else if (is_last && s.stage == kWaitFinal) {
        finish_wait_final(r, now);
      }
    }
  }

  // ---- trace: map each op's nominal work interval onto wall time
  void build_trace() {
    const auto& ops = in_.ops;
    for (std::size_t slot = 0; slot < traced_.size(); ++slot) {
      const int r = traced_[slot];
      const auto& pcs = pieces_[slot];
      std::size_t i = 0;
      while (i < pcs.size()) {
        std::size_t j = i;
        while (j < pcs.size() && pcs[j].iter == pcs[i].iter && pcs[j].stage == pcs[i].stage) ++j;
        const IterPlan& p = plan(pcs[i].iter);
        const std::vector<int>& idx = pcs[i].stage == kPre ? p.pre_ops : pcs[i].stage == kMain ? p.main_ops : p.tail_ops;
        // Main work restarts at each segment but work_pos is cumulative.
        double w = 0;
        std::size_t k = i;
        auto time_at = [&](double work) {
          while (k + 1 < j && pcs[k].w1 < work) ++k;
          const Piece& pc = pcs[k];
          if (pc.w1 <= pc.w0) return pc.t1;
          return pc.t0 + (std::min(work, pc.w1) - pc.w0) / (pc.w1 - pc.w0) * (pc.t1 - pc.t0);
        };
        for (int o : idx) {
          const double w_end = w + p.work[static_cast<std::size_t>(o)];
          if (ops[o].host_only) {  // no device time: no slice (with a host track, the device waits for the host)
            w = w_end;
            continue;
          }
          const double t0 = time_at(w), t1 = time_at(w_end);
          result_.trace.push_back(TraceSlice{r, 0, pcs[i].iter, ops[o].name, to_string(ops[o].phase), t0, t1, 0});
          w = w_end;
        }
        if (pcs[i].stage == kTail && in_.host_overhead_s > 0) {
          const double t = pcs[j - 1].t1;
          result_.trace.push_back(TraceSlice{r, 0, pcs[i].iter, "host overhead", "host", t, t + in_.host_overhead_s, 0});
        }
        i = j;
      }
    }
  }

  const ReplayInput& in_;
  int n_;
  const std::vector<int>* ids_;
  Rng rng_;
  IterPlan own_plans_[2];
  const IterPlan* plans_ = nullptr;  // first, steady
  EventQueue<Payload> q_;
  HugeVector<RankState> ranks_;
  // per rank: computing in the main stage (what a change of speed
  // reschedules), scanned without touching every rank's state
  std::vector<std::uint64_t> main_computing_;  // a bit a rank
  // per rank: this iteration's communication time so far, summed here (one
  // double a rank, read in order at each collective's end) and written to
  // the result when the iteration ends
  std::vector<double> comm_acc_;
  // The global collective sequence: per iteration [broadcast], buckets in order.
  struct Collective {
    int iter = 0;
    int bucket = -1;  // -1: the buffer broadcast
    double bytes = 0, duration_s = 0;
    const CollectiveEstimate* est = nullptr;  // its algorithm/protocol
    int launched = 0;  // ranks that launched it
    bool ended = false;
    int steps = 1, steps_done = 0;
    bool step_pending = false;  // a step ended; the next waits for every rank to enter MPI
    bool ready = false;         // its next step may run (waits for the wire)
    bool finished = false;      // its steps are done (it ends once the one before it has)
    std::vector<char> in_mpi;   // while a step is pending: per rank, inside MPI since it ended
    int in_mpi_count = 0;
    double start_s = 0, end_s = 0;  // its first step's start; its end
  };
  std::vector<Collective> colls_;
  std::vector<int> coll_offset_;       // per iteration: its first collective
  UninitHugeVector<double> launch_time_;  // [collective's place in its iteration * ranks + rank]
  bool comm_active_ = false;
  int wire_ = -1;              // the collective whose step runs (one at a time)
  std::vector<int> inflight_;  // launched by every rank, steps left: ascending
  int waiting_ = 0;  // ranks in a wait stage (inside MPI)
  std::vector<char> waiting_flag_;  // per rank: in a wait stage (in_wait of its state, kept apart)
  std::vector<int> traced_;
  std::vector<int> traced_in_order_;  // traced_, ascending
  std::vector<int> trace_slot_;       // per rank (when any is traced): its slot in pieces_, -1: none
  std::vector<double> trace_pos_;     // per slot: nominal work done in the current stage so far
  std::vector<std::vector<Piece>> pieces_;
  ReplayResult result_;
};

}  // namespace

ReplayResult replay(const ReplayInput& in) { return Sim(in, nullptr).run(); }

namespace {
// The median of v (reordered): the middle value, or the mean of the two
// middle ones, the same as statistics' median() without the full sort.
double median_in_place(std::vector<double>& v) {
  const std::size_t n = v.size();
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(n / 2);
  std::nth_element(v.begin(), mid, v.end());
  if (n % 2) return *mid;
  return 0.5 * (*std::max_element(v.begin(), mid) + *mid);
}

// Why the reduction does not hold for plan p ("" when it does): a rank must
// reach its final wait before the iteration's last all-reduce can end.
std::string reduction_blocker(const ReplayInput& in, const IterPlan& p) {
  const auto& ar = p.pb->allreduce;
  const int nb = static_cast<int>(ar.size());
  if (nb == 0) return "no buckets";
  if (p.ready_at.back().empty()) return "compute after the last bucket is ready";
  // the launch CPU time spent after the last launches (buckets launch in order)
  std::vector<char> ready(static_cast<std::size_t>(nb), 0);
  int next = 0;
  double last_cpu = 0;
  for (std::size_t seg = 0; seg < p.ready_at.size(); ++seg) {
    for (int b : p.ready_at[seg]) ready[static_cast<std::size_t>(b)] = 1;
    double cpu = 0;
    while (next < nb && ready[static_cast<std::size_t>(next)]) cpu += ar[static_cast<std::size_t>(next++)].launch_s;
    if (seg + 1 == p.ready_at.size()) last_cpu = cpu;
  }
  if (last_cpu > 0 && ar.back().time_s < last_cpu * std::max(1.0, 1.0 + in.interference))
    return "the last launches' CPU time can outlast the last all-reduce";
  // the tail is its device time when the host, already issuing it at the
  // main stage's end (main_work - main_host ahead of the device), cannot
  // outlast the device: tail_host <= tail_work + that lead
  if (p.two_track && p.tail_host > p.tail_work + (p.main_work - p.main_host))
    return "the host's dispatch of the optimizer can outlast its device time after the last all-reduce";
  return "";
}
}  // namespace

IterationMedian replay_iteration_median_full(const ReplayInput& in) {
  const int N = in.ranks, I = in.iterations;
  if (N < 1 || I < 2) throw std::invalid_argument("an iteration median needs a rank and two iterations");
  const ReplayResult res = replay(in);
  std::vector<double> it(static_cast<std::size_t>(N));
  for (int r = 0; r < N; ++r) {
    double a = 0;
    for (int i = 1; i < I; ++i) a += res.iterations[i][r].iteration_s();
    it[static_cast<std::size_t>(r)] = a / (I - 1);
  }
  IterationMedian out;
  out.steady_s = median_in_place(it);
  out.ranks_replayed = N;
  out.why_full = "asked for";
  return out;
}

const double* JitterTable::factors(std::uint64_t seed, double sigma, int ranks, int iterations) {
  if (seed != seed_ || sigma != sigma_ || iterations != iterations_) {
    seed_ = seed;
    sigma_ = sigma;
    iterations_ = iterations;
    ranks_ = 0;
    f_.clear();
  }
  if (ranks > ranks_) {
    const Rng rng(seed);
    f_.resize(static_cast<std::size_t>(ranks) * iterations);
    for (int r = ranks_; r < ranks; ++r)
      for (int i = 0; i < iterations; ++i)
        f_[static_cast<std::size_t>(r) * iterations + i] =
            rng.lognormal_mean_one(sigma, static_cast<std::uint64_t>(r), static_cast<std::uint64_t>(i));
    ranks_ = ranks;
  }
  return f_.data();
}

IterationMedian replay_iteration_median(const ReplayInput& in, JitterTable* table) {
  const int N = in.ranks, I = in.iterations;
  if (N < 1 || I < 2) throw std::invalid_argument("an iteration median needs a rank and two iterations");
  IterationMedian out;
  auto full = [&](std::string why) {
    IterationMedian m = replay_iteration_median_full(in);
    m.why_full = std::move(why);
    return m;
  };
  const IterPlan plans[2] = {make_plan(in, in.first), make_plan(in, in.steady)};
  const IterPlan &p0 = plans[0], &p1 = plans[1];
  auto plan = [&](int i) -> const IterPlan& { return (i == 0 && in.include_first) ? p0 : p1; };
  for (const IterPlan* p : {&p0, &p1}) {
    if (p == &p0 && !in.include_first) continue;
    // a step waits for every rank's next poll: every rank's timeline counts
    if (polls_needed(in, *p->pb)) return full("collectives progress only inside MPI (steps)");
    if (std::string why = reduction_blocker(in, *p); !why.empty()) return full(why);
  }
  // Every rank's factor in every iteration, drawn as the replay draws them.
  JitterTable own;
  const double* jitter = (table ? table : &own)->factors(in.seed, in.jitter_sigma, N, I);
  std::vector<double> f;  // with the stragglers' factors
  if (!in.rank_factor.empty()) {
    f.assign(jitter, jitter + static_cast<std::size_t>(N) * I);
    for (int r = 0; r < N; ++r)
      for (int i = 0; i < I; ++i) f[static_cast<std::size_t>(r) * I + i] *= in.rank_factor.at(static_cast<std::size_t>(r));
    jitter = f.data();
  }
  auto factor = [&](int i, int r) { return jitter[static_cast<std::size_t>(r) * I + i]; };
  // The ranks that can decide some iteration's timeline.
  std::vector<char> keep(static_cast<std::size_t>(N), 0);
  std::vector<int> order(static_cast<std::size_t>(N));
  std::vector<double> offset(static_cast<std::size_t>(N));
  for (int i = 0; i < I; ++i) {
    const double tail_prev = i > 0 ? plan(i - 1).tail_work : 0.0;
    const double pre = plan(i).pre_work;
    // when the rank starts its main phase (or launches the broadcast),
    // relative to the previous iteration's last all-reduce
    for (int r = 0; r < N; ++r)
      offset[static_cast<std::size_t>(r)] = (i > 0 ? tail_prev * factor(i - 1, r) : 0.0) + pre * factor(i, r);
    if (in.broadcast_buffers) {
      // all ranks leave the broadcast together: the last to launch it, and
      // the slowest afterwards
      int last = 0, slow = 0;
      for (int r = 1; r < N; ++r) {
        if (offset[static_cast<std::size_t>(r)] > offset[static_cast<std::size_t>(last)]) last = r;
        if (factor(i, r) > factor(i, slow)) slow = r;
      }
      keep[static_cast<std::size_t>(last)] = keep[static_cast<std::size_t>(slow)] = 1;
    } else {
      // the Pareto front of (offset, factor): latest start first, kept when
      // slower than every later-starting rank
      for (int r = 0; r < N; ++r) order[static_cast<std::size_t>(r)] = r;
      std::sort(order.begin(), order.end(), [&](int a, int b) {
        const double oa = offset[static_cast<std::size_t>(a)], ob = offset[static_cast<std::size_t>(b)];
        return oa != ob ? oa > ob : factor(i, a) > factor(i, b);
      });
      double slowest = -1;
      for (int r : order) {
        if (factor(i, r) > slowest) {
          keep[static_cast<std::size_t>(r)] = 1;
          slowest = factor(i, r);
        }
      }
    }
  }
  std::vector<int> ids;
  for (int r = 0; r < N; ++r)
    if (keep[static_cast<std::size_t>(r)]) ids.push_back(r);
  const ReplayResult sub = Sim(in, &ids, plans).run();
  // Each iteration's end: its last all-reduce's.
  std::vector<double> t_end(static_cast<std::size_t>(I), -1.0);
  for (const auto& c : sub.collectives) t_end[static_cast<std::size_t>(c.iteration)] = c.end_s;
  auto end_of = [&](int i, int r) {
    // the replay's tail: work x factor x 1 (no slowdown) plus the host overhead
    double dur = plan(i).tail_work * factor(i, r) * 1.0;
    dur += in.host_overhead_s;
    return t_end[static_cast<std::size_t>(i)] + dur;
  };
  // The replayed ranks must end where the rule puts them (to rounding: the
  // compiler may fuse the tail's multiply and add differently here and in
  // the replay); if not, the condition did not hold after all.
  for (std::size_t j = 0; j < ids.size(); ++j)
    for (int i = 0; i < I; ++i)
      if (std::abs(sub.iterations[i][j].end_s - end_of(i, ids[j])) > 1e-12 * std::abs(end_of(i, ids[j])))
        return full("a replayed rank's tail did not start at the last all-reduce's end");
  std::vector<double> it(static_cast<std::size_t>(N));
  for (int r = 0; r < N; ++r) {
    double start = end_of(0, r), a = 0;
    for (int i = 1; i < I; ++i) {
      const double end = end_of(i, r);
      a += end - start;
      start = end;
    }
    it[static_cast<std::size_t>(r)] = a / (I - 1);
  }
  out.steady_s = median_in_place(it);
  out.ranks_replayed = static_cast<int>(ids.size());
  out.reduced = true;
  return out;
}

}  // namespace ks
