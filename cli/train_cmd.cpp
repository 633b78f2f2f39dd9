// kanscale train: a thin wrapper over measure/trainer (kanscale's own trainer) and measure/torch_run (PyTorch DDP).
#include <boost/program_options.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <optional>
#include <tuple>

#include <unistd.h>

#include "commands.hpp"
#include "model/limits.hpp"
#include "base/process.hpp"
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

// What the trainer keeps per op and step it times (measured 6 Dec 2026 on
// the 2-core AMD EPYC Zen 3 VM: local-kanscale.yaml, one rank, 35 ops a
// step, peak RSS by /usr/bin/time at 2,000 and 8,000 steps, the slope per
// step over its ops): 221 B of slice and records without --trace (the
// slices a window of 400,000, trainer.cpp), and 3,180 B more with it (the
// trace's events as JSON, gathered at rank 0 from every rank).
constexpr double kSliceBytes = 221, kTraceEventBytes = 3180, kSliceWindow = 400000;

// The ranks of this job, as its launcher says (1 when it says nothing).
long long world_ranks() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE", "SLURM_NTASKS"})
    if (const char* v = std::getenv(name); v && *v) return std::max(1LL, std::atoll(v));
  return 1;
}

// Before anything is allocated: the memory a rank will need, from the
// model's own accounting (parameters, gradients, buckets, Adam, the batch's
// activations), the data set held in memory (at most 512 MiB), the
// sampler's permutation of it (8 B a sample), the teacher network
// (4 x in x out x 16 B), and the timed ops' slices and records (with
// --trace, every step's, at rank 0 every rank's).
void check_train_memory(const Workload& w, long long steps, int epochs, double limit, const std::string& file, bool trace) {
  const KanShape shape{w.widths, w.grid_size, w.spline_order};
  const double in = static_cast<double>(w.widths.front()), out = static_cast<double>(w.widths.back());
  const double data_bytes = std::min(512.0 * 1048576, 4.0 * static_cast<double>(w.dataset_size) * (in + out)) +
                            8.0 * static_cast<double>(w.dataset_size) + (w.task == "teacher" ? 64.0 * in * out : 0.0);
  const double ipe = std::ceil(static_cast<double>(w.dataset_size) / static_cast<double>(w.batch_per_gpu));
  const double total_steps = steps > 0 ? static_cast<double>(steps) : ipe * (epochs > 0 ? epochs : w.epochs);
  const double ops = static_cast<double>(kanscale_iteration(shape, w.batch_per_gpu, w.ddp.gradient_as_bucket_view).size());
  const double records = trace ? total_steps * ops * (kSliceBytes + kTraceEventBytes) * static_cast<double>(world_ranks())
                               : std::min(total_steps * ops, kSliceWindow) * kSliceBytes;
  const double need = kanscale_memory(shape, w.batch_per_gpu, w.ddp, 0, 0).peak_bytes + data_bytes + records;
  if (need > limit)
    throw InputError(file + ": a rank of this run needs about " + format_bytes(need) + " (" + std::to_string(kan_parameter_count(shape)) +
                     " parameters, batch " + std::to_string(w.batch_per_gpu) + ", " + std::to_string(w.dataset_size) + " samples, " +
                     format_bytes(records) + " of timed ops" + (trace ? " kept for --trace" : "") + "), above the limit of " +
                     format_bytes(limit) + " (raise it with --memory-limit" + (trace ? ", or trace fewer --steps" : "") + ")");
}

