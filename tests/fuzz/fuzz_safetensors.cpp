// safetensors checkpoints (kanscale train --checkpoint, eval, train --resume):
// ks::read_safetensors.
#include "fuzz_target.hpp"
#include "measure/safetensors.hpp"

KS_FUZZ_TARGET(safetensors) {
  const std::string path = ks::fuzz::write_temp("model.safetensors", data, size);
  ks::fuzz::expect_no_crash([&] { ks::read_safetensors(path); });
}
