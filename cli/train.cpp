// kanscale train / eval: thin wrappers over measure/trainer.
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
#include "measure/progress.hpp"
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

// Before anything is allocated: the memory a rank will need, from the
// model's own accounting (parameters, gradients, buckets, Adam, the batch's
// activations), the data set held in memory (at most 512 MiB), the
// sampler's permutation of it (8 B a sample), the teacher network
// (4 x in x out x 16 B) and ~200 B of records per step.
void check_train_memory(const Workload& w, long long steps, int epochs, double limit, const std::string& file) {
  const KanShape shape{w.widths, w.grid_size, w.spline_order};
  const double in = static_cast<double>(w.widths.front()), out = static_cast<double>(w.widths.back());
  const double data_bytes = std::min(512.0 * 1048576, 4.0 * static_cast<double>(w.dataset_size) * (in + out)) +
                            8.0 * static_cast<double>(w.dataset_size) + (w.task == "teacher" ? 64.0 * in * out : 0.0);
  const double ipe = std::ceil(static_cast<double>(w.dataset_size) / static_cast<double>(w.batch_per_gpu));
  const double total_steps = steps > 0 ? static_cast<double>(steps) : ipe * (epochs > 0 ? epochs : w.epochs);
  const double need = kanscale_memory(shape, w.batch_per_gpu, w.ddp, 0, 0).peak_bytes + data_bytes + 200.0 * total_steps;
  if (need > limit)
    throw InputError(file + ": a rank of this run needs about " + format_bytes(need) + " (" + std::to_string(kan_parameter_count(shape)) +
                     " parameters, batch " + std::to_string(w.batch_per_gpu) + ", " + std::to_string(w.dataset_size) + " samples, " +
                     format_bytes(200.0 * total_steps) + " of records), above the limit of " + format_bytes(limit) +
                     " (raise it with --memory-limit)");
}

// The training loop on every rank (CPU, or CUDA through the plugin). An error
// on one rank must not leave the others waiting in a collective: say it
// here, with the rank, then end them all.
int train_on_ranks(const TrainOptions& o, const std::string& backend) {
  auto comm = launched_by_mpirun() ? make_mpi_comm() : make_self_comm();
  try {
    if (backend == "cuda") {
      std::string why;
      const CudaPlugin* cuda = cuda_plugin(&why);
      if (!cuda) throw InputError("--backend cuda: " + why);
      return cuda->train(o, *comm).exit_code;
    }
    return run_train(o, *comm).exit_code;
  } catch (const InputError& e) {
    std::cerr << "kanscale: " << e.what() << (comm->size() > 1 ? " (rank " + std::to_string(comm->rank()) + ")" : "") << "\n";
    comm->abort(2);
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "kanscale train: error: " << e.what() << (comm->size() > 1 ? " (rank " + std::to_string(comm->rank()) + ")" : "") << "\n";
    comm->abort(1);
    return 1;
  }
}

// Before a long run: an output that cannot be written fails now, not at the
// end; and a resumed run writes its checkpoint under another name, so the
// one it started from stays as it was.
void check_train_outputs(const CommonOptions& c, const std::string& checkpoint, const std::string& resume) {
  const std::string state = checkpoint.empty() ? "" : optimizer_state_path(checkpoint);
  check_output_paths({{c.json, "--json"}, {c.csv, "--csv"}, {csv_meta_path(c.csv), "--csv (its .meta.json)"}, {c.trace, "--trace"},
                      {checkpoint, "--checkpoint"}, {state, "--checkpoint (its optimizer state)"}});
  check_outputs_spare_inputs({c.workload, resume, resume.empty() ? "" : optimizer_state_path(resume)},
                             {{c.json, "--json"}, {c.csv, "--csv"}, {csv_meta_path(c.csv), "--csv (its .meta.json)"}, {c.trace, "--trace"},
                              {checkpoint, "--checkpoint"}, {state, "--checkpoint (its optimizer state)"}});
}

// The options only a PyTorch run reads (workloads with implementation: pytorch).
struct TorchCli {
  int ranks = 1, warmup = 2, threads = 1, epochs = -1;
  long long steps = -1;
  std::uint64_t seed = 0;
  std::string python, port_range = "29500-29999", profile;
};

