#include "kan_model.hpp"
#include "limits.hpp"

#include <algorithm>
#include <cstdio>

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
std::vector<Op> efficient_kan_iteration(const KanShape& s, std::int64_t batch, bool gradient_as_bucket_view) {
  const auto params = kan_parameters(s);
  const int L = s.layers();
  const double B = static_cast<double>(batch);
  const int k = s.spline_order;
  const double E = static_cast<double>(s.grid_size + 2 * s.spline_order);  // degree-0 intervals
  const double C = static_cast<double>(s.coeffs());
  Builder b;

  // optimizer.zero_grad() (set_to_none=False in 1.13): one fill per parameter.
  for (const auto& p : params) b.add("zero_grad " + p.name, OpKind::elementwise, Phase::zero_grad, p.layer, 0, p.bytes());

  // ---- forward
  for (int l = 0; l < L; ++l) {
    const double in = static_cast<double>(s.widths[l]), out = static_cast<double>(s.widths[l + 1]);
    const bool xg = l > 0;  // the input of layer 0 is data: no gradient
    const double Bi = B * in;
    b.ew("silu", Phase::forward, l, Bi, Bi).saved_bytes = xg ? F * Bi : 0;  // SiLU saves its input
    b.gemm("base_linear", Phase::forward, l, B, out, in).saved_bytes = F * Bi;  // linear saves silu(x)
    // degree 0: two comparisons to bool, an and, a cast to float
    b.add("basis_ge", OpKind::elementwise, Phase::forward, l, Bi * E, F * Bi + Bi * E).temp_bytes = Bi * E;
    b.add("basis_lt", OpKind::elementwise, Phase::forward, l, Bi * E, F * Bi + Bi * E).temp_bytes = Bi * E;
    b.add("basis_and", OpKind::elementwise, Phase::forward, l, Bi * E, 3 * Bi * E).temp_bytes = Bi * E;
    Op& cast = b.add("basis_cast", OpKind::elementwise, Phase::forward, l, Bi * E, 5 * Bi * E);
    // bases0 is saved by the first recursion step when x needs a gradient
    cast.saved_bytes = xg ? F * Bi * E : 0;
    cast.temp_bytes = xg ? 0 : F * Bi * E;
    for (int p = 1; p <= k; ++p) {
      const double n = E - p;  // outputs per (sample, input) at degree p
      const double Bn = Bi * n;
      const std::string d = "basis_p" + std::to_string(p) + "_";
      b.ew(d + "sub_lo", Phase::forward, l, Bn, Bi).temp_bytes = F * Bn;
      b.ew(d + "div_lo", Phase::forward, l, Bn, Bn).saved_bytes = (xg && p >= 2) ? F * Bn : 0;  // q1 saved by mul when bases needs grad
      b.ew(d + "mul_lo", Phase::forward, l, Bn, 2 * Bn).temp_bytes = F * Bn;
      b.ew(d + "sub_hi", Phase::forward, l, Bn, Bi).temp_bytes = F * Bn;
      b.ew(d + "div_hi", Phase::forward, l, Bn, Bn).saved_bytes = (xg && p >= 2) ? F * Bn : 0;
      b.ew(d + "mul_hi", Phase::forward, l, Bn, 2 * Bn).temp_bytes = F * Bn;
      Op& sum = b.ew(d + "add", Phase::forward, l, Bn, 2 * Bn);
      // this degree's bases are saved by the next step's muls (if x needs a
      // gradient) and, at degree k, by the spline linear
      sum.saved_bytes = (p == k || xg) ? F * Bn : 0;
      sum.temp_bytes = sum.saved_bytes > 0 ? 0 : F * Bn;
    }
    b.ew("scaled_spline_weight", Phase::forward, l, out * in * C, out * in * C + out * in);
    b.gemm("spline_linear", Phase::forward, l, B, out, in * C);
    b.ew("add", Phase::forward, l, B * out, 2 * B * out);
  }

  // ---- loss: mse_loss forward saves prediction and target; backward
  const double outw = static_cast<double>(s.widths.back());
  b.add("mse_loss", OpKind::elementwise, Phase::loss, L - 1, 3 * B * outw, F * 2 * B * outw).saved_bytes = F * 2 * B * outw;
  b.ew("mse_loss_backward", Phase::loss, L - 1, B * outw, 2 * B * outw);

  // ---- backward, layers last to first
  auto ready = [&](int param_index) {
    const Param& p = params[param_index];
    Op& o = b.ew("bucket_copy " + p.name, Phase::grad_copy, p.layer, static_cast<double>(p.numel), static_cast<double>(p.numel));
    o.ready_param = param_index;
  };
  for (int l = L - 1; l >= 0; --l) {
    const double in = static_cast<double>(s.widths[l]), out = static_cast<double>(s.widths[l + 1]);
    const bool xg = l > 0;
    const double Bi = B * in;
    b.gemm("spline_linear_grad_weight", Phase::backward, l, out, in * C, B);
    if (xg) b.gemm("spline_linear_grad_input", Phase::backward, l, B, in * C, out);
    b.ew("scaled_spline_weight_grad_w", Phase::backward, l, out * in * C, out * in * C + out * in);
    ready(3 * l + 1);
    b.ew("scaled_spline_weight_grad_s_mul", Phase::backward, l, out * in * C, 2 * out * in * C);
    b.ew("scaled_spline_weight_grad_s_sum", Phase::backward, l, out * in * C, out * in * C, F / C);  // writes out*in floats
    ready(3 * l + 2);
    if (xg) {
      for (int p = k; p >= 1; --p) {
        const double n = E - p, Bn = Bi * n;
        const std::string d = "basis_p" + std::to_string(p) + "_grad_";
        for (const char* side : {"lo", "hi"}) {
          const std::string sd = d + side + "_";
          b.ew(sd + "mul_q", Phase::backward, l, Bn, 2 * Bn);        // grad of q = g * bases
          if (p >= 2) b.ew(sd + "mul_bases", Phase::backward, l, Bn, 2 * Bn);  // grad of bases = g * q
          b.ew(sd + "div", Phase::backward, l, Bn, Bn);              // grad of t = g / d
          b.add(sd + "sum_x", OpKind::elementwise, Phase::backward, l, Bn, F * Bn + F * Bi);  // reduce to x's shape
          b.ew(sd + "acc_x", Phase::backward, l, Bi, 2 * Bi);        // accumulate into grad x
          if (p >= 2) {
            // slice backward: zeros of the full shape, copy the slice in
            b.add(sd + "slice_zeros", OpKind::elementwise, Phase::backward, l, 0, F * Bi * (n + 1));
            b.ew(sd + "slice_copy", Phase::backward, l, Bn, Bn);
          }
        }
        if (p >= 2) b.ew(d + "acc_bases", Phase::backward, l, Bi * (n + 1), 2 * Bi * (n + 1));
      }
    }
    b.gemm("base_linear_grad_weight", Phase::backward, l, out, in, B);
    ready(3 * l + 0);
    if (xg) {
      b.gemm("base_linear_grad_input", Phase::backward, l, B, in, out);
      b.ew("silu_backward", Phase::backward, l, Bi, 2 * Bi);
      b.ew("acc_x", Phase::backward, l, Bi, 2 * Bi);
    }
  }

  // ---- after the all-reduces: copy back, Adam
  if (!gradient_as_bucket_view) {
    for (const auto& p : params) {
      b.ew("copy_back " + p.name, Phase::copy_back, p.layer, static_cast<double>(p.numel), static_cast<double>(p.numel));
    }
  }
  // torch 1.13 _single_tensor_adam per parameter: exp_avg.lerp_ (12 B/elem),
  // exp_avg_sq.mul_ (8) and .addcmul_ (12), sqrt (8), div (8), add_ eps (8),
  // param.addcdiv_ (16).
  static constexpr double kAdam[7] = {12, 8, 12, 8, 8, 8, 16};
  static constexpr const char* kAdamNames[7] = {"lerp", "mul", "addcmul", "sqrt", "div", "add_eps", "addcdiv"};
  for (const auto& p : params) {
    for (int i = 0; i < 7; ++i) {
      b.add(std::string("adam_") + kAdamNames[i] + " " + p.name, OpKind::elementwise, Phase::optimizer, p.layer,
            static_cast<double>(p.numel), kAdam[i] * static_cast<double>(p.numel));
    }
  }
  return b.ops;
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
    c.bytes += 4.0 * (Bi * (2 + C + k1) + static_cast<double>(batch) * out);
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
