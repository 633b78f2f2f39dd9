#pragma once
// Synthetic regression data, generated per sample from the seed (so any
// rank can make any sample) and sharded like torch's DistributedSampler.
#include <cstdint>
#include <string>
#include <vector>

namespace ks {

// Tasks (inputs uniform in [-1, 1]):
//   teacher           a fixed random function for any widths: per output,
//                     the mean of 16 sin(w.x + b) features (w ~ N(0, 2/in))
//   pykan-exp-sin     f(x, y) = exp(sin(pi x) + y^2)                 [2 -> 1]
//   pykan-exp-sin-4d  exp((sin(pi(x1^2+x2^2)) + sin(pi(x3^2+x4^2)))/2) [4 -> 1]
//   pykan-bessel      f(x, y) = exp(J0(20 x) + y^2)                   [2 -> 1]
class Dataset {
 public:
  // Throws InputError when the task does not fit the widths.
  Dataset(std::string task, int in, int out, std::int64_t size, std::uint64_t seed);
  std::int64_t size() const { return size_; }
  int in() const { return in_; }
  int out() const { return out_; }
  void sample(std::int64_t index, float* x, float* y) const;
  // Generates every sample once and serves later requests from memory
  // (like a TensorDataset) when that takes at most `max_bytes`.
  bool materialize(double max_bytes);
  // `size` samples already in memory (x: size*in, y: size*out), served as a
  // materialized dataset serves them. For benchmarks of the gather: its time
  // depends on the widths, not on the values, and the teacher's generation
  // took 60% of a `measure kernels` run (perf, AMD EPYC Zen 3, 7 Dec 2026).
  static Dataset held(int in, int out, std::vector<float> x, std::vector<float> y);

 private:
  Dataset() = default;
  void generate(std::int64_t index, float* x, float* y) const;
  std::vector<float> cache_x_, cache_y_;
  std::string task_;
  int in_ = 0, out_ = 0;
  std::int64_t size_ = 0;
  std::uint64_t seed_ = 0;
  std::vector<double> w_, b_;  // teacher features
};

// DistributedSampler(shuffle=True, drop_last=False): a seeded permutation
// per epoch, padded by wrapping to a multiple of the world size; rank r
// takes positions r, r+W, r+2W, ...
std::vector<std::int64_t> shard_indices(std::int64_t dataset_size, int world, int rank, std::uint64_t seed, int epoch);

}  // namespace ks
