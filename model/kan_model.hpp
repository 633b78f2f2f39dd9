#pragma once
// What a KAN training iteration consists of: its parameters (with
// efficient-kan's names and orders) and, for the efficient-kan
// implementation, its sequence of kernels with FLOPs, bytes moved and the
// activations autograd keeps. Pure: shapes in, counts out.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config.hpp"

namespace ks {

struct Param {
  std::string name;  // "layers.{i}.base_weight" etc.
  int layer = 0;
  std::int64_t numel = 0;
  double bytes() const { return 4.0 * static_cast<double>(numel); }  // fp32
};

struct KanShape {
  std::vector<std::int64_t> widths;
  int grid_size = 5;
  int spline_order = 3;
  int layers() const { return static_cast<int>(widths.size()) - 1; }
  std::int64_t coeffs() const { return grid_size + spline_order; }           // C = G + k
  std::int64_t knots() const { return grid_size + 2 * spline_order + 1; }    // per input
};

// Parameters in definition order (what parameters() yields): per layer
// base_weight, spline_weight, spline_scaler.
std::vector<Param> kan_parameters(const KanShape& s);
// Buffers (efficient-kan's per-layer grid): bytes in total.
double kan_buffer_bytes(const KanShape& s);
// Indices into kan_parameters() in the order gradients become ready in
// backward (reference: layers last to first; inside a layer spline_weight,
// spline_scaler, base_weight).
std::vector<int> kan_ready_order(const KanShape& s);
std::int64_t kan_parameter_count(const KanShape& s);
// The most parameters kanscale describes (4 PB of fp32): far beyond any
// model, and low enough that every count and byte total derived from a shape
// stays exact in 64-bit integers and doubles.
constexpr double kMaxKanParameters = 1e15;
// Parameters counted in floating point, so that no width overflows the count.
double kan_parameter_count_approx(const KanShape& s);
// "" when the shape is within those limits; otherwise what is too large.
std::string kan_size_problem(const KanShape& s);

enum class OpKind { gemm, elementwise };
enum class Phase { zero_grad, forward, loss, backward, grad_copy, copy_back, optimizer };
const char* to_string(Phase p);

struct Op {
  std::string name;
  OpKind kind = OpKind::elementwise;
  Phase phase = Phase::forward;
  int layer = -1;
  double flops = 0;
  double bytes = 0;        // moved to/from memory
  double saved_bytes = 0;  // activations kept for backward (forward ops)
  double temp_bytes = 0;   // largest tensor it writes that is not kept
  int ready_param = -1;    // after this op, this parameter's gradient is in its bucket
  // Fitted ops (implementation kanscale): the calibration's cost for this
  // class; empty: the kind's roofline/linear cost.
  std::string cost_class;
  double elements = 0;  // (sample, input) pairs whose bases this op evaluates (a backward: their derivatives, for the input gradient)
  double weights = 0;   // spline weights (in*out*C) the op rearranges or reduces
  // PyTorch's view of the op (implementation pytorch): the class torch's
  // profiler shows it as (formats/torch_trace.hpp: "forward:sub",
  // "backward:MulBackward0", "optimizer:addcdiv_", ...); empty for a kernel
  // that runs inside an op already listed (an autograd node's kernels).
  std::string torch_class;
  // Dispatch only, no kernel: a view, an autograd node's bookkeeping, a
  // scalar read. It costs host time, which the device-only replay does not
  // model yet (0 s there).
  bool host_only = false;
  // The PyTorch op class (kanscale measure torch-ops, model/config.hpp's
  // TorchOpCost) whose measured unit this op is part of: "forward:bases",
  // "backward:spline_linear@first", "reducer", "adam", ... A unit's cost,
  // unit_calls x fixed + unit_elements x per_element, is carried by one of
  // its ops; the unit's other ops carry 0 (unit_calls 0).
  std::string torch_unit;
  double unit_calls = 0, unit_elements = 0;
};

// FLOPs and bytes of kanscale's own CPU/CUDA layer (measure/kan_cpu):
// local-support bases in a [B][in*C] matrix, GEMM contractions over all C.
struct FlopsBytes {
  double flops = 0;
  double bytes = 0;
};
FlopsBytes kanscale_layer_forward(std::int64_t in, std::int64_t out, int G, int k, std::int64_t batch);
FlopsBytes kanscale_layer_backward(std::int64_t in, std::int64_t out, int G, int k, std::int64_t batch, bool need_dx);

// The cost classes of kanscale's iteration (what `kanscale measure kernels`
// times and `kanscale fit` fits): load_batch, kan_forward, mse,
// kan_backward, bucket_copy, copy_back, adam.
const std::vector<std::string>& kanscale_cost_classes();

// "torch 2.11.0+cu130, ..." (a calibration's measured_with), "2.11", "1.13":
// torch2 from major version 2; nullopt when `version` names none.
std::optional<TorchOpSet> torch_op_set_of(const std::string& version);
const char* torch_op_set_name(TorchOpSet set);  // "torch 1.13", "torch 2.x", ...
// The torch a workload's job runs: what a reader found (Workload::torch_ops),
// else its key torch, else the torch the calibration's op classes were
// measured with (`cal` may be null), else 1.13; torch 2 on a GPU (`gpu`)
// with Adam's foreach path.
TorchOpSet job_torch_ops(const Workload& w, const Calibration* cal, bool gpu);

// One training iteration of efficient-kan's KAN under DDP on one rank, in
// execution order: zero_grad, DDP's broadcast of the grids (with
// broadcast_buffers), forward per layer, MSE loss, backward per layer in
// reverse (autograd's nodes, DDP's copy of each gradient into its bucket,
// scaled by 1/world), copy back from buckets (unless gradient_as_bucket_view),
// Adam (the single-tensor path torch takes on a CPU). Every op torch dispatches at the
// top of its phase is listed with its torch_class, views and autograd nodes
// as host_only ops: the list matches torch.profiler's count per class
// (tests/unit_torch_trace.cpp). The all-reduces are the replay's, per bucket.
std::vector<Op> efficient_kan_iteration(const KanShape& s, std::int64_t batch, bool gradient_as_bucket_view,
                                        bool broadcast_buffers = false, TorchOpSet set = TorchOpSet::torch1);

// One iteration of kanscale's own trainer (measure/trainer.cpp): load the
// batch, forward per layer, MSE, backward per layer (each followed by its
// three bucket copies), copy back (unless gradient_as_bucket_view), Adam.
std::vector<Op> kanscale_iteration(const KanShape& s, std::int64_t batch, bool gradient_as_bucket_view);

}  // namespace ks
