// Calibration YAML (configs/calibrations/*.yaml), read against the shipped
// local-cpu cluster (an MPI cluster) and a GPU cluster (NCCL terms).
#include "fuzz_target.hpp"
#include "model/config.hpp"
#include "formats/config_files.hpp"

KS_FUZZ_TARGET(calibration) {
  ks::fuzz::enter_source_dir();
  static const ks::Cluster cpu = ks::load_cluster("configs/clusters/local-cpu.yaml");
  static const ks::Cluster gpu = ks::load_cluster("configs/clusters/dgx-a100.yaml");
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (const ks::Cluster* c : {&cpu, &gpu})
    ks::fuzz::expect_no_crash([&] { ks::parse_calibration(text, "fuzz.yaml", *c, ks::Precision::fp32); });
}