void add_torch_options(po::options_description& desc, TorchCli& t) {
  desc.add_options()
      ("ranks", po::value(&t.ranks)->default_value(t.ranks), "pytorch: ranks kanscale starts (one process each)")
      ("warmup", po::value(&t.warmup)->default_value(t.warmup), "pytorch: first steps left out of the summary")
      ("python", po::value(&t.python)->value_name("PATH"), "pytorch: the interpreter (default $KANSCALE_PYTHON, else /usr/bin/python3)")
      ("port-range", po::value(&t.port_range)->default_value(t.port_range), "pytorch: where to look for a free rendezvous port")
      ("profile", po::value(&t.profile)->value_name("FILE"), "pytorch: torch.profiler Chrome trace of one more step (rank 0)");
}

// A PyTorch-only option on a kanscale workload is a mistake, not a no-op.
void check_kanscale_only(const po::variables_map& vm) {
  for (const char* key : {"ranks", "warmup", "python", "port-range", "profile"})
    if (vm.count(key) && !vm[key].defaulted())
      throw InputError(std::string("--") + key + ": only for a workload with implementation: pytorch");
}

// The iteration of a PyTorch run, from the summary its rank 0 wrote.
void print_torch_summary(const std::string& json, const Workload& w, int ranks, const TorchEnv& env) {
  const auto j = read_json_file(json, "the PyTorch run's summary");
  const TrainSummary s = train_summary_from_json(j.at("summary"), json);
  std::cout << "kanscale train: " << w.name << " under PyTorch DDP (" << env.fingerprint() << "), " << ranks << " rank(s), batch "
            << w.batch_per_gpu << " per rank: iteration " << format_time(s.iteration_s.median) << " (median; p95 over ranks "
            << format_time(s.iteration_s.p95) << "), " << std::fixed << std::setprecision(0) << s.samples_per_s << " samples/s\n";
  std::cout.unsetf(std::ios::floatfield);
  for (const auto& [name, t] : s.op_s) std::cout << "  " << std::left << std::setw(16) << name << std::right << format_time(t) << "\n";
}

int train_pytorch(const Workload& w, const CommonOptions& c, const std::string& backend, const TorchCli& t, const po::variables_map& vm,
                  bool quiet, const std::string& cmdline) {
  for (const char* key : {"csv", "trace", "checkpoint", "checkpoint-every", "resume", "inject-delay-us"})
    if (vm.count(key)) throw InputError(std::string("--") + key + ": not for implementation: pytorch (kanscale's own trainer only)");
  if (launched_by_mpirun())
    throw InputError(c.workload + ": implementation pytorch: kanscale starts the ranks itself (--ranks P), not under mpirun");
  if (t.ranks < 1 || t.ranks > 4096) throw InputError("--ranks: expected 1 to 4096, got " + std::to_string(t.ranks));
  if (t.warmup < 0) throw InputError("--warmup: must not be negative");
  check_output_paths({{t.profile, "--profile"}});
  check_outputs_spare_inputs({c.workload}, {{c.json, "--json"}, {t.profile, "--profile"}});
  TorchTrainOptions o;
  o.workload = w;
  o.ranks = t.ranks;
  o.warmup = t.warmup;
  o.steps = t.steps > 0 ? t.steps : 30;
  if (t.epochs > 0) throw InputError("--epochs: a PyTorch run counts --steps (its batch is one tensor, no data set)");
  if (o.steps <= o.warmup)
    throw InputError("--steps " + std::to_string(o.steps) + ": must be more than --warmup " + std::to_string(o.warmup));
  o.threads = t.threads;
  o.seed = t.seed;
  o.dist_backend = backend == "cuda" ? "nccl" : "gloo";
  o.profile = t.profile;
  o.command_line = cmdline;
  o.port_range = t.port_range;
  free_port(o.port_range);  // a range with no free port fails before the interpreter starts
  o.python = resolve_python(t.python);
  const TorchEnv env = probe_torch(o.python);
  // the summary is printed from rank 0's file: a temporary one without --json,
  // removed however the run ends
  struct TempSummary {
    std::string dir;
    ~TempSummary() {
      if (dir.empty()) return;
      std::remove((dir + "/summary.json").c_str());
      rmdir(dir.c_str());
    }
  } temp;
  if (c.json.empty()) {
    char tmp[] = "/tmp/kanscale-torch-XXXXXX";
    if (!mkdtemp(tmp)) throw std::runtime_error("cannot create a temporary directory");
    temp.dir = tmp;
    o.json = temp.dir + "/summary.json";
  } else {
    o.json = c.json;
  }
  const int code = run_torch_train(o, env);
  if (code == 0 && !quiet) print_torch_summary(o.json, w, o.ranks, env);
  return code;
}

}  // namespace

