#pragma once
// A study file (kanscale study STUDY.yaml): clusters, a base workload and
// the sweeps over them, expanded into scenarios. A scenario is one scaling
// study (run_study) over the study's GPU counts: one cluster, one value of
// every swept key. The outputs (study/study_report) group its points by the
// four dimensions of the KAN scaling study.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/config.hpp"
#include "settings.hpp"
#include "sim/point.hpp"

namespace ks {

struct StudyCluster {
  std::string label;  // the name plots and tables use (the cluster's name unless given)
  Cluster cluster;
  Calibration calibration;
  std::string calibration_file;  // empty: the datasheet calibration
};

struct Scenario {
  std::size_t cluster = 0;  // index into StudySpec::clusters
  Workload workload;        // the base workload with this scenario's values
  Cluster cluster_config;   // with this scenario's restrictions and network factors
  Calibration calibration;  // the cluster's, with this scenario's network factors
  StudyOptions options;
  // (key, value) of every swept key, in the sweep's order; the label joins
  // those with more than one value in the study.
  std::vector<std::pair<std::string, std::string>> settings;
  std::string label;        // cluster label and the varying settings
  std::string curve;        // the label without the scaling mode (one line per curve in a plot)
};

// A value of the setup nobody recorded, given as a range (study/scenario's
// unknowns): the scenario band is the prediction's envelope over it.
struct Unknown {
  enum class Kind { pow2, factor, time, choice, whole };
  const Setting* setting = nullptr;  // settings() with kUnknown
  std::string key;
  Kind kind = Kind::time;
  double lo = 0, hi = 0;      // choice: 0 .. choices - 1
  double nominal = 0;         // the value of the point prediction
  std::vector<std::string> choices;
  // factors and powers of two spread on a log scale, the rest on a linear one
  bool log_scale() const { return kind == Kind::factor || kind == Kind::pow2; }
  // a value as the study file writes it ("1024", "1.5x", "2.00 ms", "global")
  std::string text(double v) const;
  // the value at fraction u of the range: log scale for factors and powers
  // of two (rounded to one), linear for times and whole numbers (rounded
  // down, each equally likely), an index for choices
  double at(double u) const;
  // every value a one-at-a-time sweep takes: the powers of two or choices in
  // the range, or `n` values spread over it
  std::vector<double> grid(int n) const;
};

// Figures a study was published with (its `published:` section).
struct PublishedFigures {
  bool given = false;
  std::string source;
  int gpus = 8;                                  // where speedup and efficiency were reported
  std::optional<double> speedup;                 // at `gpus`
  std::optional<double> efficiency;              // fraction, at `gpus`
  std::optional<std::pair<double, double>> overhead;  // lowest and highest communication overhead (fractions) over 2..gpus
  bool weak_drop_then_plateau = false;           // weak scaling: a drop from 1 to 2 GPUs, then stable
  // half a unit of each figure's last published digit (5.97: 0.005; 74.7%:
  // 0.0005): a band within that of the figure covers it
  double speedup_tol = 0, efficiency_tol = 0, overhead_tol = 0;
  double speedup_match = 0;  // the inference's: |speedup - published| at most this
  std::vector<std::vector<std::int64_t>> model_widths;  // the model-size sweep (parameter-to-memory ratio)
};

// The study's `infer:` section: approximate Bayesian computation over its
// unknowns, conditioned on its published findings (study/infer).
struct InferSpec {
  bool given = false;
  int samples = 0;             // draws from the prior (which findings are informative; the first population)
  int budget = 0;              // simulations per ABC-SMC run after the prior's (the fixed budget)
  int population = 0;          // particles per generation
  std::uint64_t seed = 0;
  std::vector<int> predict_gpus;           // the posterior predictive's GPU counts
  std::vector<int> predict_gpus_per_node;  // and node layouts
  int predict_max = 0;                     // accepted draws the predictive replays, at most
};

inline constexpr std::size_t kMaxUnknowns = 24;
inline constexpr std::size_t kMaxCornerUnknowns = 8;  // up to this many, the band samples every corner

struct StudySpec {
  std::string file, name, description;
  std::uint64_t seed = 0;
  int iterations = 5;
  int interval_samples = 0;
  double interval_level = 0.9;
  std::string workload_file;  // as the study names it (reports print it)
  std::vector<std::string> input_paths;  // the files it named, resolved (base/data_dir), as opened
  Workload workload;
  std::vector<StudyCluster> clusters;
  std::vector<int> gpus;
  std::vector<std::string> swept;  // keys with more than one value
  std::vector<Scenario> scenarios; // clusters x sweep values, in a fixed order
  std::vector<std::string> notes;  // what a reader should know (a what-if that acts on some clusters only)
  // unknowns: the scenario band of each point is the envelope over their
  // corners and `unknown_samples` random points inside the ranges
  std::vector<Unknown> unknowns;
  int unknown_samples = 0;
  std::vector<std::vector<double>> unknown_points;  // the values of each sample, in unknowns' order
  std::vector<Scenario> scenario_bases;  // each scenario before its unknowns' nominal values (with unknowns only)
  PublishedFigures published;
  InferSpec infer;
};

// Sets an unknown's value on a scenario (its workload, cluster, calibration
// or scaling mode).
void apply_unknown(Scenario& sc, const Unknown& u, double value);
// Scenario i of a study with unknowns, at `values` (one per unknown, in
// their order) instead of their nominal values.
Scenario scenario_at(const StudySpec& s, std::size_t i, const std::vector<double>& values);

// Reads and checks a study file, the cluster, workload and calibration files
// it names, every scenario's GPU layouts and the work they add up to
// (against `max_events`); throws InputError (FILE:LINE:COL: key ...) on the
// first problem. `calibration_override` (a file or "datasheet"), when given,
// replaces every cluster's calibration (kanscale bench study).
// calibration_override: every cluster's calibration; implementation_override:
// the workload's implementation (bench study times a fitted kernel
// calibration's intervals on the study's workload as kanscale's trainer).
StudySpec load_study(const std::string& path, double max_events, const std::string& calibration_override = "",
                     std::optional<Implementation> implementation_override = std::nullopt);
StudySpec parse_study(const std::string& yaml_text, const std::string& name, double max_events);

// Scenarios [begin, end) of the study, each run_study's result, in order.
std::vector<StudyResult> run_scenarios(const StudySpec& s, std::size_t begin, std::size_t end);

}  // namespace ks
