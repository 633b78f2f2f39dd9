// kanscale bench kernels: the CPU KAN kernels' speed against this machine's
// measured FP32 GEMM rate, and the trainer's overhead over bare kernels.
#include <boost/program_options.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <unistd.h>
#include <iomanip>
#include <iostream>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "commands.hpp"
#include "measure/adam.hpp"
#include "measure/comm.hpp"
#include "measure/kan.hpp"
#include "measure/kan_cpu.hpp"
#include "measure/kan_ref.hpp"
#include "measure/machine_info.hpp"
#include "measure/safetensors.hpp"
#include "measure/trainer.hpp"
#include "model/cost.hpp"
#include "model/limits.hpp"
#include "model/units.hpp"
#include "formats/yaml_reader.hpp"
#include "options.hpp"
#include "sim/report.hpp"
#include "sim/study.hpp"

namespace po = boost::program_options;
using Clock = std::chrono::steady_clock;

namespace ks::cli {

namespace {

struct Case {
  std::vector<std::int64_t> widths;
  int G;
};

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Median seconds of `reps` runs of f after `warm` warm-up runs.
template <typename F>
Stat time_it(F&& f, int warm, int reps) {
  for (int i = 0; i < warm; ++i) f();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = Clock::now();
    f();
    t.push_back(seconds_since(t0));
  }
  return summarize(t);
}

std::string fmt(double v, int p) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(p) << v;
  return os.str();
}

// A batch of uniform inputs and targets in [-1, 1] (`seed`: the same data every run).
struct Batch {
  int rows = 0;
  std::vector<float> X, T;
};
Batch random_batch(const Case& c, int batch, unsigned seed) {
  Batch b;
  b.rows = batch;
  b.X.resize(static_cast<std::size_t>(batch) * c.widths.front());
  b.T.resize(static_cast<std::size_t>(batch) * c.widths.back());
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (auto& v : b.X) v = u(gen);
  for (auto& v : b.T) v = u(gen);
  return b;
}

std::string shape_text(const std::vector<std::int64_t>& widths) {
  std::string shape = "[";
  for (std::size_t i = 0; i < widths.size(); ++i) shape += (i ? "," : "") + std::to_string(widths[i]);
  return shape + "]";
}

// One row of the table: forward + backward of the case on `threads` threads,
// the FLOPs executed and those of efficient-kan's dense formulation.
nlohmann::json time_case(KanNet& net, const Case& c, const Batch& b, int threads, int reps, double peak) {
  double flops = 0, dense = 0;
  for (std::size_t l = 0; l < net.layers.size(); ++l) {
    flops += layer_forward_count(net.layers[l], b.rows).flops + layer_backward_count(net.layers[l], b.rows, l > 0).flops;
    // what efficient-kan's dense formulation executes: 6*B*in*out*(C+1) (2x less for layer 0's input grad)
    const double gemm = 2.0 * b.rows * net.layers[l].in * net.layers[l].out * (net.layers[l].C() + 1);
    dense += gemm * (l > 0 ? 3 : 2);
  }
  set_cpu_threads(threads);
  KanCpuNet cpu(net);
  const Stat s = time_it(
      [&] {
        cpu.forward(b.X.data(), b.T.data(), b.rows);
        cpu.backward([](int) {}, nullptr);
      },
      3, reps);
  const double gf = flops / s.median / 1e9;
  std::cout << std::setw(22) << shape_text(c.widths) << std::setw(4) << c.G << std::setw(9) << threads << std::setw(12)
            << format_time(s.median) << std::setw(14) << fmt(b.rows / s.median, 0) << std::setw(10) << fmt(gf, 1) << std::setw(10)
            << fmt(100 * flops / s.median / peak, 1) << std::setw(12) << fmt(dense / s.median / 1e9, 1) << fmt(s.p95 / s.median, 2)
            << "\n";
  return {{"widths", c.widths},       {"grid_size", c.G},          {"threads", threads},
          {"batch", b.rows},          {"time_s", s.median},        {"samples_per_s", b.rows / s.median},
          {"executed_flops", flops},  {"gflops", gf},              {"gemm_peak_gflops", peak / 1e9},
          {"dense_equivalent_gflops", dense / s.median / 1e9}};
}

