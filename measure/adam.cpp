#include "adam.hpp"

#include <cmath>

namespace ks {

void Adam::init(const std::vector<std::size_t>& sizes) {
  exp_avg.clear();
  exp_avg_sq.clear();
  for (auto n : sizes) {
    exp_avg.emplace_back(n, 0.0f);
    exp_avg_sq.emplace_back(n, 0.0f);
  }
  step = 0;
}

void Adam::update(const std::vector<float*>& params, const std::vector<const float*>& grads) {
  ++step;
  const double bc1 = 1.0 - std::pow(beta1, static_cast<double>(step));
  const double bc2 = 1.0 - std::pow(beta2, static_cast<double>(step));
  const float step_size = static_cast<float>(lr / bc1);
  const float bc2_sqrt = static_cast<float>(std::sqrt(bc2));
  const float w1 = static_cast<float>(1.0 - beta1), b2 = static_cast<float>(beta2), w2 = static_cast<float>(1.0 - beta2);
  const float e = static_cast<float>(eps);
  for (std::size_t p = 0; p < params.size(); ++p) {
    float* x = params[p];
    const float* g = grads[p];
    float* m = exp_avg[p].data();
    float* v = exp_avg_sq[p].data();
    const std::size_t n = exp_avg[p].size();
#pragma omp parallel for simd schedule(static)
    for (std::size_t i = 0; i < n; ++i) {
      m[i] = m[i] + w1 * (g[i] - m[i]);
      v[i] = v[i] * b2 + w2 * g[i] * g[i];
      const float denom = std::sqrt(v[i]) / bc2_sqrt + e;
      x[i] = x[i] - step_size * (m[i] / denom);
    }
  }
}

}  // namespace ks
