#include "data.hpp"
#include "model/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "model/rng.hpp"
#include "formats/yaml_reader.hpp"

namespace ks {

Dataset::Dataset(std::string task, int in, int out, std::int64_t size, std::uint64_t seed)
    : task_(std::move(task)), in_(in), out_(out), size_(size), seed_(seed) {
  auto need = [&](int i, int o) {
    if (in_ != i || out_ != o) {
      throw InputError("task \"" + task_ + "\" needs widths [" + std::to_string(i) + ", ..., " + std::to_string(o) +
                       "], the workload has [" + std::to_string(in_) + ", ..., " + std::to_string(out_) + "]");
    }
  };
  if (task_ == "pykan-exp-sin" || task_ == "pykan-bessel") need(2, 1);
  else if (task_ == "pykan-exp-sin-4d") need(4, 1);
  else if (task_ == "teacher") {
    const Rng rng(seed_ ^ 0x7EAC4E5ULL);
    const int F = 16;
    w_.resize(static_cast<std::size_t>(out_) * F * in_);
    b_.resize(static_cast<std::size_t>(out_) * F);
    for (std::size_t j = 0; j < w_.size(); ++j) w_[j] = rng.normal(1, j) * std::sqrt(2.0 / in_);
    for (std::size_t j = 0; j < b_.size(); ++j) b_[j] = rng.uniform(2, j) * 6.283185307179586;
  } else {
    throw InputError("unknown task \"" + task_ + "\"");
  }
}

bool Dataset::materialize(double max_bytes) {
  if (!cache_x_.empty()) return true;  // in memory already (held)
  if (4.0 * static_cast<double>(size_) * (in_ + out_) > max_bytes) return false;
  cache_x_.resize(static_cast<std::size_t>(size_) * in_);
  cache_y_.resize(static_cast<std::size_t>(size_) * out_);
  for (std::int64_t i = 0; i < size_; ++i)
    generate(i, &cache_x_[static_cast<std::size_t>(i) * in_], &cache_y_[static_cast<std::size_t>(i) * out_]);
  return true;
}

Dataset Dataset::held(int in, int out, std::vector<float> x, std::vector<float> y) {
  if (in < 1 || out < 1 || x.size() % static_cast<std::size_t>(in) != 0 || x.size() / in * out != y.size() || x.empty())
    throw std::invalid_argument("Dataset::held: x and y must hold the same number (> 0) of samples of widths in and out");
  Dataset d;
  d.task_ = "held";
  d.in_ = in;
  d.out_ = out;
  d.size_ = static_cast<std::int64_t>(x.size() / in);
  d.cache_x_ = std::move(x);
  d.cache_y_ = std::move(y);
  return d;
}

void Dataset::sample(std::int64_t index, float* x, float* y) const {
  if (!cache_x_.empty()) {
    std::copy_n(&cache_x_[static_cast<std::size_t>(index) * in_], in_, x);
    std::copy_n(&cache_y_[static_cast<std::size_t>(index) * out_], out_, y);
    return;
  }
  generate(index, x, y);
}

void Dataset::generate(std::int64_t index, float* x, float* y) const {
  const Rng rng(seed_);
  std::vector<double> xd(in_);
  for (int i = 0; i < in_; ++i) {
    xd[i] = 2.0 * rng.uniform(100 + static_cast<std::uint64_t>(i), static_cast<std::uint64_t>(index)) - 1.0;
    x[i] = static_cast<float>(xd[i]);
  }
  const double pi = 3.141592653589793;
  if (task_ == "pykan-exp-sin") {
    y[0] = static_cast<float>(std::exp(std::sin(pi * xd[0]) + xd[1] * xd[1]));
  } else if (task_ == "pykan-bessel") {
    y[0] = static_cast<float>(std::exp(std::cyl_bessel_j(0.0, std::fabs(20.0 * xd[0]))  /* J0 is even; libstdc++ wants x >= 0 */ + xd[1] * xd[1]));
  } else if (task_ == "pykan-exp-sin-4d") {
    y[0] = static_cast<float>(std::exp((std::sin(pi * (xd[0] * xd[0] + xd[1] * xd[1])) +
                                        std::sin(pi * (xd[2] * xd[2] + xd[3] * xd[3]))) / 2));
  } else {
    const int F = 16;
    for (int o = 0; o < out_; ++o) {
      double acc = 0;
      for (int f = 0; f < F; ++f) {
        const std::size_t of = static_cast<std::size_t>(o) * F + f;
        double z = b_[of];
        for (int i = 0; i < in_; ++i) z += w_[of * in_ + i] * xd[i];
        acc += std::sin(z);
      }
      y[o] = static_cast<float>(acc / F);
    }
  }
}

std::vector<std::int64_t> shard_indices(std::int64_t n, int world, int rank, std::uint64_t seed, int epoch) {
  std::vector<std::int64_t> perm(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) perm[i] = i;
  const Rng rng(seed + static_cast<std::uint64_t>(epoch));
  for (std::int64_t i = n - 1; i > 0; --i) {  // Fisher-Yates
    const auto j = static_cast<std::int64_t>(rng.uniform(7, static_cast<std::uint64_t>(i)) * static_cast<double>(i + 1));
    std::swap(perm[i], perm[std::min(j, i)]);
  }
  const std::int64_t per_rank = distributed_sampler_split(n, world, 1).samples_per_rank, total = per_rank * world;
  std::vector<std::int64_t> out;
  out.reserve(static_cast<std::size_t>(per_rank));
  for (std::int64_t p = rank; p < total; p += world) out.push_back(perm[static_cast<std::size_t>(p % n)]);
  return out;
}

}  // namespace ks
