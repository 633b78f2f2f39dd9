#pragma once
// How torch's DistributedSampler and DataLoader (both drop_last=False)
// split an epoch over the ranks: the simulator's study and the live
// trainer take their epochs from here.
#include <cstdint>

namespace ks {

struct EpochSplit {
  std::int64_t samples_per_rank = 0;  // ceil(D / N): the sampler pads the dataset to a multiple of N
  std::int64_t batch = 0;             // the batch, or the rank's samples when they are fewer
  std::int64_t iterations = 0;        // ceil(samples_per_rank / batch); the last batch may be short
};

// dataset_size >= 1, ranks >= 1, batch_per_rank >= 1.
EpochSplit distributed_sampler_split(std::int64_t dataset_size, std::int64_t ranks, std::int64_t batch_per_rank);

}  // namespace ks
