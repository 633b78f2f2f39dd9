// kanscale validate PLAN: live runs beside predictions, with the error stated.
#include <boost/program_options.hpp>
#include <unistd.h>

#include <climits>
#include <iostream>

#include "commands.hpp"
#include "model/yaml_reader.hpp"
#include "options.hpp"
#include "validation/validate.hpp"

namespace po = boost::program_options;

namespace ks::cli {

int validate(const std::vector<std::string>& args, const std::string& cmdline) {
  std::string plan_file, out = "validation-report";
  int rounds = 0, steps = 0;
  po::options_description desc("validate options");
  desc.add_options()
      ("help,h", "show this help")
      ("plan", po::value(&plan_file)->value_name("FILE"), "validation plan (validation/plans/)")
      ("out", po::value(&out)->default_value(out), "directory for report.md, results.json and the plots")
      ("rounds", po::value(&rounds), "rounds (default: the plan's)")
      ("steps", po::value(&steps), "steps per live run (default: the plan's)");
  po::positional_options_description pos;
  pos.add("plan", 1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(desc).positional(pos).run(), vm);
  if (vm.count("help")) {
    std::cout << "usage: kanscale validate PLAN [--out DIR] [--rounds R] [--steps S]\n\n" << desc << "\n";
    return 0;
  }
  po::notify(vm);
  if (plan_file.empty()) throw InputError("validate: give a plan: kanscale validate validation/plans/local-cpu.yaml");
  ValidationPlan plan = load_validation_plan(plan_file);
  if (vm.count("rounds")) {
    if (rounds < 1) throw InputError("--rounds: at least 1");
    plan.rounds = rounds;
  }
  if (vm.count("steps")) {
    if (steps < 3) throw InputError("--steps: at least 3 (the first iteration and steady ones)");
    plan.steps = steps;
  }
  char exe[PATH_MAX] = {0};
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) throw std::runtime_error("cannot find the kanscale executable (/proc/self/exe)");
  return run_validation(plan, out, std::string(exe, static_cast<std::size_t>(n)), cmdline);
}

}  // namespace ks::cli
