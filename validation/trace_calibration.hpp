#pragma once
// kanscale calibrate --from-trace: a calibration of PyTorch's op classes
// fitted to torch.profiler traces of the user's own job (each trace with the
// workload that describes it), not to microbenchmarks. Each trace's
// ProfilerStep#N steps are mapped onto the model's op list
// (validation/torch_profile); a unit's record is its events' summed time,
// the median over the trace's steps, against the unit's calls and elements
// in the model. Units measured at 3 or more shapes (widths, grid, order,
// batch) are fitted as calls x fixed + elements x per_element (the fit of
// `measure torch-ops`: model/calibration_fit); with fewer, per_element is
// the shipped PyTorch calibration's and fixed is fitted, and the file says
// so. At 2 ranks or more the trace's all-reduces (per steady bucket) and
// buffer broadcasts fit gloo's terms, as swept ones would. The profiler's own cost per event, read off each trace, is taken off
// (trace_records). The time of a step outside every unit (Python's glue between ops) is
// the calibration's host_overhead, from 1-rank traces.
#include <map>
#include <string>
#include <vector>

#include "model/fitted_calibration.hpp"
#include "model/records.hpp"

namespace ks {

struct TraceJob {
  std::string trace, workload;  // files
};

// One trace as measure torch-ops' records (its path, "unrecorded" torch,
// BLAS and Python), and its steps' glue (s per step, one value per step).
// InputError naming the trace: no ProfilerStep#N; CUDA activity (a GPU
// job: not fitted yet); a trace of another model or a step cut short
// (compare_torch_profile).
// The profiler's own cost is taken off, as read off the trace
// (ProfileComparison::profiler_gap_s and profiler_inside_s, c in all): c per
// event nested in a unit's events and the inside part per event of its own
// from the unit's time, c per event of the step (less one outside part:
// the first event's lies before the step's first stamp) from the step.
struct TraceRecords {
  TorchOpsFile ops;
  // per step: the time from its first event's start to its last one's end
  // outside every unit (what lies before and after is prof.step()'s own work
  // in part, and not the job's)
  std::vector<double> glue_s;
  std::vector<double> steps_s;     // ProfilerStep#N's duration
  std::vector<double> spans_s;     // from its first event's start to its last one's end
  std::vector<double> profiler_s;  // the profiler's cost taken off each step
  double profiler_gap_s = 0, profiler_inside_s = 0;  // c's parts (ProfileComparison)
  int profiler_gaps = 0, profiler_views = 0;
  // at 2 ranks or more: the trace's all-reduces per steady bucket and its
  // buffers' broadcasts, as gloo sweeps (their least times over the steps)
  std::vector<CollectiveSweepFile> sweeps;
  double collective_spread = 0;  // the largest max/min of a collective's time over the steps
  std::map<std::string, int> unit_events;  // per unit: its events in one step (the first)
  // A GPU job's trace (CUDA activity): the records carry the device's time
  // per unit, the host's carry the launches; its collectives are its NCCL
  // kernels' (an NCCL all-reduce sweep); per step, the device work launched
  // outside every unit (the model has none: reported)
  bool cuda = false;
  std::vector<double> device_other_s;
};
TraceRecords trace_records(const std::string& trace_file, const Workload& w, const Cluster& c, int ranks);

struct TraceCalibration {
  CalibrationFile file;
  std::string report;
};
// Every job's records fitted together (ranks: the jobs' rank count), with
// `sweeps` (measure allreduce|broadcast --backend gloo files) fitting the
// collectives beside the traces' own: a 1-rank trace holds none.
TraceCalibration calibrate_from_traces(const std::vector<TraceJob>& jobs, const Cluster& c, int ranks, const std::string& name,
                                       const std::vector<std::string>& sweeps = {});

}  // namespace ks