// --export: the case's weights, inputs and the fp64 reference's loss and
// gradients (as fp32), for bench/pytorch_efficient_kan.py.
void export_case(KanNet& net, const Case& c, const Batch& b, const std::string& export_dir) {
  StFile f;
  for (auto& r : kan_state_refs(net)) f.tensors[r.name] = StTensor{r.shape, std::vector<float>(r.data, r.data + r.size())};
  f.tensors["x"] = StTensor{{b.rows, c.widths.front()}, b.X};
  f.tensors["t"] = StTensor{{b.rows, c.widths.back()}, b.T};
  std::vector<double> Xd(b.X.begin(), b.X.end()), Td(b.T.begin(), b.T.end());
  std::vector<std::vector<double>> grads;
  const int refB = std::min(b.rows, 64);  // the fp64 reference is slow: check on the first 64 rows
  Xd.resize(static_cast<std::size_t>(refB) * c.widths.front());
  Td.resize(static_cast<std::size_t>(refB) * c.widths.back());
  const double loss = ref::net_loss(net, Xd, Td, refB, &grads);
  auto prefs = kan_parameter_refs(net);
  for (std::size_t p = 0; p < prefs.size(); ++p)
    f.tensors["ref_grad." + prefs[p].name] = StTensor{prefs[p].shape, std::vector<float>(grads[p].begin(), grads[p].end())};
  f.metadata = {{"ref_rows", std::to_string(refB)}, {"ref_loss", fmt(loss, 17)}, {"grid_size", std::to_string(c.G)}, {"spline_order", "3"}};
  std::string name = "case";
  for (auto wdt : c.widths) name += "_" + std::to_string(wdt);
  name += "_G" + std::to_string(c.G) + ".safetensors";
  write_owned_files(export_dir, {{export_dir + "/" + name, safetensors_bytes(f)}});
}

// One row of the trainer's overhead: kanscale train's iteration against bare
// forward + backward + Adam, one rank, one thread, the same kind of data.
void trainer_overhead_row(const Case& c, int batch, int reps) {
  set_cpu_threads(1);
  KanNet net = init_kan(c.widths, c.G, 3, 1);
  const Batch b = random_batch(c, batch, 11);
  KanCpuNet cpu(net);
  Adam adam;
  auto prefs = kan_parameter_refs(net);
  std::vector<std::size_t> sizes;
  std::vector<float*> pp;
  std::vector<const float*> gp;
  for (auto& p : prefs) {
    sizes.push_back(p.size());
    pp.push_back(p.data);
  }
  for (auto& g : cpu.grads()) gp.push_back(g.data());
  adam.init(sizes);
  const Stat bare = time_it(
      [&] {
        cpu.forward(b.X.data(), b.T.data(), batch);
        cpu.backward([](int) {}, nullptr);
        adam.update(pp, gp);
      },
      3, reps);
  TrainOptions o;
  o.workload.name = "bench";
  o.workload.widths = c.widths;
  o.workload.grid_size = c.G;
  o.workload.spline_order = 3;
  o.workload.task = "teacher";
  o.workload.batch_per_gpu = batch;
  o.workload.dataset_size = static_cast<std::int64_t>(batch) * (reps + 4);
  o.steps = reps + 4;
  o.threads = 1;
  o.quiet = true;
  o.print_summary = false;
  auto comm = make_self_comm();
  const double it = run_train(o, *comm).summary.value().iteration_s.median;
  std::cout << std::setw(22) << shape_text(c.widths) << std::setw(4) << c.G << std::setw(12) << format_time(bare.median) << std::setw(12)
            << format_time(it) << fmt(100 * (it / bare.median - 1), 1) << "%\n";
}

// --json and --export checked before anything runs: one path cannot be both,
// and the export directory is kanscale's own (its marker written now).
void check_outputs(const std::string& json, const std::string& export_dir) {
  if (!json.empty() && !export_dir.empty()) {
    namespace fs = std::filesystem;
    const fs::path j = fs::absolute(json).lexically_normal(), e = fs::absolute(export_dir).lexically_normal();
    const auto rel = j.lexically_relative(e);
    if (j == e || (!rel.empty() && rel.begin()->string() != ".."))
      throw InputError("--json " + json + ": is, or lies inside, the --export directory " + export_dir + "; name a file elsewhere");
  }
  check_output_paths({{json, "--json"}});
  if (!export_dir.empty()) {
    check_owned_dir(export_dir, "--export");
    record_outputs(export_dir, {});
  }
}

