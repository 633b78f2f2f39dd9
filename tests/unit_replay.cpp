// The replay on hand-made iterations (tests/hand_replay.hpp: Hand is
// zero_grad 1, forward 10, backward op A 5 (gradient 0 ready), backward op
// B 5 (gradient 1 ready), optimizer 2; bucket 0 = {0}, 1 = {1}).
#include <doctest/doctest.h>

#include "hand_replay.hpp"
#include "model/rng.hpp"
#include "sim/replay.hpp"

using namespace ks;
using ks::test::Hand;
using ks::test::TwoTrack;

TEST_CASE("with zero communication cost the iteration equals compute") {
  Hand h(4, 0.0);
  const auto r = replay(h.in);
  for (const auto& it : r.iterations)
    for (const auto& ri : it) {
      CHECK(ri.iteration_s() == doctest::Approx(23.0));  // 1 + 10 + 5 + 5 + 2
      CHECK(ri.compute_s == doctest::Approx(23.0));
      CHECK(ri.exposed_s == doctest::Approx(0.0));
    }
}

TEST_CASE("communication slower than backward: exposed time is the hand-computed tail") {
  // bucket 0 launched at 16 runs 16..24; bucket 1 ready at 21 starts when
  // bucket 0 ends, 24..32; backward ended at 21, so 11 s are exposed;
  // Adam 32..34. Communication busy: 8 + (32 - 24) = 16 s per rank.
  Hand h(2, 8.0);
  const auto r = replay(h.in);
  for (const auto& it : r.iterations)
    for (const auto& ri : it) {
      CHECK(ri.iteration_s() == doctest::Approx(34.0));
      CHECK(ri.exposed_s == doctest::Approx(11.0));
      CHECK(ri.comm_s == doctest::Approx(16.0));
      CHECK(ri.compute_s == doctest::Approx(23.0));
    }
  REQUIRE(r.collectives.size() == 6);
  CHECK(r.collectives[1].start_s == doctest::Approx(24.0));
  CHECK(r.collectives[1].end_s == doctest::Approx(32.0));
}

TEST_CASE("one slowed rank delays every rank") {
  // Rank 1 computes at half speed (46 s of work). Iteration 0: rank 0 waits
  // for rank 1's buckets until 42, then Adam: ends at 44; rank 1 at 46.
  // In steady state both ranks take 46 s per iteration: the straggler's pace.
  Hand h(2, 0.0);
  h.in.rank_factor = {1.0, 2.0};
  const auto r = replay(h.in);
  CHECK(r.iterations[0][0].end_s == doctest::Approx(44.0));
  CHECK(r.iterations[0][0].exposed_s == doctest::Approx(21.0));  // 21 .. 42
  CHECK(r.iterations[0][1].end_s == doctest::Approx(46.0));
  for (int i = 1; i < 3; ++i) {
    CHECK(r.iterations[i][0].iteration_s() == doctest::Approx(46.0));
    CHECK(r.iterations[i][1].iteration_s() == doctest::Approx(46.0));
  }
}

TEST_CASE("interference slows compute while a collective runs (lazy rescheduling)") {
  // Bucket 0 runs 16..24; op B (5 s of work) runs at 1/1.5 speed during it:
  // it needs 7.5 s and ends at 23.5, when bucket 1 launches; it starts at 24
  // and ends at 32. Exposed 32 - 23.5 = 8.5 s; compute 1+10+5+7.5+2 = 25.5 s.
  Hand h(2, 8.0);
  h.in.interference = 0.5;
  const auto r = replay(h.in);
  CHECK(r.iterations[0][0].exposed_s == doctest::Approx(8.5));
  CHECK(r.iterations[0][0].compute_s == doctest::Approx(25.5));
  CHECK(r.iterations[0][1].iteration_s() == doctest::Approx(34.0));
}

TEST_CASE("the buffer broadcast synchronises ranks before forward") {
  // broadcast 3 s after zero_grad: forward starts at 4; bucket 0 launch at
  // 19 (no cost), bucket 1 at 24, Adam ends 26. Exposed: the 3 s broadcast.
  Hand h(3, 0.0);
  h.in.broadcast_buffers = true;
  h.in.broadcast = CollectiveEstimate{3.0, "ring", "LL"};
  h.in.broadcast_bytes = 64;
  const auto r = replay(h.in);
  CHECK(r.iterations[0][2].iteration_s() == doctest::Approx(26.0));
  CHECK(r.iterations[0][2].exposed_s == doctest::Approx(3.0));
  CHECK(r.iterations[0][2].comm_s == doctest::Approx(3.0));
}

