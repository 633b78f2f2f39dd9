#pragma once
// kanscale bench kernels' body: the CPU KAN kernels' speed on a case (the
// FLOPs executed, against this machine's FP32 GEMM rate), the case exported
// for bench/pytorch_efficient_kan.py, and the trainer's overhead over bare
// kernels. Timed through the workbench (measure/workbench.hpp).
#include <cstdint>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "kan.hpp"

namespace ks {

struct KernelCase {
  std::vector<std::int64_t> widths;
  int G;
};

// A batch of uniform inputs and targets in [-1, 1] (`seed`: the same data every run).
struct KernelBatch {
  int rows = 0;
  std::vector<float> X, T;
};
KernelBatch random_batch(const KernelCase& c, int batch, unsigned seed);

// One row of the table: forward + backward of the case on `threads` threads,
// the FLOPs executed and those of efficient-kan's dense formulation; the
// row is printed to `out` and returned.
// "[64,64,1]": a case's widths as the tables print them.
std::string shape_text(const std::vector<std::int64_t>& widths);
nlohmann::json time_kernel_case(KanNet& net, const KernelCase& c, const KernelBatch& b, int threads, int reps, double peak, std::ostream& out);
// Where each row's time goes (rows as time_kernel_case returns them): the
// median milliseconds of each phase per iteration (forward + backward +
// loss; Adam's step beside them), and each phase's share of their sum.
void print_phase_table(const nlohmann::json& rows, std::ostream& out);
// --export: the case's weights, inputs and the fp64 reference's loss and
// gradients (as fp32), for bench/pytorch_efficient_kan.py.
void export_kernel_case(KanNet& net, const KernelCase& c, const KernelBatch& b, const std::string& export_dir);
// One row of the trainer's overhead: kanscale train's iteration against bare
// forward + backward + Adam, one rank, one thread, the same kind of data.
void trainer_overhead_row(const KernelCase& c, int batch, int reps, std::ostream& out);

}  // namespace ks