// The training loop on every rank (CPU, or CUDA through the plugin), for
// each run in turn on one communicator (several workloads: MPI's start-up
// paid once). An error on one rank must not leave the others waiting in a
// collective: say it here, with the rank, then end them all.
int train_on_ranks(const std::vector<TrainOptions>& runs, const std::string& backend) {
  auto comm = launched_by_mpirun() ? make_mpi_comm() : make_self_comm();
  try {
    const CudaPlugin* cuda = nullptr;
    if (backend == "cuda") {
      std::string why;
      cuda = cuda_plugin(&why);
      if (!cuda) throw InputError("--backend cuda: " + why);
    }
    for (const TrainOptions& o : runs) {
      // each run's peak memory its own (the calibration fits what runs hold)
      if (&o != &runs.front() && !reset_peak_rss())
        throw std::runtime_error("several workloads: cannot restart the peak resident set between runs (/proc/self/clear_refs)");
      const int code = cuda ? cuda->train(o, *comm).exit_code : run_train(o, *comm).exit_code;
      if (code != 0) return code;
    }
    return 0;
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
  double target = 0;
  long long steps = -1;
  std::uint64_t seed = 0;
  std::string python, port_range = "29500-29999", profile;
};

void add_torch_options(po::options_description& desc, TorchCli& t) {
  desc.add_options()
      ("ranks", po::value(&t.ranks)->default_value(t.ranks), "pytorch: ranks kanscale starts (one process each)")
      ("target-rel-halfwidth", po::value(&t.target)->value_name("F"),
       "pytorch: stop before --steps once every rank's median step is known to F (its 95% interval, order statistics)")
      ("warmup", po::value(&t.warmup)->default_value(t.warmup), "pytorch: first steps left out of the summary")
      ("python", po::value(&t.python)->value_name("PATH"), "pytorch: the interpreter (default $KANSCALE_PYTHON, else /usr/bin/python3)")
      ("port-range", po::value(&t.port_range)->default_value(t.port_range), "pytorch: where to look for a free rendezvous port")
      ("profile", po::value(&t.profile)->value_name("FILE"), "pytorch: rank 0's torch.profiler Chrome trace of 3 more steps, as users make it (schedule: wait 1, warm-up 2, active 3; export_chrome_trace)");
}

// A PyTorch-only option on a kanscale workload is a mistake, not a no-op.
void check_kanscale_only(const po::variables_map& vm) {
  for (const char* key : {"ranks", "warmup", "python", "port-range", "profile", "target-rel-halfwidth"})
    if (vm.count(key) && !vm[key].defaulted())
      throw InputError(std::string("--") + key + ": only for a workload with implementation: pytorch");
}

// The iteration of a PyTorch run, from the summary its rank 0 wrote.
void print_torch_summary(const std::string& text, const std::string& json, const Workload& w, int ranks, const TorchEnv& env) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    throw std::runtime_error(json + ": the PyTorch run's summary is not JSON: " + e.what());
  }
  const TrainSummary s = train_summary_from_json(j.at("summary"), json);
  std::cout << "kanscale train: " << w.name << " under PyTorch DDP (" << env.fingerprint() << "), " << ranks << " rank(s), batch "
            << w.batch_per_gpu << " per rank: iteration " << format_time(s.iteration_s.median) << " (median; p95 over ranks "
            << format_time(s.iteration_s.p95) << "), " << std::fixed << std::setprecision(0) << s.samples_per_s << " samples/s\n";
  std::cout.unsetf(std::ios::floatfield);
  for (const auto& [name, t] : s.op_s) std::cout << "  " << std::left << std::setw(16) << name << std::right << format_time(t) << "\n";
}

// An interpreter with torch imported and its gloo group up: about 240 MB of
// resident memory a rank (Debian's torch 1.13, measured on a 2-core AMD EPYC
// Zen 4 VM when issue 55 was filed: 1,000 ranks tried to start 1,000 of them).
constexpr double kTorchRankBytes = 240e6;