namespace {

// The options of kanscale's own trainer (and those PyTorch runs share).
struct TrainCli {
  std::string backend = "cpu", checkpoint, resume, memory_limit = "64GiB";
  long long steps = -1, checkpoint_every = 0;
  int epochs = -1, threads = 1;
  double delay_us = 0;
  bool quiet = false;
};

void add_train_options(po::options_description& desc, CommonOptions& c, TrainCli& t) {
  desc.add_options()
      ("help,h", "show this help")
      ("workload", po::value(&c.workload)->value_name("FILE"), "workload YAML (configs/workloads/)")
      ("backend", po::value(&t.backend)->default_value(t.backend), "cpu (MPI between ranks under mpirun) | cuda")
      ("steps", po::value(&t.steps)->value_name("N"), "optimizer steps in all (default: the workload's epochs)")
      ("epochs", po::value(&t.epochs)->value_name("E"), "epochs (overrides the workload's)")
      ("threads", po::value(&t.threads)->default_value(t.threads), "CPU threads per rank")
      ("seed", po::value(&c.seed)->value_name("S"), "random seed (default: the workload's)")
      ("json", po::value(&c.json)->value_name("FILE"), "per-iteration records and the summary as JSON")
      ("csv", po::value(&c.csv)->value_name("FILE"), "per-iteration, per-rank records as CSV")
      ("trace", po::value(&c.trace)->value_name("FILE"), "Chrome trace-event JSON (Perfetto), the simulator's shape")
      ("checkpoint", po::value(&t.checkpoint)->value_name("FILE"),
       "safetensors checkpoint written at the end, on SIGINT/SIGTERM, and with --checkpoint-every")
      ("checkpoint-every", po::value(&t.checkpoint_every)->value_name("N"), "also write the checkpoint every N steps")
      ("resume", po::value(&t.resume)->value_name("FILE"), "continue from a checkpoint (bit-identical to an uninterrupted run)")
      ("inject-delay-us", po::value(&t.delay_us)->value_name("US"), "make every bucket's all-reduce last this long (overlap tests)")
      ("quiet", po::bool_switch(&t.quiet), "no progress lines")
      ("memory-limit", po::value(&t.memory_limit)->default_value(t.memory_limit),
       "refuse a run whose estimated memory per rank (model, Adam, buckets, batch, data, records) is above this");
}

void check_train_flags(const CommonOptions& c, const TrainCli& t, const po::variables_map& vm) {
  if (c.workload.empty()) throw InputError("missing required option --workload");
  if (t.backend != "cpu" && t.backend != "cuda") throw InputError("--backend: expected cpu or cuda, got \"" + t.backend + "\"");
  check_threads(t.threads, "--threads");
  if ((vm.count("steps") && t.steps < 1) || (vm.count("epochs") && t.epochs < 1))
    throw InputError(std::string(t.steps < 1 && vm.count("steps") ? "--steps" : "--epochs") + ": must be at least 1");
  if (!(t.delay_us >= 0 && t.delay_us <= 1e9)) throw InputError("--inject-delay-us: expected 0 to 1e9 microseconds");
  if (t.backend == "cuda" && t.delay_us > 0) throw InputError("--inject-delay-us: only the cpu backend injects delays");
  if (t.checkpoint_every < 0) throw InputError("--checkpoint-every: must not be negative");
}

int train_kanscale(const Workload& w, const CommonOptions& c, const TrainCli& t, double memory_limit_bytes, std::uint64_t seed,
                   const std::string& cmdline) {
  check_train_memory(w, t.steps, t.epochs, memory_limit_bytes, c.workload);
  TrainOptions o;
  o.workload = w;
  o.steps = t.steps;
  o.epochs = t.epochs;
  o.threads = t.threads;
  o.seed = seed;
  std::tie(o.json, o.csv, o.trace, o.checkpoint, o.resume) = std::tie(c.json, c.csv, c.trace, t.checkpoint, t.resume);
  o.checkpoint_every = t.checkpoint_every;
  o.inject_delay_s = t.delay_us * 1e-6;
  o.quiet = t.quiet;
  o.command_line = cmdline;
  return train_on_ranks(o, t.backend);
}

}  // namespace

