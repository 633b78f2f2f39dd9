#pragma once
// kanscale fit as a function: typed measurements in, a fitted calibration
// (with the quality of every term) and a readable report out. The command
// (cli/fit_cmd.cpp) and validate's rounds both call it.
#include <map>
#include <string>
#include <vector>

#include "fitted_calibration.hpp"
#include "records.hpp"

namespace ks {

struct FitInputs {
  std::vector<KernelsFile> kernels;            // measure kernels
  std::vector<CollectiveSweepFile> collectives;  // measure allreduce / broadcast, MPI or NCCL, any rank counts
  std::vector<InterferenceFile> interference;    // bench interference (the median is used)
  std::vector<NcclTestsLog> nccl_tests;          // nccl-tests logs (nccl family)
  std::vector<KernelsFile> runtime_memory;       // kernels files at other ranks per node: only their runtime memory
  std::vector<ProgressFile> progress;            // bench progress (one transport's)
  std::vector<TorchOpsFile> torch_ops;           // measure torch-ops (PyTorch's op classes)
  // fit --cluster: the cluster the NCCL sweeps ran on, whose NCCL model
  // predicts their held-out sizes' times (without it, only the held-out
  // large sizes' bus bandwidth is checked)
  const Cluster* cluster = nullptr;
};

struct CalibrationFit {
  CalibrationFile file;
  std::string report;  // a table per group of terms: coefficients, standard errors, R^2, held-out errors
};

// Throws InputError for measurements that cannot be fitted (one rank,
// wrong results, non-positive times), naming the file and point.
CalibrationFit fit_calibration(const FitInputs& in, const std::string& name);

// The progress model (MpiProgress) that best predicts the waits of `kanscale
// bench progress` points: a grid over min_steps 1..64 and a chunk of none or
// 1 KiB..1 GiB in quarter octaves (at most 4096 steps for the largest
// point), least squares on (predicted - measured
// wait) / the all-reduce's alone time. rms is that residual's RMS; rms_none
// the same for one step (a collective that progresses on its own).
// With points that timed their work alone (compute_alone_s), the
// interference too (the compute's slowdown while a step runs): a grid of 0
// to 10 in steps of 0.05 on (predicted - measured compute) / alone time,
// then the steps again on waits and computes together, then the
// interference again.
struct ProgressFit {
  MpiProgress progress;
  double rms = 0, rms_none = 0;
  double rms_compute = 0;  // the compute's residual (with the interference fitted)
  int points = 0;
};
ProgressFit fit_mpi_progress(const std::vector<ProgressPoint>& points);

// Per kernel class (an op, "op@cold" for its cold rows) of the files' rows
// pooled: the mean relative error of its fit (the calibration's features)
// on each shape's rows when that shape is left out, in turn. Classes timed
// at fewer than 3 shapes, or with fewer points than terms once a shape is
// out, are absent. measure kernels --skip-from reads it.
std::map<std::string, double> kernel_class_shape_errors(const std::vector<KernelsFile>& files);

}  // namespace ks
