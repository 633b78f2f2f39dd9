// A hand-made iteration, in seconds so the timelines can be followed on
// paper: zero_grad 1, forward 10, backward op A 5 (gradient 0 ready),
// backward op B 5 (gradient 1 ready), optimizer 2. Bucket 0 = {0}, 1 = {1}.
#include <doctest/doctest.h>

#include "replay.hpp"

using namespace ks;

namespace {
struct Hand {
  std::vector<Op> ops;
  ReplayInput in;
  Hand(int ranks, double allreduce_s) {
    auto op = [&](const char* name, Phase ph, int ready) {
      Op o;
      o.name = name;
      o.phase = ph;
      o.ready_param = ready;
      ops.push_back(o);
    };
    op("zero", Phase::zero_grad, -1);
    op("fwd", Phase::forward, -1);
    op("A", Phase::backward, 0);
    op("B", Phase::backward, 1);
    op("adam", Phase::optimizer, -1);
    in.ranks = ranks;
    in.ops = ops;
    in.op_time_s = {1, 10, 5, 5, 2};
    PlannedBuckets pb;
    pb.buckets = {Bucket{{0}, 100}, Bucket{{1}, 100}};
    pb.allreduce = {CollectiveEstimate{allreduce_s, "ring", "Simple"}, CollectiveEstimate{allreduce_s, "ring", "Simple"}};
    in.first = pb;
    in.steady = pb;
    in.broadcast_buffers = false;
    in.iterations = 3;
  }
};
}  // namespace

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
