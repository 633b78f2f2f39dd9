// kanscale calibrate PLAN: one command from a bare machine to a fitted
// calibration (validation/calibrate.hpp).
#include <boost/program_options.hpp>
#include <iostream>

#include "commands.hpp"
#include "base/output_files.hpp"
#include "formats/yaml_reader.hpp"
#include "options.hpp"
#include "validation/calibrate.hpp"

namespace po = boost::program_options;

namespace ks::cli {

int calibrate(const std::vector<std::string>& args, const std::string& cmdline) {
  (void)cmdline;
  std::string plan_file, out = "calibration";
  int rounds = 0, max_ranks = 0;
  po::options_description desc("calibrate options");
  desc.add_options()
      ("help,h", "show this help")
      ("plan", po::value(&plan_file)->value_name("FILE"), "what to measure (configs/calibrate/, or any validation plan with calibration: measure:)")
      ("out", po::value(&out)->default_value(out), "directory for the measurements, the calibration(s) and the fit reports")
      ("rounds", po::value(&rounds), "rounds of measurements pooled by the fit (default: the plan's)")
      ("max-ranks", po::value(&max_ranks), "the most ranks a job may start here (default: this machine's cores x 16)");
  po::positional_options_description pos;
  pos.add("plan", 1);
  po::variables_map vm;
  if (!parse_args(args, desc,
                  "usage: kanscale calibrate PLAN [--out DIR] [--rounds R]\n"
                  "  measures kernels, the runtime's memory, all-reduce and broadcast sweeps per transport and the\n"
                  "  interference benchmark on this machine, then fits DIR/results/calibration-<transport>.yaml",
                  vm, &pos))
    return 0;
  if (plan_file.empty()) throw InputError("calibrate: give a plan: kanscale calibrate configs/calibrate/local-cpu.yaml");
  ValidationPlan plan = load_validation_plan(plan_file, false);
  if (vm.count("max-ranks")) {
    if (max_ranks < 1) throw InputError("--max-ranks: expected at least 1, got " + std::to_string(max_ranks));
    plan.max_ranks = max_ranks;
  }
  if (vm.count("rounds")) {
    if (rounds < 1 || rounds > 1000) throw InputError("--rounds: expected 1 to 1000, got " + std::to_string(rounds));
    plan.rounds = rounds;
  }
  check_outputs_spare_inputs(plan_inputs(plan), {{out, "--out", true}});
  check_owned_dir(out, "--out");
  return run_calibration(plan, out, self_executable());
}

}  // namespace ks::cli