// Before any interpreter starts: no more ranks than this machine's cores x
// kMaxRanksPerCore (the rule calibrate and validate apply), and the ranks'
// memory (efficient-kan's own accounting plus the interpreter) within
// --memory-limit per rank and half of this machine's memory in all.
void check_torch_ranks(const Workload& w, int ranks, double limit) {
  const long cores = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
  if (ranks > cores * kMaxRanksPerCore)
    throw InputError("--ranks " + std::to_string(ranks) + ": kanscale would start " + std::to_string(ranks) + " Python interpreters on this machine, above its " +
                     std::to_string(cores) + " cores x " + std::to_string(kMaxRanksPerCore));
  const KanShape shape{w.widths, w.grid_size, w.spline_order};
  const double per_rank = efficient_kan_memory(shape, w.batch_per_gpu, w.ddp, 0, 0).peak_bytes + kTorchRankBytes;
  if (per_rank > limit)
    throw InputError(w.file + ": a PyTorch rank of this run needs about " + format_bytes(per_rank) + " (" +
                     std::to_string(kan_parameter_count(shape)) + " parameters, batch " + std::to_string(w.batch_per_gpu) +
                     ", and the interpreter's " + format_bytes(kTorchRankBytes) + "), above the limit of " + format_bytes(limit) +
                     " (raise it with --memory-limit)");
  const double memory = physical_memory_bytes();
  if (memory > 0 && per_rank * ranks > memory / 2)
    throw InputError("--ranks " + std::to_string(ranks) + ": " + std::to_string(ranks) + " PyTorch ranks of about " + format_bytes(per_rank) +
                     " each need " + format_bytes(per_rank * ranks) + ", above half this machine's " + format_bytes(memory));
}

// One PyTorch run's options, checked (its outputs too) before anything starts.
TorchTrainOptions torch_run_options(const Workload& w, const std::string& json, const std::string& backend, const TorchCli& t,
                                    double memory_limit_bytes, const std::string& cmdline) {
  check_torch_ranks(w, t.ranks, memory_limit_bytes);
  check_output_paths({{json, "--json"}, {t.profile, "--profile"}});  // (the same file twice is refused)
  check_outputs_spare_inputs({w.file}, {{json, "--json"}, {t.profile, "--profile"}});
  TorchTrainOptions o;
  o.workload = w;
  o.ranks = t.ranks;
  o.warmup = t.warmup;
  o.steps = t.steps > 0 ? t.steps : 30;
  if (t.epochs > 0) throw InputError("--epochs: a PyTorch run counts --steps (its batch is one tensor, no data set)");
  if (o.steps <= o.warmup)
    throw InputError("--steps " + std::to_string(o.steps) + ": must be more than --warmup " + std::to_string(o.warmup));
  if (!(t.target >= 0 && t.target < 1)) throw InputError("--target-rel-halfwidth: expected a fraction from 0 to below 1");
  o.target_rel_halfwidth = t.target;
  o.threads = t.threads;
  o.seed = t.seed;
  o.dist_backend = backend == "cuda" ? "nccl" : "gloo";
  o.profile = t.profile;
  o.command_line = cmdline;
  o.port_range = t.port_range;
  o.json = json;
  return o;
}

void check_torch_cli(const CommonOptions& c, const TorchCli& t, const po::variables_map& vm) {
  for (const char* key : {"csv", "trace", "checkpoint", "checkpoint-every", "resume", "inject-delay-us"})
    if (vm.count(key)) throw InputError(std::string("--") + key + ": not for implementation: pytorch (kanscale's own trainer only)");
  if (launched_by_mpirun())
    throw InputError(c.workload + ": implementation pytorch: kanscale starts the ranks itself (--ranks P), not under mpirun");
  if (t.ranks < 1 || t.ranks > 4096) throw InputError("--ranks: expected 1 to 4096, got " + std::to_string(t.ranks));
  if (t.warmup < 0) throw InputError("--warmup: must not be negative");
}

int train_pytorch(const Workload& w, const CommonOptions& c, const std::string& backend, const TorchCli& t, const po::variables_map& vm,
                  bool quiet, double memory_limit_bytes, const std::string& cmdline) {
  check_torch_cli(c, t, vm);
  TorchTrainOptions o = torch_run_options(w, c.json, backend, t, memory_limit_bytes, cmdline);
  free_port(o.port_range);  // a range with no free port fails before the interpreter starts
  o.python = resolve_python(t.python);
  const TorchEnv env = probe_torch(o.python);
  // the summary is printed from rank 0's file: a temporary one without --json,
  // removed however the run ends (base/process's ScratchDir)
  std::optional<ScratchDir> temp;
  if (c.json.empty()) {
    temp.emplace("kanscale-torch");
    o.json = temp->path() + "/summary.json";
  }
  // (printed from what rank 0 wrote, not read back from --json: a FIFO or a device reads back nothing)
  std::string summary;
  const int code = run_torch_train(o, env, &summary);
  if (code == 0 && !quiet) print_torch_summary(summary, o.json, w, o.ranks, env);
  return code;
}