TEST_CASE("jitter: same seed, same timeline; different seed, different") {
  Hand h(8, 1.0);
  h.in.jitter_sigma = 0.1;
  h.in.seed = 5;
  const auto a = replay(h.in), b = replay(h.in);
  h.in.seed = 6;
  const auto c = replay(h.in);
  CHECK(a.iterations[2][3].end_s == b.iterations[2][3].end_s);
  CHECK(a.iterations[2][3].end_s != c.iterations[2][3].end_s);
}

TEST_CASE("the trace lays every op of a traced rank on its compute track in order") {
  Hand h(2, 8.0);
  h.in.trace_ranks = {1};
  h.in.iterations = 2;
  const auto r = replay(h.in);
  std::vector<TraceSlice> compute;
  for (const auto& s : r.trace)
    if (s.track == 0 && s.category != "wait") compute.push_back(s);
  REQUIRE(compute.size() == 10);  // 5 ops x 2 iterations
  CHECK(compute[2].name == "A");
  CHECK(compute[2].t0_s == doctest::Approx(11.0));
  CHECK(compute[2].t1_s == doctest::Approx(16.0));
  CHECK(compute[4].t0_s == doctest::Approx(32.0));  // Adam after the wait
  for (const auto& s : r.trace) CHECK(s.rank == 1);
}

TEST_CASE("a bucket ready before an earlier one waits for it: launches are in bucket order") {
  // Bucket 0 = {gradient 1} (ready at 21), bucket 1 = {gradient 0} (ready at
  // 16): bucket 1 may not launch before bucket 0, so both launch at 21:
  // 21..29 and 29..37; exposed 37 - 21 = 16; Adam ends at 39.
  Hand h(2, 8.0);
  std::swap(h.in.steady.buckets[0], h.in.steady.buckets[1]);
  h.in.first = h.in.steady;
  const auto r = replay(h.in);
  CHECK(r.iterations[0][0].exposed_s == doctest::Approx(16.0));
  CHECK(r.iterations[0][1].iteration_s() == doctest::Approx(39.0));
  CHECK(r.collectives[0].start_s == doctest::Approx(21.0));
}

namespace {
// A random iteration of `layers` layers: zero_grad, a forward op per layer,
// a backward op per layer in reverse (each makes its layer's gradient ready),
// a trailing backward op when asked (work after the last bucket is ready),
// the optimizer; one bucket per one or two layers.
ReplayInput random_input(std::uint64_t seed, int ranks, bool broadcast, double interference, double sigma,
                         double launch_s, bool trailing) {
  const Rng rng(seed);
  std::uint64_t k = 0;
  auto u = [&](double lo, double hi) { return lo + (hi - lo) * rng.uniform(7, k++); };
  const int layers = 2 + static_cast<int>(u(0, 5));
  ReplayInput in;
  auto op = [&](Phase ph, int ready, double t) {
    Op o;
    o.name = "op";
    o.phase = ph;
    o.ready_param = ready;
    in.ops.push_back(o);
    in.op_time_s.push_back(t);
  };
  op(Phase::zero_grad, -1, u(0.1, 1));
  for (int l = 0; l < layers; ++l) op(Phase::forward, -1, u(1, 10));
  for (int l = layers - 1; l >= 0; --l) op(Phase::backward, l, u(1, 10));
  if (trailing) op(Phase::backward, -1, u(1, 5));
  op(Phase::optimizer, -1, u(0.5, 3));
  PlannedBuckets pb;
  for (int l = layers - 1; l >= 0;) {
    Bucket b;
    const int take = std::min(l + 1, 1 + static_cast<int>(u(0, 2)));
    for (int j = 0; j < take; ++j) b.params.push_back(l - j);
    b.bytes = 100.0 * take;
    pb.buckets.push_back(b);
    pb.allreduce.push_back(CollectiveEstimate{u(0.5, 12), "ring", "Simple", launch_s});
    l -= take;
  }
  in.first = pb;
  in.steady = pb;
  // the first iteration: one bucket of everything, as DDP's
  in.first.buckets = {Bucket{{}, 0}};
  for (int l = layers - 1; l >= 0; --l) in.first.buckets[0].params.push_back(l);
  in.first.allreduce = {CollectiveEstimate{u(2, 20), "ring", "Simple", launch_s}};
  in.ranks = ranks;
  in.broadcast_buffers = broadcast;
  in.broadcast = CollectiveEstimate{u(0.1, 2), "ring", "Simple", 0};
  in.host_overhead_s = u(0, 1);
  in.interference = interference;
  in.jitter_sigma = sigma;
  in.iterations = 2 + static_cast<int>(u(0, 4));
  in.seed = seed;
  return in;
}
}  // namespace