// Before any buffer exists: the largest case's training step (the model's own
// accounting) within half this machine's memory.
void check_memory(const std::vector<Case>& cases, int batch) {
  double need = 0;
  for (const auto& c : cases) need = std::max(need, kanscale_memory(KanShape{c.widths, c.G, 3}, batch, DdpSettings{}, 0, 0).peak_bytes);
  const double memory = physical_memory_bytes();
  if (memory > 0 && need > memory / 2)
    throw InputError("--batch " + std::to_string(batch) + ": the largest case needs about " + format_bytes(need) + ", above half this machine's " +
                     format_bytes(memory));
}

}  // namespace

int bench_kernels(const std::vector<std::string>& args) {
  int reps = 15, batch = 1024;
  std::string threads_list = "1,2", export_dir, json;
  po::options_description desc("bench kernels options");
  desc.add_options()
      ("help,h", "show this help")
      ("repeat", po::value(&reps)->default_value(reps), "timed repetitions (median reported)")
      ("batch", po::value(&batch)->default_value(batch), "batch size")
      ("threads", po::value(&threads_list)->default_value(threads_list), "thread counts")
      ("export", po::value(&export_dir)->value_name("DIR"),
       "write each case's weights, inputs and fp64 reference outputs (for bench/pytorch_efficient_kan.py)")
      ("json", po::value(&json)->value_name("FILE"), "results as JSON");
  po::variables_map vm;
  if (!parse_args(args, desc,
                  "usage: kanscale bench kernels [--repeat R] [--threads 1,2] [--export DIR]\n"
                  "Forward + backward + MSE loss of the fast CPU path per shape and thread count.",
                  vm))
    return 0;
  if (reps < 1 || reps > 1000) throw InputError("--repeat: expected 1 to 1000, got " + std::to_string(reps));
  if (batch < 1 || batch > kMaxBatch) throw InputError("--batch: expected 1 to " + std::to_string(kMaxBatch) + ", got " + std::to_string(batch));
  const auto threads = parse_int_list(threads_list, "--threads");
  for (int t : threads) check_threads(t, "--threads");
  check_outputs(json, export_dir);
  const std::vector<Case> cases = {{{64, 64, 1}, 5}, {{256, 256, 256, 1}, 5}, {{256, 256, 256, 1}, 20}};
  check_memory(cases, batch);

  nlohmann::json out = nlohmann::json::array();
  std::cout << "kanscale bench kernels: forward + backward + MSE loss, batch " << batch << ", fp32, median of " << reps
            << "\n\n";
  std::cout << std::left << std::setw(22) << "shape" << std::setw(4) << "G" << std::setw(9) << "threads" << std::setw(12)
            << "time" << std::setw(14) << "samples/s" << std::setw(10) << "GFLOP/s" << std::setw(10) << "% GEMM"
            << std::setw(12) << "dense-eq" << "p95/med\n";
  std::map<int, double> peak;
  for (int t : threads) peak[t] = measure_gemm_flops(t);
  for (const auto& c : cases) {
    KanNet net = init_kan(c.widths, c.G, 3, 1);
    const Batch b = random_batch(c, batch, 7);
    for (int t : threads) out.push_back(time_case(net, c, b, t, reps, peak[t]));
    if (!export_dir.empty()) export_case(net, c, b, export_dir);
  }
  std::cout << "\nGFLOP/s counts the FLOPs the local-support kernels execute; % GEMM is against this machine's\n"
               "Eigen SGEMM (1024^3) at the same threads: ";
  for (auto& [t, p] : peak) std::cout << t << " thread(s) " << fmt(p / 1e9, 1) << " GFLOP/s  ";
  std::cout << "\ndense-eq: the FLOPs efficient-kan's dense formulation would need, per second of this run.\n";
  // Trainer overhead: one rank, the same shapes, against bare kernels + Adam.
  std::cout << "\ntrainer overhead (1 rank, 1 thread): iteration of `kanscale train` vs bare forward+backward+Adam\n";
  std::cout << std::left << std::setw(22) << "shape" << std::setw(4) << "G" << std::setw(12) << "bare" << std::setw(12)
            << "trainer" << "overhead\n";
  for (const auto& c : cases) trainer_overhead_row(c, batch, reps);
  if (!json.empty()) write_files_atomic({{json, out.dump(2) + "\n"}});
  return 0;
}

}  // namespace ks::cli
