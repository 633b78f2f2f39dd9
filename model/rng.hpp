#pragma once
// The run's one seeded random source. Counter-based (SplitMix64 over a key
// made of the seed and a stream position), so a draw depends only on
// (seed, stream, index), never on the order events happened to run in, and
// is the same on every platform.
#include <cmath>
#include <cstdint>

namespace ks {

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : seed_(seed) {}
  std::uint64_t seed() const { return seed_; }

  // Uniform in (0, 1).
  double uniform(std::uint64_t stream, std::uint64_t index) const {
    const std::uint64_t x = mix(seed_ ^ mix(stream * 0x9E3779B97F4A7C15ULL + index + 1));
    return (static_cast<double>(x >> 11) + 0.5) * (1.0 / 9007199254740992.0);
  }
  // Standard normal by Box-Muller on two uniforms of the same key.
  double normal(std::uint64_t stream, std::uint64_t index) const {
    const double u1 = uniform(stream, 2 * index), u2 = uniform(stream, 2 * index + 1);
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  // Lognormal factor with mean 1: exp(sigma z - sigma^2 / 2).
  double lognormal_mean_one(double sigma, std::uint64_t stream, std::uint64_t index) const {
    if (sigma <= 0) return 1.0;
    return std::exp(sigma * normal(stream, index) - 0.5 * sigma * sigma);
  }
  // Lognormal factor with median 1: exp(sigma z). For a prior whose point is
  // its median (the geometric mean of the sources' figures).
  double lognormal_median_one(double sigma, std::uint64_t stream, std::uint64_t index) const {
    if (sigma <= 0) return 1.0;
    return std::exp(sigma * normal(stream, index));
  }

  static std::uint64_t mix(std::uint64_t z) {
    z += 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }

 private:
  std::uint64_t seed_;
};

}  // namespace ks
