#pragma once
// The schedule of a validation plan: per round, the microbenchmarks that
// calibrate it and then every live case, as jobs (kanscale's arguments, the
// ranks, the transport, the file each must leave), run here one after
// another or written as job scripts (Slurm, mpirun) to run elsewhere; and
// the calibration fitted from the rounds' microbenchmarks.
#include <cstddef>
#include <string>
#include <vector>

#include "plan.hpp"

namespace ks {

// The record --emit leaves in a run directory (the plan's and the cases'
// digests), which --collect checks before it judges anything.
inline constexpr const char* kEmittedRecord = "emitted.json";

struct Job {
  std::string what;  // for progress lines
  int ranks = 1;
  std::string transport;
  bool oversubscribed = false;
  std::vector<std::string> args;  // kanscale's arguments (the executable goes before), relative to the run directory
  std::string output;   // the file it must leave
  bool self_launched = false;  // kanscale train starts the ranks itself (PyTorch DDP): no mpirun
  int threads_per_rank = 1;    // a self-launched job's CPUs: ranks x this
};

// Per round, its jobs in order.
std::vector<std::vector<Job>> make_schedule(const ValidationPlan& plan);
// The case whose live and simulated timelines the report shows side by
// side: the judged multi-rank case with the most communication per sample.
std::size_t timeline_case(const ValidationPlan& plan);

// A case's workload, as --emit writes it, relative to the run directory.
std::string case_file(std::size_t case_index);
// The files the jobs leave, relative to the run directory.
std::string live_file(std::size_t case_index, int round);
std::string trace_file(std::size_t case_index);
std::string calibration_out(const std::string& transport);
// The calibration's own live runs: workload and result files.
std::string live_cal_workload(std::size_t case_index);
std::string live_cal_file(std::size_t case_index, int round);

// Refuses (InputError naming the plan, the ranks and --max-ranks) a schedule
// whose largest job starts more ranks here than plan.max_ranks, or, when 0,
// this machine's cores x kMaxRanksPerCore: before any job starts.
void check_local_ranks(const ValidationPlan& plan, const std::vector<std::vector<Job>>& rounds);
// The run directory: case workloads, the measurement plan, results/.
void prepare_dir(const ValidationPlan& plan, const std::string& dir);
// Runs one job here (under mpirun where it has ranks or a transport); a
// failure is an error quoting its log's tail.
void run_job(const Job& job, const std::string& dir, const std::string& exe);

// Runs every job of every round here, in order, with a progress bar on a
// terminal (one line per job otherwise).
void run_schedule(const std::vector<std::vector<Job>>& rounds, const std::string& dir, const std::string& exe);
// Writes the schedule as job scripts into dir (the case workloads,
// README.txt and, without a site, run-mpirun.sh and run-slurm.sbatch; with
// one, its scheduler's script) without running anything. Every job is a
// step whose failure is recorded (results/steps.tsv) and does not stop the
// others. Paths are relative to the run directory; kanscale is `exe`
// without a site, the site's command with one.
struct Site;
void emit_validation(const ValidationPlan& plan, const std::string& dir, const std::string& exe, const Site* site = nullptr);
// The plan's sweep options, checked before anything runs by measure's own
// parser, as the job will receive them; one error line naming the key.
void check_sweep_options(const ValidationPlan& plan);

// Fits the calibration(s) from the rounds' microbenchmarks in dir (the fit of
// kanscale fit), each with its report beside it.
void fit_measured(const ValidationPlan& plan, const std::string& dir);
// Which calibration predicts a case, in words.
std::string calibration_label(const ValidationPlan& plan, const std::string& dir, const ValidationCase& c);

}  // namespace ks