TEST_CASE("the reduced replay gives the full replay's median iteration time") {
  // Independent reference: replay_iteration_median_full replays every rank.
  // Equal to 1e-12 relative: both are the same sums of the same durations,
  // but the compiler may fuse a multiply-add in one and not the other
  // (a few ulps; seen: 3e-16).
  int reduced = 0, cases = 0;
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    for (int ranks : {1, 2, 5, 64, 300}) {
      const bool broadcast = seed % 2 == 0;
      const double interference = seed % 3 == 0 ? 0.0 : 0.6;
      const double sigma = seed % 5 == 0 ? 0.0 : (seed % 5 == 1 ? 0.3 : 0.05);
      ReplayInput in = random_input(seed, ranks, broadcast, interference, sigma, 0.0, false);
      if (seed % 7 == 0) {  // stragglers
        in.rank_factor.assign(static_cast<std::size_t>(ranks), 1.0);
        in.rank_factor[static_cast<std::size_t>(ranks / 2)] = 1.7;
      }
      const IterationMedian fast = replay_iteration_median(in);
      const IterationMedian full = replay_iteration_median_full(in);
      CAPTURE(seed);
      CAPTURE(ranks);
      CAPTURE(fast.why_full);
      CHECK(fast.reduced);
      CHECK(fast.steady_s == doctest::Approx(full.steady_s).epsilon(1e-12).scale(0));
      // with the broadcast: at most two deciding ranks per iteration
      if (broadcast) CHECK(fast.ranks_replayed <= std::min(ranks, 2 * in.iterations));
      if (ranks == 300 && !broadcast) CHECK(fast.ranks_replayed < 300);
      reduced += fast.ranks_replayed < ranks;
      ++cases;
    }
  }
  CHECK(reduced > cases / 3);
}

TEST_CASE("the reduced replay replays every rank when its condition fails, and says why") {
  // Compute after the last bucket is ready: a rank can reach its final wait
  // after the last all-reduce has ended.
  ReplayInput a = random_input(11, 40, true, 0.3, 0.1, 0.0, true);
  IterationMedian m = replay_iteration_median(a);
  CHECK_FALSE(m.reduced);
  CHECK(m.ranks_replayed == 40);
  CHECK(m.why_full.find("after the last bucket") != std::string::npos);
  CHECK(m.steady_s == replay_iteration_median_full(a).steady_s);
  // Launch CPU time (MPI) longer than the last all-reduce.
  ReplayInput b = random_input(12, 40, false, 0.3, 0.1, 50.0, false);
  m = replay_iteration_median(b);
  CHECK_FALSE(m.reduced);
  CHECK(m.why_full.find("outlast") != std::string::npos);
  CHECK(m.steady_s == replay_iteration_median_full(b).steady_s);
  // A launch CPU time shorter than every all-reduce keeps the reduction.
  ReplayInput c = random_input(13, 40, false, 0.3, 0.1, 0.2, false);
  m = replay_iteration_median(c);
  CHECK(m.reduced);
  CHECK(m.steady_s == doctest::Approx(replay_iteration_median_full(c).steady_s).epsilon(1e-12).scale(0));
}

TEST_CASE("a jitter table shared by replays of one seed gives each the factors it would draw") {
  JitterTable t;
  const Rng rng(9);
  const double* small = t.factors(9, 0.2, 3, 4);
  const double f21 = small[2 * 4 + 1];
  CHECK(f21 == rng.lognormal_mean_one(0.2, 2, 1));
  const double* big = t.factors(9, 0.2, 50, 4);  // grown: the first ranks unchanged
  CHECK(big[2 * 4 + 1] == f21);
  CHECK(big[49 * 4 + 3] == rng.lognormal_mean_one(0.2, 49, 3));
  const double* other = t.factors(10, 0.2, 3, 4);  // another seed: drawn anew
  CHECK(other[2 * 4 + 1] == Rng(10).lognormal_mean_one(0.2, 2, 1));
}

