#pragma once
// Priors on what real systems achieve of their datasheet (issue 57): a
// factor per link class, fitted as a lognormal over systems, with the
// prediction interval of one more system. Pure functions; the corpus that
// feeds them is read at the edge (formats/corpus), the fit is written by
// `kanscale fit --priors` and scored by `kanscale validate --corpus`.
//
// The interval of a new system's factor, from k systems' log factors with
// mean m and standard deviation s on df degrees of freedom, is
//   m +- t(0.95; df) x s x sqrt(1 + 1/k)
// (the textbook prediction interval of one more draw of a normal whose mean
// and spread are both estimated).
#include <map>
#include <set>
#include <string>
#include <vector>

namespace ks {

// One system's measured factor (achieved / the datasheet model's) in a
// class; several entries of one system are averaged (in logs) first.
struct FactorSample {
  std::string cls;     // e.g. "roce"
  std::string system;  // CorpusEntry::system_key
  std::string entry;   // the entry it came from
  double ratio = 1;    // > 0
  double cc = 0;       // the machine's GPU compute capability (0: not stated)
};

struct FactorPrior {
  // class: the class's own systems (at least 2) give the median and the
  // pooled within-class spread the width; pooled: fewer than 2 in the class,
  // every class's systems together; none: fewer than 2 systems at all.
  std::string scope = "none";
  double median = 1;      // exp(mean of the log factors)
  double sigma = 0;       // standard deviation of the log factors
  int systems = 0;        // k: systems behind the median
  int df = 0;             // degrees of freedom of sigma
  std::vector<std::string> from;  // the entries behind it
  std::set<double> ccs;            // the compute capabilities of the GPUs behind it (a generation not among them: untested)
  // The same systems' root mean square log factor about 0 (factor 1: the
  // datasheet model as it is), on `systems` degrees of freedom: the width
  // of an interval centred on the datasheet, t(0.95; k) x rms.
  double rms = 0;
  bool usable() const { return scope != "none"; }
  // Half-width in logs of the central `level` (e.g. 0.90) interval of one
  // more system's factor; 0 when not usable.
  double log_half_width(double level) const;
  // The same for an interval centred on factor 1.
  double log_half_width_at_one(double level) const;
};

// The prior for `cls` from `samples`, leaving out every sample of the system
// `leave_out` ("" leaves none out).
FactorPrior fit_factor_prior(const std::vector<FactorSample>& samples, const std::string& cls, const std::string& leave_out = "");

// The NCCL priors as `kanscale fit --priors` writes them (configs/priors/gpu.yaml):
// per link class, the bandwidth and latency factors.
struct NcclPriors {
  std::string file;
  std::map<std::string, FactorPrior> bandwidth, latency;
  // per regime (latency, middle, bandwidth): the datasheet model's RMS log
  // error (measured / model) over machines, every class together
  struct Rms {
    double rms = 0;
    int machines = 0;
  };
  std::map<std::string, Rms> datasheet_rms;
  // PyTorch's eager per-op host cost on a CPU, microseconds (key
  // dispatch.per_op_us; systems: the CPUs behind it); scope none: absent
  FactorPrior dispatch_us;
};
// Student's t quantile (p, df), for the intervals of one more draw.
double student_t_quantile(double p, int df);
// The RMS over machines of log(ratio): each machine's mean log first, or
// (squares) its mean square log, so that one machine's errors of both signs
// in several regimes do not cancel; every machine weighs the same.
NcclPriors::Rms rms_over_machines(const std::vector<FactorSample>& samples, bool squares = false);
// The corpus class an all-reduce over `nodes` nodes of a cluster with
// `gpus_per_node` GPUs a node falls in (the hardware, not the ranks the
// job uses): one node, nvswitch (NVLink among more than 2 GPUs; a V100
// hybrid cube mesh would count here too), nvlink (a pair) or pcie; several,
// the network's kind (infiniband, roce); "" when the priors have none
// (another network, an unnamed one).
std::string nccl_prior_class(bool nvlink, int gpus_per_node, int nodes, const std::string& network_kind);

// A time made of a latency part and a bandwidth part, each scaled by its
// prior: T = lambda x latency + bandwidth / eta. Its interval's half-width in
// logs combines the two priors' half-widths by their shares of T (first
// order in the logs; the two factors independent):
//   h = sqrt((w_lat h_lat)^2 + (w_bw h_bw)^2),  w_lat = lambda L / T, w_bw = (B / eta) / T.
struct ScaledTime {
  double time_s = 0;
  double log_half_width = 0;
};
ScaledTime scale_time(double latency_s, double bandwidth_s, double lambda, double h_lambda, double eta, double h_eta);

}  // namespace ks
