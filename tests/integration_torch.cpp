// kanscale's PyTorch side as users run it: the DDP entry point launched by
// `kanscale train` at 1 and 2 ranks for a few steps, the interpreter it
// finds (torch on OpenBLAS), and what it refuses before any rank starts.
// Needs Debian's python3-torch, python3-numpy and libopenblas0-pthread
// (scripts/install-deps.sh installs them).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "process.hpp"
#include "temp_dir.hpp"
#include "paths.hpp"

namespace {

// A small KAN: two layers, 6 gradients; a first bucket of 2 KiB splits them in two
const char* kWorkload = R"(name: torch-small
kan: {widths: [8, 16, 1], grid_size: 5, spline_order: 3}
batch_per_gpu: 8
dataset_size: 64
seed: 4
implementation: pytorch
ddp: {bucket_cap: "1MiB", first_bucket: "2KiB"}
)";

// A port the kernel hands out now (bound to port 0, then released).
int some_free_port() {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  const bool ok = bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  close(s);
  return ok ? ntohs(a.sin_port) : 29731;
}

}  // namespace

TEST_CASE("the interpreter kanscale runs torch with maps OpenBLAS, not the reference BLAS") {
  // torch.__config__ says BLAS_INFO=generic whichever libblas.so.3 is
  // selected: only the process's maps tell (shared/reference/pytorch-cpu.md)
  const ProcessResult r = run_process({"/usr/bin/python3", "-c",
                                       "import sys; sys.path.insert(0, '" + kSrc + "/measure/python'); "
                                       "from kanscale_torch import probe; probe.main()"},
                                      "", 60);
  CAPTURE(r.err);
  REQUIRE(r.exit_code == 0);
  // the answer line carries a prefix (a wrapper may print lines of its own)
  const std::string prefix = "kanscale-probe: ";
  REQUIRE(r.out.rfind(prefix, 0) == 0);
  const auto j = nlohmann::json::parse(r.out.substr(prefix.size()));
  CHECK(j["blas"].get<std::string>().find("libopenblas") != std::string::npos);
  CHECK(j["gloo"].get<bool>());
  CHECK(j["torch"].get<std::string>().rfind("1.13", 0) == 0);
}

