// kanscale bench kernels: the CPU KAN kernels' speed against this machine's
// measured FP32 GEMM rate, and the trainer's overhead over bare kernels.
#include <boost/program_options.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <unistd.h>
#include <iomanip>
#include <map>
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
#include "measure/kernel_speed.hpp"
#include "measure/machine_info.hpp"
#include "measure/safetensors.hpp"
#include "measure/trainer.hpp"
#include "model/cost.hpp"
#include "model/limits.hpp"
#include "model/units.hpp"
#include "formats/yaml_reader.hpp"
#include "options.hpp"
#include "sim/report.hpp"
#include "sim/point.hpp"

namespace po = boost::program_options;

namespace ks::cli {

namespace {

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
void check_memory(const std::vector<KernelCase>& cases, int batch) {
  double need = 0;
  for (const auto& c : cases) need = std::max(need, kanscale_memory(KanShape{c.widths, c.G, 3}, batch, DdpSettings{}, 0, 0).peak_bytes);
  const double memory = physical_memory_bytes();
  if (memory > 0 && need > memory / 2)
    throw InputError("--batch " + std::to_string(batch) + ": the largest case needs about " + format_bytes(need) + ", above half this machine's " +
                     format_bytes(memory));
}

// oneDNN's SGEMM at the kernels' own GEMM shapes (each case's widest layer,
// batch B, IC = in x (G + 3) spline columns): the forward spline product
// (B x out x IC, N/T), the backward weight gradient (out x IC x B, T/N) and
// the input gradient (B x IC x out, N/N), against oneDNN at 1024^3.
void gemm_shape_table(const std::vector<KernelCase>& cases, int batch, const std::vector<int>& threads,
                      const std::map<int, double>& peak, std::ostream& out) {
  out << "\noneDNN SGEMM at the kernels' own GEMM shapes (each case's widest layer):\n"
      << std::left << std::setw(22) << "shape" << std::setw(4) << "G" << std::setw(9) << "threads" << std::setw(30) << "product (M x N x K)"
      << std::setw(10) << "GFLOP/s" << "% of 1024^3\n";
  for (const auto& c : cases) {
    std::size_t in = 0, o = 0;
    for (std::size_t l = 0; l + 1 < c.widths.size(); ++l)
      if (static_cast<std::size_t>(c.widths[l] * c.widths[l + 1]) > in * o) in = c.widths[l], o = c.widths[l + 1];
    const std::size_t B = static_cast<std::size_t>(batch), IC = in * static_cast<std::size_t>(c.G + 3);
    struct P { const char* what; std::size_t M, N, K; char ta, tb; };
    for (const P& p : {P{"forward", B, o, IC, 'N', 'T'}, P{"weight grad", o, IC, B, 'T', 'N'}, P{"input grad", B, IC, o, 'N', 'N'}})
      for (int t : threads) {
        const double f = measure_onednn_sgemm_flops(t, p.M, p.N, p.K, p.ta, p.tb);
        out << std::setw(22) << shape_text(c.widths) << std::setw(4) << c.G << std::setw(9) << t << std::setw(30)
            << (std::string(p.what) + " " + std::to_string(p.M) + "x" + std::to_string(p.N) + "x" + std::to_string(p.K)) << std::setw(10)
            << printf_number("%.1f", f / 1e9) << printf_number("%.1f", 100 * f / peak.at(t)) << "\n";
      }
  }
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
  const std::vector<KernelCase> cases = {{{64, 64, 1}, 5}, {{256, 256, 256, 1}, 5}, {{256, 256, 256, 1}, 20}};
  check_memory(cases, batch);

  nlohmann::json out = nlohmann::json::array();
  std::cout << "kanscale bench kernels: forward + backward + MSE loss, batch " << batch << ", fp32, median of " << reps
            << "\n\n";
  std::cout << std::left << std::setw(22) << "shape" << std::setw(4) << "G" << std::setw(9) << "threads" << std::setw(12)
            << "time" << std::setw(14) << "samples/s" << std::setw(10) << "GFLOP/s" << std::setw(10) << "% oneDNN"
            << std::setw(12) << "dense-eq" << "p95/med\n";
  std::map<int, double> peak, eigen;
  for (int t : threads) peak[t] = measure_onednn_sgemm_flops(t, 1024, 1024, 1024), eigen[t] = measure_gemm_flops(t);
  for (const auto& c : cases) {
    KanNet net = init_kan(c.widths, c.G, 3, 1);
    const KernelBatch b = random_batch(c, batch, 7);
    for (int t : threads) {
      nlohmann::json row = time_kernel_case(net, c, b, t, reps, peak[t], std::cout);
      row["shape"] = shape_text(c.widths), row["G"] = c.G, row["ms"] = row["time_s"].get<double>() * 1e3;
      row["pct_onednn_1024"] = 100 * row["gflops"].get<double>() * 1e9 / peak[t];
      out.push_back(row);
    }
    if (!export_dir.empty()) export_kernel_case(net, c, b, export_dir);
  }
  std::cout << "\nGFLOP/s counts the FLOPs the local-support kernels execute; % oneDNN is against oneDNN's SGEMM (the\n"
               "library the kernels call) at 1024^3 and the same threads: ";
  for (auto& [t, p] : peak)
    std::cout << t << " thread(s) " << printf_number("%.1f", p / 1e9) << " GFLOP/s (Eigen: " << printf_number("%.1f", eigen[t] / 1e9) << ")  ";
  gemm_shape_table(cases, batch, threads, peak, std::cout);
  std::cout << "\ndense-eq: the FLOPs efficient-kan's dense formulation would need, per second of this run.\n";
  print_phase_table(out, std::cout);
  // Trainer overhead: one rank, the same shapes, against bare kernels + Adam.
  std::cout << "\ntrainer overhead (1 rank, 1 thread): iteration of `kanscale train` vs bare forward+backward+Adam\n";
  std::cout << std::left << std::setw(22) << "shape" << std::setw(4) << "G" << std::setw(12) << "bare" << std::setw(12)
            << "trainer" << "overhead\n";
  for (const auto& c : cases) trainer_overhead_row(c, batch, reps, std::cout);
  if (!json.empty()) write_files_atomic({{json, out.dump(2) + "\n"}});
  return 0;
}

}  // namespace ks::cli
