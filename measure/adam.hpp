#pragma once
// Adam with PyTorch's defaults and update rule (torch 1.13
// _single_tensor_adam, no weight decay, amsgrad off):
//   m = lerp(m, g, 1-b1); v = v*b2 + (1-b2) g*g
//   denom = sqrt(v) / sqrt(1 - b2^t) + eps; p -= lr / (1 - b1^t) * m / denom
#include <cstdint>
#include <vector>

namespace ks {

struct Adam {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  std::int64_t step = 0;
  std::vector<std::vector<float>> exp_avg, exp_avg_sq;  // per parameter

  void init(const std::vector<std::size_t>& sizes);
  // One step over every parameter (params[i] has grads[i]).
  void update(const std::vector<float*>& params, const std::vector<const float*>& grads);
};

}  // namespace ks