// Several PyTorch workloads, each with its --json, in turn on one set of
// ranks: the interpreters' start-up and the process group's paid once.
int train_pytorch_batch(const std::vector<std::string>& workloads, const std::vector<std::string>& jsons, const CommonOptions& c,
                        const std::string& backend, const TorchCli& t, const po::variables_map& vm, bool quiet, double memory_limit_bytes,
                        const std::string& cmdline) {
  check_torch_cli(c, t, vm);
  if (!t.profile.empty()) throw InputError("--profile: one workload at a time");
  std::vector<TorchTrainOptions> runs;
  std::vector<std::pair<std::string, std::string>> outputs;
  for (std::size_t i = 0; i < workloads.size(); ++i) {
    const Workload w = load_workload(workloads[i]);
    if (w.implementation != Implementation::pytorch)
      throw InputError(workloads[i] + ": key 'implementation': several workloads run together only of one implementation (the first is pytorch)");
    TorchCli ti = t;
    if (!vm.count("seed")) ti.seed = w.seed;  // each workload's own seed
    runs.push_back(torch_run_options(w, jsons[i], backend, ti, memory_limit_bytes, cmdline));
    outputs.emplace_back(jsons[i], "--json");
  }
  check_output_paths(outputs);  // (no --json twice)
  free_port(t.port_range);
  const std::string python = resolve_python(t.python);
  for (auto& o : runs) o.python = python;
  const TorchEnv env = probe_torch(python);
  const int code = run_torch_train_batch(runs, env);
  if (code == 0 && !quiet)
    std::cout << "kanscale train: " << runs.size() << " PyTorch DDP runs on one process group of " << t.ranks << " rank(s) (" << env.fingerprint()
              << "), each summary in its --json\n";
  return code;
}

}  // namespace

