// Cluster YAML (configs/clusters/*.yaml): ks::parse_cluster.
#include "fuzz_target.hpp"
#include "model/config.hpp"
#include "formats/config_files.hpp"

KS_FUZZ_TARGET(cluster) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  ks::fuzz::expect_no_crash([&] { ks::parse_cluster(text, "fuzz.yaml"); });
}
