#pragma once
// DDP's gradient bucket assignment, as PyTorch's Reducer computes it
// (torch/csrc/distributed/c10d/reducer.cpp, compute_bucket_assignment_by_size,
// and torch/nn/parallel/distributed.py). The one planner: the simulator and
// the live trainer both call it.
#include <string>
#include <vector>

#include "config.hpp"

namespace ks {

struct Bucket {
  std::vector<int> params;  // indices into the parameter list, in bucket order
  double bytes = 0;
};

// Walks parameters in `order`; a bucket closes once its size reaches its
// limit (so it may exceed it); the first bucket closed uses limits[0], later
// ones the next limit, staying at the last. Leftovers form the last bucket.
// With `sort_by_min_index` (the constructor's call, no tensor_indices) the
// buckets are then sorted by their smallest parameter index.
std::vector<Bucket> assign_buckets_by_size(const std::vector<double>& param_bytes, const std::vector<int>& order,
                                           const std::vector<double>& limits, bool sort_by_min_index);

struct DdpBucketPlans {
  std::vector<Bucket> first_iteration;
  std::vector<Bucket> steady;  // every iteration after the first
  bool rebuilt = false;        // steady came from the ready-order rebuild
};

// param_bytes in definition order; ready_order: the order gradients become
// ready in backward. `torch2`: torch 2.x's rule (nn/parallel/distributed.py,
// checked on 2.11.0): a bucket_cap_mb given makes the first bucket's limit
// bucket_cap too; torch 1.13 keeps first_bucket_bytes whatever the cap.
DdpBucketPlans ddp_bucket_plans(const std::vector<double>& param_bytes, const std::vector<int>& ready_order,
                                const DdpSettings& ddp, bool torch2 = false);

}  // namespace ks
