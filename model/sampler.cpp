#include "sampler.hpp"

#include <algorithm>

namespace ks {

EpochSplit distributed_sampler_split(std::int64_t dataset_size, std::int64_t ranks, std::int64_t batch_per_rank) {
  EpochSplit s;
  s.samples_per_rank = (dataset_size + ranks - 1) / ranks;
  s.batch = std::min(batch_per_rank, s.samples_per_rank);
  s.iterations = (s.samples_per_rank + s.batch - 1) / s.batch;
  return s;
}

}  // namespace ks
