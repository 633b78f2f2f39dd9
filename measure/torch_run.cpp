#include "torch_run.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/data_dir.hpp"
#include "base/output_files.hpp"
#include "base/process.hpp"
#include "common/error.hpp"
#include "formats/provenance.hpp"
#include "formats/yaml_reader.hpp"
#include "kanscale/build_info.hpp"
#include "model/kan_model.hpp"
#include "model/limits.hpp"

namespace ks {

namespace {

constexpr const char* kDefaultPython = "/usr/bin/python3";  // where Debian installs python3-torch

std::string python_path_env() {
  const char* old = std::getenv("PYTHONPATH");
  // kanscale's package (efficient-kan and the DDP entry point) ships in its data directory
  return "PYTHONPATH=" + shipped_path("python") + (old && *old ? std::string(":") + old : std::string());
}

}  // namespace

std::string resolve_python(const std::string& option) {
  std::string how = "--python";
  std::string path = option;
  if (path.empty()) {
    const char* env = std::getenv("KANSCALE_PYTHON");
    if (env && *env) {
      path = env;
      how = "KANSCALE_PYTHON";
    } else {
      path = kDefaultPython;
      how = "the default interpreter";
    }
  }
  struct stat st {};
  if (stat(path.c_str(), &st) != 0)
    throw InputError(how + " " + path + ": no such file (install python3 and python3-torch, or name an interpreter with --python or KANSCALE_PYTHON)");
  if (S_ISDIR(st.st_mode)) throw InputError(how + " " + path + ": a directory, expected a Python interpreter");
  if (access(path.c_str(), X_OK) != 0) throw InputError(how + " " + path + ": not executable, expected a Python interpreter");
  return path;
}

std::string TorchEnv::fingerprint() const {
  return "torch " + torch + ", numpy " + numpy + ", BLAS " + std::filesystem::path(blas).filename().string() + ", Python " + python_version;
}

TorchEnv probe_torch(const std::string& python) {
  // KANSCALE_PROBE_TIMEOUT_S: how long the interpreter may take to answer
  // (importing torch takes seconds on a slow machine; an interpreter that
  // never answers must not hang kanscale)
  double timeout_s = 120;
  if (const char* t = std::getenv("KANSCALE_PROBE_TIMEOUT_S"); t && *t) {
    char* end = nullptr;
    const double v = std::strtod(t, &end);
    if (!(end && *end == 0 && v > 0 && v <= 86400))
      throw InputError(std::string("KANSCALE_PROBE_TIMEOUT_S=") + t + ": expected seconds, more than 0 and at most 86400");
    timeout_s = v;
  }
  ScratchDir tmp("kanscale-probe");
  const std::string log_name = tmp.path() + "/probe.log";
  ProcessSpec spec;
  spec.argv = {python, "-m", "kanscale_torch.probe"};
  spec.log_path = log_name;
  spec.extra_env = {python_path_env(), "PYTHONDONTWRITEBYTECODE=1"};  // nothing written into the sources
  int code = 0;
  try {
    code = run_process_for(spec, timeout_s);
  } catch (const std::exception& e) {
    throw InputError(python + ": cannot run it (" + std::string(e.what()) + ")");
  }
  if (code == kTimedOut) {
    char secs[32];
    std::snprintf(secs, sizeof secs, "%g", timeout_s);
    throw InputError(python + ": the start-up probe (python -m kanscale_torch.probe) did not answer within " + std::string(secs) +
                     " s, and was stopped (is it a Python 3 with python3-torch? KANSCALE_PROBE_TIMEOUT_S sets the limit)");
  }
  std::ifstream in(log_name);
  std::string line, last, answer;
  const std::string prefix = "kanscale-probe: ";
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    last = line;
    if (line.compare(0, prefix.size(), prefix) == 0) answer = line.substr(prefix.size());
  }
  if (code == 3) throw InputError(last);  // "torch is not installed for PATH (install Debian's python3-torch)"
  if (code != 0) {
    // an interpreter that is not Python, or a broken torch: its last line says why
    throw InputError(python + " -m kanscale_torch.probe failed (exit " + std::to_string(code) + "): " +
                     (last.empty() ? std::string("no output") : last.substr(0, 200)) + " (is it a Python 3 with python3-torch?)");
  }
  if (answer.empty())
    throw InputError(python + " -m kanscale_torch.probe: no answer line (\"kanscale-probe: {...}\"); its last line: " +
                     (last.empty() ? std::string("none") : last.substr(0, 200)));
  TorchEnv e;
  e.python = python;
  try {
    const auto j = nlohmann::json::parse(answer);
    e.python_version = j.at("python").get<std::string>();
    e.torch = j.at("torch").get<std::string>();
    e.numpy = j.at("numpy").get<std::string>();
    e.blas = j.at("blas").get<std::string>();
    e.gloo = j.at("gloo").get<bool>();
    e.cuda = j.at("cuda").get<bool>();
  } catch (const std::exception&) {
    throw InputError(python + " -m kanscale_torch.probe: unexpected answer: " + answer.substr(0, 200));
  }
  return e;
}

