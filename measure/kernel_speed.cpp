#include "kernel_speed.hpp"

#include <algorithm>
#include <iomanip>
#include <random>
#include <sstream>

#include "adam.hpp"
#include "comm.hpp"
#include "kan_cpu.hpp"
#include "kan_ref.hpp"
#include "safetensors.hpp"
#include "trainer.hpp"
#include "workbench.hpp"
#include "base/output_files.hpp"
#include "model/statistics.hpp"
#include "model/units.hpp"

namespace ks {

namespace {
std::string fmt(double v, int p) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(p) << v;
  return os.str();
}


// Adam (PyTorch's defaults) over a net's parameters, reading a CPU net's gradients.
struct NetAdam {
  Adam adam;
  std::vector<float*> params;
  std::vector<const float*> grads;
  NetAdam(KanNet& net, KanCpuNet& cpu) {
    std::vector<std::size_t> sizes;
    for (auto& p : kan_parameter_refs(net)) {
      sizes.push_back(p.size());
      params.push_back(p.data);
    }
    for (auto& g : cpu.grads()) grads.push_back(g.data());
    adam.init(sizes);
  }
  void step() { adam.update(params, grads); }
};

}  // namespace

std::string shape_text(const std::vector<std::int64_t>& widths) {
  std::string shape = "[";
  for (std::size_t i = 0; i < widths.size(); ++i) shape += (i ? "," : "") + std::to_string(widths[i]);
  return shape + "]";
}

KernelBatch random_batch(const KernelCase& c, int batch, unsigned seed) {
  KernelBatch b;
  b.rows = batch;
  b.X.resize(static_cast<std::size_t>(batch) * c.widths.front());
  b.T.resize(static_cast<std::size_t>(batch) * c.widths.back());
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (auto& v : b.X) v = u(gen);
  for (auto& v : b.T) v = u(gen);
  return b;
}

// One row of the table: forward + backward of the case on `threads` threads,
// the FLOPs executed and those of efficient-kan's dense formulation.
nlohmann::json time_kernel_case(KanNet& net, const KernelCase& c, const KernelBatch& b, int threads, int reps, double peak, std::ostream& out) {
  double flops = 0, dense = 0;
  for (std::size_t l = 0; l < net.layers.size(); ++l) {
    flops += layer_forward_count(net.layers[l], b.rows).flops + layer_backward_count(net.layers[l], b.rows, l > 0).flops;
    // what efficient-kan's dense formulation executes: 6*B*in*out*(C+1) (2x less for layer 0's input grad)
    const double gemm = 2.0 * b.rows * net.layers[l].in * net.layers[l].out * (net.layers[l].C() + 1);
    dense += gemm * (l > 0 ? 3 : 2);
  }
  set_cpu_threads(threads);
  KanCpuNet cpu(net);
  const Stat s = time_calls(Repeats{3, reps}, [&] {
    cpu.forward(b.X.data(), b.T.data(), b.rows);
    cpu.backward([](int) {}, nullptr);
  });
  // The breakdown, on runs of their own (reading the clock ~30 times an
  // iteration must not touch the headline figure): each phase's median over
  // the repetitions, and Adam's step over the same gradients.
  std::vector<std::vector<double>> per_phase(KernelPhases::count);
  KernelPhases ph;
  bool sampling = false;  // the warm-up's phases are dropped
  const auto take_sample = [&] {
    if (sampling)
      for (int p = 0; p < KernelPhases::count; ++p) per_phase[p].push_back(ph.seconds[p]);
    ph = KernelPhases{};
    sampling = true;
  };
  cpu.time_phases(&ph);
  time_calls(
      Repeats{2, reps},
      [&] {
        cpu.forward(b.X.data(), b.T.data(), b.rows);
        cpu.backward([](int) {}, nullptr);
      },
      TimerHooks{{}, {}, take_sample});
  take_sample();  // the last sample's
  cpu.time_phases(nullptr);
  nlohmann::json phases = nlohmann::json::object();
  for (int p = 0; p < KernelPhases::count; ++p) phases[KernelPhases::name(p)] = median(per_phase[p]);
  {
    NetAdam adam(net, cpu);
    // Adam moves the weights: put them back once it is timed
    const auto prefs = kan_parameter_refs(net);
    std::vector<std::vector<float>> saved;
    for (auto& p : prefs) saved.emplace_back(p.data, p.data + p.size());
    phases["adam"] = time_calls(Repeats{2, reps}, [&] { adam.step(); }).median;
    for (std::size_t i = 0; i < prefs.size(); ++i) std::copy(saved[i].begin(), saved[i].end(), prefs[i].data);
  }
  const double gf = flops / s.median / 1e9;
  out << std::setw(22) << shape_text(c.widths) << std::setw(4) << c.G << std::setw(9) << threads << std::setw(12)
            << format_time(s.median) << std::setw(14) << fmt(b.rows / s.median, 0) << std::setw(10) << fmt(gf, 1) << std::setw(10)
            << fmt(100 * flops / s.median / peak, 1) << std::setw(12) << fmt(dense / s.median / 1e9, 1) << fmt(s.p95 / s.median, 2)
            << "\n";
  return {{"widths", c.widths},       {"grid_size", c.G},          {"threads", threads},
          {"batch", b.rows},          {"time_s", s.median},        {"samples_per_s", b.rows / s.median},
          {"executed_flops", flops},  {"gflops", gf},              {"gemm_peak_gflops", peak / 1e9},
          {"dense_equivalent_gflops", dense / s.median / 1e9}, {"phases_s", phases}};
}

