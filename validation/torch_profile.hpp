#pragma once
// A user's own PyTorch DDP job, checked without running it again: its
// torch.profiler (Kineto) Chrome trace (CPU activity, rank 0) read as the
// ops torch ran (formats/torch_trace), mapped onto the model's op list of
// the same workload (model/kan_model's efficient_kan_iteration, the list
// the replay issues), and set per op class and per iteration against what
// the model predicts for them (kanscale import torch-profile).
//
// Mapping: within an iteration, the k-th event of a class (in time order)
// is the k-th op of that class in the model's list (the list matches
// torch.profiler's count per class exactly: tests/unit_torch_trace.cpp).
// Each op belongs to a measured unit of the calibration (Op::torch_unit:
// "forward:bases@0", ...); a unit's measured time is the summed duration of
// its ops' events, its predicted time the replay's cost of its ops (the
// calibration's calls x fixed + elements x per_element, with its live
// compute factor). Classes the model does not list are reported, never an
// error; a class the model lists with a count that is not the same whole
// number of iterations as every other's is a trace of another model (or
// other DDP settings): an InputError that says which class.
// The collectives (gloo's or nccl's threads) are set against the replay's
// all-reduce and broadcast per call. Iterations: the trace's ProfilerStep#N
// ranges when it has them (torch.profiler's schedule), else as many as the
// trace holds whole (the k-th op of a class in iteration i is its event
// number i x the model's count + k).
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/config.hpp"

namespace ks {

struct ProfileUnit {
  std::string unit;         // the calibration's op class the ops belong to (or their torch class when none)
  int iteration = 0;
  int events = 0;           // trace events mapped to its ops
  double measured_s = 0;    // their summed durations
  double predicted_s = 0;   // the replay's cost of the unit's ops
  double calls = 0, elements = 0;  // the unit's size in the model (Op::unit_calls, unit_elements summed over its ops)
  // events inside its events (each adds the profiler's own cost to their
  // durations), but for those inside another classed event within them
  // (DDP's hooks inside AccumulateGrad): those classed events themselves are
  // counted here too, and their durations summed in inner_s
  int nested_events = 0;
  double inner_s = 0;
  int inner_events = 0;
  // the gaps before its events since their previous sibling (same thread,
  // same parent) ended: Python's code, or autograd's engine, between calls,
  // what a call costs its caller beyond the op; and how many
  double lead_s = 0;
  int leads = 0;
  // A GPU job: the device work its events launched (kernels, copies, sets,
  // matched by correlation id; NCCL's are the collectives'), what the
  // replay's device track gives its ops (the cost's roofline), and the
  // host's waits for the device inside its events (synchronising runtime
  // calls: cudaStreamSynchronize, ...), which are no host work
  double device_s = 0, device_predicted_s = 0, sync_s = 0;
  int syncs = 0;  // those waits' events
};

struct ProfileComm {
  std::string cls;  // "comm:all_reduce", "comm:broadcast"
  int events = 0;
  double measured_s = 0;   // summed over the trace
  double predicted_each_s = 0;  // the replay's time per call (steady buckets' mean for all-reduces)
};

struct ProfileComparison {
  int iterations = 0;
  TorchOpSet torch_ops = TorchOpSet::torch1;  // the op list compared: the workload's torch, else read off the trace
  std::vector<ProfileUnit> units;          // per iteration, in the model's order
  std::map<std::string, int> unknown;      // trace classes the model does not list: events in all
  std::vector<ProfileComm> comm;
  // the host's dispatch per op: the durations of the events of ops that
  // launch no work (views, autograd's bookkeeping), whose whole cost is the
  // dispatch; their median and count
  double dispatch_median_s = 0;
  int dispatch_events = 0;
  double measured_total_s = 0, predicted_total_s = 0;  // over the mapped units, all iterations
  // The profiler's own cost per event, read off the trace, in two parts:
  // outside an event's stamps, the median gap between consecutive events
  // inside one of the model's ops (C++ calling C++: nothing but the
  // profiler's record of one event's end and the next one's start lies
  // between); inside them, the median duration of aten::as_strided events
  // with nothing inside (a view: it does no work the profiler would not
  // add). How many of each were seen.
  double profiler_gap_s = 0, profiler_inside_s = 0;
  int profiler_gaps = 0, profiler_views = 0;
  // host events per iteration on the threads that run the model's ops, one
  // after another (a GPU job's backward on autograd's device thread; gloo's
  // threads run beside them; steps holding several iterations: their mean,
  // rounded)
  std::vector<int> step_events;
  std::vector<double> step_span_s;  // per iteration: from the step's first event's start to its last one's end
  // the model's steady buckets (bytes, in all-reduce order) and buffers
  // broadcast each forward (0: none); per iteration, the trace's all-reduce
  // and broadcast events' durations in time order
  std::vector<double> bucket_bytes;
  double broadcast_bytes = 0;
  std::vector<std::vector<double>> allreduce_s, broadcast_s;
  // A GPU job's trace (CUDA activity): the collectives' times above are
  // their NCCL kernels' (their host events only launch them); per
  // iteration, the host's waits for the device outside every unit (the
  // units' own are theirs: ProfileUnit::sync_s), and the device work
  // launched outside every unit (the batch's copy to the GPU, ...)
  bool cuda = false;
  std::vector<double> step_sync_s, step_device_other_s;
  std::vector<double> step_syncs;  // the waits' events outside every unit, per iteration
};

// The trace's steps: events between each ProfilerStep#N range's ends, or
// all of them in one; the ProfilerStep events themselves left out.
std::vector<nlohmann::json> split_profiler_steps(const nlohmann::json& trace, const std::string& what);

// Compares a trace (as read from the file) with the model of workload `w`
// on cluster `c` at `ranks` ranks, costed by `cal`.
ProfileComparison compare_torch_profile(const nlohmann::json& trace, const std::string& what, const Cluster& c, const Workload& w,
                                        const Calibration& cal, int ranks);

// The comparison as a report (a table per iteration, the lists, the comm
// and dispatch lines) and as JSON.
std::string profile_report(const ProfileComparison& p);
nlohmann::json profile_json(const ProfileComparison& p);

}  // namespace ks
