// kanscale calibrate PLAN: one command from a bare machine to a fitted
// calibration (validation/calibrate.hpp).
#include <boost/program_options.hpp>
#include <iostream>

#include "commands.hpp"
#include "base/output_files.hpp"
#include "formats/yaml_reader.hpp"
#include "options.hpp"
#include "base/data_dir.hpp"
#include "formats/calibration_file.hpp"
#include "formats/config_files.hpp"
#include "validation/calibrate.hpp"
#include "validation/trace_calibration.hpp"

namespace po = boost::program_options;

namespace ks::cli {

namespace {

// calibrate --from-trace T --workload W [...]: the traces' op classes fitted
// (validation/trace_calibration), into OUT/results/.
int calibrate_traces(const std::vector<std::string>& traces, const std::vector<std::string>& workloads, const std::vector<std::string>& sweeps,
                     std::string cluster_file, int ranks, const std::string& out, const std::string& cmdline) {
  if (traces.size() != workloads.size())
    throw InputError("--from-trace: " + std::to_string(traces.size()) + " trace(s) and " + std::to_string(workloads.size()) +
                     " --workload(s); they pair in order: --from-trace T1 --workload W1 --from-trace T2 --workload W2 ...");
  if (ranks < 1 || ranks > 4096) throw InputError("--ranks: expected 1 to 4096, got " + std::to_string(ranks));
  if (cluster_file.empty()) cluster_file = shipped_path("configs/clusters/local-cpu-gloo.yaml");
  const Cluster cluster = load_cluster(cluster_file);
  std::vector<TraceJob> jobs;
  std::vector<std::string> inputs = {cluster_file};
  for (std::size_t i = 0; i < traces.size(); ++i) {
    jobs.push_back({traces[i], workloads[i]});
    inputs.push_back(traces[i]);
    inputs.push_back(workloads[i]);
  }
  inputs.insert(inputs.end(), sweeps.begin(), sweeps.end());
  check_outputs_spare_inputs(inputs, {{out, "--out", true}});
  check_owned_dir(out, "--out");
  const TraceCalibration t = calibrate_from_traces(jobs, cluster, ranks, "pytorch-trace", sweeps);
  const std::string cal = out + "/results/calibration-pytorch.yaml", report = out + "/results/fit-report-pytorch.txt";
  write_owned_files(out, {{cal, write_calibration(t.file, fit_header(cmdline))}, {report, t.report + "wrote results/calibration-pytorch.yaml\n"}});
  std::cout << t.report << "kanscale calibrate: wrote " << cal << " and " << report << "\n";
  return 0;
}

}  // namespace

int calibrate(const std::vector<std::string>& args, const std::string& cmdline) {
  std::string plan_file, out = "calibration", cluster, python;
  bool dry_run = false;
  std::vector<std::string> traces, workloads, sweeps;
  int rounds = 0, max_ranks = 0, ranks = 1;
  po::options_description desc("calibrate options");
  desc.add_options()
      ("help,h", "show this help")
      ("plan", po::value(&plan_file)->value_name("FILE"), "what to measure (configs/calibrate/, or any validation plan with calibration: measure:)")
      ("out", po::value(&out)->default_value(out), "directory for the measurements, the calibration(s) and the fit reports")
      ("rounds", po::value(&rounds), "rounds of measurements pooled by the fit (default: the plan's)")
      ("max-ranks", po::value(&max_ranks), "the most ranks a job may start here (default: this machine's cores x 16)")
      ("dry-run", po::bool_switch(&dry_run), "print the jobs the plan would run, per round; run nothing (any machine)")
      ("python", po::value(&python)->value_name("PATH"), "PyTorch plans: the interpreter every job uses (default $KANSCALE_PYTHON, else /usr/bin/python3)")
      ("from-trace", po::value(&traces)->value_name("FILE"), "instead of a plan: a torch.profiler trace of your PyTorch job (rank 0, ProfilerStep#N steps); repeat, each with its --workload")
      ("workload", po::value(&workloads)->value_name("FILE"), "--from-trace: the workload the trace ran (shapes, batch, DDP settings), in the traces' order")
      ("cluster", po::value(&cluster)->value_name("FILE"), "--from-trace: the cluster the traces ran on (default: configs/clusters/local-cpu-gloo.yaml; a GPU job's traces: its GPU cluster, e.g. configs/clusters/dgx-h100.yaml)")
      ("ranks", po::value(&ranks), "--from-trace: the ranks the traced job ran on (default 1)")
      ("sweep", po::value(&sweeps)->value_name("FILE"), "--from-trace: a collective sweep to fit the collectives from (measure allreduce|broadcast --backend gloo --json; a GPU job's: measure allreduce --backend nccl --json); repeat");
  po::positional_options_description pos;
  pos.add("plan", 1);
  po::variables_map vm;
  if (!parse_args(args, desc,
                  "usage: kanscale calibrate PLAN [--out DIR] [--rounds R] [--dry-run] [--python P]\n"
                  "       kanscale calibrate --from-trace T --workload W [--from-trace T2 --workload W2 ...] [--cluster C] [--ranks N] [--sweep S ...] --out DIR\n"
                  "  measures kernels, the runtime's memory, all-reduce and broadcast sweeps per transport and the\n"
                  "  interference benchmark on this machine, then fits DIR/results/calibration-<transport>.yaml;\n"
                  "  with --from-trace, fits PyTorch's op classes to your job's traces instead (DIR/results/calibration-pytorch.yaml)",
                  vm, &pos))
    return 0;
  if (!traces.empty() || !workloads.empty()) {
    if (!plan_file.empty()) throw InputError("calibrate: give a plan or --from-trace, not both");
    for (const char* k : {"rounds", "max-ranks", "dry-run", "python"})
      if (vm.count(k) && !vm[k].defaulted()) throw InputError(std::string("--") + k + ": a plan's setting; --from-trace measures nothing");
    return calibrate_traces(traces, workloads, sweeps, cluster, ranks, out, cmdline);
  }
  for (const char* k : {"cluster", "ranks", "sweep"})
    if (vm.count(k)) throw InputError(std::string("--") + k + ": goes with --from-trace");
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
  if (dry_run) {
    std::cout << calibration_dry_run(plan);
    return 0;
  }
  if (vm.count("python")) use_python_for_jobs(python);
  check_outputs_spare_inputs(plan_inputs(plan), {{out, "--out", true}});
  check_owned_dir(out, "--out");
  return run_calibration(plan, out, self_executable());
}

}  // namespace ks::cli
