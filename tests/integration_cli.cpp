// Runs the kanscale executable as a user would and checks exit codes, the
// one-line error messages (file:line:column: key ...) and that nothing is
// written when the input is bad.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "temp_dir.hpp"
#include "paths.hpp"
#include "csv_check.hpp"

namespace {

std::string read_file(const std::string& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}



struct Run {
  int code = -1;
  std::string out, err;
};

Run run(const std::string& args, const TempDir& d) {
  const std::string o = d.path + "/stdout", e = d.path + "/stderr";
  const int status = std::system((kExe + " " + args + " >" + o + " 2>" + e).c_str());
  Run r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_file(o);
  r.err = read_file(e);
  return r;
}

// 1-based line of the first occurrence of `needle`.
int line_of(const std::string& text, const std::string& needle) {
  const auto pos = text.find(needle);
  REQUIRE(pos != std::string::npos);
  int line = 1;
  for (std::size_t i = 0; i < pos; ++i) line += text[i] == '\n';
  return line;
}

std::string replace(std::string text, const std::string& from, const std::string& to) {
  const auto pos = text.find(from);
  REQUIRE(pos != std::string::npos);
  return text.replace(pos, from.size(), to);
}

// The README's main job on the shipped configs, with extra options.
std::string default_job(const std::string& extra) {
  return "simulate --cluster " + kSrc + "/configs/clusters/finisterrae3.yaml --workload " + kSrc +
         "/configs/workloads/default.yaml " + extra;
}

const std::string kCluster = read_file(kSrc + "/configs/clusters/finisterrae3.yaml");
const std::string kWorkload = read_file(kSrc + "/configs/workloads/default.yaml");

// Runs simulate on a modified cluster file; expects exit 2, an error line
// naming the file, the line of `changed`, and `message`; no output file.
void expect_cluster_error(const std::string& from, const std::string& changed, const std::string& key,
                          const std::string& message) {
  TempDir d;
  const std::string text = replace(kCluster, from, changed);
  const std::string c = d.write("cluster.yaml", text);
  const std::string w = d.write("workload.yaml", kWorkload);
  const Run r = run("simulate --cluster " + c + " --workload " + w + " --json " + d.path + "/out.json", d);
  CAPTURE(r.err);
  CHECK(r.code == 2);
  CHECK(r.err.find(c + ":" + std::to_string(line_of(text, changed)) + ":") != std::string::npos);
  CHECK(r.err.find("key '" + key + "'") != std::string::npos);
  CHECK(r.err.find(message) != std::string::npos);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);  // one line
  CHECK_FALSE(std::ifstream(d.path + "/out.json").good());
}

}  // namespace

TEST_CASE("cli: unknown key, with did-you-mean") {
  expect_cluster_error("gpus_per_node: 2", "gpus_per_nodes: 2", "gpus_per_nodes", "did you mean 'gpus_per_node'?");
}
TEST_CASE("cli: wrong type") { expect_cluster_error("nodes: 64", "nodes: many", "nodes", "expected an integer"); }
TEST_CASE("cli: missing unit") {
  expect_cluster_error("memory: \"40GiB\"", "memory: \"40\"", "gpu.memory", "missing unit");
}
TEST_CASE("cli: unknown unit (units are case-sensitive)") {
  expect_cluster_error("nic_bandwidth: \"100Gbps\"", "nic_bandwidth: \"100GBPS\"", "network.nic_bandwidth", "unknown unit");
}
TEST_CASE("cli: negative size") {
  expect_cluster_error("bandwidth: \"9GB/s\"", "bandwidth: \"-9GB/s\"", "intra_node.bandwidth", "greater than zero");
}
TEST_CASE("cli: zero size") {
  expect_cluster_error("memory: \"40GiB\"", "memory: \"0GiB\"", "gpu.memory", "greater than zero");
}
TEST_CASE("cli: NaN") {
  // (a figure the sheet gives, replaced by the cluster file's own)
  expect_cluster_error("  memory: \"40GiB\"", "  fp32: \"nanTFLOP/s\"\n  memory: \"40GiB\"", "gpu.fp32", "not a finite number");
}
TEST_CASE("cli: unknown choice, with did-you-mean") {
  expect_cluster_error("kind: shm", "kind: shmem", "intra_node.kind", "did you mean \"shm\"?");
}

TEST_CASE("cli: duplicate key, reported at the second one") {
  TempDir d;
  const std::string text = replace(kCluster, "gpus_per_node: 2\n", "gpus_per_node: 2\nnodes: 1\n");
  const std::string c = d.write("c.yaml", text);
  const std::string w = d.write("w.yaml", kWorkload);
  const Run r = run("simulate --cluster " + c + " --workload " + w, d);
  CHECK(r.code == 2);
  CHECK(r.err.find(c + ":" + std::to_string(line_of(text, "nodes: 1\n")) + ":1: key 'nodes': duplicate key") !=
        std::string::npos);
}
TEST_CASE("cli: quoted number is a string, not an integer") {
  expect_cluster_error("nodes: 64", "nodes: \"64\"", "nodes", "expected an integer");
}
TEST_CASE("cli: unsupported NCCL version, at its line") {
  expect_cluster_error("version: \"2.14.3\"", "version: \"2.149\"", "collectives.version", "not supported");
}

TEST_CASE("cli: missing required key names the key and the map's line") {
  TempDir d;
  const std::string c = d.write("c.yaml", replace(kCluster, "gpus_per_node: 2\n", ""));
  const std::string w = d.write("w.yaml", kWorkload);
  const Run r = run("simulate --cluster " + c + " --workload " + w, d);
  CHECK(r.code == 2);
  CHECK(r.err.find("key 'gpus_per_node': missing required key") != std::string::npos);
}

