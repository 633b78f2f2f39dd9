// kanscale validate PLAN: live runs beside predictions, with the error stated.
#include <boost/program_options.hpp>

#include <fstream>
#include <filesystem>
#include <iostream>
#include <optional>
#include <set>

#include "commands.hpp"
#include "model/limits.hpp"
#include "base/output_files.hpp"
#include "formats/yaml_reader.hpp"
#include "options.hpp"
#include "validation/repeatability.hpp"
#include "validation/site.hpp"
#include "validation/schedule.hpp"
#include "validation/validate.hpp"
#include "validation/corpus_score.hpp"
#include "base/data_dir.hpp"

namespace po = boost::program_options;

namespace ks::cli {

namespace {

struct ValidateArgs {
  std::string plan_file, out = "validation-report", emit, collect, calibration, site, corpus, gpus, python;
  std::vector<std::string> repeat;
  bool published = false;
  int rounds = 0, steps = 0, max_ranks = 0;
};

void validate_options(po::options_description& desc, ValidateArgs& a) {
  desc.add_options()
      ("help,h", "show this help")
      ("plan", po::value(&a.plan_file)->value_name("FILE"), "validation plan (validation/plans/)")
      ("out", po::value(&a.out)->default_value(a.out), "directory for report.md, results.json and the plots")
      ("rounds", po::value(&a.rounds), "rounds (default: the plan's)")
      ("steps", po::value(&a.steps), "steps per live run (default: the plan's)")
      ("max-ranks", po::value(&a.max_ranks), "the most ranks a live job may start here (default: this machine's cores x 16)")
      ("python", po::value(&a.python)->value_name("PATH"),
       "PyTorch plans run here: the interpreter every job uses (default $KANSCALE_PYTHON, else /usr/bin/python3)")
      ("emit", po::value(&a.emit)->value_name("DIR"), "write the schedule as job scripts (Slurm, mpirun) into DIR; run nothing")
      ("site", po::value(&a.site)->value_name("FILE"),
       "with --emit: the cluster's site file (configs/sites/): scheduler, partition, account, modules, launcher, scratch")
      ("collect", po::value(&a.collect)->value_name("DIR"), "compare what the emitted scripts left in DIR")
      ("corpus", po::value(&a.corpus)->value_name("DIR"),
       "predict every scored entry of a corpus of public GPU measurements (validation/corpus) from datasheets and the "
       "priors of the other systems; no plan")
      ("gpus", po::value(&a.gpus)->value_name("DIR"), "with --corpus: the GPU datasheets (default: the shipped configs/gpus)")
      ("published", po::bool_switch(&a.published), "only the comparison with the plan's published figures (no live runs)")
      ("repeatability", po::value(&a.repeat)->multitoken()->value_name("RUN..."),
       "how the plan's live measurements repeat: two or more of its validation runs (report directories or results.json), each "
       "predicted from the others; exit 1 when that misses the plan's bound. With three or more, the repeat-run verdict "
       "(verdict.md) decides instead, as for a plan with runs: N (exit 0 pass, 1 fail, 3 inconclusive)")
      ("calibration", po::value(&a.calibration)->value_name("FILE"),
       "predict from this calibration instead of the plan's (what-ifs; negative controls with --collect); a directory: its "
       "calibration-<transport>.yaml for each case (calibrate's results/)");
}

// The flags that override the plan's own values, checked against the plan's ranges.
void apply_overrides(ValidationPlan& plan, const ValidateArgs& a, const po::variables_map& vm) {
  if (vm.count("max-ranks")) {
    if (a.max_ranks < 1) throw InputError("--max-ranks: expected at least 1, got " + std::to_string(a.max_ranks));
    plan.max_ranks = a.max_ranks;
  }
  if (vm.count("rounds")) {
    if (a.rounds < 1 || a.rounds > 1000) throw InputError("--rounds: expected 1 to 1000, got " + std::to_string(a.rounds));
    plan.rounds = a.rounds;
  }
  if (vm.count("steps")) {
    if (a.steps < 3 || a.steps > kMaxLiveSteps)
      throw InputError("--steps: expected 3 (the first iteration and steady ones) to " + std::to_string(kMaxLiveSteps) + ", got " +
                       std::to_string(a.steps));
    plan.steps = a.steps;
  }
  if (vm.count("calibration")) {
    if (!std::ifstream(a.calibration)) throw InputError("--calibration: file \"" + a.calibration + "\" does not exist");
    plan.calibration_file = plan.calibration_shown = a.calibration;
    if (std::filesystem::is_directory(a.calibration)) {  // one per transport
      plan.calibration_dir = a.calibration;
      for (const auto& c : plan.cases) {
        const std::string f = calibration_label(plan, "", c);
        if (!std::filesystem::is_regular_file(f)) throw InputError("--calibration: " + f + " (case " + c.label() + "'s transport) does not exist");
        plan.calibration_file = f;
      }
      plan.calibration_shown = a.calibration + "/calibration-TRANSPORT.yaml";
    }
    plan.measure.enabled = false;
    plan.datasheet = false;
  }
}

// Before anything runs: where the report or the scripts go. Each is a
// directory of kanscale's own that holds no input of this command (a run
// given to --repeatability included).
void check_outputs(const ValidationPlan& plan, const ValidateArgs& a) {
  std::vector<std::string> inputs = plan_inputs(plan);
  inputs.insert(inputs.end(), a.repeat.begin(), a.repeat.end());
  if (!a.collect.empty()) inputs.push_back(a.collect);
  if (!a.site.empty()) inputs.push_back(a.site);
  const std::string& dir = a.emit.empty() ? a.out : a.emit;
  const std::string what = a.emit.empty() ? "--out" : "--emit";
  check_outputs_spare_inputs(inputs, {{dir, what, true}});
  check_owned_dir(dir, what);
  // --collect refits inside the run directory (its own calibration files): only one kanscale made
  if (!a.collect.empty() && plan.measure.enabled) check_marked_dir(a.collect, "--collect");
}

// --repeatability: each run must hold exactly the plan's judged cases.
int repeatability_of_runs(const ValidationPlan& plan, const ValidateArgs& a, const std::string& cmdline) {
  std::vector<ValidationRun> runs;
  std::set<std::string> judged;
  for (const auto& c : plan.cases)
    if (!c.oversubscribed) judged.insert(c.label());
  for (const auto& r : a.repeat) {
    runs.push_back(read_validation_run(r));
    const ValidationRun& run = runs.back();
    const std::set<std::string> got(run.cases.begin(), run.cases.end());
    for (const auto& label : got)
      if (!judged.count(label)) throw InputError(run.path + ": case \"" + label + "\" is not a judged case of " + plan.file);
    for (const auto& label : judged)
      if (!got.count(label)) throw InputError(run.path + ": lacks the case \"" + label + "\" of " + plan.file);
  }
  const Repeatability rep = repeatability(runs);
  const bool within = write_repeatability_report(runs, rep, plan, a.out, cmdline);
  if (runs.size() < 3) return within ? 0 : 1;
  // three or more runs: the repeat-run verdict judges them, as for a plan's own runs: N
  return write_repeat_verdict(plan, runs, a.out, std::to_string(runs.size()) + " runs given to --repeatability");
}

int emit_scripts(const ValidationPlan& plan, const std::string& emit, const std::string& self, const std::optional<Site>& site) {
  if (plan.cases.empty()) throw InputError(plan.file + ": no cases to emit (the plan has only a published: section)");
  emit_validation(plan, emit, self, site ? &*site : nullptr);
  const std::string scripts = !site ? emit + "/run-slurm.sbatch and " + emit + "/run-mpirun.sh"
                                    : emit + (site->scheduler == "slurm" ? "/run-slurm.sbatch" : "/run-mpirun.sh") + " for site " + site->name;
  std::cout << "kanscale validate: wrote " << scripts << " (" << plan.rounds << " rounds, " << plan.cases.size()
            << " cases); afterwards: kanscale validate " << plan.file << " --collect " << emit << "\n";
  return 0;
}

}  // namespace

int validate(const std::vector<std::string>& args, const std::string& cmdline) {
  ValidateArgs a;
  po::options_description desc("validate options");
  validate_options(desc, a);
  po::positional_options_description pos;
  pos.add("plan", 1);
  po::variables_map vm;
  if (!parse_args(args, desc,
                  "usage: kanscale validate PLAN [--out DIR] [--rounds R] [--steps S]\n"
                  "       kanscale validate PLAN --emit DIR [--site FILE]  (then run DIR/run-slurm.sbatch or DIR/run-mpirun.sh)\n"
                  "       kanscale validate PLAN --collect DIR [--out REPORT]\n"
                  "       kanscale validate PLAN --published [--out REPORT]\n"
                  "       kanscale validate PLAN --repeatability RUN RUN... [--out REPORT]\n"
                  "       kanscale validate --corpus DIR --out REPORT [--gpus DIR]",
                  vm, &pos))
    return 0;
  if (!a.corpus.empty()) {
    if (!a.plan_file.empty()) throw InputError("validate --corpus: takes no plan (the corpus's entries are the cases)");
    if (!vm.count("out") || vm["out"].defaulted()) throw InputError("validate --corpus: give --out DIR for report.md and corpus.json");
    return validate_corpus(a.corpus, a.gpus.empty() ? shipped_path("configs/gpus") : a.gpus, a.gpus.empty() ? "configs/gpus (shipped)" : a.gpus,
                           a.out, cmdline);
  }
  if (!a.gpus.empty()) throw InputError("--gpus: goes with --corpus");
  if (a.plan_file.empty()) throw InputError("validate: give a plan: kanscale validate validation/plans/local-cpu.yaml");
  ValidationPlan plan = load_validation_plan(a.plan_file);
  apply_overrides(plan, a, vm);
  const std::string self = self_executable();
  if (!a.emit.empty() + !a.collect.empty() + a.published + !a.repeat.empty() > 1)
    throw InputError("validate: give at most one of --emit, --collect, --published, --repeatability");
  if (plan.runs > 1 && (!a.emit.empty() || !a.collect.empty())) {
    // one run is emitted or collected; the repeat-run verdict takes the runs made here, or --repeatability those made elsewhere
    std::cerr << "kanscale validate: " << plan.file << " says runs: " << plan.runs << "; --" << (a.emit.empty() ? "collect" : "emit")
              << " takes one run (judge several collected runs with --repeatability)\n";
    plan.runs = 1;
  }
  if (!a.site.empty() && a.emit.empty()) throw InputError("--site: goes with --emit (it says how the emitted scripts run on a cluster)");
  std::optional<Site> site;
  if (!a.site.empty()) site = load_site(a.site);
  check_outputs(plan, a);
  check_sweep_options(plan);
  if (a.published) return published_comparison(plan, a.out, cmdline);
  if (!a.repeat.empty()) return repeatability_of_runs(plan, a, cmdline);
  if (vm.count("python")) {
    if (!a.emit.empty() || !a.collect.empty() || a.published || !a.repeat.empty())
      throw InputError("--python: goes with the jobs run here (emitted scripts take $KANSCALE_PYTHON from their own environment)");
    use_python_for_jobs(a.python);
  }
  if (!a.emit.empty()) return emit_scripts(plan, a.emit, self, site);
  if (!a.collect.empty()) return collect_validation(plan, a.collect, a.out, cmdline);
  if (plan.runs >= 3) return run_repeated_validation(plan, a.out, self, cmdline);
  return run_validation(plan, a.out, self, cmdline);
}

}  // namespace ks::cli
