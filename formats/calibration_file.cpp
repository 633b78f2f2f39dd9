#include "calibration_file.hpp"

#include <cmath>
#include <cstdio>
#include <ctime>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include "provenance.hpp"

namespace ks {

namespace {

// A quantity as the YAML reader takes it: "12.5us", "3.1GB/s".
std::string num(double v, const char* unit) {
  char b[64];
  std::snprintf(b, sizeof b, "\"%.6g%s\"", v, unit);
  return b;
}

void write_op(std::ostream& y, const FittedOp& o) {
  const OpCost& c = o.cost;
  y << "    " << o.op << ": {fixed: " << num(c.fixed_s * 1e6, "us");
  if (o.layer) {
    if (c.flop_rate > 0) y << ", flop_rate: " << num(c.flop_rate * 1e-9, "GFLOP/s");
    if (c.byte_rate > 0) y << ", byte_rate: " << num(c.byte_rate * 1e-9, "GB/s");
    if (c.element_s > 0) y << ", per_element: " << num(c.element_s * 1e9, "ns");
    if (c.weight_s > 0) y << ", per_weight: " << num(c.weight_s * 1e9, "ns");
    if (c.bytes_at_working_set) y << ", bytes_at: working_set";
  } else if (c.byte_rate > 0) {
    y << ", byte_rate: " << num(c.byte_rate * 1e-9, "GB/s");
  }
  y << ", combine: sum,\n      fit: " << fit_quality(o.fit) << "}\n";
}

}  // namespace

namespace {
std::string matrix(const std::vector<std::vector<double>>& m) {
  std::ostringstream o;
  o << std::setprecision(6) << "[";
  for (std::size_t i = 0; i < m.size(); ++i) {
    o << (i ? ", [" : "[");
    for (std::size_t j = 0; j < m[i].size(); ++j) o << (j ? ", " : "") << m[i][j];
    o << "]";
  }
  o << "]";
  return o.str();
}

// {latency, bandwidth, cov} as read_alpha_beta (formats/config_files) reads it
std::string alpha_beta_text(const AlphaBetaTerm& t) {
  std::string s = "{latency: " + num(t.latency_s * 1e6, "us");
  if (t.bandwidth_Bps) s += ", bandwidth: " + num(*t.bandwidth_Bps * 1e-9, "GB/s");
  if (!t.cov.empty()) s += ", cov: " + matrix(t.cov);
  return s + "}";
}
}  // namespace

std::string fit_quality(const LinearFit& f, bool with_cov) {
  std::ostringstream o;
  o << std::setprecision(4) << "{r2: " << f.r2 << ", rms_rel_residual: " << f.rms_rel_residual << ", points: " << f.n_fit
    << ", held_out: " << f.n_holdout;
  if (f.n_holdout > 0) o << ", held_out_mean_abs_rel_error: " << f.holdout_mean_abs_rel << ", held_out_max_abs_rel_error: " << f.holdout_max_abs_rel;
  o << ", std_err: [";
  for (std::size_t j = 0; j < f.std_err.size(); ++j) o << (j ? ", " : "") << f.std_err[j];
  o << "]";
  if (with_cov && !f.cov.empty()) o << ",\n        cov: " << matrix(f.cov);
  o << "}";
  return o.str();
}

std::string fit_header(const std::string& command_line) {
  const Provenance p = provenance(command_line);
  return "# Fitted by " + describe(p) + " on " + p.date_utc + "\n# " + p.command_line + "\n";
}

namespace {
// compute: jitter, interference, the cache probe and the ops (warm and cold)
void write_compute_section(std::ostream& y, const CalibrationFile& f) {
  if (f.has_compute()) {
    y << "compute:\n  jitter_sigma: " << f.jitter_sigma
      << (f.ops.empty() ? "   # not measured" : "   # from the median spread (CV) of the layer timings") << "\n"
      << "  interference: " << f.interference.value_or(0.0)
      << (f.interference ? "   # compute lost per second of collective in flight" : "   # not measured (kanscale bench interference)")
      << "\n"
      << "  host_overhead: " << (f.host_overhead_s ? num(*f.host_overhead_s * 1e6, "us") : std::string("\"0s\"")) << "   # "
      << (f.host_overhead_s  ? f.host_overhead_note
          : f.ops.empty()    ? std::string("PyTorch's host work is in its op classes (torch_ops)")
                             : std::string("the trainer's host work is in load_batch; no separate term"))
      << "\n";
    if (!f.cache_probe.empty()) {
      y << "  cache_probe:   # read bandwidth against buffer size, all ranks at once: [bytes, GB/s]\n    [";
      for (std::size_t c = 0; c < f.cache_probe.size(); ++c)
        y << (c ? ", " : "") << "[" << f.cache_probe[c].first << ", " << f.cache_probe[c].second << "]";
      y << "]\n";
    }
    if (!f.ops.empty()) y << "  ops:\n";
    for (const auto& o : f.ops) write_op(y, o);
    if (!f.ops_cold.empty()) y << "  ops_cold:   # the same ops with the caches evicted before each repetition\n";
    for (const auto& o : f.ops_cold) write_op(y, o);
  }
}

// torch_ops: PyTorch's op classes
void write_torch_section(std::ostream& y, const CalibrationFile& f) {
  if (!f.torch_ops.empty()) {
    y << "torch_ops:   # PyTorch's op classes (kanscale measure torch-ops): calls x fixed + elements x per_element\n"
      << "  measured_with: " << nlohmann::json(f.torch_fingerprint).dump() << "\n";
    if (f.torch_host_has_launch)
      y << "  host_has_launch: true   # the traced host ops launched their kernels: their fixed costs hold the launches\n";
    y << "  classes:\n";
    for (const auto& o : f.torch_ops) {
      y << "    " << nlohmann::json(o.cls).dump() << ": {fixed: " << num(o.cost.fixed_s * 1e6, "us") << ", per_element: " << num(o.cost.element_s * 1e9, "ns");
      if (!o.cost.cov.empty()) y << ", cov: " << matrix(o.cost.cov);
      y << ",\n      fit: " << fit_quality(o.fit, false);
      if (o.device) {
        // the device's time for the class's kernels (a GPU job's traces)
        y << ",\n      device: {fixed: " << num(o.device->fixed_s * 1e6, "us") << ", per_element: " << num(o.device->element_s * 1e9, "ns");
        if (!o.device->cov.empty()) y << ", cov: " << matrix(o.device->cov);
        if (o.device_fit) y << ", fit: " << fit_quality(*o.device_fit, false);
        y << "}";
      }
      y << "}   # " << o.shapes << " shapes; " << (o.note.empty() ? "held out: leave one shape out" : o.note)
        << (o.device_note.empty() ? "" : "; device: " + o.device_note) << (o.source.empty() ? "" : "; from " + o.source) << "\n";
    }
  }
}

// collectives: MPI's regimes, broadcast and progress; gloo's; NCCL's bus bandwidths
void write_collectives_section(std::ostream& y, const CalibrationFile& f) {
  if (!f.mpi_regimes.empty() || f.mpi_broadcast || f.mpi_progress || f.nccl || f.gloo_allreduce || f.gloo_broadcast) {
    y << "collectives:\n";
    if (!f.mpi_regimes.empty()) y << "  mpi_regimes:\n";
    for (const auto& fr : f.mpi_regimes) {
      const MpiRegime& r = fr.regime;
      const std::string below =
          std::isinf(r.max_bytes) ? "" : "below: \"" + std::to_string(static_cast<long long>(r.max_bytes)) + "B\", ";
      y << "    - {" << below << "algorithm: " << to_string(r.algorithm);
      if (!r.latency_s) {
        y << "}   # not measured: the link's defaults\n";
        continue;
      }
      y << ", latency: " << num(*r.latency_s * 1e6, "us");
      if (r.bandwidth_Bps) y << ", bandwidth: " << num(*r.bandwidth_Bps * 1e-9, "GB/s");
      if (r.launch_s) y << ", launch: " << num(*r.launch_s * 1e6, "us");
      if (r.launch_s && r.launch_Bps) y << ", launch_byte_rate: " << num(*r.launch_Bps * 1e-9, "GB/s");
      if (!r.cov.empty()) y << ", cov: " << matrix(r.cov);
      y << "}   # " << (fr.fit ? fit_quality(*fr.fit, false) : "") << (fr.launch_fit ? " launch " + fit_quality(*fr.launch_fit, false) : "") << "\n";
    }
    if (f.mpi_broadcast)
      y << "  mpi_broadcast: " << alpha_beta_text(*f.mpi_broadcast) << "   # "
        << (f.mpi_broadcast_fit ? fit_quality(*f.mpi_broadcast_fit, false) : "") << "\n";
    if (f.mpi_progress) {
      y << "  mpi_progress: {min_steps: " << f.mpi_progress->min_steps;
      if (f.mpi_progress->chunk_bytes > 0) y << ", chunk: \"" << static_cast<long long>(std::llround(f.mpi_progress->chunk_bytes)) << "B\"";
      if (f.mpi_progress->interference) y << ", interference: " << *f.mpi_progress->interference;
      y << "}   # steps = max(min_steps, bytes / chunk); a step after the first starts only inside MPI (bench progress): "
        << f.mpi_progress_note << "\n";
    }
    if (f.gloo_allreduce || f.gloo_broadcast) {
      y << "  gloo:   # torch.distributed's gloo: ring all-reduce, binomial broadcast; per step latency + bytes / bandwidth\n";
      for (const auto& [name, term, fit] : {std::tuple{"allreduce", &f.gloo_allreduce, &f.gloo_allreduce_fit},
                                            std::tuple{"broadcast", &f.gloo_broadcast, &f.gloo_broadcast_fit}}) {
        if (!*term) continue;
        y << "    " << name << ": " << alpha_beta_text(**term) << "   # " << (*fit ? fit_quality(**fit, false) : "") << "\n";
      }
    }
    if (f.nccl) {
      y << "  nccl:\n";
      if (f.nccl_bus_bw_intra_Bps)
        y << "    bus_bandwidth_intra: " << num(*f.nccl_bus_bw_intra_Bps * 1e-9, "GB/s") << "   # from " << f.nccl_intra_sweeps
          << " single-node sweep(s)\n";
      if (f.nccl_bus_bw_inter_Bps)
        y << "    bus_bandwidth_inter: " << num(*f.nccl_bus_bw_inter_Bps * 1e-9, "GB/s") << "   # from " << f.nccl_inter_sweeps
          << " multi-node sweep(s)\n";
      if (!f.nccl_held_out_note.empty()) y << "    # held out: " << f.nccl_held_out_note << "\n";
    }
  }
}

// live: the terms fitted on live runs, and their errors
void write_live_section(std::ostream& y, const CalibrationFile& f) {
  if (f.live.empty() && f.trace_loo_steps > 0) {
    y << "live:   # the traced job's own steps (calibrate --from-trace), against the prediction from the classes above\n"
      << "  model_error_sigma: " << f.model_error_sigma << "   # out of sample: RMS of log(measured / predicted) over " << f.trace_loo_steps
      << " traced steps, each predicted by the classes fitted without its trace\n";
  }
  if (!f.live.empty()) {
    y << "live:   # kanscale train on the calibration's own shapes (" << f.live_from << "), against the prediction from the terms above\n"
      << "  model_error_sigma: " << f.model_error_sigma
      << "   # out of sample: RMS of log(measured / corrected prediction), each shape predicted by the terms fitted without it"
      << " (in sample: " << f.model_error_in_sample_sigma << ")\n";
    if (f.comm_error_sigma > 0)
      y << "  comm_error_sigma: " << f.comm_error_sigma
        << "   # out of sample: RMS of log(measured / predicted all-reduce time), each shape against the communication factor fitted without it\n";
    if (f.unwatched_runs > 0)
      y << "  unwatched_error_sigma: " << f.unwatched_error_sigma << "   # the compute with no live term (microbenchmarks only): RMS of log(measured / predicted) over "
        << f.unwatched_runs << " runs; what an answer that watched no job leaves out\n";
    if (f.memory_runs > 0)
      y << "  memory_extra: " << num(f.memory_extra_bytes, "B") << "   # peak memory the live runs hold beyond the memory model: median of measured - predicted over "
        << f.memory_runs << " runs\n"
        << "  memory_error_sigma: " << f.memory_error_sigma << "   # peak memory with it, out of sample: RMS of log(measured / (predicted + extra)), each shape against the extra of the others\n"
        << "  unwatched_memory_sigma: " << f.unwatched_memory_sigma << "   # peak memory with none (an answer that watched no job): RMS of log(measured / predicted)\n";
    y
      << "  drift_sigma: " << f.drift_sigma << "   # run-to-run: the spread of the " << f.drift_rounds
      << " round(s)' mean log deviation, a random effect per run" << (f.drift_rounds < 2 ? " (one round: not measured)" : "")
      << (f.kernel_drift_sigma ? "; the microbenchmarks' over the same rounds: " + std::to_string(*f.kernel_drift_sigma) : std::string()) << "\n";
    if (f.rank_sigma_runs > 0)
      y << "  rank_spread_sigma: " << f.rank_sigma << "   # a rank's speed that persists through a run: the spread of each rank's median compute"
        << " about its run's, over " << f.rank_sigma_runs << " multi-rank run(s); the slowest rank gates every iteration\n";
    y << "  terms:\n";
    for (const auto& l : f.live) {
      y << "    - {ranks: " << l.term.ranks << ", compute_factor: " << l.term.compute_factor << ", host_overhead: "
        << num(l.term.host_overhead_s * 1e6, "us");
      if (l.term.per_bucket_s > 0) y << ", per_bucket: " << num(l.term.per_bucket_s * 1e6, "us");
      if (l.term.comm_factor != 1.0) y << ", comm_factor: " << l.term.comm_factor;
      y << "}   # " << (l.none_because.empty() ? fit_quality(l.fit, false) : l.none_because)
        << (l.comm_why.empty() ? std::string() : "; " + l.comm_why) << "\n";
    }
  }
}

// memory: the runtime, collectives in flight and the memory model's fit
void write_memory_section(std::ostream& y, const CalibrationFile& f) {
  if (f.has_memory()) {
    y << "memory:\n";
    if (f.runtime_per_local_peer_bytes) {
      y << "  runtime: " << num(f.runtime_bytes.value_or(0.0), "B") << "   # one rank per node; measured: " << f.runtime_what
        << " (largest rank): " << f.runtime_measured << " rank(s) per node\n"
        << "  runtime_per_local_peer: " << num(*f.runtime_per_local_peer_bytes, "B")
        << "   # per other rank of the node (MPI's shared memory)\n";
    } else if (f.runtime_bytes) {
      y << "  runtime: " << num(*f.runtime_bytes, "B") << "   # measured: " << f.runtime_what << " (largest rank)\n";
    }
    if (f.collective_in_flight)
      y << "  collective_in_flight: " << *f.collective_in_flight
        << "   # the library's memory per byte of a non-blocking all-reduce in flight (bench interference, largest rank)\n";
    if (f.memory_fit) {
      const LinearFit& m = *f.memory_fit;
      y << "  fixed: " << num(m.coef[0], "B") << "\n  per_parameter: " << num(m.coef[1], "B")
        << "   # the model's own accounting: 20 B (parameter, gradient, bucket, Adam's two moments)\n"
        << "  activation_factor: " << m.coef[2] << "   # on the model's activation, workspace and batch bytes\n"
        << "  fit: " << fit_quality(m) << "\n";
    }
  }
}

}  // namespace

std::string write_calibration(const CalibrationFile& f, const std::string& header) {
  std::ostringstream y;
  y << header << "name: " << f.name << "\nsource: fitted\nfitted_from: " << nlohmann::json(f.fitted_from).dump()
    << "\nconcurrency: " << f.concurrency << "\n";
  if (!f.machine.empty()) {
    const Machine& m = f.machine;
    y << "machine: {cpu_model: " << nlohmann::json(m.cpu_model).dump() << ", cores: " << m.cores << ", isa: " << nlohmann::json(m.isa).dump();
    if (m.memory_bytes > 0) y << ", memory: " << num(m.memory_bytes, "B");
    y << ", gpu: " << nlohmann::json(m.gpu.empty() ? "none" : m.gpu).dump()
      << ", collective_library: " << nlohmann::json(m.collective_library).dump() << "}   # where the measurements were taken\n";
  }
  write_compute_section(y, f);
  write_torch_section(y, f);
  write_collectives_section(y, f);
  write_live_section(y, f);
  write_memory_section(y, f);
  return y.str();
}

}  // namespace ks