TEST_CASE("kanscale train runs efficient-kan under PyTorch DDP at 1 and 2 ranks and writes train --json's summary") {
  TempDir d;
  const std::string w = d.write("w.yaml", kWorkload);
  for (int ranks : {1, 2}) {
    CAPTURE(ranks);
    const std::string json = d / ("run" + std::to_string(ranks) + ".json");
    std::vector<std::string> argv = {kExe, "train", "--workload", w, "--ranks", std::to_string(ranks), "--steps", "6", "--warmup", "2",
                                     "--json", json};
    argv.insert(argv.end(), {"--profile", d / (ranks == 2 ? "profile.json" : "profile1.json")});
    const ProcessResult r = run_process(argv, d.path, 240);
    CAPTURE(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.find("under PyTorch DDP") != std::string::npos);
    const auto j = nlohmann::json::parse(slurp(json));
    const auto& p = j["provenance"];
    CHECK(p["ranks"] == ranks);
    CHECK(p["backend"] == "pytorch-gloo");
    CHECK(p["implementation"] == "pytorch");
    CHECK(p["threads_per_rank"] == 1);
    CHECK(p["bucket_cap_bytes"].get<double>() == 1048576.0);
    // Debian's libopenblasp, or the MKL linked into PyPI's torch 2.x
    const std::string blas = p["blas"].get<std::string>();
    CHECK((blas.find("libopenblas") != std::string::npos || blas.rfind("MKL, linked into libtorch", 0) == 0));
    CHECK(p["machine"]["cores"].get<int>() >= 1);  // every measured figure names its machine
    CHECK(!p["machine"]["cpu_model"].get<std::string>().empty());
    // DDP's record of the gradients' ready order: layers last to first, inside
    // a layer spline_weight, spline_scaler, base_weight (parameters() order 0..5)
    CHECK(p["ddp"]["grad_ready_order"].get<std::vector<int>>() == std::vector<int>{4, 5, 3, 1, 2, 0});
    // the rebuilt buckets, in that order, with the workload's first bucket (C = G + k = 8):
    // layer 1 spline_weight 16x1x8x4 B = 512, scaler 64, base 64, then layer 0's
    // spline_weight 8x16x8x4 = 4096 closes the first bucket past 2 KiB at 4736 B;
    // layer 0's scaler 512 and base 512 make the second, 1024 B. torch 2.x
    // makes the first bucket bucket_cap (1 MiB) when that is given: one of 5760 B
    const bool torch2 = p["torch"].get<std::string>().rfind("1.", 0) != 0;
    CHECK(p["ddp"]["bucket_sizes_bytes"].get<std::vector<double>>() == (torch2 ? std::vector<double>{5760} : std::vector<double>{4736, 1024}));
    const auto& s = j["summary"];
    CHECK(s["steps"] == 6);
    const double it = s["iteration_time_s"]["median"].get<double>();
    CHECK(it > 0);
    CHECK(it < 10);  // seconds: a step of this KAN takes milliseconds
    CHECK(s["iteration_time_s"]["p95"].get<double>() >= it);
    CHECK(s["compute_time_s"]["median"].is_null());  // torch exposes no compute/communication split
    // samples/s = ranks x batch / the median iteration
    CHECK(s["samples_per_s"].get<double>() == doctest::Approx(ranks * 8 / it).epsilon(1e-9));
    CHECK(std::isfinite(s["final_loss"].get<double>()));
    // one record per step and rank; the warm-up steps flagged
    const auto& iters = j["iterations"];
    REQUIRE(iters.size() == static_cast<std::size_t>(6 * ranks));
    int first = 0;
    for (const auto& row : iters) first += row["first_iteration"].get<bool>() ? 1 : 0;
    CHECK(first == 2 * ranks);
    // the phases of the timed region, zero_grad through optimizer.step()
    std::vector<std::string> ops;
    for (const auto& o : s["ops"]) ops.push_back(o["op"].get<std::string>());
    CHECK(ops == std::vector<std::string>{"zero_grad", "forward", "loss", "backward", "optimizer_step"});
    double phases = 0;
    for (const auto& o : s["ops"]) phases += o["median_s"].get<double>();
    CHECK(phases == doctest::Approx(it).epsilon(0.5));  // medians of parts need not add up exactly
  }
  // --profile: rank 0's torch.profiler trace as users make it: schedule(wait=1, warmup=2,
  // active=3), so 3 steps marked ProfilerStep#N, each with the reducer's all-reduce
  const std::string trace = slurp(d / "profile.json");
  REQUIRE(!trace.empty());
  const auto t = nlohmann::json::parse(trace);
  int linears = 0, allreduce = 0, steps = 0;
  // torch 1.13 writes a bare list of events; later versions an object with traceEvents
  for (const auto& e : t.is_array() ? t : t["traceEvents"]) {
    const std::string name = e.value("name", "");
    linears += name == "aten::linear";
    allreduce += name.find("allreduce") != std::string::npos;
    steps += name.rfind("ProfilerStep#", 0) == 0;
  }
  CHECK(steps == 3);
  CHECK(linears == 4 * 3);  // two per layer (base and spline branch), two layers, 3 steps
  CHECK(allreduce >= 3);
  // and import torch-profile reads it as a user's own: every step maps onto the model's ops
  const ProcessResult imp = run_process({kExe, "import", "torch-profile", d / "profile.json", "--workload", w, "--ranks", "2"}, d.path, 60);
  CAPTURE(imp.err);
  CHECK(imp.exit_code == 0);
  CHECK(imp.out.find("iteration 3 of 3") != std::string::npos);

  // calibrate --from-trace: the 1-rank trace (one shape: per_element borrowed,
  // said so) becomes a calibration that simulate uses
  const ProcessResult cal = run_process({kExe, "calibrate", "--from-trace", d / "profile1.json", "--workload", w, "--out", d / "cal"}, d.path, 60);
  CAPTURE(cal.err);
  REQUIRE(cal.exit_code == 0);
  const std::string file = slurp(d / "cal/results/calibration-pytorch.yaml");
  CHECK(file.find("per_element from") != std::string::npos);
  CHECK(file.find("host_overhead:") != std::string::npos);
  CHECK(file.find("profile1.json") != std::string::npos);  // what it was fitted from
  const ProcessResult sim = run_process({kExe, "simulate", "--cluster", kSrc + "/configs/clusters/local-cpu-gloo.yaml", "--workload", w, "--gpus", "1",
                                         "--calibration", d / "cal/results/calibration-pytorch.yaml", "--json", d / "sim.json"},
                                        d.path, 60);
  CAPTURE(sim.err);
  REQUIRE(sim.exit_code == 0);
  const double predicted = nlohmann::json::parse(slurp(d / "sim.json"))["points"][0]["iteration_time_s"]["median"].get<double>();
  const double measured = nlohmann::json::parse(slurp(d / "run1.json"))["summary"]["iteration_time_s"]["median"].get<double>();
  // the traced shape itself, against the same job unprofiled: the profiler's
  // own cost (about 0.4 us for each of ~1,000 events a step, a third of the
  // step on the Zen 4 of 7 Dec 2026) taken off; 1.5x allows a noisy VM
  CHECK(predicted < 1.5 * measured);
  CHECK(predicted > measured / 1.5);
}