int train(const std::vector<std::string>& args, const std::string& cmdline) {
  CommonOptions c;
  TrainCli t;
  TorchCli torch;
  po::options_description desc("train options");
  add_train_options(desc, c, t);
  add_torch_options(desc, torch);
  po::variables_map vm;
  if (!parse_args(args, desc,
                  "usage: kanscale train --workload W [--backend cpu|cuda] [--steps N | --epochs E] [--seed S]\n"
                  "                      [--json F] [--csv F] [--trace F] [--checkpoint F] [--resume F]\n"
                  "Data-parallel under mpirun -np P (MPI for the CPU backend, NCCL for CUDA).\n"
                  "A workload with implementation: pytorch runs PyTorch DDP instead, --ranks P\n"
                  "processes started by kanscale (gloo on CPU, nccl with --backend cuda).",
                  vm))
    return 0;
  check_train_flags(c, t, vm);
  const double memory_limit_bytes = parse_size_option(t.memory_limit, "--memory-limit");
  check_train_outputs(c, t.checkpoint, t.resume);
  const Workload w = load_workload(c.workload);
  const std::uint64_t seed = vm.count("seed") ? parse_seed(c.seed) : w.seed;
  if (w.implementation == Implementation::pytorch) {
    std::tie(torch.steps, torch.epochs, torch.threads, torch.seed) = std::tie(t.steps, t.epochs, t.threads, seed);
    return train_pytorch(w, c, t.backend, torch, vm, t.quiet, cmdline);
  }
  check_kanscale_only(vm);
  return train_kanscale(w, c, t, memory_limit_bytes, seed, cmdline);
}

