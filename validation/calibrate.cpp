#include "calibrate.hpp"

#include <chrono>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "measure/cuda_plugin.hpp"
#include "measure/torch_run.hpp"
#include "measure/machine_info.hpp"
#include "model/config.hpp"
#include "formats/config_files.hpp"
#include "model/machine.hpp"
#include "formats/yaml_reader.hpp"
#include "schedule.hpp"
#include "measure/workbench.hpp"

namespace ks {

namespace {

void require_measure(const ValidationPlan& plan) {
  if (!plan.measure.enabled)
    throw InputError(plan.file + ": key 'calibration': kanscale calibrate measures a plan's calibration: measure: section; this plan " +
                     (plan.datasheet ? "uses the datasheet" : "names a calibration file"));
}

}  // namespace

std::string calibration_dry_run(const ValidationPlan& plan_in) {
  require_measure(plan_in);
  ValidationPlan plan = plan_in;
  plan.cases.clear();
  check_sweep_options(plan);
  const auto rounds = make_schedule(plan);
  std::ostringstream o;
  std::size_t jobs = 0;
  for (const auto& r : rounds) jobs += r.size();
  o << "kanscale calibrate --dry-run: " << plan.name << " (" << plan.file << "): " << jobs << " job(s) in " << rounds.size()
    << " round(s), nothing run; then the fit of " << plan.measure.transports.size() << " calibration(s)\n";
  for (std::size_t r = 0; r < rounds.size(); ++r) {
    o << "round " << r + 1 << ":\n";
    for (const Job& j : rounds[r]) {
      o << "  " << j.what << ": " << j.ranks << " rank(s)" << (j.transport.empty() ? "" : " over " + j.transport)
        << (j.self_launched ? ", started by kanscale" : j.ranks > 1 || !j.transport.empty() ? ", under mpirun" : "") << "; kanscale";
      for (const std::string& a : j.args) o << " " << a;
      o << " -> " << j.output << "\n";
    }
  }
  return o.str();
}

int run_calibration(const ValidationPlan& plan_in, const std::string& out_dir, const std::string& exe) {
  require_measure(plan_in);
  if (plan_in.backend == "cuda" && plan_in.implementation != "pytorch") {  // before any job starts ranks
    std::string why;
    const CudaPlugin* cuda = cuda_plugin(&why);
    if (!cuda || !cuda->device_available(&why)) throw InputError(plan_in.file + ": key 'backend': cuda: " + why);
  }
  if (plan_in.implementation == "pytorch") {  // the interpreter every job will find, probed before any starts
    const Stopwatch probe;
    const TorchEnv env = probe_torch(resolve_python(""));
    if (plan_in.backend == "cuda" && !env.cuda)
      throw InputError(plan_in.file + ": key 'backend': cuda: " + env.python + "'s torch " + env.torch +
                       " sees no CUDA device (a GPU plan runs on a GPU node, with a CUDA build of torch: --python)");
    // the start-up every job's processes pay before they measure anything
    // (an interpreter importing torch: the probe does it), measured first
    std::cout << "kanscale calibrate: PyTorch from " << env.python << ": " << env.fingerprint() << "; an interpreter's start-up with torch "
              << std::setprecision(2) << probe.seconds() << " s, paid once per job and rank\n";
  }
  ValidationPlan plan = plan_in;
  plan.cases.clear();  // only the microbenchmarks
  check_sweep_options(plan);
  const auto rounds = make_schedule(plan);
  check_local_ranks(plan, rounds);
  if (const std::string w = busy_warning("calibration starts"); !w.empty()) std::cerr << w << "\n";
  const Stopwatch watch;
  prepare_dir(plan, out_dir);
  std::size_t jobs = 0;
  for (const auto& r : rounds) jobs += r.size();
  run_schedule(rounds, out_dir, exe);
  fit_measured(plan, out_dir);
  const double took = watch.seconds();
  const Cluster cluster = load_cluster(plan.cluster_file);
  std::cout << "kanscale calibrate: " << plan.name << " (" << plan.file << "), " << jobs << " measurement jobs in " << plan.rounds
            << " round(s), " << static_cast<long long>(took + 0.5) << " s\n";
  for (const auto& t : plan.measure.transports) {
    const std::string file = out_dir + "/" + calibration_out(t);
    const Calibration cal = load_calibration(file, cluster, Precision::fp32);
    std::cout << "  " << file << ": " << (t.empty() ? std::string("default transport") : t == "gloo" || t == "nccl" ? "PyTorch over " + t : "transport " + t) << ", measured on "
              << (cal.machine.empty() ? std::string("an unrecorded machine") : describe(cal.machine)) << "\n";
  }
  std::cout << "  fit reports and measurement files beside them (" << out_dir << "/results/); use one with\n"
            << "  kanscale simulate --cluster " << plan.cluster_file << " --calibration " << out_dir << "/"
            << calibration_out(plan.measure.transports.front()) << " --workload WORKLOAD.yaml --gpus 1,2\n";
  return 0;
}

}  // namespace ks
