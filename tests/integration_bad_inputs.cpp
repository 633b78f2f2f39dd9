// A catalogue of bad inputs, one row per case, run against the kanscale
// executable as a user would run it: every file kind kanscale reads and
// every command's flags, covering wrong types, out-of-range values,
// overflow, units, missing and duplicate keys. Each case must end with
// exit 2, exactly one line on stderr that names the file and key (or the
// flag), and no file written beside its inputs.
//
// Inputs are the shipped files with one change each, so that a case fails
// for the reason its row gives and not for another. Every case fails fast
// (before any run): the whole catalogue takes a few seconds.
#include <doctest/doctest.h>
#include <dirent.h>
#include <unistd.h>

#include <filesystem>
#include <functional>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "process.hpp"
#include "temp_dir.hpp"
#include "paths.hpp"

namespace {

std::string read_file(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error("test fixture missing: " + p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `text` with the first `from` replaced by `to`; a missing `from` is a bug
// in the table, not a pass.
std::string sub(const std::string& text, const std::string& from, const std::string& to) {
  const auto pos = text.find(from);
  if (pos == std::string::npos) throw std::runtime_error("catalogue: \"" + from + "\" not in the base file");
  std::string out = text;
  return out.replace(pos, from.size(), to);
}

// `text` with the value after the first `key` (up to the next space or line
// end) replaced by `to`: for fitted values, which change with every refit.
std::string subval(const std::string& text, const std::string& key, const std::string& to) {
  const auto pos = text.find(key);
  if (pos == std::string::npos) throw std::runtime_error("catalogue: \"" + key + "\" not in the base file");
  const auto start = pos + key.size(), end = text.find_first_of(" \n", start);
  std::string out = text;
  return out.replace(start, end - start, to);
}

// JSON `text` with the value at `pointer` replaced by `value` (JSON text),
// or removed when `value` is empty.
std::string jset(const std::string& text, const std::string& pointer, const std::string& value) {
  nlohmann::json j = nlohmann::json::parse(text);
  const nlohmann::json::json_pointer p(pointer);
  if (!j.contains(p)) throw std::runtime_error("catalogue: " + pointer + " not in the base JSON");
  if (value.empty()) j[p.parent_pointer()].erase(p.back());
  else j[p] = nlohmann::json::parse(value);
  return j.dump(1);
}

const std::string kCluster = read_file(kSrc + "/configs/clusters/finisterrae3.yaml");
const std::string kLocalCluster = read_file(kSrc + "/configs/clusters/local-cpu.yaml");
const std::string kWorkload = read_file(kSrc + "/configs/workloads/default.yaml");
const std::string kSmallWorkload = read_file(kSrc + "/configs/workloads/pykan-exp-sin.yaml");
const std::string kCalibration = read_file(kSrc + "/configs/calibrations/local-cpu.yaml");
const std::string kPlan = read_file(kSrc + "/configs/measure/cpu-ci.yaml");
// a workload that kanscale train runs under PyTorch DDP
const std::string kTorchWorkload =
    "name: torch-small\nkan: {widths: [4, 8, 1], grid_size: 5}\nbatch_per_gpu: 4\ndataset_size: 64\nimplementation: pytorch\n";
// a workload of kanscale's own trainer, as small
const std::string kWorkloadSmall = "name: small\nkan: {widths: [4, 8, 1], grid_size: 5}\nbatch_per_gpu: 4\ndataset_size: 64\nimplementation: kanscale\n";
// a calibration as kanscale calibrate writes it: fit covariances and live terms
const std::string kLiveCalibration = read_file(kSrc + "/tests/fixtures/calibration-ci-live.yaml");
const std::string kCalibratePlan = read_file(kSrc + "/configs/calibrate/ci.yaml");
// a real trace of one steady step (no ProfilerStep#N), and its workload
const std::string kParityTrace = read_file(kSrc + "/tests/fixtures/torch/parity-2-layers.trace.json");
const std::string kParityWorkload =
    "name: parity-2-layers\nkan: {widths: [8, 16, 1], grid_size: 5, spline_order: 3}\nbatch_per_gpu: 8\ndataset_size: 64\nseed: 3\n"
    "implementation: pytorch\nddp: {bucket_cap: \"1MiB\"}\n";
const std::string kStudy = read_file(kSrc + "/configs/studies/small.yaml");
const std::string kVPlan = read_file(kSrc + "/validation/plans/ci-small.yaml");
const std::string kTorchPlan = read_file(kSrc + "/validation/plans/pytorch-smoke.yaml");
const std::string kAllreduce = read_file(kSrc + "/configs/calibrations/local-cpu/allreduce-shm-r0.json");
const std::string kBroadcast = read_file(kSrc + "/configs/calibrations/local-cpu/broadcast-shm-r0.json");
const std::string kInterference = read_file(kSrc + "/configs/calibrations/local-cpu/interference-r0.json");
const std::string kKernels = read_file(kSrc + "/configs/calibrations/local-cpu/runtime-1rank-r0.json");
const std::string kLog = read_file(kSrc + "/tests/fixtures/nccl-tests/h100_2node_16rank_allreduce.log");

// A small checkpoint (a [2, 5, 1] KAN after one step), made once by the
// trainer itself: the safetensors and CSV cases start from it.
struct Checkpoint {
  TempDir dir;
  std::string model, optim;
  Checkpoint() {
    model = dir / "m.safetensors";
    const ProcessResult r = run_process({kExe, "train", "--workload", kSrc + "/configs/workloads/pykan-exp-sin.yaml",
                                         "--steps", "1", "--quiet", "--checkpoint", model});
    if (r.exit_code != 0) throw std::runtime_error("could not make the checkpoint: " + r.err);
    optim = dir / "m.optim.safetensors";
  }
};
const Checkpoint& checkpoint() {
  static const Checkpoint c;
  return c;
}

// The checkpoint with its JSON header edited by `edit`.
template <typename F>
std::string st_edit(F edit) {
  const std::string bytes = read_file(checkpoint().model);
  std::uint64_t len = 0;
  for (int i = 0; i < 8; ++i) len |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  nlohmann::json h = nlohmann::json::parse(bytes.substr(8, len));
  edit(h);
  std::string header = h.dump();
  while (header.size() % 8) header += ' ';
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + bytes.substr(8 + len);
}
std::string st_meta(const std::string& key, const std::string& value) {
  return st_edit([&](nlohmann::json& h) { h["__metadata__"][key] = value; });
}

struct File {
  std::string name, text;
};

struct Case {
  std::string name;
  std::string kind;
  std::vector<File> files;            // written into the case's directory
  std::vector<std::string> argv;      // after the executable; {d}: the directory, {src}: the sources, {ckpt}: the checkpoint
  std::vector<std::string> expect;    // substrings of the one error line; {d} as in argv
  int exit = 2;                       // 2: refused; 1: a valid question whose answer is "nothing fits"
};

// Command lines that read one input of a kind and name an output, so that
// "nothing written" is checked too.
std::vector<std::string> sim_cluster() {
  return {"simulate", "--cluster", "{d}/cluster.yaml", "--workload", "{src}/configs/workloads/default.yaml", "--gpus", "1,2",
          "--json", "{d}/out.json"};
}
std::vector<std::string> sim_workload() {
  return {"simulate", "--cluster", "{src}/configs/clusters/finisterrae3.yaml", "--workload", "{d}/workload.yaml", "--gpus", "1,2",
          "--json", "{d}/out.json"};
}
std::vector<std::string> sim_calibration() {
  return {"simulate",   "--cluster", "{src}/configs/clusters/local-cpu.yaml", "--workload", "{src}/configs/workloads/local-kanscale.yaml",
          "--calibration", "{d}/calibration.yaml", "--gpus", "1,2", "--json", "{d}/out.json"};
}
std::vector<std::string> whatif_q(const std::string& q) {
  return {"whatif", q, "--cluster", "{src}/configs/clusters/finisterrae3.yaml", "--workload", "{src}/configs/workloads/default.yaml",
          "--json", "{d}/out.json"};
}
std::vector<std::string> study_file() { return {"study", "{d}/study.yaml", "--out", "{d}/out", "--no-plots"}; }
std::vector<std::string> calibrate_plan() { return {"calibrate", "{d}/plan.yaml", "--out", "{d}/out"}; }
std::vector<std::string> measure_plan() {
  return {"measure", "kernels", "--plan", "{d}/plan.yaml", "--json", "{d}/out.json"};
}
// two validation runs of validation/plans/ci-small.yaml (its two judged cases)
const std::string kRun =
    "{\"plan\": \"validation/plans/ci-small.yaml\", \"machine\": \"m\", \"mean_noise_pct\": 1, \"summary\": [{\"metric\": "
    "\"iteration time\", \"mean_abs_pct\": 3, \"max_abs_pct\": 4}], \"cases\": [{\"case\": \"np1 [32-256-32] G5 b8 cap 1.00 MiB\", "
    "\"oversubscribed\": false, \"measured_median\": {\"iteration_time_s\": 0.01}}, {\"case\": \"np2 [32-256-32] G5 b8 cap 1.00 MiB "
    "shm\", \"oversubscribed\": false, \"measured_median\": {\"iteration_time_s\": 0.012}}]}";
std::vector<std::string> repeat_runs() {
  return {"validate", "validation/plans/ci-small.yaml", "--repeatability", "{d}/a.json", "{d}/b.json", "--out", "{d}/out"};
}
std::vector<std::string> validate_plan() { return {"validate", "{d}/plan.yaml", "--emit", "{d}/emit"}; }
std::vector<std::string> fit_with(const std::string& flag) { return {"fit", flag, "{d}/m.json", "--out", "{d}/out.yaml"}; }
std::vector<std::string> fit_interference() {
  return {"fit", "--collectives", "{src}/configs/calibrations/local-cpu/allreduce-shm-r0.json", "--interference", "{d}/m.json",
          "--out", "{d}/out.yaml"};
}
std::vector<std::string> fit_log() { return {"fit", "--nccl-tests", "{d}/run.log", "--out", "{d}/out.yaml"}; }
std::vector<std::string> eval_csv() { return {"eval", "--checkpoint", "{ckpt}", "--input", "{d}/x.csv"}; }
std::vector<std::string> eval_st() { return {"eval", "--checkpoint", "{d}/m.safetensors", "--input", "{d}/x.csv"}; }
std::vector<std::string> sim(std::vector<std::string> extra) {
  std::vector<std::string> a = {"simulate", "--cluster", "{src}/configs/clusters/finisterrae3.yaml", "--workload",
                                "{src}/configs/workloads/default.yaml", "--json", "{d}/out.json"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}
std::vector<std::string> with(std::vector<std::string> a, std::vector<std::string> extra) {
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

const std::string kGoodCsv = "x0,x1\n0.5,0.1\n";

// The catalogue in parts, a function a section: one brace list of every
// case made one function that took GCC 37 s to compile, most of it in
// the exception-handling and inlining passes, whose cost grows faster
// than the function (issue 29).
const std::string C = "cluster.yaml", W = "workload.yaml", K = "calibration.yaml", P = "plan.yaml";
const std::string VP = "plan.yaml";
// validation plans name their files relative to the working directory:
// here, absolute paths to the shipped ones
std::string validation_plan() {
  return sub(sub(kVPlan, "configs/clusters/local-cpu.yaml", kSrc + "/configs/clusters/local-cpu.yaml"), "configs/measure/cpu-ci.yaml",
             kSrc + "/configs/measure/cpu-ci.yaml");
}
const std::vector<File> ok_csv = {{"x.csv", kGoodCsv}};
std::vector<File> st(const std::string& bytes) { return std::vector<File>{{"m.safetensors", bytes}, {"x.csv", kGoodCsv}}; }

// cluster YAML
std::vector<Case> catalogue_part1() {
  return {
      {"cluster: huge gpus_per_node", "cluster", {{C, sub(kCluster, "gpus_per_node: 2", "gpus_per_node: 99999999999")}}, sim_cluster(),
       {"cluster.yaml:", "gpus_per_node", "at most"}},
      {"cluster: nodes past int64", "cluster", {{C, sub(kCluster, "nodes: 64", "nodes: 99999999999999999999999")}}, sim_cluster(),
       {"cluster.yaml:", "'nodes'", "at most"}},
      {"cluster: negative nodes", "cluster", {{C, sub(kCluster, "nodes: 64", "nodes: -3")}}, sim_cluster(), {"cluster.yaml:", "'nodes'"}},
      {"cluster: nodes as text", "cluster", {{C, sub(kCluster, "nodes: 64", "nodes: many")}}, sim_cluster(),
       {"cluster.yaml:", "'nodes'", "integer"}},
      {"cluster: quoted channels", "cluster", {{C, sub(kCluster, "channels: 10", "channels: \"10\"")}}, sim_cluster(),
       {"cluster.yaml:", "collectives.channels"}},
      {"cluster: time unit overflows", "cluster", {{C, sub(kCluster, "kernel_launch: \"5us\"", "kernel_launch: \"1e306h\"")}},
       sim_cluster(), {"cluster.yaml:", "gpu.kernel_launch", "too large"}},
      {"cluster: rate unit overflows", "cluster", {{C, sub(kCluster, "  sheet: a100-pcie-40gb", "  sheet: a100-pcie-40gb\n  memory_bandwidth: \"1e300PB/s\"")}}, sim_cluster(),
       {"cluster.yaml:", "gpu.memory_bandwidth"}},
      {"cluster: size in wrong case", "cluster", {{C, sub(kCluster, "\"40GiB\"", "\"40gib\"")}}, sim_cluster(),
       {"cluster.yaml:", "gpu.memory", "unit"}},
      {"cluster: missing memory bandwidth (no sheet)", "cluster",
       {{C, sub(kCluster, "  sheet: a100-pcie-40gb", "  model: A100-PCIE-40GB\n  fp32: \"19.5TFLOP/s\"")}}, sim_cluster(),
       {"cluster.yaml:", "gpu.memory_bandwidth", "missing"}},
      {"cluster: unknown GPU sheet", "cluster", {{C, sub(kCluster, "  sheet: a100-pcie-40gb", "  sheet: a100-pcie-41gb")}}, sim_cluster(),
       {"cluster.yaml:", "gpu.sheet", "unknown GPU model \"a100-pcie-41gb\""}},
      {"cluster: duplicate nodes", "cluster", {{C, sub(kCluster, "nodes: 64", "nodes: 64\nnodes: 32")}}, sim_cluster(),
       {"cluster.yaml:", "nodes", "duplicate"}},
      {"cluster: NaN bandwidth", "cluster", {{C, sub(kCluster, "bandwidth: \"9GB/s\"", "bandwidth: \".nanGB/s\"")}}, sim_cluster(),
       {"cluster.yaml:", "intra_node.bandwidth"}},
      {"cluster: nics_per_node past int", "cluster", {{C, sub(kCluster, "nics_per_node: 1", "nics_per_node: 4294967297")}},
       sim_cluster(), {"cluster.yaml:", "network.nics_per_node", "at most"}},
      {"cluster: FLOP rate too small to time", "cluster", {{C, sub(kCluster, "  sheet: a100-pcie-40gb", "  sheet: a100-pcie-40gb\n  fp32: \"1e-300FLOP/s\"")}},
       sim_cluster(), {"cluster.yaml", "out of range"}},
      {"cluster: a directory", "cluster", {}, {"simulate", "--cluster", "{d}", "--workload", "{src}/configs/workloads/default.yaml"},
       {"is a directory"}},

  };
}

// calibration: covariances and live terms
std::vector<Case> catalogue_part2() {
  return {
      {"calibration: cov with one row for two terms", "calibration",
       {{K, sub(kLiveCalibration, "cov: [[3.62049e-13, -2.47632e-16], [-2.47632e-16, 5.61651e-19]]", "cov: [[3.62049e-13, -2.47632e-16]]")}},
       sim_calibration(), {"calibration.yaml:", "cov"}},
      {"calibration: cov entry as text", "calibration",
       {{K, sub(kLiveCalibration, "cov: [[1.3847e-14, -1.17615e-19]", "cov: [[1.3847e-14, lots]")}}, sim_calibration(),
       {"calibration.yaml:", "cov"}},
      {"calibration: live compute factor negative", "calibration",
       {{K, sub(kLiveCalibration, "compute_factor: 0.856161", "compute_factor: -1")}}, sim_calibration(),
       {"calibration.yaml:", "compute_factor"}},
      {"calibration: live communication factor 0", "calibration",
       {{K, sub(kLiveCalibration, "compute_factor: 0.856161", "compute_factor: 0.856161, comm_factor: 0")}}, sim_calibration(),
       {"calibration.yaml:", "comm_factor"}},
      {"calibration: live term for 0 ranks", "calibration", {{K, sub(kLiveCalibration, "{ranks: 1, compute", "{ranks: 0, compute")}},
       sim_calibration(), {"calibration.yaml:", "ranks"}},
      {"calibration: live host overhead without unit", "calibration",
       {{K, sub(kLiveCalibration, "host_overhead: \"34.5958us\"", "host_overhead: 34.5958")}}, sim_calibration(),
       {"calibration.yaml:", "host_overhead"}},
      {"calibration: model error as text", "calibration",
       {{K, sub(kLiveCalibration, "model_error_sigma: 0.0944082", "model_error_sigma: some")}}, sim_calibration(),
       {"calibration.yaml:", "model_error_sigma"}},
      {"calibration: communication error above 5", "calibration",
       {{K, sub(kLiveCalibration, "model_error_sigma: 0.0944082", "model_error_sigma: 0.0944082\n  comm_error_sigma: 5.5")}},
       sim_calibration(), {"calibration.yaml:", "comm_error_sigma"}},
      {"calibration: a rank's spread above 5", "calibration",
       {{K, sub(kLiveCalibration, "model_error_sigma: 0.0944082", "model_error_sigma: 0.0944082\n  rank_spread_sigma: 6")}},
       sim_calibration(), {"calibration.yaml:", "rank_spread_sigma"}},
      {"calibration: unknown key in live", "calibration", {{K, sub(kLiveCalibration, "  terms:", "  termz:")}}, sim_calibration(),
       {"calibration.yaml:", "termz"}},
      {"calibration: a layer's bytes at the working set without a cache probe", "calibration",
       {{K, [] {
           // the probe's two lines removed, so that only the new check can name it
           std::string s = sub(kLiveCalibration, "per_element: \"4.80691ns\", combine: sum", "per_element: \"4.80691ns\", bytes_at: working_set, combine: sum");
           const auto a = s.find("  cache_probe:"), b = s.find("  ops:", a);
           return s.substr(0, a) + s.substr(b);
         }()}},
       sim_calibration(), {"calibration.yaml:", "bytes_at: working_set", "at least two"}},
      {"calibration: a cold layer's bytes at the working set without a cache probe", "calibration",
       {{K, [] {
           // the shipped calibration without its probe, its warm layers unscaled
           std::string s = kCalibration;
           const auto a = s.find("  cache_probe:"), b = s.find("  ops:", a);
           s = s.substr(0, a) + s.substr(b);
           for (auto at = s.find(", bytes_at: working_set"); at != std::string::npos; at = s.find(", bytes_at: working_set"))
             s.erase(at, std::string(", bytes_at: working_set").size());
           const auto cold = s.find("ops_cold:");
           const auto fw = s.find("kan_forward: {", cold);
           const auto comb = s.find(", combine: sum", fw);
           return s.substr(0, comb) + ", bytes_at: working_set" + s.substr(comb);
         }()}},
       sim_calibration(), {"calibration.yaml:", "ops_cold.kan_forward", "at least two"}},
      {"calibration: bytes at the working set on an op that is not a layer", "calibration",
       {{K, sub(kLiveCalibration, "adam: {fixed: \"1.06781us\", byte_rate: \"7.0249GB/s\",", "adam: {fixed: \"1.06781us\", byte_rate: \"7.0249GB/s\", bytes_at: working_set,")}},
       sim_calibration(), {"calibration.yaml:", "bytes_at"}},
      {"calibration: bytes at an unknown level", "calibration",
       {{K, sub(kLiveCalibration, "per_element: \"4.80691ns\", combine: sum", "per_element: \"4.80691ns\", bytes_at: l2, combine: sum")}},
       sim_calibration(), {"calibration.yaml:", "bytes_at"}},

  };
}

// calibrate plan: measure.live
std::vector<Case> catalogue_part3() {
  return {
      {"calibrate: progress sizes with an empty item", "calibrate", {{P, sub(kCalibratePlan, "progress: \"64KiB,1MiB\"", "progress: \"64KiB,,1MiB\"")}},
       calibrate_plan(), {"plan.yaml", "progress"}},
      {"calibrate: progress size without a unit", "calibrate", {{P, sub(kCalibratePlan, "progress: \"64KiB,1MiB\"", "progress: \"64KiB,big\"")}},
       calibrate_plan(), {"plan.yaml", "progress", "big"}},
      {"calibrate: live ranks 0", "calibrate", {{P, sub(kCalibratePlan, "ranks: [1, 2]", "ranks: [0, 2]")}}, calibrate_plan(),
       {"plan.yaml:", "live.ranks"}},
      {"calibrate: live transport unknown", "calibrate", {{P, sub(kCalibratePlan, "transports: [shm]\n      widths", "transports: [pigeon]\n      widths")}},
       calibrate_plan(), {"plan.yaml:", "live.transports"}},
      {"calibrate: live widths of one entry", "calibrate", {{P, sub(kCalibratePlan, "[[24, 48, 1], [40, 80, 1], [20, 36, 2]]", "[[24], [40, 80, 1]]")}},
       calibrate_plan(), {"plan.yaml:", "live.widths"}},
      {"calibrate: live grid size 0", "calibrate", {{P, sub(kCalibratePlan, "grid_sizes: [7]", "grid_sizes: [0]")}}, calibrate_plan(),
       {"plan.yaml:", "live.grid_sizes"}},
      {"calibrate: live batch as text", "calibrate", {{P, sub(kCalibratePlan, "batch_per_gpu: [4, 16, 64]", "batch_per_gpu: [four]")}},
       calibrate_plan(), {"plan.yaml:", "live.batch_per_gpu"}},
      {"calibrate: live bucket cap without unit", "calibrate", {{P, sub(kCalibratePlan, "bucket_caps: [\"256KiB\"]", "bucket_caps: [256]")}},
       calibrate_plan(), {"plan.yaml:", "live.bucket_caps"}},
      {"calibrate: unknown key in live", "calibrate", {{P, sub(kCalibratePlan, "grid_sizes: [7]", "grid_size: [7]")}}, calibrate_plan(),
       {"plan.yaml:", "grid_size", "unknown"}},
      {"calibrate: rounds zero", "calibrate", {{P, kCalibratePlan}}, {"calibrate", "{d}/plan.yaml", "--out", "{d}/out", "--rounds", "0"},
       {"--rounds"}},
      {"calibrate --from-trace: a trace without ProfilerStep#N", "calibrate", {{"t.json", kParityTrace}, {"w.yaml", kParityWorkload}},
       {"calibrate", "--from-trace", "{d}/t.json", "--workload", "{d}/w.yaml", "--out", "{d}/out"}, {"t.json:", "no ProfilerStep#N"}},
      {"calibrate --from-trace: two traces, one workload", "calibrate", {{"t.json", kParityTrace}, {"w.yaml", kParityWorkload}},
       {"calibrate", "--from-trace", "{d}/t.json", "--from-trace", "{d}/t.json", "--workload", "{d}/w.yaml", "--out", "{d}/out"},
       {"--from-trace", "pair in order"}},
      {"calibrate --from-trace: with a plan", "calibrate", {{P, kCalibratePlan}, {"t.json", kParityTrace}, {"w.yaml", kParityWorkload}},
       {"calibrate", "{d}/plan.yaml", "--from-trace", "{d}/t.json", "--workload", "{d}/w.yaml", "--out", "{d}/out"}, {"not both"}},
      {"calibrate --from-trace: with --rounds", "calibrate", {{"t.json", kParityTrace}, {"w.yaml", kParityWorkload}},
       {"calibrate", "--from-trace", "{d}/t.json", "--workload", "{d}/w.yaml", "--rounds", "2", "--out", "{d}/out"}, {"--rounds", "measures nothing"}},
      {"calibrate --from-trace: with --python", "calibrate", {{"t.json", kParityTrace}, {"w.yaml", kParityWorkload}},
       {"calibrate", "--from-trace", "{d}/t.json", "--workload", "{d}/w.yaml", "--python", "/usr/bin/python3", "--out", "{d}/out"},
       {"--python", "measures nothing"}},
      {"calibrate: --python names no interpreter", "calibrate", {{"x.txt", "x"}},
       {"calibrate", "{src}/configs/calibrate/pytorch-cpu.yaml", "--python", "{d}/no-such-python", "--out", "{d}/out"}, {"no-such-python", "--python"}},
      {"validate: --python with --emit", "validation-plan", {{P, kVPlan}}, {"validate", "{d}/plan.yaml", "--emit", "{d}/emit", "--python", "/usr/bin/python3"},
       {"--python", "goes with the jobs run here"}},
      {"calibrate: --sweep without --from-trace", "calibrate", {{P, kCalibratePlan}},
       {"calibrate", "{d}/plan.yaml", "--sweep", "{src}/configs/calibrations/pytorch-cpu/allreduce-gloo-r0.json", "--out", "{d}/out"},
       {"--sweep", "--from-trace"}},
      {"calibrate: --ranks without --from-trace", "calibrate", {{P, kCalibratePlan}}, {"calibrate", "{d}/plan.yaml", "--ranks", "2", "--out", "{d}/out"},
       {"--ranks", "--from-trace"}},
      {"calibrate --from-trace: a workload of kanscale's own trainer", "calibrate",
       {{"t.json", kParityTrace}, {"w.yaml", sub(kParityWorkload, "implementation: pytorch", "implementation: kanscale")}},
       {"calibrate", "--from-trace", "{d}/t.json", "--workload", "{d}/w.yaml", "--out", "{d}/out"}, {"w.yaml", "implementation", "pytorch"}},

  };
}

// study YAML
std::vector<Case> catalogue_part4() {
  return {
      {"study: a name with a backtick (gnuplot would run it)", "study", {{"study.yaml", sub(kStudy, "name: small", "name: \"x`reboot`\"")}},
       study_file(), {"study.yaml:", "'name'", "plots cannot show"}},
      {"study: a cluster label with $( )", "study",
       {{"study.yaml", sub(kStudy, "calibration: datasheet", "calibration: datasheet\n    label: \"a$(id)\"")}}, study_file(),
       {"study.yaml:", "label", "plots cannot show"}},
      {"study: unknown sweep key", "study", {{"study.yaml", sub(kStudy, "bucket_cap:", "bucket_capp:")}}, study_file(),
       {"study.yaml:", "bucket_capp", "unknown"}},
      {"study: a GPU count that does not fill nodes", "study",
       {{"study.yaml", sub(kStudy, "gpus: [1, 2, 4, 8, 16, 32, 64]", "gpus: [1, 12]")}}, study_file(), {"study.yaml:", "sweep.gpus", "whole nodes"}},
      {"study: more nodes than the cluster has", "study",
       {{"study.yaml", sub(kStudy, "gpus: [1, 2, 4, 8, 16, 32, 64]", "gpus: [1, 8192]")}}, study_file(), {"study.yaml:", "sweep.gpus", "nodes"}},
      {"study: bucket cap without unit", "study", {{"study.yaml", sub(kStudy, "[1MiB, 25MiB]", "[1, 25MiB]")}}, study_file(),
       {"study.yaml:", "bucket_cap"}},
      {"study: widths of one entry", "study", {{"study.yaml", sub(kStudy, "[[64, 256, 256, 1], [64, 1024, 1024, 1]]", "[[64], [64, 1]]")}},
       study_file(), {"study.yaml:", "widths"}},
      {"study: an NCCL restriction on an MPI cluster", "study",
       {{"study.yaml", sub(sub(kStudy, "configs/clusters/dgx-a100.yaml", "configs/clusters/local-cpu.yaml"), "  scaling: [strong, weak]",
                           "  scaling: [strong, weak]\n  gpus_per_node: [2]\n  nccl_algo: [ring]")}},
       study_file(), {"study.yaml:", "nccl_algo", "MPI"}},
      {"study: a missing workload file", "study",
       {{"study.yaml", sub(kStudy, "configs/workloads/default.yaml", "configs/workloads/none.yaml")}}, study_file(),
       {"study.yaml:", "'workload'", "not found (looked in", "configs/workloads/none.yaml and "}},
      {"study: a value given twice", "study", {{"study.yaml", sub(kStudy, "[strong, weak]", "[strong, strong]")}}, study_file(),
       {"study.yaml:", "scaling", "twice"}},
      {"study: interval level 1.5", "study", {{"study.yaml", sub(kStudy, "iterations: 4", "iterations: 4\nintervals: {samples: 10, level: 1.5}")}},
       study_file(), {"study.yaml:", "intervals.level"}},
      {"study: unknown scaling mode", "study", {{"study.yaml", sub(kStudy, "[strong, weak]", "[strong, wide]")}}, study_file(),
       {"study.yaml:", "scaling", "wide"}},
      {"study: --out a directory of other files", "study", {{"study.yaml", kStudy}},
       {"study", "{d}/study.yaml", "--out", "{d}", "--no-plots"}, {"--out", "study.yaml", "input"}},
      {"study: --max-events below the study's", "study", {{"study.yaml", kStudy}},
       {"study", "{d}/study.yaml", "--out", "{d}/out", "--no-plots", "--max-events", "10"}, {"study.yaml:", "max-events"}},
      {"study: no study file", "study", {}, {"study", "--out", "{d}/out"}, {"give a study file"}},
      {"study: an unknown that is not one", "study", {{"study.yaml", kStudy + "unknowns: {warp_factor: [1x, 2x]}\n"}}, study_file(),
       {"study.yaml:", "warp_factor"}},
      {"study: an unknown's range reversed", "study", {{"study.yaml", kStudy + "unknowns: {epoch_overhead: [5s, 1s]}\n"}}, study_file(),
       {"study.yaml:", "epoch_overhead", "above its high end"}},
      {"study: a batch range with no power of two", "study", {{"study.yaml", kStudy + "unknowns: {batch_per_gpu: [3, 3]}\n"}},
       study_file(), {"study.yaml:", "batch_per_gpu", "power of two"}},
      {"study: a factor that is not one", "study", {{"study.yaml", kStudy + "unknowns: {network.inter_bandwidth: [1x, fast]}\n"}},
       study_file(), {"study.yaml:", "network.inter_bandwidth", "fast"}},
      {"study: a nominal outside its range", "study",
       {{"study.yaml", kStudy + "unknowns: {host_overhead: {range: [0s, 1ms], nominal: 5ms}}\n"}}, study_file(),
       {"study.yaml:", "host_overhead", "outside the range"}},
      {"study: a batch mode that is neither", "study", {{"study.yaml", kStudy + "unknowns: {batch_mode: [per_gpu, per_node]}\n"}},
       study_file(), {"study.yaml:", "batch_mode", "per_node"}},
      {"study: published figures at a GPU count the study lacks", "study",
       {{"study.yaml", kStudy + "published: {source: x, gpus: 12, speedup: 9}\n"}}, study_file(), {"study.yaml:", "published", "12"}},
      {"study: a GPU count given twice", "study", {{"study.yaml", sub(kStudy, "[1, 2, 4, 8, 16, 32, 64]", "[1, 2, 2, 8]")}},
       study_file(), {"study.yaml:", "sweep.gpus[2]", "twice"}},
      {"study: a weak-scaling figure without a weak scenario", "study",
       {{"study.yaml", sub(kStudy, "scaling: [strong, weak]", "scaling: [strong]") + "published: {source: x, weak_drop_then_plateau: true}\n"}},
       study_file(), {"study.yaml:", "published", "weak-scaling scenario"}},
      {"study: a batch nominal that is not a power of two", "study",
       {{"study.yaml", kStudy + "unknowns: {batch_per_gpu: {range: [128, 1024], nominal: 300}}\n"}}, study_file(),
       {"study.yaml:", "batch_per_gpu", "power of two"}},
      {"whatif change: a key given twice", "whatif", {},
       with(whatif_q("change"), {"--set", "nccl_algo=ring", "--set", "nccl_algo=tree"}), {"--set", "nccl_algo", "twice"}},
      {"whatif change: a GPU count that cannot be laid out", "whatif", {}, with(whatif_q("change"), {"--set", "gpus=3"}),
       {"--set gpus=3"}},
      {"study: published efficiency above 100%", "study",
       {{"study.yaml", kStudy + "published: {source: x, gpus: 8, efficiency_pct: 120}\n"}}, study_file(),
       {"study.yaml:", "efficiency_pct"}},

  };
}

// whatif
std::vector<Case> catalogue_part5() {
  return {
      {"whatif: unknown query", "whatif", {}, with(whatif_q("fly"), {"--gpus", "8"}), {"unknown query 'fly'"}},
      {"whatif gpus: no budget", "whatif", {}, whatif_q("gpus"), {"--budget"}},
      {"whatif gpus: budget in fortnights", "whatif", {}, with(whatif_q("gpus"), {"--budget", "2fortnights"}), {"--budget", "2fortnights"}},
      {"whatif gpus: efficiency above 1", "whatif", {}, with(whatif_q("gpus"), {"--budget", "2h", "--min-efficiency", "1.5"}),
       {"--min-efficiency"}},
      {"whatif gpus: fractional epochs", "whatif", {}, with(whatif_q("gpus"), {"--budget", "2h", "--epochs", "2.5"}), {"--epochs"}},
      {"whatif change: --set without =", "whatif", {}, with(whatif_q("change"), {"--set", "network.latency"}), {"--set", "KEY=VALUE"}},
      {"whatif change: unknown key", "whatif", {}, with(whatif_q("change"), {"--set", "warp_drive=2x"}), {"--set", "unknown key"}},
      {"whatif change: a latency as a value, not a factor", "whatif", {}, with(whatif_q("change"), {"--set", "network.latency=5us"}),
       {"--set", "factor"}},
      {"whatif cluster: one cluster", "whatif", {}, with(whatif_q("cluster"), {"--budget", "1h"}), {"at least two"}},
      {"whatif cluster: a price without a currency", "whatif",
       {{C, kCluster + "price: {per_gpu_hour: 2.5}\n"}},
       {"whatif", "cluster", "--cluster", "{d}/cluster.yaml", "--cluster", "{src}/configs/clusters/dgx-a100.yaml", "--workload",
        "{src}/configs/workloads/default.yaml", "--json", "{d}/out.json"},
       {"cluster.yaml:", "currency"}},
      {"whatif model: vary depth", "whatif", {}, with(whatif_q("model"), {"--vary", "depth"}), {"--vary", "depth"}},
      {"whatif bucket-cap: a cap that is not a size", "whatif", {}, with(whatif_q("bucket-cap"), {"--caps", "1MiB,lots"}),
       {"--caps", "lots"}},

  };
}

// workload YAML
std::vector<Case> catalogue_part6() {
  return {
      {"workload: width past int", "workload", {{W, sub(kWorkload, "[64, 256, 256, 1]", "[4294967298, 5, 1]")}}, sim_workload(),
       {"workload.yaml:", "kan.widths[0]", "at most"}},
      {"workload: widths in billions", "workload", {{W, sub(kWorkload, "[64, 256, 256, 1]", "[2000000000, 2000000000, 1]")}},
       sim_workload(), {"workload.yaml:", "kan.widths", "parameters"}},
      {"workload: grid_size past int", "workload", {{W, sub(kWorkload, "grid_size: 5", "grid_size: 2147483648")}}, sim_workload(),
       {"workload.yaml:", "kan.grid_size"}},
      {"workload: spline order above 16", "workload", {{W, sub(kWorkload, "spline_order: 3", "spline_order: 17")}}, sim_workload(),
       {"workload.yaml:", "kan.spline_order"}},
      {"workload: epochs past int", "workload", {{W, sub(kWorkload, "epochs: 10", "epochs: 3000000000")}}, sim_workload(),
       {"workload.yaml:", "epochs"}},
      {"workload: a torch version that names none", "workload", {{W, sub(kWorkload, "implementation: pytorch", "implementation: pytorch\ntorch: latest")}},
       sim_workload(), {"workload.yaml:", "torch", "like \"2.11\"", "latest"}},
      {"workload: torch for kanscale's own trainer", "workload", {{W, sub(kWorkload, "implementation: pytorch", "implementation: kanscale\ntorch: \"2.11\"")}},
       sim_workload(), {"workload.yaml:", "torch", "implementation: pytorch only"}},
      {"workload: dataset past 2^53", "workload", {{W, sub(kWorkload, "dataset_size: 1000000", "dataset_size: 9223372036854775807")}},
       sim_workload(), {"workload.yaml:", "dataset_size"}},
      {"workload: weak scaling overflows the dataset", "workload",
       {{W, sub(kWorkload, "dataset_size: 1000000", "dataset_size: 9007199254740991")}},
       with(sim_workload(), {"--scaling", "weak"}), {"workload.yaml", "dataset_size", "weak"}},
      {"workload: batch as float", "workload", {{W, sub(kWorkload, "batch_per_gpu: 1024", "batch_per_gpu: 10.5")}}, sim_workload(),
       {"workload.yaml:", "batch_per_gpu", "integer"}},
      {"workload: zero batch", "workload", {{W, sub(kWorkload, "batch_per_gpu: 1024", "batch_per_gpu: 0")}}, sim_workload(),
       {"workload.yaml:", "batch_per_gpu"}},
      {"workload: bucket cap in bits word", "workload", {{W, sub(kWorkload, "\"25MiB\"", "\"25 megabytes\"")}}, sim_workload(),
       {"workload.yaml:", "ddp.bucket_cap"}},
      {"workload: missing name", "workload", {{W, sub(kWorkload, "name: kan-teacher-256", "")}}, sim_workload(),
       {"workload.yaml:", "'name'", "missing"}},
      {"workload: duplicate seed", "workload", {{W, sub(kWorkload, "seed: 42", "seed: 42\nseed: 7")}}, sim_workload(),
       {"workload.yaml:", "seed", "duplicate"}},
      {"workload: seed past int64", "workload", {{W, sub(kWorkload, "seed: 42", "seed: 18446744073709551616")}}, sim_workload(),
       {"workload.yaml:", "seed"}},
      {"workload: widths not a list", "workload", {{W, sub(kWorkload, "[64, 256, 256, 1]", "64")}}, sim_workload(),
       {"workload.yaml:", "kan.widths", "list"}},

  };
}

// calibration YAML
std::vector<Case> catalogue_part7() {
  return {
      {"calibration: concurrency past int", "calibration", {{K, sub(kCalibration, "concurrency: 2", "concurrency: 2147483648")}},
       sim_calibration(), {"calibration.yaml:", "concurrency", "at most"}},
      {"calibration: jitter above 1", "calibration", {{K, subval(kCalibration, "jitter_sigma: ", "3")}},
       sim_calibration(), {"calibration.yaml:", "compute.jitter_sigma"}},
      {"calibration: jitter as text", "calibration", {{K, subval(kCalibration, "jitter_sigma: ", "lots")}},
       sim_calibration(), {"calibration.yaml:", "compute.jitter_sigma", "number"}},
      {"calibration: time overflows", "calibration", {{K, sub(kCalibration, "host_overhead: \"0s\"", "host_overhead: \"1e307h\"")}},
       sim_calibration(), {"calibration.yaml:", "compute.host_overhead", "too large"}},
      {"calibration: negative latency", "calibration", {{K, subval(kCalibration, "latency: ", "\"-1us\",")}},
       sim_calibration(), {"calibration.yaml:", "latency"}},
      {"calibration: byte rate without unit", "calibration", {{K, subval(kCalibration, "byte_rate: ", "11.3767,")}},
       sim_calibration(), {"calibration.yaml:", "byte_rate"}},
      {"calibration: missing source", "calibration", {{K, sub(kCalibration, "source: fitted\n", "")}}, sim_calibration(),
       {"calibration.yaml:", "source", "missing"}},
      {"calibration: duplicate name", "calibration", {{K, sub(kCalibration, "name: local-cpu", "name: local-cpu\nname: other")}},
       sim_calibration(), {"calibration.yaml:", "name", "duplicate"}},
      {"calibration: unknown op key", "calibration", {{K, sub(kCalibration, "combine: sum,", "combine: sum, bogus: 1,")}},
       sim_calibration(), {"calibration.yaml:", "bogus", "unknown"}},
      {"calibration: memory size overflows", "calibration", {{K, subval(kCalibration, "\n  fixed: ", "\"1e300PiB\"")}},
       sim_calibration(), {"calibration.yaml:", "memory.fixed"}},

  };
}

// measurement plans (configs/measure)
std::vector<Case> catalogue_part8() {
  return {
      {"measure plan: G past int", "measure-plan", {{P, sub(kPlan, "[8, 16, 128, 5, 3]", "[8, 16, 128, 4294967301, 3]")}},
       measure_plan(), {"plan.yaml:", "shapes[0]", "at most"}},
      {"measure plan: batch past int64", "measure-plan", {{P, sub(kPlan, "[8, 16, 128, 5, 3]", "[99999999999999999999, 16, 128, 5, 3]")}},
       measure_plan(), {"plan.yaml:", "shapes[0]"}},
      {"measure plan: shape too large", "measure-plan", {{P, sub(kPlan, "[8, 16, 128, 5, 3]", "[8, 2000000000, 2000000000, 5, 3]")}},
       measure_plan(), {"plan.yaml:", "shapes[0]", "parameters"}},
      {"measure plan: order above 16", "measure-plan", {{P, sub(kPlan, "[8, 16, 128, 5, 3]", "[8, 16, 128, 5, 30]")}}, measure_plan(),
       {"plan.yaml:", "shapes[0]", "16"}},
      {"measure plan: shape of 4 entries", "measure-plan", {{P, sub(kPlan, "[8, 16, 128, 5, 3]", "[8, 16, 128, 5]")}}, measure_plan(),
       {"plan.yaml:", "shapes[0]"}},
      {"measure plan: shape above the memory limit", "measure-plan",
       {{P, sub(kPlan, "[8, 16, 128, 5, 3]", "[2000000000, 1000, 1000, 5, 3]")}}, measure_plan(), {"plan.yaml", "shapes", "--memory-limit"}},
      {"measure plan: repeats past int", "measure-plan", {{P, sub(kPlan, "repeats: 9", "repeats: 2147483648")}}, measure_plan(),
       {"plan.yaml:", "repeats", "at most"}},
      {"measure plan: repeats as text", "measure-plan", {{P, sub(kPlan, "repeats: 9", "repeats: nine")}}, measure_plan(),
       {"plan.yaml:", "repeats", "integer"}},
      {"measure plan: flush overflows", "measure-plan", {{P, sub(kPlan, "threads: 1", "threads: 1\nflush_between_repeats: \"1e308PiB\"")}},
       measure_plan(), {"plan.yaml:", "flush_between_repeats"}},
      {"measure plan: missing name", "measure-plan", {{P, sub(kPlan, "name: cpu-ci", "")}}, measure_plan(), {"plan.yaml:", "name", "missing"}},
      {"measure plan: duplicate warmup", "measure-plan", {{P, sub(kPlan, "warmup: 2", "warmup: 2\nwarmup: 3")}}, measure_plan(),
       {"plan.yaml:", "warmup", "duplicate"}},
      {"measure plan: entry not an integer", "measure-plan", {{P, sub(kPlan, "[8, 16, 128, 5, 3]", "[8, 16, x, 5, 3]")}},
       measure_plan(), {"plan.yaml:", "shapes[0]", "integer"}},

  };
}

// validation plans (validation/plans)
std::vector<Case> catalogue_part9() {
  const std::string vplan = validation_plan();
  return {
      {"validation plan: huge rounds", "validation-plan", {{VP, sub(vplan, "rounds: 3", "rounds: 4294967296")}}, validate_plan(),
       {"plan.yaml:", "rounds", "at most"}},
      {"validation plan: rounds past the limit", "validation-plan", {{VP, sub(vplan, "rounds: 3", "rounds: 2147483647")}},
       validate_plan(), {"plan.yaml:", "rounds", "at most"}},
      {"validation plan: steps past int", "validation-plan", {{VP, sub(vplan, "steps: 30", "steps: 2147483648")}}, validate_plan(),
       {"plan.yaml:", "steps", "at most"}},
      {"validation plan: width past int", "validation-plan", {{VP, sub(vplan, "[[32, 256, 32]]", "[[4294967298, 5, 1]]")}},
       validate_plan(), {"plan.yaml:", "cases.widths[0]", "at most"}},
      {"validation plan: grid size past int", "validation-plan", {{VP, sub(vplan, "grid_sizes: [5]", "grid_sizes: [4294967301]")}},
       validate_plan(), {"plan.yaml:", "cases.grid_sizes[0]", "at most"}},
      {"validation plan: bucket cap not a scalar", "validation-plan", {{VP, sub(vplan, "bucket_caps: [\"1MiB\"]", "bucket_caps: [[1]]")}},
       validate_plan(), {"plan.yaml:", "cases.bucket_caps[0]"}},
      {"validation plan: bucket cap overflows", "validation-plan", {{VP, sub(vplan, "\"1MiB\"", "\"1e308PiB\"")}}, validate_plan(),
       {"plan.yaml:", "cases.bucket_caps[0]"}},
  };
}

// validation plans with PyTorch cases
std::vector<Case> catalogue_part10() {
  const std::string vplan = validation_plan();
  return {
      {"pytorch plan: MPI transports", "plan-pytorch", {{VP, sub(kTorchPlan, "bucket_caps: [\"1MiB\"]", "bucket_caps: [\"1MiB\"]\n  transports: [shm]")}},
       validate_plan(), {"plan.yaml:", "cases.transports", "gloo"}},
      {"pytorch plan: srun", "plan-pytorch", {{VP, sub(kTorchPlan, "backend: cpu", "backend: cpu\nlauncher: srun")}}, validate_plan(),
       {"plan.yaml:", "launcher", "one node"}},
      {"pytorch plan: MPI microbenchmarks as its calibration", "plan-pytorch",
       {{VP, sub(kTorchPlan, "calibration: datasheet", "calibration:\n  measure: {ranks: 2, kernels: configs/measure/cpu-ci.yaml}")}},
       validate_plan(), {"plan.yaml:", "calibration", "gloo"}},
      {"pytorch plan: an unknown implementation", "plan-pytorch", {{VP, sub(kTorchPlan, "implementation: pytorch", "implementation: torch")}},
       validate_plan(), {"plan.yaml:", "implementation", "pytorch"}},
      {"pytorch plan: threads per rank zero", "plan-pytorch", {{VP, sub(kTorchPlan, "threads_per_rank: 1", "threads_per_rank: 0")}},
       validate_plan(), {"plan.yaml:", "threads_per_rank"}},
      {"pytorch plan: threads per rank as text", "plan-pytorch", {{VP, sub(kTorchPlan, "threads_per_rank: 1", "threads_per_rank: one")}},
       validate_plan(), {"plan.yaml:", "threads_per_rank"}},
      {"pytorch plan: nccl without a GPU", "plan-pytorch", {{VP, sub(kTorchPlan, "backend: cpu", "backend: cuda")}},
       {"validate", "{d}/plan.yaml", "--out", "{d}/out"}, {"plan.yaml", "backend", "no CUDA device"}},
      {"pytorch plan: transports as a map", "plan-pytorch", {{VP, sub(kTorchPlan, "bucket_caps: [\"1MiB\"]", "bucket_caps: [\"1MiB\"]\n  transports: {a: 1}")}},
       validate_plan(), {"plan.yaml:", "cases.transports"}},
      {"validation plan: missing name", "validation-plan", {{VP, sub(vplan, "name: ci-small", "")}}, validate_plan(),
       {"plan.yaml:", "name", "missing"}},
      {"validation plan: duplicate steps", "validation-plan", {{VP, sub(vplan, "steps: 30", "steps: 30\nsteps: 40")}}, validate_plan(),
       {"plan.yaml:", "steps", "duplicate"}},
      {"validation plan: ranks as text", "validation-plan", {{VP, sub(vplan, "ranks: [1, 2]", "ranks: [one, 2]")}}, validate_plan(),
       {"plan.yaml:", "cases.ranks[0]", "integer"}},
      {"validation plan: measure ranks past int", "validation-plan", {{VP, sub(vplan, "ranks: 2\n", "ranks: 9999999999\n")}},
       validate_plan(), {"plan.yaml:", "calibration.measure.ranks", "at most"}},
      {"validation plan: skip_shapes_under 1.5", "validation-plan",
       {{VP, sub(vplan, "ranks: 2\n", "ranks: 2\n    skip_shapes_under: 1.5\n")}}, validate_plan(),
       {"plan.yaml:", "calibration.measure.skip_shapes_under", "below 1"}},

  };
}

// measurement JSON (fit inputs, resume files)
std::vector<Case> catalogue_part11() {
  return {
      {"json: size_bytes as text", "measurement-json", {{"m.json", jset(kAllreduce, "/points/0/size_bytes", "\"8\"")}},
       fit_with("--collectives"), {"m.json", "size_bytes"}},
      {"json: point lacks time", "measurement-json", {{"m.json", jset(kAllreduce, "/points/0/out_of_place/time_us", "")}},
       fit_with("--collectives"), {"m.json", "time_us"}},
      {"json: ranks as text", "measurement-json", {{"m.json", jset(kAllreduce, "/metadata/ranks", "\"two\"")}},
       fit_with("--collectives"), {"m.json", "ranks"}},
      {"json: ranks past int", "measurement-json", {{"m.json", jset(kAllreduce, "/metadata/ranks", "4294967298")}},
       fit_with("--collectives"), {"m.json", "ranks"}},
      {"json: wrong count as float", "measurement-json", {{"m.json", jset(kAllreduce, "/points/1/out_of_place/wrong", "0.5")}},
       fit_with("--collectives"), {"m.json", "wrong"}},
      {"json: negative time", "measurement-json", {{"m.json", jset(kAllreduce, "/points/2/out_of_place/time_us", "-3")}},
       fit_with("--collectives"), {"m.json", "time_us"}},
      {"json: broadcast in_place missing", "measurement-json", {{"m.json", jset(kBroadcast, "/points/0/in_place", "")}},
       fit_with("--collectives"), {"m.json", "in_place"}},
      {"json: interference as text", "measurement-json",
       {{"m.json", jset(kInterference, "/interference_per_collective_second_mean", "\"high\"")}}, fit_interference(),
       {"m.json", "interference_per_collective_second_mean"}},
      {"json: interference bytes as text", "measurement-json", {{"m.json", jset(kInterference, "/allreduce_bytes", "\"4MiB\"")}},
       fit_interference(), {"m.json", "allreduce_bytes"}},
      {"json: kernels grid_size past int", "measurement-json", {{"m.json", jset(kKernels, "/memory/0/grid_size", "4294967301")}},
       fit_with("--kernels"), {"m.json", "grid_size"}},
      {"json: kernels runtime memory as text", "measurement-json",
       {{"m.json", jset(kKernels, "/metadata/runtime_memory_bytes", "\"14MiB\"")}}, fit_with("--kernels"),
       {"m.json", "runtime_memory_bytes"}},
      {"json: not JSON", "measurement-json", {{"m.json", "{\"points\": [1, 2"}}, fit_with("--collectives"), {"m.json", "JSON"}},
      {"json: resume file points lack a field", "measurement-json", {{"m.json", jset(kAllreduce, "/points/0/count", "")}},
       {"measure", "allreduce", "-b", "8", "-e", "64M", "-f", "2", "-n", "20", "-w", "5", "--nonblocking", "--resume", "{d}/m.json"},
       {"m.json"}},

  };
}

// eval's CSV
std::vector<Case> catalogue_part12() {
  return {
      {"csv: too few columns", "csv", {{"x.csv", "x0,x1\n0.5\n"}}, eval_csv(), {"x.csv:2", "2"}},
      {"csv: too many columns", "csv", {{"x.csv", "x0,x1\n0.5,0.1,0.7\n"}}, eval_csv(), {"x.csv:2"}},
      {"csv: trailing comma", "csv", {{"x.csv", "x0,x1\n0.5,0.1,\n"}}, eval_csv(), {"x.csv:2", "comma"}},
      {"csv: header with wrong column count", "csv", {{"x.csv", "x0,x1,x2\n0.5,0.1\n"}}, eval_csv(), {"x.csv:1", "header"}},
      {"csv: header with trailing comma", "csv", {{"x.csv", "x0,x1,\n0.5,0.1\n"}}, eval_csv(), {"x.csv:1"}},
      {"csv: text in a row", "csv", {{"x.csv", "x0,x1\n0.5,abc\n"}}, eval_csv(), {"x.csv:2"}},
      {"csv: text in the third line", "csv", {{"x.csv", "x0,x1\n0.5,0.1\nfoo,bar\n"}}, eval_csv(), {"x.csv:3"}},
      {"csv: infinity", "csv", {{"x.csv", "x0,x1\n0.5,inf\n"}}, eval_csv(), {"x.csv:2"}},
      {"csv: NaN", "csv", {{"x.csv", "x0,x1\nnan,0.1\n"}}, eval_csv(), {"x.csv:2"}},
      {"csv: value overflows float", "csv", {{"x.csv", "x0,x1\n1e39,0.1\n"}}, eval_csv(), {"x.csv:2"}},
      {"csv: a directory", "csv", {}, {"eval", "--checkpoint", "{ckpt}", "--input", "{d}"}, {"is a directory"}},
      {"csv: missing", "csv", {}, eval_csv(), {"x.csv", "cannot open"}},

  };
}

// nccl-tests logs
std::vector<Case> catalogue_part13() {
  return {
      {"log: size past int64", "nccl-log", {{"run.log", sub(kLog, "           8             2     float", "99999999999999999999999             2     float")}},
       fit_log(), {"run.log:", "size"}},
      {"log: count past int64", "nccl-log", {{"run.log", sub(kLog, "           8             2     float", "           8 99999999999999999999999     float")}},
       fit_log(), {"run.log:"}},
      {"log: time as text", "nccl-log", {{"run.log", sub(kLog, "135.8    0.00", "fast    0.00")}}, fit_log(), {"run.log:"}},
      {"log: busbw infinite", "nccl-log", {{"run.log", sub(kLog, "126.6    0.00    0.01", "126.6    0.00    inf")}}, fit_log(),
       {"run.log:"}},
      {"log: no table", "nccl-log", {{"run.log", "# nThread 1 nGpus 1 minBytes 8\n#\n"}}, fit_log(), {"run.log"}},
      {"log: empty", "nccl-log", {{"run.log", ""}}, fit_log(), {"run.log"}},
      {"log: count not a number", "nccl-log", {{"run.log", sub(kLog, "           8             2     float", "           8           two     float")}},
       fit_log(), {"run.log:", "count"}},
      {"log: negative time", "nccl-log", {{"run.log", sub(kLog, "135.8    0.00", "-135.8    0.00")}}, fit_log(), {"run.log:"}},
      {"log: a directory", "nccl-log", {}, {"fit", "--nccl-tests", "{d}", "--out", "{d}/out.yaml"}, {"is a directory"}},

  };
}

// safetensors checkpoints (eval --checkpoint)
std::vector<Case> catalogue_part14() {
  return {
      {"safetensors: metadata claims wide layers", "safetensors", st(st_meta("kan_widths", "2,100000000,1")), eval_st(),
       {"m.safetensors", "kan_widths"}},
      {"safetensors: width past int", "safetensors", st(st_meta("kan_widths", "2,4294967301,1")), eval_st(),
       {"m.safetensors", "kan_widths"}},
      {"safetensors: width not a number", "safetensors", st(st_meta("kan_widths", "2,five,1")), eval_st(), {"m.safetensors", "kan_widths"}},
      {"safetensors: grid size past int", "safetensors", st(st_meta("kan_grid_size", "4294967301")), eval_st(),
       {"m.safetensors", "kan_grid_size"}},
      {"safetensors: order past int", "safetensors", st(st_meta("kan_spline_order", "99999999999999999999")), eval_st(),
       {"m.safetensors", "kan_spline_order"}},
      {"safetensors: missing widths", "safetensors", st(st_edit([](nlohmann::json& h) { h["__metadata__"].erase("kan_widths"); })),
       eval_st(), {"m.safetensors", "kan_widths"}},
      {"safetensors: shape overflows", "safetensors",
       st(st_edit([](nlohmann::json& h) { h["layers.0.base_weight"]["shape"] = {4294967296ULL, 4294967296ULL, 4}; })), eval_st(),
       {"m.safetensors", "layers.0.base_weight"}},
      {"safetensors: offsets past the end", "safetensors",
       st(st_edit([](nlohmann::json& h) { h["layers.0.base_weight"]["data_offsets"] = {0, 1u << 30}; })), eval_st(),
       {"m.safetensors", "layers.0.base_weight"}},
      {"safetensors: missing tensor", "safetensors", st(st_edit([](nlohmann::json& h) { h.erase("layers.1.spline_weight"); })),
       eval_st(), {"m.safetensors", "layers.1.spline_weight"}},
      {"safetensors: truncated", "safetensors", st(read_file(checkpoint().model).substr(0, 100)), eval_st(), {"m.safetensors"}},
      {"safetensors: a directory", "safetensors", {}, {"eval", "--checkpoint", "{d}", "--input", "{d}/x.csv"}, {"is a directory"}},

  };
}

// flags: simulate
std::vector<Case> catalogue_part15() {
  return {
      {"simulate: --iterations huge", "flags-simulate", {}, sim({"--iterations", "2147483647"}), {"--iterations", "1000"}},
      {"simulate: --iterations past int", "flags-simulate", {}, sim({"--iterations", "99999999999"}), {"--iterations"}},
      {"simulate: --gpus past the limit", "flags-simulate", {}, sim({"--gpus", "99999999999"}), {"--gpus"}},
      {"simulate: --gpus negative", "flags-simulate", {}, sim({"--gpus", "-4"}), {"--gpus"}},
      {"simulate: --gpus twice", "flags-simulate", {}, sim({"--gpus", "2,2"}), {"--gpus", "twice"}},
      {"simulate: --gpus-per-node zero", "flags-simulate", {}, sim({"--gpus-per-node", "0"}), {"--gpus-per-node"}},
      {"simulate: --gpus-per-node past int", "flags-simulate", {}, sim({"--gpus-per-node", "4294967298"}), {"--gpus-per-node"}},
      {"simulate: --seed past uint64", "flags-simulate", {}, sim({"--seed", "99999999999999999999"}), {"--seed"}},
      {"simulate: --scaling typo", "flags-simulate", {}, sim({"--scaling", "weeak"}), {"--scaling"}},
      {"simulate: --max-events negative", "flags-simulate", {}, sim({"--max-events", "-1"}), {"--max-events"}},
      {"simulate: --trace-ranks beyond N", "flags-simulate", {}, sim({"--gpus", "2", "--trace", "{d}/t.json", "--trace-ranks", "5"}),
       {"--trace-ranks"}},
      {"simulate: --json a directory", "flags-simulate", {}, {"simulate", "--cluster", "{src}/configs/clusters/finisterrae3.yaml",
       "--workload", "{src}/configs/workloads/default.yaml", "--json", "{d}"}, {"--json", "directory"}},

  };
}

// train: PyTorch DDP runs (implementation: pytorch)
std::vector<Case> catalogue_part16() {
  return {
      {"pytorch: --python missing", "train-pytorch", {{"w.yaml", kTorchWorkload}},
       {"train", "--workload", "{d}/w.yaml", "--python", "{d}/no-python"}, {"--python {d}/no-python: no such file", "python3-torch"}},
      {"pytorch: --python a directory", "train-pytorch", {{"w.yaml", kTorchWorkload}},
       {"train", "--workload", "{d}/w.yaml", "--python", "{d}"}, {"--python {d}: a directory"}},
      {"pytorch: --python not executable", "train-pytorch", {{"w.yaml", kTorchWorkload}, {"py", "print(1)\n"}},
       {"train", "--workload", "{d}/w.yaml", "--python", "{d}/py"}, {"--python {d}/py: not executable"}},
      {"pytorch: --port-range backwards", "train-pytorch", {{"w.yaml", kTorchWorkload}},
       {"train", "--workload", "{d}/w.yaml", "--port-range", "30000-29000"}, {"--port-range 30000-29000", "FIRST-LAST"}},
      {"pytorch: --port-range privileged", "train-pytorch", {{"w.yaml", kTorchWorkload}},
       {"train", "--workload", "{d}/w.yaml", "--port-range", "80-90"}, {"--port-range 80-90", "1024 to 65535"}},
      {"pytorch: --ranks zero", "train-pytorch", {{"w.yaml", kTorchWorkload}}, {"train", "--workload", "{d}/w.yaml", "--ranks", "0"},
       {"--ranks", "1 to 4096"}},
      {"pytorch: --steps within the warm-up", "train-pytorch", {{"w.yaml", kTorchWorkload}},
       {"train", "--workload", "{d}/w.yaml", "--steps", "5", "--warmup", "10"}, {"--steps 5: must be more than --warmup 10"}},
      {"pytorch: --csv is the kanscale trainer's", "train-pytorch", {{"w.yaml", kTorchWorkload}},
       {"train", "--workload", "{d}/w.yaml", "--csv", "{d}/o.csv"}, {"--csv", "not for implementation: pytorch"}},
      {"pytorch: --epochs (no data set)", "train-pytorch", {{"w.yaml", kTorchWorkload}},
       {"train", "--workload", "{d}/w.yaml", "--epochs", "3"}, {"--epochs", "--steps"}},
      {"pytorch: --profile a directory", "train-pytorch", {{"w.yaml", kTorchWorkload}},
       {"train", "--workload", "{d}/w.yaml", "--profile", "{d}"}, {"--profile"}},
      {"pytorch: a kernel-only calibration", "pytorch-calibration", {},
       {"simulate", "--cluster", "{src}/configs/clusters/local-cpu.yaml", "--workload", "{src}/configs/workloads/default.yaml",
        "--calibration", "{src}/configs/calibrations/local-cpu.yaml", "--gpus", "1,2"},
       {"local-cpu.yaml", "kanscale's own kernels only", "kanscale calibrate configs/calibrate/pytorch-cpu.yaml"}},
      {"measure allreduce: gloo at one rank", "pytorch-calibration", {},
       {"measure", "allreduce", "--backend", "gloo", "--ranks", "1", "--json", "{d}/a.json"}, {"--ranks", "2 to 4096"}},
      {"measure allreduce: --ranks for mpi", "pytorch-calibration", {},
       {"measure", "allreduce", "--ranks", "4", "--json", "{d}/a.json"}, {"--ranks", "--backend gloo or torch-nccl only"}},
      {"measure allreduce: torch-nccl without a GPU", "pytorch-calibration", {},
       {"measure", "allreduce", "--backend", "torch-nccl", "--ranks", "2", "--json", "{d}/a.json"}, {"nccl", "sees no CUDA device"}},
      {"calibrate: the GPU plan without a CUDA torch", "pytorch-calibration", {},
       {"calibrate", "{src}/configs/calibrate/pytorch-gpu.yaml", "--out", "{d}/out"}, {"pytorch-gpu.yaml", "backend", "sees no CUDA device"}},
      {"calibrate: a GPU plan profiling 2 shapes", "pytorch-calibration",
       {{"p.yaml", "name: p\ncluster: configs/clusters/single-h200.yaml\nbackend: cuda\nimplementation: pytorch\ncalibration:\n  measure:\n"
                   "    profile: {widths: [[8, 16, 1]], grid_sizes: [5], batch_per_gpu: [8, 64]}\n"}},
       {"calibrate", "{d}/p.yaml", "--out", "{d}/out"}, {"p.yaml", "profile", "at least 3 shapes"}},
      {"measure allreduce: gloo with --resume", "pytorch-calibration", {},
       {"measure", "allreduce", "--backend", "gloo", "--resume", "{d}/a.json"}, {"--backend gloo", "--resume"}},
      {"measure torch-ops: no --json", "pytorch-calibration", {}, {"measure", "torch-ops"}, {"--json"}},
      {"measure torch-ops: a plan without widths", "pytorch-calibration", {{"p.yaml", "name: p\ngrid_sizes: [5]\nbatch_per_gpu: [4]\n"}},
       {"measure", "torch-ops", "--plan", "{d}/p.yaml", "--json", "{d}/o.json"}, {"p.yaml", "widths"}},
      {"measure torch-ops: --python a directory", "pytorch-calibration", {},
       {"measure", "torch-ops", "--plan", "{src}/configs/measure/pytorch-cpu.yaml", "--json", "{d}/o.json", "--python", "{d}"},
       {"--python", "a directory"}},
      {"calibrate: a pytorch plan with kernels", "pytorch-calibration",
       {{"p.yaml", "name: p\ncluster: configs/clusters/local-cpu-gloo.yaml\nimplementation: pytorch\ncalibration:\n  measure:\n"
                   "    ranks: 2\n    torch_ops: configs/measure/pytorch-cpu.yaml\n    kernels: configs/measure/cpu-default.yaml\n"}},
       {"calibrate", "{d}/p.yaml", "--out", "{d}/out"}, {"p.yaml", "kernels", "torch_ops"}},
      {"pytorch: nccl without a GPU", "train-pytorch", {{"w.yaml", kTorchWorkload}},
       {"train", "--workload", "{d}/w.yaml", "--backend", "cuda", "--json", "{d}/o.json"}, {"nccl", "sees no CUDA device"}},
      {"pytorch: --ranks on kanscale's trainer", "train-pytorch", {},
       {"train", "--workload", "{src}/configs/workloads/pykan-exp-sin.yaml", "--ranks", "2"},
       {"--ranks: only for a workload with implementation: pytorch"}},

  };
}

// flags: train
std::vector<Case> catalogue_part17() {
  return {
      {"train: --steps zero", "flags-train", {}, {"train", "--workload", "{src}/configs/workloads/pykan-exp-sin.yaml", "--steps", "0"},
       {"--steps"}},
      {"train: --steps past int64", "flags-train", {},
       {"train", "--workload", "{src}/configs/workloads/pykan-exp-sin.yaml", "--steps", "99999999999999999999"}, {"--steps"}},
      {"train: --epochs past int", "flags-train", {},
       {"train", "--workload", "{src}/configs/workloads/pykan-exp-sin.yaml", "--epochs", "4294967296"}, {"--epochs"}},
      {"train: --threads zero", "flags-train", {}, {"train", "--workload", "{src}/configs/workloads/pykan-exp-sin.yaml", "--threads", "0"},
       {"--threads"}},
      {"train: --threads huge", "flags-train", {},
       {"train", "--workload", "{src}/configs/workloads/pykan-exp-sin.yaml", "--threads", "100000000"}, {"--threads"}},
      {"train: --seed as text", "flags-train", {}, {"train", "--workload", "{src}/configs/workloads/pykan-exp-sin.yaml", "--seed", "abc"},
       {"--seed"}},
      {"train: --inject-delay-us negative", "flags-train", {},
       {"train", "--workload", "{src}/configs/workloads/pykan-exp-sin.yaml", "--inject-delay-us", "-5"}, {"--inject-delay-us"}},
      {"train: --inject-delay-us infinite", "flags-train", {},
       {"train", "--workload", "{src}/configs/workloads/pykan-exp-sin.yaml", "--inject-delay-us", "inf"}, {"--inject-delay-us"}},
      {"train: model above the memory limit", "flags-train", {{W, sub(kSmallWorkload, "widths: [2, 5, 1]", "widths: [2, 1000000000, 1]")}},
       {"train", "--workload", "{d}/workload.yaml", "--steps", "1", "--json", "{d}/out.json"}, {"--memory-limit"}},
      {"train: data set above the memory limit", "flags-train",
       {{W, sub(kSmallWorkload, "dataset_size: 4096", "dataset_size: 9007199254740992")}},
       {"train", "--workload", "{d}/workload.yaml", "--steps", "1", "--json", "{d}/out.json"}, {"workload.yaml", "--memory-limit"}},
      {"train: --memory-limit without unit", "flags-train", {},
       {"train", "--workload", "{src}/configs/workloads/pykan-exp-sin.yaml", "--memory-limit", "64"}, {"--memory-limit"}},
      {"train: --workload missing", "flags-train", {}, {"train", "--steps", "3"}, {"--workload"}},

  };
}

// flags: eval
std::vector<Case> catalogue_part18() {
  return {
      {"eval: --checkpoint missing", "flags-eval", ok_csv, {"eval", "--input", "{d}/x.csv"}, {"--checkpoint"}},
      {"eval: --input missing", "flags-eval", {}, {"eval", "--checkpoint", "{ckpt}"}, {"--input"}},
      {"eval: --threads zero", "flags-eval", ok_csv, with(eval_csv(), {"--threads", "0"}), {"--threads"}},
      {"eval: --threads negative", "flags-eval", ok_csv, with(eval_csv(), {"--threads", "-2"}), {"--threads"}},
      {"eval: --threads past int", "flags-eval", ok_csv, with(eval_csv(), {"--threads", "4294967296"}), {"--threads"}},
      {"eval: --threads as text", "flags-eval", ok_csv, with(eval_csv(), {"--threads", "many"}), {"--threads"}},
      {"eval: unknown flag", "flags-eval", ok_csv, with(eval_csv(), {"--bogus"}), {"--bogus"}},
      {"eval: stray word", "flags-eval", ok_csv, with(eval_csv(), {"extra"}), {"extra"}},
      {"eval: checkpoint missing", "flags-eval", ok_csv, {"eval", "--checkpoint", "{d}/none.safetensors", "--input", "{d}/x.csv"},
       {"none.safetensors"}},

  };
}

// flags: measure
std::vector<Case> catalogue_part19() {
  return {
      {"measure: -e 1e20 bytes", "flags-measure", {}, {"measure", "allreduce", "-b", "8", "-e", "100000000000000000000"}, {"-e"}},
      {"measure: -f just above 1", "flags-measure", {}, {"measure", "allreduce", "-b", "8", "-e", "1G", "-f", "1.0000001"}, {"-f"}},
      {"measure: -n zero", "flags-measure", {}, {"measure", "allreduce", "-n", "0"}, {"-n"}},
      {"measure: -n two billion", "flags-measure", {}, {"measure", "allreduce", "-n", "2000000000"}, {"-n", "1000000"}},
      {"bench interference: --repeat two billion", "flags-bench", {}, {"bench", "interference", "--repeat", "2000000000"}, {"--repeat", "1000"}},
      {"measure: -n past int", "flags-measure", {}, {"measure", "allreduce", "-n", "4294967296"}, {"4294967296"}},
      {"measure: -w negative", "flags-measure", {}, {"measure", "broadcast", "-w", "-1"}, {"-w"}},
      {"measure: -b not a size", "flags-measure", {}, {"measure", "allreduce", "-b", "eight"}, {"-b"}},
      {"measure: -c 2", "flags-measure", {}, {"measure", "allreduce", "-c", "2"}, {"-c"}},
      {"measure kernels: --shapes G past int", "flags-measure", {},
       {"measure", "kernels", "--shapes", "8:16:16:4294967301:3", "--json", "{d}/out.json"}, {"--shapes"}},
      {"measure kernels: --shapes not numbers", "flags-measure", {},
       {"measure", "kernels", "--shapes", "8:a:16:5:3", "--json", "{d}/out.json"}, {"--shapes"}},
      {"measure kernels: --repeat zero", "flags-measure", {}, {"measure", "kernels", "--repeat", "0", "--json", "{d}/out.json"},
       {"--repeat"}},
      {"measure kernels: --flush overflows", "flags-measure", {},
       {"measure", "kernels", "--flush", "1e308PiB", "--json", "{d}/out.json"}, {"--flush"}},
      {"measure kernels: --threads huge", "flags-measure", {},
       {"measure", "kernels", "--threads", "100000000", "--json", "{d}/out.json"}, {"--threads"}},
      {"measure kernels: --skip-from without --skip-under", "flags-measure", {},
       {"measure", "kernels", "--shapes", "8:4:4:5:3", "--skip-from", "{d}/k.json", "--json", "{d}/out.json"}, {"--skip-from", "--skip-under"}},
      {"measure kernels: --skip-under 1", "flags-measure", {},
       {"measure", "kernels", "--shapes", "8:4:4:5:3", "--skip-from", "{d}/k.json", "--skip-under", "1", "--json", "{d}/out.json"},
       {"--skip-under", "below 1"}},
      {"measure kernels: --skip-from another plan's round", "flags-measure", {{"m.json", kKernels}},
       {"measure", "kernels", "--shapes", "8:4:4:5:3", "--skip-from", "{d}/m.json", "--skip-under", "0.2", "--json", "{d}/out.json"},
       {"--skip-from", "m.json", "[8, 12, 40, 5, 3]", "not in this plan"}},
      {"measure: unknown collective", "flags-measure", {}, {"measure", "alltoall"}, {"alltoall"}},
      {"measure: --large-from without its iterations", "flags-measure", {}, {"measure", "allreduce", "--large-from", "16M"},
       {"--large-from 16M", "--large-iters", "--large-warmup"}},
      {"measure: --large-iters above -n", "flags-measure", {},
       {"measure", "allreduce", "-n", "20", "--large-from", "16M", "--large-iters", "21", "--large-warmup", "2"}, {"--large-iters", "20"}},
      {"measure: --large-warmup above -w", "flags-measure", {},
       {"measure", "allreduce", "-w", "5", "--large-from", "16M", "--large-iters", "5", "--large-warmup", "6"}, {"--large-warmup", "5"}},
      {"measure: --large-iters alone", "flags-measure", {}, {"measure", "allreduce", "--large-iters", "5"}, {"--large-iters", "--large-from"}},
      {"measure: --large-from not a size", "flags-measure", {},
       {"measure", "allreduce", "--large-from", "big", "--large-iters", "5", "--large-warmup", "1"}, {"--large-from"}},
      {"train: several workloads with --csv", "flags-train", {{"a.yaml", kWorkloadSmall}, {"b.yaml", kWorkloadSmall}},
       {"train", "--workload", "{d}/a.yaml", "--json", "{d}/a.json", "--workload", "{d}/b.yaml", "--json", "{d}/b.json", "--csv", "{d}/x.csv"},
       {"--csv", "one workload at a time"}},
      {"train: several workloads, one of PyTorch", "flags-train", {{"a.yaml", kWorkloadSmall}, {"b.yaml", kTorchWorkload}},
       {"train", "--workload", "{d}/a.yaml", "--json", "{d}/a.json", "--workload", "{d}/b.yaml", "--json", "{d}/b.json"},
       {"b.yaml", "implementation", "one implementation"}},
      {"train: several workloads, one --json the other's workload", "flags-train", {{"a.yaml", kWorkloadSmall}, {"b.yaml", kWorkloadSmall}},
       {"train", "--workload", "{d}/a.yaml", "--json", "{d}/b.yaml", "--workload", "{d}/b.yaml", "--json", "{d}/b.json"}, {"b.yaml"}},

  };
}

// validate --repeatability
std::vector<Case> catalogue_part20() {
  return {
      {"repeatability: a run not JSON", "validate-repeat", {{"a.json", "{\"plan\": "}, {"b.json", kRun}}, repeat_runs(),
       {"a.json", "not JSON"}},
      {"repeatability: a run without cases", "validate-repeat", {{"a.json", sub(kRun, "\"cases\"", "\"rows\"")}, {"b.json", kRun}},
       repeat_runs(), {"a.json", "lacks 'cases'"}},
      {"repeatability: a case without its measured median", "validate-repeat",
       {{"a.json", sub(kRun, "\"measured_median\"", "\"measured\"")}, {"b.json", kRun}}, repeat_runs(),
       {"a.json", "cases[0]", "measured_median"}},
      {"repeatability: a negative measured time", "validate-repeat",
       {{"a.json", sub(kRun, "0.01}", "-0.01}")}, {"b.json", kRun}}, repeat_runs(), {"a.json", "cases[0]", "iteration_time_s"}},
      {"repeatability: a negative measured compute", "validate-repeat",
       {{"a.json", sub(kRun, "{\"iteration_time_s\": 0.01}", "{\"iteration_time_s\": 0.01, \"compute_time_s\": -0.002}")}, {"b.json", kRun}},
       repeat_runs(), {"a.json", "cases[0]", "compute_time_s"}},
      {"repeatability: oversubscribed as text", "validate-repeat",
       {{"a.json", sub(kRun, "\"oversubscribed\": false", "\"oversubscribed\": \"no\"")}, {"b.json", kRun}}, repeat_runs(),
       {"a.json", "cases[0]", "oversubscribed"}},
      {"repeatability: a case twice", "validate-repeat",
       {{"a.json", sub(kRun, "np2 [32-256-32] G5 b8 cap 1.00 MiB shm", "np1 [32-256-32] G5 b8 cap 1.00 MiB")}, {"b.json", kRun}},
       repeat_runs(), {"a.json", "cases[1]", "twice"}},
      {"repeatability: a case the plan does not have", "validate-repeat",
       {{"a.json", sub(kRun, "np2 [32-256-32] G5 b8 cap 1.00 MiB shm", "np2 [32-256-32] G5 b8 cap 1.00 MiB tcp")}, {"b.json", kRun}},
       repeat_runs(), {"a.json", "np2 [32-256-32] G5 b8 cap 1.00 MiB tcp", "ci-small.yaml"}},
      {"repeatability: a run lacking a case of the plan", "validate-repeat",
       {{"a.json", kRun}, {"b.json", sub(kRun, "\"oversubscribed\": false, \"measured_median\": {\"iteration_time_s\": 0.012}",
                                          "\"oversubscribed\": true, \"measured_median\": {\"iteration_time_s\": 0.012}")}},
       repeat_runs(), {"b.json", "lacks the case", "np2 [32-256-32] G5 b8 cap 1.00 MiB shm"}},
      {"repeatability: one run", "validate-repeat", {{"a.json", kRun}},
       {"validate", "validation/plans/ci-small.yaml", "--repeatability", "{d}/a.json", "--out", "{d}/out"}, {"at least two"}},
      {"repeatability: the same run twice", "validate-repeat", {{"a.json", kRun}},
       {"validate", "validation/plans/ci-small.yaml", "--repeatability", "{d}/a.json", "{d}/../{dn}/a.json", "--out", "{d}/out"},
       {"a.json", "given twice"}},
      {"repeatability: --out a run's own directory", "validate-repeat", {{"a.json", kRun}, {"b.json", kRun}},
       {"validate", "validation/plans/ci-small.yaml", "--repeatability", "{d}/a.json", "{d}/b.json", "--out", "{d}"},
       {"--out", "a.json"}},
      {"repeatability: with --collect", "validate-repeat", {{"a.json", kRun}, {"b.json", kRun}},
       with(repeat_runs(), {"--collect", "{d}"}), {"--repeatability"}},

  };
}

// flags: fit
std::vector<Case> catalogue_part21() {
  return {
      {"fit: nothing to fit", "flags-fit", {}, {"fit", "--out", "{d}/out.yaml"}, {"--kernels"}},
      {"fit: --out missing", "flags-fit", {}, {"fit", "--collectives", "{src}/configs/calibrations/local-cpu/allreduce-shm-r0.json"},
       {"--out"}},
      {"fit: --out a directory", "flags-fit", {}, {"fit", "--collectives", "{src}/configs/calibrations/local-cpu/allreduce-shm-r0.json",
       "--out", "{d}"}, {"--out"}},
      {"fit: --kernels missing file", "flags-fit", {}, {"fit", "--kernels", "{d}/none.json", "--out", "{d}/out.yaml"}, {"none.json"}},
      {"fit: --kernels a directory", "flags-fit", {}, {"fit", "--kernels", "{d}", "--out", "{d}/out.yaml"}, {"directory"}},
      {"fit: --collectives given a kernels file", "flags-fit", {{"m.json", kKernels}}, fit_with("--collectives"), {"m.json"}},
      {"fit: --interference given a sweep", "flags-fit", {{"m.json", kAllreduce}}, fit_interference(), {"m.json"}},
      {"fit: --progress given a sweep", "flags-fit", {{"m.json", kAllreduce}}, fit_with("--progress"), {"m.json", "row 0 lacks 'bytes'"}},
      {"fit: --progress with a time as text", "flags-fit",
       {{"m.json", "{\"ranks\": 2, \"points\": [{\"bytes\": 65536, \"alone_s\": \"fast\", \"poll_interval_s\": 0, "
                   "\"compute_s\": 1e-4, \"wait_s\": 1e-5}]}"}},
       fit_with("--progress"), {"m.json", "row 0", "alone_s"}},
      {"fit: --progress with a negative wait", "flags-fit",
       {{"m.json", "{\"ranks\": 2, \"points\": [{\"bytes\": 65536, \"alone_s\": 1e-4, \"poll_interval_s\": 0, "
                   "\"compute_s\": 1e-4, \"wait_s\": -1e-5}]}"}},
       fit_with("--progress"), {"m.json", "row 0", "wait_s"}},
      {"fit: --progress measured on one rank", "flags-fit",
       {{"m.json", "{\"ranks\": 1, \"points\": [{\"bytes\": 65536, \"alone_s\": 1e-4, \"poll_interval_s\": 0, "
                   "\"compute_s\": 1e-4, \"wait_s\": 1e-5}]}"}},
       fit_with("--progress"), {"m.json", "one rank"}},
      {"fit: unknown flag", "flags-fit", {}, {"fit", "--kernals", "x.json", "--out", "{d}/out.yaml"}, {"--kernals"}},
      {"fit: --runtime-memory a sweep", "flags-fit", {{"m.json", kAllreduce}},
       {"fit", "--collectives", "{src}/configs/calibrations/local-cpu/allreduce-shm-r0.json", "--runtime-memory", "{d}/m.json", "--out",
        "{d}/out.yaml"}, {"m.json"}},

  };
}

// flags: model
std::vector<Case> catalogue_part22() {
  return {
      {"model: --bytes 1e20 overflows nothing", "flags-model", {},
       {"model", "allreduce", "--cluster", "{src}/configs/clusters/finisterrae3.yaml", "--bytes", "1e309B"}, {"--bytes"}},
      {"model: --bytes without unit", "flags-model", {},
       {"model", "allreduce", "--cluster", "{src}/configs/clusters/finisterrae3.yaml", "--bytes", "1024"}, {"--bytes"}},
      {"model: --gpus zero", "flags-model", {},
       {"model", "allreduce", "--cluster", "{src}/configs/clusters/finisterrae3.yaml", "--gpus", "0"}, {"--gpus"}},
      {"model: --gpus past int", "flags-model", {},
       {"model", "allreduce", "--cluster", "{src}/configs/clusters/finisterrae3.yaml", "--gpus", "4294967298"}, {"--gpus"}},
      {"model: --gpus-per-node above the cluster's", "flags-model", {},
       {"model", "allreduce", "--cluster", "{src}/configs/clusters/finisterrae3.yaml", "--gpus-per-node", "9"}, {"--gpus-per-node"}},
      {"model layer: --in in billions", "flags-model", {},
       {"model", "layer", "--cluster", "{src}/configs/clusters/finisterrae3.yaml", "--implementation", "efficient-kan", "--in",
        "3000000000", "--out", "3000000000"}, {"--in"}},
      {"model layer: --grid past int", "flags-model", {},
       {"model", "layer", "--cluster", "{src}/configs/clusters/finisterrae3.yaml", "--grid", "4294967301"}, {"--grid"}},
      {"model layer: --order 17", "flags-model", {},
       {"model", "layer", "--cluster", "{src}/configs/clusters/finisterrae3.yaml", "--order", "17"}, {"order"}},
      {"model: --cluster missing", "flags-model", {}, {"model", "allreduce"}, {"--cluster"}},
      {"model: unknown query", "flags-model", {}, {"model", "broadcast"}, {"model"}},

  };
}

// flags: validate
std::vector<Case> catalogue_part23() {
  const std::string vplan = validation_plan();
  return {
      {"validate: plan missing", "flags-validate", {}, {"validate", "{d}/none.yaml", "--emit", "{d}/emit"}, {"none.yaml"}},
      {"validate: plan a directory", "flags-validate", {}, {"validate", "{d}", "--emit", "{d}/emit"}, {"is a directory"}},
      {"validate: no plan", "flags-validate", {}, {"validate"}, {"validate"}},
      {"validate: two plans", "flags-validate", {{VP, vplan}}, {"validate", "{d}/plan.yaml", "{d}/plan.yaml"}, {"validate"}},
      {"validate: unknown flag", "flags-validate", {{VP, vplan}}, {"validate", "{d}/plan.yaml", "--bogus"}, {"--bogus"}},
      {"validate: runs: 0", "flags-validate", {{VP, "runs: 0\n" + vplan}}, {"validate", "{d}/plan.yaml", "--out", "{d}/o"}, {"plan.yaml", "runs"}},
      {"validate: runs: 2", "flags-validate", {{VP, "runs: 2\n" + vplan}}, {"validate", "{d}/plan.yaml", "--out", "{d}/o"},
       {"plan.yaml", "runs", "2 runs cannot be judged"}},
      {"validate: runs: 1e9", "flags-validate", {{VP, "runs: 1000000000\n" + vplan}}, {"validate", "{d}/plan.yaml", "--out", "{d}/o"},
       {"plan.yaml", "runs"}},
      {"validate: a verdict threshold out of range", "flags-validate", {{VP, "verdict: {coverage_min_pct: 150}\n" + vplan}},
       {"validate", "{d}/plan.yaml", "--out", "{d}/o"}, {"plan.yaml", "verdict.coverage_min_pct", "0 to 100"}},
      {"validate: --emit and --collect", "flags-validate", {{VP, vplan}},
       {"validate", "{d}/plan.yaml", "--emit", "{d}/a", "--collect", "{d}/b"}, {"--emit"}},
      {"validate: --collect a missing directory", "flags-validate", {{VP, vplan}},
       {"validate", "{d}/plan.yaml", "--collect", "{d}/none"}, {"none"}},
      {"validate: --calibration missing", "flags-validate", {{VP, vplan}},
       {"validate", "{d}/plan.yaml", "--emit", "{d}/e", "--calibration", "{d}/none.yaml"}, {"none.yaml"}},

  };
}

// flags: bench
std::vector<Case> catalogue_part24() {
  return {
      {"bench sim: --gpus huge", "flags-bench", {}, {"bench", "sim", "--cluster", "{src}/configs/clusters/dgx-a100.yaml", "--workload",
       "{src}/configs/workloads/bench-4layer.yaml", "--gpus", "10000000"}, {"--gpus", "1048576"}},
      {"bench sim: --repeat huge", "flags-bench", {}, {"bench", "sim", "--cluster", "{src}/configs/clusters/dgx-a100.yaml", "--workload",
       "{src}/configs/workloads/bench-4layer.yaml", "--gpus", "65536", "--repeat", "2000000000"}, {"--repeat", "--max-events"}},
      {"bench sim: --repeat zero", "flags-bench", {}, {"bench", "sim", "--repeat", "0"}, {"--repeat"}},
      {"bench sim: --min-time negative", "flags-bench", {}, {"bench", "sim", "--min-time", "-1"}, {"--min-time"}},
      {"bench sim: --jitter 2", "flags-bench", {}, {"bench", "sim", "--jitter", "2"}, {"--jitter"}},
      {"bench sim: --interference NaN", "flags-bench", {}, {"bench", "sim", "--interference", "nan"}, {"--interference"}},
      {"bench sim: --gpus past the limit", "flags-bench", {}, {"bench", "sim", "--gpus", "99999999999"}, {"--gpus"}},
      {"bench: unknown benchmark", "flags-bench", {}, {"bench", "simulate"}, {"bench"}},
      {"bench interference: --bytes overflows", "flags-bench", {}, {"bench", "interference", "--bytes", "1e308PiB"}, {"--bytes"}},
      {"bench interference: --repeat past int", "flags-bench", {}, {"bench", "interference", "--repeat", "4294967296"}, {"--repeat"}},
      {"bench kernels: unknown flag", "flags-bench", {}, {"bench", "kernels", "--bogus"}, {"--bogus"}},
      {"bench kernels: --batch 2e9 (was bad_alloc)", "flags-bench", {}, {"bench", "kernels", "--batch", "2000000000", "--repeat", "1"},
       {"--batch", "1073741824"}},
      {"bench kernels: --batch past this machine's memory", "flags-bench", {}, {"bench", "kernels", "--batch", "1073741824", "--repeat", "1"},
       {"--batch", "half this machine's"}},
      {"bench kernels: --repeat 1e8", "flags-bench", {}, {"bench", "kernels", "--repeat", "100000000"}, {"--repeat", "1000"}},
      {"bench study: samples x repeat past --max-events", "flags-bench", {}, {"bench", "study", "--samples", "100000", "--repeat", "100"},
       {"bench study", "--max-events"}},
      {"bench progress: --sizes with an empty item", "flags-bench", {}, {"bench", "progress", "--sizes", "64KiB,,1MiB"}, {"--sizes"}},
      {"bench progress: --sizes overflows", "flags-bench", {}, {"bench", "progress", "--sizes", "1e308PiB"}, {"--sizes"}},
      {"bench progress: --polls negative", "flags-bench", {}, {"bench", "progress", "--polls", "0,-0.5"}, {"--polls", "-0.5"}},
      {"bench progress: --polls as text", "flags-bench", {}, {"bench", "progress", "--polls", "often"}, {"--polls", "often"}},
      {"bench progress: --compute zero", "flags-bench", {}, {"bench", "progress", "--compute", "0"}, {"--compute"}},
      {"bench progress: too many points", "flags-bench", {},
       {"bench", "progress", "--sizes", "1KiB,2KiB,3KiB,4KiB,5KiB,6KiB,7KiB,8KiB,9KiB,10KiB,11KiB", "--polls",
        "0,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1,1.1,1.2,1.3,1.4,1.5,1.6,1.7,1.8"}, {"--sizes x --polls", "200"}},
      {"bench progress: --json a directory", "flags-bench", {}, {"bench", "progress", "--json", "{d}"}, {"--json"}},
      {"bench overlap: --gap negative", "flags-bench", {}, {"bench", "overlap", "--gap", "-1"}, {"--gap"}},
      {"bench overlap: --sizes overflows", "flags-bench", {}, {"bench", "overlap", "--sizes", "1e308PiB"}, {"--sizes"}},
      {"bench overlap: --repeat 2", "flags-bench", {}, {"bench", "overlap", "--repeat", "2"}, {"--repeat"}},
  };
}

// the second round (issue 23): data loss
std::vector<Case> catalogue_part25() {
  const std::string vplan = validation_plan();
  return {
      {"loss: study --out the folder of the study file", "loss",
       {{"in/s.yaml", kStudy}, {"in/notes.txt", "mine\n"}, {"in/study.json", "{}\n"}},
       {"study", "{d}/in/s.yaml", "--out", "{d}/in", "--no-plots"}, {"--out", "s.yaml", "input"}},
      {"loss: study --out an earlier study holding a user's note", "loss",
       {{"study.yaml", kStudy}, {"prev/.kanscale-output", "# kanscale\nreport.md\n"}, {"prev/report.md", "old\n"}, {"prev/notes.txt", "mine\n"}},
       {"study", "{d}/study.yaml", "--out", "{d}/prev", "--no-plots"}, {"--out", "notes.txt", "did not write"}},
      {"loss: study --out a folder kanscale did not make", "loss", {{"study.yaml", kStudy}, {"prev/study.json", "{}\n"}},
       {"study", "{d}/study.yaml", "--out", "{d}/prev", "--no-plots"}, {"--out", "did not make"}},
      {"loss: whatif --json over its own workload", "loss", {{W, kWorkload}},
       {"whatif", "gpus", "--cluster", "{src}/configs/clusters/dgx-a100.yaml", "--workload", "{d}/workload.yaml", "--budget", "2h", "--json",
        "{d}/workload.yaml"}, {"--json", "workload.yaml", "input"}},
      {"loss: simulate --csv over its own cluster", "loss", {{C, kCluster}},
       {"simulate", "--cluster", "{d}/cluster.yaml", "--workload", "{src}/configs/workloads/default.yaml", "--gpus", "1", "--csv",
        "{d}/cluster.yaml"}, {"--csv", "cluster.yaml", "input"}},
      {"loss: fit --out over a measurement file", "loss", {{"m.json", kAllreduce}},
       {"fit", "--collectives", "{d}/m.json", "--out", "{d}/m.json"}, {"--out", "m.json", "input"}},
      {"loss: calibrate --out the plan's folder", "loss", {{"in/p.yaml", kCalibratePlan}, {"in/notes.txt", "mine\n"}},
       {"calibrate", "{d}/in/p.yaml", "--out", "{d}/in"}, {"--out", "p.yaml", "input"}},
      {"loss: validate --emit into a user's folder", "loss", {{VP, vplan}, {"e/notes.txt", "mine\n"}},
       {"validate", "{d}/plan.yaml", "--emit", "{d}/e"}, {"--emit", "did not make"}},
      {"loss: validate --out holding the plan", "loss", {{"r/plan.yaml", vplan}}, {"validate", "{d}/r/plan.yaml", "--published", "--out", "{d}/r"},
       {"--out", "plan.yaml", "input"}},
      {"loss: train --checkpoint over its workload", "loss", {{W, kSmallWorkload}},
       {"train", "--workload", "{d}/workload.yaml", "--steps", "1", "--quiet", "--checkpoint", "{d}/workload.yaml"},
       {"--checkpoint", "workload.yaml", "input"}},
      {"loss: train --resume and --checkpoint the same file", "loss", {{W, kSmallWorkload}},
       {"train", "--workload", "{d}/workload.yaml", "--steps", "2", "--quiet", "--resume", "{ckpt}", "--checkpoint", "{ckpt}"},
       {"--checkpoint", "input"}},
      {"loss: bench interference --json over its workload", "loss", {{W, kSmallWorkload}},
       {"bench", "interference", "--workload", "{d}/workload.yaml", "--json", "{d}/workload.yaml"}, {"--json", "workload.yaml", "input"}},
      {"loss: bench kernels --export into a user's folder", "loss", {{"x/notes.txt", "mine\n"}},
       {"bench", "kernels", "--export", "{d}/x", "--repeat", "1"}, {"--export", "did not make"}},

  };
}

// wrong answers with exit 0
std::vector<Case> catalogue_part26() {
  const std::string vplan = validation_plan();
  return {
      {"answer: whatif gpus when no candidate fits the GPU's memory", "answer",
       {{W, sub(kWorkload, "[64, 256, 256, 1]", "[64, 20000, 20000, 1]")}},
       {"whatif", "gpus", "--cluster", "{src}/configs/clusters/dgx-a100.yaml", "--workload", "{d}/workload.yaml", "--epochs", "1", "--budget",
        "10h", "--gpus", "1,2,4,8"}, {"nothing searched fits", "40.00 GiB", "at least"}, 1},
      {"answer: whatif cluster when no candidate fits", "answer", {{W, sub(kWorkload, "[64, 256, 256, 1]", "[64, 20000, 20000, 1]")}},
       {"whatif", "cluster", "--cluster", "{src}/configs/clusters/dgx-a100.yaml", "--cluster", "{src}/configs/clusters/finisterrae3.yaml",
        "--workload", "{d}/workload.yaml", "--epochs", "1", "--budget", "10h", "--gpus", "1,2"}, {"nothing searched fits"}, 1},
      {"answer: whatif bucket-cap when no setting fits", "answer", {{W, sub(kWorkload, "[64, 256, 256, 1]", "[64, 20000, 20000, 1]")}},
       {"whatif", "bucket-cap", "--cluster", "{src}/configs/clusters/dgx-a100.yaml", "--workload", "{d}/workload.yaml", "--gpus", "2",
        "--caps", "1MiB,25MiB"}, {"nothing searched fits"}, 1},
      {"answer: calibrate with a sweep factor of 1", "answer",
       {{P, sub(kCalibratePlan, "-b 8 -e 4M -f 4", "-b 8 -e 4M -f 1")}}, calibrate_plan(), {"plan.yaml", "calibration.measure.allreduce", "-f 1"}},
      {"answer: measure allreduce -f 1", "answer", {}, {"measure", "allreduce", "-b", "8", "-e", "4M", "-f", "1"}, {"-f 1", "above 1"}},
      {"answer: measure allreduce -f past -e", "answer", {}, {"measure", "allreduce", "-b", "8", "-e", "64", "-f", "16"}, {"-f 16", "only -b"}},
      {"answer: whatif --budget 1e300h", "answer", {}, with(whatif_q("gpus"), {"--budget", "1e300h"}), {"--budget", "100 years"}},
      {"answer: whatif --budget of 101 years", "answer", {}, with(whatif_q("gpus"), {"--budget", "885000h"}), {"--budget", "100 years"}},
      {"answer: whatif --budget 1e-300s", "answer", {}, with(whatif_q("gpus"), {"--budget", "1e-300s"}), {"--budget", "from 1 ms"}},
      {"answer: repeatability with times of 1e308 s", "answer",
       {{"a.json", kRun}, {"b.json", sub(sub(kRun, "0.01}", "1e308}"), "0.012}", "1e308}")}}, repeat_runs(),
       {"b.json", "iteration_time_s", "below a year"}},
      {"answer: model layer --grid 2147483647", "answer", {},
       {"model", "layer", "--cluster", "{src}/configs/clusters/finisterrae3.yaml", "--implementation", "efficient-kan", "--grid", "2147483647"},
       {"--grid", "outside 1 to 1000"}},
      {"answer: calibration regimes out of order", "answer",
       {{K, sub(kCalibration, "{below: \"4194304B\"", "{below: \"100B\"")}}, sim_calibration(), {"calibration.yaml:", "below", "order"}},
      {"answer: validate --emit with /etc/passwd as the kernel plan", "answer",
       {{VP, sub(vplan, kSrc + "/configs/measure/cpu-ci.yaml", "/etc/passwd")}}, validate_plan(),
       {"plan.yaml:", "kernels", "not a kernel measurement plan"}},
      {"answer: eval CSV with a typo in the first row", "answer", {{"x.csv", "0.5,O.1\n0.2,0.3\n"}}, eval_csv(), {"x.csv:1", "O.1"}},
      {"answer: fit --kernels with metadata a list", "answer", {{"m.json", jset(kKernels, "/metadata", "[]")}}, fit_with("--kernels"),
       {"m.json", "metadata", "object"}},
      {"answer: fit --collectives with metadata a number", "answer", {{"m.json", jset(kAllreduce, "/metadata", "7")}}, fit_with("--collectives"),
       {"m.json", "metadata", "object"}},
      {"answer: fit --collectives with a time of 1e12 us", "answer", {{"m.json", jset(kAllreduce, "/points/0/out_of_place/time_us", "1e14")}},
       fit_with("--collectives"), {"m.json", "time_us", "to a year"}},

  };
}

// hangs and unbounded work
std::vector<Case> catalogue_part27() {
  const std::string vplan = validation_plan();
  return {
      {"work: simulate with grid_size 2^31-1", "work", {{W, sub(kWorkload, "grid_size: 5", "grid_size: 2147483647")}},
       {"simulate", "--cluster", "{src}/configs/clusters/finisterrae3.yaml", "--workload", "{d}/workload.yaml", "--gpus", "1,2,4,8"},
       {"workload.yaml:", "kan.grid_size", "at most 1000"}},
      {"work: whatif change --set grid_size=2147483648", "work", {}, with(whatif_q("change"), {"--set", "grid_size=2147483648"}),
       {"--set grid_size=2147483648", "1000"}},
      {"work: calibrate a plan of 100000 ranks", "work", {{P, sub(kCalibratePlan, "ranks: 2\n", "ranks: 100000\n")}}, calibrate_plan(),
       {"plan.yaml", "100000 ranks", "--max-ranks"}},
      {"work: validate a plan of 100000 ranks", "work", {{VP, sub(vplan, "ranks: [1, 2]", "ranks: [1, 100000]")}},
       {"validate", "{d}/plan.yaml", "--out", "{d}/out"}, {"plan.yaml", "100000 ranks", "--max-ranks"}},
      {"work: validate --emit a job of more ranks than the cluster's GPUs", "work", {{VP, sub(vplan, "ranks: [1, 2]", "ranks: [1, 3]")}},
       validate_plan(), {"plan.yaml", "3 ranks", "2 GPUs"}},
      {"work: a study sweep of 1000 x 1000 x 1000", "work", {{"study.yaml", [] {
         std::string b = "[", c = "[", w = "[";
         for (int i = 1; i <= 1000; ++i) {
           b += (i > 1 ? ", " : "") + std::to_string(i);
           c += (i > 1 ? ", " : "") + std::to_string(i) + "KiB";
           w += (i > 1 ? ", [8, " : "[8, ") + std::to_string(i) + ", 1]";
         }
         return sub(sub(kStudy, "[1MiB, 25MiB]", c + "]"), "[[64, 256, 256, 1], [64, 1024, 1024, 1]]", w + "]") + "" ;
       }() + "\n"}},
       study_file(), {"study.yaml:", "scenarios", "10000"}},
      {"work: whatif gpus --iterations 1e9", "work", {}, with(whatif_q("gpus"), {"--budget", "2h", "--iterations", "1000000000"}),
       {"--iterations", "1000"}},
      {"whatif: --confidence 1.5", "whatif", {},
       {"whatif", "gpus", "--cluster", "{src}/configs/clusters/dgx-a100.yaml", "--workload", "{src}/configs/workloads/default.yaml", "--budget",
        "2h", "--confidence", "1.5"},
       {"--confidence 1.5", "between 0 and 1"}},
      {"whatif: --memory-headroom -1", "whatif", {},
       {"whatif", "model", "--cluster", "{src}/configs/clusters/dgx-a100.yaml", "--workload", "{src}/configs/workloads/default.yaml",
        "--memory-headroom", "-1"},
       {"--memory-headroom", "0 to 1000"}},
      {"whatif: --interval-samples -1", "whatif", {},
       {"whatif", "gpus", "--cluster", "{src}/configs/clusters/dgx-a100.yaml", "--workload", "{src}/configs/workloads/default.yaml", "--budget",
        "2h", "--interval-samples", "-1"},
       {"--interval-samples", "0 to 100000"}},
      {"work: whatif gpus past --max-events", "work", {},
       {"whatif", "gpus", "--cluster", "{src}/configs/clusters/dgx-a100.yaml", "--workload", "{src}/configs/workloads/default.yaml", "--budget",
        "2h", "--iterations", "1000"}, {"whatif gpus", "--max-events"}},
      {"work: whatif change --set gpus past --max-events", "work", {},
       {"whatif", "change", "--cluster", "{src}/configs/clusters/dgx-a100.yaml", "--workload", "{src}/configs/workloads/default.yaml",
        "--iterations", "1000", "--max-events", "1000000", "--set", "gpus=512"}, {"--set gpus=512", "--max-events"}},
      {"work: bench interference --bytes 1e15B", "work", {}, {"bench", "interference", "--bytes", "1e15B"}, {"--bytes", "4GiB"}},

  };
}

// unclear messages; every multiplying key has a range
std::vector<Case> catalogue_part28() {
  const std::string vplan = validation_plan();
  return {
      {"range: --set gpus=1000000000000", "range", {}, with(whatif_q("change"), {"--set", "gpus=1000000000000"}),
       {"--set gpus=1000000000000", "1048576"}},
      {"range: cluster of 10^9 nodes", "range", {{C, sub(kCluster, "nodes: 64", "nodes: 1000000000")}},
       {"whatif", "gpus", "--cluster", "{d}/cluster.yaml", "--workload", "{src}/configs/workloads/default.yaml", "--budget", "2h"},
       {"cluster.yaml:", "'nodes'", "1048576"}},
      {"range: cluster GPUs past the limit", "range", {{C, sub(sub(kCluster, "nodes: 64", "nodes: 1000000"), "gpus_per_node: 2", "gpus_per_node: 8")}},
       sim_cluster(), {"cluster.yaml:", "nodes", "at most 1048576"}},
      {"range: gpus_per_node past the limit", "range", {{C, sub(kCluster, "gpus_per_node: 2", "gpus_per_node: 2048")}}, sim_cluster(),
       {"cluster.yaml:", "gpus_per_node", "at most 1024"}},
      {"range: a sequence as a YAML key", "range", {{W, kWorkload + "[a, b]: 3\n"}}, sim_workload(), {"workload.yaml:", "a list", "plain name"}},
      {"range: train with grid 2^31-1", "range", {{W, sub(kSmallWorkload, "grid_size: 5", "grid_size: 2147483647")}},
       {"train", "--workload", "{d}/workload.yaml", "--steps", "1", "--quiet"}, {"workload.yaml:", "grid_size", "at most 1000"}},
      {"range: a checkpoint tensor of shape [2^62]", "range", st(st_edit([](nlohmann::json& h) {
         for (auto it = h.begin(); it != h.end(); ++it)
           if (it.key() != "__metadata__") {
             it.value()["shape"] = {std::int64_t{1} << 62};
             break;
           }
       })), eval_st(), {"m.safetensors", "shape"}},
      {"range: an all-reduce time of 1e999", "range",
       {{"m.json", [] {
          std::string t = jset(kAllreduce, "/points/0/out_of_place/time_us", "123.5");
          return sub(t, "123.5", "1e999");
        }()}}, fit_with("--collectives"), {"m.json", "beyond the range of a double"}},
      {"range: workload batch past 2^30", "range", {{W, sub(kWorkload, "batch_per_gpu: 1024", "batch_per_gpu: 1073741825")}}, sim_workload(),
       {"workload.yaml:", "batch_per_gpu", "at most 1073741824"}},
      {"range: workload epochs past a million", "range", {{W, sub(kWorkload, "epochs: 10", "epochs: 1000001")}}, sim_workload(),
       {"workload.yaml:", "epochs", "at most 1000000"}},
      {"range: simulate --gpus past the limit", "range", {}, sim({"--gpus", "2097152"}), {"--gpus", "1048576"}},
      {"range: simulate --iterations past the limit", "range", {}, sim({"--gpus", "1", "--iterations", "1001"}), {"--iterations", "1000"}},
      {"range: whatif --epochs past a million", "range", {}, with(whatif_q("gpus"), {"--budget", "2h", "--epochs", "2000000"}),
       {"--epochs", "1000000"}},
      {"range: --set batch_per_gpu past 2^30", "range", {}, with(whatif_q("change"), {"--set", "batch_per_gpu=2000000000"}),
       {"--set batch_per_gpu", "1073741824"}},
      {"range: study sweep gpus past the limit", "range", {{"study.yaml", sub(kStudy, "[1, 2, 4, 8, 16, 32, 64]", "[1, 2097152]")}},
       study_file(), {"study.yaml:", "sweep.gpus", "1048576"}},
      {"range: validate --steps 2^31-1", "range", {{VP, vplan}}, with(validate_plan(), {"--steps", "2147483647"}), {"--steps", "1000000"}},
      {"range: a validation plan's steps past a million", "range", {{VP, sub(vplan, "steps: 30", "steps: 2000000")}}, validate_plan(),
       {"plan.yaml:", "steps", "at most 1000000"}},
      {"range: a validation plan's spline order 17", "range", {{VP, vplan + "spline_order: 17\n"}}, validate_plan(),
       {"plan.yaml:", "spline_order", "at most 16"}},
  };
}

// a new user's probe after the first fixes
std::vector<Case> catalogue_part29() {
  return {
      {"probe: bench kernels --json the --export directory", "probe", {},
       {"bench", "kernels", "--export", "{d}/x", "--json", "{d}/x", "--repeat", "1"}, {"--json", "--export"}},
      {"probe: a kernel time of 1e-308 s", "probe", {{"m.json", jset(kKernels, "/rows/0/time_median_s", "1e-308")}}, fit_with("--kernels"),
       {"m.json", "time_median_s", "picosecond"}},
      {"probe: a negative kernel time", "probe", {{"m.json", jset(kKernels, "/rows/0/time_iqr_s", "-1e-6")}}, fit_with("--kernels"),
       {"m.json", "time_iqr_s"}},
      {"probe: a kernel row of batch -8", "probe", {{"m.json", jset(kKernels, "/rows/0/batch", "-8")}}, fit_with("--kernels"),
       {"m.json", "batch", "1 to"}},
      {"probe: a kernel row of spline order 0", "probe", {{"m.json", jset(kKernels, "/rows/0/spline_order", "0")}}, fit_with("--kernels"),
       {"m.json", "spline_order"}},
      {"probe: no kernel rows", "probe", {{"m.json", jset(kKernels, "/rows", "[]")}}, fit_with("--kernels"), {"m.json", "rows", "empty"}},
      {"probe: the library's copies of 1e308 bytes", "probe", {{"m.json", jset(kInterference, "/inflight_memory_bytes_max", "1e308")}},
       fit_interference(), {"m.json", "inflight_memory_bytes_max", "2^60"}},
      {"probe: a calibration's activation factor of 1e308", "probe",
       {{K, subval(kCalibration, "activation_factor: ", "1e308")}}, sim_calibration(),
       {"calibration.yaml:", "activation_factor", "1e+308"}},
      {"probe: an asymmetric covariance", "probe",
       {{K, sub(kLiveCalibration, "cov: [[3.62049e-13, -2.47632e-16], [-2.47632e-16, 5.61651e-19]]",
                "cov: [[3.62049e-13, -2.47632e-16], [1000, 5.61651e-19]]")}}, sim_calibration(), {"calibration.yaml:", "cov[1][0]", "symmetric"}},
      {"probe: a negative variance", "probe",
       {{K, sub(kLiveCalibration, "cov: [[3.62049e-13, -2.47632e-16], [-2.47632e-16, 5.61651e-19]]",
                "cov: [[-3.62049e-13, -2.47632e-16], [-2.47632e-16, 5.61651e-19]]")}}, sim_calibration(), {"calibration.yaml:", "cov[0][0]", "negative"}},
      {"probe: a study unknown of 1e-300x", "probe", {{"study.yaml", kStudy + "unknowns: {compute_time: [1e-300x, 1x]}\n"}}, study_file(),
       {"study.yaml:", "compute_time"}},
      {"probe: a study bucket cap of 1e300 B", "probe", {{"study.yaml", sub(kStudy, "[1MiB, 25MiB]", "[1MiB, 1e300B]")}}, study_file(),
       {"study.yaml:", "bucket_cap", "1 EiB"}},
      {"probe: a study bucket cap below a byte", "probe", {{"study.yaml", sub(kStudy, "[1MiB, 25MiB]", "[1MiB, 1e-300B]")}}, study_file(),
       {"study.yaml:", "bucket_cap", "one byte"}},
      {"probe: whatif bucket-cap --caps 1e300B", "probe", {}, with(whatif_q("bucket-cap"), {"--caps", "1e300B"}), {"--caps", "1 EiB"}},
      {"probe: a study cluster of 2^24 nodes", "probe",
       {{"study.yaml", sub(kStudy, "calibration: datasheet", "calibration: datasheet\n    nodes: 16777216")}}, study_file(),
       {"study.yaml:", "nodes"}},
      {"probe: --set widths=64--5-1", "probe", {}, with(whatif_q("change"), {"--set", "widths=64--5-1"}), {"--set widths=64--5-1", "not a width"}},
      {"probe: --set widths=64-0x10-1", "probe", {}, with(whatif_q("change"), {"--set", "widths=64-0x10-1"}), {"--set widths=64-0x10-1", "0x10"}},
      {"probe: bench kernels --threads 0", "probe", {}, {"bench", "kernels", "--threads", "0"}, {"--threads", "got 0"}},
      {"probe: a kernel plan of 1000001 repeats", "probe", {{P, sub(kPlan, "repeats: 9", "repeats: 1000001")}}, measure_plan(),
       {"plan.yaml:", "repeats", "at most 1000"}},
      {"probe: measure kernels --shapes ''", "probe", {}, {"measure", "kernels", "--shapes", "", "--json", "{d}/out.json"}, {"--shapes", "empty"}},
      {"probe: calibrate with a transport twice", "probe", {{P, sub(kCalibratePlan, "transports: [shm]\n    live", "transports: [shm, shm]\n    live")}},
       calibrate_plan(), {"plan.yaml:", "transports[1]", "twice"}},
      {"probe: measure allreduce --resume a YAML file", "probe", {{"m.json", kCalibratePlan}},
       {"measure", "allreduce", "-b", "8", "-e", "64", "-f", "2", "--resume", "{d}/m.json"}, {"m.json", "not JSON", "expected a kanscale sweep file"}},
      {"probe: measure allreduce -e 1e300", "probe", {}, {"measure", "allreduce", "-b", "8", "-e", "1e300"}, {"-e", "1 EiB"}},
      {"probe: --min-efficiency 0", "probe", {}, with(whatif_q("gpus"), {"--budget", "2h", "--min-efficiency", "0"}), {"--min-efficiency", "got 0"}},
      {"range: calibrate --max-ranks 0", "range", {{P, kCalibratePlan}}, with(calibrate_plan(), {"--max-ranks", "0"}), {"--max-ranks"}},
  };
}

// site files (validate --emit --site)
const std::string kSite = read_file(kSrc + "/configs/sites/finisterrae3.yaml");
std::vector<std::string> emit_site() { return {"validate", "{d}/plan.yaml", "--emit", "{d}/e", "--site", "{d}/site.yaml"}; }
std::vector<Case> catalogue_part30() {
  const std::string vplan = validation_plan();
  auto site = [&](const std::string& text) { return std::vector<File>{{VP, vplan}, {"site.yaml", text}}; };
  return {
      {"site: unknown scheduler", "site", site(sub(kSite, "scheduler: slurm", "scheduler: pbs")), emit_site(),
       {"site.yaml:", "scheduler", "slurm"}},
      {"site: missing partition", "site", site(sub(kSite, "partition: short\n", "")), emit_site(), {"site.yaml:", "partition", "missing"}},
      {"site: a scratch path with a newline", "site", site(sub(kSite, "scratch: \"$LUSTRE\"", "scratch: \"/shared\\nscratch\"")), emit_site(),
       {"site.yaml:", "scratch", "control character"}},
      {"site: scratch in /tmp", "site", site(sub(kSite, "scratch: \"$LUSTRE\"", "scratch: /tmp/runs")), emit_site(),
       {"site.yaml:", "scratch", "node-local"}},
      {"site: a relative scratch", "site", site(sub(kSite, "scratch: \"$LUSTRE\"", "scratch: runs")), emit_site(),
       {"site.yaml:", "scratch", "absolute path"}},
      {"site: a partition with a space", "site", site(sub(kSite, "partition: short", "partition: \"short --exclusive\"")), emit_site(),
       {"site.yaml:", "partition", "#SBATCH"}},
      {"site: a module with shell syntax", "site", site(sub(kSite, "cuda/11.7.0]", "\"cuda;rm\"]")), emit_site(),
       {"site.yaml:", "modules", "module name"}},
      {"site: srun without Slurm", "site", site(sub(sub(sub(sub(sub(kSite, "scheduler: slurm", "scheduler: none"), "partition: short\n", ""),
                                                               "account: \"\"\n", ""), "time_limit: \"02:00:00\"\n", ""),
                                                   "cpus_per_task: 32\n", "")),
       emit_site(), {"site.yaml:", "launcher", "slurm"}},
      {"site: an unknown key", "site", site(kSite + "qos: debug\n"), emit_site(), {"site.yaml:", "qos"}},
      {"site: --site without --emit", "site", site(kSite), {"validate", "{d}/plan.yaml", "--out", "{d}/o", "--site", "{d}/site.yaml"},
       {"--site", "--emit"}},
      {"site: a missing site file", "site", {{VP, vplan}}, emit_site(), {"site.yaml"}},
  };
}

// The checkpoint with every weight a NaN (0x7fc00000, little-endian):
// a file that reads, whose predictions are no numbers.
std::string st_nan_weights() {
  std::string bytes = read_file(checkpoint().model);
  std::uint64_t len = 0;
  for (int i = 0; i < 8; ++i) len |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  for (std::size_t at = 8 + len; at + 4 <= bytes.size(); at += 4) bytes.replace(at, 4, std::string("\x00\x00\xc0\x7f", 4));
  return bytes;
}

// Issue 55: hostile inputs that were fitted or answered silently, and
// messages that named the wrong thing.
const std::string kTrace = read_file(kSrc + "/tests/fixtures/torch/parity-3-layers.trace.json");
const std::string kTorchCal = read_file(kSrc + "/configs/calibrations/pytorch-cpu.yaml");
std::vector<std::string> import_trace() {
  return {"import", "torch-profile", "{d}/t.json", "--workload", "{src}/configs/workloads/default.yaml", "--json", "{d}/out.json"};
}
// a log row: 1 MiB over 16 ranks, busbw 2 (n - 1) / n x algbw
const std::string kRow1M = "     1048576        262144     float     sum      -1    203.2    5.16    9.68      0    207.2    5.06    9.49      0";
// a posterior calibration (kanscale study --infer writes them): its settings are checked when applied
const std::string kPosterior =
    "name: p\nsource: posterior\nconcurrency: 1\nfitted_from: \"hand-made\"\nposterior:\n  conditioned_on: \"a test\"\n"
    "  point: {compute_time: \"1.5x\", nccl_at_2nodes: \"1.1x\"}\n  band_without: speedup\n  draws:\n"
    "    - {compute_time: \"1.2x\"}\n    - {compute_time: \"2x\"}\n";
std::vector<std::string> sim_posterior() {
  return {"simulate", "--cluster", "{src}/configs/clusters/finisterrae3.yaml", "--workload", "{src}/configs/workloads/default.yaml",
          "--calibration", "{d}/calibration.yaml", "--gpus", "1,2", "--json", "{d}/out.json"};
}
std::vector<Case> catalogue_part32() {
  return {
      {"posterior: a key that is no setting", "posterior", {{K, sub(kPosterior, "{compute_time: \"1.5x\"", "{compute_tim: \"1.5x\"")}},
       sim_posterior(), {"calibration.yaml:7:", "posterior.point.compute_tim", "not a setting"}},
      {"posterior: a factor that is text", "posterior", {{K, sub(kPosterior, "\"1.5x\"", "\"lots\"")}}, sim_posterior(),
       {"calibration.yaml:7:", "posterior.point.compute_time"}},
      {"posterior: a negative factor in a draw", "posterior", {{K, sub(kPosterior, "\"2x\"", "\"-2x\"")}}, sim_posterior(),
       {"calibration.yaml:11:", "compute_time"}},
      {"posterior: a draw's key that is no setting", "posterior", {{K, sub(kPosterior, "{compute_time: \"1.2x\"}", "{cpu: \"1.2x\"}")}},
       sim_posterior(), {"calibration.yaml:10:", "cpu", "not a setting"}},
      {"posterior: no point", "posterior", {{K, sub(kPosterior, "  point: {compute_time: \"1.5x\", nccl_at_2nodes: \"1.1x\"}\n", "")}},
       sim_posterior(), {"calibration.yaml:", "posterior.point", "missing"}},
      {"posterior: an empty point", "posterior", {{K, sub(kPosterior, "{compute_time: \"1.5x\", nccl_at_2nodes: \"1.1x\"}", "{}")}},
       sim_posterior(), {"calibration.yaml:", "posterior.point", "at least one setting"}},
      {"posterior: no conditioned_on", "posterior", {{K, sub(kPosterior, "  conditioned_on: \"a test\"\n", "")}}, sim_posterior(),
       {"calibration.yaml:", "posterior.conditioned_on"}},
      {"posterior: a time where a factor goes", "posterior", {{K, sub(kPosterior, "nccl_at_2nodes: \"1.1x\"", "nccl_at_2nodes: \"5us\"")}},
       sim_posterior(), {"calibration.yaml:7:", "nccl_at_2nodes"}},
      {"posterior: given to whatif", "posterior", {{K, kPosterior}},
       {"whatif", "change", "--cluster", "{src}/configs/clusters/finisterrae3.yaml", "--workload", "{src}/configs/workloads/default.yaml",
        "--calibration", "{d}/calibration.yaml", "--set", "compute_time=2x", "--json", "{d}/out.json"},
       {"calibration.yaml:", "source", "simulate` only"}},
  };
}

std::vector<Case> catalogue_part31() {
  const std::string vplan = validation_plan();
  const std::string zero_log = "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
                               "           0             0     float     sum      -1      5.0    0.00    0.00      0      5.0    0.00    0.00      0\n";
  return {
      {"log: a busbw of 0 at 1 MiB", "nccl-log", {{"run.log", sub(kLog, kRow1M, sub(kRow1M, "9.68", "0.00"))}}, fit_log(),
       {"run.log:41", "busbw"}},
      {"log: a busbw of 1e300", "nccl-log", {{"run.log", sub(kLog, kRow1M, sub(kRow1M, "   9.68", "1e300"))}}, fit_log(),
       {"run.log:41", "busbw"}},
      {"log: an algbw that disagrees with size / time", "nccl-log", {{"run.log", sub(kLog, kRow1M, sub(kRow1M, "5.16", "51.6"))}}, fit_log(),
       {"run.log:41", "algbw"}},
      {"log: a row with wrong results", "nccl-log", {{"run.log", sub(kLog, kRow1M, sub(kRow1M, "9.68      0", "9.68      3"))}}, fit_log(),
       {"run.log:41", "#wrong is 3"}},
      {"log: a negative in-place time", "nccl-log", {{"run.log", sub(kLog, kRow1M, sub(kRow1M, "207.2", "-207.2"))}}, fit_log(),
       {"run.log:41", "negative"}},
      {"log: every size 0", "nccl-log", {{"run.log", zero_log}}, fit_log(), {"run.log", "every row's size is 0"}},
      {"log: a broadcast log given as the all-reduce log", "nccl-log",
       {{"run.log", sub(kLog, kRow1M, "     1048576        262144     float    none       0    203.2    5.16    5.16      0    207.2    5.06    5.06      0")}},
       fit_log(), {"run.log:41", "redop none", "all_reduce_perf"}},
      {"log: a count that is not the size's", "nccl-log", {{"run.log", sub(kLog, kRow1M, sub(kRow1M, "262144", "999999"))}}, fit_log(),
       {"run.log:41", "is not its count"}},
      {"log: a size that does not follow the one before", "nccl-log",
       {{"run.log", sub(kLog, kRow1M, sub(kRow1M, "     1048576        262144", "           8             2"))}}, fit_log(),
       {"run.log:41", "does not follow"}},
      {"log: the same log twice", "nccl-log", {{"run.log", kLog}}, {"fit", "--nccl-tests", "{d}/run.log", "{d}/run.log", "--out", "{d}/out.yaml"},
       {"run.log", "given twice"}},
      {"log: the same table under two names", "nccl-log", {{"run.log", kLog}, {"copy.log", kLog}},
       {"fit", "--nccl-tests", "{d}/run.log", "{d}/copy.log", "--out", "{d}/out.yaml"}, {"copy.log", "the same table as", "run.log"}},
      {"calibration: a compute factor of 1e-300", "calibration", {{K, sub(kCalibration, "compute_factor: 1.06578", "compute_factor: 1e-300")}},
       sim_calibration(), {"calibration.yaml:", "compute_factor", "0.01 to 100"}},
      {"calibration: two live terms for one rank count", "calibration",
       {{K, sub(kCalibration, "    - {ranks: 2, compute_factor: 1.12785", "    - {ranks: 1, compute_factor: 1.12785")}}, sim_calibration(),
       {"calibration.yaml:", "ranks", "a term already"}},
      {"calibration: interference of 1e300", "calibration", {{K, sub(kCalibration, "interference: 0.455505", "interference: 1e300")}},
       sim_calibration(), {"calibration.yaml:", "interference", "at most 100"}},
      {"calibration: an unknown PyTorch op class", "calibration", {{K, sub(kTorchCal, "\"forward:silu\":", "\"forward:silly\":")}},
       {"simulate", "--cluster", "{src}/configs/clusters/local-cpu-gloo.yaml", "--workload", "{src}/configs/workloads/default.yaml",
        "--calibration", "{d}/calibration.yaml", "--gpus", "1", "--json", "{d}/out.json"},
       {"calibration.yaml:", "forward:silly", "not an op class"}},
      {"site: an empty time limit", "site", {{VP, vplan}, {"site.yaml", sub(kSite, "time_limit: \"02:00:00\"", "time_limit: \"\"")}},
       emit_site(), {"site.yaml:", "time_limit", "sbatch"}},
      {"plan: a verdict block with runs: 1", "validation-plan", {{VP, vplan + "verdict: {group_bias_pct: 5}\n"}}, validate_plan(),
       {"plan.yaml:", "verdict", "runs"}},
      {"trace: JSON nested 100,000 deep", "probe", {{"t.json", std::string(100000, '[') + std::string(100000, ']')}}, import_trace(),
       {"t.json", "nested more than 256 levels"}},
      {"trace: an op of 1e300 us", "probe", {{"t.json", sub(kTrace, "\"dur\":6.312", "\"dur\":1e300")}}, import_trace(),
       {"t.json", "aten::empty", "at most a day"}},
      {"trace: a phase given as a number", "probe", {{"t.json", sub(kTrace, "\"ph\":\"X\",\"ts\":15.158", "\"ph\":5,\"ts\":15.158")}},
       import_trace(), {"t.json"}},
      {"trace: a negative profiler step", "probe",
       {{"t.json", sub(kTrace, "[\n", "[\n{\"name\":\"ProfilerStep#1\",\"ph\":\"X\",\"ts\":0,\"dur\":-5,\"tid\":1},\n")}}, import_trace(),
       {"t.json", "ProfilerStep#1", "negative duration"}},
      {"trace: nested profiler steps", "probe",
       {{"t.json", sub(kTrace, "[\n", "[\n{\"name\":\"ProfilerStep#1\",\"ph\":\"X\",\"ts\":0,\"dur\":100000,\"tid\":1},\n"
                                       "{\"name\":\"ProfilerStep#2\",\"ph\":\"X\",\"ts\":10,\"dur\":50,\"tid\":1},\n")}},
       import_trace(), {"t.json", "ProfilerStep#2", "starts inside ProfilerStep#1"}},
      {"import: --ranks beyond kanscale's limit", "probe", {{"t.json", kTrace}}, with(import_trace(), {"--ranks", "1048577"}),
       {"--ranks", "1048576"}},
      {"measure: --flush of 1 PiB", "probe", {}, {"measure", "kernels", "--flush", "1PiB", "--json", "{d}/out.json"}, {"--flush 1PiB"}},
      {"simulate: --seed past 2^64", "probe", {}, sim({"--gpus", "1", "--seed", "18446744073709551616"}), {"--seed", "18446744073709551615"}},
      {"eval: no rows", "flags-eval", {{"x.csv", "x0,x1\n"}}, eval_csv(), {"x.csv", "no rows"}},
      {"eval: weights that are not numbers", "flags-eval", st(st_nan_weights()), eval_st(), {"m.safetensors", "not a finite number"}},
      {"workload: flow collections 3,000 deep", "workload", {{W, "name: x\nkan: " + std::string(3000, '[') + std::string(3000, ']') + "\n"}},
       sim_workload(), {"workload.yaml:2", "nested more than 64 levels"}},
      // 100,000 steps x 35 ops x (221 + 3,180) B kept for --trace: 11.9 GB, above 1 GiB
      {"train: --trace of 100,000 steps within 1 GiB", "flags-train", {},
       {"train", "--workload", "{src}/configs/workloads/local-kanscale.yaml", "--steps", "100000", "--trace", "{d}/t.json", "--memory-limit", "1GiB"},
       {"local-kanscale.yaml", "kept for --trace", "--memory-limit"}},
      // the fixture (130 KB) x 19 B a byte: about 2.5 MB, above a limit of 1 MiB
      {"import: a trace whose reading needs more than --memory-limit", "probe", {{"t.json", kTrace}},
       with(import_trace(), {"--memory-limit", "1MiB"}), {"t.json", "bytes a byte of trace", "--memory-limit"}},
  };
}

std::vector<Case> catalogue() {
  std::vector<Case> all;
  for (auto part : {catalogue_part1, catalogue_part2, catalogue_part3, catalogue_part4, catalogue_part5, catalogue_part6, catalogue_part7, catalogue_part8, catalogue_part9, catalogue_part10, catalogue_part11, catalogue_part12, catalogue_part13, catalogue_part14, catalogue_part15, catalogue_part16, catalogue_part17, catalogue_part18, catalogue_part19, catalogue_part20, catalogue_part21, catalogue_part22, catalogue_part23, catalogue_part24, catalogue_part25, catalogue_part26, catalogue_part27, catalogue_part28, catalogue_part29, catalogue_part30, catalogue_part31, catalogue_part32})
    for (Case& c : part()) all.push_back(std::move(c));
  return all;
}

std::string expand(std::string s, const std::string& dir) {
  const std::map<std::string, std::string> vars = {{"{d}", dir}, {"{dn}", dir.substr(dir.rfind('/') + 1)}, {"{src}", kSrc},
                                                    {"{ckpt}", checkpoint().model}};
  for (const auto& [k, v] : vars)
    for (std::size_t p = s.find(k); p != std::string::npos; p = s.find(k, p + v.size())) s.replace(p, k.size(), v);
  return s;
}

std::set<std::string> listing(const std::string& dir) {
  std::set<std::string> names;  // files, relative to dir
  std::error_code ec;
  for (std::filesystem::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (!it->is_directory()) names.insert(std::filesystem::relative(it->path(), dir).string());
  return names;
}

}  // namespace

TEST_CASE("every bad input: exit 2, one line naming the file and key (or the flag), nothing written") {
  const std::vector<Case> cases = catalogue();
  std::map<std::string, int> per_kind;
  for (const auto& c : cases) ++per_kind[c.kind];
  for (const auto& entry : per_kind) {  // (clang cannot capture a structured binding in CAPTURE's lambda)
    CAPTURE(entry.first);
    CHECK(entry.second >= 8);
  }
  CHECK(cases.size() >= 150);
  CHECK(per_kind.size() >= 22);

  for (const auto& c : cases) {
    TempDir d;
    std::set<std::string> inputs;
    for (const auto& f : c.files) {
      const auto slash = f.name.rfind('/');
      if (slash != std::string::npos) std::filesystem::create_directories(d / f.name.substr(0, slash));
      d.write(f.name, f.text);
      inputs.insert(f.name);
    }
    std::vector<std::string> argv = {kExe};
    for (const auto& a : c.argv) argv.push_back(expand(a, d.path));
    // every input, the case's own and the shipped ones it names, is hashed before and after
    std::map<std::string, std::size_t> before;
    for (const auto& f : c.files) before[d / f.name] = std::hash<std::string>{}(read_file(d / f.name));
    for (std::size_t i = 1; i < argv.size(); ++i)
      if (std::filesystem::is_regular_file(argv[i]) && !before.count(argv[i])) before[argv[i]] = std::hash<std::string>{}(read_file(argv[i]));
    const ProcessResult r = run_process(argv, kSrc, 60);
    CAPTURE(c.name);
    CAPTURE(r.err);
    CHECK(r.exit_code == c.exit);
    const auto lines = std::count(r.err.begin(), r.err.end(), '\n');
    CHECK(lines == 1);
    for (const auto& e : c.expect) {
      const std::string want = expand(e, d.path);
      CAPTURE(want);
      CHECK(r.err.find(want) != std::string::npos);
    }
    for (const auto& [path, hash] : before) {
      const std::string& input = path;  // CAPTURE's lambda cannot take a structured binding before C++20 (clang)
      CAPTURE(input);
      CHECK(std::filesystem::is_regular_file(path));
      if (std::filesystem::is_regular_file(path)) CHECK(std::hash<std::string>{}(read_file(path)) == hash);
    }
    // no output file (nor a temporary one) beside the inputs, at any depth
    CHECK(listing(d.path) == inputs);
  }
}

// The directory marker (base/output_files: .kanscale-output lists what
// kanscale wrote) against links: an output that reaches an input through a
// symbolic link or a hard link is refused as the input itself would be,
// and an earlier output that kanscale wrote is replaced.
TEST_CASE("output directories: kanscale replaces only what it wrote, never an input through a link") {
  const std::string small = kSrc + "/configs/studies/small.yaml";
  auto study = [&](const std::string& file, const std::string& out) {
    return run_process({kExe, "study", file, "--out", out, "--no-plots"}, kSrc, 120);
  };
  TempDir d;
  // an earlier study's output is kanscale's: replaced, and its marker lists every file
  REQUIRE(study(small, d / "out").exit_code == 0);
  const std::string marker = read_file(d / "out/.kanscale-output");
  CHECK(marker.find("\nstudy.json\n") != std::string::npos);
  CHECK(marker.find("\nreport.md\n") != std::string::npos);
  CHECK(study(small, d / "out").exit_code == 0);

  SUBCASE("a symbolic link into the output as the study file") {
    d.write("out/s.yaml", read_file(small));  // a file the marker does not list...
    REQUIRE(symlink((d / "out/s.yaml").c_str(), (d / "link.yaml").c_str()) == 0);
    const ProcessResult r = study(d / "link.yaml", d / "out");
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("link.yaml") != std::string::npos);  // ...and the input, through the link
    CHECK(read_file(d / "out/s.yaml") == read_file(small));
  }
  SUBCASE("a hard link to the study file inside the output, listed by the marker") {
    d.write("in.yaml", read_file(small));
    REQUIRE(link((d / "in.yaml").c_str(), (d / "out/h.yaml").c_str()) == 0);
    d.write("out/.kanscale-output", marker + "h.yaml\n");  // as if kanscale had written it: only the inode tells
    const ProcessResult r = study(d / "in.yaml", d / "out");
    CAPTURE(r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("a link to") != std::string::npos);
    CHECK(read_file(d / "in.yaml") == read_file(small));
    CHECK(std::filesystem::exists(d / "out/h.yaml"));
  }
  SUBCASE("a symbolic link listed by the marker, pointing at the study's workload") {
    d.write("w.yaml", read_file(kSrc + "/configs/workloads/default.yaml"));
    std::filesystem::remove(d / "out/report.md");
    REQUIRE(symlink((d / "w.yaml").c_str(), (d / "out/report.md").c_str()) == 0);  // report.md is listed
    const ProcessResult r = study(small, d / "out");
    CAPTURE(r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("report.md (a symbolic link") != std::string::npos);
    CHECK(read_file(d / "w.yaml") == read_file(kSrc + "/configs/workloads/default.yaml"));
  }
  SUBCASE("the output itself a symbolic link to a directory") {
    REQUIRE(symlink((d / "out").c_str(), (d / "alias").c_str()) == 0);
    const ProcessResult r = study(small, d / "alias");
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("symbolic link") != std::string::npos);
  }
  SUBCASE("an output directory named with a trailing slash, written twice") {
    for (int run = 0; run < 2; ++run) {
      const ProcessResult r =
          run_process({kExe, "validate", "validation/plans/finisterrae3.yaml", "--published", "--out", d / "rep/"}, kSrc, 120);
      CAPTURE(run);
      CAPTURE(r.err);
      CHECK((r.exit_code == 0 || r.exit_code == 1));  // written (the published comparison may pass or not)
    }
    CHECK(read_file(d / "rep/.kanscale-output").find("\nreport.md\n") != std::string::npos);
  }
  SUBCASE("a run directory left by an interrupted run: its marker only") {
    std::filesystem::create_directories(d / "cut/work/cases");
    d.write("cut/.kanscale-output", "# kanscale\n");
    d.write("cut/work/.kanscale-output", "# kanscale\ncases/case0.yaml\n");
    d.write("cut/work/cases/case0.yaml", "name: case0\n");
    const ProcessResult r =
        run_process({kExe, "validate", "validation/plans/finisterrae3.yaml", "--published", "--out", d / "cut"}, kSrc, 120);
    CAPTURE(r.err);
    CHECK((r.exit_code == 0 || r.exit_code == 1));
  }
  SUBCASE("a foreign file among the earlier output") {
    d.write("out/svg-notes.txt", "mine\n");
    const ProcessResult r = study(small, d / "out");
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("svg-notes.txt") != std::string::npos);
    CHECK(read_file(d / "out/svg-notes.txt") == "mine\n");
  }
}

// A limit kanscale knows moves an answer: a GPU memory too small for the run
// is a change ("no longer fits"), never "moves nothing".
TEST_CASE("whatif change: a smaller GPU memory that the run no longer fits is an answer") {
  const ProcessResult r = run_process({kExe, "whatif", "change", "--cluster", kSrc + "/configs/clusters/finisterrae3.yaml", "--workload",
                                       kSrc + "/configs/workloads/default.yaml", "--gpus", "8", "--set", "gpu.memory=0.001x"},
                                      kSrc, 60);
  CAPTURE(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("no longer fits") != std::string::npos);
}
