// kanscale validate PLAN: live runs beside predictions, with the error stated.
#include <boost/program_options.hpp>

#include <fstream>
#include <filesystem>
#include <iostream>
#include <set>

#include "commands.hpp"
#include "model/limits.hpp"
#include "model/output_files.hpp"
#include "model/yaml_reader.hpp"
#include "options.hpp"
#include "validation/repeatability.hpp"
#include "validation/validate.hpp"

namespace po = boost::program_options;

namespace ks::cli {

int validate(const std::vector<std::string>& args, const std::string& cmdline) {
  std::string plan_file, out = "validation-report", emit, collect, calibration;
  std::vector<std::string> repeat;
  bool published = false;
  int rounds = 0, steps = 0, max_ranks = 0;
  po::options_description desc("validate options");
  desc.add_options()
      ("help,h", "show this help")
      ("plan", po::value(&plan_file)->value_name("FILE"), "validation plan (validation/plans/)")
      ("out", po::value(&out)->default_value(out), "directory for report.md, results.json and the plots")
      ("rounds", po::value(&rounds), "rounds (default: the plan's)")
      ("steps", po::value(&steps), "steps per live run (default: the plan's)")
      ("max-ranks", po::value(&max_ranks), "the most ranks a live job may start here (default: this machine's cores x 16)")
      ("emit", po::value(&emit)->value_name("DIR"), "write the schedule as job scripts (Slurm, mpirun) into DIR; run nothing")
      ("collect", po::value(&collect)->value_name("DIR"), "compare what the emitted scripts left in DIR")
      ("published", po::bool_switch(&published), "only the comparison with the plan's published figures (no live runs)")
      ("repeatability", po::value(&repeat)->multitoken()->value_name("RUN..."),
       "how the plan's live measurements repeat: two or more of its validation runs (report directories or results.json), each "
       "predicted from the others; exit 1 when that misses the plan's bound")
      ("calibration", po::value(&calibration)->value_name("FILE"),
       "predict from this calibration instead of the plan's (what-ifs; negative controls with --collect)");
  po::positional_options_description pos;
  pos.add("plan", 1);
  po::variables_map vm;
  if (!parse_args(args, desc,
                  "usage: kanscale validate PLAN [--out DIR] [--rounds R] [--steps S]\n"
                  "       kanscale validate PLAN --emit DIR      (then run DIR/run-slurm.sbatch or DIR/run-mpirun.sh)\n"
                  "       kanscale validate PLAN --collect DIR [--out REPORT]\n"
                  "       kanscale validate PLAN --published [--out REPORT]\n"
                  "       kanscale validate PLAN --repeatability RUN RUN... [--out REPORT]",
                  vm, &pos))
    return 0;
  if (plan_file.empty()) throw InputError("validate: give a plan: kanscale validate validation/plans/local-cpu.yaml");
  ValidationPlan plan = load_validation_plan(plan_file);
  if (vm.count("max-ranks")) {
    if (max_ranks < 1) throw InputError("--max-ranks: expected at least 1, got " + std::to_string(max_ranks));
    plan.max_ranks = max_ranks;
  }
  if (vm.count("rounds")) {
    if (rounds < 1 || rounds > 1000) throw InputError("--rounds: expected 1 to 1000, got " + std::to_string(rounds));
    plan.rounds = rounds;
  }
  if (vm.count("steps")) {
    if (steps < 3 || steps > kMaxLiveSteps)
      throw InputError("--steps: expected 3 (the first iteration and steady ones) to " + std::to_string(kMaxLiveSteps) + ", got " +
                       std::to_string(steps));
    plan.steps = steps;
  }
  if (vm.count("calibration")) {
    if (!std::ifstream(calibration)) throw InputError("--calibration: file \"" + calibration + "\" does not exist");
    plan.calibration_file = calibration;
    plan.measure.enabled = false;
    plan.datasheet = false;
  }
  const std::string self = self_executable();
  if (!emit.empty() + !collect.empty() + published + !repeat.empty() > 1)
    throw InputError("validate: give at most one of --emit, --collect, --published, --repeatability");
  // Before anything runs: where the report or the scripts go. Each is a
  // directory of kanscale's own that holds no input of this command.
  std::vector<std::string> inputs = plan_inputs(plan);
  inputs.insert(inputs.end(), repeat.begin(), repeat.end());
  if (!collect.empty()) inputs.push_back(collect);
  if (!emit.empty()) {
    check_outputs_spare_inputs(inputs, {{emit, "--emit", true}});
    check_owned_dir(emit, "--emit");
  } else {
    check_outputs_spare_inputs(inputs, {{out, "--out", true}});
    check_owned_dir(out, "--out");
  }
  // --collect refits inside the run directory (its own calibration files): only one kanscale made
  if (!collect.empty() && plan.measure.enabled) check_marked_dir(collect, "--collect");
  check_sweep_options(plan);
  if (published) return published_comparison(plan, out, cmdline);
  if (!repeat.empty()) {
    std::vector<ValidationRun> runs;
    std::set<std::string> judged;
    for (const auto& c : plan.cases)
      if (!c.oversubscribed) judged.insert(c.label());
    for (const auto& r : repeat) {
      runs.push_back(read_validation_run(r));
      const ValidationRun& run = runs.back();
      const std::set<std::string> got(run.cases.begin(), run.cases.end());
      for (const auto& label : got)
        if (!judged.count(label)) throw InputError(run.path + ": case \"" + label + "\" is not a judged case of " + plan.file);
      for (const auto& label : judged)
        if (!got.count(label)) throw InputError(run.path + ": lacks the case \"" + label + "\" of " + plan.file);
    }
    // never over a run's own report (validate's default --out is a run's directory too)
    std::error_code e1;
    const auto target = std::filesystem::weakly_canonical(out, e1);
    for (const auto& run : runs) {
      std::error_code e2;
      if (!e1 && std::filesystem::weakly_canonical(std::filesystem::path(run.path).parent_path(), e2) == target && !e2)
        throw InputError("--out " + out + ": the directory of " + run.path + "; the repeatability report goes elsewhere");
    }
    const Repeatability rep = repeatability(runs);
    return write_repeatability_report(runs, rep, plan, out, cmdline) ? 0 : 1;
  }
  if (!emit.empty()) {
    if (plan.cases.empty()) throw InputError(plan.file + ": no cases to emit (the plan has only a published: section)");
    emit_validation(plan, emit, self);
    std::cout << "kanscale validate: wrote " << emit << "/run-slurm.sbatch and " << emit << "/run-mpirun.sh (" << plan.rounds
              << " rounds, " << plan.cases.size() << " cases); afterwards: kanscale validate " << plan.file << " --collect " << emit
              << "\n";
    return 0;
  }
  if (!collect.empty()) return collect_validation(plan, collect, out, cmdline);
  return run_validation(plan, out, self, cmdline);
}

}  // namespace ks::cli
