#include "collectives.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ks {

namespace {
// NCCL's log2i: floor(log2(n)), 0 for n <= 1.
long log2i(long n) {
  long l = 0;
  while (n >>= 1) ++l;
  return l;
}
constexpr int kNvlink = 0, kPci = 1, kNet = 2;
}  // namespace

NcclModel::NcclModel(const Cluster& c, const Calibration& cal) : c_(c), consts_(cal.nccl) {
  // Bus bandwidth per level: within a node the intra-node link; across
  // nodes the slower of that and the node's NICs (the ring enters and
  // leaves every node once per channel; the fabric is non-blocking).
  bus_intra_Bps_ = cal.nccl_bus_bw_intra_Bps.value_or(c.intra.bandwidth_Bps);
  bus_inter_Bps_ = cal.nccl_bus_bw_inter_Bps.value_or(
      std::min(c.intra.bandwidth_Bps, c.net.nics_per_node * c.net.nic_bandwidth_Bps));
}

bool NcclModel::allowed(Algo a, Proto p) const {
  const auto& col = c_.collectives;
  if (std::find(col.algorithms.begin(), col.algorithms.end(), a) == col.algorithms.end()) return false;
  if (std::find(col.protocols.begin(), col.protocols.end(), p) == col.protocols.end()) return false;
  if (p == Proto::ll128) {
    // NCCL enables LL128 by default only when every GPU is sm_70 or sm_80
    // and the intra-node path is NVLink (tuning.cc, protoEnable == 2).
    const double cc = c_.gpu.compute_capability;
    const bool arch = std::fabs(cc - 7.0) < 1e-9 || std::fabs(cc - 8.0) < 1e-9;
    if (!(arch && c_.intra.kind == LinkKind::nvlink)) return false;
  }
  return true;
}

double NcclModel::bus_bandwidth_GBps(const Layout& l) const {
  return (l.nodes == 1 ? bus_intra_Bps_ : bus_inter_Bps_) / 1e9;
}

