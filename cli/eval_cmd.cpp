// kanscale eval: a checkpoint's loss on the workload's data (measure/eval).
#include <boost/program_options.hpp>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <iostream>
#include <tuple>

#include <unistd.h>

#include "commands.hpp"
#include "formats/provenance.hpp"
#include "formats/measurement_records.hpp"
#include "measure/comm.hpp"
#include "measure/interference.hpp"
#include "measure/mpi_progress.hpp"
#include "measure/machine_info.hpp"
#include "measure/kan.hpp"
#include "measure/kan_cpu.hpp"
#include "model/cost.hpp"
#include "model/kan_model.hpp"
#include "model/units.hpp"
#include "sim/report.hpp"
#include "formats/config_files.hpp"
#include <iomanip>
#include <nlohmann/json.hpp>
#include "measure/cuda_plugin.hpp"
#include "measure/checkpoint.hpp"
#include "measure/eval.hpp"
#include "measure/trainer.hpp"
#include "measure/torch_run.hpp"
#include "formats/yaml_reader.hpp"
#include "options.hpp"

namespace po = boost::program_options;

namespace ks::cli {

int eval(const std::vector<std::string>& args, const std::string& cmdline) {
  (void)cmdline;
  std::string checkpoint, input;
  int threads = 1;
  po::options_description desc("eval options");
  desc.add_options()
      ("help,h", "show this help")
      ("checkpoint", po::value(&checkpoint)->value_name("FILE"), "a checkpoint written by kanscale train")
      ("input", po::value(&input)->value_name("X.csv"), "one input row per line (a header line is skipped)")
      ("threads", po::value(&threads)->default_value(threads), "CPU threads");
  po::variables_map vm;
  if (!parse_args(args, desc, "usage: kanscale eval --checkpoint F --input X.csv", vm)) return 0;
  if (checkpoint.empty()) throw InputError("missing required option --checkpoint");
  if (input.empty()) throw InputError("missing required option --input");
  check_threads(threads, "--threads");
  return run_eval(checkpoint, input, threads);
}

}  // namespace ks::cli
