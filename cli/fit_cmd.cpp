// kanscale fit: calibration from measurement files (kanscale measure kernels
// and measure allreduce JSON), written as a calibration YAML with its
// provenance and the quality of every fit. The fit itself is
// model/calibration_fit.
#include <boost/program_options.hpp>
#include <map>
#include <filesystem>

#include <iostream>
#include <optional>

#include "commands.hpp"
#include "model/calibration_fit.hpp"
#include "formats/calibration_file.hpp"
#include "formats/nccl_tests_log.hpp"
#include "formats/config_files.hpp"
#include "base/data_dir.hpp"
#include "validation/corpus_score.hpp"
#include "formats/measurement_records.hpp"
#include "base/output_files.hpp"
#include "formats/yaml_reader.hpp"
#include "options.hpp"

namespace po = boost::program_options;

namespace ks::cli {

namespace {
// A measurement file named twice (by any two names of one file) would weigh
// double in the fit.
void refuse_inputs_twice(const std::vector<std::pair<const char*, const std::vector<std::string>*>>& lists) {
  std::map<std::string, std::string> seen;  // canonical path -> the option that named it
  for (const auto& [option, files] : lists)
    for (const auto& f : *files) {
      std::error_code ec;
      const std::string key = std::filesystem::weakly_canonical(f, ec).string();
      const auto [it, fresh] = seen.emplace(ec ? f : key, option);
      if (!fresh) throw InputError(std::string(option) + " " + f + ": this file is given twice (also as " + it->second + ")");
    }
}

bool same_table(const NcclTestsLog& a, const NcclTestsLog& b) {
  if (a.rows.size() != b.rows.size()) return false;
  for (std::size_t i = 0; i < a.rows.size(); ++i)
    if (a.rows[i].bytes != b.rows[i].bytes || a.rows[i].time_us[0] != b.rows[i].time_us[0] || a.rows[i].time_us[1] != b.rows[i].time_us[1])
      return false;
  return true;
}
// --cluster: an NCCL cluster whose model predicts the sweeps' held-out sizes (none: not given).
std::optional<Cluster> nccl_cluster(const std::string& file) {
  if (file.empty()) return std::nullopt;
  Cluster c = load_cluster(file);
  if (c.collectives.family != CollFamily::nccl)
    throw InputError("--cluster " + file + ": its collectives are " + to_string(c.collectives.family) + ", not nccl: it cannot predict NCCL sweeps");
  return c;
}

// The logs are all-reduce sweeps, each once: all_reduce_perf's rows reduce
// (broadcast_perf's and gather's say redop none), and one table under two
// names would weigh double in the fit.
void check_nccl_logs(const std::vector<NcclTestsLog>& logs) {
  for (const auto& log : logs)
    for (const auto& r : log.rows)
      if (r.redop == "none")
        throw InputError("--nccl-tests " + log.file + ":" + std::to_string(r.line) +
                         ": a row with redop none (a broadcast or gather log?); --nccl-tests takes all_reduce_perf logs");
  for (std::size_t i = 0; i < logs.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (same_table(logs[i], logs[j]))
        throw InputError("--nccl-tests " + logs[i].file + ": the same table as " + logs[j].file +
                         " (one sweep counted twice would weigh double in the fit)");
}
}  // namespace

// A calibration's default name: its file's name without the extension.
std::string stem_of(const std::string& out) {
  const std::string file = out.substr(out.find_last_of('/') + 1);
  return file.substr(0, file.rfind('.'));
}

int fit(const std::vector<std::string>& args, const std::string& cmdline) {
  std::vector<std::string> kernels, collectives, nccl_logs;
  std::vector<std::string> interference, runtime_files, progress, torch_ops;
  std::string out, name, cluster_file, priors, gpus;
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
      ("cluster", po::value(&cluster_file)->value_name("FILE"),
       "the cluster the NCCL sweeps ran on: their held-out sizes (every fourth) predicted by its NCCL model")
      ("priors", po::value(&priors)->value_name("DIR"),
       "fit what real systems achieve of their datasheets from a corpus of public GPU measurements (validation/corpus); "
       "--out names the priors file (configs/priors/gpu.yaml)")
      ("gpus", po::value(&gpus)->value_name("DIR"), "with --priors: the GPU datasheets (default: the shipped configs/gpus)")
      ("name", po::value(&name), "calibration name (default: from the output file)")
      ("out", po::value(&out)->value_name("FILE"), "calibration YAML to write (configs/calibrations/)");
  po::variables_map vm;
  if (!parse_args(args, desc, "usage: kanscale fit --kernels K.json [--collectives A.json ...] [--interference I.json] [--runtime-memory K1.json ...] --out K.yaml", vm))
    return 0;
  if (out.empty()) throw InputError("missing required option --out");
  std::vector<std::string> files;
  for (const auto* list : {&kernels, &collectives, &interference, &progress, &nccl_logs, &runtime_files, &torch_ops})
    files.insert(files.end(), list->begin(), list->end());
  if (!priors.empty()) {
    if (!files.empty() || !cluster_file.empty() || !name.empty()) throw InputError("fit --priors: takes a corpus alone (no files, no --name)");
    return fit_priors(priors, gpus.empty() ? shipped_path("configs/gpus") : gpus, out, cmdline);
  }
  if (!gpus.empty()) throw InputError("--gpus: goes with --priors");
  check_output_paths({{out, "--out"}});
  if (!cluster_file.empty()) files.push_back(cluster_file);
  check_outputs_spare_inputs(files, {{out, "--out"}});
  if (kernels.empty() && collectives.empty() && nccl_logs.empty() && progress.empty() && torch_ops.empty())
    throw InputError("give --kernels, --torch-ops, --collectives, --progress and/or --nccl-tests");
  if (name.empty()) name = stem_of(out);
  const std::optional<Cluster> cluster = nccl_cluster(cluster_file);
  refuse_inputs_twice({{"--kernels", &kernels}, {"--collectives", &collectives}, {"--interference", &interference}, {"--progress", &progress},
                       {"--nccl-tests", &nccl_logs}, {"--runtime-memory", &runtime_files}, {"--torch-ops", &torch_ops}});
  FitInputs inputs = read_fit_inputs(kernels, collectives, interference, nccl_logs, runtime_files, progress, torch_ops);
  check_nccl_logs(inputs.nccl_tests);
  if (cluster) {
    bool nccl = !inputs.nccl_tests.empty();
    for (const auto& c : inputs.collectives) nccl = nccl || (c.has_metadata && c.backend == "nccl");
    if (!nccl) throw InputError("--cluster " + cluster_file + ": predicts NCCL sweeps' held-out sizes; give --nccl-tests logs or NCCL --collectives");
    inputs.cluster = &*cluster;
  }
  const CalibrationFit fit = fit_calibration(inputs, name);
  write_files_atomic({{out, write_calibration(fit.file, fit_header(cmdline))}});
  std::cout << fit.report;
  if (kernels.empty() && torch_ops.empty() && interference.empty() && runtime_files.empty())
    std::cout << "collectives only: compute, memory and the job's costs stay at the cluster file's datasheet values wherever this "
                 "calibration is used (simulate --cluster C --calibration " << out << ")\n";
  std::cout << "wrote " << out << "\n";
  return 0;
}

}  // namespace ks::cli
