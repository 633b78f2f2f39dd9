#pragma once
// The fast fp32 CPU path of the KAN layer. The bases come from the local
// support: per (sample, input) only k+1 are non-zero, found by the Cox-de
// Boor recursion restricted to the interval x falls in (O(k^2) work instead
// of efficient-kan's O((G+2k) k) tensors). They are laid into a [B][in*C]
// matrix so that the three spline contractions (forward, weight gradient,
// input gradient) are GEMMs (Eigen, vectorised and blocked); the input
// gradient then needs only the k+1 derivative values per (sample, input).
// Measured (kanscale bench kernels): GEMMs over the C bases at 60-80% of the
// machine's SGEMM rate beat a sparse axpy formulation, which is bound by
// memory traffic on the [in][C][out] weights, for every G up to 20.
// Threads: OpenMP and Eigen. Results are reproducible for a given thread
// count; a different count splits GEMM sums differently (last-bit changes).
#include <cstdint>
#include <functional>
#include <vector>

#include "kan.hpp"

namespace ks {

struct OpCount {
  double flops = 0;
  double bytes = 0;
};

// What forward keeps for backward.
// Backward workspace: needed only inside one layer's backward, so a net's
// layers share one (sized for the largest), as the memory model assumes.
struct BackwardScratch {
  std::vector<float> tmp;  // [B*in]
  std::vector<float> dsp;  // [B][in*C]
  std::size_t floats() const { return tmp.size() + dsp.size(); }
};

// Seconds each phase of the CPU path took, summed over calls: kanscale
// bench kernels' breakdown. A net times its phases only when given one
// (KanCpuNet::time_phases); otherwise no clock is read.
struct KernelPhases {
  enum Phase : int {
    weight_layout,  // forward: the scaled spline weight laid out [in][C][out]
    bases,          // forward: SiLU and the k+1 local bases per (sample, input)
    base_gemm,      // forward: silu(x) Wb^T
    spline_gemm,    // forward: bases x scaled spline weight
    base_grads,     // backward: dWb = dy^T silu(x), dy Wb
    spline_grads,   // backward: the spline weight's and the input's GEMMs over the bases
    per_weight,     // backward: the spline weight's and scaler's gradients, a pass over the weights
    input_grad,     // backward: dx from the k+1 basis derivatives and silu'
    loss,           // the MSE and its gradient
    count
  };
  double seconds[count] = {};
  static const char* name(int p);
};

// What a layer's forward keeps for its backward.
struct LayerWork {
  KernelPhases* phases = nullptr;  // where to add each phase's time; null: untimed
  int B = 0;
  std::vector<int> first;     // [B*in] index of the first non-zero basis (may be < 0); INT_MIN: none
  std::vector<float> bmat;    // [B][in*C] bases (k+1 non-zero per input)
  std::vector<float> dval;    // [B][k+1][in] derivatives of the local bases
  std::vector<float> act;     // [B*in] silu(x)
  std::vector<float> ws;      // [out][in][C] spline_scaler * spline_weight
};

// Bases at x from the knots t (G+2k+1 of them): writes the index of the
// first of the k+1 local bases and their values (and derivatives when db
// is given). Returns false outside the grid (all bases zero).
bool local_basis(const float* t, int G, int k, float x, int* first, float* b, float* db);

void layer_forward_cpu(const KanLayer& L, const float* x, int B, float* y, LayerWork& w);
// Gradients are written (not accumulated). dx may be null (first layer).
void layer_backward_cpu(const KanLayer& L, const float* x, int B, const float* dy, const LayerWork& w, BackwardScratch& s,
                        float* d_base, float* d_spline, float* d_scaler, float* dx);

OpCount layer_forward_count(const KanLayer& L, int B);
OpCount layer_backward_count(const KanLayer& L, int B, bool need_dx);

// A whole net on the CPU: activations and per-layer work kept between
// forward and backward; gradients per parameter in definition order.
class KanCpuNet {
 public:
  explicit KanCpuNet(KanNet& net);
  // Returns the MSE loss (mean over B*out) of targets T [B][out].
  // `after_layer(l)` is called once layer l is done (for timing).
  double forward(const float* X, const float* T, int B, const std::function<void(int)>& after_layer = nullptr);
  // Backward from the loss of the last forward. `ready(p)` is called as soon
  // as parameter p's gradient is final, in efficient-kan's ready order.
  // `piece()` is called between pieces of work (for communication progress).
  // `piece(l)` is called after layer l's backward (progress, timing).
  void backward(const std::function<void(int)>& ready, const std::function<void(int)>& piece);
  std::vector<std::vector<float>>& grads() { return grads_; }
  // Adds each phase's time to `p` from now on (null: stop timing).
  void time_phases(KernelPhases* p);
  const std::vector<float>& output() const { return acts_.back(); }
  KanNet& net() { return net_; }

 private:
  KanNet& net_;
  int B_ = 0;
  std::vector<std::vector<float>> acts_;  // acts_[0] = X
  std::vector<LayerWork> work_;
  BackwardScratch scratch_;  // shared by the layers' backward passes
  std::vector<float> dy_, dx_;
  std::vector<float> target_;
  std::vector<std::vector<float>> grads_;
  KernelPhases* phases_ = nullptr;
};

// MSE (mean over n) of y against t, and its gradient dy = 2(y-t)/n.
double mse_forward_backward(const float* y, const float* t, std::size_t n, float* dy);

// Sets the threads the CPU path uses (OpenMP and Eigen).
void set_cpu_threads(int threads);
// This machine's FP32 GEMM rate (FLOP/s) at `threads`: Eigen SGEMM 1024^3,
// median of 7 after 2 warm-ups, built with the kernels' flags.
double measure_gemm_flops(int threads);
// oneDNN's SGEMM (the library the kernels call, through sgemm below) on
// C[M][N] = op(A) op(B) at `threads`: FLOP/s, median of 7 after 2 warm-ups
// (issue 60: the reference the kernels are held to).
double measure_onednn_sgemm_flops(int threads, std::size_t M, std::size_t N, std::size_t K, char ta = 'N', char tb = 'N');

}  // namespace ks
