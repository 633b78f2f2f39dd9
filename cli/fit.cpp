// kanscale fit: calibration from measurement files (kanscale measure kernels
// and measure allreduce JSON), written as a calibration YAML with its
// provenance and the quality of every fit. The fit itself is
// model/calibration_fit.
#include <boost/program_options.hpp>

#include <iostream>

#include "commands.hpp"
#include "model/calibration_fit.hpp"
#include "formats/calibration_file.hpp"
#include "formats/measurement_records.hpp"
#include "base/output_files.hpp"
#include "formats/yaml_reader.hpp"
#include "options.hpp"

namespace po = boost::program_options;

namespace ks::cli {

int fit(const std::vector<std::string>& args, const std::string& cmdline) {
  std::vector<std::string> kernels, collectives, nccl_logs;
  std::vector<std::string> interference, runtime_files, progress, torch_ops;
  std::string out, name;
  po::options_description desc("fit options");
  desc.add_options()
      ("help,h", "show this help")
      ("kernels", po::value(&kernels)->multitoken(), "kanscale measure kernels JSON file(s)")
      ("collectives", po::value(&collectives)->multitoken(), "kanscale measure allreduce and broadcast JSON file(s), any rank counts")
      ("interference", po::value(&interference)->multitoken(), "kanscale bench interference JSON file(s) (the median is used)")
      ("progress", po::value(&progress)->multitoken(), "kanscale bench progress JSON file(s) of one transport (mpi_progress)")
      ("nccl-tests", po::value(&nccl_logs)->multitoken(), "nccl-tests all_reduce_perf logs (nccl family)")
      ("torch-ops", po::value(&torch_ops)->multitoken(), "kanscale measure torch-ops JSON file(s): PyTorch's op classes")
      ("runtime-memory", po::value(&runtime_files)->multitoken(),
       "kanscale measure kernels JSON file(s) at other ranks per node: only their runtime memory is read")
      ("name", po::value(&name), "calibration name (default: from the output file)")
      ("out", po::value(&out)->value_name("FILE"), "calibration YAML to write (configs/calibrations/)");
  po::variables_map vm;
  if (!parse_args(args, desc, "usage: kanscale fit --kernels K.json [--collectives A.json ...] [--interference I.json] [--runtime-memory K1.json ...] --out K.yaml", vm))
    return 0;
  if (out.empty()) throw InputError("missing required option --out");
  check_output_paths({{out, "--out"}});
  {
    std::vector<std::string> inputs;
    for (const auto* list : {&kernels, &collectives, &interference, &progress, &nccl_logs, &runtime_files, &torch_ops})
      inputs.insert(inputs.end(), list->begin(), list->end());
    check_outputs_spare_inputs(inputs, {{out, "--out"}});
  }
  if (kernels.empty() && collectives.empty() && nccl_logs.empty() && progress.empty() && torch_ops.empty())
    throw InputError("give --kernels, --torch-ops, --collectives, --progress and/or --nccl-tests");
  if (name.empty()) {
    name = out.substr(out.find_last_of('/') + 1);
    name = name.substr(0, name.rfind('.'));
  }
  const FitInputs inputs = read_fit_inputs(kernels, collectives, interference, nccl_logs, runtime_files, progress, torch_ops);
  const CalibrationFit fit = fit_calibration(inputs, name);
  write_files_atomic({{out, write_calibration(fit.file, fit_header(cmdline))}});
  std::cout << fit.report << "wrote " << out << "\n";
  return 0;
}

}  // namespace ks::cli
