#pragma once
// Compute and memory cost of one rank's training iteration. Pure functions.
#include <vector>

#include "config.hpp"
#include "kan_model.hpp"

namespace ks {

// Seconds one kernel takes under a calibration (no jitter, no interference).
// `cold_fraction` (0 = caches warm, 1 = cold; cold_fraction_for) moves a
// fitted op from its warm fit toward its cold one, where the calibration
// has one: the cold fit's data terms (FLOPs, bytes, elements, weights)
// with the warm fit's fixed term.
double op_time_s(const Op& op, const Calibration& cal, double cold_fraction);
std::vector<double> op_times_s(const std::vector<Op>& ops, const Calibration& cal, double cold_fraction);

struct MemoryEstimate {
  double parameters_bytes = 0;
  double gradients_bytes = 0;
  double buckets_bytes = 0;    // DDP's flat bucket tensors (0 with gradient_as_bucket_view)
  double optimizer_bytes = 0;  // Adam's exp_avg and exp_avg_sq
  double activations_bytes = 0;  // saved for backward
  double transient_bytes = 0;    // largest short-lived tensor(s) at the peak
  double batch_bytes = 0;        // inputs and targets
  double buffers_bytes = 0;      // grids
  double collective_bytes = 0;   // the communication library's copies of the buckets in flight (ranks > 1)
  double runtime_bytes = 0;      // context, allocator, libraries
  double peak_bytes = 0;         // sum of the above
  double capacity_bytes = 0;
  double parameter_to_memory_ratio() const { return peak_bytes > 0 ? parameters_bytes / peak_bytes : 0; }
  bool exceeds_capacity() const { return capacity_bytes > 0 && peak_bytes > capacity_bytes; }
};

// Per-rank peak memory of efficient-kan under DDP with Adam. The transient
// term is the larger of the biggest forward temporary and twice the biggest
// saved tensor (its gradient and the incoming one during backward).
MemoryEstimate efficient_kan_memory(const KanShape& s, std::int64_t batch, const DdpSettings& ddp,
                                    double runtime_bytes, double capacity_bytes);
// kanscale's own layer keeps per layer the [B][in*C] bases, the k+1
// derivatives, SiLU(x), its input and output; backward adds [B][in*C] and
// [in*C][out] workspaces (the transient term).
MemoryEstimate kanscale_memory(const KanShape& s, std::int64_t batch, const DdpSettings& ddp, double runtime_bytes,
                               double capacity_bytes);
// The same with a calibration's fitted memory terms applied (when it has
// them): parameter-state bytes become per_parameter x P, the activation,
// transient and batch terms are scaled by activation_factor, and the fixed
// term joins the runtime.
MemoryEstimate calibrated_memory(MemoryEstimate m, const KanShape& s, const Calibration& cal);

}  // namespace ks
