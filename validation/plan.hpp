#pragma once
// A validation plan (validation/plans/*.yaml): the cluster, the calibration
// (a file, the datasheet, or microbenchmarks measured within the rounds),
// the cases as the product of their lists, the bound, and the published
// figures to compare with.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ks {

struct ValidationCase {
  int ranks = 1;
  std::vector<std::int64_t> widths;
  int grid_size = 5;
  std::int64_t batch = 256;
  double bucket_cap_bytes = 25.0 * 1048576;
  std::string transport;        // "" (the launcher's default) or an MPI transport: shm, tcp, tcp-slow (validate.cpp: transport_mca)
  bool oversubscribed = false;  // more ranks than cores: reported apart
  std::string label() const;
};

// Microbenchmarks that calibrate the plan, run in every round before its
// live cases (kanscale measure kernels / allreduce, bench interference).
// The stopping rule's defaults: a median known to +-5% (noise far below the
// op classes' held-out errors, 10-40% in configs/calibrations/), and at most
// 30 samples (the live runs' 28 steady steps and torch ops' 20 repetitions
// of before, rounded up).
inline constexpr double kDefaultTargetRelHalfwidth = 0.05;
inline constexpr int kDefaultCapSamples = 30;

struct MeasureSpec {
  bool enabled = false;
  int ranks = 1;                   // ranks that time at once (the concurrency)
  std::string kernels_plan;        // configs/measure/*.yaml (implementation kanscale)
  std::string torch_ops_plan;      // configs/measure/pytorch-*.yaml (implementation pytorch: measure torch-ops)
  std::string allreduce = "-b 8 -e 64M -f 2 -n 20 -w 5";  // nccl-tests' letters (ranks > 1 only)
  std::string broadcast;           // the same for a broadcast sweep ("" : not measured)
  std::string interference_bytes;  // "" : not measured
  std::string progress_sizes;      // bench progress's --sizes per transport; "": not measured
  // The stopping rule of every sampled measurement (torch ops' and kernels'
  // repetitions, a live run's steady steps): samples until the median's 95%
  // interval (order statistics) is within target_rel_halfwidth of it, at
  // most cap_samples. Sweeps keep their own -n (one sample a size: the mean
  // of -n calls back to back, as nccl-tests time them).
  double target_rel_halfwidth = kDefaultTargetRelHalfwidth;
  int cap_samples = kDefaultCapSamples;
  bool cap_samples_given = false;  // else a kernel plan's own `repeats` caps its kernels
  // > 0: in rounds after the first, a kernel class whose fit over the
  // earlier rounds predicted each left-out shape within this mean error is
  // timed at every other shape only (measure kernels --skip-from)
  double skip_shapes_under = 0;
  std::vector<std::string> transports;  // one all-reduce sweep per transport ("" : the default; "gloo": a pytorch plan's)
  // Live trainer runs on shapes of the calibration's own (never a case's):
  // what the trainer's sequence of ops costs beyond the microbenchmarks'
  // (calibration_live.hpp fits it).
  std::vector<ValidationCase> live;
  // A GPU node's PyTorch plan (backend cuda): its op classes from profiled
  // 1-GPU runs of these shapes (train --profile; the host's and the
  // device's terms, as calibrate --from-trace fits them) instead of
  // torch_ops; its one transport "nccl" (torch.distributed's)
  std::vector<ValidationCase> profile;
};

// The study's published figures, compared with datasheet-calibrated
// predictions (shared/reference/ddp-nccl-hardware.md).
struct PublishedSpec {
  bool enabled = false;
  std::string workload;                 // the strong-scaling workload (resolved: the path to open)
  std::string workload_shown;           // as the plan names it (reports print it)
  std::vector<int> gpus = {1, 2, 4, 8};
  double speedup = 0, efficiency = 0;   // at the largest GPU count
  double overhead_min_pct = 0, overhead_max_pct = 0;
  std::vector<std::vector<std::int64_t>> model_widths;  // model-size scaling
  std::string source;
  std::string file;  // the findings file it was read from (empty: given in the plan)
};

// The repeat-run verdict's thresholds (verdict.hpp), plan keys under `verdict:`.
struct VerdictThresholds {
  double mean_factor = 1.2, mean_points = 1;            // (a)
  double group_bias_pct = 3;                            // (b)
  double too_fast_min_pct = 35, too_fast_max_pct = 65;  // (c)
  double coverage_min_pct = 85, half_width_factor = 1.25;  // (d)
  double inconclusive_p90_pct = 25;
};

struct ValidationPlan {
  std::string name, file;
  // Files the plan names: *_file is the path to open (resolved against the
  // plan, then the data directory); *_shown is the name as the plan wrote
  // it, which reports print.
  std::string cluster_file, cluster_shown;
  std::string calibration_file, calibration_shown;  // a fitted file; empty with measure or datasheet
  // validate --calibration DIR: a calibration per transport,
  // DIR/calibration-<transport>.yaml (as calibrate writes them in --out's
  // results/); one-rank cases take the first multi-rank case's transport
  std::string calibration_dir;
  bool datasheet = false;        // calibration: datasheet
  MeasureSpec measure;
  std::string backend = "cpu";       // cpu | cuda
  // What the live cases run (implementation:): kanscale's own trainer under
  // mpirun, or efficient-kan under PyTorch DDP, started by kanscale train
  // --ranks (gloo on cpu, nccl on cuda), threads_per_rank intra-op threads.
  std::string implementation = "kanscale";  // kanscale | pytorch
  int threads_per_rank = 1;
  std::string launcher = "mpirun";   // how --emit's scripts start ranks: mpirun | srun
  int gpus_per_node = 0;             // for srun scripts (0: the cluster's)
  int steps = 30, rounds = 3, spline_order = 3;
  // runs of the whole plan, calibration included, judged together by the
  // repeat-run verdict (1: one run, judged as always; 3 to 20)
  int runs = 1;
  VerdictThresholds verdict;
  int interval_samples = 100;  // Monte Carlo samples behind each prediction's 90% interval (0: none)
  double bound_mean_pct = 5, bound_max_pct = 10;
  // A bound derived from the noise instead (bound: {noise_factor: F, floor_pct: P}):
  // every case's error must stay within max(P, F x the mean noise floor).
  double noise_factor = 0, noise_floor_pct = 0;
  // ...and each multi-rank case's exposed communication within
  // max(exposed_floor_pct, noise_factor x its rounds' spread), both as a
  // share of the iteration (0: not judged). Exposed, not total: on a CPU the
  // total depends on when MPI gets to progress, the exposed part much less.
  double exposed_floor_pct = 0;
  std::vector<ValidationCase> cases;
  PublishedSpec published;
  // the most ranks a job run here may start (--max-ranks; 0: this machine's
  // cores x kMaxRanksPerCore)
  int max_ranks = 0;
};

// Reads validation/plans/*.yaml; a missing file, an unknown backend or zero
// ranks is an InputError naming file, line and key, before anything runs.
// Without `need_cases` (kanscale calibrate) a plan may have neither cases
// nor a published: section.
ValidationPlan load_validation_plan(const std::string& path, bool need_cases = true);
// The files a plan reads: itself, its cluster, calibration and kernel plan.
std::vector<std::string> plan_inputs(const ValidationPlan& plan);

// The MPI transports a plan can name (shm, tcp, tcp-slow) as Open MPI MCA
// settings; empty for any other name.
std::vector<std::pair<std::string, std::string>> transport_mca(const std::string& transport);

}  // namespace ks