TEST_CASE("kanscale train with several workloads: one process group runs them in turn, each its own --json and peak memory") {
  TempDir d;
  const std::string small = d.write("small.yaml", kWorkload);
  // the same KAN at a batch 1,024 times larger: its activations raise its own peak
  std::string big_text = kWorkload;
  big_text.replace(big_text.find("batch_per_gpu: 8"), 16, "batch_per_gpu: 8192");
  const std::string big = d.write("big.yaml", big_text);
  const std::string a = d / "a.json", b = d / "b.json", c = d / "c.json";
  // a 0.9 target: a median known to +-90% after the minimum of 6 steady steps
  const ProcessResult r = run_process({kExe, "train", "--workload", small, "--json", a, "--workload", big, "--json", b, "--workload", small,
                                       "--json", c, "--ranks", "2", "--steps", "30", "--target-rel-halfwidth", "0.9"},
                                      d.path, 240);
  CAPTURE(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("3 PyTorch DDP runs on one process group of 2 rank(s)") != std::string::npos);
  std::vector<nlohmann::json> runs;
  for (const auto& f : {a, b, c}) runs.push_back(nlohmann::json::parse(slurp(f)));
  for (std::size_t i = 0; i < runs.size(); ++i) {
    CAPTURE(i);
    const auto& p = runs[i]["provenance"];
    CHECK(p["process"]["run_in_process"] == static_cast<int>(i + 1));
    CHECK(p["process"]["runs_in_process"] == 3);
    CHECK(p["process"]["startup_s"].get<double>() > 0);
    CHECK(p["steps_at_most"] == 30);
    // stopped by the rule: the 2 warm-up steps and 6 steady ones (a step's
    // spread on this machine is far within +-90%), at most 30
    const int steps = runs[i]["summary"]["steps"].get<int>();
    CHECK(steps >= 8);
    CHECK(steps < 30);
    CHECK(runs[i]["iterations"].size() == static_cast<std::size_t>(2 * steps));
  }
  CHECK(runs[1]["provenance"]["workload"]["file"] == big);
  // each run's own peak (reset between runs): the small run after the big one
  // holds less than it did (the big run's B-spline bases alone are
  // 8192 x 8 x 8 floats = 2 MiB in layer 0, with their gradients as much again)
  CHECK(runs[2]["summary"]["peak_rss_bytes"].get<double>() < runs[1]["summary"]["peak_rss_bytes"].get<double>());
  // refused before any rank starts: a --json short, a kanscale workload among them
  const ProcessResult short_json = run_process({kExe, "train", "--workload", small, "--json", a, "--workload", big}, d.path, 60);
  CHECK(short_json.exit_code == 2);
  CHECK(short_json.err == "kanscale: --workload: 2 workloads need as many --json, one each (got 1)\n");
}

