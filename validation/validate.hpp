#pragma once
// kanscale validate: live runs of a plan's cases (the trainer under mpirun
// or srun) beside the simulator's predictions of the same cases, with the
// error per metric judged against the plan's bound and the noise measured
// across rounds. The calibration comes from a file, from the cluster's
// datasheet, or from microbenchmarks measured within the rounds,
// interleaved with the live runs.
//
// One schedule drives three ways to run it: here (`validate PLAN`), or as
// job scripts for a cluster (`--emit DIR`, Slurm and plain mpirun) whose
// outputs `--collect DIR` compares afterwards.
#include <cstdint>
#include <string>
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
struct MeasureSpec {
  bool enabled = false;
  int ranks = 1;                   // ranks that time at once (the concurrency)
  std::string kernels_plan;        // configs/measure/*.yaml
  std::string allreduce = "-b 8 -e 64M -f 2 -n 20 -w 5";  // nccl-tests' letters (ranks > 1 only)
  std::string broadcast;           // the same for a broadcast sweep ("" : not measured)
  std::string interference_bytes;  // "" : not measured
  std::vector<std::string> transports;  // one all-reduce sweep per transport ("" : the default)
};

// The study's published figures, compared with datasheet-calibrated
// predictions (shared/reference/ddp-nccl-hardware.md).
struct PublishedSpec {
  bool enabled = false;
  std::string workload;                 // the strong-scaling workload
  std::vector<int> gpus = {1, 2, 4, 8};
  double speedup = 0, efficiency = 0;   // at the largest GPU count
  double overhead_min_pct = 0, overhead_max_pct = 0;
  std::vector<std::vector<std::int64_t>> model_widths;  // model-size scaling
  std::string source;
};

struct ValidationPlan {
  std::string name, file;
  std::string cluster_file;
  std::string calibration_file;  // a fitted file; empty with measure or datasheet
  bool datasheet = false;        // calibration: datasheet
  MeasureSpec measure;
  std::string backend = "cpu";       // cpu | cuda
  std::string launcher = "mpirun";   // how --emit's scripts start ranks: mpirun | srun
  int gpus_per_node = 0;             // for srun scripts (0: the cluster's)
  int steps = 30, rounds = 3, spline_order = 3;
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
};

// Reads validation/plans/*.yaml; a missing file, an unknown backend or zero
// ranks is an InputError naming file, line and key, before anything runs.
ValidationPlan load_validation_plan(const std::string& path);

struct Metrics {
  double iteration_s = 0, compute_s = 0, comm_s = 0, exposed_s = 0, samples_per_s = 0;
  double peak_memory_bytes = 0;
  std::vector<double> bucket_s;  // each bucket's all-reduce (steady plan)
};

struct CaseResult {
  ValidationCase c;
  Metrics predicted;
  std::vector<Metrics> rounds;  // live, one per round
  Metrics live;                 // median over rounds
  double noise_pct = 0;         // spread of the rounds' iteration times (round_spread) / median
  double exposed_noise_pct = 0;  // spread of the rounds' exposed communication, over the median iteration
  // speedup over the same case on one rank (0: no such case)
  double speedup_predicted = 0, speedup_live = 0;
};

// Signed percentage error of a prediction (positive: predicted too high).
double pct_error(double predicted, double measured);
// Communication metrics can be ~0: their error is stated as a percentage of
// the measured iteration time.
double pct_of_iteration(double predicted, double measured, double iteration);

struct MetricSummary {
  std::string metric;
  double mean_abs_pct = 0, max_abs_pct = 0;
  std::string worst_case;
  int cases = 0;
};
std::vector<MetricSummary> summarize(const std::vector<CaseResult>& results);

// The mean noise floor of the judged (not oversubscribed) cases.
double mean_noise_pct(const std::vector<CaseResult>& results);

// The plan's bound on the iteration time: mean |error| <= bound_mean_pct and
// every case's |error| <= max(bound_max_pct, its noise floor); or, with a
// noise-derived bound, every case within max(floor, factor x mean noise).
// Oversubscribed cases are reported but not judged. Returns true when met;
// `why` says which case or mean broke it.
bool judge(const std::vector<CaseResult>& results, const ValidationPlan& plan, std::string* why);

Metrics median_of(const std::vector<Metrics>& rounds);
// The spread of one metric over the rounds: 1.4826 x the median absolute
// deviation, a robust standard deviation (0 for one round).
double round_spread(const std::vector<Metrics>& rounds, double Metrics::*field);
// Speedups over the one-rank case of the same model, batch and bucket cap.
void attach_speedups(std::vector<CaseResult>& results);

// Runs everything here (rounds of microbenchmarks and live cases, then the
// comparison) and writes report.md, results.json and SVG plots into
// out_dir. `exe` is the kanscale executable. Returns the exit code.
int run_validation(const ValidationPlan& plan, const std::string& out_dir, const std::string& exe, const std::string& cmdline);
// Writes the schedule as job scripts into dir (run-mpirun.sh, run-slurm.sbatch,
// the case workloads, README.txt) without running anything.
void emit_validation(const ValidationPlan& plan, const std::string& dir, const std::string& exe);
// The plan's sweep options, checked before anything runs by measure's own
// parser, as the job will receive them; one error line naming the key.
void check_sweep_options(const ValidationPlan& plan);
// Compares what the emitted scripts left in dir; report into out_dir.
int collect_validation(const ValidationPlan& plan, const std::string& dir, const std::string& out_dir, const std::string& cmdline);
// The published-figures comparison alone (datasheet calibration; no live runs).
int published_comparison(const ValidationPlan& plan, const std::string& out_dir, const std::string& cmdline);

}  // namespace ks