int free_port(const std::string& range, const std::string& option) {
  int first = 0, last = 0;
  char dash = 0, extra = 0;
  std::istringstream in(range);
  if (!(in >> first >> dash >> last) || dash != '-' || (in >> extra) || first < 1024 || last > 65535 || first > last)
    throw InputError(option + " " + range + ": expected FIRST-LAST, ports from 1024 to 65535");
  // torch's TCPStore listens on every address, IPv6 first: the port must be
  // free on both wildcards (and so on the loopback)
  auto free_on = [](int family, int port) {
    const int s = socket(family, SOCK_STREAM, 0);
    if (s < 0) return family == AF_INET6;  // no IPv6 here: nothing to collide with
    bool ok = false;
    if (family == AF_INET) {
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(static_cast<std::uint16_t>(port));
      a.sin_addr.s_addr = htonl(INADDR_ANY);
      ok = bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    } else {
      sockaddr_in6 a{};
      a.sin6_family = AF_INET6;
      a.sin6_port = htons(static_cast<std::uint16_t>(port));
      a.sin6_addr = in6addr_any;
      ok = bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    }
    close(s);
    return ok;
  };
  for (int port = first; port <= last; ++port)
    if (free_on(AF_INET6, port) && free_on(AF_INET, port)) return port;
  throw InputError(option + " " + range + ": every port is in use (name a free range with " + option + ")");
}

std::vector<std::string> torch_train_args(const TorchTrainOptions& o) {
  const Workload& w = o.workload;
  std::string widths;
  for (auto x : w.widths) widths += (widths.empty() ? "" : ",") + std::to_string(x);
  std::ostringstream cap, first, lr;
  cap.precision(17);
  cap << w.ddp.bucket_cap_bytes;
  first.precision(17);
  first << w.ddp.first_bucket_bytes;
  lr.precision(17);
  lr << w.learning_rate;
  std::vector<std::string> a = {"--widths", widths, "--grid-size", std::to_string(w.grid_size), "--spline-order",
                                std::to_string(w.spline_order), "--batch", std::to_string(w.batch_per_gpu), "--steps",
                                std::to_string(o.steps), "--warmup", std::to_string(o.warmup), "--seed", std::to_string(o.seed),
                                "--learning-rate", lr.str(), "--first-bucket-bytes", first.str(), "--threads", std::to_string(o.threads),
                                "--backend", o.dist_backend, "--workload-name", w.name, "--workload-file", w.file};
  // only a cap the workload gives: torch 2 then makes it the first bucket's limit too (model/buckets)
  if (w.ddp.bucket_cap_given) a.insert(a.end(), {"--bucket-cap-bytes", cap.str()});
  if (o.target_rel_halfwidth > 0) a.insert(a.end(), {"--target", std::to_string(o.target_rel_halfwidth)});
  if (w.ddp.gradient_as_bucket_view) a.push_back("--gradient-as-bucket-view");
  if (w.ddp.find_unused_parameters) a.push_back("--find-unused-parameters");
  if (!w.ddp.broadcast_buffers) a.push_back("--no-broadcast-buffers");
  return a;
}

