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

namespace ks {

struct TorchTraceEvent {
  std::string name;  // as torch names it: "aten::sub", "autograd::engine::evaluate_function: MulBackward0", ...
  long long tid = 0;
  double ts_us = 0, dur_us = 0;
  int depth = 0;      // 0: not inside another op of its thread
  int parent = -1;    // index of the enclosing event (-1: none)
  std::string cls;    // the op class ("" : inside a listed op, or the profiler's own)
};

// The complete events ("ph": "X") of a trace (a bare list, or an object with
// traceEvents), in time order per thread, nested by time (Kineto stamps whole
// microseconds: a child may end up to 1 us past its parent), each classified.
// InputError (naming `what`) when it is not such a trace.
std::vector<TorchTraceEvent> read_torch_trace(const nlohmann::json& trace, const std::string& what);

// The class of events[i] (its parents already set): "zero_grad:zero_",
// "ddp:broadcast_", "forward:sub", "loss:mse_loss", "backward:MulBackward0",
// "reducer:bucket_copy", "reducer:allreduce", "comm:all_reduce",
// "reducer:copy_bucket_to_grad", "optimizer:addcdiv_", ...; "" for an op
// inside a listed one, and for what the profiler adds itself (each
// record_function's aten::zeros / aten::empty).
std::string torch_op_class(const std::vector<TorchTraceEvent>& events, std::size_t i);

// How many events of each class.
std::map<std::string, int> torch_class_counts(const std::vector<TorchTraceEvent>& events);

}  // namespace ks
