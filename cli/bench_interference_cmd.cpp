// kanscale bench interference: how much compute slows while an all-reduce runs beside it (measure/interference).
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

namespace {

// bench interference's all-reduce size: the same bound as bench progress, and
// its send and receive buffers on every rank of this machine within half its memory.
double interference_bytes(const std::string& bytes) {
  double nbytes = 0;
  try {
    nbytes = parse_size_bytes(bytes);
  } catch (const UnitError& e) {
    throw InputError(std::string("--bytes: ") + e.what());
  }
  if (!(nbytes >= kProgressMinBytes && nbytes <= kProgressMaxBytes)) throw InputError("--bytes " + bytes + ": expected a size from 4B to 4GiB");
  check_two_buffers_fit("--bytes " + bytes, nbytes);
  return nbytes;
}

// Rank 0's report of bench interference, and its file for kanscale fit.
void report_interference(const InterferenceResult& r, const InterferenceFile& f, const Workload& w, const Comm& comm, int repeats,
                         const std::string& json) {
  std::cout << "kanscale bench interference: " << w.name << " forward+backward (batch " << w.batch_per_gpu << ") on " << comm.size()
            << " rank(s) (" << comm.backend() << "), " << f.threads_per_rank << " thread(s) each; all-reduce of " << format_bytes(f.allreduce_bytes)
            << " per round, progressed between layers; median of " << repeats << " interleaved rounds\n"
            << "  rank 0: alone " << format_time(r.alone_s) << " (IQR " << format_time(r.alone_iqr_s) << "), with communication "
            << format_time(r.with_comm_s) << " (IQR " << format_time(r.with_comm_iqr_s) << "), " << r.allreduces << " of " << repeats
            << " all-reduces finished within the compute\n"
            << "  interference (slowdown while communicating): rank 0 " << std::fixed << std::setprecision(3) << r.interference()
            << ", mean over ranks " << f.interference_mean << ", worst " << f.interference_max << "\n"
            << "  the all-reduce alone takes " << format_time(r.allreduce_alone_s) << ": compute lost per second of collective in flight "
            << f.per_collective_second << " (the simulator's interference)\n"
            << "  memory while the all-reduce is in flight: +" << format_bytes(f.inflight_memory_bytes_max.value_or(0)) << " (largest rank), "
            << std::setprecision(2) << f.inflight_memory_bytes_max.value_or(0) / f.allreduce_bytes << " x the message\n";
  if (comm.size() == 1) std::cout << "  (one rank: the all-reduce is a no-op; run under mpirun for a measurement)\n";
  if (!json.empty()) write_files_atomic({{json, to_json(f).dump(2) + "\n"}});
}

}  // namespace

// bench interference over MPI (kanscale's trainer): measured on every rank,
// reduced, and reported by rank 0.
static int run_mpi_interference(const Workload& w, double nbytes, int repeats, int threads, const std::string& json, const std::string& cmdline) {
  auto comm = launched_by_mpirun() ? make_mpi_comm() : make_self_comm();
  set_cpu_threads(threads);
  KanNet net = init_kan(w.widths, w.grid_size, w.spline_order, w.seed);
  const InterferenceResult r = measure_interference(*comm, net, static_cast<int>(w.batch_per_gpu), nbytes, repeats);
  InterferenceFile f;
  f.interference_max = comm->allreduce_max(r.interference());
  f.interference_mean = comm->allreduce_sum(r.interference()) / comm->size();
  f.per_collective_second = comm->allreduce_sum(r.interference_per_collective_second()) / comm->size();
  f.inflight_memory_bytes_max = comm->allreduce_max(r.inflight_bytes);
  if (comm->rank() != 0) return 0;
  f.command_line = cmdline;
  f.ranks = comm->size();
  f.threads_per_rank = threads;
  f.allreduce_bytes = nbytes;
  f.alone_s = r.alone_s;
  f.with_communication_s = r.with_comm_s;
  f.interference_rank0 = r.interference();
  f.allreduce_alone_s = r.allreduce_alone_s;
  report_interference(r, f, w, *comm, repeats, json);
  return 0;
}

int bench_interference(const std::vector<std::string>& args, const std::string& cmdline) {
  std::string wl = "configs/workloads/default.yaml", bytes = "64MiB", json, backend = "mpi", python, port_range = "29500-29999";
  int repeats = 20, threads = 1, ranks = 2;
  po::options_description desc("bench interference options");
  desc.add_options()
      ("help,h", "show this help")
      ("workload", po::value(&wl)->default_value(wl), "workload YAML (its KAN and batch)")
      ("bytes", po::value(&bytes)->default_value(bytes), "all-reduce size")
      ("repeat", po::value(&repeats)->default_value(repeats), "rounds alone and with communication")
      ("threads", po::value(&threads)->default_value(threads), "CPU threads per rank")
      ("backend", po::value(&backend)->default_value(backend), "mpi (kanscale's trainer under mpirun) | gloo (PyTorch: efficient-kan "
                                                                "and torch.distributed's gloo, --ranks processes kanscale starts)")
      ("ranks", po::value(&ranks)->default_value(ranks), "gloo: ranks kanscale starts (one process each)")
      ("python", po::value(&python)->value_name("PATH"), "gloo: the interpreter (default $KANSCALE_PYTHON, else /usr/bin/python3)")
      ("port-range", po::value(&port_range)->default_value(port_range), "gloo: where to look for a free rendezvous port")
      ("json", po::value(&json)->value_name("FILE"), "results as JSON");
  po::variables_map vm;
  if (!parse_args(args, desc, "usage: mpirun -np P kanscale bench interference [--workload W] [--bytes 64MiB]\n"
                              "       kanscale bench interference --backend gloo --ranks 2 [--workload W] [--bytes 1MiB]", vm))
    return 0;
  if (repeats < 3 || repeats > 1000) throw InputError("--repeat: expected 3 to 1000, got " + std::to_string(repeats));
  if (backend != "mpi" && backend != "gloo") throw InputError("--backend: expected mpi or gloo, got \"" + backend + "\"");
  check_threads(threads, "--threads");
  check_outputs_spare_inputs({wl}, {{json, "--json"}});
  const double nbytes = interference_bytes(bytes);
  check_output_paths({{json, "--json"}});
  const Workload w = load_workload(wl);
  if (backend == "gloo") {
    if (ranks < 2 || ranks > 64) throw InputError("--ranks: expected 2 to 64 (an all-reduce needs two), got " + std::to_string(ranks));
    if (launched_by_mpirun()) throw InputError("--backend gloo: kanscale starts the ranks itself; run it without mpirun");
    if (json.empty()) throw InputError("--backend gloo: give --json FILE (rank 0 writes the measurement there)");
    TorchInterferenceOptions o;
    o.widths = w.widths;
    o.grid_size = w.grid_size;
    o.spline_order = w.spline_order;
    o.batch = w.batch_per_gpu;
    o.bytes = nbytes;
    o.repeat = repeats;
    o.threads = threads;
    o.ranks = ranks;
    o.json = json;
    return run_torch_interference(o, resolve_python(python), port_range, cmdline);
  }
  return run_mpi_interference(w, nbytes, repeats, threads, json, cmdline);
}

// kanscale bench progress: under mpirun, how far a non-blocking all-reduce
// gets while its ranks compute and poll (the calibration's mpi_progress).

}  // namespace ks::cli