namespace {
// One process per rank of `python -m module args...` with the env
// rendezvous on a free port; when one fails the others are stopped. Returns
// 0, or 2 / 1 after naming the first failing rank on stderr.
//
// The ranks write their outputs (`outputs`: the option and the user's path)
// into a private temporary directory; kanscale then writes each through its
// own writer (base/output_files: a device or a FIFO written as it is, a link
// followed, a file replaced atomically), so a Python writer never replaces
// anything of the user's. The directory goes however the run ends.
// The ranks' outputs, each first written in a private directory (the user's
// path beside it), then copied through kanscale's own writer.
struct StagedOutputs {
  ScratchDir dir{"kanscale-torch"};
  std::vector<std::pair<std::string, std::string>> files;  // (temporary file, the user's path)
  std::string stage(const std::string& user_path) {
    files.emplace_back(dir.path() + "/output-" + std::to_string(files.size()), user_path);
    return files.back().first;
  }
};

int run_torch_ranks(const std::string& python, const std::string& module, const std::vector<std::string>& module_args, int ranks,
                    int threads, const std::string& port_range, const std::string& what, const StagedOutputs& staged,
                    std::string* first_output);

int run_torch_ranks(const std::string& python, const std::string& module, const std::vector<std::string>& module_args, int ranks,
                    int threads, const std::string& port_range, const std::string& what,
                    const std::vector<std::pair<std::string, std::string>>& outputs, std::string* first_output = nullptr) {
  StagedOutputs staged;
  std::vector<std::string> args = module_args;
  for (const auto& [option, path] : outputs)
    if (!path.empty()) args.insert(args.end(), {option, staged.stage(path)});
  return run_torch_ranks(python, module, args, ranks, threads, port_range, what, staged, first_output);
}

int run_torch_ranks(const std::string& python, const std::string& module, const std::vector<std::string>& module_args, int ranks,
                    int threads, const std::string& port_range, const std::string& what, const StagedOutputs& staged,
                    std::string* first_output) {
  const int port = free_port(port_range);
  std::vector<std::string> args = {python, "-m", module};
  args.insert(args.end(), module_args.begin(), module_args.end());
  std::vector<ProcessSpec> specs;
  for (int r = 0; r < ranks; ++r) {
    ProcessSpec s;
    s.argv = args;
    s.extra_env = {python_path_env(), "PYTHONDONTWRITEBYTECODE=1", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + std::to_string(port), "RANK=" + std::to_string(r),
                   "WORLD_SIZE=" + std::to_string(ranks), "LOCAL_RANK=" + std::to_string(r),
                   "OMP_NUM_THREADS=" + std::to_string(threads), "OPENBLAS_NUM_THREADS=" + std::to_string(threads)};
    specs.push_back(std::move(s));
  }
  // the ranks end within moments of each other (a barrier precedes the
  // end): one still running a minute after another ended is stuck
  constexpr double kGraceS = 60;
  int failed = -1;
  const auto codes = run_processes(specs, kGraceS, &failed);
  if (failed >= 0) {
    const int code = codes[static_cast<std::size_t>(failed)];
    std::cerr << what << ": PyTorch rank " << failed << " of " << ranks << " exited with status " << code
              << (ranks > 1 ? " (the other ranks were stopped)" : "") << "\n";
    return code == 2 ? 2 : 1;
  }
  for (std::size_t r = 0; r < codes.size(); ++r) {
    if (codes[r] == 0) continue;  // stopped: still running a minute after another rank ended
    std::cerr << what << ": PyTorch rank " << r << " of " << ranks << " was still running " << kGraceS
              << " s after another rank ended, and was stopped\n";
    return 1;
  }
  std::vector<std::pair<std::string, std::string>> files;
  for (const auto& [from, to] : staged.files) {
    std::ifstream in(from, std::ios::binary);
    if (!in) throw std::runtime_error(what + ": PyTorch rank 0 wrote no " + to + " (" + module + ")");
    std::ostringstream text;
    text << in.rdbuf();
    files.emplace_back(to, text.str());
  }
  if (first_output && !files.empty()) *first_output = files.front().second;
  write_files_atomic(files);
  return 0;
}

std::vector<std::string> provenance_args(const std::string& command_line) {
  return {"--command-line", command_line, "--provenance-json", to_json(provenance(command_line)).dump()};
}

// The interpreter probed, with gloo required (DDP's reducer and the sweeps run over it).
TorchEnv probe_gloo(const std::string& python) {
  TorchEnv env = probe_torch(python);
  if (!env.gloo) throw InputError(env.python + ": torch " + env.torch + " has no gloo backend");
  return env;
}

std::string number(double v) {
  std::ostringstream o;
  o.precision(17);
  o << v;
  return o.str();
}
}  // namespace