TEST_CASE("a PyTorch run refuses, before any rank starts, an interpreter without torch and a port range with no free port") {
  TempDir d;
  const std::string w = d.write("w.yaml", kWorkload);
  SUBCASE("an interpreter without torch: exit 2, one line naming the package") {
    // Debian's python3 without its site directories: the standard library only
    const std::string py = d.write("python-no-site", "#!/bin/sh\nexec /usr/bin/python3 -S \"$@\"\n");
    REQUIRE(chmod(py.c_str(), 0755) == 0);
    const ProcessResult r = run_process({kExe, "train", "--workload", w, "--python", py}, d.path, 60);
    CHECK(r.exit_code == 2);
    CHECK(r.err == "kanscale: torch is not installed for /usr/bin/python3 (install Debian's python3-torch)\n");
  }
  SUBCASE("every port of the range taken") {
    const int s = socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(s >= 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;  // any free port, then hold it
    REQUIRE(bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    socklen_t len = sizeof a;
    REQUIRE(getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) == 0);
    REQUIRE(listen(s, 1) == 0);
    const std::string port = std::to_string(ntohs(a.sin_port));
    const ProcessResult r = run_process({kExe, "train", "--workload", w, "--port-range", port + "-" + port}, d.path, 60);
    close(s);
    CHECK(r.exit_code == 2);
    CHECK(r.err == "kanscale: --port-range " + port + "-" + port + ": every port is in use (name a free range with --port-range)\n");
  }
}

TEST_CASE("the interpreter from KANSCALE_PYTHON, and the entry point under mpirun with Open MPI's rank variables") {
  TempDir d;
  const std::string w = d.write("w.yaml", kWorkload);
  SUBCASE("KANSCALE_PYTHON names the interpreter when --python does not") {
    const ProcessResult r = run_process({"/usr/bin/env", "KANSCALE_PYTHON=" + (d / "none"), kExe, "train", "--workload", w}, d.path, 60);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("KANSCALE_PYTHON " + (d / "none") + ": no such file") != std::string::npos);
  }
  SUBCASE("mpirun -np 2 starts the entry point itself: RANK and WORLD_SIZE come from OMPI_COMM_WORLD_*") {
    const ProcessResult r = run_process(
        {"/usr/bin/env", "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1", "PYTHONPATH=" + kSrc + "/measure/python",
         "PYTHONDONTWRITEBYTECODE=1", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + std::to_string(some_free_port()), "mpirun", "-np", "2", "--oversubscribe", "-x",
         "PYTHONPATH", "-x", "PYTHONDONTWRITEBYTECODE", "-x", "MASTER_ADDR", "-x", "MASTER_PORT", "/usr/bin/python3", "-m",
         "kanscale_torch.ddp_train", "--widths", "8,16,1", "--batch", "4", "--steps", "4", "--json", d / "mpi.json"},
        d.path, 120);
    CAPTURE(r.err);
    REQUIRE(r.exit_code == 0);
    const auto j = nlohmann::json::parse(slurp(d / "mpi.json"));
    CHECK(j["provenance"]["ranks"] == 2);
    CHECK(j["iterations"].size() == 8u);  // 4 steps x 2 ranks
  }
}