// kanscale bench interference: under mpirun, the compute slowdown while
// all-reduces run on the same rank (the calibration's `interference`).
namespace {

// Two buffers of `nbytes` on every rank of this machine must fit in half its
// memory (`what`: the option and value named in the error).
void check_two_buffers_fit(const std::string& what, double nbytes) {
  const double memory = physical_memory_bytes();
  const double ranks = static_cast<double>(launched_by_mpirun() ? std::max(1, local_ranks()) : 1);
  if (memory > 0 && 2 * nbytes * ranks > memory / 2)
    throw InputError(what + ": " + std::to_string(static_cast<int>(ranks)) + " rank(s) x 2 buffers would need " +
                     format_bytes(2 * nbytes * ranks) + ", above half this machine's " + format_bytes(memory));
}

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

// kanscale bench progress: under mpirun, how far a non-blocking all-reduce
// gets while its ranks compute and poll (the calibration's mpi_progress).
namespace {

// Rank 0's table of bench progress, and its file for kanscale fit.
void report_progress(const std::vector<ProgressPoint>& points, const Comm& comm, double compute, int repeats, const std::string& json,
                     const std::string& cmdline) {
  std::cout << "kanscale bench progress: a non-blocking all-reduce launched before " << compute
            << " x its own time of compute, MPI_Test every poll interval, then waited for; " << comm.size() << " rank(s) ("
            << comm.backend() << "), medians of " << repeats << ", the largest rank's\n"
            << "  (done during compute = 1 - wait / alone: 1 moves on its own, 0 only inside the wait)\n";
  std::cout << std::left << std::setw(12) << "  bytes" << std::right << std::setw(12) << "alone" << std::setw(14) << "poll every"
            << std::setw(12) << "compute" << std::setw(12) << "wait" << std::setw(16) << "done in compute" << "\n";
  for (const auto& p : points) {
    std::cout << "  " << std::left << std::setw(10) << format_bytes(p.bytes) << std::right << std::setw(12) << format_time(p.alone_s)
              << std::setw(14) << (p.poll_interval_s > 0 ? format_time(p.poll_interval_s) : std::string("never")) << std::setw(12)
              << format_time(p.compute_s) << std::setw(12) << format_time(p.wait_s) << std::setw(15) << std::fixed
              << std::setprecision(2) << (p.alone_s > 0 ? 1 - p.wait_s / p.alone_s : 0.0) << "\n";
    std::cout.unsetf(std::ios::floatfield);
  }
  if (comm.size() == 1) std::cout << "  (one rank: the all-reduce is a no-op; run under mpirun for a measurement)\n";
  if (json.empty()) return;
  ProgressFile f;
  f.command_line = cmdline;
  f.ranks = comm.size();
  f.mpi_library = comm.library_version();
  f.cpu_model = this_machine("", f.mpi_library).cpu_model;
  char date[32];
  const std::time_t t = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  f.date_utc = date;
  f.points = points;
  write_files_atomic({{json, to_json(f).dump(2) + "\n"}});
}

}  // namespace

int bench_progress(const std::vector<std::string>& args, const std::string& cmdline) {
  std::string sizes_text = "64KiB,256KiB,1MiB,4MiB", polls_text = "0,0.5,0.2,0.05", json;
  double compute = 1.5;
  int repeats = 7;
  po::options_description desc("bench progress options");
  desc.add_options()
      ("help,h", "show this help")
      ("sizes", po::value(&sizes_text)->default_value(sizes_text), "all-reduce sizes, comma-separated")
      ("polls", po::value(&polls_text)->default_value(polls_text),
       "poll intervals as fractions of the all-reduce's own time, comma-separated (0: no poll)")
      ("compute", po::value(&compute)->default_value(compute, "1.5"), "compute per point, in all-reduce times")
      ("repeat", po::value(&repeats)->default_value(repeats), "repetitions per point (medians)")
      ("json", po::value(&json)->value_name("FILE"), "results as JSON");
  po::variables_map vm;
  if (!parse_args(args, desc, "usage: mpirun -np P kanscale bench progress [--sizes 64KiB,1MiB] [--polls 0,0.2] [--json F]", vm)) return 0;
  if (repeats < 3 || repeats > 1000) throw InputError("--repeat: expected 3 to 1000");
  if (!(compute >= 0.1 && compute <= 100)) throw InputError("--compute: expected 0.1 to 100 all-reduce times");
  std::vector<double> sizes, polls;
  try {
    sizes = parse_size_list(sizes_text, kProgressMinBytes, kProgressMaxBytes);
  } catch (const UnitError& e) {
    throw InputError(std::string("--sizes: ") + e.what());
  }
  for (const auto& w : split_list(polls_text, "--polls")) {
    double f = -1;
    try {
      std::size_t used = 0;
      f = std::stod(w, &used);
      if (used != w.size()) f = -1;
    } catch (const std::exception&) {
    }
    if (!(f >= 0 && f <= 100)) throw InputError("--polls: expected fractions from 0 to 100, got '" + w + "'");
    polls.push_back(f);
  }
  if (sizes.empty() || polls.empty()) throw InputError("--sizes and --polls: expected at least one value each");
  // the fit's reader takes at most 200 points a file (each costs the fit's whole grid)
  if (sizes.size() * polls.size() > 200) throw InputError("--sizes x --polls: at most 200 points, got " + std::to_string(sizes.size() * polls.size()));
  check_output_paths({{json, "--json"}});
  auto comm = launched_by_mpirun() ? make_mpi_comm() : make_self_comm();
  const auto points = measure_progress(*comm, sizes, polls, compute, repeats);
  if (comm->rank() != 0) return 0;
  report_progress(points, *comm, compute, repeats, json, cmdline);
  return 0;
}

// kanscale bench overlap: under mpirun, two non-blocking all-reduces in
// flight at once, against one after another (what the replay assumes).
int bench_overlap(const std::vector<std::string>& args, const std::string& cmdline) {
  std::string sizes_text = "4KiB,16KiB,64KiB,256KiB,1MiB", json;
  double gap = 0.5;
  int repeats = 15;
  po::options_description desc("bench overlap options");
  desc.add_options()
      ("help,h", "show this help")
      ("sizes", po::value(&sizes_text)->default_value(sizes_text), "all-reduce sizes, comma-separated")
      ("gap", po::value(&gap)->default_value(gap, "0.5"), "compute before the staggered pair's second launch, in all-reduce times")
      ("repeat", po::value(&repeats)->default_value(repeats), "repetitions per size (medians)")
      ("json", po::value(&json)->value_name("FILE"), "results as JSON");
  po::variables_map vm;
  if (!parse_args(args, desc, "usage: mpirun -np P kanscale bench overlap [--sizes 4KiB,64KiB] [--gap 0.5] [--json F]", vm)) return 0;
  if (repeats < 3 || repeats > 1000) throw InputError("--repeat: expected 3 to 1000");
  if (!(gap >= 0 && gap <= 100)) throw InputError("--gap: expected 0 to 100 all-reduce times");
  std::vector<double> sizes;
  try {
    sizes = parse_size_list(sizes_text, kProgressMinBytes, kProgressMaxBytes);
  } catch (const UnitError& e) {
    throw InputError(std::string("--sizes: ") + e.what());
  }
  if (sizes.empty() || sizes.size() > 200) throw InputError("--sizes: expected 1 to 200 sizes");
  const double largest = *std::max_element(sizes.begin(), sizes.end());
  check_two_buffers_fit("--sizes " + format_bytes(largest), largest);
  check_output_paths({{json, "--json"}});
  auto comm = launched_by_mpirun() ? make_mpi_comm() : make_self_comm();
  const auto points = measure_overlap(*comm, sizes, gap, repeats);
  if (comm->rank() != 0) return 0;
  std::cout << "kanscale bench overlap: two non-blocking all-reduces of one size in flight at once; " << comm->size() << " rank(s) ("
            << comm->backend() << "), medians of " << repeats << ", the largest rank's, from the first launch to both done\n"
            << "  pair: launched back to back; staggered: the second after " << gap
            << " x alone of compute polling every 0.1 x alone; hidden: the share of the second's time\n"
            << "  that one after another (2 x alone, or gap + alone) would add and the measurement does not\n";
  std::cout << std::left << std::setw(12) << "  bytes" << std::right << std::setw(12) << "alone" << std::setw(12) << "pair" << std::setw(10)
            << "hidden" << std::setw(14) << "staggered" << std::setw(12) << "gap" << std::setw(10) << "hidden" << "\n";
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& p : points) {
    std::cout << "  " << std::left << std::setw(10) << format_bytes(p.bytes) << std::right << std::setw(12) << format_time(p.alone_s)
              << std::setw(12) << format_time(p.pair_s) << std::setw(10) << std::fixed << std::setprecision(2) << p.hidden_pair();
    std::cout.unsetf(std::ios::floatfield);
    std::cout << std::setw(14) << format_time(p.staggered_s) << std::setw(12) << format_time(p.gap_s) << std::setw(10) << std::fixed
              << std::setprecision(2) << p.hidden_staggered() << "\n";
    std::cout.unsetf(std::ios::floatfield);
    rows.push_back({{"bytes", p.bytes}, {"alone_s", p.alone_s}, {"pair_s", p.pair_s}, {"staggered_s", p.staggered_s}, {"gap_s", p.gap_s},
                    {"hidden_pair", p.hidden_pair()}, {"hidden_staggered", p.hidden_staggered()}});
  }
  if (comm->size() == 1) std::cout << "  (one rank: the all-reduces are no-ops; run under mpirun for a measurement)\n";
  if (json.empty()) return 0;
  const std::string library = comm->library_version();
  char date[32];
  const std::time_t t = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  const nlohmann::json doc = {{"command_line", cmdline}, {"ranks", comm->size()},       {"mpi_library", library},
                              {"cpu_model", this_machine("", library).cpu_model}, {"date_utc", date}, {"gap", gap},
                              {"points", rows}};
  write_files_atomic({{json, doc.dump(2) + "\n"}});
  return 0;
}

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
