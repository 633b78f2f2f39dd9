#pragma once
// The collective cost model: one interface, three families.
//  - nccl: NCCL's own tuning model (src/graph/tuning.cc): per (algorithm,
//    protocol) a latency and an algorithm bandwidth; the cheapest pair wins,
//    as ncclTopoGetAlgoTime/getAlgoInfo choose it. Derivation: docs/models.md.
//  - mpi: OpenMPI-like size regimes with alpha-beta costs.
//  - gloo: torch.distributed's CPU backend, gloo's ring and binomial tree
//    with alpha-beta costs.
#include <memory>
#include <string>
#include <vector>

#include "config.hpp"

namespace ks {

struct Layout {
  int ranks = 1;
  int nodes = 1;
  int ranks_per_node() const { return ranks / nodes; }
};

struct CollectiveEstimate {
  double time_s = 0;
  // CPU time the issuing call itself takes on the rank's compute track
  // (MPI_Iallreduce initiation: libnbc's schedule and first round); part of
  // time_s, not added to it. 0 for NCCL (an asynchronous enqueue).
  std::string algorithm;  // "ring", "tree", "recursive_doubling", "none"
  std::string protocol;   // "LL", "LL128", "Simple", "" (mpi)
  double launch_s = 0;
  // The steps it moves in when it progresses only inside MPI calls (the
  // calibration's mpi_progress); 1: it progresses on its own.
  int steps = 1;
  std::string label() const { return protocol.empty() ? algorithm : algorithm + "/" + protocol; }
};

struct NcclCandidate {
  Algo algo;
  Proto proto;
  bool enabled = false;
  double latency_us = 0;
  double bandwidth_GBps = 0;  // algorithm bandwidth (after the tree correction for this size)
  double time_us = 0;
};

class CollectiveModel {
 public:
  virtual ~CollectiveModel() = default;
  virtual CollectiveEstimate allreduce(double bytes, const Layout& l) const = 0;
  virtual CollectiveEstimate broadcast(double bytes, const Layout& l) const = 0;
  virtual std::string family() const = 0;
};

std::unique_ptr<CollectiveModel> make_collective_model(const Cluster& c, const Calibration& cal);

// The NCCL family, exposed for tests and `kanscale model allreduce`.
class NcclModel : public CollectiveModel {
 public:
  NcclModel(const Cluster& c, const Calibration& cal);
  CollectiveEstimate allreduce(double bytes, const Layout& l) const override;
  CollectiveEstimate broadcast(double bytes, const Layout& l) const override;
  std::string family() const override { return "nccl"; }
  // Every (algorithm, protocol) pair for an all-reduce of `bytes`.
  std::vector<NcclCandidate> allreduce_candidates(double bytes, const Layout& l) const;
  // The latency part (s) of the all-reduce of `bytes` that allreduce() chose
  // (its time less the bytes over its bandwidth); 0 for one rank.
  double allreduce_latency_s(double bytes, const Layout& l) const;
  // NCCL's bus bandwidth before per-protocol refinements (GB/s).
  double bus_bandwidth_GBps(const Layout& l) const;

 private:
  NcclCandidate candidate(bool allreduce, Algo a, Proto p, double bytes, const Layout& l) const;
  bool allowed(Algo a, Proto p) const;
  Cluster c_;
  NcclConstants consts_;
  double bus_intra_Bps_, bus_inter_Bps_;
};

// The alpha-beta terms of an MPI collective on p ranks: it costs
// latency_steps x latency + byte_steps x bytes / bandwidth. The model below
// and the fit's design matrix (calibration_fit) both take them from here.
//  - recursive doubling all-reduce: ceil(log2 p) exchange steps, each of the
//    whole message;
//  - ring all-reduce: reduce-scatter then all-gather, 2(p-1) steps of
//    bytes/p;
//  - binomial-tree broadcast: ceil(log2 p) steps of the whole message.
struct AlphaBetaTerms {
  double latency_steps = 0, byte_steps = 0;
};
AlphaBetaTerms mpi_allreduce_terms(MpiAlgo algorithm, double ranks, double bytes);
AlphaBetaTerms mpi_broadcast_terms(double ranks, double bytes);

// The progress model's prediction for the situation `kanscale bench
// progress` measures: every rank launches a collective of `steps` steps and
// `alone_s` in all at time 0, computes until compute_s calling MPI every
// poll_interval_s (0: never), then waits. Returns how long the wait lasts.
// A step runs on its own; the next starts at the first MPI call at or after
// the end of the last (in the wait: at once). The replay (sim/replay) moves
// its collectives by the same rule.
double progress_wait_s(double alone_s, int steps, double compute_s, double poll_interval_s);
// The same with the compute given as work (its time alone, polls at every
// poll_interval_s of that work) slowed by 1 + interference while a step
// runs, as the replay slows it: when the compute ends and how long the wait
// then lasts. interference 0 gives progress_wait_s.
struct ProgressRun {
  double compute_s = 0, wait_s = 0;
};
ProgressRun progress_run(double alone_s, int steps, double compute_alone_s, double poll_interval_s, double interference);

// The regime a message of `bytes` falls in: the first whose max_bytes is
// above it, else the last (regimes: non-empty, in ascending max_bytes).
const MpiRegime& mpi_regime_for(const std::vector<MpiRegime>& regimes, double bytes);

class MpiModel : public CollectiveModel {
 public:
  MpiModel(const Cluster& c, const Calibration& cal);
  CollectiveEstimate allreduce(double bytes, const Layout& l) const override;
  CollectiveEstimate broadcast(double bytes, const Layout& l) const override;
  std::string family() const override { return "mpi"; }

 private:
  const MpiRegime& regime(double bytes) const;
  double link_latency(const Layout& l, const MpiRegime& r) const;
  double link_bandwidth(const Layout& l, const MpiRegime& r) const;
  static double launch_time(const MpiRegime& r, double bytes);
  Cluster c_;
  std::vector<MpiRegime> regimes_;
  std::optional<MpiBroadcast> bcast_;
  std::optional<MpiProgress> progress_;
};

// gloo as torch 1.13's ProcessGroupGloo runs collectives on CPU tensors:
// gloo::allreduce without an algorithm set is gloo's ring (a reduce-scatter
// then an all-gather, each chunk in segments; gloo/allreduce.cc), and
// gloo::broadcast is a binomial tree of ceil(log2 n) steps of the whole
// message (gloo/broadcast.cc). Each step costs latency + bytes / bandwidth,
// with the calibration's fitted terms (kanscale calibrate
// configs/calibrate/pytorch-cpu.yaml) or the links' datasheet values. A
// collective runs on the process group's own threads: it progresses by
// itself (one step for the replay).
class GlooModel : public CollectiveModel {
 public:
  GlooModel(const Cluster& c, const Calibration& cal);
  CollectiveEstimate allreduce(double bytes, const Layout& l) const override;
  CollectiveEstimate broadcast(double bytes, const Layout& l) const override;
  std::string family() const override { return "gloo"; }

 private:
  double latency(const Layout& l, const std::optional<GlooTerm>& t) const;
  double bandwidth(const Layout& l, const std::optional<GlooTerm>& t) const;
  Cluster c_;
  std::optional<GlooTerm> allreduce_, broadcast_;
};

}  // namespace ks