TEST_CASE("validate --emit: PyTorch cases are started by kanscale train --ranks, never under mpirun; srun gives them one node") {
  TempDir d;
  std::string plan = slurp(kSrc + "/validation/plans/pytorch-smoke.yaml");
  plan.replace(plan.find("threads_per_rank: 1"), 19, "threads_per_rank: 2");
  d.write("plan.yaml", plan);
  const ProcessResult r = run_process({kExe, "validate", d / "plan.yaml", "--emit", d / "emit"}, kSrc, 60);
  CAPTURE(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string local = slurp(d / "emit/run-mpirun.sh"), slurm = slurp(d / "emit/run-slurm.sbatch");
  // 8 cases x 3 rounds, each one kanscale train with its ranks and threads
  int trains = 0;
  for (std::size_t at = local.find(" train "); at != std::string::npos; at = local.find(" train ", at + 1)) ++trains;
  CHECK(trains == 24);
  CHECK(local.find("mpirun") == std::string::npos);
  CHECK(local.find("--ranks 2") != std::string::npos);
  CHECK(local.find("--threads 2") != std::string::npos);
  // a 2-rank case: one task with 2 ranks x 2 threads of CPUs
  CHECK(slurm.find("srun --mpi=none --nodes=1 --ntasks=1 --cpus-per-task=4 ") != std::string::npos);
  CHECK(slurm.find("--ntasks=2") == std::string::npos);
}

TEST_CASE("kanscale calibrate with a pytorch plan: torch ops and gloo sweeps fitted into calibration-gloo.yaml, which simulate uses") {
  // a small plan (3 layer shapes x 2 batches, one round) to keep the suite short;
  // configs/calibrate/pytorch-cpu.yaml is the same with the full shapes and 3 rounds
  TempDir d;
  d.write("ops.yaml", "name: tiny\nwidths: [[4, 8, 1], [6, 10, 1], [10, 12, 1]]\ngrid_sizes: [3]\nbatch_per_gpu: [2, 8]\nreps: 5\nwarmup: 1\n");
  d.write("plan.yaml", "name: tiny-torch\ncluster: " + kSrc + "/configs/clusters/local-cpu-gloo.yaml\nimplementation: pytorch\n"
                       "calibration:\n  measure:\n    ranks: 2\n    torch_ops: " + (d / "ops.yaml") + "\n"
                       "    allreduce: \"-b 8 -e 64K -f 8 -n 3 -w 1\"\n    broadcast: \"-b 8 -e 64K -f 8 -n 3 -w 1\"\nrounds: 1\n");
  d.write("w.yaml", kWorkload);
  const ProcessResult r = run_process({kExe, "calibrate", d / "plan.yaml", "--out", d / "out"}, d.path, 300);
  CAPTURE(r.out);
  CAPTURE(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string cal = slurp(d / "out/results/calibration-gloo.yaml");
  // the torch the interpreter runs (calibrate prints it first: "...: torch 1.13.0a0, numpy ...")
  const auto at = r.out.find(": torch ");
  REQUIRE(at != std::string::npos);
  const std::string version = r.out.substr(at + 8, r.out.find(',', at) - at - 8);
  CHECK(cal.find("measured_with: \"torch " + version + ",") != std::string::npos);
  CHECK(cal.find("\"forward:bases\": {fixed:") != std::string::npos);
  CHECK(cal.find("\"reducer\"") != std::string::npos);
  CHECK(cal.find("  gloo:") != std::string::npos);
  const std::string report = slurp(d / "out/results/fit-report-gloo.txt");
  CHECK(report.find("held out: each shape left out in turn") != std::string::npos);
  CHECK(report.find("adam") != std::string::npos);
  // the calibration predicts the PyTorch workload on the gloo cluster; the kernel-only one is refused
  const ProcessResult sim = run_process({kExe, "simulate", "--cluster", kSrc + "/configs/clusters/local-cpu-gloo.yaml", "--workload",
                                         d / "w.yaml", "--calibration", d / "out/results/calibration-gloo.yaml", "--gpus", "1,2"},
                                        d.path, 60);
  CAPTURE(sim.err);
  CHECK(sim.exit_code == 0);
  CHECK(sim.out.find("ring") != std::string::npos);  // gloo's all-reduce
  const ProcessResult refused = run_process({kExe, "simulate", "--cluster", kSrc + "/configs/clusters/local-cpu.yaml", "--workload",
                                             d / "w.yaml", "--calibration", kSrc + "/configs/calibrations/local-cpu.yaml", "--gpus", "1,2"},
                                            d.path, 60);
  CHECK(refused.exit_code == 2);
  CHECK(refused.err.find("configs/calibrate/pytorch-cpu.yaml") != std::string::npos);
  // the same plan with cases: validate measures the calibration in its round
  // and predicts the PyTorch cases from it (a repeat-run verdict's runs then
  // each measure their own); no case shares a layer with the op plan
  d.write("cases.yaml", slurp(d / "plan.yaml") + "steps: 6\ncases:\n  ranks: [1, 2]\n  widths: [[5, 9, 1]]\n  grid_sizes: [3]\n"
                                                 "  batch_per_gpu: [4]\n  bucket_caps: [\"1MiB\"]\n");
  const ProcessResult v = run_process({kExe, "validate", d / "cases.yaml", "--out", d / "v"}, d.path, 300);
  CAPTURE(v.err);
  CHECK((v.exit_code == 0 || v.exit_code == 1));  // judged either way
  const auto j = nlohmann::json::parse(slurp(d / "v/results.json"));
  CHECK(j["cases"].size() == 2);
  CHECK(std::ifstream(d / "v/work/results/calibration-gloo.yaml").good());
  CHECK(slurp(d / "v/report.md").find("fitted from microbenchmarks measured in every round") != std::string::npos);
}

// ---- issue 55: nothing of the user's replaced, nothing left running ----

namespace {
// A process started in a session of its own (setsid), so that every process
// it starts, and theirs, can be found by the session id afterwards.
pid_t start_in_session(const std::vector<std::string>& argv, const std::string& cwd, const std::string& log) {
  const pid_t pid = fork();
  if (pid == 0) {
    setsid();
    if (chdir(cwd.c_str()) != 0) _exit(127);
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    const int null = open("/dev/null", O_RDONLY);
    if (null >= 0) dup2(null, 0);
    std::vector<char*> a;
    for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    execv(a[0], a.data());
    _exit(127);
  }
  return pid;
}

// The processes of session `sid` still alive (zombies aside), as "pid name".
std::vector<std::string> session_processes(pid_t sid) {
  std::vector<std::string> left;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "stat");
    std::string stat;
    std::getline(in, stat);
    const auto close_paren = stat.rfind(')');
    if (close_paren == std::string::npos) continue;
    std::istringstream rest(stat.substr(close_paren + 2));
    char state = 0;
    long ppid = 0, pgrp = 0, session = 0;
    rest >> state >> ppid >> pgrp >> session;
    if (session == sid && state != 'Z') left.push_back(name + " " + stat.substr(0, close_paren + 1));
  }
  return left;
}

bool wait_for_file(const std::string& path, double seconds) {
  for (int i = 0; i < static_cast<int>(seconds * 10); ++i) {
    if (std::filesystem::exists(path)) return true;
    usleep(100000);
  }
  return false;
}

// Stops `pid` with `sig` once `ready` exists (its ranks run), reaps it, and
// returns what of its session is left 5 s later.
std::vector<std::string> stop_and_look(pid_t pid, int sig, const std::string& ready, int* status) {
  if (!ready.empty()) wait_for_file(ready, 120);
  sleep(1);
  kill(pid, sig);
  waitpid(pid, status, 0);
  sleep(5);
  return session_processes(pid);
}
}  // namespace