void print_phase_table(const nlohmann::json& rows, std::ostream& out) {
  out << "\nper phase (ms per iteration, median over the repetitions; share of forward+backward+loss):\n";
  out << std::left << std::setw(22) << "shape" << std::setw(4) << "G" << std::setw(4) << "thr";
  for (int p = 0; p < KernelPhases::count; ++p) out << std::setw(14) << KernelPhases::name(p);
  out << "adam\n";
  for (const auto& r : rows) {
    const auto& ph = r.at("phases_s");
    double sum = 0;
    for (int p = 0; p < KernelPhases::count; ++p) sum += ph.at(KernelPhases::name(p)).get<double>();
    out << std::setw(22) << shape_text(r.at("widths").get<std::vector<std::int64_t>>()) << std::setw(4) << r.at("grid_size").get<int>()
        << std::setw(4) << r.at("threads").get<int>();
    for (int p = 0; p < KernelPhases::count; ++p) {
      const double v = ph.at(KernelPhases::name(p)).get<double>();
      out << std::setw(14) << (fmt(v * 1e3, 3) + " " + fmt(sum > 0 ? 100 * v / sum : 0, 0) + "%");
    }
    out << fmt(ph.at("adam").get<double>() * 1e3, 3) << "\n";
  }
}

// --export: the case's weights, inputs and the fp64 reference's loss and
// gradients (as fp32), for bench/pytorch_efficient_kan.py.
void export_kernel_case(KanNet& net, const KernelCase& c, const KernelBatch& b, const std::string& export_dir) {
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
void trainer_overhead_row(const KernelCase& c, int batch, int reps, std::ostream& out) {
  set_cpu_threads(1);
  KanNet net = init_kan(c.widths, c.G, 3, 1);
  const KernelBatch b = random_batch(c, batch, 11);
  KanCpuNet cpu(net);
  NetAdam adam(net, cpu);
  const Stat bare = time_calls(Repeats{3, reps}, [&] {
    cpu.forward(b.X.data(), b.T.data(), batch);
    cpu.backward([](int) {}, nullptr);
    adam.step();
  });
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
  out << std::setw(22) << shape_text(c.widths) << std::setw(4) << c.G << std::setw(12) << format_time(bare.median) << std::setw(12)
            << format_time(it) << fmt(100 * (it / bare.median - 1), 1) << "%\n";
}

}  // namespace ks
