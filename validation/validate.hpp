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
#include <string>
#include <vector>

#include "compare.hpp"
#include "plan.hpp"
#include "repeatability.hpp"
#include "schedule.hpp"

namespace ks {

// Runs everything here (rounds of microbenchmarks and live cases, then the
// comparison) and writes report.md, results.json and SVG plots into
// out_dir. `exe` is the kanscale executable. Returns the exit code.
int run_validation(const ValidationPlan& plan, const std::string& out_dir, const std::string& exe, const std::string& cmdline);
// A plan with runs: N (3 to 20): run_validation N times into out_dir/run-K,
// then the repeat-run verdict (verdict.hpp) over them, printed and written
// as out_dir/verdict.md and verdict.json. Returns its exit code: 0 pass, 1
// fail, 3 inconclusive.
int run_repeated_validation(const ValidationPlan& plan, const std::string& out_dir, const std::string& exe, const std::string& cmdline);
// The repeat-run verdict over runs of one plan (at least three), printed and
// written as out_dir/verdict.md and verdict.json; `what` says where the runs
// came from. Returns its exit code.
int write_repeat_verdict(const ValidationPlan& plan, const std::vector<ValidationRun>& runs, const std::string& out_dir,
                         const std::string& what);
// Compares what the emitted scripts left in dir; report into out_dir.
int collect_validation(const ValidationPlan& plan, const std::string& dir, const std::string& out_dir, const std::string& cmdline);
// The published-figures comparison alone (datasheet calibration; no live runs).
int published_comparison(const ValidationPlan& plan, const std::string& out_dir, const std::string& cmdline);

}  // namespace ks