TEST_CASE("SIGTERM and SIGKILL to kanscale during a 2-rank PyTorch train: no rank outlives it, no temporary directory stays") {
  std::set<std::string> before;
  for (const auto& e : std::filesystem::directory_iterator("/tmp")) before.insert(e.path().filename());
  auto new_scratch = [&] {
    std::vector<std::string> v;
    for (const auto& e : std::filesystem::directory_iterator("/tmp")) {
      const std::string n = e.path().filename();
      if (!before.count(n) && (n.rfind("kanscale-torch-", 0) == 0 || n.rfind("kanscale-probe-", 0) == 0)) v.push_back(n);
    }
    return v;
  };
  for (int sig : {SIGTERM, SIGKILL}) {
    CAPTURE(sig);
    TempDir d;
    const std::string w = d.write("w.yaml", kWorkload);
    // long enough to be running when the signal comes; --profile's trace
    // shows that the ranks got going (the profiler step is the first)
    const pid_t pid = start_in_session({kExe, "train", "--workload", w, "--ranks", "2", "--steps", "1000000", "--warmup", "1", "--port-range",
                                        std::to_string(some_free_port()) + "-65000"},
                                       d.path, d / "log.txt");
    // the ranks are up once the interpreters exist: wait for two python processes in the session
    for (int i = 0; i < 600; ++i) {
      int pythons = 0;
      for (const auto& p : session_processes(pid)) pythons += p.find("python") != std::string::npos;
      if (pythons >= 2) break;
      usleep(100000);
    }
    int status = 0;
    const auto left = stop_and_look(pid, sig, "", &status);
    CAPTURE(slurp(d / "log.txt"));
    CHECK(left.empty());
    for (const auto& p : left) MESSAGE("left running: " << p);
    if (sig == SIGTERM) CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM));
    // SIGTERM: the handler removed kanscale's temporary directories
    if (sig == SIGTERM) CHECK(new_scratch().empty());
  }
  // SIGKILL runs no handler: what it left, the next run removes (its pid is gone)
  TempDir d;
  const std::string w = d.write("w.yaml", kWorkload);
  const ProcessResult r = run_process({kExe, "train", "--workload", w, "--steps", "3", "--warmup", "1"}, d.path, 240);
  CHECK(r.exit_code == 0);
  const auto left = new_scratch();
  CHECK(left.empty());
  for (const auto& n : left) MESSAGE("left behind: /tmp/" << n);
}

