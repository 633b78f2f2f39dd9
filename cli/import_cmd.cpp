// kanscale import torch-profile: a user's own PyTorch DDP job checked
// against the model without running it again (validation/torch_profile).
#include <boost/program_options.hpp>
#include <sys/stat.h>
#include <algorithm>

#include <iostream>

#include "base/data_dir.hpp"
#include "measure/machine_info.hpp"
#include "model/units.hpp"
#include "model/limits.hpp"
#include "base/output_files.hpp"
#include "commands.hpp"
#include "formats/config_files.hpp"
#include "formats/measurement_records.hpp"
#include "formats/provenance.hpp"
#include "kanscale/build_info.hpp"
#include "options.hpp"
#include "validation/torch_profile.hpp"

namespace po = boost::program_options;

namespace ks::cli {

namespace {

// What reading a trace holds in memory per byte of it: the JSON document,
// its events and their copies per profiler step (3.8 GB for a 200 MB trace,
// measured on a 2-core AMD EPYC Zen 4 VM when issue 55 was filed).
constexpr double kImportBytesPerTraceByte = 19;

// Before the trace is read: its reading within --memory-limit and half this machine.
void check_import_memory(const std::string& trace_file, double limit) {
  struct stat st {};
  if (stat(trace_file.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return;  // (the reader says what is wrong with it)
  const double need = kImportBytesPerTraceByte * static_cast<double>(st.st_size);
  const double memory = physical_memory_bytes();
  const double cap = memory > 0 ? std::min(limit, memory / 2) : limit;
  if (need > cap)
    throw InputError(trace_file + ": reading a trace of " + format_bytes(static_cast<double>(st.st_size)) + " needs about " + format_bytes(need) +
                     " (about " + std::to_string(static_cast<int>(kImportBytesPerTraceByte)) + " bytes a byte of trace), above " +
                     (cap < limit ? "half this machine's " + format_bytes(memory) : "--memory-limit " + format_bytes(limit)) +
                     "; trace fewer steps (torch.profiler's schedule: active=N)");
}

int import_torch_profile(const std::vector<std::string>& args, const std::string& cmdline) {
  std::string trace_file, workload_file, cluster_file, calibration_file, json, memory_limit = "16GiB";
  int ranks = 2;
  po::options_description desc("import torch-profile options");
  desc.add_options()
      ("help,h", "show this help")
      ("trace", po::value(&trace_file)->value_name("TRACE.json"), "torch.profiler's Chrome trace of the job (rank 0, CPU activity)")
      ("workload", po::value(&workload_file)->value_name("W"), "the job's workload YAML (its KAN, batch and DDP settings; implementation pytorch)")
      ("cluster", po::value(&cluster_file)->value_name("C"), "the cluster it ran on (default: the shipped configs/clusters/local-cpu-gloo.yaml)")
      ("calibration", po::value(&calibration_file)->value_name("CAL"),
       "the calibration that predicts it (default: the shipped configs/calibrations/pytorch-cpu.yaml)")
      ("ranks", po::value(&ranks)->default_value(ranks), "the job's ranks (the replay's collectives)")
      ("json", po::value(&json)->value_name("FILE"), "the comparison as JSON")
      ("memory-limit", po::value(&memory_limit)->default_value(memory_limit), "refuse a trace whose reading would need more");
  po::positional_options_description pos;
  pos.add("trace", 1);
  po::variables_map vm;
  if (!parse_args(args, desc,
                  "usage: kanscale import torch-profile TRACE.json --workload W [--cluster C] [--calibration CAL] [--ranks N] [--json F]\n"
                  "  maps a torch.profiler trace of a PyTorch DDP job onto the model's op list and sets each op class,\n"
                  "  per iteration, measured against predicted; classes the model does not know are listed",
                  vm, &pos))
    return 0;
  if (trace_file.empty()) throw InputError("import torch-profile: give the trace (TRACE.json)");
  if (workload_file.empty()) throw InputError("import torch-profile: give --workload W (the job's KAN, batch and DDP settings)");
  if (ranks < 1 || ranks > kMaxGpus)
    throw InputError("--ranks: expected 1 to " + std::to_string(kMaxGpus) + " (kanscale's limit), got " + std::to_string(ranks));
  if (calibration_file.empty()) calibration_file = shipped_pytorch_calibration_path();
  if (cluster_file.empty()) cluster_file = shipped_path("configs/clusters/local-cpu-gloo.yaml");
  check_outputs_spare_inputs({trace_file, workload_file, cluster_file, calibration_file}, {{json, "--json"}});
  check_import_memory(trace_file, parse_size_option(memory_limit, "--memory-limit"));
  check_output_paths({{json, "--json"}});
  const Workload w = load_workload(workload_file);
  const Cluster c = load_cluster(cluster_file);
  const Calibration cal = load_calibration(calibration_file, c, w.precision);
  const nlohmann::json trace = read_json_file(trace_file, "a torch.profiler Chrome trace");
  const ProfileComparison p = compare_torch_profile(trace, trace_file, c, w, cal, ranks);
  std::cout << "kanscale import torch-profile: " << trace_file << " against " << (w.file.empty() ? w.name : w.file) << " on " << c.name
            << " at " << ranks << " rank(s), calibration " << calibration_file << "\n"
            << profile_report(p);
  if (!json.empty()) {
    nlohmann::json j = profile_json(p);
    j["provenance"] = to_json(provenance(cmdline));
    write_files_atomic({{json, j.dump(2) + "\n"}});
  }
  return 0;
}

}  // namespace

int import_cmd(const std::vector<std::string>& args, const std::string& cmdline) {
  if (!args.empty() && args[0] == "torch-profile") return import_torch_profile({args.begin() + 1, args.end()}, cmdline);
  throw InputError("import: expected what to import: kanscale import torch-profile TRACE.json --workload W");
}

}  // namespace ks::cli
