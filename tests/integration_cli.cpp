// Runs the kanscale executable as a user would and checks exit codes, the
// one-line error messages (file:line:column: key ...) and that nothing is
// written when the input is bad.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "temp_dir.hpp"

namespace {

const std::string kSrc = KANSCALE_SOURCE_DIR;
const std::string kExe = KANSCALE_EXE;

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
  expect_cluster_error("fp32: \"19.5TFLOP/s\"", "fp32: \"nanTFLOP/s\"", "gpu.fp32", "not a finite number");
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

TEST_CASE("cli: when one output cannot be written, none is") {
  TempDir d;
  const std::string base = default_job("--gpus 2 --json " + d.path + "/ok.json");
  Run r = run(base + " --csv /nonexistent-dir/x.csv", d);
  CHECK(r.code == 1);
  CHECK(r.err.find("/nonexistent-dir/x.csv: cannot open for writing") != std::string::npos);
  CHECK_FALSE(std::ifstream(d.path + "/ok.json").good());
  CHECK_FALSE(std::ifstream(d.path + "/ok.json.tmp").good());
  r = run(base + " --trace " + d.path + "/ok.json", d);
  CHECK(r.code == 2);
  CHECK(r.err.find("named twice") != std::string::npos);
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