TEST_CASE("SIGTERM and SIGKILL to kanscale calibrate: its jobs end with it") {
  for (int sig : {SIGTERM, SIGKILL}) {
    CAPTURE(sig);
    TempDir d;
    const pid_t pid = start_in_session({kExe, "calibrate", kSrc + "/configs/calibrate/ci.yaml", "--out", d / "cal"}, d.path, d / "log.txt");
    // its first job has started once the run directory holds its steps file
    int status = 0;
    const auto left = stop_and_look(pid, sig, d / "cal", &status);
    CAPTURE(slurp(d / "log.txt"));
    CHECK(left.empty());
    for (const auto& p : left) MESSAGE("left running: " << p);
  }
}

TEST_CASE("an interpreter that never answers the start-up probe: one line, within the limit") {
  TempDir d;
  const std::string sleeper = d.write("python", "#!/bin/sh\nsleep 600\n");
  REQUIRE(chmod(sleeper.c_str(), 0755) == 0);
  const std::string w = d.write("w.yaml", kWorkload);
  const ProcessResult r = run_process({"/usr/bin/env", "KANSCALE_PROBE_TIMEOUT_S=2", kExe, "train", "--workload", w, "--python", sleeper}, d.path, 60);
  CAPTURE(r.err);
  CHECK(r.exit_code == 2);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(r.err.find("did not answer within 2 s") != std::string::npos);
}

TEST_CASE("a wrapper interpreter that prints lines of its own around the probe's answer is accepted") {
  TempDir d;
  const std::string wrapper = d.write("python", "#!/bin/sh\necho 'a banner' >&2\n/usr/bin/python3 \"$@\"\nrc=$?\necho 'bye' >&2\nexit $rc\n");
  REQUIRE(chmod(wrapper.c_str(), 0755) == 0);
  const std::string w = d.write("w.yaml", kWorkload);
  const ProcessResult r = run_process({kExe, "train", "--workload", w, "--python", wrapper, "--steps", "4", "--warmup", "1"}, d.path, 240);
  CAPTURE(r.err);
  CHECK(r.exit_code == 0);
}

