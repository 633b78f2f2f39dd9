// Measurement plan YAML (configs/measure/*.yaml): ks::load_kernel_plan.
#include "fuzz_target.hpp"
#include "measure/kernel_bench.hpp"

KS_FUZZ_TARGET(measure_plan) {
  const std::string path = ks::fuzz::write_temp("plan.yaml", data, size);
  ks::fuzz::expect_no_crash([&] { ks::load_kernel_plan(path); });
}