NcclCandidate NcclModel::candidate(bool allreduce, Algo a, Proto p, double bytes, const Layout& l) const {
  NcclCandidate cd;
  cd.algo = a;
  cd.proto = p;
  cd.enabled = allowed(a, p) && (allreduce || a == Algo::ring);
  if (!cd.enabled || l.ranks <= 1) return cd;
  const int nRanks = l.ranks, nNodes = l.nodes;
  const int ai = a == Algo::ring ? 0 : 1, pi = static_cast<int>(p);
  const bool amd = c_.cpu_vendor == CpuVendor::amd;
  const bool cc80 = std::fabs(c_.gpu.compute_capability - 8.0) < 1e-9;
  const int nChannels = c_.collectives.channels;
  const int index2 = nNodes <= 2 ? nNodes - 1 : 2;
  const int index1 = nNodes == 1 ? (cc80 ? 1 : 0) : (amd ? 1 : 0);
  const double llMaxBw = consts_.ll_max_bw_GBps[index1][index2];
  const double perChMaxTreeBw = consts_.per_ch_max_tree_bw_GBps[cc80 ? 1 : 0][index2];
  const double ppn = static_cast<double>(nRanks) / nNodes;

  const int nsteps = allreduce ? 2 * (nRanks - 1) : nRanks;
  const int nInterSteps = allreduce ? (nNodes > 1 ? 2 * nNodes : 0) : nNodes;

  double busBw = bus_bandwidth_GBps(l);
  if (cc80) busBw = std::min(busBw, consts_.ampere_bus_bw_cap_GBps);
  if (a == Algo::ring && p == Proto::ll) busBw = std::min(llMaxBw, busBw * ((nNodes > 1 || allreduce) ? 1.0 / 4.0 : 1.0 / 3.0));
  if (a == Algo::ring && p == Proto::ll128) busBw = std::min(busBw * (ppn < 2 ? 0.7 : 0.92), consts_.ll128_max_bw_per_ch_GBps * nChannels);
  if (a == Algo::tree) busBw = std::min(busBw * .92, nChannels * perChMaxTreeBw);
  if (a == Algo::tree && p == Proto::ll) busBw = std::min(busBw * 1.0 / 3.8, llMaxBw);
  if (a == Algo::tree && p == Proto::ll128) busBw = std::min(busBw * (nNodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0), consts_.ll128_max_bw_per_ch_GBps * nChannels);
  const double ratio = a == Algo::ring ? static_cast<double>(nRanks) / nsteps : 0.5;
  double bw = busBw * ratio;

  const int intraHw = c_.intra.kind == LinkKind::nvlink ? kNvlink : kPci;
  const int hw = nNodes == 1 ? intraHw : kNet;
  double lat = consts_.base_latency_us[ai][pi];
  double intraLat = consts_.hw_latency_us[intraHw][ai][pi];
  const double interLat = consts_.hw_latency_us[kNet][ai][pi];
  if (nNodes > 1 && p == Proto::ll) intraLat *= 1.8;
  if (a == Algo::ring) {
    if (!allreduce) {
      // Broadcast: ring graphs with sameChannels add one hop latency.
      lat += consts_.hw_latency_us[hw][ai][pi];
    } else {
      lat += (nsteps - nInterSteps) * intraLat + nInterSteps * interLat;
    }
  } else {
    lat += 2 * ((nRanks / nNodes - 1) * intraLat + log2i(nNodes) * interLat);
  }

  // ncclTopoGetAlgoTime
  // (in doubles: a size beyond 2^63 bytes must not wrap to a negative long)
  const double chunks = std::floor(bytes / 64);
  const long logSize = chunks >= 4.6e18 ? 62 : log2i(static_cast<long>(chunks));
  if (a == Algo::tree && logSize < 23) bw *= consts_.tree_correction[pi][logSize];
  if (a == Algo::ring && p == Proto::simple && nNodes > 1 && allreduce && bytes >= nRanks / 16.0 * 65536) {
    lat *= consts_.ring_plateau_factor;
  }
  cd.latency_us = lat;
  cd.bandwidth_GBps = bw;
  if (bw <= 0) {
    cd.enabled = false;
    return cd;
  }
  cd.time_us = lat + bytes / (1000.0 * bw);
  return cd;
}

std::vector<NcclCandidate> NcclModel::allreduce_candidates(double bytes, const Layout& l) const {
  std::vector<NcclCandidate> out;
  for (Algo a : {Algo::tree, Algo::ring})  // NCCL's algorithm index order
    for (Proto p : {Proto::ll, Proto::ll128, Proto::simple}) out.push_back(candidate(true, a, p, bytes, l));
  return out;
}

// getAlgoInfo: strict '<' over (tree, ring) x (LL, LL128, Simple): the
// first pair with the smallest time wins ties; null when none is enabled.
static const NcclCandidate* best_of(const std::vector<NcclCandidate>& cands) {
  const NcclCandidate* best = nullptr;
  for (const auto& c : cands) {
    if (!c.enabled) continue;
    if (!best || c.time_us < best->time_us) best = &c;
  }
  return best;
}

static CollectiveEstimate pick(const std::vector<NcclCandidate>& cands) {
  const NcclCandidate* best = best_of(cands);
  if (!best) return {0.0, "none", ""};
  return {best->time_us * 1e-6, to_string(best->algo), to_string(best->proto)};
}

// The chosen pair's time at the layout's node class (node_factor): NCCL
// picks by its model, the pair it picked runs at its own fraction of it.
static CollectiveEstimate at_layout(CollectiveEstimate e, const CollectiveLibrary& lib, const Layout& l) {
  e.time_s *= lib.node_factor_at(l.nodes);
  return e;
}

CollectiveEstimate NcclModel::allreduce(double bytes, const Layout& l) const {
  if (l.ranks <= 1) return {0.0, "none", ""};  // one rank: nothing to reduce
  return at_layout(pick(allreduce_candidates(bytes, l)), c_.collectives, l);
}

