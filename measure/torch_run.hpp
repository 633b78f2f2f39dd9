#pragma once
// Real PyTorch DDP jobs, launched by kanscale: the interpreter (found and
// probed before anything starts), a free rendezvous port, and one process
// per rank running measure/python/kanscale_torch/ddp_train.py with torch's
// env rendezvous (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE; torchrun is
// not used: Debian's 1.13 fails under Python 3.11).
#include <cstdint>
#include <string>
#include <vector>

#include "collective_sweep.hpp"
#include "model/config.hpp"

namespace ks {

// The interpreter: `option` (--python) when given, else $KANSCALE_PYTHON,
// else /usr/bin/python3 (the `python3` first on PATH may be another one,
// without torch). InputError when it is missing, a directory or not
// executable, naming the package to install.
std::string resolve_python(const std::string& option);

// What the interpreter offers (python -m kanscale_torch.probe).
struct TorchEnv {
  std::string python;         // the interpreter's path
  std::string python_version, torch, numpy;
  std::string blas;           // the BLAS library torch's process maps after a matmul
  bool gloo = false, cuda = false;
  std::string fingerprint() const;  // "torch 1.13.0a0, numpy ..., BLAS libopenblasp-r0.3.21.so, Python 3.11.2"
};
// Runs the probe; InputError (one line naming the package) when torch or
// numpy is missing or the interpreter cannot run it.
TorchEnv probe_torch(const std::string& python);

// The first port in "FIRST-LAST" that 127.0.0.1 can bind now; InputError
// when the range is malformed or every port in it is taken.
int free_port(const std::string& range, const std::string& option = "--port-range");

struct TorchTrainOptions {
  Workload workload;
  int ranks = 1;
  long long steps = 30;  // at most, with target_rel_halfwidth
  // stop once every rank's median step is known to this fraction (the 95%
  // interval of order statistics; 0: all `steps`)
  double target_rel_halfwidth = 0;
  int warmup = 2;  // DDP's first step (one bucket) and the second (rebuilt buckets)
  int threads = 1;
  std::uint64_t seed = 0;
  std::string dist_backend = "auto";  // auto | gloo | nccl
  std::string json, profile;          // rank 0's outputs ("": none)
  std::string python;                 // resolved interpreter
  std::string port_range = "29500-29999";
  std::string command_line;
};

// The entry point's arguments for these options (without interpreter and -m).
std::vector<std::string> torch_train_args(const TorchTrainOptions& o);
// Checks the environment (probe, nccl needs CUDA), picks a port, starts the
// ranks (their output on this process's stdout and stderr) and waits; when
// one fails the others are stopped. Returns 0, or 2 / 1 after naming the
// first failing rank on stderr.
int run_torch_train(const TorchTrainOptions& o, const TorchEnv& env, std::string* summary_json = nullptr);
// Several runs in turn on one set of ranks (one interpreter a rank, one
// process group: its start-up paid once), each writing its own o.json; they
// share ranks, threads and backend (InputError otherwise).
int run_torch_train_batch(const std::vector<TorchTrainOptions>& runs, const TorchEnv& env);

// What kanscale measure torch-ops times (configs/measure/pytorch-cpu.yaml):
// every (widths, grid size, batch) of the lists, at one spline order.
struct TorchOpsPlan {
  std::string file, name;
  std::vector<std::vector<std::int64_t>> widths;
  std::vector<int> grid_sizes;
  int spline_order = 3;
  std::vector<std::int64_t> batches;
  int reps = 20, warmup = 3, threads = 1;
  double target_rel_halfwidth = 0;  // > 0: repetitions stop once the median is known to it (reps: at most)
};
TorchOpsPlan load_torch_ops_plan(const std::string& path);
// Times efficient-kan's op classes (python -m kanscale_torch.op_bench, one
// process, a gloo group of one for DDP's reducer) into `json`.
int run_torch_ops(const TorchOpsPlan& plan, const std::string& json, const std::string& python, const std::string& port_range,
                  const std::string& command_line);
// An all-reduce or broadcast sweep through torch.distributed on `ranks`
// processes (python -m kanscale_torch.collective_sweep) into o.json, over
// `dist_backend`: gloo, or nccl (one GPU a rank; its torch must see CUDA).
int run_torch_sweep(const SweepOptions& o, int ranks, const std::string& python, const std::string& port_range,
                    const std::string& command_line, const std::string& dist_backend = "gloo");
// How much compute slows while gloo's threads run an all-reduce (python -m
// kanscale_torch.interference on `ranks` processes): the JSON of kanscale
// bench interference, into `json`.
struct TorchInterferenceOptions {
  std::vector<std::int64_t> widths;
  int grid_size = 5, spline_order = 3, repeat = 20, threads = 1, ranks = 2;
  std::int64_t batch = 1;
  double bytes = 0;
  std::string json;
};
int run_torch_interference(const TorchInterferenceOptions& o, const std::string& python, const std::string& port_range,
                           const std::string& command_line);

}  // namespace ks
