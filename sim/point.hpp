#pragma once
// From a cluster, a workload and a calibration to predictions: the replay
// input of one point (make_replay_input: ops, buckets, costs), the point
// replayed (simulate_point), and the sweep over GPU counts (run_study), with
// the metrics of docs/simulate.md (iteration, compute, communication,
// exposed communication, overhead, speedup, efficiency, memory) and their
// intervals.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/statistics.hpp"
#include "model/buckets.hpp"
#include "model/collectives.hpp"
#include "model/config.hpp"
#include "model/cost.hpp"
#include "sim/replay.hpp"

namespace ks {

enum class Scaling { strong, strong_global_batch, weak };
const char* to_string(Scaling s);

// Iterations replayed per prediction unless asked otherwise: simulate,
// whatif and the study all take it (the first iteration, on one bucket, and
// four steady ones).
inline constexpr int kDefaultIterations = 5;

struct StudyOptions {
  std::vector<int> gpus;
  std::optional<int> gpus_per_node;  // override of the cluster's
  Scaling scaling = Scaling::strong;
  int iterations = kDefaultIterations;  // the first (one bucket) plus steady ones
  std::uint64_t seed = 0;
  bool trace = false;
  std::vector<int> trace_ranks;  // empty: a default subset
  // Prediction intervals (sim/interval): this many Monte Carlo samples, each
  // a calibration drawn from the fits' covariance and a jitter seed of its
  // own; 0: none. Only a calibration with measured uncertainty (fit
  // covariances or jitter) gets intervals.
  int interval_samples = 0;
  double interval_level = 0.9;  // central interval
  // Replay every rank of every interval sample instead of only the ranks
  // that decide the timeline (replay_iteration_median); for checking the
  // reduction and timing it (kanscale bench study).
  bool interval_full_replays = false;
};

// What a study costs before it runs: the event core's events (about a
// microsecond each) and the memory of the per-rank, per-iteration records.
// Replaying N ranks for I iterations with B buckets pops about
// N x I x (B + 4) events (bench sim, 12 buckets: 14 per rank and iteration)
// and keeps N x I x (40 + 8 (B + 1)) bytes of records plus ~250 B of state
// per rank (bench sim at 10^7 GPUs: 1.4e8 events, 3.2 GiB, 357 s here).
struct WorkEstimate {
  double events = 0;
  double bytes = 0;
};
WorkEstimate replay_work(double ranks, double iterations, double buckets);
WorkEstimate estimate_study_work(const Workload& w, const StudyOptions& o);
// The default bound on a request's events (--max-events): about two minutes
// of replay and ~1 GiB. bench sim's 65,536 GPUs take ~1e6 per repetition.
constexpr double kDefaultMaxEvents = 5e7;
// Throws InputError when `e` passes `max_events`, with the estimate, the
// limit and the flag that raises it.
void check_work(const WorkEstimate& e, double max_events, const std::string& what);

// Ranks laid out on nodes; throws InputError when N does not fit.
Layout layout_for(const Cluster& c, int gpus, std::optional<int> gpus_per_node);

struct BucketRow {
  int index = 0;
  std::vector<std::string> params;
  double bytes = 0;
  std::string label;  // chosen algorithm/protocol
  double start_s = 0, end_s = 0;  // relative to rank 0's iteration start
};

// The central interval of a prediction at StudyOptions::interval_level.
struct Band {
  double lo = 0, hi = 0;
};

struct ScalingPoint {
  int gpus = 0, nodes = 0;
  std::int64_t batch_per_gpu = 0;
  std::int64_t dataset_size = 0;
  std::int64_t iterations_per_epoch = 0;
  Stat iteration_s, compute_s, comm_s, exposed_s;  // steady state, over ranks
  Stat first_iteration_s;
  double overhead_exposed = 0;  // exposed / iteration (median ranks)
  double overhead_total = 0;    // communication / iteration
  double samples_per_s = 0;
  double epoch_s = 0;
  double time_to_train_s = 0;  // the job's fixed costs (job_fixed_s) included
  double job_fixed_s = 0;       // start-up and communicator initialisation (Cluster::job)
  double gpu_hours = 0;
  double speedup = 0, efficiency = 0;
  MemoryEstimate memory;
  std::vector<BucketRow> first_plan, steady_plan;
  std::string broadcast_label;
  std::uint64_t events = 0;
  std::vector<TraceSlice> trace;
  // from the interval samples (unset: none): the median iteration time over
  // ranks, and the speedup (each sample's baseline from the same draw)
  std::optional<Band> iteration_band, speedup_band;
  // the lognormal sigma the bands carry for ranks beyond what the
  // calibration's live runs measured (model/config's extrapolation_for; 0: none)
  double extrapolation_sigma = 0;
  // the time to train in each interval sample (its steady iteration time; the
  // first iteration and the per-epoch cost as predicted): whatif's
  // probability of meeting a budget and its quantiles
  std::vector<double> time_to_train_samples;
  // A study's scenario band (study/scenario: its unknowns' ranges): the
  // envelope of the prediction, its interval included, over the unknowns'
  // samples. Unset: the study gives no unknowns.
  struct ScenarioBands {
    Band iteration_s, speedup, overhead_exposed, overhead_total, samples_per_s, epoch_s, time_to_train_s;
  };
  std::optional<ScenarioBands> scenario;
};

struct StudyResult {
  std::vector<ScalingPoint> points;  // in the order asked
  ScalingPoint baseline;             // N = 1
  std::int64_t parameters = 0;
  std::string collective_family;
  std::vector<std::string> warnings;
  int interval_samples = 0;  // the samples behind the bands (0: no bands)
  std::string interval_note;  // why there are none, when asked for
  std::string band_source;    // set: the bands are not the samples' but this (a posterior calibration's draws: study/posterior)
  // how the samples' points were replayed: reduced (some ranks) or full
  // (every rank), and the ranks replayed in all
  std::uint64_t interval_replays_reduced = 0, interval_replays_full = 0, interval_ranks_replayed = 0;
  // the unknowns' samples behind the scenario bands, and those skipped (a
  // layout or batch split the sample's values made impossible)
  int unknown_samples = 0, unknown_skipped = 0;
};

// "" when point p's batch per GPU is the one the workload asks for (its
// batch_per_gpu; global_batch / N under strong-global-batch); else a note
// naming both and why: the dataset's share per rank is smaller than the
// batch (DistributedSampler), so the epoch is one short iteration.
std::string batch_change_note(const Workload& w, Scaling scaling, const ScalingPoint& p);

StudyResult run_study(const Cluster& c, const Workload& w, const Calibration& cal, const StudyOptions& o);

// Whether a calibration's predictions can carry an interval: fit
// covariances to draw from, or run-to-run jitter.
bool has_measured_uncertainty(const Calibration& cal);
// The central `level` interval of `samples` (nearest-rank quantiles).
Band central_band(std::vector<double> samples, double level);

// What the replay needs for one GPU count and batch: ops and their times,
// both bucket plans with their all-reduce costs, the buffer broadcast,
// jitter and interference, and the seed of the jitter.
// In two parts, for drawing many calibrations on one input: the structure
// (ops, bucket plans, broadcast bytes) and the costs (op times, collective
// estimates, host overhead, jitter, interference; InputError on a duration
// out of range).
ReplayInput replay_structure(const Workload& w, const Layout& layout, std::int64_t batch_per_gpu, TorchOpSet torch);
// A pytorch workload on a CUDA (NCCL) cluster: the device runs PyTorch's ops
// behind the host thread that issues them (sim/replay's host track), each
// op's host time from HostTerms (the calibration's own op classes' fixed
// costs, else its default_host_terms passed in from the edge: the dispatch
// prior's cost per dispatch) plus the cluster's kernel_launch per kernel, its
// device time the datasheet roofline (model/config's host_track_applies).
// The one note a study prints when those host costs are the default ones
// ("" otherwise).
std::string host_terms_note(const Cluster& c, const Workload& w, const Calibration& cal);
// The costs of a replay's ops and collectives under a calibration (not the
// ranks' persistent speeds: make_replay_input sets the point's, an interval
// sample draws its own).
void set_replay_costs(ReplayInput& in, const Cluster& c, const Workload& w, const Calibration& cal, const Layout& layout,
                      std::int64_t batch_per_gpu, const CollectiveModel& coll);
ReplayInput make_replay_input(const Cluster& c, const Workload& w, const Calibration& cal, const Layout& layout,
                              std::int64_t batch_per_gpu, std::uint64_t seed);

// A rank's peak memory at this layout and per-GPU batch: the model of the
// implementation, calibrated where the calibration measured it, with the
// runtime's share per other rank of the node and the collectives' copies.
MemoryEstimate point_memory(const Cluster& c, const Workload& w, const Calibration& cal, const Layout& layout,
                            std::int64_t batch_per_gpu);

// One point (layout.ranks GPUs laid out by layout_for), exposed for tests
// and validation.
ScalingPoint simulate_point(const Cluster& c, const Workload& w, const Calibration& cal, const StudyOptions& o,
                            const Layout& layout);

}  // namespace ks
