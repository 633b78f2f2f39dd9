#pragma once
// The machine a measurement (and so a calibration) was taken on: what a
// user needs to see to know whether a calibration belongs to the machine in
// front of them.
#include <string>

namespace ks {

struct Machine {
  std::string cpu_model;  // /proc/cpuinfo's model name
  int cores = 0;          // online logical CPUs
  std::string isa;        // the vector extensions the kernels can use, e.g. "avx2 fma avx512f"
  double memory_bytes = 0;
  std::string gpu;                 // model and memory, or "none"
  std::string collective_library;  // the MPI or NCCL library's version line
  bool empty() const { return cpu_model.empty() && cores == 0; }
};

// "AMD EPYC, 2 cores, avx2 fma, 7.8 GiB" (and the GPU where there is one).
std::string describe(const Machine& m);

// Empty when `here` is the machine `calibrated` describes (same CPU model,
// cores, vector extensions and GPU; the GPU is not compared when here.gpu
// is empty, i.e. unknown); else one line saying how they differ.
std::string machine_mismatch(const Machine& calibrated, const Machine& here);

}  // namespace ks
