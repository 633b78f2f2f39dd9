// Workload YAML (configs/workloads/*.yaml): ks::parse_workload.
#include "fuzz_target.hpp"
#include "model/config.hpp"
#include "formats/config_files.hpp"

KS_FUZZ_TARGET(workload) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  ks::fuzz::expect_no_crash([&] { ks::parse_workload(text, "fuzz.yaml"); });
}
