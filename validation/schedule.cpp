#include "schedule.hpp"
#include "formats/config_files.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "formats/provenance.hpp"
#include "kanscale/build_info.hpp"
#include "measure/sweep_options.hpp"
#include "model/calibration_fit.hpp"
#include "formats/calibration_file.hpp"
#include "formats/measurement_records.hpp"
#include "model/limits.hpp"
#include "base/output_files.hpp"
#include "formats/yaml_reader.hpp"
#include "validation/calibration_live.hpp"
#include "base/process.hpp"
#include "base/progress_line.hpp"
#include "validation/site.hpp"
#include "validation/trace_calibration.hpp"
#include "measure/machine_info.hpp"
#include "base/data_dir.hpp"

namespace ks {

namespace {
std::string transport_tag(const std::string& t) { return t.empty() ? "default" : t; }
std::string kernels_file(int round) { return "results/kernels-r" + std::to_string(round) + ".json"; }
std::string allreduce_file(const std::string& t, int round) {
  return "results/allreduce-" + transport_tag(t) + "-r" + std::to_string(round) + ".json";
}
std::string broadcast_file(const std::string& t, int round) {
  return "results/broadcast-" + transport_tag(t) + "-r" + std::to_string(round) + ".json";
}
std::string runtime_file(int round) { return "results/runtime-1rank-r" + std::to_string(round) + ".json"; }
std::string interference_file(int round) { return "results/interference-r" + std::to_string(round) + ".json"; }
std::string progress_file(const std::string& t, int round) {
  return "results/progress-" + transport_tag(t) + "-r" + std::to_string(round) + ".json";
}
std::string torch_ops_file(int round) { return "results/torch-ops-r" + std::to_string(round) + ".json"; }
// a GPU plan's profiled runs: each shape's workload, and per round its trace and steps
std::string profile_workload(std::size_t c) { return "cases/profile" + std::to_string(c) + ".yaml"; }
std::string profile_trace(std::size_t c, int round) { return "results/profile-c" + std::to_string(c) + "-r" + std::to_string(round) + ".json"; }
std::string profile_steps(std::size_t c, int round) {
  return "results/profile-c" + std::to_string(c) + "-r" + std::to_string(round) + "-steps.json";
}
}  // namespace

std::string case_file(std::size_t c) { return "cases/case" + std::to_string(c) + ".yaml"; }
std::string live_cal_workload(std::size_t c) { return "cases/livecal" + std::to_string(c) + ".yaml"; }
std::string live_cal_file(std::size_t c, int round) {
  return "results/livecal-c" + std::to_string(c) + "-r" + std::to_string(round) + ".json";
}

std::string live_file(std::size_t c, int round) { return "results/live-c" + std::to_string(c) + "-r" + std::to_string(round) + ".json"; }
std::string trace_file(std::size_t c) { return "results/trace-c" + std::to_string(c) + ".json"; }
std::string calibration_out(const std::string& t) { return "results/calibration-" + transport_tag(t) + ".yaml"; }

// The case whose live and simulated timelines the report shows side by
// side: the judged multi-rank case with the most communication per sample.
std::size_t timeline_case(const ValidationPlan& p) {
  std::size_t best = 0;
  double best_ratio = -1;
  for (std::size_t i = 0; i < p.cases.size(); ++i) {
    const auto& c = p.cases[i];
    if (c.oversubscribed) continue;
    double params = 0;
    for (std::size_t l = 0; l + 1 < c.widths.size(); ++l) params += static_cast<double>(c.widths[l] * c.widths[l + 1]);
    const double ratio = (c.ranks > 1 ? 1e6 : 0) + params * (c.grid_size + p.spline_order) / static_cast<double>(c.batch);
    if (ratio > best_ratio) {
      best_ratio = ratio;
      best = i;
    }
  }
  return best;
}

namespace {
// A sweep job's arguments: the plan's options as words (never through a
// shell), then what the schedule sets.
std::vector<std::string> sweep_args(const std::string& op, const std::string& options, const ValidationPlan& p,
                                    const std::string& json) {
  std::vector<std::string> args = {"measure", op};
  for (auto& w : split_words(options)) args.push_back(w);
  if (p.implementation == "pytorch")  // through torch.distributed: kanscale starts the ranks
    args.insert(args.end(), {"--backend", p.backend == "cuda" ? "torch-nccl" : "gloo", "--ranks", std::to_string(p.measure.ranks), "--json", json});
  else
    args.insert(args.end(), {"--backend", p.backend == "cuda" ? "nccl" : "mpi", "--json", json});
  return args;
}

// A GPU node's pytorch plan: each shape's profiled 1-GPU run (train
// --profile: the trace calibrate --from-trace reads), NCCL's all-reduce
// through torch.distributed on the plan's GPUs (more than one).
void torch_gpu_measure_jobs(const ValidationPlan& p, int r, std::vector<Job>& jobs) {
  for (std::size_t c = 0; c < p.measure.profile.size(); ++c)
    jobs.push_back({"profiled run " + p.measure.profile[c].label(), 1, "", false,
                    {"train", "--quiet", "--backend", "cuda", "--ranks", "1", "--threads", std::to_string(p.threads_per_rank), "--steps", "4",
                     "--workload", profile_workload(c), "--profile", profile_trace(c, r), "--json", profile_steps(c, r)},
                    profile_trace(c, r), true, p.threads_per_rank});
  if (p.measure.ranks > 1)
    jobs.push_back({"all-reduce sweep nccl", p.measure.ranks, "", false, sweep_args("allreduce", p.measure.allreduce, p, allreduce_file("nccl", r)),
                    allreduce_file("nccl", r), true, 1});
}

// A pytorch plan's measurements: PyTorch's op classes, gloo's sweeps.
void torch_measure_jobs(const ValidationPlan& p, int r, std::vector<Job>& jobs) {
  if (p.backend == "cuda") return torch_gpu_measure_jobs(p, r, jobs);
  Job ops{"torch ops", 1, "", false,
          {"measure", "torch-ops", "--plan", "torch-ops-plan.yaml", "--reps", std::to_string(p.measure.cap_samples), "--target-rel-halfwidth",
           std::to_string(p.measure.target_rel_halfwidth), "--json", torch_ops_file(r)},
          torch_ops_file(r), true, 1};
  jobs.push_back(ops);
  const int n = p.measure.ranks;
  jobs.push_back({"all-reduce sweep gloo", n, "", false, sweep_args("allreduce", p.measure.allreduce, p, allreduce_file("gloo", r)),
                  allreduce_file("gloo", r), true, 1});
  if (!p.measure.broadcast.empty())
    jobs.push_back({"broadcast sweep gloo", n, "", false, sweep_args("broadcast", p.measure.broadcast, p, broadcast_file("gloo", r)),
                    broadcast_file("gloo", r), true, 1});
  if (!p.measure.interference_bytes.empty())
    jobs.push_back({"interference gloo", n, "", false,
                    {"bench", "interference", "--backend", "gloo", "--ranks", std::to_string(n), "--workload", "interference-workload.yaml",
                     "--bytes", p.measure.interference_bytes, "--json", interference_file(r)},
                    interference_file(r), true, 1});
}
}  // namespace

std::vector<std::vector<Job>> make_schedule(const ValidationPlan& p) {
  std::vector<std::vector<Job>> rounds(static_cast<std::size_t>(p.rounds));
  const std::size_t shown = timeline_case(p);
  for (int r = 0; r < p.rounds; ++r) {
    auto& jobs = rounds[static_cast<std::size_t>(r)];
    if (p.measure.enabled && p.implementation == "pytorch") {
      torch_measure_jobs(p, r, jobs);
    } else if (p.measure.enabled) {
      const int n = p.measure.ranks;
      jobs.push_back({"kernels", n, "", false,
                      {"measure", "kernels", "--plan", "measure-plan.yaml", "--backend", p.backend, "--target-rel-halfwidth",
                       std::to_string(p.measure.target_rel_halfwidth), "--json", kernels_file(r)},
                      kernels_file(r)});
      // (at most the kernel plan's own repeats, unless the plan sets cap_samples:
      // each cold repetition first evicts 64 MiB of caches, which a larger cap multiplies)
      if (p.measure.cap_samples_given)
        jobs.back().args.insert(jobs.back().args.end() - 2, {"--repeat", std::to_string(std::min(p.measure.cap_samples, 1000))});
      // later rounds: classes the earlier rounds already predict, at every other shape
      if (r > 0 && p.measure.skip_shapes_under > 0) {
        std::string earlier;
        for (int e = 0; e < r; ++e) earlier += (e ? "," : "") + kernels_file(e);
        jobs.back().args.insert(jobs.back().args.end() - 2, {"--skip-from", earlier, "--skip-under", std::to_string(p.measure.skip_shapes_under)});
      }
      if (n > 1) {
        // the runtime's own memory at one rank per node (the kernels above
        // give it at n): one shape, only its runtime memory is used; a
        // resident size, not a time: measured in the first round only
        if (r == 0)
          jobs.push_back({"runtime memory, 1 rank", 1, "", false,
                        {"measure", "kernels", "--plan", "measure-plan.yaml", "--max-shapes", "1", "--backend", p.backend, "--json",
                         runtime_file(r)},
                        runtime_file(r)});
        for (const auto& t : p.measure.transports) {
          jobs.push_back({"all-reduce sweep " + transport_tag(t), n, t, false,
                          sweep_args("allreduce", p.measure.allreduce, p, allreduce_file(t, r)), allreduce_file(t, r)});
          // DDP broadcasts the module's buffers every iteration: its own sweep
          if (!p.measure.broadcast.empty())
            jobs.push_back({"broadcast sweep " + transport_tag(t), n, t, false,
                            sweep_args("broadcast", p.measure.broadcast, p, broadcast_file(t, r)), broadcast_file(t, r)});
          // how far a non-blocking all-reduce gets while the ranks compute
          if (!p.measure.progress_sizes.empty() && p.backend == "cpu")
            jobs.push_back({"progress " + transport_tag(t), n, t, false,
                            {"bench", "progress", "--sizes", p.measure.progress_sizes, "--json", progress_file(t, r)}, progress_file(t, r)});
        }
        if (!p.measure.interference_bytes.empty() && p.backend == "cpu")
          jobs.push_back({"interference", n, "", false,
                          {"bench", "interference", "--workload", "interference-workload.yaml", "--bytes", p.measure.interference_bytes,
                           "--json", interference_file(r)},
                          interference_file(r)});
      }
    }
    // live runs on the calibration's own shapes (calibration_live): kanscale's
    // trainer, or PyTorch DDP jobs that kanscale starts, with the command line
    // of the cases (their threads per rank too)
    const bool torch = p.implementation == "pytorch";
    auto train_args = [&](const std::string& workload, const std::string& json, int ranks) {
      std::vector<std::string> args = {"train", "--quiet", "--backend", p.backend, "--workload", workload, "--steps", std::to_string(p.steps),
                                       "--threads", std::to_string(p.threads_per_rank), "--json", json};
      if (torch) args.insert(args.end(), {"--ranks", std::to_string(ranks)});
      return args;
    };
    if (p.measure.enabled) {
      // Every run of a rank count in turn on one set of ranks, each run's
      // file written as it ends: PyTorch's on one process group (the
      // interpreters' torch import and gloo's start-up paid once a round,
      // not once a run), each until its median step is known (the stopping
      // rule); kanscale's trainer under one mpirun per transport too (its
      // start-up and MPI_Init paid once a round).
      std::map<std::tuple<int, std::string, bool>, std::size_t> group, runs;  // ranks, transport, oversubscribed -> its job, its runs
      for (std::size_t c = 0; c < p.measure.live.size(); ++c) {
        const auto& lc = p.measure.live[c];
        const auto key = torch ? std::make_tuple(lc.ranks, std::string(), false) : std::make_tuple(lc.ranks, lc.transport, lc.oversubscribed);
        if (!group.count(key)) {
          group[key] = jobs.size();
          std::vector<std::string> args = {"train", "--quiet", "--backend", p.backend, "--threads", std::to_string(p.threads_per_rank), "--steps"};
          if (torch)
            args.insert(args.end(), {std::to_string(2 + p.measure.cap_samples), "--ranks", std::to_string(lc.ranks), "--target-rel-halfwidth",
                                     std::to_string(p.measure.target_rel_halfwidth)});
          else
            args.push_back(std::to_string(p.steps));
          jobs.push_back({"calibration runs np" + std::to_string(lc.ranks) + (torch || lc.transport.empty() ? "" : " " + transport_tag(lc.transport)),
                          lc.ranks, lc.transport, lc.oversubscribed, args, "", torch, p.threads_per_rank});
        }
        ++runs[key];
        Job& j = jobs[group[key]];
        j.args.insert(j.args.end(), {"--workload", live_cal_workload(c), "--json", live_cal_file(c, r)});
        j.output = live_cal_file(c, r);  // (the last run's: the job is done when it is)
        j.oversubscribed = j.oversubscribed || lc.oversubscribed;
      }
      for (const auto& [key, at] : group) jobs[at].what += " (" + std::to_string(runs[key]) + " runs)";
    }
    for (std::size_t c = 0; c < p.cases.size(); ++c) {
      const auto& vc = p.cases[c];
      std::vector<std::string> args = train_args(case_file(c), live_file(c, r), vc.ranks);
      // the live timeline comes from kanscale's trainer (a PyTorch run's profile has no simulator lanes)
      if (r == 0 && c == shown && !torch) args.insert(args.end(), {"--trace", trace_file(c)});
      Job job{vc.label(), vc.ranks, vc.transport, vc.oversubscribed, args, live_file(c, r), torch, p.threads_per_rank};
      jobs.push_back(job);
    }
  }
  return rounds;
}

namespace {
std::string case_workload(const ValidationCase& c, const ValidationPlan& p, int index) {
  std::ostringstream w;
  w << "# " << c.label() << " (written by kanscale validate from " << p.file << ")\n"
    << "name: case" << index << "\nkan:\n  widths: [";
  for (std::size_t i = 0; i < c.widths.size(); ++i) w << (i ? ", " : "") << c.widths[i];
  w << "]\n  grid_size: " << c.grid_size << "\n  spline_order: " << p.spline_order << "\ntask: teacher\nbatch_per_gpu: " << c.batch
    << "\ndataset_size: " << c.batch * c.ranks * (p.steps + 2) << "\nseed: 11\nimplementation: " << p.implementation
    << "\nddp:\n  bucket_cap: \""
    << static_cast<long long>(c.bucket_cap_bytes) << "B\"\n  first_bucket: \""
    << static_cast<long long>(std::min(c.bucket_cap_bytes, 1048576.0)) << "B\"\n";
  return w.str();
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

void prepare_dir(const ValidationPlan& p, const std::string& dir) {
  record_outputs(dir, {});  // the marker first: an interrupted run leaves a directory kanscale knows as its own
  std::error_code ec;
  if (!p.cases.empty() || !p.measure.live.empty()) std::filesystem::create_directories(dir + "/cases", ec);
  if (!ec) std::filesystem::create_directories(dir + "/results", ec);
  if (ec) throw std::runtime_error(dir + ": cannot create directory: " + ec.message());
  std::vector<std::pair<std::string, std::string>> files;
  // what --collect checks the directory against: the plan's text and each
  // case's workload, as digests, with each case's label, ranks and steps
  nlohmann::json record = {{"plan", p.file}, {"plan_digest", content_digest(slurp(resolve_given_path(p.file)))}, {"steps", p.steps},
                           {"cases", nlohmann::json::array()}};
  for (std::size_t i = 0; i < p.cases.size(); ++i) {
    const std::string file = case_file(i), text = case_workload(p.cases[i], p, static_cast<int>(i));
    record["cases"].push_back({{"label", p.cases[i].label()}, {"file", file}, {"digest", content_digest(text)}, {"ranks", p.cases[i].ranks}});
    files.emplace_back(dir + "/" + file, text);
  }
  files.emplace_back(dir + "/" + kEmittedRecord, record.dump(1) + "\n");
  for (std::size_t i = 0; i < p.measure.live.size(); ++i)
    files.emplace_back(dir + "/" + live_cal_workload(i), case_workload(p.measure.live[i], p, static_cast<int>(i)));
  for (std::size_t i = 0; i < p.measure.profile.size(); ++i)
    files.emplace_back(dir + "/" + profile_workload(i), case_workload(p.measure.profile[i], p, static_cast<int>(i)));
  if (p.measure.enabled && !p.measure.torch_ops_plan.empty()) {
    files.emplace_back(dir + "/torch-ops-plan.yaml", slurp(p.measure.torch_ops_plan));
    if (!p.measure.interference_bytes.empty())
      files.emplace_back(dir + "/interference-workload.yaml", slurp(shipped_path("configs/workloads/interference-pytorch.yaml")));
  } else if (p.measure.enabled && p.implementation != "pytorch") {
    files.emplace_back(dir + "/measure-plan.yaml", slurp(p.measure.kernels_plan));
    files.emplace_back(dir + "/interference-workload.yaml", slurp(shipped_path("configs/workloads/default.yaml")));
  }
  write_owned_files(dir, files);
}

namespace {
// Open MPI refuses to run as root without these (CI and containers run as root).
const std::vector<std::string> kRootEnv = {"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"};

// Whether a job starts under mpirun (here, or in an emitted mpirun script).
// One rank does too, as under srun, so that every job has MPI started (its
// memory is the runtime's); not kanscale train's own PyTorch ranks, nor one
// rank of a build without MPI.
bool under_mpirun(const Job& j) { return !j.self_launched && !(j.ranks <= 1 && j.transport.empty() && !build::have_mpi); }

// How a job's ranks start here (mpirun, oversubscribed when asked): the
// words before the executable.
std::vector<std::string> launch_local(const Job& j) {
  if (!under_mpirun(j)) return {};
  std::vector<std::string> w = {"mpirun", "-np", std::to_string(j.ranks), "--oversubscribe"};
  for (const auto& [key, value] : transport_mca(j.transport)) w.insert(w.end(), {"--mca", key, value});
  return w;
}

// The words before the executable in an emitted script: the environment
// (`env VAR=value ...`, only where needed), then the launcher. An emitted
// job starts as many ranks as it has: --oversubscribe (mpirun) and
// --overcommit (srun) only for a case that oversubscribes on purpose; Open
// MPI's run-as-root switches only where the site runs as root (without a
// site: when the emitting user is root).
std::vector<std::string> emitted_launch(const Job& j, const Site& site, int per_node, bool gpus) {
  std::vector<std::string> env;
  if (site.run_as_root && !j.self_launched && site.launcher == "mpirun") env.insert(env.end(), kRootEnv.begin(), kRootEnv.end());
  std::vector<std::string> w;
  if (site.launcher == "srun") {
    for (const auto& [key, value] : transport_mca(j.transport)) env.push_back("OMPI_MCA_" + key + "=" + value);
    if (j.self_launched) {
      // kanscale train starts the PyTorch ranks itself, on one node; no MPI
      // (srun's PMI variables would read as an mpirun launch)
      w = {"srun", "--mpi=none", "--nodes=1", "--ntasks=1", "--cpus-per-task=" + std::to_string(j.ranks * j.threads_per_rank)};
    } else {
      const int nodes = j.oversubscribed ? 1 : (j.ranks + per_node - 1) / per_node;
      const int on_node = j.oversubscribed ? j.ranks : std::min(j.ranks, per_node);
      w = {"srun"};
      w.insert(w.end(), site.launcher_flags.begin(), site.launcher_flags.end());
      w.insert(w.end(), {"--nodes=" + std::to_string(nodes), "--ntasks=" + std::to_string(j.ranks), "--ntasks-per-node=" + std::to_string(on_node)});
      if (j.oversubscribed) w.push_back("--overcommit");
      // (an oversubscribed case has more tasks than GPUs: --overcommit covers CPUs only)
      if (gpus && site.gpu_binding == "per_task" && !j.oversubscribed) w.push_back("--gpus-per-task=1");
      if (site.cpus_per_task) w.push_back("--cpus-per-task=" + std::to_string(*site.cpus_per_task));
    }
  } else if (under_mpirun(j)) {
    w = {"mpirun", "-np", std::to_string(j.ranks)};
    if (j.oversubscribed) w.push_back("--oversubscribe");
    // more ranks than cores cannot each be bound to one: an oversubscribed
    // case drops the site's --bind-to and binds to nothing
    for (std::size_t k = 0; k < site.launcher_flags.size(); ++k) {
      const std::string& f = site.launcher_flags[k];
      if (j.oversubscribed && (f == "--bind-to" || f.rfind("--bind-to=", 0) == 0)) {
        if (f == "--bind-to") ++k;
        continue;
      }
      w.push_back(f);
    }
    if (j.oversubscribed) w.insert(w.end(), {"--bind-to", "none"});
    for (const auto& [key, value] : transport_mca(j.transport)) w.insert(w.end(), {"--mca", key, value});
  }
  if (!env.empty()) env.insert(env.begin(), "env");
  env.insert(env.end(), w.begin(), w.end());
  return env;
}

// Runs kanscale (or anything) in the run directory with its output in `log`
// (relative to dir); a non-zero exit is an error quoting the log's tail.
void run_in(const std::vector<std::string>& argv, const std::string& dir, const std::string& log, const std::string& what) {
  const int status = run_process({argv, dir, log, kRootEnv});
  if (status != 0) {
    std::string tail = slurp(dir + "/" + log);
    if (tail.size() > 600) tail = "..." + tail.substr(tail.size() - 600);
    throw std::runtime_error(what + ": the run failed (" + shell_words(argv) + "), exit status " + std::to_string(status) + ":\n" + tail);
  }
}

}  // namespace

namespace {
// What a job leaves in the run directory: its log, its output and every file its flags name.
std::vector<std::string> job_leaves(const Job& j) {
  std::vector<std::string> leaves = {"results/last-job.log", j.output};
  for (std::size_t i = 0; i + 1 < j.args.size(); ++i)
    for (const char* flag : {"--json", "--csv", "--trace", "--resume", "--checkpoint"})
      if (j.args[i] == flag) leaves.push_back(j.args[i + 1]);
  return leaves;
}
}  // namespace

void run_job(const Job& j, const std::string& dir, const std::string& exe) {
  std::vector<std::string> argv = launch_local(j);
  argv.push_back(exe);
  argv.insert(argv.end(), j.args.begin(), j.args.end());
  // listed before the job writes them: the run directory holds only what its marker lists
  record_outputs(dir, job_leaves(j));
  run_in(argv, dir, "results/last-job.log", j.what);
}

void check_local_ranks(const ValidationPlan& p, const std::vector<std::vector<Job>>& rounds) {
  int most = 0;
  for (const auto& r : rounds)
    for (const auto& j : r) most = std::max(most, j.ranks);
  const long cores = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
  const long limit = p.max_ranks > 0 ? p.max_ranks : cores * kMaxRanksPerCore;
  if (most > limit)
    throw InputError(p.file + ": a job would start " + std::to_string(most) + " ranks on this machine, above " +
                     (p.max_ranks > 0 ? "--max-ranks " + std::to_string(limit)
                                      : std::to_string(limit) + " (its " + std::to_string(cores) + " cores x " + std::to_string(kMaxRanksPerCore) +
                                            "); raise it with --max-ranks"));
}

void run_schedule(const std::vector<std::vector<Job>>& rounds, const std::string& dir, const std::string& exe) {
  std::size_t total = 0;
  for (const auto& r : rounds) total += r.size();
  Progress progress(total, "job");
  for (std::size_t r = 0; r < rounds.size(); ++r) {
    const std::string round = "round " + std::to_string(r + 1) + "/" + std::to_string(rounds.size());
    for (const auto& j : rounds[r]) {
      progress.starting(round + ", " + j.what);
      run_job(j, dir, exe);
      progress.finished(j.what, round);
    }
  }
  progress.close();
}


void check_sweep_options(const ValidationPlan& p) {
  if (!p.measure.enabled || p.measure.ranks < 2) return;
  // each sweep the rounds run, with its options: the all-reduce always, the
  // broadcast when the plan asks for it
  const std::pair<std::string, std::string> sweeps[] = {{"allreduce", p.measure.allreduce}, {"broadcast", p.measure.broadcast}};
  for (std::size_t i = 0; i < 2; ++i) {
    const auto& [op, text] = sweeps[i];
    if (i > 0 && text.empty()) continue;
    // the job's own arguments, through measure's own parser
    const auto args = sweep_args(op, text, p, "x.json");
    try {
      for (const auto& w : split_words(text)) {
        const std::string name = w.substr(0, w.find('='));
        for (const char* own : {"--json", "--csv", "--resume", "--backend", "--ranks", "--check-options", "--max-points", "--help", "-h"})
          if (name == own) throw InputError(name + " is set by the schedule, not by the plan");
      }
      const ParsedSweep parsed = parse_sweep_options(op, {args.begin() + 2, args.end()});
      if (parsed.help) throw InputError("the options print help instead of measuring");
      if (parsed.check_only) throw InputError("--check-options: the sweep would not measure");
    } catch (const InputError& e) {
      throw InputError(p.file + ": key 'calibration.measure." + op + "': \"" + text + "\": " + e.what());
    }
  }
}

// Slurm reads #SBATCH lines itself, not through a shell: the plan's name
// keeps its letters, digits, '.', '_' and '-'; anything else becomes '_'.
namespace {
std::string slurm_job_name(const std::string& name) {
  std::string s = "kanscale-validate-";
  for (unsigned char ch : name) s += std::isalnum(ch) || ch == '.' || ch == '_' || ch == '-' ? static_cast<char>(ch) : '_';
  return s;
}

}  // namespace

namespace {

// The site emit uses without --site: this host's mpirun and a Slurm batch
// job with srun, run as root only when the emitting user is; kanscale is
// this build's executable.
Site default_site(const std::string& scheduler, const std::string& exe) {
  Site s;
  s.name = "this host";
  s.scheduler = scheduler;
  s.launcher = scheduler == "slurm" ? "srun" : "mpirun";
  s.kanscale = exe;
  s.run_as_root = geteuid() == 0;
  return s;
}

// One job script: a header (#SBATCH lines for Slurm), the run directory,
// the modules, kanscale's command, then every job as a step that records
// its exit status in results/steps.tsv and lets the next one run; the
// script's own exit status is 1 when any step failed.
std::string job_script(const ValidationPlan& p, const std::vector<std::vector<Job>>& rounds, const Site& site, int per_node, int max_ranks,
                       const std::string& emitted_from) {
  const bool slurm = site.scheduler == "slurm", gpus = p.backend == "cuda";
  std::ostringstream o;
  o << "#!/usr/bin/env bash\n";
  if (slurm) {
    o << "#SBATCH --job-name=" << slurm_job_name(p.name) << "\n";
    if (!site.partition.empty()) o << "#SBATCH --partition=" << site.partition << "\n";
    if (!site.account.empty()) o << "#SBATCH --account=" << site.account << "\n";
    o << "#SBATCH --nodes=" << (max_ranks + per_node - 1) / per_node << "\n#SBATCH --ntasks-per-node=" << per_node << "\n";
    if (site.cpus_per_task) o << "#SBATCH --cpus-per-task=" << *site.cpus_per_task << "\n";
    if (gpus && site.gpu_binding == "per_task") o << "#SBATCH --gpus-per-task=1\n";
    o << "#SBATCH --time=" << site.time_limit << "\n";
  }
  o << emitted_from << "# Site: " << site.name << (site.file.empty() ? "" : " (" + site.file + ")") << ".\n"
    << "# Every step runs, a failed one too; each step's exit status goes to results/steps.tsv.\n"
    << "# Afterwards: kanscale validate " << p.file << " --collect <this directory> --out <report directory>\n"
    << "set -uo pipefail\n";
  // the run directory: where the script was submitted from (Slurm runs a
  // copy of it from its spool) or where it lies; KANSCALE_RUN_DIR overrides
  if (slurm)
    o << "cd \"${KANSCALE_RUN_DIR:-${SLURM_SUBMIT_DIR:-.}}\" || exit 1\n";
  else
    o << "cd \"${KANSCALE_RUN_DIR:-$(dirname \"$0\")}\" || exit 1\n";
  if (!site.scratch.empty())
    o << "case \"$PWD/\" in\n  " << scratch_shell_word(site.scratch) << "/*) ;;\n  *) echo \"warning: the run directory $PWD is not under the shared scratch\" "
      << scratch_shell_word(site.scratch) << " >&2 ;;\nesac\n";
  for (const auto& m : site.modules) o << (site.load_modules ? "" : "# ") << "module load " << m << "\n";
  if (!site.modules.empty() && !site.load_modules) o << "# (the module lines above are the site file's: uncomment and edit them for this cluster)\n";
  // the command is data to the shell: quoted on a line of its own, never expanded
  o << "KANSCALE_DEFAULT=" << shell_quote(site.kanscale) << "\nKANSCALE=\"${KANSCALE:-$KANSCALE_DEFAULT}\"\n"
    << "failed=0\n"
    << "step() {  # step N WHAT COMMAND...: runs it, records its exit status, goes on\n"
    << "  local n=$1 what=$2 rc\n"
    << "  shift 2\n"
    << "  echo \"step $n: $what\"\n"
    << "  \"$@\"\n"
    << "  rc=$?\n"
    << "  printf '%s\\t%s\\t%s\\n' \"$n\" \"$rc\" \"$what\" >> results/steps.tsv\n"
    << "  if [ \"$rc\" -ne 0 ]; then\n"
    << "    failed=$((failed + 1))\n"
    << "    echo \"step $n failed (exit status $rc): $what\" >&2\n"
    << "  fi\n"
    << "}\n"
    << "mkdir -p results\n"
    << "printf 'step\\texit_status\\tjob\\n' > results/steps.tsv\n";
  int n = 0;
  for (std::size_t r = 0; r < rounds.size(); ++r) {
    o << "\n# round " << r + 1 << "\n";
    for (const auto& j : rounds[r]) {
      const auto launch = emitted_launch(j, site, per_node, gpus);
      o << "step " << ++n << " " << shell_quote(j.what) << " " << (launch.empty() ? "" : shell_words(launch) + " ") << "\"$KANSCALE\" "
        << shell_words(j.args) << "\n";
    }
  }
  o << "\necho \"$failed of " << n << " step(s) failed (results/steps.tsv)\"\n"
    << "if [ \"$failed\" -gt 0 ]; then exit 1; fi\n";
  return o.str();
}

}  // namespace

void emit_validation(const ValidationPlan& p, const std::string& dir, const std::string& exe, const Site* site) {
  const std::string site_file = site ? site->file : "";
  for (const auto* text : {&p.file, &dir, &exe, &site_file})
    for (unsigned char ch : *text)
      if (ch < 0x20 || ch == 0x7f) throw InputError("validate --emit: the plan's path, the directory or the executable's path holds a control character; "
                         "it cannot go into a job script");
  const auto rounds = make_schedule(p);
  {  // the jobs run on the plan's cluster: no more ranks than it has GPUs (x kMaxRanksPerCore when oversubscribed on purpose)
    const Cluster c = load_cluster(p.cluster_file);
    const std::int64_t gpus = static_cast<std::int64_t>(c.nodes) * c.gpus_per_node;
    for (const auto& r : rounds)
      for (const auto& j : r)
        if (j.ranks > (j.oversubscribed ? gpus * kMaxRanksPerCore : gpus))
          throw InputError(p.file + ": " + j.what + " would start " + std::to_string(j.ranks) + " ranks, but cluster " + p.cluster_shown + " has " +
                           std::to_string(gpus) + " GPUs" + (j.oversubscribed ? " (oversubscribed: at most 16 a GPU)" : ""));
  }
  prepare_dir(p, dir);
  {  // what the scripts' jobs will leave is kanscale's too: a second --emit or --collect finds it listed
    std::vector<std::string> leaves = {"results/steps.tsv"};
    for (const auto& r : rounds)
      for (const auto& j : r)
        for (auto& l : job_leaves(j)) leaves.push_back(std::move(l));
    record_outputs(dir, leaves);
  }
  const Cluster cluster = load_cluster(p.cluster_file);
  const int per_node = p.gpus_per_node > 0 ? p.gpus_per_node : cluster.gpus_per_node;
  int max_ranks = 1;
  for (const auto& r : rounds)
    for (const auto& j : r) max_ranks = std::max(max_ranks, j.ranks);
  const std::string from = "# Written by kanscale validate --emit from " + p.file + " (" + describe(provenance()) + ").\n";
  std::vector<std::pair<std::string, std::string>> files;
  std::vector<std::string> scripts;
  std::ostringstream readme;
  readme << "kanscale validate: " << p.name << " (" << p.file << ")\n\n";
  if (!site || site->scheduler == "none") {
    const Site s = site ? *site : default_site("none", exe);
    files.emplace_back(dir + "/run-mpirun.sh", job_script(p, rounds, s, per_node, max_ranks, from));
    scripts.push_back("run-mpirun.sh");
    readme << "run-mpirun.sh     runs every round on this host with mpirun (or inside an allocation)\n";
  }
  if (!site || site->scheduler == "slurm") {
    const Site s = site ? *site : default_site("slurm", exe);
    files.emplace_back(dir + "/run-slurm.sbatch", job_script(p, rounds, s, per_node, max_ranks, from));
    scripts.push_back("run-slurm.sbatch");
    readme << "run-slurm.sbatch  every round as a Slurm batch job (srun per job; " << per_node
           << " ranks per node); submit it from this directory: cd DIR && sbatch run-slurm.sbatch\n";
  }
  readme << "cases/            the live cases' workloads\n"
         << "results/          where every job writes its JSON; steps.tsv: each step's exit status\n\n"
         << "A failed step does not stop the job; the script ends with exit status 1 when any failed.\n";
  if (site && !site->scratch.empty()) readme << "Put this directory on the site's shared scratch (" << site->scratch << ") before submitting.\n";
  readme << "Then: kanscale validate " << p.file << " --collect DIR --out REPORT_DIR (judges what is there; "
         << "an incomplete run is named so, never met)\n";
  files.emplace_back(dir + "/README.txt", readme.str());
  write_owned_files(dir, files);
  for (const auto& sc : scripts) chmod((dir + "/" + sc).c_str(), 0755);
}

namespace {
// The kernels rounds' skipping (measure kernels --skip-from), as each
// round's file recorded it: the classes timed at every other shape, with
// their held-out error over the rounds before.
std::string kernel_skip_report(const ValidationPlan& p, const std::string& dir) {
  if (p.measure.skip_shapes_under <= 0) return "";
  std::ostringstream o;
  o << "kernels: from round 2, a class whose fit over the earlier rounds predicted each left-out shape within " << p.measure.skip_shapes_under * 100
    << "% (mean) was timed at every other shape (skip_shapes_under)\n";
  for (int r = 1; r < p.rounds; ++r) {
    const std::string file = kernels_file(r);
    const nlohmann::json j = read_json_file(dir + "/" + file, "a kanscale measure kernels file");
    const char* key = "metadata.skipped_at_odd_shapes.classes";
    if (!j.is_object() || !j.contains("metadata") || !j["metadata"].is_object())
      throw InputError(file + ": not a kanscale measure kernels file (no metadata)");
    const nlohmann::json& m = j["metadata"];
    o << "  round " << r + 1 << ":";
    if (!m.contains("skipped_at_odd_shapes")) {
      o << " none\n";
      continue;
    }
    const nlohmann::json& sk = m["skipped_at_odd_shapes"];
    if (!sk.is_object() || !sk.contains("classes") || !sk["classes"].is_object())
      throw InputError(file + ": key '" + key + "': expected a map of class to held-out error");
    if (sk["classes"].empty()) o << " none";
    for (const auto& [cls, e] : sk["classes"].items()) {
      if (!e.is_number()) throw InputError(file + ": key '" + key + "." + cls + "': expected a number, got " + e.dump());
      o << " " << cls << " (" << std::fixed << std::setprecision(1) << e.get<double>() * 100 << "%)" << std::defaultfloat;
    }
    o << "\n";
  }
  return o.str();
}
}  // namespace

// Fits the calibration(s) from the rounds' microbenchmarks (the fit of
// kanscale fit, model/calibration_fit), each with its report beside it.
// Files are named relative to `dir` in the calibration, as the equivalent
// `kanscale fit` command run in `dir` names them (its header records that
// command).
void fit_measured(const ValidationPlan& p, const std::string& dir) {
  // a pytorch plan measures PyTorch's op classes (its one transport: gloo);
  // a kanscale plan kanscale's kernels and the runtime's memory
  // (a GPU node's: its op classes from its profiled runs' traces, its one transport nccl)
  const bool torch = p.implementation == "pytorch";
  const std::string kernel_skip = torch ? "" : kernel_skip_report(p, dir);
  for (const auto& t : p.measure.transports) {
    std::vector<std::string> kernels, runtime, collectives, interference, progress, torch_ops;
    for (int r = 0; r < p.rounds; ++r) {
      if (!p.measure.torch_ops_plan.empty()) torch_ops.push_back(torch_ops_file(r));
      else if (!torch) kernels.push_back(kernels_file(r));
    }
    if (p.measure.ranks > 1) {
      if (!torch)
        runtime.push_back(runtime_file(0));
      for (int r = 0; r < p.rounds; ++r) collectives.push_back(allreduce_file(t, r));
      if (!p.measure.broadcast.empty())
        for (int r = 0; r < p.rounds; ++r) collectives.push_back(broadcast_file(t, r));
      if (!p.measure.interference_bytes.empty() && p.backend == "cpu")
        for (int r = 0; r < p.rounds; ++r) interference.push_back(interference_file(r));
      if (!p.measure.progress_sizes.empty() && p.backend == "cpu")
        for (int r = 0; r < p.rounds; ++r) progress.push_back(progress_file(t, r));
    }
    const std::string name = p.name + "-" + transport_tag(t);
    std::string cmdline = "kanscale fit --name " + name + " --out " + calibration_out(t);
    auto list = [&](const char* flag, const std::vector<std::string>& files) {
      if (files.empty()) return;
      cmdline += std::string(" ") + flag;
      for (const auto& f : files) cmdline += " " + f;
    };
    list("--kernels", kernels);
    list("--runtime-memory", runtime);
    list("--collectives", collectives);
    list("--interference", interference);
    list("--progress", progress);
    list("--torch-ops", torch_ops);
    auto in_dir = [&](std::vector<std::string> files) {
      for (auto& f : files) f = dir + "/" + f;
      return files;
    };
    FitInputs in = read_fit_inputs(in_dir(kernels), in_dir(collectives), in_dir(interference), {}, in_dir(runtime), in_dir(progress),
                                   in_dir(torch_ops));
    // the profiled runs' traces, each read as calibrate --from-trace reads a user's (at 1 GPU, on the plan's cluster)
    if (!p.measure.profile.empty()) {
      const Cluster cluster = load_cluster(p.cluster_file);
      const Machine here = this_machine("", "");
      cmdline += "; op classes as kanscale calibrate --from-trace reads";
      for (int r = 0; r < p.rounds; ++r)
        for (std::size_t c = 0; c < p.measure.profile.size(); ++c) {
          TraceRecords tr = trace_records(dir + "/" + profile_trace(c, r), load_workload(dir + "/" + profile_workload(c)), cluster, 1);
          tr.ops.machine = here;
          in.torch_ops.push_back(std::move(tr.ops));
          cmdline += " " + profile_trace(c, r) + " (" + profile_workload(c) + ")";
        }
    }
    for (auto* records : {&in.kernels, &in.runtime_memory})
      for (auto& f : *records) f.path = f.path.substr(dir.size() + 1);
    for (auto& f : in.collectives) f.path = f.path.substr(dir.size() + 1);
    for (auto& f : in.interference) f.path = f.path.substr(dir.size() + 1);
    for (auto& f : in.progress) f.path = f.path.substr(dir.size() + 1);
    for (auto& f : in.torch_ops) f.path = f.path.substr(dir.size() + 1);
    const std::string report = "results/fit-report-" + transport_tag(t) + ".txt";
    CalibrationFit fit;
    try {
      fit = fit_calibration(in, name);
    } catch (const InputError& e) {
      write_owned_files(dir, {{dir + "/" + report, std::string(e.what()) + "\n"}});
      throw InputError(std::string("the fit failed on the rounds' measurements: ") + e.what());
    }
    fit.file.torch_host_has_launch = !p.measure.profile.empty();  // (the traced host ops launched their kernels)
    std::ostringstream live_report;
    if (!p.measure.live.empty()) fit_live_terms(p, dir, t, fit.file, live_report);
    write_owned_files(dir, {{dir + "/" + calibration_out(t), write_calibration(fit.file, fit_header(cmdline))},
                        {dir + "/" + report, fit.report + kernel_skip + live_report.str() + "wrote " + calibration_out(t) + "\n"}});
  }
}

std::string calibration_label(const ValidationPlan& p, const std::string& dir, const ValidationCase& c) {
  if (p.datasheet) return "the datasheet calibration of " + p.cluster_shown;
  // (a pytorch plan's cases name no MPI transport: its one calibration is gloo's)
  if (p.measure.enabled) return dir + "/" + calibration_out(c.ranks > 1 && !c.transport.empty() ? c.transport : p.measure.transports.front());
  if (!p.calibration_dir.empty()) {
    std::string t = c.ranks > 1 ? c.transport : "";
    for (const auto& o : p.cases)
      if (t.empty() && o.ranks > 1) t = o.transport;
    return p.calibration_dir + "/calibration-" + transport_tag(t) + ".yaml";
  }
  return p.calibration_shown;
}

}  // namespace ks
