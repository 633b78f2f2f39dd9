// Validation plan YAML (validation/plans/*.yaml): ks::load_validation_plan.
// Relative file names in a plan resolve against the source tree.
#include "fuzz_target.hpp"
#include "validation/validate.hpp"

KS_FUZZ_TARGET(validation_plan) {
  ks::fuzz::enter_source_dir();
  const std::string path = ks::fuzz::write_temp("plan.yaml", data, size);
  ks::fuzz::expect_no_crash([&] { ks::load_validation_plan(path); });
}
