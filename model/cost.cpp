#include "cost.hpp"

#include <algorithm>

#include "common/error.hpp"

namespace ks {

double op_time_s(const Op& op, const Calibration& cal, double cold_fraction) {
  // PyTorch's measured op classes, where the calibration has them: a unit's
  // whole cost on the op that carries it (host and kernel time alike)
  if (!cal.torch_ops.empty() && !op.torch_unit.empty()) {
    if (op.unit_calls <= 0) return 0;
    const auto it = cal.torch_ops.find(op.torch_unit);
    if (it == cal.torch_ops.end())
      throw InputError("calibration '" + cal.name + "' has no cost for PyTorch op class '" + op.torch_unit +
                       "' (its torch_ops lack it: too few shapes measured?); measure it again with kanscale calibrate "
                       "configs/calibrate/pytorch-cpu.yaml");
    return std::max(0.0, it->second.time_s(op.unit_calls, op.unit_elements));
  }
  if (op.host_only) return 0;  // dispatch only: the device-only replay has no host track yet
  if (!op.cost_class.empty()) {
    auto it = cal.ops.find(op.cost_class);
    if (it == cal.ops.end()) {
      throw InputError("calibration '" + cal.name + "' has no fitted cost for op '" + op.cost_class +
                       "': implementation kanscale needs a calibration from `kanscale fit` on `kanscale measure "
                       "kernels` (the datasheet calibration models efficient-kan only)");
    }
    // a layer's bytes at the bandwidth of their size where its fit says so (OpCost::bytes_at_working_set)
    auto bytes_for = [&](const OpCost& c) { return c.bytes_at_working_set ? op.bytes * cache_probe_scale(cal.cache_probe, op.bytes) : op.bytes; };
    const double warm = std::max(0.0, it->second.time_s(op.flops, bytes_for(it->second), op.elements, op.weights));
    const auto cold = cal.ops_cold.find(op.cost_class);
    if (cold_fraction <= 0 || cold == cal.ops_cold.end()) return warm;
    // Only the op's data goes cold: its fixed cost stays the warm one. The
    // cold microbenchmark evicts everything before each repetition (code,
    // page tables, the op's bookkeeping), and its fixed term (15-25 us per op
    // on the Xeon of 3 Dec 2026, against 0.3-0.8 us warm) is that eviction;
    // in training the same ops run every iteration and keep those cached.
    // Measured: with the cold fixed term, the live cases of
    // validation/plans/local-cpu.yaml at working sets of 4-6 MiB were
    // predicted 5-17% too slow, the held-out plan's [48-96-96-1] 13.5%
    // (docs/validating.md, attempt E).
    const OpCost& cw = cold->second;
    const double c = std::max(0.0, cw.time_s(op.flops, bytes_for(cw), op.elements, op.weights) - cw.fixed_s + it->second.fixed_s);
    return warm + cold_fraction * (c - warm);
  }
  const OpCost& c = op.kind == OpKind::gemm ? cal.gemm : cal.elementwise;
  return c.time_s(op.flops, op.bytes);
}

std::vector<double> op_times_s(const std::vector<Op>& ops, const Calibration& cal, double cold_fraction) {
  std::vector<double> t;
  t.reserve(ops.size());
  for (const auto& o : ops) t.push_back(op_time_s(o, cal, cold_fraction));
  return t;
}

namespace {
// Parameters, gradients, DDP's buckets and Adam's moments: the same for
// every implementation (fp32).
MemoryEstimate parameter_terms(const KanShape& s, const DdpSettings& ddp) {
  MemoryEstimate m;
  const double P = 4.0 * static_cast<double>(kan_parameter_count(s));
  m.parameters_bytes = P;
  m.gradients_bytes = P;
  m.buckets_bytes = ddp.gradient_as_bucket_view ? 0.0 : P;
  m.optimizer_bytes = 2 * P;
  return m;
}
// The batch, the grids, the runtime, and the sum.
void finish_terms(MemoryEstimate& m, const KanShape& s, std::int64_t batch, double runtime_bytes, double capacity_bytes) {
  m.batch_bytes = 4.0 * static_cast<double>(batch) * static_cast<double>(s.widths.front() + s.widths.back());
  m.buffers_bytes = kan_buffer_bytes(s);
  m.runtime_bytes = runtime_bytes;
  m.peak_bytes = m.parameters_bytes + m.gradients_bytes + m.buckets_bytes + m.optimizer_bytes + m.activations_bytes +
                 m.transient_bytes + m.batch_bytes + m.buffers_bytes + m.collective_bytes + m.runtime_bytes;
  m.capacity_bytes = capacity_bytes;
}
}  // namespace

MemoryEstimate efficient_kan_memory(const KanShape& s, std::int64_t batch, const DdpSettings& ddp,
                                    double runtime_bytes, double capacity_bytes) {
  MemoryEstimate m = parameter_terms(s, ddp);
  double largest_saved = 0, largest_temp = 0;
  for (const Op& o : efficient_kan_iteration(s, batch, ddp.gradient_as_bucket_view)) {
    if (o.phase != Phase::forward && o.phase != Phase::loss) continue;
    m.activations_bytes += o.saved_bytes;
    largest_saved = std::max(largest_saved, o.saved_bytes);
    largest_temp = std::max(largest_temp, o.temp_bytes);
  }
  m.transient_bytes = std::max(largest_temp, 2 * largest_saved);
  finish_terms(m, s, batch, runtime_bytes, capacity_bytes);
  return m;
}

MemoryEstimate kanscale_memory(const KanShape& s, std::int64_t batch, const DdpSettings& ddp, double runtime_bytes,
                               double capacity_bytes) {
  MemoryEstimate m = parameter_terms(s, ddp);
  const double B = static_cast<double>(batch), C = static_cast<double>(s.coeffs()), k1 = s.spline_order + 1;
  double largest = 0;
  for (int l = 0; l < s.layers(); ++l) {
    const double in = static_cast<double>(s.widths[l]), out = static_cast<double>(s.widths[l + 1]);
    // bases, derivatives, silu(x), first index, the input; wt [in][C][out]
    m.activations_bytes += 4.0 * (B * in * (C + k1 + 3) + in * C * out) + 4.0 * B * out;
    // the backward's scratch: dy ws [B][in*C] and dy Wb [B][in] (the spline
    // weight's gradient is computed in its own array, measure/kan_cpu.cpp)
    largest = std::max(largest, 4.0 * (B * in * C + B * in));
  }
  m.transient_bytes = largest;
  finish_terms(m, s, batch, runtime_bytes, capacity_bytes);
  return m;
}

MemoryEstimate calibrated_memory(MemoryEstimate m, const KanShape& s, const Calibration& cal) {
  if (cal.memory_bytes_per_parameter) {
    const double P = static_cast<double>(kan_parameter_count(s));
    const double modelled = m.parameters_bytes + m.gradients_bytes + m.buckets_bytes + m.optimizer_bytes;
    const double f = modelled > 0 ? *cal.memory_bytes_per_parameter * P / modelled : 0.0;
    m.parameters_bytes *= f;
    m.gradients_bytes *= f;
    m.buckets_bytes *= f;
    m.optimizer_bytes *= f;
  }
  if (cal.memory_activation_factor) {
    m.activations_bytes *= *cal.memory_activation_factor;
    m.transient_bytes *= *cal.memory_activation_factor;
    m.batch_bytes *= *cal.memory_activation_factor;
  }
  m.runtime_bytes += cal.memory_fixed_bytes + cal.memory_live_extra_bytes;
  m.peak_bytes = m.parameters_bytes + m.gradients_bytes + m.buckets_bytes + m.optimizer_bytes + m.activations_bytes +
                 m.transient_bytes + m.batch_bytes + m.buffers_bytes + m.collective_bytes + m.runtime_bytes;
  return m;
}

}  // namespace ks
