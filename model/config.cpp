#include "config.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "common/error.hpp"

namespace ks {


const char* to_string(LinkKind k) {
  switch (k) {
    case LinkKind::nvlink: return "nvlink";
    case LinkKind::pcie: return "pcie";
    case LinkKind::shm: return "shm";
  }
  return "?";
}
const char* to_string(Algo a) { return a == Algo::ring ? "ring" : "tree"; }
const char* to_string(MpiAlgo a) { return a == MpiAlgo::ring ? "ring" : "recursive_doubling"; }

int node_class(int nodes) {
  int c = 0;
  while (c < 31 && (1 << c) < nodes) ++c;
  return c;
}

double CollectiveLibrary::node_factor_at(int nodes) const {
  const auto c = static_cast<std::size_t>(node_class(nodes));
  return c < node_factor.size() ? node_factor[c] : 1.0;
}

int mpi_progress_steps(const MpiProgress& p, double bytes) {
  double steps = p.min_steps;
  // a step moves at most chunk bytes (capped at 4096 steps, as the fit's models)
  if (p.chunk_bytes > 0) steps = std::max(steps, std::min(std::ceil(bytes / p.chunk_bytes), 4096.0));
  return std::max(1, static_cast<int>(steps));
}
const char* to_string(Proto p) {
  switch (p) {
    case Proto::ll: return "LL";
    case Proto::ll128: return "LL128";
    case Proto::simple: return "Simple";
  }
  return "?";
}
const char* to_string(Precision p) { return p == Precision::fp32 ? "fp32" : "tf32"; }
const char* to_string(Implementation i) { return i == Implementation::pytorch ? "pytorch" : "kanscale"; }

double OpCost::time_s(double flops, double bytes, double elements, double weights) const {
  // (a rate below 0 comes only from a drawn calibration: see set_op_coefficients)
  const double tf = flop_rate != 0 ? flops / flop_rate : 0.0;
  const double tb = byte_rate != 0 ? bytes / byte_rate : 0.0;
  return std::max(0.0, fixed_s + (roofline ? std::max(tf, tb) : tf + tb) + elements * element_s + weights * weight_s);
}

// ---------------------------------------------------------------- NCCL tables
NcclConstants nccl_constants_for(const std::string& version, const std::string& where) {
  // Source: NVIDIA/nccl v2.14.3-1, src/graph/tuning.cc (baseLat, hwLat,
  // ll128MaxBwPerCh, llMaxBws, perChMaxTreeBws, treeCorrectionFactor, the
  // 235 GB/s sm_80 cap and the 1.9 ring plateau factor in
  // ncclTopoGetAlgoTime). Index order: algo {tree, ring}, proto {LL, LL128,
  // Simple}; kanscale stores algo as {ring, tree}.
  const bool is_214 = version.size() > 5 && version.rfind("2.14.", 0) == 0 &&
                      version.find_first_not_of("0123456789", 5) == std::string::npos;
  if (!is_214) {
    throw InputError(where + ": NCCL version \"" + version +
                     "\" is not supported: kanscale carries NCCL's tuning constants for 2.14.x only "
                     "(a version such as \"2.14.3\")");
  }
  NcclConstants c;
  const double base[2][3] = {{3.6, 10.0, 8.4}, {4.4, 4.4, 0.0}};  // ring, tree
  const double hw[3][2][3] = {
      {{.47, 1.9, 3.4}, {.52, 1.25, 28}},   // NVLink: ring, tree
      {{1.0, 2.5, 5.7}, {1.0, 1.9, 28}},    // PCI
      {{2.7, 4.0, 9.6}, {5.0, 8.5, 28}}};   // NET
  const double llmax[2][3] = {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}};
  const double treemax[2][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}};
  const double corr[3][23] = {
      {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
      {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
      {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}};
  std::copy(&base[0][0], &base[0][0] + 6, &c.base_latency_us[0][0]);
  std::copy(&hw[0][0][0], &hw[0][0][0] + 18, &c.hw_latency_us[0][0][0]);
  std::copy(&llmax[0][0], &llmax[0][0] + 6, &c.ll_max_bw_GBps[0][0]);
  std::copy(&treemax[0][0], &treemax[0][0] + 6, &c.per_ch_max_tree_bw_GBps[0][0]);
  std::copy(&corr[0][0], &corr[0][0] + 69, &c.tree_correction[0][0]);
  c.ll128_max_bw_per_ch_GBps = 20.0;
  c.ampere_bus_bw_cap_GBps = 235.0;
  c.ring_plateau_factor = 1.9;
  return c;
}

// ---------------------------------------------------------------- calibration
Calibration datasheet_calibration(const Cluster& c, Precision precision) {
  Calibration cal;
  cal.name = c.name + "-datasheet";
  cal.source = "datasheet";
  cal.derived_from = c.file;
  cal.concurrency = c.gpus_per_node;
  // Roofline at datasheet peaks: an optimistic bound, labelled as derived.
  cal.gemm = OpCost{c.gpu.kernel_launch_s, precision == Precision::tf32 ? c.gpu.tf32_flops : c.gpu.fp32_flops,
                  c.gpu.memory_bandwidth_Bps, true};
  cal.elementwise = OpCost{c.gpu.kernel_launch_s, c.gpu.fp32_flops, c.gpu.memory_bandwidth_Bps, true};
  // Unknown without measurement: host overhead, jitter and interference are 0.
  cal.host_overhead_s = 0;
  cal.jitter_sigma = 0;
  cal.interference = 0;
  if (c.collectives.family == CollFamily::nccl) cal.nccl = nccl_constants_for(c.collectives.version, c.file);
  // OpenMPI's fixed decision (ompi/mca/coll/tuned/coll_tuned_decision_fixed.c,
  // 4.0: intermediate_message = 10000 B): recursive doubling below, ring above.
  cal.mpi_regimes = {MpiRegime{10000.0, MpiAlgo::recursive_doubling, std::nullopt, std::nullopt, std::nullopt, std::nullopt},
                   MpiRegime{std::numeric_limits<double>::infinity(), MpiAlgo::ring, std::nullopt, std::nullopt, std::nullopt, std::nullopt}};
  cal.runtime_memory_bytes = c.gpu.runtime_memory_bytes;
  return cal;
}

std::vector<double> op_coefficients(const OpCost& c, bool layer) {
  auto per = [](double rate) { return rate > 0 ? 1.0 / rate : 0.0; };
  if (layer) return {c.fixed_s, per(c.flop_rate), per(c.byte_rate), c.element_s, c.weight_s};
  return {c.fixed_s, per(c.byte_rate)};
}

void set_op_coefficients(OpCost& c, bool layer, const std::vector<double>& coef, bool signed_terms) {
  auto rate = [&](double per) { return per > 0 || (signed_terms && per < 0) ? 1.0 / per : 0.0; };
  auto term = [&](double v) { return signed_terms ? v : std::max(0.0, v); };
  c.fixed_s = term(coef.at(0));
  if (layer) {
    c.flop_rate = rate(coef.at(1));
    c.byte_rate = rate(coef.at(2));
    c.element_s = term(coef.at(3));
    c.weight_s = term(coef.at(4));
  } else {
    c.byte_rate = rate(coef.at(1));
  }
}

std::vector<double> alpha_beta_coefficients(const std::optional<double>& latency_s, const std::optional<double>& bandwidth_Bps) {
  return {latency_s.value_or(0.0), bandwidth_Bps && *bandwidth_Bps > 0 ? 1.0 / *bandwidth_Bps : 0.0};
}

void set_alpha_beta(std::optional<double>& latency_s, std::optional<double>& bandwidth_Bps, const std::vector<double>& coef) {
  latency_s = std::max(0.0, coef.at(0));
  if (coef.at(1) > 0) bandwidth_Bps = 1.0 / coef.at(1);
  else bandwidth_Bps.reset();
}

const Calibration::LiveTerm* live_term_for(const Calibration& cal, int ranks_per_node) {
  const Calibration::LiveTerm* best = nullptr;
  for (const auto& t : cal.live_terms)
    if (t.ranks <= ranks_per_node && (!best || t.ranks > best->ranks)) best = &t;
  return best;
}

Extrapolation extrapolation_for(const Calibration& cal, int ranks) {
  Extrapolation x;
  x.predicted_ranks = ranks;
  const Calibration::LiveTerm *lo = nullptr, *hi = nullptr;
  for (const auto& t : cal.live_terms) {
    if (!lo || t.ranks < lo->ranks) lo = &t;
    if (!hi || t.ranks > hi->ranks) hi = &t;
  }
  if (!hi) return x;
  x.measured_ranks = hi->ranks;
  x.per_doubling_sigma = kExtrapolationPriorPerDoubling;
  x.source = "the prior (the shipped local-cpu calibration's factor moved 5.7% from 1 to 2 ranks)";
  if (lo != hi && lo->compute_factor > 0 && hi->compute_factor > 0) {
    const double own = std::fabs(std::log(hi->compute_factor / lo->compute_factor)) / std::log2(static_cast<double>(hi->ranks) / lo->ranks);
    if (own > x.per_doubling_sigma) {
      x.per_doubling_sigma = own;
      x.source = "calibration '" + cal.name + "''s own live terms (their compute factor's change per doubling from " +
                 std::to_string(lo->ranks) + " to " + std::to_string(hi->ranks) + " ranks)";
    }
  }
  if (ranks > x.measured_ranks) x.sigma = x.per_doubling_sigma * std::log2(static_cast<double>(ranks) / x.measured_ranks);
  return x;
}

double probe_bandwidth(const std::vector<std::pair<double, double>>& p, double ws) {
  if (p.size() < 2 || !(ws > 0)) return 0.0;
  if (ws <= p.front().first) return p.front().second;
  if (ws >= p.back().first) return p.back().second;
  for (std::size_t i = 1; i < p.size(); ++i) {
    if (ws <= p[i].first) {
      const double a = std::log(p[i - 1].first), b = std::log(p[i].first), t = (std::log(ws) - a) / (b - a);
      return p[i - 1].second + t * (p[i].second - p[i - 1].second);
    }
  }
  return p.back().second;
}

double cache_probe_scale(const std::vector<std::pair<double, double>>& p, double bytes) {
  const double bw = probe_bandwidth(p, bytes);
  if (!(bw > 0)) return 1.0;
  double hi = 0;
  for (const auto& [b, v] : p) hi = std::max(hi, v);
  return std::max(1.0, hi / bw);
}

// The fraction of the way from the probe's best time per byte to its worst
// at the working set's bandwidth: what a cold op pays beyond a warm one is
// time, so the interpolation is in 1/bandwidth. (It was linear in
// bandwidth, which put a 4-16 MiB working set, read at the L3's 28 of 56
// GB/s, 58% of the way to cold. The trainer's own per-layer times on the
// Xeon of 3 Dec 2026 sat 0.03-0.5 of the way from the warm to the cold
// microbenchmark at such working sets, about 0.2 on average; 1/bandwidth
// gives 0.21. docs/validating.md, attempt E.)
double cold_fraction_for(const Calibration& cal, double ws) {
  const auto& p = cal.cache_probe;
  if (p.size() < 2 || !(ws > 0)) return 0.0;
  double hi = 0, lo = 1e300;
  for (const auto& [b, bw] : p) {
    hi = std::max(hi, bw);
    lo = std::min(lo, bw);
  }
  if (!(hi > lo)) return 0.0;
  const double bw = probe_bandwidth(p, ws);
  return std::clamp((1.0 / bw - 1.0 / hi) / (1.0 / lo - 1.0 / hi), 0.0, 1.0);
}

JobCosts job_costs_default(CollFamily family) {
  // docs/models.md, "A job's fixed costs": measured on the 2-core Intel Xeon
  // VM of 3 Dec 2026 (median of 5 runs each) and, for NCCL's
  // initialisation, NVIDIA/nccl issue #534.
  JobCosts j;
  j.defaulted = true;
  if (family == CollFamily::mpi) {
    // mpirun starting kanscale through MPI_Init: 0.31 s at 1 and at 2 ranks
    // (no difference to measure between them on one node)
    j.startup_s = 0.31;
    j.source = "default: mpirun + MPI_Init measured on a 2-core Intel Xeon VM (docs/models.md)";
    return j;
  }
  // the interpreter and `import torch, torch.distributed` (Debian's torch
  // 1.13): 0.78 s; a CUDA context comes on top on a GPU (not measured here)
  j.startup_s = 0.78;
  if (family == CollFamily::gloo) {
    // init_process_group("gloo") at 2 ranks over loopback: 1.01 s (the
    // store's 1 s retry when a rank comes first; 0.02 s otherwise)
    j.communicator_init_s = 1.01;
    j.source = "default: import torch and a gloo process group measured on a 2-core Intel Xeon VM (docs/models.md)";
    return j;
  }
  // NCCL (NVIDIA/nccl#534, V100 + InfiniBand): one communicator took
  // 16.3 s / 8 = 2.04 s at 8 ranks and 130 s / 32 = 4.06 s at 32; the line
  // through them: 1.36 s + 84.4 ms per rank
  j.communicator_init_s = 1.3625;
  j.communicator_init_per_rank_s = 0.084375;
  j.source = "default: import torch measured on a CPU VM, NCCL's initialisation from NVIDIA/nccl#534 (docs/models.md)";
  return j;
}

double JobCosts::total(int ranks, Implementation impl) const {
  const double startup = defaulted && impl == Implementation::kanscale ? job_costs_default(CollFamily::mpi).startup_s : startup_s;
  return startup + communicator_init(ranks);
}

const char* to_string(CollFamily f) { return f == CollFamily::nccl ? "nccl" : f == CollFamily::mpi ? "mpi" : "gloo"; }

std::string collective_family_mismatch(const Cluster& c, const Calibration& cal) {
  // indexed by CollFamily
  static const char* kNames[] = {"NCCL", "MPI", "gloo"};
  const bool has[] = {cal.has_nccl_terms, cal.has_mpi_terms, cal.has_gloo_terms};
  const int fam = static_cast<int>(c.collectives.family);
  if (has[fam]) return "";
  std::string others;
  for (int f = 0; f < 3; ++f)
    if (has[f]) others += std::string(others.empty() ? "" : " and ") + kNames[f];
  if (others.empty()) return "";
  return "calibration '" + cal.name + "' has " + others + " collective terms only; cluster '" + c.name + "' uses " + kNames[fam] +
         ": its collectives stay at the cluster's datasheet values";
}

bool host_track_applies(const Cluster& c, const Workload& w) {
  return w.implementation == Implementation::pytorch && c.collectives.family == CollFamily::nccl;
}

bool needs_default_host_terms(const Cluster& c, const Workload& w, const Calibration& cal) {
  return host_track_applies(c, w) && cal.torch_ops.empty();
}

void check_calibration_covers(const Workload& w, const Calibration& cal, const std::string& calibration_file) {
  if (w.implementation != Implementation::pytorch || cal.ops.empty() || !cal.torch_ops.empty()) return;
  throw InputError((calibration_file.empty() ? "calibration '" + cal.name + "'" : calibration_file) +
                   ": holds the costs of kanscale's own kernels only (kanscale measure kernels), but workload " +
                   (w.file.empty() ? w.name : w.file) +
                   " says implementation: pytorch; make a PyTorch calibration with kanscale calibrate "
                   "configs/calibrate/pytorch-cpu.yaml --out DIR and use DIR/results/calibration-gloo.yaml");
}

}  // namespace ks