namespace {

// The options of kanscale's own trainer (and those PyTorch runs share).
struct TrainCli {
  std::vector<std::string> workloads, jsons;  // pytorch: several, paired in order, run in turn on one process group
  std::string backend = "cpu", checkpoint, resume, memory_limit = "64GiB";
  long long steps = -1, checkpoint_every = 0;
  int epochs = -1, threads = 1;
  double delay_us = 0;
  bool quiet = false;
};

void add_train_options(po::options_description& desc, CommonOptions& c, TrainCli& t) {
  desc.add_options()
      ("help,h", "show this help")
      ("workload", po::value(&t.workloads)->value_name("FILE")->composing(),
       "workload YAML (configs/workloads/); several, each with its --json, run in turn on one set of ranks")
      ("backend", po::value(&t.backend)->default_value(t.backend), "cpu (MPI between ranks under mpirun) | cuda")
      ("steps", po::value(&t.steps)->value_name("N"), "optimizer steps in all (default: the workload's epochs)")
      ("epochs", po::value(&t.epochs)->value_name("E"), "epochs (overrides the workload's)")
      ("threads", po::value(&t.threads)->default_value(t.threads), "CPU threads per rank")
      ("seed", po::value(&c.seed)->value_name("S"), "random seed (default: the workload's)")
      ("json", po::value(&t.jsons)->value_name("FILE")->composing(), "per-iteration records and the summary as JSON")
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

void check_train_flags(CommonOptions& c, const TrainCli& t, const po::variables_map& vm) {
  if (t.workloads.empty()) throw InputError("missing required option --workload");
  if (t.workloads.size() > 1 && t.jsons.size() != t.workloads.size())
    throw InputError("--workload: " + std::to_string(t.workloads.size()) + " workloads need as many --json, one each (got " +
                     std::to_string(t.jsons.size()) + ")");
  if (t.workloads.size() == 1 && t.jsons.size() > 1) throw InputError("--json: one workload, one --json");
  c.workload = t.workloads.front();
  c.json = t.jsons.empty() ? "" : t.jsons.front();
  if (t.backend != "cpu" && t.backend != "cuda") throw InputError("--backend: expected cpu or cuda, got \"" + t.backend + "\"");
  check_threads(t.threads, "--threads");
  if ((vm.count("steps") && t.steps < 1) || (vm.count("epochs") && t.epochs < 1))
    throw InputError(std::string(t.steps < 1 && vm.count("steps") ? "--steps" : "--epochs") + ": must be at least 1");
  if (!(t.delay_us >= 0 && t.delay_us <= 1e9)) throw InputError("--inject-delay-us: expected 0 to 1e9 microseconds");
  if (t.backend == "cuda" && t.delay_us > 0) throw InputError("--inject-delay-us: only the cpu backend injects delays");
  if (t.checkpoint_every < 0) throw InputError("--checkpoint-every: must not be negative");
}

TrainOptions kanscale_run_options(const Workload& w, const CommonOptions& c, const TrainCli& t, std::uint64_t seed, const std::string& cmdline) {
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
  return o;
}

int train_kanscale(const Workload& w, const CommonOptions& c, const TrainCli& t, double memory_limit_bytes, std::uint64_t seed,
                   const std::string& cmdline) {
  check_train_memory(w, t.steps, t.epochs, memory_limit_bytes, c.workload, !c.trace.empty());
  return train_on_ranks({kanscale_run_options(w, c, t, seed, cmdline)}, t.backend);
}

// Several workloads of kanscale's own trainer, each with its --json, in
// turn under one mpirun (calibrate's live runs of a rank count and
// transport): every input and output checked before the first starts.
int train_kanscale_batch(const CommonOptions& c, const TrainCli& t, const po::variables_map& vm, double memory_limit_bytes,
                         const std::string& cmdline) {
  for (const char* key : {"csv", "trace", "checkpoint", "checkpoint-every", "resume"})
    if (vm.count(key)) throw InputError(std::string("--") + key + ": one workload at a time");
  std::vector<TrainOptions> runs;
  std::vector<std::pair<std::string, std::string>> outputs;
  for (std::size_t i = 0; i < t.workloads.size(); ++i) {
    const Workload w = load_workload(t.workloads[i]);
    if (w.implementation != Implementation::kanscale)
      throw InputError(t.workloads[i] + ": key 'implementation': several workloads run together only of one implementation (the first is kanscale's)");
    check_train_memory(w, t.steps, t.epochs, memory_limit_bytes, t.workloads[i], false);
    CommonOptions ci = c;
    ci.json = t.jsons[i];
    runs.push_back(kanscale_run_options(w, ci, t, vm.count("seed") ? parse_seed(c.seed) : w.seed, cmdline));
    outputs.emplace_back(t.jsons[i], "--json");
  }
  check_output_paths(outputs);  // (no --json twice)
  std::vector<OutputPath> spare;
  for (const auto& [path, what] : outputs) spare.push_back({path, what});
  check_outputs_spare_inputs(t.workloads, spare);
  return train_on_ranks(runs, t.backend);
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
    if (t.workloads.size() > 1)
      return train_pytorch_batch(t.workloads, t.jsons, c, t.backend, torch, vm, t.quiet, memory_limit_bytes, cmdline);
    return train_pytorch(w, c, t.backend, torch, vm, t.quiet, memory_limit_bytes, cmdline);
  }
  check_kanscale_only(vm);
  if (t.workloads.size() > 1) return train_kanscale_batch(c, t, vm, memory_limit_bytes, cmdline);
  return train_kanscale(w, c, t, memory_limit_bytes, seed, cmdline);
}

// kanscale bench interference: under mpirun, the compute slowdown while
// all-reduces run on the same rank (the calibration's `interference`).

}  // namespace ks::cli