namespace {
// The interpreter's torch offers the backend the run asks for.
void check_dist_backend(const std::string& dist_backend, const TorchEnv& env) {
  if (dist_backend == "nccl" && !env.cuda)
    throw InputError("nccl: " + env.python + "'s torch " + env.torch + " sees no CUDA device (Debian's python3-torch is CPU-only; use gloo)");
  if (!env.gloo && dist_backend != "nccl") throw InputError(env.python + ": torch " + env.torch + " has no gloo backend");
}
}  // namespace

int run_torch_train(const TorchTrainOptions& o, const TorchEnv& env, std::string* summary_json) {
  check_dist_backend(o.dist_backend, env);
  auto args = torch_train_args(o);
  for (auto& a : provenance_args(o.command_line)) args.push_back(std::move(a));
  return run_torch_ranks(o.python, "kanscale_torch.ddp_train", args, o.ranks, o.threads, o.port_range, "kanscale train",
                         {{"--json", o.json}, {"--profile", o.profile}}, summary_json);
}

int run_torch_train_batch(const std::vector<TorchTrainOptions>& runs, const TorchEnv& env) {
  if (runs.empty()) return 0;
  const TorchTrainOptions& first = runs.front();
  check_dist_backend(first.dist_backend, env);
  StagedOutputs staged;
  nlohmann::json list = nlohmann::json::array();
  for (const auto& o : runs) {
    if (o.ranks != first.ranks || o.threads != first.threads || o.dist_backend != first.dist_backend)
      throw InputError("kanscale train: the runs of one process group need the same ranks, threads and backend");
    auto args = torch_train_args(o);
    for (auto& a : provenance_args(o.command_line)) args.push_back(std::move(a));
    args.insert(args.end(), {"--json", staged.stage(o.json)});
    if (!o.profile.empty()) args.insert(args.end(), {"--profile", staged.stage(o.profile)});
    list.push_back(args);
  }
  const std::string file = staged.dir.path() + "/runs.json";
  std::ofstream(file) << list.dump() << "\n";
  return run_torch_ranks(first.python, "kanscale_torch.ddp_train", {"--runs", file, "--backend", first.dist_backend}, first.ranks, first.threads,
                         first.port_range, "kanscale train", staged, nullptr);
}

