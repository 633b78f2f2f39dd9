#pragma once
// torch.profiler's Chrome traces (prof.export_chrome_trace, torch 1.13 and
// later), read as the ops PyTorch ran, each with the class kanscale's model
// of efficient-kan lists it under (model/kan_model.hpp, Op::torch_class).
// This is the one place that maps Kineto's event names to op classes: the
// parity test and any import of a user's trace go through it.
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/kan_model.hpp"

namespace ks {

struct TorchTraceEvent {
  std::string name;  // as torch names it: "aten::sub", "autograd::engine::evaluate_function: MulBackward0", ...
  std::string cat;   // Kineto's category: cpu_op, cuda_runtime, user_annotation, ... ("" : none given)
  long long tid = 0;
  long long correlation = -1;  // args.correlation (a CUDA runtime call's: the device work it launched carries it)
  double ts_us = 0, dur_us = 0;
  int depth = 0;      // 0: not inside another op of its thread
  int parent = -1;    // index of the enclosing event (-1: none)
  std::string cls;    // the op class ("" : inside a listed op, or the profiler's own)
};

// The host's complete events ("ph": "X") of a trace (a bare list, or an
// object with traceEvents), in time order per thread, nested by time (Kineto
// stamps whole microseconds: a child may end up to 1 us past its parent),
// each classified. The device's work (torch_device_events) and the
// profiler's step marks (torch_profiler_steps) are not among them: a step's
// ops nest as if it were not there. InputError (naming `what`) when it is
// not such a trace.
std::vector<TorchTraceEvent> read_torch_trace(const nlohmann::json& trace, const std::string& what);

// What ran on a GPU (Kineto's CUDA activity): kernels, copies, sets and the
// device's side of a synchronisation, in time order.
struct TorchDeviceEvent {
  std::string name;
  std::string cat;              // kernel, gpu_memcpy, gpu_memset, cuda_sync
  long long device = 0;         // args.device, else pid (Kineto's process per device)
  long long stream = 0;         // args.stream, else tid
  double ts_us = 0, dur_us = 0;
  long long correlation = -1;   // args.correlation: the host call that launched it has the same
  int launch = -1;              // that call's index in read_torch_trace's events (-1: not in the trace)
  bool nccl = false;            // an NCCL kernel (ncclKernel_..., ncclDevKernel_...)
};
// The device events of a trace, each matched by correlation id to the host
// call (a CUDA runtime or driver event of `host`) that launched it. Empty for
// a CPU-only trace.
std::vector<TorchDeviceEvent> torch_device_events(const nlohmann::json& trace, const std::vector<TorchTraceEvent>& host, const std::string& what);

// Kineto's categories of what ran on a GPU: kernel, gpu_memcpy, gpu_memset,
// cuda_sync, and gpu_user_annotation (a CUDA trace's record_function and
// ProfilerStep#N marks again, on the device's stream).
bool torch_device_category(const std::string& cat);

// The profiler's steps (ProfilerStep#N, as torch.profiler's schedule marks
// them; the host's marks, not the device's copies), in time order.
struct TorchProfilerStep {
  long long number = 0;
  double ts_us = 0, dur_us = 0;
};
std::vector<TorchProfilerStep> torch_profiler_steps(const nlohmann::json& trace, const std::string& what);

// The class of events[i] (its parents already set): "zero_grad:zero_",
// "ddp:broadcast_", "forward:sub", "loss:mse_loss", "backward:MulBackward0",
// "reducer:bucket_copy", "reducer:allreduce", "comm:all_reduce",
// "reducer:copy_bucket_to_grad", "optimizer:addcdiv_", ...; "" for an op
// inside a listed one, and for what the profiler adds itself (each
// record_function's aten::zeros / aten::empty).
std::string torch_op_class(const std::vector<TorchTraceEvent>& events, std::size_t i);

// How many events of each class.
std::map<std::string, int> torch_class_counts(const std::vector<TorchTraceEvent>& events);

// The torch whose ops these are (model/kan_model's TorchOpSet): torch 2's
// when they hold what only it dispatches (Adam's lerp_, DDP's
// reducer::mul_out), its foreach Adam's with a _foreach_ op in the
// optimizer too, else torch 1.13's.
TorchOpSet torch_op_set_in(const std::vector<TorchTraceEvent>& events);

}  // namespace ks
