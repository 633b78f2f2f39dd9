#include "trace_calibration.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "common/error.hpp"
#include "formats/config_files.hpp"
#include "formats/measurement_records.hpp"
#include "formats/torch_trace.hpp"
#include "model/calibration_fit.hpp"
#include "model/machine.hpp"
#include "model/statistics.hpp"
#include "torch_profile.hpp"

namespace ks {

namespace {

// The trace's collectives as gloo sweeps (model/calibration_fit fits them as
// `measure allreduce|broadcast --backend gloo` files): the k-th all-reduce of
// a step is the k-th steady bucket's, its time the least over the steps (a
// collective's event also holds the wait for the slowest rank, which only
// adds); the buffers' broadcast likewise. Steps whose count differs from the
// model's buckets are left out. `spread`: the largest max/min over a
// bucket's steps (how much of the events is waiting).
std::vector<CollectiveSweepFile> trace_sweeps(const ProfileComparison& p, const std::string& trace_file, int ranks, double& spread) {
  std::vector<CollectiveSweepFile> out;
  auto sweep = [&](SweptCollective what, const std::vector<double>& bytes, const std::vector<std::vector<double>>& per_step) {
    std::vector<std::vector<double>> times(bytes.size());
    for (const auto& step : per_step)
      if (step.size() == bytes.size())
        for (std::size_t b = 0; b < bytes.size(); ++b) times[b].push_back(step[b]);
    CollectiveSweepFile f;
    f.path = trace_file;
    f.has_metadata = f.has_points = true;
    f.op = what == SweptCollective::allreduce ? "allreduce" : "broadcast";
    f.backend = p.cuda ? "nccl" : "gloo";
    f.library = "the traced job's";
    f.date_utc = "unrecorded";
    f.collective = what;
    f.ranks = ranks;
    for (std::size_t b = 0; b < bytes.size(); ++b) {
      if (times[b].empty() || !(bytes[b] > 0)) continue;
      CollectivePoint pt;
      pt.size_bytes = bytes[b];
      const auto [lo, hi] = std::minmax_element(times[b].begin(), times[b].end());
      if (*lo > 0) spread = std::max(spread, *hi / *lo);
      pt.in_place = CollectiveTiming{*lo * 1e6, std::nullopt, std::nullopt, std::nullopt, 0};
      if (p.cuda && *lo > 0) {
        // nccl-tests' bandwidths: algbw = bytes / time, busbw = algbw x 2(n-1)/n for an all-reduce
        const double alg = bytes[b] / *lo * 1e-9;
        pt.in_place->algbw_GBps = alg;
        pt.in_place->busbw_GBps = alg * 2.0 * (ranks - 1) / ranks;
      }
      f.points.push_back(pt);
    }
    if (!f.points.empty()) out.push_back(std::move(f));
  };
  sweep(SweptCollective::allreduce, p.bucket_bytes, p.allreduce_s);
  // (NCCL's broadcast is derived from its ring: only its all-reduce is fitted)
  if (p.broadcast_bytes > 0 && !p.cuda) sweep(SweptCollective::broadcast, {p.broadcast_bytes}, p.broadcast_s);
  return out;
}

}  // namespace

TraceRecords trace_records(const std::string& trace_file, const Workload& w, const Cluster& c, int ranks) {
  if (w.implementation != Implementation::pytorch)
    throw InputError((w.file.empty() ? w.name : w.file) + ": key 'implementation': --from-trace reads a PyTorch job's trace; expected pytorch");
  const nlohmann::json trace = read_json_file(trace_file, "a torch.profiler trace");
  const std::vector<TorchProfilerStep> steps = torch_profiler_steps(trace, trace_file);
  if (steps.empty())
    throw InputError(trace_file + ": no ProfilerStep#N events: record the job with torch.profiler's schedule (profile(schedule=schedule(wait=1, "
                     "warmup=2, active=3)), prof.step() after each step), as kanscale train --profile does");
  const Calibration cal = with_default_host_terms(datasheet_calibration(c, w.precision), c, w);
  const ProfileComparison p = compare_torch_profile(trace, trace_file, c, w, cal, ranks);
  // a GPU job's trace is fitted on its GPU cluster's device track, a CPU job's on a CPU cluster
  if (p.cuda != host_track_applies(c, w))
    throw InputError(trace_file + (p.cuda ? ": CUDA activity (kernels launched by the job's ops), but cluster " + (c.file.empty() ? c.name : c.file) +
                                                " has no GPU: give the GPU cluster the job ran on (--cluster)"
                                          : ": no CUDA activity (a CPU job's trace), but cluster " + (c.file.empty() ? c.name : c.file) +
                                                " is a GPU cluster: give the CPU cluster it ran on (--cluster), or record the trace with "
                                                "ProfilerActivity.CUDA"));
  TraceRecords out;
  out.cuda = p.cuda;
  TorchOpsFile& f = out.ops;
  f.path = trace_file;
  f.blas = f.python = f.date_utc = "unrecorded";
  // (a trace names no version: the op set its ops are of, which the fit and simulate follow)
  f.torch = std::string(torch_op_set_name(p.torch_ops)).substr(6) + " (its ops read off the trace)";
  std::map<std::string, std::vector<double>> times, device;
  std::map<std::string, const ProfileUnit*> first;
  std::vector<std::string> order;
  std::vector<double> units_s(static_cast<std::size_t>(p.iterations), 0.0);
  std::vector<double> units_sync_s(units_s.size(), 0.0);  // a GPU job's: the host's waits for the device inside the units
  // the profiler's own cost taken off: c per event nested in a unit's events
  const double out_s = p.profiler_gap_s, in_s = p.profiler_inside_s, c_s = out_s + in_s;
  out.profiler_gap_s = out_s;
  out.profiler_inside_s = in_s;
  out.profiler_gaps = p.profiler_gaps;
  out.profiler_views = p.profiler_views;
  for (const ProfileUnit& u : p.units) {
    if (!first.count(u.unit)) first[u.unit] = &u, order.push_back(u.unit);
    // and the inside part for its own events; the caller's gaps before them
    // are its too (Python's code between calls), less the outside part each
    // (a classed event inside: its whole duration and the outside part before it)
    // (a GPU job's host waits for the device inside them are no host work:
    // their durations less the profiler's inside part, taken off below)
    const double wait = u.sync_s - in_s * u.syncs;
    const double t = std::max(0.0, u.measured_s - wait - u.inner_s - out_s * u.inner_events - c_s * (u.nested_events - u.inner_events) -
                                       in_s * u.events) +
                     std::max(0.0, u.lead_s - out_s * u.leads);
    times[u.unit].push_back(t);
    device[u.unit].push_back(u.device_s);
    units_s.at(static_cast<std::size_t>(u.iteration)) += t;
    units_sync_s.at(static_cast<std::size_t>(u.iteration)) += wait;
  }
  for (const std::string& unit : order) {
    const ProfileUnit& u = *first[unit];
    out.unit_events[unit] = u.events;
    if (u.calls <= 0) continue;
    TorchOpRecord r;
    r.cls = unit;
    r.calls = u.calls;
    r.elements = u.elements;
    r.batch = w.batch_per_gpu;
    r.widths = w.widths;
    r.grid_size = w.grid_size;
    r.spline_order = w.spline_order;
    r.time_median_s = median(times[unit]);
    r.reps = static_cast<int>(times[unit].size());
    if (p.cuda) {
      r.device_median_s = median(device[unit]);
      r.device_roofline_s = u.device_predicted_s;
    }
    f.records.push_back(r);
  }
  if (ranks > 1) out.sweeps = trace_sweeps(p, trace_file, ranks, out.collective_spread);
  // the steps' time outside every unit (split_profiler_steps and the steps here are in one order)
  // and c per event of the step
  for (std::size_t s = 0; s < steps.size() && s < units_s.size(); ++s) {
    // (each event but the first has its outside part within the span)
    const double events_s = p.step_events.at(s) > 0 ? c_s * p.step_events.at(s) - out_s : 0.0;
    out.steps_s.push_back(steps[s].dur_us * 1e-6);
    out.spans_s.push_back(p.step_span_s.at(s));
    out.profiler_s.push_back(events_s);
    // (less every wait for the device: no host work, in a unit or not)
    out.glue_s.push_back(std::max(0.0, p.step_span_s.at(s) - events_s - units_s[s] - (p.cuda ? p.step_sync_s.at(s) - in_s * p.step_syncs.at(s) + units_sync_s[s] : 0.0)));
    if (p.cuda) out.device_other_s.push_back(p.step_device_other_s.at(s));
  }
  return out;
}

namespace {

// A unit measured at fewer than 3 shapes: per_element from the shipped
// PyTorch calibration, fixed fitted (least squares, at least 0).
// A GPU job's (`gpu`): per_element 0 (its host does no per-element work).
FittedTorchOp prior_fit(const std::string& cls, const std::vector<TorchOpRecord>& recs, const Calibration& prior, const std::string& prior_what,
                        bool gpu) {
  FittedTorchOp o;
  o.cls = cls;
  const auto it = prior.torch_ops.find(cls);
  o.cost.element_s = it == prior.torch_ops.end() || gpu ? 0.0 : it->second.element_s;
  double num = 0, den = 0;
  std::set<std::string> shapes;
  for (const TorchOpRecord& r : recs) {
    num += r.calls * (r.time_median_s - o.cost.element_s * r.elements);
    den += r.calls * r.calls;
    shapes.insert(r.shape_key());
  }
  o.cost.fixed_s = den > 0 ? std::max(0.0, num / den) : 0.0;
  o.shapes = static_cast<int>(shapes.size());
  o.fit.features = {"fixed_s"};
  o.fit.coef = {o.cost.fixed_s};
  o.fit.std_err = {0.0};
  o.fit.active = {true};
  o.fit.n_fit = static_cast<int>(recs.size());
  o.note = gpu                           ? "per_element 0 on a GPU job's host: fewer than 3 shapes; fixed fitted"
           : it == prior.torch_ops.end() ? "per_element 0: fewer than 3 shapes, and " + prior_what + " has no such class"
                                       : "per_element from " + prior_what + ", not these traces (fewer than 3 shapes); fixed fitted";
  return o;
}

// Each traced step predicted by the classes fitted without its trace (and
// the others' host_overhead): log(measured / predicted), measured the step
// without the profiler's own cost. Only traces whose every class the others
// fit (3 shapes or more without it) count.
// A GPU job's step is the slower of its tracks: the host's (its classes'
// host costs and the glue) and the device's (their kernels; the work
// launched outside every class is not in the calibration, so not here).
std::vector<double> leave_one_trace_out(const std::vector<TorchOpsFile>& files, const std::vector<std::vector<double>>& glue,
                                        const std::vector<double>& net_s, const std::string& name) {
  std::vector<double> out;
  for (std::size_t i = 0; i < files.size(); ++i) {
    FitInputs in;
    std::vector<double> g;
    for (std::size_t k = 0; k < files.size(); ++k)
      if (k != i) {
        in.torch_ops.push_back(files[k]);
        g.insert(g.end(), glue[k].begin(), glue[k].end());
      }
    std::map<std::string, FittedTorchOp> cost;
    try {
      for (FittedTorchOp& o : fit_calibration(in, name).file.torch_ops) cost[o.cls] = std::move(o);
    } catch (const InputError&) {
      continue;  // too few shapes without it
    }
    double host = g.empty() ? 0.0 : median(g), device = 0;
    bool all = true;
    for (const TorchOpRecord& r : files[i].records) {
      const auto it = cost.find(r.cls);
      all = all && it != cost.end() && (!r.device_median_s || it->second.device);
      if (!all) break;
      host += std::max(0.0, it->second.cost.time_s(r.calls, r.elements));
      if (r.device_median_s) device += std::max(0.0, it->second.device->time_s(r.calls, r.elements));
    }
    const double predicted = std::max(host, device);
    if (all && predicted > 0 && net_s[i] > 0) out.push_back(std::log(net_s[i] / predicted));
  }
  return out;
}

// A GPU job's class measured at fewer than 3 shapes: the device's
// per_element from the cluster's datasheet (the roofline of the class's ops
// per element, at the traced shapes: their mean), fixed fitted (least
// squares, at least 0), as prior_fit does the host's.
void prior_device_fit(FittedTorchOp& o, const std::vector<TorchOpRecord>& recs, const std::string& cluster) {
  double per = 0, num = 0, den = 0, most = 0;
  int n = 0;
  for (const TorchOpRecord& r : recs)
    if (r.elements > 0) per += r.device_roofline_s / r.elements, ++n;
  o.device = TorchOpCost{};
  o.device->element_s = n > 0 ? per / n : 0.0;
  for (const TorchOpRecord& r : recs) {
    const double d = r.device_median_s.value_or(0.0);
    most = std::max(most, d);
    num += r.calls * (d - o.device->element_s * r.elements);
    den += r.calls * r.calls;
  }
  if (most <= 0) {
    o.device = TorchOpCost{};
    o.device_note = "no kernel in the traces";
    return;
  }
  o.device->fixed_s = den > 0 ? std::max(0.0, num / den) : 0.0;
  o.device_note = "per_element from " + cluster + "'s datasheet roofline, not these traces (fewer than 3 shapes); fixed fitted";
}

}  // namespace

TraceCalibration calibrate_from_traces(const std::vector<TraceJob>& jobs, const Cluster& c, int ranks, const std::string& name,
                                       const std::vector<std::string>& sweeps) {
  FitInputs in;
  for (const std::string& f : sweeps) in.collectives.push_back(read_collective_sweep_file(f));
  std::vector<double> nets;
  std::vector<std::vector<double>> glues;  // per trace, its steps' glue (1-rank traces only)
  int cuda = -1;  // the traces' kind: 1 a GPU job's, 0 a CPU job's
  std::map<std::string, std::string> sources;  // per unit: the traces' events it was fitted from
  std::string from;
  std::ostringstream traces;
  for (const TraceJob& j : jobs) {
    const Workload w = load_workload(j.workload);
    TraceRecords r = trace_records(j.trace, w, c, ranks);
    if (cuda >= 0 && cuda != (r.cuda ? 1 : 0))
      throw InputError(j.trace + ": " + (r.cuda ? "a GPU job's trace (CUDA activity) among CPU jobs' traces" : "a CPU job's trace among GPU jobs' traces") +
                       ": one calibration is of one kind of job");
    cuda = r.cuda ? 1 : 0;
    glues.push_back(ranks == 1 ? r.glue_s : std::vector<double>{});
    std::vector<double> net;
    for (std::size_t s = 0; s < r.spans_s.size(); ++s) net.push_back(r.spans_s[s] - r.profiler_s[s]);
    nets.push_back(median(net));
    if (r.collective_spread > 2)
      traces << "  " << j.trace << ": WARNING: a bucket's all-reduce varies " << r.collective_spread
             << "x over the steps: its events are mostly the wait for the other rank(s), and the least of them still holds some; "
             << (r.cuda ? "an NCCL sweep (measure allreduce --backend torch-nccl --json F, then --sweep F)"
                        : "a gloo sweep (calibrate configs/calibrate/pytorch-cpu.yaml)")
             << " measures the transfer alone\n";
    traces << "  " << j.trace << ": " << r.steps_s.size() << " step(s), median " << median(r.steps_s) * 1e3 << " ms, " << median(r.spans_s) * 1e3
           << " ms from the first op to the last, " << median(net) * 1e3 << " ms without the profiler's own " << median(r.profiler_s) * 1e3 << " ms ("
           << (r.profiler_gap_s + r.profiler_inside_s) * 1e6 << " us per event: " << r.profiler_gap_s * 1e6 << " us outside, the median of "
           << r.profiler_gaps << " gaps between an op's consecutive children, and " << r.profiler_inside_s * 1e6 << " us inside, the median of "
           << r.profiler_views << " bare aten::as_strided)\n";
    if (r.cuda) {
      double dev = 0;
      for (const TorchOpRecord& rec : r.ops.records) dev += rec.device_median_s.value_or(0.0);
      traces << "    CUDA activity: " << dev * 1e3 << " ms of kernels, copies and sets launched by the model's ops a step (the medians' sum), "
             << (r.device_other_s.empty() ? 0.0 : median(r.device_other_s)) * 1e3
             << " ms launched outside them (the batch's copy to the GPU, ...); the host's waits for the device taken off\n";
    }
    const std::string base = std::filesystem::path(j.trace).filename().string();
    for (const auto& [unit, n] : r.unit_events)
      sources[unit] += (sources[unit].empty() ? "" : ", ") + base + " " + std::to_string(r.steps_s.size()) + " x " + std::to_string(n);
    in.torch_ops.push_back(std::move(r.ops));
    for (CollectiveSweepFile& f : r.sweeps) in.collectives.push_back(std::move(f));
    from += (from.empty() ? "" : "; ") + j.trace + " (workload " + j.workload + ")";
  }
  TraceCalibration t;
  CalibrationFit fit = fit_calibration(in, name);
  t.file = std::move(fit.file);
  t.file.fitted_from = "torch.profiler traces at " + std::to_string(ranks) + " rank(s): " + from;
  for (std::size_t i = 0; i < sweeps.size(); ++i) t.file.fitted_from += (i == 0 ? "; collective sweeps: " : ", ") + sweeps[i];
  t.file.concurrency = ranks;
  t.file.torch_host_has_launch = cuda == 1;
  std::ostringstream report;
  report << "kanscale calibrate --from-trace: " << jobs.size() << " trace(s) at " << ranks << " rank(s)\n" << traces.str() << fit.report;
  // the units too few shapes fitted: per_element from the shipped calibration
  std::set<std::string> fitted;
  for (const auto& o : t.file.torch_ops) fitted.insert(o.cls);
  std::map<std::string, std::vector<TorchOpRecord>> rest;
  std::vector<std::string> order;
  for (const auto& f : in.torch_ops)
    for (const auto& r : f.records)
      if (!fitted.count(r.cls)) {
        if (!rest.count(r.cls)) order.push_back(r.cls);
        rest[r.cls].push_back(r);
      }
  if (!order.empty()) {
    const std::string prior_path = shipped_pytorch_calibration_path();
    Cluster any;
    any.collectives.family = CollFamily::gloo;
    const Calibration prior = load_calibration(prior_path, any, Precision::fp32);
    const std::string prior_what = "configs/calibrations/pytorch-cpu.yaml (measured on " +
                                   (prior.machine.empty() ? std::string("an unrecorded machine") : describe(prior.machine)) + ")";
    report << "fewer than 3 shapes: per_element from " << (cuda == 1 ? std::string("0 on the host (a GPU job's host does no per-element work)") : prior_what)
           << ", fixed fitted to the traces:\n";
    for (const std::string& cls : order) {
      FittedTorchOp o = prior_fit(cls, rest[cls], prior, prior_what, cuda == 1);
      report << "  " << cls << ": fixed " << o.cost.fixed_s * 1e6 << " us, per_element " << o.cost.element_s * 1e9 << " ns (" << o.shapes
             << " shape(s))";
      if (cuda == 1) {
        prior_device_fit(o, rest[cls], c.file.empty() ? c.name : c.file);
        report << "; device: fixed " << o.device->fixed_s * 1e6 << " us, per_element " << o.device->element_s * 1e9 << " ns (" << o.device_note << ")";
      }
      report << "\n";
      t.file.torch_ops.push_back(std::move(o));
    }
  }
  // every class: the traces' steps x its events in each, in fitted_from's order
  for (FittedTorchOp& o : t.file.torch_ops)
    if (sources.count(o.cls)) o.source = "steps x events: " + sources[o.cls];
  std::vector<double> glue;
  for (const auto& g : glues) glue.insert(glue.end(), g.begin(), g.end());
  if (!glue.empty()) {
    t.file.host_overhead_s = median(glue);
    t.file.host_overhead_note = "a step's time outside every op class (Python's glue between ops), the profiler's own cost taken off: the median over " + std::to_string(glue.size()) +
                                " profiler step(s) of the 1-rank traces";
    report << "host_overhead " << *t.file.host_overhead_s * 1e6 << " us: " << t.file.host_overhead_note << "\n";
  } else {
    report << "host_overhead not fitted: no 1-rank trace (at more ranks a step's glue holds the wait for the all-reduce)\n";
  }
  // the whole step's error out of sample, where the traces allow it: what the intervals carry
  const std::vector<double> loo = ranks == 1 ? leave_one_trace_out(in.torch_ops, glues, nets, name) : std::vector<double>{};
  if (loo.size() >= 2) {
    double ss = 0;
    for (double e : loo) ss += e * e;
    t.file.model_error_sigma = std::sqrt(ss / static_cast<double>(loo.size()));
    t.file.trace_loo_steps = static_cast<int>(loo.size());
    report << "model_error_sigma " << t.file.model_error_sigma << ": each of " << loo.size()
           << " traced steps (the profiler's own cost taken off) predicted by the classes fitted without its trace; RMS of log(measured / predicted)\n";
  } else {
    report << "model_error_sigma not measured: " << (ranks == 1 ? "fewer than 2 traces whose classes the others fit (4 shapes or more)" : "traces at more than 1 rank")
           << "; the intervals borrow the unwatched stand-in's\n";
  }
  t.report = report.str();
  return t;
}

}  // namespace ks
