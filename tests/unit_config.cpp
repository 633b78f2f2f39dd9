#include <doctest/doctest.h>

#include "model/config.hpp"
#include "formats/config_files.hpp"
#include "formats/yaml_reader.hpp"

using namespace ks;

namespace {
Cluster ft3_cluster() { return load_cluster(KANSCALE_SOURCE_DIR "/configs/clusters/finisterrae3.yaml"); }

// The calibration example of docs/configuration.md, key for key.
const char* kCalib = R"(
name: my-cluster-2026-11
source: fitted
fitted_from: "measure/kernels-node17.json, measure/allreduce-8ranks.json"
concurrency: 2
compute:
  gemm:        {fixed: "9us", flop_rate: "14TFLOP/s", byte_rate: "1300GB/s", combine: sum}
  elementwise: {fixed: "7us", byte_rate: "1200GB/s", combine: sum}
  host_overhead: "150us"
  jitter_sigma: 0.02
  interference: 0.05
collectives:
  nccl:
    bus_bandwidth_intra: "8.2GB/s"
    bus_bandwidth_inter: "11GB/s"
    base_latency_ring: {LL: "3.6us", LL128: "10us", Simple: "8.4us"}
    hop_latency_net_ring: {LL: "2.7us", LL128: "4us", Simple: "9.6us"}
  mpi_regimes:
    - {below: "10kB", algorithm: recursive_doubling, latency: "3us", bandwidth: "4GB/s"}
    - {algorithm: ring, latency: "5us", bandwidth: "9GB/s"}
memory:
  runtime: "600MiB"
  fixed: "2KiB"
  per_parameter: "24B"
  activation_factor: 1.5
  fit: {r2: 0.99}
)";
}  // namespace

TEST_CASE("the shipped clusters parse to their datasheet numbers") {
  const Cluster c = ft3_cluster();
  CHECK(c.gpus_per_node == 2);
  CHECK(c.gpu.fp32_flops == 19.5e12);
  CHECK(c.gpu.memory_bandwidth_Bps == 1555e9);
  CHECK(c.gpu.memory_bytes == 40.0 * 1073741824);
  CHECK(c.intra.kind == LinkKind::shm);
  CHECK(c.net.nic_bandwidth_Bps == 12.5e9);  // 100 Gb/s
  CHECK(c.collectives.channels == 10);
  const Cluster d = load_cluster(KANSCALE_SOURCE_DIR "/configs/clusters/dgx-a100.yaml");
  CHECK(d.intra.kind == LinkKind::nvlink);
  CHECK(d.net.nics_per_node * d.net.nic_bandwidth_Bps == 200e9);  // 8 x 200 Gb/s
}

TEST_CASE("the datasheet calibration is derived and labelled so") {
  const Cluster c = ft3_cluster();
  const Calibration k = datasheet_calibration(c, Precision::tf32);
  CHECK(k.source == "datasheet");
  CHECK(k.gemm.flop_rate == 156e12);  // tf32 peak for GEMMs
  CHECK(k.elementwise.byte_rate == 1555e9);
  CHECK(k.gemm.roofline);
  CHECK(k.jitter_sigma == 0);
  CHECK(k.nccl.base_latency_us[0][2] == doctest::Approx(8.4));  // ring Simple, 2.14.3
  // roofline: 5 us + max(2e9 FLOP / 156e12, 1e6 B / 1555e9)
  CHECK(k.gemm.time_s(2e9, 1e6) == doctest::Approx(5e-6 + 2e9 / 156e12).scale(0));
}

TEST_CASE("a calibration file overrides the datasheet values") {
  const Calibration k = parse_calibration(kCalib, "k.yaml", ft3_cluster(), Precision::fp32);
  CHECK(k.source == "fitted");
  CHECK(k.concurrency == 2);
  CHECK_FALSE(k.gemm.roofline);
  // sum: 9 us + 1.4e9/14e12 + 1.3e6/1.3e12 = 9 + 100 + 1 us
  CHECK(k.gemm.time_s(1.4e9, 1.3e6) == doctest::Approx(110e-6).scale(0));
  CHECK(k.elementwise.byte_rate == 1200e9);
  CHECK(k.host_overhead_s == doctest::Approx(150e-6).scale(0));
  CHECK(k.interference == 0.05);
  CHECK(*k.nccl_bus_bw_inter_Bps == 11e9);
  CHECK(k.nccl.hw_latency_us[2][0][2] == doctest::Approx(9.6));
  REQUIRE(k.mpi_regimes.size() == 2);
  CHECK(k.mpi_regimes[0].max_bytes == 10000);
  CHECK(*k.mpi_regimes[1].bandwidth_Bps == 9e9);
  CHECK(k.runtime_memory_bytes == 600.0 * 1048576);
  CHECK(k.memory_fixed_bytes == 2048);
  CHECK(*k.memory_bytes_per_parameter == 24);
  CHECK(*k.memory_activation_factor == 1.5);
}

TEST_CASE("calibration and cluster errors name file, line and key") {
  std::string bad = kCalib;
  bad.replace(bad.find("jitter_sigma"), 12, "jitter_sigm");
  CHECK_THROWS_WITH_AS(parse_calibration(bad, "k.yaml", ft3_cluster(), Precision::fp32),
                       "k.yaml:10:3: key 'compute.jitter_sigm': unknown key (did you mean 'jitter_sigma'?)", InputError);
  CHECK_THROWS_WITH_AS(
      parse_cluster(R"(name: x
nodes: 1
gpus_per_node: 1
gpu: {model: m, compute_capability: 8.0, fp32: "1TFLOP/s", memory_bandwidth: "1GB/s", memory: "1GiB", kernel_launch: "1us", runtime_memory: "0B"}
intra_node: {kind: pcie, bandwidth: "1GB/s", latency: "1us"}
network: {nics_per_node: 1, nic_bandwidth: "1Gbps", latency: "1us"}
collectives: {family: nccl, version: "2.21.5", algorithms: [ring], protocols: [Simple], channels: 2}
)",
                    "c.yaml"),
      doctest::Contains("NCCL version \"2.21.5\" is not supported"), InputError);
}

TEST_CASE("a calibration with the other collective family's terms only is flagged, not silently used") {
  const Cluster nccl_cluster = ft3_cluster();
  const Cluster mpi_cluster = load_cluster(KANSCALE_SOURCE_DIR "/configs/clusters/local-cpu.yaml");
  const std::string mpi_only = "name: m\nsource: fitted\nfitted_from: test\nconcurrency: 1\ncollectives:\n  mpi_regimes:\n    - {algorithm: ring, latency: \"5us\"}\n";
  const std::string nccl_only = "name: n\nsource: fitted\nfitted_from: test\nconcurrency: 1\ncollectives:\n  nccl: {bus_bandwidth_intra: \"8GB/s\"}\n";
  CHECK(collective_family_mismatch(nccl_cluster, parse_calibration(mpi_only, "m.yaml", nccl_cluster, Precision::fp32))
            .find("has MPI collective terms only; cluster 'finisterrae3' uses NCCL") != std::string::npos);
  CHECK(collective_family_mismatch(mpi_cluster, parse_calibration(mpi_only, "m.yaml", mpi_cluster, Precision::fp32)).empty());
  CHECK(!collective_family_mismatch(mpi_cluster, parse_calibration(nccl_only, "n.yaml", mpi_cluster, Precision::fp32)).empty());
  CHECK(collective_family_mismatch(nccl_cluster, datasheet_calibration(nccl_cluster, Precision::fp32)).empty());
}