TEST_CASE("a collective in steps progresses only at polls while the ranks compute (hand timeline)") {
  // Polls come before each backward op and with each launch: main starts at
  // 1, the ranks poll at 11 (before A), launch bucket 0 and poll at 16,
  // launch bucket 1 at 21 and wait. 8 s all-reduces in 4 steps of 2 s:
  // bucket 0 step 1 16..18; the next poll is at 21 (B runs 16..21): step 2
  // 21..23, then the ranks wait, so steps 3 and 4 follow at once, 23..27.
  // Bucket 1 27..35, Adam 35..37: iteration 37, exposed 35 - 21 = 14 (in one
  // step, as progressing on its own: 34 and 11).
  Hand h(2, 8.0);
  for (auto* pb : {&h.in.first, &h.in.steady})
    for (auto& e : pb->allreduce) e.steps = 4;
  auto r = replay(h.in);
  for (const auto& it : r.iterations)
    for (const auto& ri : it) {
      CHECK(ri.iteration_s() == doctest::Approx(37.0));
      CHECK(ri.exposed_s == doctest::Approx(14.0));
    }
  REQUIRE(r.collectives.size() == 6);
  CHECK(r.collectives[0].start_s == doctest::Approx(16.0));
  CHECK(r.collectives[0].end_s == doctest::Approx(27.0));
  CHECK(r.collectives[1].start_s == doctest::Approx(27.0));
  // 2 steps of 4 s: step 1 16..20, step 2 from the poll at 21 to 25; bucket 1
  // 25..33 in the wait, Adam 33..35: iteration 35, exposed 12.
  for (auto* pb : {&h.in.first, &h.in.steady})
    for (auto& e : pb->allreduce) e.steps = 2;
  r = replay(h.in);
  CHECK(r.iterations[1][0].iteration_s() == doctest::Approx(35.0));
  CHECK(r.iterations[1][1].exposed_s == doctest::Approx(12.0));
  // a rank that polls late holds the step for both: rank 1 at half speed
  // (zero_grad 0..2, forward 2..22) polls at 22, launches bucket 0 at 32
  // and bucket 1 at 42. Bucket 0 starts at 32 (both launched), step 1
  // 32..36; rank 0 waits since 21 but rank 1 polls next at 42: step 2
  // 42..46; bucket 1 46..54; rank 0's Adam 54..56, rank 1's 54..58.
  h.in.rank_factor = {1.0, 2.0};
  r = replay(h.in);
  CHECK(r.collectives[0].end_s == doctest::Approx(46.0));
  CHECK(r.iterations[0][0].end_s == doctest::Approx(56.0));
  CHECK(r.iterations[0][1].end_s == doctest::Approx(58.0));
}

TEST_CASE("a poll advances every collective in flight; their steps share one wire (hand timeline)") {
  // Hand with op C (10 s, no gradient) after B, so the ranks compute 21..31
  // after launching bucket 1. 8 s all-reduces in 4 steps of 2 s. Bucket 0:
  // step 1 16..18 (posted at its launch); the launch of bucket 1 at 21 is a
  // poll: bucket 0's step 2 21..23, while bucket 1's first step (posted at
  // its launch) waits for the wire, which it takes 23..25, as bucket 0 waits
  // for a poll. The next poll is at 31, before the wait: both have a step
  // ready, the older first: bucket 0 31..33, then with every rank waiting
  // its step 4 33..35; bucket 0 ends at 35, bucket 1's steps 2-4 35..41.
  // Adam 41..43: iteration 43, exposed 41 - 31 = 10. One collective at a
  // time (bucket 1 from 35, 35..43) would give 45 and 12.
  Hand h(2, 8.0);
  h.in.ops.insert(h.in.ops.begin() + 4, ks::test::hand_op("C", Phase::backward, -1));
  h.in.op_time_s = {1, 10, 5, 5, 10, 2};
  for (auto* pb : {&h.in.first, &h.in.steady})
    for (auto& e : pb->allreduce) e.steps = 4;
  const auto r = replay(h.in);
  for (const auto& it : r.iterations)
    for (const auto& ri : it) {
      CHECK(ri.iteration_s() == doctest::Approx(43.0));
      CHECK(ri.exposed_s == doctest::Approx(10.0));
    }
  REQUIRE(r.collectives.size() == 6);
  CHECK(r.collectives[0].start_s == doctest::Approx(16.0));
  CHECK(r.collectives[0].end_s == doctest::Approx(35.0));
  // bucket 1 counted as the trainer counts it: from bucket 0's end
  CHECK(r.collectives[1].start_s == doctest::Approx(35.0));
  CHECK(r.collectives[1].end_s == doctest::Approx(41.0));
  // in one step each (progressing on their own) nothing waits for polls:
  // bucket 0 16..24, bucket 1 24..32, the wait 31..32, iteration 34
  for (auto* pb : {&h.in.first, &h.in.steady})
    for (auto& e : pb->allreduce) e.steps = 1;
  const auto r1 = replay(h.in);
  CHECK(r1.iterations[1][0].iteration_s() == doctest::Approx(34.0));
  CHECK(r1.collectives[1].start_s == doctest::Approx(24.0));
}