TorchOpsPlan load_torch_ops_plan(const std::string& path) {
  YamlMap m = YamlMap::load_file(path);
  TorchOpsPlan p;
  p.file = path;
  p.name = m.string_opt("name").value_or(path);
  p.widths = m.integer_lists("widths", 1, 2);
  for (auto g : m.integer_list("grid_sizes", 1, 1, kMaxGridSize)) p.grid_sizes.push_back(static_cast<int>(g));
  p.spline_order = static_cast<int>(m.integer_opt("spline_order", 1, kMaxSplineOrder).value_or(3));
  p.batches = m.integer_list("batch_per_gpu", 1, 1, kMaxBatch);
  p.reps = static_cast<int>(m.integer_opt("reps", 3, 10000).value_or(20));
  p.warmup = static_cast<int>(m.integer_opt("warmup", 0, 10000).value_or(3));
  p.threads = static_cast<int>(m.integer_opt("threads", 1, 4096).value_or(1));
  for (const auto& w : p.widths)
    for (int g : p.grid_sizes)
      if (const std::string why = kan_size_problem(KanShape{w, g, p.spline_order}); !why.empty()) m.fail("widths", why);
  m.finish();
  return p;
}

int run_torch_ops(const TorchOpsPlan& p, const std::string& json, const std::string& python, const std::string& port_range,
                  const std::string& command_line) {
  probe_gloo(python);
  nlohmann::json shapes = nlohmann::json::array();
  for (const auto& w : p.widths)
    for (int g : p.grid_sizes)
      for (auto b : p.batches) shapes.push_back({{"widths", w}, {"grid_size", g}, {"spline_order", p.spline_order}, {"batch", b}});
  std::vector<std::string> args = {"--shapes", shapes.dump(), "--reps", std::to_string(p.reps), "--warmup", std::to_string(p.warmup),
                                   "--threads", std::to_string(p.threads), "--target", std::to_string(p.target_rel_halfwidth)};
  for (auto& a : provenance_args(command_line)) args.push_back(std::move(a));
  return run_torch_ranks(python, "kanscale_torch.op_bench", args, 1, p.threads, port_range, "kanscale measure torch-ops", {{"--json", json}});
}

int run_torch_interference(const TorchInterferenceOptions& o, const std::string& python, const std::string& port_range,
                           const std::string& command_line) {
  probe_gloo(python);
  std::string widths;
  for (auto w : o.widths) widths += (widths.empty() ? "" : ",") + std::to_string(w);
  std::vector<std::string> args = {"--widths", widths, "--grid-size", std::to_string(o.grid_size), "--spline-order", std::to_string(o.spline_order),
                                   "--batch", std::to_string(o.batch), "--bytes", number(o.bytes), "--repeat", std::to_string(o.repeat),
                                   "--threads", std::to_string(o.threads)};
  for (auto& a : provenance_args(command_line)) args.push_back(std::move(a));
  return run_torch_ranks(python, "kanscale_torch.interference", args, o.ranks, o.threads, port_range, "kanscale bench interference",
                         {{"--json", o.json}});
}

int run_torch_sweep(const SweepOptions& o, int ranks, const std::string& python, const std::string& port_range, const std::string& command_line,
                    const std::string& dist_backend) {
  check_dist_backend(dist_backend, probe_torch(python));
  std::vector<std::string> args = {"--op", o.op, "--min-bytes", number(o.min_bytes), "--max-bytes", number(o.max_bytes), "--factor", number(o.factor),
                                   "--iters", std::to_string(o.iters), "--warmup", std::to_string(o.warmup), "--root", std::to_string(o.root),
                                   "--backend", dist_backend};
  if (o.large_from > 0)
    args.insert(args.end(), {"--large-from", number(o.large_from), "--large-iters", std::to_string(o.large_iters), "--large-warmup",
                             std::to_string(o.large_warmup)});
  for (auto& a : provenance_args(command_line)) args.push_back(std::move(a));
  return run_torch_ranks(python, "kanscale_torch.collective_sweep", args, ranks, 1, port_range, "kanscale measure " + o.op, {{"--json", o.json}});
}

}  // namespace ks
