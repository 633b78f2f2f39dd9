#include "corpus_score.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/output_files.hpp"
#include "common/error.hpp"
#include "formats/provenance.hpp"
#include "model/collectives.hpp"
#include "model/statistics.hpp"
#include "formats/config_files.hpp"
#include "sim/point.hpp"
#include "sim/replay.hpp"

namespace ks {

static std::string lower(std::string s) {
  for (auto& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

// NCCL_ALGO / NCCL_PROTO as the entry's environment restricts them, among
// `carried` (what the model has): false when a list names outright one the
// model does not carry (NCCL might choose it) or leaves none of them.
static bool restrict_list(const CorpusSystem& s, const std::string& var, const std::vector<std::string>& names,
                          const std::vector<std::string>& carried, std::vector<std::string>& out) {
  const NcclEnvList l = nccl_env_list(s.nccl_env, var, names);
  out.clear();
  for (const auto& n : l.selected) {
    const bool has = std::find(carried.begin(), carried.end(), n) != carried.end();
    if (has) out.push_back(n);
    else if (!l.negated && s.nccl_env.count(var)) return false;
  }
  return !out.empty();
}

CorpusCluster datasheet_cluster(const CorpusEntry& e) {
  CorpusCluster r;
  const auto& s = e.system;
  if (!e.gpu) {
    r.why_not = "no GPU named";
    return r;
  }
  const GpuSheet& g = *e.gpu;
  Cluster c;
  c.name = e.id;
  c.file = e.file;
  c.nodes = s.nodes;
  c.gpus_per_node = s.gpus_per_node;
  c.gpu = gpu_spec_of(g);
  if (g.compute_capability == 0) r.assumptions.push_back("compute capability not in the GPU sheet: LL128 off");
  const std::string cpu = lower(s.cpu);
  c.cpu_vendor = cpu.find("amd") != std::string::npos || cpu.find("epyc") != std::string::npos ? CpuVendor::amd : CpuVendor::intel;
  if (s.cpu.empty()) r.assumptions.push_back("CPU not stated: Intel (NCCL's LL bandwidth table)");
  // datasheets state NVLink both ways together; NCCL's bus bandwidth is one way
  if (s.intra_node == "pcie") {
    c.intra.kind = LinkKind::pcie;
    c.intra.bandwidth_Bps = g.pcie_Bps();
  } else {
    c.intra.kind = LinkKind::nvlink;
    c.intra.bandwidth_Bps = g.nvlink_Bps / 2;
  }
  if (!(c.intra.bandwidth_Bps > 0)) {
    r.why_not = "the GPU sheet gives no " + std::string(s.intra_node == "pcie" ? "PCIe link" : "NVLink bandwidth");
    return r;
  }
  if (s.nodes > 1) {
    if (!(s.nic_Bps > 0)) {
      r.why_not = "NIC speed not stated";
      return r;
    }
    c.net.nic_bandwidth_Bps = s.nic_Bps;
    c.net.nics_per_node = s.nics_per_node > 0 ? s.nics_per_node : 1;
    if (s.nics_per_node == 0) r.assumptions.push_back("NICs per node not stated: 1");
  } else {
    c.net.nic_bandwidth_Bps = c.intra.bandwidth_Bps;  // unused on one node
  }
  c.collectives.family = CollFamily::nccl;
  // the one tuning model kanscale carries; the entry's own version differs (a
  // difference the priors absorb)
  c.collectives.version = "2.14.3";
  std::vector<std::string> algos, protos;
  if (!restrict_list(s, "NCCL_ALGO", kNcclAlgos, {"Ring", "Tree"}, algos) || !restrict_list(s, "NCCL_PROTO", kNcclProtos, kNcclProtos, protos)) {
    r.why_not = "NCCL_ALGO/NCCL_PROTO name what the model does not carry";
    return r;
  }
  for (const auto& a : algos) c.collectives.algorithms.push_back(a == "Ring" ? Algo::ring : Algo::tree);
  for (const auto& p : protos) c.collectives.protocols.push_back(p == "LL" ? Proto::ll : p == "LL128" ? Proto::ll128 : Proto::simple);
  // Channels: as many as NCCL 2.14's per-channel LL128 ceiling (20 GB/s,
  // tuning.cc) needs to fill the slowest link, 2 to 32 (MAXCHANNELS).
  const double slowest = s.nodes > 1 ? std::min(c.intra.bandwidth_Bps, c.net.nics_per_node * c.net.nic_bandwidth_Bps) : c.intra.bandwidth_Bps;
  c.collectives.channels = static_cast<int>(std::clamp(std::ceil(slowest / 20e9), 2.0, 32.0));
  r.cluster = c;
  return r;
}

const char* regime_of(double bytes) {
  if (bytes <= 64.0 * 1024) return "latency";
  if (bytes >= 64.0 * 1024 * 1024) return "bandwidth";
  return "middle";
}

std::vector<RegimePoint> corpus_points(const std::vector<CorpusEntry>& entries, std::vector<CorpusSkip>& skipped, bool scored) {
  std::vector<RegimePoint> out;
  for (const auto& e : entries) {
    if (e.kind != "nccl_allreduce" || e.scored != scored) continue;
    const CorpusCluster cc = datasheet_cluster(e);
    if (!cc.cluster) {
      skipped.push_back({e.id, cc.why_not});
      continue;
    }
    const Cluster& c = *cc.cluster;
    const NcclModel m(c, datasheet_calibration(c, Precision::fp32));
    const Layout l{e.system.ranks(), e.system.nodes};
    for (const char* regime : {"latency", "middle", "bandwidth"}) {
      std::vector<const NcclRow*> rows;
      for (const auto& r : e.nccl)
        if (std::string(regime_of(r.size_bytes)) == regime) rows.push_back(&r);
      if (rows.empty()) continue;
      const NcclRow& row = *rows[(rows.size() - 1) / 2];  // rows ascend by size: the lower median
      const CollectiveEstimate est = m.allreduce(row.size_bytes, l);
      RegimePoint p;
      p.entry = e.id;
      p.cls = e.cls;
      p.regime = regime;
      p.system = e.system_key();
      p.size_bytes = row.size_bytes;
      p.measured_s = row.time_us * 1e-6;
      p.measured_busbw_GBps = row.busbw_GBps;
      p.model_latency_s = m.allreduce_latency_s(row.size_bytes, l);
      p.model_bandwidth_s = est.time_s - p.model_latency_s;
      p.algorithm = est.label();
      p.ranks = l.ranks;
      p.cc = e.gpu->compute_capability;
      out.push_back(p);
    }
  }
  return out;
}

// One-GPU datasheet cluster of a sheet, for the KAN timings.
static std::optional<Cluster> one_gpu_cluster(const GpuSheet& g, std::string& why) {
  if (!(g.fp32_flops > 0) || !(g.memory_bandwidth_Bps > 0)) {
    why = "the GPU sheet gives no " + std::string(g.fp32_flops > 0 ? "memory bandwidth" : "FP32 peak") + " (" + g.model + ")";
    return std::nullopt;
  }
  Cluster c;
  c.name = g.name;
  c.nodes = c.gpus_per_node = 1;
  c.gpu = gpu_spec_of(g);
  if (!(c.gpu.memory_bytes > 0)) c.gpu.memory_bytes = 1e12;  // capacity not on the sheet: not what a timing needs
  c.gpu.kernel_launch_s = 5e-6;  // as the shipped GPU clusters: CUDA C++ Best Practices Guide, ~5 us
  c.intra.bandwidth_Bps = c.net.nic_bandwidth_Bps = 1e9;
  c.collectives.version = "2.14.3";
  c.collectives.algorithms = {Algo::ring};
  c.collectives.protocols = {Proto::simple};
  c.collectives.channels = 2;
  return c;
}

std::vector<KanPoint> kan_points(const std::vector<CorpusEntry>& entries, std::vector<CorpusSkip>& skipped) {
  std::vector<KanPoint> out;
  for (const auto& e : entries) {
    if (e.kind != "kan_layer" || !e.scored || !e.gpu) continue;
    std::string why;
    const auto c = one_gpu_cluster(*e.gpu, why);
    if (!c) {
      skipped.push_back({e.id, why});
      continue;
    }
    for (const auto& r : e.kan) {
      if (r.impl != "efficient-kan" || r.widths.empty() || !r.grid_size || !r.spline_order || !r.batch || r.precision != "fp32") continue;
      Workload w;
      w.name = e.id;
      for (auto x : r.widths) w.widths.push_back(x);
      w.grid_size = *r.grid_size;
      w.spline_order = *r.spline_order;
      w.batch_per_gpu = *r.batch;
      w.dataset_size = *r.batch;
      const Calibration cal = with_default_host_terms(datasheet_calibration(*c, Precision::fp32), *c, w);
      const ReplayInput in = make_replay_input(*c, w, cal, Layout{1, 1}, *r.batch, 0);
      double host[2] = {0, 0}, dev[2] = {0, 0};  // forward (with the loss), backward
      for (std::size_t i = 0; i < in.ops.size(); ++i) {
        const Phase ph = in.ops[i].phase;
        const int k = ph == Phase::forward || ph == Phase::loss ? 0 : ph == Phase::backward ? 1 : -1;
        if (k < 0) continue;
        host[k] += i < in.op_host_s.size() ? in.op_host_s[i] : 0.0;
        dev[k] += in.op_time_s[i];
      }
      std::string shape;
      for (auto x : r.widths) shape += (shape.empty() ? "[" : ", ") + std::to_string(x);
      shape += "] G" + std::to_string(*r.grid_size) + " k" + std::to_string(*r.spline_order) + " b" + std::to_string(*r.batch);
      auto add = [&](const char* phase, std::optional<double> ms, double h, double d) {
        if (ms) out.push_back({e.id, e.gpu->model, shape, phase, *ms * 1e-3, std::max(h, d), h, d});
      };
      add("forward", r.forward_ms, host[0], dev[0]);
      add("backward", r.backward_ms, host[1], dev[1]);
      add("forward_backward", r.forward_backward_ms, host[0] + host[1], dev[0] + dev[1]);
    }
  }
  return out;
}

std::vector<FactorSample> dispatch_samples(const std::vector<CorpusEntry>& entries) {
  std::vector<FactorSample> out;
  for (const auto& e : entries) {
    if (e.kind != "dispatch" || !e.scored) continue;
    std::vector<double> eager;
    for (const auto& d : e.dispatch)
      if (d.mode == "eager") eager.push_back(d.overhead_us);
    if (!eager.empty()) out.push_back({"dispatch", e.id, e.id, median(eager), 0});
  }
  return out;
}

static std::vector<FactorSample> samples(const std::vector<RegimePoint>& pts, const std::string& regime, bool measured_over_model) {
  std::vector<FactorSample> out;
  for (const auto& p : pts)
    if (p.regime == regime)
      out.push_back({p.cls, p.system, p.entry, measured_over_model ? p.measured_s / p.model_s() : p.model_s() / p.measured_s, p.cc});
  return out;
}
std::vector<FactorSample> bandwidth_samples(const std::vector<RegimePoint>& pts) { return samples(pts, "bandwidth", false); }
std::vector<FactorSample> latency_samples(const std::vector<RegimePoint>& pts) { return samples(pts, "latency", true); }
std::vector<FactorSample> regime_samples(const std::vector<RegimePoint>& pts, const std::string& regime) {
  return samples(pts, regime, true);
}

std::vector<ScoredPoint> score_points(const std::vector<RegimePoint>& pts, double level) {
  const auto bw = bandwidth_samples(pts), lat = latency_samples(pts);
  std::vector<ScoredPoint> out;
  for (const auto& p : pts) {
    ScoredPoint s;
    s.p = p;
    s.datasheet_s = p.model_s();
    s.eta = fit_factor_prior(bw, p.cls, p.system);
    s.lambda = fit_factor_prior(lat, p.cls, p.system);
    const ScaledTime t = scale_time(p.model_latency_s, p.model_bandwidth_s, s.lambda.median, s.lambda.log_half_width(level),
                                    s.eta.median, s.eta.log_half_width(level));
    s.predicted_s = t.time_s;
    // an interval only where every prior the time leans on exists: a part
    // without one would be priced at its datasheet with no width
    const double wl = s.lambda.median * p.model_latency_s / t.time_s;
    const bool lat_ok = s.lambda.usable() || wl < 0.05, bw_ok = s.eta.usable() || wl > 0.95;
    s.has_interval = lat_ok && bw_ok;
    s.lo_s = t.time_s * std::exp(-t.log_half_width);
    s.hi_s = t.time_s * std::exp(t.log_half_width);
    s.covered = s.has_interval && p.measured_s >= s.lo_s && p.measured_s <= s.hi_s;
    const ScaledTime d = scale_time(p.model_latency_s, p.model_bandwidth_s, 1.0, s.lambda.log_half_width_at_one(level), 1.0,
                                    s.eta.log_half_width_at_one(level));
    s.ds_lo_s = d.time_s * std::exp(-d.log_half_width);
    s.ds_hi_s = d.time_s * std::exp(d.log_half_width);
    s.ds_covered = s.has_interval && p.measured_s >= s.ds_lo_s && p.measured_s <= s.ds_hi_s;
    out.push_back(s);
  }
  return out;
}

static ClassStats stats_of(const std::string& name, const std::vector<const ScoredPoint*>& v) {
  ClassStats c;
  c.cls = name;
  c.n = static_cast<int>(v.size());
  std::vector<double> abs;
  double ds = 0;
  for (auto* s : v) {
    abs.push_back(std::fabs(s->error_pct()));
    ds += std::fabs(s->datasheet_error_pct());
    if (s->has_interval) {
      ++c.with_interval;
      c.covered += s->covered ? 1 : 0;
      c.ds_covered += s->ds_covered ? 1 : 0;
    }
  }
  if (abs.empty()) return c;
  double sum = 0;
  for (double a : abs) sum += a;
  c.mean_abs_pct = sum / abs.size();
  c.median_abs_pct = median(abs);
  c.max_abs_pct = *std::max_element(abs.begin(), abs.end());
  c.datasheet_mean_abs_pct = ds / abs.size();
  return c;
}

std::vector<ClassStats> class_stats(const std::vector<ScoredPoint>& s) {
  std::map<std::string, std::vector<const ScoredPoint*>> by;
  std::map<std::string, std::vector<const ScoredPoint*>> all;
  for (const auto& x : s) {
    by[x.p.cls + "/" + x.p.regime].push_back(&x);
    all["all/" + x.p.regime].push_back(&x);
  }
  std::vector<ClassStats> out;
  for (const auto& [k, v] : by) out.push_back(stats_of(k, v));
  for (const auto& [k, v] : all) out.push_back(stats_of(k, v));
  return out;
}

}  // namespace ks