TEST_CASE("a broadcast in steps while every rank waits runs as one piece") {
  // as "the buffer broadcast synchronises ranks before forward": every rank
  // waits in the broadcast, so its 3 steps follow back to back, 1..4; the
  // iteration ends at 26 either way
  Hand h(3, 0.0);
  h.in.broadcast_buffers = true;
  h.in.broadcast = CollectiveEstimate{3.0, "ring", "LL"};
  h.in.broadcast.steps = 3;
  h.in.broadcast_bytes = 64;
  const auto r = replay(h.in);
  CHECK(r.iterations[0][2].iteration_s() == doctest::Approx(26.0));
  CHECK(r.iterations[0][2].exposed_s == doctest::Approx(3.0));
  CHECK(r.collectives[0].end_s == doctest::Approx(4.0));
}

TEST_CASE("the reduced iteration median replays every rank when collectives move in steps") {
  Hand h(16, 3.0);
  h.in.jitter_sigma = 0.1;
  h.in.seed = 3;
  h.in.iterations = 4;
  for (auto* pb : {&h.in.first, &h.in.steady})
    for (auto& e : pb->allreduce) e.steps = 3;
  const IterationMedian m = replay_iteration_median(h.in);
  CHECK_FALSE(m.reduced);
  CHECK(m.why_full.find("steps") != std::string::npos);
  CHECK(m.ranks_replayed == 16);
  CHECK(m.steady_s == doctest::Approx(replay_iteration_median_full(h.in).steady_s));
}

TEST_CASE("interference slows compute while a step moves data, not while the next waits for a poll") {
  // 4 steps of 2 s, interference 0.5: bucket 0's step 1 runs 16..18 while op B
  // computes at 1/1.5 speed (1.333 s of its 5 s of work); from 18 the next
  // step waits for a poll and B runs at full speed: it ends at 21.667, the
  // poll starts step 2; steps 2-4 in the wait end at 27.667, bucket 1 runs
  // 27.667..35.667, Adam to 37.667. (Slowed for the whole window since 16,
  // B would end at 23.5 and the iteration at 39.5.)
  Hand h(2, 8.0);
  h.in.interference = 0.5;
  for (auto* pb : {&h.in.first, &h.in.steady})
    for (auto& e : pb->allreduce) e.steps = 4;
  const auto r = replay(h.in);
  CHECK(r.iterations[0][0].iteration_s() == doctest::Approx(37.0 + 2.0 / 3.0));
  CHECK(r.iterations[0][0].compute_s == doctest::Approx(23.0 + 2.0 / 3.0));  // 1 + 10 + 5 + (2 + 3.667) + 2
  CHECK(r.collectives[0].end_s == doctest::Approx(27.0 + 2.0 / 3.0));
}

// ---- the host track (ReplayInput::op_host_s): a device that runs ops
// asynchronously behind the host that issues them. TwoTrack is Hand with
// fwd and adam split in two ops each, so that the queue and the tail's
// dispatch have something to overlap.

TEST_CASE("host track, host-bound: the device waits for each op's dispatch (hand timeline)") {
  // host 1, 3, 3, 3, 3 | 2, 2; device 0.5, 1, 1, 1, 1 | 0.5, 0.5; no communication.
  // zero: issued at 1, runs 1..1.5. Main from 1.5 (host and device together):
  // fwd1 issued 3 runs 3..4, fwd2 6..7, A 9..10 (bucket 0 ready at 11.5), B
  // 12..13: main ends at 14.5, the host at 13.5. The host issues adam1 at
  // 15.5 and adam2 at 17.5; each runs 0.5 s after it: the iteration is 18 s,
  // of which the host is busy 17.
  TwoTrack t(1, 0.0, {1, 3, 3, 3, 3, 2, 2}, {0.5, 1, 1, 1, 1, 0.5, 0.5});
  const auto r = replay(t.in);
  for (const auto& it : r.iterations) {
    CHECK(it[0].iteration_s() == doctest::Approx(18.0));
    CHECK(it[0].exposed_s == doctest::Approx(0.0));
  }
  REQUIRE(r.collectives.size() == 6);
  CHECK(r.collectives[0].start_s == doctest::Approx(11.5));
  CHECK(r.collectives[1].start_s == doctest::Approx(14.5));
  // one track with the same op costs would be their sum, 17 + 5.5 = 22.5 s
  TwoTrack one(1, 0.0, {}, {1.5, 4, 4, 4, 4, 2.5, 2.5});
  CHECK(replay(one.in).iterations[1][0].iteration_s() == doctest::Approx(22.5));
}

