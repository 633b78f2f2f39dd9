#pragma once
// DDP's reducer, the part the CPU and the CUDA trainer loops share (torch's
// c10d Reducer keeps the same state): where each parameter's gradient sits
// in its bucket, how many of a bucket's gradients are in, the in-order
// launch (a bucket starts once it is complete and every earlier bucket has
// started), and the copy back after the wait. The buffers, and how a
// collective is started and noticed to be finished, belong to the loop:
// host memory and MPI in measure/trainer.cpp, device memory and NCCL
// streams in measure/trainer_cuda.cpp.
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/buckets.hpp"

namespace ks {

class Reducer {
 public:
  // DDP's two plans: the first iteration's (constructor order) and the one
  // rebuilt from the order gradients became ready.
  enum Plan { kFirst = 0, kSteady = 1 };
  struct Slot {
    int bucket = 0;
    std::size_t offset = 0;  // elements into the bucket
  };

  // param_elements: each parameter's size in elements, definition order.
  Reducer(const DdpBucketPlans& plans, const std::vector<std::size_t>& param_elements);

  std::size_t buckets(Plan plan) const { return layout_[plan].elements.size(); }
  std::size_t elements(Plan plan, std::size_t bucket) const { return layout_[plan].elements[bucket]; }
  const Bucket& bucket(Plan plan, std::size_t b) const { return (plan == kFirst ? plans_.first_iteration : plans_.steady)[b]; }

  // Starts an iteration on `plan`: no gradient in, no bucket launched.
  void begin(Plan plan);
  Plan plan() const { return plan_; }
  const Slot& slot(int param) const { return layout_[plan_].slot[static_cast<std::size_t>(param)]; }

  // Parameter `param`'s gradient is in its bucket: calls launch(b) for every
  // bucket that may start now, in bucket order, each once. Returns how many
  // it launched.
  template <class Launch>
  std::size_t mark_ready(int param, Launch&& launch) {
    ++ready_[static_cast<std::size_t>(slot(param).bucket)];
    const std::size_t before = next_;
    while (next_ < buckets(plan_) && ready_[next_] == bucket(plan_, next_).params.size()) launch(next_++);
    return next_ - before;
  }
  bool all_launched() const { return next_ == buckets(plan_); }

  // After the wait: each parameter's reduced gradient, either its place in
  // the bucket (gradient_as_bucket_view) or its own gradient after
  // copy(dst = grads[p], src = place in bucket, elements).
  template <class T, class Copy>
  std::vector<const T*> reduced_gradients(const std::vector<T*>& bucket_buffers, bool as_bucket_view,
                                          const std::vector<T*>& grads, Copy&& copy) const {
    std::vector<const T*> out(grads.size());
    for (std::size_t p = 0; p < grads.size(); ++p) {
      const Slot& s = layout_[plan_].slot[p];
      const T* src = bucket_buffers[static_cast<std::size_t>(s.bucket)] + s.offset;
      if (as_bucket_view) {
        out[p] = src;
      } else {
        copy(grads[p], src, param_elements_[p]);
        out[p] = grads[p];
      }
    }
    return out;
  }

 private:
  struct Layout {
    std::vector<Slot> slot;             // per parameter
    std::vector<std::size_t> elements;  // per bucket
  };
  DdpBucketPlans plans_;
  std::vector<std::size_t> param_elements_;
  Layout layout_[2];
  Plan plan_ = kFirst;
  std::vector<std::size_t> ready_;
  std::size_t next_ = 0;
};

}  // namespace ks
