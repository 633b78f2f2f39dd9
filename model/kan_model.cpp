#include "kan_model.hpp"
#include "limits.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <iterator>

namespace ks {

const char* to_string(Phase p) {
  switch (p) {
    case Phase::zero_grad: return "zero_grad";
    case Phase::forward: return "forward";
    case Phase::loss: return "loss";
    case Phase::backward: return "backward";
    case Phase::grad_copy: return "grad_copy";
    case Phase::copy_back: return "copy_back";
    case Phase::optimizer: return "optimizer";
  }
  return "?";
}

std::vector<Param> kan_parameters(const KanShape& s) {
  std::vector<Param> p;
  for (int l = 0; l < s.layers(); ++l) {
    const std::int64_t in = s.widths[l], out = s.widths[l + 1];
    const std::string pre = "layers." + std::to_string(l) + ".";
    p.push_back({pre + "base_weight", l, out * in});
    p.push_back({pre + "spline_weight", l, out * in * s.coeffs()});
    p.push_back({pre + "spline_scaler", l, out * in});
  }
  return p;
}

double kan_buffer_bytes(const KanShape& s) {
  double b = 0;
  for (int l = 0; l < s.layers(); ++l) b += 4.0 * static_cast<double>(s.widths[l] * s.knots());
  return b;
}

std::vector<int> kan_ready_order(const KanShape& s) {
  std::vector<int> order;
  for (int l = s.layers() - 1; l >= 0; --l) {
    order.push_back(3 * l + 1);  // spline_weight
    order.push_back(3 * l + 2);  // spline_scaler
    order.push_back(3 * l + 0);  // base_weight
  }
  return order;
}

std::int64_t kan_parameter_count(const KanShape& s) {
  std::int64_t n = 0;
  for (const auto& p : kan_parameters(s)) n += p.numel;
  return n;
}

double kan_parameter_count_approx(const KanShape& s) {
  double n = 0;
  for (int l = 0; l < s.layers(); ++l)
    n += static_cast<double>(s.widths[l]) * static_cast<double>(s.widths[l + 1]) * static_cast<double>(s.coeffs() + 2);
  return n;
}

std::string kan_size_problem(const KanShape& s) {
  if (s.grid_size < 1 || s.grid_size > kMaxGridSize)
    return "grid size " + std::to_string(s.grid_size) + " is outside 1 to " + std::to_string(kMaxGridSize);
  if (s.spline_order < 1 || s.spline_order > kMaxSplineOrder)
    return "spline order " + std::to_string(s.spline_order) + " is outside 1 to " + std::to_string(kMaxSplineOrder);
  for (auto w : s.widths)
    if (w < 1) return "width " + std::to_string(w) + " is below 1";
  const double n = kan_parameter_count_approx(s);
  if (n <= kMaxKanParameters) return "";
  char buf[160];
  std::snprintf(buf, sizeof buf, "the KAN would have %.3g parameters; kanscale handles at most %.0e", n, kMaxKanParameters);
  return buf;
}

namespace {

constexpr double F = 4.0;  // bytes per fp32 element

struct Builder {
  std::vector<Op> ops;
  Op& add(std::string name, OpKind kind, Phase phase, int layer, double flops, double bytes) {
    Op o;
    o.name = std::move(name);
    o.kind = kind;
    o.phase = phase;
    o.layer = layer;
    o.flops = flops;
    o.bytes = bytes;
    ops.push_back(o);
    return ops.back();
  }
  // An elementwise kernel over n elements reading `reads` and writing one
  // fp32 tensor per element (1 FLOP per element).
  Op& ew(std::string name, Phase phase, int layer, double n, double read_elems, double written_bytes_per_elem = F) {
    return add(std::move(name), OpKind::elementwise, phase, layer, n, F * read_elems + written_bytes_per_elem * n);
  }
  // C[m x n] = A[m x k] B[k x n]
  Op& gemm(std::string name, Phase phase, int layer, double m, double n, double k) {
    return add(std::move(name), OpKind::gemm, phase, layer, 2.0 * m * n * k, F * (m * k + k * n + m * n));
  }
};

}  // namespace

// The op sequences follow efficient-kan's KANLinear.forward/b_splines and
// what autograd runs for them (PyTorch 1.13); saved tensors follow autograd's
// rules: mul saves each operand the other's gradient needs, div by a tensor
// that needs no gradient saves only the divisor, sub and add save nothing.
namespace {

// efficient_kan_iteration's builder: kernels with their torch class, and the
// dispatches with no kernel.
struct TorchOps {
  Builder b;
  TorchOpSet set = TorchOpSet::torch1;
  // slices of a tensor indexed [:, a:b] (2 dimensions) or [:, :, a:b] (3):
  // torch 1.13 slices every dimension, torch 2 skips the full ones
  int slices(int dims) const { return set == TorchOpSet::torch1 ? dims : 1; }
  // torch's class of the op just added
  static Op& as(Op& o, const char* cls) {
    o.torch_class = cls;
    return o;
  }
  // The ops added since `from` that have no unit yet form one unit of
  // PyTorch op class `cls` (op_bench.py's classes and element counts); the
  // first of them carries its calls and elements.
  void unit(std::size_t from, const std::string& cls, double calls, double elements) {
    bool first = true;
    for (std::size_t i = from; i < b.ops.size(); ++i) {
      Op& o = b.ops[i];
      if (!o.torch_unit.empty()) continue;
      o.torch_unit = cls;
      if (first) {
        o.unit_calls = calls;
        o.unit_elements = elements;
        first = false;
      }
    }
  }
  std::size_t mark() const { return b.ops.size(); }
  // a dispatch with no kernel (a view, an autograd node, a scalar read), n times
  void host(const std::string& cls, Phase phase, int layer, int n = 1) {
    for (int i = 0; i < n; ++i) {
      Op& o = b.add(cls, OpKind::elementwise, phase, layer, 0, 0);
      o.torch_class = cls;
      o.host_only = true;
    }
  }
};

// DDP's forward first broadcasts the module's buffers (the grids) from rank
// 0: flattened into one tensor, broadcast, unflattened, copied back.
void ek_broadcast_buffers(TorchOps& t, const KanShape& s) {
  Builder& b = t.b;
  const int L = s.layers();
  const double grid_bytes = kan_buffer_bytes(s);
  const std::size_t from = t.mark();
  t.as(b.add("buffers flatten", OpKind::elementwise, Phase::forward, 0, 0, 2 * grid_bytes), "ddp:flatten_dense_tensors");
  t.host("ddp:broadcast_", Phase::forward, 0);  // the launch; the replay times the broadcast
  t.host("ddp:unflatten_dense_tensors", Phase::forward, 0);  // views of the flat tensor
  for (int l = 0; l < L; ++l) {
    const double g = 4.0 * static_cast<double>(s.widths[l] * s.knots());
    t.as(b.add("buffer copy_", OpKind::elementwise, Phase::forward, l, 0, 2 * g), "ddp:copy_");
  }
  t.unit(from, "ddp:forward", 1, grid_bytes / 4);  // op_bench: DDP's forward minus the bare model's, per buffer element
}

// One layer's forward: SiLU and the base linear, the Cox-de Boor recursion
// (each step's slices of the grid and of the bases), the scaled spline
// weight, the spline linear, the sum.
void ek_forward_layer(TorchOps& t, const KanShape& s, int l, double B) {
  Builder& b = t.b;
  const int k = s.spline_order;
  const double E = static_cast<double>(s.grid_size + 2 * s.spline_order);  // degree-0 intervals
  const double C = static_cast<double>(s.coeffs());
  const double in = static_cast<double>(s.widths[l]), out = static_cast<double>(s.widths[l + 1]);
  const bool xg = l > 0;  // the input of layer 0 is data: no gradient
  const double Bi = B * in;
  t.as(b.ew("silu", Phase::forward, l, Bi, Bi), "forward:silu").saved_bytes = xg ? F * Bi : 0;  // SiLU saves its input
  t.unit(t.mark() - 1, "forward:silu", 1, Bi);
  t.as(b.gemm("base_linear", Phase::forward, l, B, out, in), "forward:linear").saved_bytes = F * Bi;  // linear saves silu(x)
  t.unit(t.mark() - 1, "forward:base_linear", 1, Bi * out);
  const std::size_t bases_from = t.mark();
  t.host("forward:unsqueeze", Phase::forward, l);  // x.unsqueeze(-1)
  // degree 0: two comparisons to bool, an and, a cast to float; each
  // comparison slices the grid twice (grid[:, :-1])
  t.host("forward:slice", Phase::forward, l, t.slices(2));
  t.as(b.add("basis_ge", OpKind::elementwise, Phase::forward, l, Bi * E, F * Bi + Bi * E), "forward:ge").temp_bytes = Bi * E;
  t.host("forward:slice", Phase::forward, l, t.slices(2));
  t.as(b.add("basis_lt", OpKind::elementwise, Phase::forward, l, Bi * E, F * Bi + Bi * E), "forward:lt").temp_bytes = Bi * E;
  t.as(b.add("basis_and", OpKind::elementwise, Phase::forward, l, Bi * E, 3 * Bi * E), "forward:__and__").temp_bytes = Bi * E;
  Op& cast = t.as(b.add("basis_cast", OpKind::elementwise, Phase::forward, l, Bi * E, 5 * Bi * E), "forward:to");
  // bases0 is saved by the first recursion step when x needs a gradient
  cast.saved_bytes = xg ? F * Bi * E : 0;
  cast.temp_bytes = xg ? 0 : F * Bi * E;
  for (int p = 1; p <= k; ++p) {
    const double n = E - p;  // outputs per (sample, input) at degree p
    const double Bn = Bi * n;
    const std::string d = "basis_p" + std::to_string(p) + "_";
    for (const char* side : {"lo", "hi"}) {
      const std::string sd = d + side;
      // (x - t_j) or (t_j+p+1 - x): 2 slices of the grid
      t.host("forward:slice", Phase::forward, l, t.slices(2));
      t.as(b.ew(d + "sub_" + side, Phase::forward, l, Bn, Bi), "forward:sub").temp_bytes = F * Bn;
      // the knot differences (t_j+p - t_j): grid minus grid, 2 slices each
      t.host("forward:slice", Phase::forward, l, 2 * t.slices(2));
      t.as(b.ew(d + "knot_diff_" + side, Phase::forward, l, in * n, 2 * in * n), "forward:sub").temp_bytes = F * in * n;
      // q1 is saved by mul when the bases need a gradient
      t.as(b.ew(d + "div_" + side, Phase::forward, l, Bn, Bn + in * n), "forward:div").saved_bytes = (xg && p >= 2) ? F * Bn : 0;
      t.host("forward:slice", Phase::forward, l, t.slices(3));  // bases[:, :, :-1] or bases[:, :, 1:]
      t.as(b.ew(d + "mul_" + side, Phase::forward, l, Bn, 2 * Bn), "forward:mul").temp_bytes = F * Bn;
    }
    Op& sum = t.as(b.ew(d + "add", Phase::forward, l, Bn, 2 * Bn), "forward:add");
    // this degree's bases are saved by the next step's muls (if x needs a
    // gradient) and, at degree k, by the spline linear
    sum.saved_bytes = (p == k || xg) ? F * Bn : 0;
    sum.temp_bytes = sum.saved_bytes > 0 ? 0 : F * Bn;
  }
  t.unit(bases_from, "forward:bases", 1, Bi * E);
  t.host("forward:view", Phase::forward, l);       // bases.view(B, -1)
  const std::size_t bases_view = t.mark() - 1;
  const std::size_t ssw_from = t.mark();
  t.host("forward:unsqueeze", Phase::forward, l);  // spline_scaler.unsqueeze(-1)
  t.as(b.ew("scaled_spline_weight", Phase::forward, l, out * in * C, out * in * C + out * in), "forward:mul");
  t.host("forward:view", Phase::forward, l);  // scaled.view(out, -1)
  t.unit(ssw_from, "forward:scaled_spline_weight", 1, in * out * C);
  t.as(b.gemm("spline_linear", Phase::forward, l, B, out, in * C), "forward:linear");
  t.unit(bases_view, "forward:spline_linear", 1, B * in * C * out);  // with bases.view
  t.as(b.ew("add", Phase::forward, l, B * out, 2 * B * out), "forward:add");
  t.unit(t.mark() - 1, "forward:add", 1, B * out);
}

// The MSE loss (after broadcast_tensors of prediction and target) saves
// both; backward seeds the gradient with ones_like.
void ek_loss(TorchOps& t, const KanShape& s, double B) {
  Builder& b = t.b;
  const int L = s.layers();
  const double outw = static_cast<double>(s.widths.back());
  const std::size_t from = t.mark();
  t.host("loss:broadcast_tensors", Phase::loss, L - 1);
  t.as(b.add("mse_loss", OpKind::elementwise, Phase::loss, L - 1, 3 * B * outw, F * 2 * B * outw), "loss:mse_loss").saved_bytes =
      F * 2 * B * outw;
  t.unit(from, "loss:mse", 1, B * outw);
  const std::size_t back = t.mark();
  t.as(b.add("grad seed", OpKind::elementwise, Phase::loss, L - 1, 0, F), "backward:ones_like");
  t.host("backward:MseLossBackward0", Phase::loss, L - 1);
  b.add("mse_grad_zeros", OpKind::elementwise, Phase::loss, L - 1, 0, F * B * outw);  // its zeros_like
  b.ew("mse_loss_backward", Phase::loss, L - 1, B * outw, 2 * B * outw);
  t.unit(back, "backward:mse", 1, B * outw);
}

// Autograd's AccumulateGrad for a parameter (torch 1.13: add_ into .grad,
// which zero_grad left as zeros: read both, write one; torch 2: .grad is
// None, the gradient is stolen, no kernel), and DDP's hook copying the
// gradient into its bucket (scaled by 1/world).
void ready(TorchOps& t, const std::vector<Param>& params, int param_index) {
  const Param& p = params[param_index];
  t.host("backward:AccumulateGrad", Phase::grad_copy, p.layer);
  if (t.set == TorchOpSet::torch1)
    t.b.ew("accumulate_grad " + p.name, Phase::grad_copy, p.layer, static_cast<double>(p.numel), 2.0 * static_cast<double>(p.numel));
  Op& o = t.as(t.b.ew("bucket_copy " + p.name, Phase::grad_copy, p.layer, static_cast<double>(p.numel), static_cast<double>(p.numel)),
               "reducer:bucket_copy");
  o.ready_param = param_index;
  o.torch_unit = "reducer";  // its cost: the first reducer op carries the whole iteration's (efficient_kan_iteration)
}

// One layer's backward: autograd's nodes, each with the kernels it runs.
void ek_backward_layer(TorchOps& t, const KanShape& s, const std::vector<Param>& params, int l, double B) {
  Builder& b = t.b;
  const int k = s.spline_order;
  const double E = static_cast<double>(s.grid_size + 2 * s.spline_order);
  const double C = static_cast<double>(s.coeffs());
  const double in = static_cast<double>(s.widths[l]), out = static_cast<double>(s.widths[l + 1]);
  const bool xg = l > 0;
  const double Bi = B * in;
  const std::string first = xg ? "" : "@first";  // the first layer's linears: no input gradient
  std::size_t from = t.mark();
  t.host("backward:AddBackward0", Phase::backward, l);  // base + spline (costed with the spline linear)
  t.host("backward:MmBackward0", Phase::backward, l);   // the spline linear
  b.gemm("spline_linear_grad_weight", Phase::backward, l, out, in * C, B);
  if (xg) b.gemm("spline_linear_grad_input", Phase::backward, l, B, in * C, out);
  t.host("backward:TBackward0", Phase::backward, l);     // its weight's transpose
  t.unit(from, "backward:spline_linear" + first, 1, B * in * C * out);
  from = t.mark();
  t.host("backward:ViewBackward0", Phase::backward, l);  // scaled.view(out, -1)
  t.host("backward:MulBackward0", Phase::backward, l);   // spline_weight * spline_scaler.unsqueeze(-1)
  b.ew("scaled_spline_weight_grad_w", Phase::backward, l, out * in * C, out * in * C + out * in);
  ready(t, params, 3 * l + 1);
  b.ew("scaled_spline_weight_grad_s_mul", Phase::backward, l, out * in * C, 2 * out * in * C);
  b.ew("scaled_spline_weight_grad_s_sum", Phase::backward, l, out * in * C, out * in * C, F / C);  // writes out*in floats
  t.host("backward:UnsqueezeBackward0", Phase::backward, l);
  ready(t, params, 3 * l + 2);
  t.unit(from, "backward:scaled_spline_weight", 1, in * out * C);
  if (xg) {
    from = t.mark();
    t.host("backward:ViewBackward0", Phase::backward, l);  // bases.view(B, -1)
    for (int p = k; p >= 1; --p) {
      const double n = E - p, Bn = Bi * n;
      const std::string d = "basis_p" + std::to_string(p) + "_grad_";
      t.host("backward:AddBackward0", Phase::backward, l);  // lo + hi
      for (const char* side : {"lo", "hi"}) {
        const std::string sd = d + side + "_";
        t.host("backward:MulBackward0", Phase::backward, l);
        b.ew(sd + "mul_q", Phase::backward, l, Bn, 2 * Bn);        // grad of q = g * bases
        if (p >= 2) b.ew(sd + "mul_bases", Phase::backward, l, Bn, 2 * Bn);  // grad of bases = g * q
        t.host("backward:DivBackward0", Phase::backward, l);
        b.ew(sd + "div", Phase::backward, l, Bn, Bn);              // grad of t = g / d
        t.host("backward:SubBackward0", Phase::backward, l);
        if (std::string(side) == "hi") b.ew(sd + "neg", Phase::backward, l, Bn, Bn);  // d(t - x)/dx = -1
        b.add(sd + "sum_x", OpKind::elementwise, Phase::backward, l, Bn, F * Bn + F * Bi);  // reduce to x's shape
        b.ew(sd + "acc_x", Phase::backward, l, Bi, 2 * Bi);        // accumulate into grad x
        if (p >= 2) {
          // the bases' slices (bases[:, :, a:b]: three in torch 1.13, one in
          // torch 2), each undone by zeros of its input's shape (B, in, n+1)
          // and a copy in: the last dimension's n, the full slices' n+1 per
          // (sample, input)
          const int slices = t.slices(3);
          t.host("backward:SliceBackward0", Phase::backward, l, slices);
          for (int i = 0; i < slices; ++i) {
            b.add(sd + "slice_zeros", OpKind::elementwise, Phase::backward, l, 0, F * Bi * (n + 1));
            const double copied = i == 0 ? Bn : Bi * (n + 1);
            b.ew(sd + "slice_copy", Phase::backward, l, copied, copied);
          }
        }
      }
      if (p >= 2) b.ew(d + "acc_bases", Phase::backward, l, Bi * (n + 1), 2 * Bi * (n + 1));
    }
    t.host("backward:UnsqueezeBackward0", Phase::backward, l);  // x.unsqueeze(-1)
    t.unit(from, "backward:bases", 1, Bi * E);
  }
  from = t.mark();
  t.host("backward:MmBackward0", Phase::backward, l);  // the base linear
  b.gemm("base_linear_grad_weight", Phase::backward, l, out, in, B);
  if (xg) b.gemm("base_linear_grad_input", Phase::backward, l, B, in, out);
  t.host("backward:TBackward0", Phase::backward, l);
  ready(t, params, 3 * l + 0);
  t.unit(from, "backward:base_linear" + first, 1, Bi * out);
  if (xg) {
    from = t.mark();
    t.host("backward:SiluBackward0", Phase::backward, l);
    b.ew("silu_backward", Phase::backward, l, Bi, 2 * Bi);
    b.ew("acc_x", Phase::backward, l, Bi, 2 * Bi);
    t.unit(from, "backward:silu", 1, Bi);
  }
}

// torch 2's _multi_tensor_adam (torch/optim/adam.py, 2.11, not capturable):
// torch.tensor(1.0) on the CPU (to, lift_fresh, detach_), the step counts
// += 1 on the CPU (a _foreach_add_ of one-element tensors: no kernel), then
// one op each over all parameters: exp_avg lerp_ (12 B/elem), exp_avg_sq
// mul_ (8) and addcmul_ (12), two .item() per parameter (both bias
// corrections as Python numbers), sqrt (8), div_ by the bias correction
// (8), add_ eps (8), param addcdiv_ (16). On a GPU each is a few kernels
// over chunks of the tensors: one device op here.
void adam_foreach(TorchOps& t, const std::vector<Param>& params, double numel) {
  Builder& b = t.b;
  const int last = params.back().layer;
  for (const char* cls : {"optimizer:to", "optimizer:lift_fresh", "optimizer:detach_", "optimizer:_foreach_add_"})
    t.host(cls, Phase::optimizer, last);  // (the steps' add: host-only, on the CPU)
  struct Op1 {
    const char* name;
    const char* cls;
    double bytes_per_elem;
  };
  static constexpr Op1 kBefore[] = {{"exp_avg_lerp", "optimizer:_foreach_lerp_", 12},
                                    {"exp_avg_sq_mul", "optimizer:_foreach_mul_", 8},
                                    {"addcmul", "optimizer:_foreach_addcmul_", 12}};
  static constexpr Op1 kAfter[] = {{"sqrt", "optimizer:_foreach_sqrt", 8},
                                   {"div", "optimizer:_foreach_div_", 8},
                                   {"add_eps", "optimizer:_foreach_add_", 8},
                                   {"addcdiv", "optimizer:_foreach_addcdiv_", 16}};
  for (const auto& a : kBefore)
    t.as(b.add(std::string("adam_foreach_") + a.name, OpKind::elementwise, Phase::optimizer, last, numel, a.bytes_per_elem * numel), a.cls);
  t.host("optimizer:item", Phase::optimizer, last, 2 * static_cast<int>(params.size()));
  for (const auto& a : kAfter)
    t.as(b.add(std::string("adam_foreach_") + a.name, OpKind::elementwise, Phase::optimizer, last, numel, a.bytes_per_elem * numel), a.cls);
}

// After the all-reduces: the copy back from the buckets, Adam.
void ek_tail(TorchOps& t, const std::vector<Param>& params, bool gradient_as_bucket_view) {
  Builder& b = t.b;
  // ---- after the all-reduces: copy back (a view of the bucket, then the
  // copy into .grad), Adam
  if (!gradient_as_bucket_view) {
    const std::size_t from = t.mark();
    for (const auto& p : params) {
      t.host("reducer:as_strided", Phase::copy_back, p.layer);
      t.as(b.ew("copy_back " + p.name, Phase::copy_back, p.layer, static_cast<double>(p.numel), static_cast<double>(p.numel)),
         "reducer:copy_bucket_to_grad");
    }
    t.unit(from, "reducer", 0, 0);  // the reducer's cost is carried by its first op
  }
  double numel = 0;
  for (const auto& p : params) numel += static_cast<double>(p.numel);
  const std::size_t adam_from = t.mark();
  // _single_tensor_adam per parameter (torch/optim/adam.py): the step count
  // += 1 (a one-element tensor), the first moment (torch 1.13:
  // exp_avg.mul_(b1).add_(g, 1-b1), 8 and 12 B/elem; torch 2:
  // exp_avg.lerp_(g, 1-b1), 12), exp_avg_sq.mul_(b2).addcmul_(g, g, 1-b2)
  // (8, 12), the step read back as a Python number (.item()),
  // exp_avg_sq.sqrt() (8), / bias correction (8), .add_(eps) (8),
  // param.addcdiv_ (16).
  struct AdamOp {
    const char* name;
    const char* cls;
    double bytes_per_elem;  // < 0: one element (the step count)
  };
  static constexpr AdamOp kAdam1[] = {{"step", "optimizer:add_", -1},       {"exp_avg_mul", "optimizer:mul_", 8},
                                      {"exp_avg_add", "optimizer:add_", 12},  {"exp_avg_sq_mul", "optimizer:mul_", 8},
                                      {"addcmul", "optimizer:addcmul_", 12},  {"sqrt", "optimizer:sqrt", 8},
                                      {"div", "optimizer:div", 8},            {"add_eps", "optimizer:add_", 8},
                                      {"addcdiv", "optimizer:addcdiv_", 16}};
  static constexpr AdamOp kAdam2[] = {{"step", "optimizer:add_", -1},       {"exp_avg_lerp", "optimizer:lerp_", 12},
                                      {"exp_avg_sq_mul", "optimizer:mul_", 8}, {"addcmul", "optimizer:addcmul_", 12},
                                      {"sqrt", "optimizer:sqrt", 8},          {"div", "optimizer:div", 8},
                                      {"add_eps", "optimizer:add_", 8},       {"addcdiv", "optimizer:addcdiv_", 16}};
  if (t.set == TorchOpSet::torch2_foreach) {
    adam_foreach(t, params, numel);
    t.unit(adam_from, "adam", static_cast<double>(params.size()), numel);
    return;
  }
  const bool v1 = t.set == TorchOpSet::torch1;
  const AdamOp* adam = v1 ? kAdam1 : kAdam2;
  const std::size_t adam_ops = v1 ? std::size(kAdam1) : std::size(kAdam2);
  for (const auto& p : params) {
    const double n = static_cast<double>(p.numel);
    for (std::size_t i = 0; i < adam_ops; ++i) {
      const AdamOp& a = adam[i];
      const bool scalar = a.bytes_per_elem < 0;
      t.as(b.add(std::string("adam_") + a.name + " " + p.name, OpKind::elementwise, Phase::optimizer, p.layer, scalar ? 1 : n,
               scalar ? 2 * F : a.bytes_per_elem * n),
         a.cls);
      if (scalar) t.host("optimizer:item", Phase::optimizer, p.layer);
    }
  }
  t.unit(adam_from, "adam", static_cast<double>(params.size()), numel);
}

}  // namespace

std::optional<TorchOpSet> torch_op_set_of(const std::string& version) {
  // "torch 2.11.0+cu130, ..." (a fingerprint) or "2.11": the major version
  // right at the start, after "torch " where given
  const std::string prefix = "torch ";
  const std::size_t at = version.compare(0, prefix.size(), prefix) == 0 ? prefix.size() : 0;
  if (at >= version.size() || !std::isdigit(static_cast<unsigned char>(version[at]))) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const long major = std::strtol(version.c_str() + at, &end, 10);
  if (errno != 0 || major < 1 || (*end != '\0' && *end != '.')) return std::nullopt;
  return major >= 2 ? TorchOpSet::torch2 : TorchOpSet::torch1;
}

const char* torch_op_set_name(TorchOpSet set) {
  switch (set) {
    case TorchOpSet::torch1: return "torch 1.13";
    case TorchOpSet::torch2: return "torch 2.x";
    case TorchOpSet::torch2_foreach: return "torch 2.x, foreach Adam";
  }
  return "?";
}

TorchOpSet job_torch_ops(const Workload& w, const Calibration* cal, bool gpu) {
  if (w.torch_ops) return *w.torch_ops;
  std::optional<TorchOpSet> s = torch_op_set_of(w.torch_version);
  if (!s && cal && !cal->torch_ops.empty()) s = torch_op_set_of(cal->torch_fingerprint);
  if (!s) return TorchOpSet::torch1;
  return *s == TorchOpSet::torch2 && gpu ? TorchOpSet::torch2_foreach : *s;
}

std::vector<Op> efficient_kan_iteration(const KanShape& s, std::int64_t batch, bool gradient_as_bucket_view, bool broadcast_buffers,
                                        TorchOpSet set) {
  const auto params = kan_parameters(s);
  const double B = static_cast<double>(batch);
  TorchOps t;
  t.set = set;
  // optimizer.zero_grad(): torch 1.13 (set_to_none=False) one zero_ per
  // parameter; torch 2 (set_to_none=True) no op, the scope alone
  double numel = 0;
  for (const auto& p : params) {
    if (set == TorchOpSet::torch1)
      t.as(t.b.add("zero_grad " + p.name, OpKind::elementwise, Phase::zero_grad, p.layer, 0, p.bytes()), "zero_grad:zero_");
    numel += static_cast<double>(p.numel);
  }
  if (set != TorchOpSet::torch1) t.host("zero_grad:set_to_none", Phase::zero_grad, 0);
  t.unit(0, "zero_grad", static_cast<double>(params.size()), numel);
  if (broadcast_buffers) ek_broadcast_buffers(t, s);
  for (int l = 0; l < s.layers(); ++l) ek_forward_layer(t, s, l, B);
  ek_loss(t, s, B);
  for (int l = s.layers() - 1; l >= 0; --l) ek_backward_layer(t, s, params, l, B);
  ek_tail(t, params, gradient_as_bucket_view);
  // DDP's reducer (hooks, bucket copies, launches, the wait, the copy back),
  // measured per iteration: carried by its first op
  for (Op& o : t.b.ops)
    if (o.torch_unit == "reducer") {
      o.unit_calls = static_cast<double>(params.size());
      o.unit_elements = numel;
      break;
    }
  return t.b.ops;
}

FlopsBytes kanscale_layer_forward(std::int64_t in_, std::int64_t out_, int G, int k, std::int64_t batch) {
  const double Bi = static_cast<double>(batch) * in_, k1 = k + 1, out = static_cast<double>(out_), C = G + k;
  FlopsBytes c;
  // silu, the local recursion (~3k(k+1)), the two GEMMs over C+1 columns, weight scaling
  c.flops = 4 * Bi + 3.0 * k * k1 * Bi + 2 * Bi * out * (C + 1) + static_cast<double>(in_) * out * C;
  c.bytes = 4.0 * (Bi * (2 + C + k1) + 2.0 * in_ * out * C + in_ * out + 2.0 * batch * out);
  return c;
}

FlopsBytes kanscale_layer_backward(std::int64_t in_, std::int64_t out_, int G, int k, std::int64_t batch, bool need_dx) {
  const double Bi = static_cast<double>(batch) * in_, k1 = k + 1, out = static_cast<double>(out_), C = G + k;
  FlopsBytes c;
  c.flops = 2 * Bi * out * (C + 1) + 3.0 * in_ * out * C;
  c.bytes = 4.0 * (Bi * (1 + C) + static_cast<double>(batch) * out + 3.0 * in_ * out * C + 3.0 * in_ * out);
  if (need_dx) {
    c.flops += 2 * Bi * out * (C + 1) + 2 * Bi * k1 + 8 * Bi;
    // + the weights its two GEMMs read (dy ws over [out][in*C], dy Wb over
    // [out][in]): at small batches these GEMMs are that read (measured on the
    // Xeon of 3 Dec 2026: a 256x256 G5 backward at batch 2 took 635 us with
    // the input gradient, 452 us without)
    c.bytes += 4.0 * (Bi * (2 + C + k1) + static_cast<double>(batch) * out + static_cast<double>(in_) * out * (C + 1));
  }
  return c;
}

const std::vector<std::string>& kanscale_cost_classes() {
  static const std::vector<std::string> c = {"load_batch", "kan_forward", "mse", "kan_backward", "bucket_copy", "copy_back", "adam"};
  return c;
}

std::vector<Op> kanscale_iteration(const KanShape& s, std::int64_t batch, bool gradient_as_bucket_view) {
  const auto params = kan_parameters(s);
  const int L = s.layers();
  const double B = static_cast<double>(batch);
  std::vector<Op> ops;
  auto add = [&](std::string name, const char* cls, Phase ph, int layer, double flops, double bytes, int ready = -1,
                 double elements = 0, double weights = 0) {
    Op o;
    o.name = std::move(name);
    o.cost_class = cls;
    o.phase = ph;
    o.layer = layer;
    o.flops = flops;
    o.bytes = bytes;
    o.ready_param = ready;
    o.elements = elements;
    o.weights = weights;
    ops.push_back(o);
  };
  const double io = static_cast<double>(s.widths.front() + s.widths.back());
  add("load batch", "load_batch", Phase::zero_grad, -1, 0, 8.0 * B * io);
  for (int l = 0; l < L; ++l) {
    const auto c = kanscale_layer_forward(s.widths[l], s.widths[l + 1], s.grid_size, s.spline_order, batch);
    add("forward layer " + std::to_string(l), "kan_forward", Phase::forward, l, c.flops, c.bytes, -1,
        B * static_cast<double>(s.widths[l]), static_cast<double>(s.widths[l] * s.widths[l + 1] * s.coeffs()));
  }
  const double outw = static_cast<double>(s.widths.back());
  add("mse", "mse", Phase::loss, L - 1, 5 * B * outw, 16 * B * outw);
  for (int l = L - 1; l >= 0; --l) {
    const auto c = kanscale_layer_backward(s.widths[l], s.widths[l + 1], s.grid_size, s.spline_order, batch, l > 0);
    // elements: the input gradient's basis derivatives, per (sample, input);
    // the first layer computes none (calibration_fit.cpp's feature)
    add("backward layer " + std::to_string(l), "kan_backward", Phase::backward, l, c.flops, c.bytes, -1,
        l > 0 ? B * static_cast<double>(s.widths[l]) : 0.0, static_cast<double>(s.widths[l] * s.widths[l + 1] * s.coeffs()));
    for (int p : {3 * l + 1, 3 * l + 2, 3 * l + 0}) {
      const double n = static_cast<double>(params[p].numel);
      add("bucket_copy " + params[p].name, "bucket_copy", Phase::grad_copy, l, n, 8 * n, p);
    }
  }
  if (!gradient_as_bucket_view) {
    for (const auto& p : params) {
      const double n = static_cast<double>(p.numel);
      add("copy_back " + p.name, "copy_back", Phase::copy_back, p.layer, 0, 8 * n);
    }
  }
  for (const auto& p : params) {
    const double n = static_cast<double>(p.numel);
    add("adam " + p.name, "adam", Phase::optimizer, p.layer, 10 * n, 28 * n);
  }
  return ops;
}

}  // namespace ks