TEST_CASE("host track, device-bound: the host runs ahead and the device never waits (hand timeline)") {
  // host 0.5 per op; device 1, 10, 10, 5, 5 | 2, 2. Each stage's first op
  // waits for its dispatch (0.5 s), then the device runs back to back: zero
  // 0.5..1.5, main 1.5 + 0.5 + 30 = 32, tail 32 + 4 = 36 (the host issued
  // the tail by 32: it left main at 1.5 + 2 = 3.5).
  TwoTrack t(1, 0.0, {0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5}, {1, 10, 10, 5, 5, 2, 2});
  for (const auto& it : replay(t.in).iterations) CHECK(it[0].iteration_s() == doctest::Approx(36.0));
  SUBCASE("a launch queue of depth 1: the host issues an op only once the device ran the one before") {
    // fwd1 issued 0.5 runs to 10.5; fwd2 issued at 10.5 + 0.5 = 11, runs
    // 11..21; A issued 21.5 runs to 26.5; B issued 27 runs to 32: main
    // takes 32 s (not 30.5), the iteration 1.5 + 32 + 4 = 37.5
    t.in.launch_queue_depth = 1;
    for (const auto& it : replay(t.in).iterations) CHECK(it[0].iteration_s() == doctest::Approx(37.5));
  }
  SUBCASE("with communication and jitter the reduced median holds (the tail is its device time) and agrees") {
    // host-bound length of the tail 4.5 <= its device time 4 + the host's
    // lead at the end of main, 30.5 - 2
    t.in.ranks = 16;
    t.in.jitter_sigma = 0.05;
    t.in.iterations = 5;
    for (PlannedBuckets* pb : {&t.in.first, &t.in.steady})
      for (auto& e : pb->allreduce) e.time_s = 3.0;
    const IterationMedian m = replay_iteration_median(t.in);
    CHECK(m.reduced);
    CHECK(m.steady_s == doctest::Approx(replay_iteration_median_full(t.in).steady_s).epsilon(1e-12));
  }
}

TEST_CASE("host track: communication hidden behind the optimizer's dispatch (hand timeline)") {
  // The host-bound case with a 4 s all-reduce per bucket on 2 ranks: bucket
  // 0 runs 11.5..15.5, bucket 1 (ready at 14.5) 15.5..19.5; the device waits
  // 14.5..19.5 (5 s exposed) while the host, not waiting, issues adam1 at
  // 15.5 and adam2 at 17.5: after the all-reduce only the device's 1 s is
  // left, 19.5..20.5. The communication costs 20.5 - 18 = 2.5 s of its 5 s
  // wait (its exposed time); with one track (the host waits) the tail would
  // be all 4.5 s after it.
  TwoTrack t(2, 4.0, {1, 3, 3, 3, 3, 2, 2}, {0.5, 1, 1, 1, 1, 0.5, 0.5});
  const auto r = replay(t.in);
  for (const auto& it : r.iterations)
    for (const auto& ri : it) {
      CHECK(ri.iteration_s() == doctest::Approx(20.5));
      CHECK(ri.exposed_s == doctest::Approx(2.5));
    }
}

TEST_CASE("host track: the reduced median replays every rank when the optimizer's dispatch can outlast the all-reduce") {
  // no communication: the host-bound tail (4.5 s of host-bound length against
  // 1 s of device time and a 1 s lead) decides the iteration's end
  TwoTrack t(8, 0.0, {1, 3, 3, 3, 3, 2, 2}, {0.5, 1, 1, 1, 1, 0.5, 0.5});
  t.in.jitter_sigma = 0.05;
  t.in.iterations = 4;
  const IterationMedian m = replay_iteration_median(t.in);
  CHECK_FALSE(m.reduced);
  CHECK(m.why_full.find("optimizer") != std::string::npos);
}