double NcclModel::allreduce_latency_s(double bytes, const Layout& l) const {
  if (l.ranks <= 1) return 0.0;
  const auto cands = allreduce_candidates(bytes, l);
  const NcclCandidate* best = best_of(cands);
  return best ? best->latency_us * 1e-6 * c_.collectives.node_factor_at(l.nodes) : 0.0;
}

CollectiveEstimate NcclModel::broadcast(double bytes, const Layout& l) const {
  if (l.ranks <= 1) return {0.0, "none", ""};
  std::vector<NcclCandidate> c;
  for (Proto p : {Proto::ll, Proto::ll128, Proto::simple}) c.push_back(candidate(false, Algo::ring, p, bytes, l));
  return at_layout(pick(c), c_.collectives, l);
}

// ---------------------------------------------------------------- MPI
AlphaBetaTerms mpi_allreduce_terms(MpiAlgo algorithm, double p, double bytes) {
  if (algorithm == MpiAlgo::recursive_doubling) {
    const double steps = std::ceil(std::log2(p));
    return {steps, steps * bytes};
  }
  return {2 * (p - 1), 2 * (p - 1) / p * bytes};
}

AlphaBetaTerms mpi_broadcast_terms(double p, double bytes) {
  const double steps = std::ceil(std::log2(p));
  return {steps, steps * bytes};
}

double progress_wait_s(double alone_s, int steps, double compute_s, double poll_interval_s) {
  return progress_run(alone_s, steps, compute_s, poll_interval_s, 0.0).wait_s;
}

ProgressRun progress_run(double alone_s, int steps, double compute_alone_s, double poll_interval_s, double interference) {
  steps = std::max(1, steps);
  const double step = alone_s / steps, slow = 1.0 + std::max(0.0, interference);
  const double W = compute_alone_s, d = poll_interval_s;
  // the slack absorbs rounding: a poll at a step's very end counts
  const double eps = 1e-12 * std::max(alone_s, W);
  double t = 0, w = 0;  // wall time, work done
  int done = 0;         // steps finished
  bool running = true;  // step done + 1 runs (the launch starts the first)
  double step_end = step;
  while (true) {
    if (running) {
      // the step ends before the work does (or with it): counted
      const double w_end = w + (step_end - t) / slow;
      if (w_end > W + eps) {  // the work ends first, the step runs into the wait
        t += (W - w) * slow;
        break;
      }
      t = step_end;
      w = std::min(w_end, W);
      if (++done == steps) return {t + (W - w), 0.0};
      running = false;
    }
    // the next poll at or after w (polls at every d of work, none at its end)
    const double poll = d > 0 ? d * std::max(1.0, std::ceil(w / d - 1e-9)) : std::numeric_limits<double>::infinity();
    if (!(poll < W - eps)) {
      t += W - w;
      break;
    }
    t += poll - w;
    w = poll;
    running = true;
    step_end = t + step;
  }
  // the wait: the running step ends, the rest follow back to back
  const int left = steps - done - (running ? 1 : 0);
  const double end = (running ? std::max(step_end, t) : t) + left * step;
  return {t, std::max(0.0, end - t)};
}

MpiModel::MpiModel(const Cluster& c, const Calibration& cal) : c_(c), regimes_(cal.mpi_regimes), bcast_(cal.mpi_broadcast), progress_(cal.mpi_progress) {}

const MpiRegime& mpi_regime_for(const std::vector<MpiRegime>& regimes, double bytes) {
  for (const auto& r : regimes)
    if (bytes < r.max_bytes) return r;
  return regimes.back();
}

const MpiRegime& MpiModel::regime(double bytes) const { return mpi_regime_for(regimes_, bytes); }

namespace {
// A host-memory collective's step over the cluster's links (MPI and gloo
// alike, where no fitted term replaces them): the slowest level's latency,
// and its bandwidth per rank (the ranks of a node share its NICs).
double datasheet_latency(const Cluster& c, const Layout& l) { return l.nodes > 1 ? c.net.latency_s : c.intra.latency_s; }
double datasheet_bandwidth(const Cluster& c, const Layout& l) {
  if (l.nodes == 1) return c.intra.bandwidth_Bps;
  return std::min(c.intra.bandwidth_Bps, c.net.nics_per_node * c.net.nic_bandwidth_Bps / l.ranks_per_node());
}
}  // namespace

