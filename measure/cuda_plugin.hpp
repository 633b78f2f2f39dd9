#pragma once
// The CUDA and NCCL backends live in a plugin, libkanscale_cuda.so (built
// whenever nvcc is found, beside the kanscale executable), loaded only when
// a command asks for them: the CPU path does not pay for the CUDA libraries
// (measured: 70 ms of start-up and 220 MB of resident memory per process).
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "collective_sweep.hpp"
#include "comm.hpp"
#include "kernel_bench.hpp"
#include "trainer.hpp"

namespace ks {

struct CudaPlugin {
  bool (*device_available)(std::string* why);
  TrainResult (*train)(const TrainOptions& o, Comm& host);  // kanscale train --backend cuda
  std::vector<KernelRecord> (*kernel_plan)(Comm& comm, const KernelPlan& plan, const std::string& json, const std::string& csv,
                                        const std::string& command_line, const std::string& resume);
  // The sweep on this rank's GPU over NCCL, bootstrapped over `host`; returns #wrong.
  std::int64_t (*nccl_sweep)(Comm& host, const SweepOptions& o, std::ostream& out);
};

// Loads the plugin once; null, with the reason in `why`, when this build
// has none (no nvcc at configure time) or it cannot be loaded.
const CudaPlugin* cuda_plugin(std::string* why);

}  // namespace ks

// The plugin's one entry point.
extern "C" const ks::CudaPlugin* kanscale_cuda_plugin();
