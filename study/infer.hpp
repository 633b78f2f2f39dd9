#pragma once
// kanscale study STUDY.yaml --infer: rejection ABC (study/abc) over a
// study's unknowns, conditioned on its published findings. Each draw from
// the prior (uniform over every unknown's range on its own scale) predicts
// the findings' values: the speedup at the published GPU count, the
// communication overhead over 2..that count (exposed and total, the two
// readings of "overhead"), weak scaling's drop-then-plateau and the
// parameter-to-memory ratio over the model sizes. Accepted draws (every
// informative finding of a reading holds) also predict configurations the
// study did not run (the posterior predictive).
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "abc.hpp"
#include "scenario.hpp"

namespace ks {

// The findings of a study's published figures, in a fixed order: speedup,
// then for each reading (exposed, total) the overhead's range and its not
// being monotonic, then weak scaling's shape and the model-size ratio
// (those the figures give).
std::vector<Predicate> study_predicates(const PublishedFigures& pub);
// The readings of "overhead" and the predicates each uses.
std::vector<std::pair<std::string, std::vector<bool>>> readings_of(const std::vector<Predicate>& preds);

// What a draw predicts, from a strong and a weak run at GPU counts
// 1..published and the model sizes at 1 GPU, as the predicates' values.
// The series are per GPU count in increasing order (from 2 for overheads).
double overhead_range_value(const std::vector<double>& overhead_pct, double lo, double hi);
double not_monotonic_value(const std::vector<double>& overhead_pct);
double weak_shape_value(const std::vector<double>& per_gpu_throughput);
double rising_value(const std::vector<double>& ratio);

// The series the findings judge, from a scaling study's result (study
// reports and the inference both read them): throughput per GPU over an
// epoch (per-epoch fixed costs included) at 1, 2, then the other counts up to
// `gpus` (empty without 1 or 2 GPUs); the overhead (%) at 2..gpus.
double epoch_throughput_per_gpu(const ScalingPoint& p);
std::vector<double> weak_series(const StudyResult& r, int gpus);
std::vector<double> overhead_series_pct(const StudyResult& r, int gpus, bool exposed);
inline constexpr double kMinTurnPts = 0.01;  // a change of the overhead smaller than this (points) is no change

// Every unknown's range scaled about its centre on its own scale (the
// sensitivity run: 2 doubles them), kept within what its setting allows.
std::vector<Unknown> scaled_unknowns(const std::vector<Unknown>& unknowns, double scale);

// One ABC-SMC run: a reading's informative findings, all of them or all but
// one (leave one out).
struct SmcRun {
  std::string reading;
  std::vector<bool> use;
  int left_out = -1;  // the predicate left out (-1: none)
  SmcResult result;
};

struct InferRun {
  double range_scale = 1;
  std::vector<Unknown> unknowns;
  std::vector<Predicate> preds;
  std::vector<std::string> extra_names;  // the posterior predictive's columns
  std::vector<Draw> prior;               // the prior's draws
  bool model_sizes = true;               // whether draws replay the model sizes (after the prior: only when informative)
  std::vector<double> rates;             // the fraction of them satisfying each predicate
  std::vector<SmcRun> runs;              // per reading: conditioned on every informative finding, then each left out
  std::vector<Draw> predictive;          // the first reading's posterior draws with their predictions (extra)
  // the same for that reading's run without the first finding, when it was
  // informative and left out (`without`: its id; "" : none)
  std::string without;
  std::vector<Draw> predictive_without;
};
// The GPU counts the posterior predictive replays (at each of
// infer.predict_gpus_per_node): the study's up to the published count, and
// infer.predict_gpus.
std::vector<int> predictive_gpus(const StudySpec& s);

// Sums a vector over every rank (identity alone): the ranks split each
// batch of simulations and all see every result, so that every rank runs
// the same inference.
using SumAll = std::function<std::vector<double>(const std::vector<double>&)>;

// The study's inference with its ranges x `range_scale` (1: leave-one-out
// runs and the posterior predictive too; otherwise the conditioned runs
// only), on rank `rank` of `ranks`.
InferRun run_inference(const StudySpec& s, double range_scale, int rank, int ranks, const SumAll& sum_all,
                       const std::function<void(const std::string&)>& progress = nullptr);

// posterior.yaml, findings.csv, loo.csv, predictive.csv, sensitivity.csv
// and report.md, from the run and its doubled-range twin.
std::vector<std::pair<std::string, std::string>> infer_files(const StudySpec& s, const InferRun& run, const InferRun& doubled,
                                                             double wall_s, int ranks, const std::string& cmdline);

}  // namespace ks