double MpiModel::link_latency(const Layout& l, const MpiRegime& r) const { return r.latency_s ? *r.latency_s : datasheet_latency(c_, l); }

double MpiModel::link_bandwidth(const Layout& l, const MpiRegime& r) const {
  return r.bandwidth_Bps ? *r.bandwidth_Bps : datasheet_bandwidth(c_, l);
}

double MpiModel::launch_time(const MpiRegime& r, double bytes) {
  double t = r.launch_s.value_or(0.0);
  if (r.launch_Bps && *r.launch_Bps > 0) t += bytes / *r.launch_Bps;
  return t;
}

CollectiveEstimate MpiModel::allreduce(double bytes, const Layout& l) const {
  if (l.ranks <= 1) return {0.0, "none", ""};
  const MpiRegime& r = regime(bytes);
  const AlphaBetaTerms t = mpi_allreduce_terms(r.algorithm, l.ranks, bytes);
  return {t.latency_steps * link_latency(l, r) + t.byte_steps / link_bandwidth(l, r), to_string(r.algorithm), "",
          launch_time(r, bytes), progress_ ? mpi_progress_steps(*progress_, bytes) : 1};
}

CollectiveEstimate MpiModel::broadcast(double bytes, const Layout& l) const {
  if (l.ranks <= 1) return {0.0, "none", ""};
  const AlphaBetaTerms t = mpi_broadcast_terms(l.ranks, bytes);
  const int steps = progress_ ? mpi_progress_steps(*progress_, bytes) : 1;
  // binomial tree broadcast, with its own measured terms where fitted
  if (bcast_) {
    const double bw = bcast_->bandwidth_Bps ? *bcast_->bandwidth_Bps : link_bandwidth(l, regime(bytes));
    return {t.latency_steps * bcast_->latency_s + t.byte_steps / bw, "binomial", "", 0.0, steps};
  }
  const MpiRegime& r = regime(bytes);
  return {t.latency_steps * link_latency(l, r) + t.byte_steps / link_bandwidth(l, r), "binomial", "", 0.0, steps};
}

// ---------------------------------------------------------------- gloo
GlooModel::GlooModel(const Cluster& c, const Calibration& cal) : c_(c), allreduce_(cal.gloo_allreduce), broadcast_(cal.gloo_broadcast) {}

double GlooModel::latency(const Layout& l, const std::optional<GlooTerm>& t) const { return t ? t->latency_s : datasheet_latency(c_, l); }

double GlooModel::bandwidth(const Layout& l, const std::optional<GlooTerm>& t) const {
  return t && t->bandwidth_Bps ? *t->bandwidth_Bps : datasheet_bandwidth(c_, l);
}

CollectiveEstimate GlooModel::allreduce(double bytes, const Layout& l) const {
  if (l.ranks <= 1) return {0.0, "none", ""};
  const AlphaBetaTerms t = mpi_allreduce_terms(MpiAlgo::ring, l.ranks, bytes);
  return {t.latency_steps * latency(l, allreduce_) + t.byte_steps / bandwidth(l, allreduce_), "ring", ""};
}

CollectiveEstimate GlooModel::broadcast(double bytes, const Layout& l) const {
  if (l.ranks <= 1) return {0.0, "none", ""};
  const AlphaBetaTerms t = mpi_broadcast_terms(l.ranks, bytes);
  return {t.latency_steps * latency(l, broadcast_) + t.byte_steps / bandwidth(l, broadcast_), "binomial", ""};
}

std::unique_ptr<CollectiveModel> make_collective_model(const Cluster& c, const Calibration& cal) {
  if (c.collectives.family == CollFamily::nccl) return std::make_unique<NcclModel>(c, cal);
  if (c.collectives.family == CollFamily::gloo) return std::make_unique<GlooModel>(c, cal);
  return std::make_unique<MpiModel>(c, cal);
}

}  // namespace ks