TEST_CASE("cli: widths with fewer than two entries") {
  TempDir d;
  const std::string text = replace(kWorkload, "widths: [64, 256, 256, 1]", "widths: [64]");
  const std::string c = d.write("c.yaml", kCluster);
  const std::string w = d.write("w.yaml", text);
  const Run r = run("simulate --cluster " + c + " --workload " + w + " --csv " + d.path + "/o.csv", d);
  CAPTURE(r.err);
  CHECK(r.code == 2);
  CHECK(r.err.find(w + ":" + std::to_string(line_of(text, "widths: [64]")) + ":") != std::string::npos);
  CHECK(r.err.find("key 'kan.widths': expected at least 2 entries") != std::string::npos);
  CHECK_FALSE(std::ifstream(d.path + "/o.csv").good());
}

TEST_CASE("cli: a GPU count that cannot be laid out on the cluster") {
  TempDir d;
  const std::string base = default_job("--json " + d.path + "/o.json");
  Run r = run(base + " --gpus 1,3", d);
  CHECK(r.code == 2);
  CHECK(r.err.find("--gpus 3: cannot be laid out") != std::string::npos);
  CHECK_FALSE(std::ifstream(d.path + "/o.json").good());
  r = run(base + " --gpus 256", d);  // 128 nodes > 64
  CHECK(r.code == 2);
  CHECK(r.err.find("needs 128 nodes") != std::string::npos);
  r = run(base + " --gpus 3 --gpus-per-node 1", d);  // allowed: 3 nodes of 1
  CHECK(r.code == 0);
  for (const char* bad : {" --gpus 1,2,", " --gpus 1,,2", " --gpus 2,2", " --gpus x", " --gpus 2 --gpus-per-node 0"}) {
    r = run(base + bad, d);
    CAPTURE(bad);
    CHECK(r.code == 2);
  }
}

TEST_CASE("cli: YAML syntax errors, missing files, bad options") {
  TempDir d;
  const std::string bad = d.write("bad.yaml", "name: x\nnodes: [1, 2\n");
  Run r = run("simulate --cluster " + bad + " --workload " + kSrc + "/configs/workloads/default.yaml", d);
  CHECK(r.code == 2);
  CHECK(r.err.find(bad + ":") != std::string::npos);
  CHECK(r.err.find("YAML syntax error") != std::string::npos);
  r = run("simulate --cluster /nonexistent.yaml --workload x.yaml", d);
  CHECK(r.code == 2);
  CHECK(r.err.find("/nonexistent.yaml: cannot open file") != std::string::npos);
  r = run("simulate --bogus", d);
  CHECK(r.code == 2);
  r = run("simulate --cluster a.yaml", d);
  CHECK(r.code == 2);
  CHECK(r.err.find("--workload") != std::string::npos);
  r = run("simulate --cluster a.yaml --workload b.yaml extra", d);  // stray word
  CHECK(r.code == 2);
  r = run("simulate --cluster a.yaml --workload b.yaml --seed -1", d);
  CHECK(r.code == 2);
  r = run("frobnicate", d);
  CHECK(r.code == 2);
  r = run("simulate --help", d);
  CHECK(r.code == 0);
  CHECK(r.out.find("--trace-ranks") != std::string::npos);
}

TEST_CASE("cli: the README's main job writes a table, JSON, CSV and a Perfetto trace") {
  TempDir d;
  const Run r = run(default_job("--gpus 1,2,4,8 --json " + d.path + "/o.json --csv " + d.path + "/o.csv --trace " +
                                 d.path + "/t.json"),
                    d);
  CAPTURE(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("speedup") != std::string::npos);
  const auto j = nlohmann::json::parse(read_file(d.path + "/o.json"));
  REQUIRE(j["points"].size() == 4);
  CHECK(j["points"][3]["gpus"] == 8);
  CHECK(j["points"][3]["nodes"] == 4);
  CHECK(j["provenance"]["seed"] == 42);  // the workload's seed
  CHECK(j["points"][3]["buckets_steady"].size() == 2);
  CHECK(j["points"][3]["buckets_first_iteration"][0]["bytes"] == 3287040);
  const auto t = nlohmann::json::parse(read_file(d.path + "/t.json"));
  CHECK(t["traceEvents"].size() > 100);
  const std::string csv = read_file(d.path + "/o.csv");
  CHECK(csv.find("gpus,nodes,") != std::string::npos);
  CHECK(read_file(d.path + "/o.buckets.csv").find("layers.1.spline_weight") != std::string::npos);
  CHECK_FALSE(std::ifstream(d.path + "/o.json.tmp").good());
}

TEST_CASE("formats: every CSV starts with its header row (Python's csv module, pandas' defaults); provenance in F.meta.json") {
  TempDir d;
  REQUIRE(run(default_job("--gpus 1,2 --csv " + d.path + "/sim.csv"), d).code == 0);
  REQUIRE(run("measure kernels --shapes 64:8:8:5:3 --repeat 3 --csv " + d.path + "/k.csv", d).code == 0);
  REQUIRE(run("measure allreduce -b 8 -e 1K -f 4 -n 2 -w 1 --csv " + d.path + "/a.csv", d).code == 0);
  const std::string w = d.write("w.yaml", "name: tiny\nkan: {widths: [3, 4, 1], grid_size: 3, spline_order: 3}\ntask: teacher\nbatch_per_gpu: 8\n"
                                      "dataset_size: 64\nepochs: 1\nlearning_rate: 1e-3\nseed: 4\nimplementation: kanscale\n");
  const Run t = run("train --quiet --workload " + w + " --steps 3 --csv " + d.path + "/t.csv", d);
  CAPTURE(t.err);
  REQUIRE(t.code == 0);
  // The columns each writer promises (docs/simulate.md, docs/calibrating.md, docs/training.md).
  const std::map<std::string, std::vector<std::string>> first_columns = {
      {"sim.csv", {"gpus", "nodes", "batch_per_gpu"}},
      {"sim.buckets.csv", {"gpus", "plan", "bucket"}},
      {"k.csv", {"op", "batch", "in"}},
      {"a.csv", {"size_bytes", "count", "type"}},
      {"t.csv", {"step", "rank", "batch"}}};
  std::vector<std::string> files;
  for (const auto& f : first_columns) files.push_back(d.path + "/" + f.first);
  const auto read = python_csv_columns(files);
  for (const auto& [name, first] : first_columns) {
    const std::string& file = name;
    CAPTURE(file);
    const auto& cols = read.at(d.path + "/" + name);
    REQUIRE(cols.size() > first.size());
    CHECK(std::vector<std::string>(cols.begin(), cols.begin() + first.size()) == first);
    const auto meta = csv_sidecar(d.path + "/" + name);
    CHECK(meta["provenance"]["command_line"].get<std::string>().find("--csv " + d.path + "/" + name.substr(0, name.find('.'))) !=
          std::string::npos);
  }
  // A CSV sent to a device has no sidecar beside it, and is still all CSV.
  const Run piped = run(default_job("--gpus 1 --csv /dev/stdout"), d);
  REQUIRE(piped.code == 0);
  CHECK(piped.out.find("gpus,nodes,batch_per_gpu") != std::string::npos);
  CHECK_FALSE(std::ifstream("/dev/stdout.meta.json").good());
}

