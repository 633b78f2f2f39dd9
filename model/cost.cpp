#include "cost.hpp"

#include <algorithm>

namespace ks {

double op_time_s(const Op& op, const Calibration& k) {
  const OpCost& c = op.kind == OpKind::gemm ? k.gemm : k.elementwise;
  return c.time_s(op.flops, op.bytes);
}

std::vector<double> op_times_s(const std::vector<Op>& ops, const Calibration& k) {
  std::vector<double> t;
  t.reserve(ops.size());
  for (const auto& o : ops) t.push_back(op_time_s(o, k));
  return t;
}

MemoryEstimate efficient_kan_memory(const KanShape& s, std::int64_t batch, const DdpSettings& ddp,
                                    double runtime_bytes, double capacity_bytes) {
  MemoryEstimate m;
  const double P = 4.0 * static_cast<double>(kan_parameter_count(s));
  m.parameters_bytes = P;
  m.gradients_bytes = P;
  m.buckets_bytes = ddp.gradient_as_bucket_view ? 0.0 : P;
  m.optimizer_bytes = 2 * P;
  double largest_saved = 0, largest_temp = 0;
  for (const Op& o : efficient_kan_iteration(s, batch, ddp.gradient_as_bucket_view)) {
    if (o.phase != Phase::forward && o.phase != Phase::loss) continue;
    m.activations_bytes += o.saved_bytes;
    largest_saved = std::max(largest_saved, o.saved_bytes);
    largest_temp = std::max(largest_temp, o.temp_bytes);
  }
  m.transient_bytes = std::max(largest_temp, 2 * largest_saved);
  m.batch_bytes = 4.0 * static_cast<double>(batch) * static_cast<double>(s.widths.front() + s.widths.back());
  m.buffers_bytes = kan_buffer_bytes(s);
  m.runtime_bytes = runtime_bytes;
  m.peak_bytes = m.parameters_bytes + m.gradients_bytes + m.buckets_bytes + m.optimizer_bytes + m.activations_bytes +
                 m.transient_bytes + m.batch_bytes + m.buffers_bytes + m.runtime_bytes;
  m.capacity_bytes = capacity_bytes;
  return m;
}

}  // namespace ks
