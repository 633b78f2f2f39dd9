#pragma once
// kanscale validate --corpus and fit --priors (issue 57): every scored
// all-reduce entry of the corpus predicted from a datasheet cluster built
// from its own description, first bare, then with the priors fitted from
// every other system (the entry's own system left out), with the 90%
// interval the priors give. How: docs/models.md, "Priors from public
// measurements".
#include <optional>
#include <string>
#include <vector>

#include "formats/corpus.hpp"
#include "model/config.hpp"
#include "model/priors.hpp"

namespace ks {

// The datasheet cluster an entry describes, or why none can be built; the
// assumptions made where the entry is silent are listed.
struct CorpusCluster {
  std::optional<Cluster> cluster;
  std::string why_not;
  std::vector<std::string> assumptions;
};
CorpusCluster datasheet_cluster(const CorpusEntry& e);

// Message regimes: latency-bound up to 64 KiB, bandwidth-bound from 64 MiB,
// middle between.
const char* regime_of(double bytes);

// One entry's representative row in one regime (the lower median of its
// rows there by size), with the datasheet model's time split into the chosen
// candidate's latency and bandwidth parts.
struct RegimePoint {
  std::string entry, cls, regime, system;
  double size_bytes = 0, measured_s = 0, measured_busbw_GBps = 0;
  double model_latency_s = 0, model_bandwidth_s = 0;
  std::string algorithm;
  int ranks = 0;
  double cc = 0;  // the GPU's compute capability
  double model_s() const { return model_latency_s + model_bandwidth_s; }
};

struct CorpusSkip {
  std::string entry, why;
};

// The points of every scored all-reduce entry (`scored` false: of every
// unscored one instead); entries that cannot be predicted go to `skipped`
// with the reason.
std::vector<RegimePoint> corpus_points(const std::vector<CorpusEntry>& entries, std::vector<CorpusSkip>& skipped, bool scored = true);

// The factor samples: bandwidth (eta = model time / measured, bandwidth
// regime) and latency (lambda = measured / model time, latency regime).
std::vector<FactorSample> bandwidth_samples(const std::vector<RegimePoint>& pts);
std::vector<FactorSample> latency_samples(const std::vector<RegimePoint>& pts);
// measured / model time in one regime (the datasheet model's own error)
std::vector<FactorSample> regime_samples(const std::vector<RegimePoint>& pts, const std::string& regime);

// Two ways to use the priors, both scored: centred (the datasheet model
// times the priors' medians, width from their spread) and datasheet-centred
// (the model as it is, width from the other systems' root mean square log
// factor about 1). validate --corpus says which the leave-one-out favours.
struct ScoredPoint {
  RegimePoint p;
  double datasheet_s = 0, predicted_s = 0, lo_s = 0, hi_s = 0;
  bool has_interval = false, covered = false;
  double ds_lo_s = 0, ds_hi_s = 0;  // the datasheet-centred interval
  bool ds_covered = false;
  FactorPrior eta, lambda;  // the priors used, the point's system left out
  double error_pct() const { return (predicted_s / p.measured_s - 1) * 100; }
  double datasheet_error_pct() const { return (datasheet_s / p.measured_s - 1) * 100; }
};
// Each point predicted with the priors fitted from every other system.
std::vector<ScoredPoint> score_points(const std::vector<RegimePoint>& pts, double level = 0.90);

struct ClassStats {
  std::string cls;  // "<link class>/<regime>"
  int n = 0, with_interval = 0, covered = 0, ds_covered = 0;
  double mean_abs_pct = 0, median_abs_pct = 0, max_abs_pct = 0;
  double datasheet_mean_abs_pct = 0;
  double coverage() const { return with_interval ? static_cast<double>(covered) / with_interval : 0.0; }
};
// Per "<class>/<regime>", then per regime over every class ("all/<regime>").
std::vector<ClassStats> class_stats(const std::vector<ScoredPoint>& s);

// A KAN timing of the corpus (efficient-kan, shapes and batch stated) beside
// what kanscale predicts for it on a one-GPU datasheet cluster of the
// entry's GPU: the replay's device time per op (roofline at the sheet's
// peaks) and host time per op (the shipped PyTorch host terms and the
// kernel launch), a phase taking max(host sum, device sum): the host
// dispatches ahead of the device, and the slower track sets the pace.
struct KanPoint {
  std::string entry, gpu, shape, phase;  // phase: forward | backward | forward_backward
  double measured_s = 0, predicted_s = 0, host_s = 0, device_s = 0;
};
std::vector<KanPoint> kan_points(const std::vector<CorpusEntry>& entries, std::vector<CorpusSkip>& skipped);

// PyTorch's eager per-op host cost on a CPU, one sample a dispatch entry
// (a CPU each): the median of its eager rows, in microseconds (the prior's
// "ratio" is that value).
std::vector<FactorSample> dispatch_samples(const std::vector<CorpusEntry>& entries);

// kanscale validate --corpus DIR --out OUT: report.md and corpus.json.
int validate_corpus(const std::string& corpus_dir, const std::string& gpus_dir, const std::string& gpus_shown, const std::string& out_dir,
                    const std::string& cmdline = "");
// kanscale fit --priors DIR --out FILE: the priors of every class from every
// scored system.
int fit_priors(const std::string& corpus_dir, const std::string& gpus_dir, const std::string& out_file, const std::string& cmdline = "");

}  // namespace ks