TEST_CASE("fit --nccl-tests alone: a collectives-only calibration, its held-out error, used by simulate on dgx-h100") {
  TempDir d;
  const std::string cluster = kSrc + "/configs/clusters/dgx-h100.yaml";
  Run r = run("fit --nccl-tests " + kSrc + "/tests/fixtures/nccl-tests/h100_2node_16rank_allreduce.log --cluster " + cluster + " --out " +
                  d.path + "/h100.yaml",
              d);
  CAPTURE(r.err);
  REQUIRE(r.code == 0);
  // 31 sizes (8 B .. 8 GiB): the 4th, 8th, ... 28th held out, 7 of them, predicted by NCCL's model on dgx-h100
  CHECK(r.out.find("held out: 7 size(s) (every fourth), times predicted by NCCL's model on dgx-h100: mean |error| ") != std::string::npos);
  CHECK(r.out.find("collectives only: compute, memory and the job's costs stay at the cluster file's datasheet values") != std::string::npos);
  const std::string cal = read_file(d.path + "/h100.yaml");
  CHECK(cal.find("bus_bandwidth_inter: \"338.82GB/s\"") != std::string::npos);  // the 8 GiB row's out-of-place busbw (a training size)
  CHECK(cal.find("# held out: 7 size(s)") != std::string::npos);
  r = run("simulate --cluster " + cluster + " --workload " + kSrc + "/configs/workloads/default.yaml --calibration " + d.path +
              "/h100.yaml --gpus 8,16 --json " + d.path + "/s.json",
          d);
  CAPTURE(r.err);
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(read_file(d.path + "/s.json"));
  CHECK(j["provenance"]["calibration"]["name"] == "h100");
  CHECK(j["points"].size() == 2);
  // an MPI cluster cannot predict NCCL sweeps
  r = run("fit --nccl-tests " + kSrc + "/tests/fixtures/nccl-tests/h100_2node_16rank_allreduce.log --cluster " + kSrc +
              "/configs/clusters/local-cpu.yaml --out " + d.path + "/x.yaml",
          d);
  CHECK(r.code == 2);
  CHECK(r.err.find("not nccl") != std::string::npos);
}

TEST_CASE("cli: when one output cannot be written, none is") {
  TempDir d;
  const std::string base = default_job("--gpus 2 --json " + d.path + "/ok.json");
  Run r = run(base + " --csv /nonexistent-dir/x.csv", d);
  CHECK(r.code == 2);
  CHECK(r.err.find("--csv /nonexistent-dir/x.csv: the directory '/nonexistent-dir' does not exist") != std::string::npos);
  CHECK_FALSE(std::ifstream(d.path + "/ok.json").good());
  r = run(base + " --trace " + d.path + "/ok.json", d);
  CHECK(r.code == 2);
  CHECK(r.err.find("named by another output option") != std::string::npos);
  // a directory named as a file: refused before anything is written
  r = run(base + " --csv " + d.path, d);
  CHECK(r.code == 2);
  CHECK(r.err.find("is a directory") != std::string::npos);
  CHECK_FALSE(std::ifstream(d.path + "/ok.json").good());
}

namespace {
bool only_regular_files_and(const std::string& dir, const std::set<std::string>& expected) {
  std::set<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names == expected;
}
}  // namespace

