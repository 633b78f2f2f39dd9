#pragma once
// The replay tests' hand-made iterations, in seconds so that a timeline can
// be followed on paper (each test derives its own).
#include <vector>

#include "sim/replay.hpp"

namespace ks::test {

// An op of phase `ph` after which parameter `ready`'s gradient is in its
// bucket (-1: none).
inline Op hand_op(const char* name, Phase ph, int ready) {
  Op o;
  o.name = name;
  o.phase = ph;
  o.ready_param = ready;
  return o;
}

// Bucket 0 = {parameter 0}, bucket 1 = {parameter 1}, each all-reduced in
// allreduce_s, the first iteration's plan as the steady one's; no buffer
// broadcast; three iterations.
inline void two_buckets(ReplayInput& in, double allreduce_s) {
  PlannedBuckets pb;
  pb.buckets = {Bucket{{0}, 100}, Bucket{{1}, 100}};
  pb.allreduce = {CollectiveEstimate{allreduce_s, "ring", "Simple"}, CollectiveEstimate{allreduce_s, "ring", "Simple"}};
  in.first = pb;
  in.steady = pb;
  in.broadcast_buffers = false;
  in.iterations = 3;
}

// zero_grad 1, forward 10, backward op A 5 (gradient 0 ready), backward op
// B 5 (gradient 1 ready), optimizer 2; one track.
struct Hand {
  ReplayInput in;
  Hand(int ranks, double allreduce_s) {
    in.ops = {hand_op("zero", Phase::zero_grad, -1), hand_op("fwd", Phase::forward, -1), hand_op("A", Phase::backward, 0),
              hand_op("B", Phase::backward, 1), hand_op("adam", Phase::optimizer, -1)};
    in.ranks = ranks;
    in.op_time_s = {1, 10, 5, 5, 2};
    two_buckets(in, allreduce_s);
  }
};

// Hand with forward and the optimizer split in two ops each (zero, fwd1,
// fwd2, A, B, adam1, adam2) and a host track: `host` the host's time of
// each op, `device` the device's (empty host: one track).
struct TwoTrack {
  ReplayInput in;
  TwoTrack(int ranks, double allreduce_s, std::vector<double> host, std::vector<double> device) {
    in.ops = {hand_op("zero", Phase::zero_grad, -1), hand_op("fwd1", Phase::forward, -1), hand_op("fwd2", Phase::forward, -1),
              hand_op("A", Phase::backward, 0),        hand_op("B", Phase::backward, 1),   hand_op("adam1", Phase::optimizer, -1),
              hand_op("adam2", Phase::optimizer, -1)};
    in.ranks = ranks;
    in.op_host_s = std::move(host);
    in.op_time_s = std::move(device);
    two_buckets(in, allreduce_s);
  }
};

}  // namespace ks::test