TEST_CASE("the PyTorch writers write through kanscale's: a symlink's target, a FIFO and a device stay what they are") {
  TempDir d;
  const std::string w = d.write("w.yaml", kWorkload);
  auto train = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> argv = {kExe, "train", "--workload", w, "--steps", "4", "--warmup", "1"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return run_process(argv, d.path, 240);
  };
  // a symbolic link: followed, its target replaced, the link stays a link
  const std::string target = d.write("target.json", "old");
  REQUIRE(symlink(target.c_str(), (d / "link.json").c_str()) == 0);
  ProcessResult r = train({"--json", d / "link.json"});
  CAPTURE(r.err);
  CHECK(r.exit_code == 0);
  CHECK(std::filesystem::is_symlink(d / "link.json"));
  CHECK(slurp(target).find("\"summary\"") != std::string::npos);
  // a FIFO: written into, not replaced by a file
  REQUIRE(mkfifo((d / "fifo").c_str(), 0644) == 0);
  std::string got;
  std::thread reader([&] { got = slurp(d / "fifo"); });
  r = train({"--profile", d / "fifo"});
  reader.join();
  CHECK(r.exit_code == 0);
  CHECK(std::filesystem::is_fifo(d / "fifo"));
  // the trace went through the FIFO (torch 2's export_chrome_trace writes "ph": "X")
  CHECK((got.find("\"ph\":\"X\"") != std::string::npos || got.find("\"ph\": \"X\"") != std::string::npos));
  // --json and --profile naming one file: refused before anything runs
  r = train({"--json", d / "same.json", "--profile", d / "same.json"});
  CHECK(r.exit_code == 2);
  CHECK_FALSE(std::filesystem::exists(d / "same.json"));
  // a character device (root only): stays a device
  if (getuid() != 0) {
    MESSAGE("not root: the device node case is skipped (mknod needs root)");
    return;
  }
  REQUIRE(mknod((d / "null").c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0);
  r = train({"--json", d / "null"});
  CHECK(r.exit_code == 0);
  struct stat st {};
  REQUIRE(stat((d / "null").c_str(), &st) == 0);
  CHECK(S_ISCHR(st.st_mode));
}

TEST_CASE("the other PyTorch writers too: gloo's all-reduce sweep into a FIFO and a device, bench interference through a symlink") {
  TempDir d;
  const std::vector<std::string> sweep = {kExe, "measure", "allreduce", "--backend", "gloo", "--ranks", "2", "-b", "8", "-e", "64", "-n", "3", "-w", "1"};
  // a FIFO: the sweep's JSON goes through it; it stays a FIFO
  REQUIRE(mkfifo((d / "fifo").c_str(), 0644) == 0);
  std::string got;
  std::thread reader([&] { got = slurp(d / "fifo"); });
  std::vector<std::string> argv = sweep;
  argv.insert(argv.end(), {"--json", d / "fifo"});
  ProcessResult r = run_process(argv, d.path, 240);
  reader.join();
  CAPTURE(r.err);
  CHECK(r.exit_code == 0);
  CHECK(std::filesystem::is_fifo(d / "fifo"));
  CHECK(got.find("\"points\"") != std::string::npos);
  // bench interference's JSON through a symlink: the target replaced, the link kept
  const std::string w = d.write("w.yaml", kWorkload);
  const std::string target = d.write("target.json", "old");
  REQUIRE(symlink(target.c_str(), (d / "link.json").c_str()) == 0);
  r = run_process({kExe, "bench", "interference", "--backend", "gloo", "--ranks", "2", "--workload", w, "--bytes", "64KiB", "--repeat", "3",
                   "--json", d / "link.json"},
                  d.path, 240);
  CAPTURE(r.err);
  CHECK(r.exit_code == 0);
  CHECK(std::filesystem::is_symlink(d / "link.json"));
  CHECK(slurp(target).find("interference") != std::string::npos);
  if (getuid() != 0) {
    MESSAGE("not root: the device node case is skipped (mknod needs root)");
    return;
  }
  REQUIRE(mknod((d / "null").c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0);
  argv = sweep;
  argv.insert(argv.end(), {"--json", d / "null"});
  r = run_process(argv, d.path, 240);
  CHECK(r.exit_code == 0);
  struct stat st {};
  REQUIRE(stat((d / "null").c_str(), &st) == 0);
  CHECK(S_ISCHR(st.st_mode));
}
