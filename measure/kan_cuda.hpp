#pragma once
// The CUDA path of the KAN layer (built when nvcc is found, for sm_80 and
// sm_90). Same algorithm as the CPU path: a kernel computes SiLU and the k+1
// local bases per (sample, input) into a [B][in*C] matrix, cuBLAS does the
// contractions, small kernels do the spline-weight and input gradients.
// This header is plain C++: callers never see CUDA types. The kernels run
// inside KanGpuNet (gpu.hpp); these wrappers build a one-layer net.
#include <string>

#include "gpu.hpp"
#include "kan.hpp"
#include "kan_cpu.hpp"

namespace ks {

// Host-array wrappers (they copy to the device, run, copy back): for tests
// and microbenchmarks. Same contracts as layer_forward_cpu/backward_cpu.
// Errors from CUDA or cuBLAS throw std::runtime_error naming the call.
void layer_forward_cuda(const KanLayer& L, const float* x, int B, float* y);
void layer_backward_cuda(const KanLayer& L, const float* x, int B, const float* dy, float* d_base, float* d_spline,
                         float* d_scaler, float* dx);

}  // namespace ks