TEST_CASE("outputs: a device, a FIFO or a link stays what it was; a planted link is not followed; modes are kept") {
  TempDir d;
  // /dev/null stays a character device, and the run succeeds
  Run r = run(default_job("--gpus 1,2 --json /dev/null"), d);
  CHECK(r.code == 0);
  struct stat st {};
  REQUIRE(stat("/dev/null", &st) == 0);
  CHECK(S_ISCHR(st.st_mode));
  // /dev/stdout: the JSON goes to standard output, before the table
  r = run(default_job("--gpus 1,2 --json /dev/stdout"), d);
  CHECK(r.code == 0);
  CHECK(r.out.rfind("{", 0) == 0);
  CHECK(r.out.find("speedup") != std::string::npos);
  // a symbolic link: its target is replaced, the link stays a link
  std::ofstream(d / "target.json") << "old";
  REQUIRE(symlink("target.json", (d / "link.json").c_str()) == 0);
  r = run(default_job("--gpus 2 --json " + (d / "link.json")), d);
  CHECK(r.code == 0);
  REQUIRE(lstat((d / "link.json").c_str(), &st) == 0);
  CHECK(S_ISLNK(st.st_mode));
  CHECK(nlohmann::json::parse(read_file(d / "target.json"))["points"].size() == 1);
  // a link planted where the old writer put its temporary file is not followed
  std::ofstream(d / "victim") << "keep";
  REQUIRE(symlink("victim", (d / "out.json.tmp").c_str()) == 0);
  r = run(default_job("--gpus 2 --json " + (d / "out.json")), d);
  CHECK(r.code == 0);
  CHECK(read_file(d / "victim") == "keep");
  CHECK(nlohmann::json::parse(read_file(d / "out.json"))["points"].size() == 1);
  // a replaced file keeps its permissions
  REQUIRE(chmod((d / "out.json").c_str(), 0640) == 0);
  r = run(default_job("--gpus 4 --json " + (d / "out.json")), d);
  CHECK(r.code == 0);
  REQUIRE(stat((d / "out.json").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0640);
  // a FIFO is written into (a reader drains it), not replaced. The reader
  // is open before kanscale starts (a FIFO nobody reads is refused), and
  // the JSON (~7 KiB) fits the pipe's buffer, so kanscale never waits on it.
  REQUIRE(mkfifo((d / "fifo").c_str(), 0644) == 0);
  const int reader = open((d / "fifo").c_str(), O_RDONLY | O_NONBLOCK);
  REQUIRE(reader >= 0);
  r = run(default_job("--gpus 2 --json " + (d / "fifo")), d);
  CHECK(r.code == 0);
  std::string drained;
  char buf[4096];
  for (ssize_t n; (n = read(reader, buf, sizeof buf)) > 0;) drained.append(buf, static_cast<std::size_t>(n));
  close(reader);
  std::ofstream(d / "drained") << drained;
  REQUIRE(lstat((d / "fifo").c_str(), &st) == 0);
  CHECK(S_ISFIFO(st.st_mode));
  CHECK(drained.find("\"points\"") != std::string::npos);
  // no temporary file is left behind
  CHECK(only_regular_files_and(d.path, {"target.json", "link.json", "victim", "out.json.tmp", "out.json", "fifo", "drained",
                                        "stdout", "stderr"}));
}

namespace {
// A copy of the shipped CI plan with one line replaced.
std::string plan_with(const TempDir& d, const std::string& from, const std::string& to) {
  return d.write("plan.yaml", replace(read_file(kSrc + "/validation/plans/ci-small.yaml"), from, to));
}
// Runs kanscale in the source tree (where the plans' relative paths hold).
Run run_in_source(const std::string& args, const TempDir& d) {
  const std::string o = d.path + "/stdout", e = d.path + "/stderr";
  const int status = std::system(("cd '" + kSrc + "' && " + kExe + " " + args + " >" + o + " 2>" + e).c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_file(o), read_file(e)};
}
}  // namespace

TEST_CASE("outputs: a path that cannot be written fails before a long run starts") {
  TempDir d;
  const std::string w = kSrc + "/configs/workloads/pykan-exp-sin.yaml";
  for (const std::string flag : {"--json", "--csv", "--trace", "--checkpoint"}) {
    CAPTURE(flag);
    const auto t0 = std::chrono::steady_clock::now();
    const Run r = run("train --workload " + w + " --steps 100000 " + flag + " " + (d / "nodir/x.out"), d);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CHECK(r.code == 2);
    CHECK(r.err == "kanscale: " + flag + " " + (d / "nodir/x.out") + ": the directory '" + (d / "nodir") + "' does not exist\n");
    CHECK(seconds < 30);  // 100,000 steps would take minutes: nothing trained
  }
  Run r = run("measure kernels --shapes 8:4:4:5:3 --json " + d.path, d);
  CHECK(r.code == 2);
  CHECK(r.err.find("--json " + d.path + ": is a directory") != std::string::npos);
  r = run("measure allreduce -e 1K --csv " + (d / "no/x.csv"), d);
  CHECK(r.code == 2);
  CHECK(r.err.find("--csv") != std::string::npos);
  r = run("fit --kernels " + kSrc + "/configs/measure/cpu-ci.yaml --out " + (d / "no/k.yaml"), d);
  CHECK(r.code == 2);
  CHECK(r.err.find("--out") != std::string::npos);
  r = run_in_source("validate validation/plans/ci-small.yaml --emit " + (d / "no/such/dir"), d);
  CHECK(r.code == 2);
  CHECK(r.err.find("--emit") != std::string::npos);
}


TEST_CASE("validate: no text from a plan reaches a shell; names with control characters are refused") {
  TempDir d;
  const std::string ar = "allreduce: \"-b 8 -e 4M -f 4 -n 10 -w 3 --nonblocking\"";
  const std::string bc = "broadcast: \"-b 8 -e 64K -f 4 -n 20 -w 5\"";
  const std::string marker = d / "PWNED";
  struct Attack {
    std::string from, to, expect;
  };
  const std::vector<Attack> attacks = {
      {ar, "allreduce: \"-b 8 -e 4M $(touch " + marker + ")\"", "key 'calibration.measure.allreduce'"},
      {ar, "allreduce: \"-b 8 -e 4M `touch " + marker + "`\"", "key 'calibration.measure.allreduce'"},
      {bc, "broadcast: \"-b 8; touch " + marker + "\"", "key 'calibration.measure.broadcast'"},
      {bc, "broadcast: \"-b 8 --json " + marker + "\"", "--json is set by the schedule"},
      {bc, "broadcast: \"-b 8 | tee " + marker + "\"", "key 'calibration.measure.broadcast'"},
      {"name: ci-small", "name: \"ci\\nsmall\"", "key 'name': holds a control character"},
  };
  for (const auto& a : attacks) {
    CAPTURE(a.to);
    const std::string plan = plan_with(d, a.from, a.to);
    for (const std::string& mode : {" --emit " + (d / "emitted"), " --out " + (d / "report")}) {
      const Run r = run_in_source("validate " + plan + mode, d);
      CHECK(r.code == 2);
      CHECK(r.err.find(a.expect) != std::string::npos);
      CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
      CHECK_FALSE(std::ifstream(marker).good());
      CHECK_FALSE(std::ifstream(d / "emitted/run-mpirun.sh").good());
    }
  }
  // a name with shell syntax is data: the scripts quote it or keep it out
  const std::string plan = plan_with(d, "name: ci-small", "name: \"x $(touch " + marker + ") 'y\"");
  const Run r = run_in_source("validate " + plan + " --emit " + (d / "emitted"), d);
  CHECK(r.code == 0);
  for (const std::string script : {"run-mpirun.sh", "run-slurm.sbatch"}) {
    const std::string text = read_file(d / ("emitted/" + script));
    CHECK(text.find("$(touch") == std::string::npos);
    // the script parses, and its set-up lines run without running the name
    CHECK(std::system(("bash -n " + (d / ("emitted/" + script))).c_str()) == 0);
  }
  CHECK(read_file(d / "emitted/run-slurm.sbatch").find("#SBATCH --job-name=kanscale-validate-x___touch_") != std::string::npos);
  CHECK_FALSE(std::ifstream(marker).good());
}

TEST_CASE("validate --emit: an executable path with shell syntax is quoted in both scripts") {
  TempDir d;
  // the marker is relative: it would appear in whatever directory ran it
  const std::string marker = "PWNED-exe-path";
  const std::string bin = d / ("bin $(touch " + marker + ")");
  auto marker_anywhere = [&] {
    return std::ifstream(d / marker).good() || std::ifstream(kSrc + "/" + marker).good() || std::ifstream(marker).good();
  };
  REQUIRE(std::filesystem::create_directory(bin));
  std::filesystem::copy_file(kExe, bin + "/kanscale");
  REQUIRE(chmod((bin + "/kanscale").c_str(), 0755) == 0);
  const std::string exe = bin + "/kanscale";
  // run from the source tree; the copy finds the build's data through KANSCALE_DATA (no share/ beside it)
  const std::string data = (std::filesystem::path(kExe).parent_path().parent_path() / "share" / "kanscale").string();
  const std::string cmd = "cd '" + kSrc + "' && KANSCALE_DATA='" + data + "' '" + exe + "' validate validation/plans/ci-small.yaml --emit '" +
                          (d / "e") + "' > '" + (d / "out") + "' 2>&1";
  REQUIRE(std::system(cmd.c_str()) == 0);
  for (const std::string script : {"run-mpirun.sh", "run-slurm.sbatch"}) {
    CAPTURE(script);
    // the lines that set KANSCALE, run alone: they name the executable and run nothing
    std::string setup;
    std::istringstream in(read_file(d / ("e/" + script)));
    for (std::string line; std::getline(in, line);)
      if (line.rfind("KANSCALE", 0) == 0) setup += line + "\n";
    setup += "printf '%s' \"$KANSCALE\" > '" + (d / "named") + "'\n";
    std::ofstream(d / "setup.sh") << setup;
    REQUIRE(std::system(("cd '" + d.path + "' && env -u KANSCALE bash setup.sh").c_str()) == 0);
    CHECK(read_file(d / "named") == exe);
    CHECK_FALSE(marker_anywhere());
  }
}

TEST_CASE("the CUDA backends without a GPU (or without the plugin) fail with one clear line") {
  // Whether the build has the plugin (nvcc found) or not, this machine has
  // no usable GPU: each command names what is missing and exits non-zero.
  TempDir d;
  const std::string w = std::string(KANSCALE_SOURCE_DIR) + "/configs/workloads/pykan-exp-sin.yaml";
  for (const std::string& args : {"train --backend cuda --steps 2 --workload " + w, std::string("measure allreduce --backend nccl -e 1K"),
                                  "measure kernels --backend cuda --shapes 8:4:4:5:3 --json " + d.path + "/k.json"}) {
    CAPTURE(args);
    const auto r = run(args, d);
    CHECK(r.code != 0);
    CHECK((r.err.find("CUDA") != std::string::npos || r.err.find("libkanscale_cuda.so") != std::string::npos));
  }
}

TEST_CASE("an argument with a newline is refused in one line, before anything is read or written") {
  TempDir d;
  // $'...' is bash's; std::system runs sh, so the newline is put in by printf
  const std::string out = d / "o\nx.json";
  const Run r = run(default_job("--gpus 2 --json \"$(printf '" + d.path + "/o\\nx.json')\""), d);
  CHECK(r.code == 2);
  CHECK(r.err == "kanscale: argument 9 holds a control character (a newline?); expected one line of text\n");
  CHECK_FALSE(std::ifstream(out).good());
  CHECK_FALSE(std::ifstream(d / "o").good());
}

TEST_CASE("an input that never ends (a device, a FIFO) is refused, not read forever") {
  TempDir d;
  REQUIRE(mkfifo((d / "fifo.yaml").c_str(), 0644) == 0);
  for (const std::string& input : {std::string("/dev/zero"), d / "fifo.yaml"}) {
    CAPTURE(input);
    Run r = run("simulate --cluster " + input + " --workload " + kSrc + "/configs/workloads/default.yaml", d);
    CHECK(r.code == 2);
    CHECK(r.err == "kanscale: " + input + ": not a regular file (a device or a pipe?); expected a YAML file\n");
    r = run("eval --checkpoint " + input + " --input " + input, d);
    CHECK(r.code == 2);
    CHECK(r.err.find("not a regular file") != std::string::npos);
  }
}

TEST_CASE("cli: import torch-profile reads a real trace against its workload; a file that is no trace is one error line") {
  TempDir d;
  const auto meta = nlohmann::json::parse(read_file(kSrc + "/tests/fixtures/torch/parity-2-layers.json"));
  const std::string w = d.write("w.yaml", meta["workload"].get<std::string>());
  const std::string trace = kSrc + "/tests/fixtures/torch/parity-2-layers.trace.json";
  Run r = run("import torch-profile " + trace + " --workload " + w + " --json " + d.path + "/p.json", d);
  CAPTURE(r.err);
  CHECK(r.code == 0);
  CHECK(r.out.find("all units") != std::string::npos);
  CHECK(r.out.find("communication comm:all_reduce: 1 event(s)") != std::string::npos);
  const auto j = nlohmann::json::parse(read_file(d.path + "/p.json"));
  CHECK(j["iterations"] == 1);
  CHECK(j["unknown_classes"].empty());
  CHECK(j.contains("provenance"));
  // not a trace, and a trace of another model (3 layers): exit 2, one line
  // naming the file; no output
  const std::string bad = d.write("bad.json", "{\"events\": 1}\n");
  for (const std::string& t : {bad, kSrc + "/tests/fixtures/torch/parity-3-layers.trace.json"}) {
    CAPTURE(t);
    r = run("import torch-profile " + t + " --workload " + w + " --json " + d.path + "/q.json", d);
    CAPTURE(r.err);
    CHECK(r.code == 2);
    CHECK(r.err.find(t) != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK_FALSE(std::ifstream(d.path + "/q.json").good());
  }
}

TEST_CASE("under mpirun a bad input is said once, by rank 0; the other ranks exit with the same code in silence") {
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0) {
    MESSAGE("mpirun is not installed: skipped");
    return;
  }
  TempDir d;
  const std::string o = d / "out.txt";
  const std::string cmd = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun -np 2 --oversubscribe " + kExe +
                          " measure allreduce -f 1 > '" + o + "' 2>&1";
  const int status = std::system(cmd.c_str());
  CHECK(status != 0);
  const std::string text = read_file(o);
  CAPTURE(text);
  std::size_t lines = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines += line.rfind("kanscale", 0) == 0;
  CHECK(lines == 1);
}

TEST_CASE("validate --collect judges a directory only against the plan it was emitted from, with its case files as written") {
  TempDir d;
  const std::string plan = kSrc + "/validation/plans/ci-small.yaml";
  REQUIRE(run_in_source("validate " + plan + " --emit " + (d / "e"), d).code == 0);
  REQUIRE(std::ifstream(d / "e/emitted.json").good());
  // another plan's collect: refused by name, nothing judged
  std::string other = read_file(plan);
  other.replace(other.find("name: ci-small"), 14, "name: ci-other");
  std::ofstream(d / "other.yaml") << other;
  Run r = run_in_source("validate " + (d / "other.yaml") + " --collect " + (d / "e") + " --out " + (d / "rep"), d);
  CHECK(r.code == 2);
  CHECK(r.err.find("was emitted from another plan") != std::string::npos);
  CHECK_FALSE(std::ifstream(d / "rep/report.md").good());
  // a case file edited after --emit: refused, naming it
  { std::ofstream(d / "e/cases/case0.yaml", std::ios::app) << "# edited\n"; }
  r = run_in_source("validate " + plan + " --collect " + (d / "e") + " --out " + (d / "rep"), d);
  CHECK(r.code == 2);
  CHECK(r.err.find("cases/case0.yaml") != std::string::npos);
  CHECK(r.err.find("edited after --emit") != std::string::npos);
}

TEST_CASE("cli: validate --corpus on the shipped corpus; its tables follow from its points; fit --priors reads back") {
  TempDir d;
  const Run r = run("validate --corpus " + kSrc + "/validation/corpus --out " + d.path + "/corpus", d);
  CAPTURE(r.err);
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(read_file(d.path + "/corpus/corpus.json"));
  REQUIRE(j["entries"].size() > 10);
  // every class's figures recomputed from its points: n, mean |error| and coverage
  std::map<std::string, std::vector<const nlohmann::json*>> by;
  for (const auto& e : j["entries"]) {
    by[e["class"].get<std::string>() + "/" + e["regime"].get<std::string>()].push_back(&e);
    by["all/" + e["regime"].get<std::string>()].push_back(&e);
    const double err = (e["predicted"].get<double>() / e["measured"].get<double>() - 1) * 100;
    CHECK(e["error_pct"].get<double>() == doctest::Approx(err));
    if (!e["covered"].is_null())
      CHECK(e["covered"].get<bool>() == (e["measured"] >= e["lo"] && e["measured"] <= e["hi"]));
  }
  REQUIRE(j["classes"].size() == by.size());
  for (const auto& [k, v] : by) {
    CAPTURE(k);
    const auto& c = j["classes"][k];
    double sum = 0;
    int with = 0, cov = 0;
    for (const auto* e : v) {
      sum += std::fabs((*e)["error_pct"].get<double>());
      if (!(*e)["covered"].is_null()) ++with, cov += (*e)["covered"].get<bool>();
    }
    CHECK(c["n"] == v.size());
    CHECK(c["mean_abs_pct"].get<double>() == doctest::Approx(sum / v.size()));
    if (with) CHECK(c["coverage"].get<double>() == doctest::Approx(static_cast<double>(cov) / with));
  }
  CHECK(read_file(d.path + "/corpus/report.md").find("## Criteria") != std::string::npos);
  // the priors it fits read back, and the shipped datasheet answer carries their interval
  const Run f = run("fit --priors " + kSrc + "/validation/corpus --out " + d.path + "/priors.yaml", d);
  CAPTURE(f.err);
  REQUIRE(f.code == 0);
  CHECK(read_file(d.path + "/priors.yaml").find("nvswitch: {scope: class") != std::string::npos);
  const Run m = run("model allreduce --cluster configs/clusters/dgx-a100.yaml --bytes 1GiB --gpus 64", d);
  CHECK(m.out.find("90% interval") != std::string::npos);
  CHECK(m.out.find("infiniband") != std::string::npos);
  // a corpus entry with an unknown GPU: one line, exit 2, nothing written
  std::filesystem::create_directory(d.path + "/bad");
  std::filesystem::copy_file(kSrc + "/validation/corpus/oci-bm-gpu-h100-8-2node-roce.yaml", d.path + "/bad/oci-bm-gpu-h100-8-2node-roce.yaml");
  std::string t = read_file(d.path + "/bad/oci-bm-gpu-h100-8-2node-roce.yaml");
  t.replace(t.find("gpu: h100-sxm5-80gb"), 19, "gpu: h100-sxm9-80gb");
  std::ofstream(d.path + "/bad/oci-bm-gpu-h100-8-2node-roce.yaml") << t;
  const Run b = run("validate --corpus " + d.path + "/bad --out " + d.path + "/badout", d);
  CHECK(b.code == 2);
  CHECK(b.err.find("unknown GPU model \"h100-sxm9-80gb\"") != std::string::npos);
  CHECK(std::count(b.err.begin(), b.err.end(), '\n') == 1);
  CHECK_FALSE(std::filesystem::exists(d.path + "/badout"));
}

TEST_CASE("cli: an unwatched answer carries its interval parts; a watched one does not borrow them") {
  TempDir d;
  const Run r = run("simulate --cluster configs/clusters/dgx-a100.yaml --workload configs/workloads/default.yaml --gpus 8,64 --json " +
                        d.path + "/dgx.json",
                    d);
  CAPTURE(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("UNWATCHED") != std::string::npos);
  CHECK(r.out.find("PRIORS'") != std::string::npos);
  const auto j = nlohmann::json::parse(read_file(d.path + "/dgx.json"));
  CHECK(j["interval_parts"]["unwatched"]["model_error_sigma"].get<double>() > 0);
  CHECK(j["interval_parts"]["priors"]["comm_error_sigma"].get<double>() > 0);
  // the host's dispatches from the dispatch prior (issue 57, item 5), named in the header
  CHECK(j["interval_parts"]["priors"]["host_dispatch_sigma"].get<double>() > 0);
  CHECK(r.out.find("on the host's PyTorch dispatches, the PRIORS'") != std::string::npos);
  CHECK(j["interval_parts"]["calibration"]["model_error_sigma"].get<double>() == 0);
  const auto& p = j["points"][1];
  REQUIRE(p["iteration_time_interval_s"].is_object());
  CHECK(p["iteration_time_interval_s"]["lo"].get<double>() < p["iteration_time_s"]["median"].get<double>());
  CHECK(p["iteration_time_interval_s"]["hi"].get<double>() > p["iteration_time_s"]["median"].get<double>());
  // the shipped local-cpu calibration watched its jobs: its own model error, nothing borrowed
  const Run w = run("simulate --cluster configs/clusters/local-cpu.yaml --workload configs/workloads/local-kanscale.yaml --calibration "
                    "configs/calibrations/local-cpu.yaml --gpus 1,2 --json " + d.path + "/cpu.json",
                    d);
  CAPTURE(w.err);
  REQUIRE(w.code == 0);
  const auto c = nlohmann::json::parse(read_file(d.path + "/cpu.json"));
  CHECK(c["interval_parts"]["unwatched"]["model_error_sigma"].get<double>() == 0);
  CHECK(c["interval_parts"]["priors"]["comm_error_sigma"].get<double>() == 0);
  CHECK(c["interval_parts"]["priors"]["host_dispatch_sigma"].get<double>() == 0);
  CHECK(c["interval_parts"]["calibration"]["model_error_sigma"].get<double>() > 0);
}

TEST_CASE("cli: bench sim --json writes a row per N: events/s is events over the wall time") {
  TempDir d;
  const Run r = run("bench sim --gpus 8,64 --repeat 1 --min-time 0.05 --json " + d.path + "/sim.json", d);
  CAPTURE(r.err);
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(read_file(d.path + "/sim.json"));
  REQUIRE(j.size() == 2);
  CHECK(j[0]["gpus"] == 8);
  CHECK(j[1]["gpus"] == 64);
  for (const auto& row : j) {
    CHECK(row["events"].get<double>() > 0);
    CHECK(row["events_per_s"].get<double>() == doctest::Approx(row["events"].get<double>() / row["wall_s"].get<double>()));
    CHECK(row["peak_rss_bytes"].get<double>() > 0);
    // one run at least (--repeat 1), and more until 0.05 s of them: a replay of 8 or
    // 64 ranks lasts well under a millisecond, so tens of runs at the very least
    CHECK(row["runs"].get<int>() >= 10);
  }
  // the same replay has the same events whatever the timing: 64 ranks replay more than 8
  CHECK(j[1]["events"].get<double>() > j[0]["events"].get<double>());
}

TEST_CASE("cli: model layer prints a 90% interval, and on a GPU says the CPU stand-in is too narrow") {
  TempDir d;
  const Run g = run("model layer --cluster configs/clusters/dgx-a100.yaml --in 256 --out 256 --implementation pytorch", d);
  CAPTURE(g.err);
  REQUIRE(g.code == 0);
  CHECK(g.out.find("90% interval: forward") != std::string::npos);
  CHECK(g.out.find("UNWATCHED") != std::string::npos);
  CHECK(g.out.find("too narrow") != std::string::npos);
  const Run c = run("model layer --cluster configs/clusters/local-cpu.yaml --calibration configs/calibrations/local-cpu.yaml --in 64 --out 64", d);
  CAPTURE(c.err);
  REQUIRE(c.code == 0);
  CHECK(c.out.find("leave one shape out") != std::string::npos);
  CHECK(c.out.find("too narrow") == std::string::npos);
}

TEST_CASE("calibrate --dry-run prints every job of every round and runs nothing, on any machine") {
  TempDir d;
  const Run r = run("calibrate " + kSrc + "/configs/calibrate/pytorch-cpu.yaml --dry-run --out " + d.path + "/out", d);
  CAPTURE(r.err);
  REQUIRE(r.code == 0);
  CHECK(!std::filesystem::exists(d.path + "/out"));  // nothing written
  // the plan: rounds: 3, each the op classes, the gloo all-reduce and broadcast sweeps, the
  // interference benchmark and the live runs at 1 and 2 ranks: 6 jobs a round
  CHECK(r.out.find("18 job(s) in 3 round(s)") != std::string::npos);
  int jobs = 0, torch_ops = 0;
  std::istringstream lines(r.out);
  for (std::string l; std::getline(lines, l);) {
    jobs += l.rfind("  ", 0) == 0;
    torch_ops += l.find("kanscale measure torch-ops") != std::string::npos;
  }
  CHECK(jobs == 18);
  CHECK(torch_ops == 3);
  CHECK(r.out.find("round 3:") != std::string::npos);
  // the GPU node's plan, here without a GPU: 2 rounds of 6 profiled 1-GPU runs and one job of live runs
  const Run g = run("calibrate " + kSrc + "/configs/calibrate/pytorch-gpu.yaml --dry-run", d);
  CAPTURE(g.err);
  REQUIRE(g.code == 0);
  CHECK(g.out.find("14 job(s) in 2 round(s)") != std::string::npos);
  // local-cpu: rounds 2 and 3 time the classes the earlier rounds predict at every other shape
  const Run l = run("calibrate " + kSrc + "/configs/calibrate/local-cpu.yaml --dry-run", d);
  CAPTURE(l.err);
  REQUIRE(l.code == 0);
  CHECK(l.out.find("--target-rel-halfwidth 0.050000 --json results/kernels-r0.json") != std::string::npos);
  CHECK(l.out.find("--skip-from results/kernels-r0.json --skip-under 0.200000 --json results/kernels-r1.json") != std::string::npos);
  CHECK(l.out.find("--skip-from results/kernels-r0.json,results/kernels-r1.json --skip-under 0.200000 --json results/kernels-r2.json") !=
        std::string::npos);
  CHECK(g.out.find("train --quiet --backend cuda --ranks 1 --threads 1 --steps 4 --workload cases/profile0.yaml --profile") != std::string::npos);
}

TEST_CASE("measure kernels --skip-from: a class the earlier round predicts is timed at the first and third shapes only") {
  TempDir d;
  // warm and cold (caches evicted before each repetition), four shapes told apart by their batch
  const std::string shapes = "--shapes 8:4:4:5:3,16:6:4:5:3,24:8:6:5:3,32:4:8:5:3 --repeat 3 --flush 1MiB";
  const Run r0 = run("measure kernels " + shapes + " --json " + d.path + "/r0.json", d);
  CAPTURE(r0.err);
  REQUIRE(r0.code == 0);
  const Run r1 = run("measure kernels " + shapes + " --skip-from " + d.path + "/r0.json --skip-under 0.99 --json " + d.path + "/r1.json", d);
  CAPTURE(r1.err);
  REQUIRE(r1.code == 0);
  const auto j = nlohmann::json::parse(read_file(d.path + "/r1.json"));
  const auto& skipped = j["metadata"]["skipped_at_odd_shapes"];
  CHECK(skipped["under"].get<double>() == 0.99);
  CHECK(skipped["from"][0].get<std::string>() == d.path + "/r0.json");
  // with 99%, the classes whose left-out shapes' mean error is under it: some warm and some
  // cold at least (tiny ops timed at 3 repetitions still predict each other within 100%)
  int warm = 0, cold = 0;
  for (const auto& [cls, e] : skipped["classes"].items()) ++(cls.find("@cold") == std::string::npos ? warm : cold);
  REQUIRE(warm > 0);
  REQUIRE(cold > 0);
  std::map<std::string, std::set<std::int64_t>> batches;  // class -> the shapes (their batches) it was timed at
  for (const auto& row : j["rows"])
    batches[row["op"].get<std::string>() + (row["cache"] == "cold" ? "@cold" : "")].insert(row["batch"].get<std::int64_t>());
  for (const char* op : {"kan_forward", "kan_backward", "mse", "bucket_copy", "copy_back", "adam", "load_batch"})
    for (const std::string& cls : {std::string(op), std::string(op) + "@cold"}) {
      CAPTURE(cls);
      const bool skip = skipped["classes"].contains(cls);
      if (skip) CHECK(skipped["classes"][cls].get<double>() < 0.99);
      CHECK(batches[cls] == (skip ? std::set<std::int64_t>{8, 24} : std::set<std::int64_t>{8, 16, 24, 32}));
    }
  // a skipped shape's peak memory is still the whole step's (a skipped backward's scratch
  // too, the rows' bookkeeping left out): near the first round's. Two runs of one plan
  // differ by up to 4% here; at the tiniest skipped shape 11.1 KB against 15.4 KB remain
  // (state the skipped timings would have left); the rows' heap and the missing scratch
  // had made it 50-70% lower
  const auto j0 = nlohmann::json::parse(read_file(d.path + "/r0.json"));
  REQUIRE(j0["memory"].size() == j["memory"].size());
  for (std::size_t i = 0; i < j["memory"].size(); ++i)
    CHECK(j["memory"][i]["peak_bytes"].get<double>() == doctest::Approx(j0["memory"][i]["peak_bytes"].get<double>()).epsilon(0.35));
  // resuming under another rule is refused, naming the file
  const Run resumed = run("measure kernels " + shapes + " --resume " + d.path + "/r0.json --skip-from " + d.path + "/r1.json --skip-under 0.5", d);
  CHECK(resumed.code == 2);
  CHECK(resumed.err.find(d.path + "/r0.json: was measured with another --skip-from rule") != std::string::npos);
  // an earlier round measured otherwise (another eviction, another thread count) is refused
  // before anything is timed, and nothing is written
  for (const std::string& other : {std::string("--flush 2MiB"), std::string("--flush 1MiB --threads 2")}) {
    CAPTURE(other);
    const std::string again = "--shapes 8:4:4:5:3,16:6:4:5:3,24:8:6:5:3,32:4:8:5:3 --repeat 3 " + other;
    const Run refused = run("measure kernels " + again + " --skip-from " + d.path + "/r0.json --skip-under 0.5 --json " + d.path + "/r2.json", d);
    CHECK(refused.code == 2);
    CHECK(refused.err.find("--skip-from " + d.path + "/r0.json: measured with another " +
                           (other.find("threads") != std::string::npos ? "threads_per_rank" : "flush_between_repeats_bytes")) !=
          std::string::npos);
    CHECK(!std::filesystem::exists(d.path + "/r2.json"));
  }
}
