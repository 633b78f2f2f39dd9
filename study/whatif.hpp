#pragma once
// kanscale whatif: capacity-planning questions answered by searching
// simulated scenarios (run_study, the same replay as simulate and study).
// Each answer is one line, the reasoning behind it (which term dominates),
// and the table that was searched; a budget nothing meets is an answer too
// ("met": false), naming what comes closest.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/config.hpp"
#include "sim/point.hpp"

namespace ks {

struct WhatifCluster {
  std::string label;  // the cluster's name unless given
  Cluster cluster;
  Calibration calibration;
};

struct WhatifBase {
  std::vector<WhatifCluster> clusters;  // one; several for whatif cluster
  Workload workload;
  StudyOptions options;  // seed, iterations, scaling; gpus and gpus_per_node per query
  // a query estimated to replay more events than this, all its candidates
  // together, is refused before any runs (--max-events)
  double max_events = kDefaultMaxEvents;
};

// A column of the searched table: its JSON key and how its numbers print
// ("int", "text", "bool", "time", "bytes", "ratio", "gpu_hours", "money").
struct WhatifColumn {
  std::string key, kind;
};

struct WhatifAnswer {
  std::string query;
  bool met = true;  // false: no candidate met the budget; `answer` names the closest
  std::string answer;
  std::vector<std::string> reasoning;
  std::vector<WhatifColumn> columns;
  std::vector<std::vector<nlohmann::json>> rows;
  int chosen = -1;  // the answer's row (the closest one when not met)
  // no candidate fits the GPU's memory: the answer says so and names the
  // smallest setup that would (kanscale whatif exits 1)
  bool nothing_fits = false;
  nlohmann::json inputs;  // what was asked
  nlohmann::json to_json() const;
  std::string text() const;
};

// The fewest GPUs (and the node layout) that train `epochs` epochs within
// `budget_s`, optionally at a parallel efficiency of at least
// `min_efficiency`. Candidates: each GPU count of `gpus` (empty: powers of
// two up to the cluster) on every layout of whole nodes from the cluster's
// GPUs per node down to 1 that the cluster holds. Among the counts that
// meet, the fewest; among its layouts, the fastest.
// With a calibration that records measured uncertainty, each candidate's
// time to train carries interval samples (StudyOptions::interval_samples,
// the engine simulate and the study use): a candidate meets the budget when
// its time at the `confidence` quantile does (unset: on the point
// prediction), and the answer states the probability of meeting it (the
// share of samples within) and the central interval.
struct GpusQuery {
  double epochs = 1;
  double budget_s = 0;
  std::optional<double> min_efficiency;
  std::vector<int> gpus;
  std::optional<double> confidence = 0.9;
};
WhatifAnswer whatif_gpus(const WhatifBase& b, const GpusQuery& q);

// The largest hidden width (every hidden layer set to it) or grid size that
// fits the GPU's memory at the workload's per-GPU batch on `gpus` GPUs,
// searched from 1 up to `limit` (memory grows with either).
// Memory is a point prediction: a size fits when its predicted peak plus
// `memory_headroom` (a fraction of it) is within the GPU's memory.
struct ModelQuery {
  std::string vary = "widths";  // or "grid"
  int gpus = 1;
  std::int64_t limit = 1 << 20;
  double memory_headroom = 0.10;
};
WhatifAnswer whatif_model(const WhatifBase& b, const ModelQuery& q);

// The bucket cap (and gradient_as_bucket_view) with the shortest iteration
// at `gpus` GPUs. Ties (within 1e-9) go to gradient_as_bucket_view (less
// memory), then to the larger cap (fewer all-reduces).
struct BucketQuery {
  int gpus = 8;
  std::vector<double> caps;  // bytes
  bool both_views = true;    // false: the workload's own setting only
};
WhatifAnswer whatif_bucket_cap(const WhatifBase& b, const BucketQuery& q);

// The cheapest of the clusters: for each, the GPU count of `gpus` (that it
// holds, full nodes) with the fewest GPU-hours for `epochs` epochs that
// meets the optional time budget and efficiency; then the cheapest cluster
// in GPU-hours, and in money where every cluster gives a price (in one
// currency).
struct ClusterQuery {
  double epochs = 1;
  std::vector<int> gpus;
  std::optional<double> budget_s;
  std::optional<double> min_efficiency;
  std::optional<double> confidence = 0.9;  // as GpusQuery's
};

// A candidate's time to train as a budget is judged: its `confidence`
// quantile over the interval samples, or the point prediction (no
// confidence, or no samples).
double time_to_train_at(const ScalingPoint& p, const std::optional<double>& confidence);
// The share of interval samples within the budget (nullopt: no samples).
std::optional<double> probability_within(const ScalingPoint& p, double budget_s);
WhatifAnswer whatif_cluster(const WhatifBase& b, const ClusterQuery& q);

// One or more changes as a before/after table at `gpus` GPUs. KEY=VALUE or
// KEY=FACTORx (see kWhatifChangeKeys). Throws InputError for an unknown key,
// a bad value, or a change that moves nothing in the model in use (with the
// reason): each change is also tried alone and must move the prediction.
struct Change {
  std::string key, value;
};
extern const char* const kWhatifChangeKeys;
WhatifAnswer whatif_change(const WhatifBase& b, int gpus, const std::vector<Change>& changes);

}  // namespace ks
