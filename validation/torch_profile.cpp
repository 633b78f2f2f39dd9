#include "torch_profile.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>
#include <sstream>
#include <unordered_map>

#include "common/error.hpp"
#include "formats/torch_trace.hpp"
#include "model/statistics.hpp"
#include "model/units.hpp"
#include "sim/point.hpp"

namespace ks {

namespace {

// A field of an event as a string or a number, or nothing: a field of
// another type is the trace's fault, named with the event (never a JSON
// library's exception).
std::string field_string(const nlohmann::json& e, const char* key) {
  return e.is_object() && e.contains(key) && e[key].is_string() ? e[key].get<std::string>() : std::string();
}

bool is_complete(const nlohmann::json& e) { return field_string(e, "ph") == "X"; }

// (the host's mark: a CUDA trace marks each step again on the GPU's stream)
bool is_step(const nlohmann::json& e) {
  return is_complete(e) && field_string(e, "name").rfind("ProfilerStep#", 0) == 0 && !torch_device_category(field_string(e, "cat"));
}

double field_number(const nlohmann::json& e, const char* key, std::size_t index, const std::string& what) {
  if (!e.contains(key)) return 0.0;
  const auto& v = e[key];
  if (!v.is_number() || !std::isfinite(v.get<double>()))
    throw InputError(what + ": event " + std::to_string(index) + " (\"" + field_string(e, "name") + "\"): key '" + key +
                     "': expected a finite number of microseconds, got " + v.dump().substr(0, 40));
  return v.get<double>();
}

// The collectives and their launches: set against the replay's collectives, not its ops.
bool is_comm(const std::string& cls) { return cls.rfind("comm:", 0) == 0 || cls == "reducer:allreduce"; }

std::string ms(double s) { return format_time(s); }

}  // namespace

std::vector<nlohmann::json> split_profiler_steps(const nlohmann::json& trace, const std::string& what) {
  const nlohmann::json* list = &trace;
  if (trace.is_object() && trace.contains("traceEvents")) list = &trace["traceEvents"];
  if (!list->is_array()) throw InputError(what + ": not a Chrome trace (expected a list of events, or an object with traceEvents)");
  struct Range {
    double t0, t1;
    long long id;
    std::string name;
  };
  std::vector<Range> steps;
  for (std::size_t i = 0; i < list->size(); ++i) {
    const auto& e = (*list)[i];
    if (!is_step(e)) continue;
    const std::string name = field_string(e, "name");
    const double ts = field_number(e, "ts", i, what), dur = field_number(e, "dur", i, what);
    if (dur < 0) throw InputError(what + ": " + name + " (event " + std::to_string(i) + "): a negative duration");
    long long id = 0;
    if (e.contains("args") && e["args"].is_object() && e["args"].contains("id") && e["args"]["id"].is_number_integer()) id = e["args"]["id"];
    steps.push_back({ts, ts + dur, id, name});
  }
  if (steps.empty()) return {*list};
  std::sort(steps.begin(), steps.end(), [](const Range& a, const Range& b) { return a.t0 < b.t0; });
  // profiler steps follow one another: one inside or over another is no schedule's
  for (std::size_t s = 1; s < steps.size(); ++s) {
    if (steps[s].name == steps[s - 1].name && steps[s].t0 == steps[s - 1].t0)
      throw InputError(what + ": " + steps[s].name + " appears twice");
    if (steps[s].t0 < steps[s - 1].t1)
      throw InputError(what + ": " + steps[s].name + " starts inside " + steps[s - 1].name + " (profiler steps follow one another; nested or overlapping steps are no schedule's)");
  }
  std::set<long long> step_ids;
  for (const Range& r : steps) step_ids.insert(r.id);
  std::vector<nlohmann::json> out(steps.size(), nlohmann::json::array());
  for (std::size_t i = 0; i < list->size(); ++i) {
    const auto& e = (*list)[i];
    if (is_step(e) || !e.is_object() || !is_complete(e)) continue;
    const double ts = field_number(e, "ts", i, what);
    // the step that holds it, its end excluded; else one it starts on the
    // last microsecond of (Kineto stamps whole microseconds): the last step
    // starting at or before it (steps are sorted and apart)
    const auto it = std::upper_bound(steps.begin(), steps.end(), ts, [](double t, const Range& r) { return t < r.t0; });
    if (it == steps.begin()) continue;  // before every step
    const std::size_t at = static_cast<std::size_t>(it - steps.begin()) - 1;
    if (!(ts < steps[at].t1 || ts <= steps[at].t1 + 1)) continue;  // between steps
    nlohmann::json ev = e;
    // an op whose recorded parent is the step becomes top-level
    if (ev.contains("args") && ev["args"].is_object() && ev["args"].contains("parent") && ev["args"]["parent"].is_number_integer()) {
      const long long parent = ev["args"]["parent"];
      if (parent != 0 && step_ids.count(parent)) ev["args"]["parent"] = 0;
    }
    out[at].push_back(std::move(ev));
  }
  return out;
}

namespace {

// One step's events: what lies inside each event and before it, and the
// profiler's own cost as it shows (the gaps between consecutive events inside
// one of the model's ops; bare aten::as_strided durations), appended to
// `gaps` and `views`. Parents precede their children in `ev`.
struct StepLayout {
  std::vector<int> nested, inner_n;  // ProfileUnit::nested_events and inner_events, per event
  std::vector<double> inner_s;       // ProfileUnit::inner_s, per event
  std::vector<double> lead;          // an event's gap since its previous sibling ended
  // the events whose profiler cost lies within the step's span: those of
  // the threads that run the model's ops, one after another (a GPU job's
  // backward runs on autograd's device thread, its forward and Adam on the
  // caller's); the others' (gloo's threads) run beside them. None: the busiest's
  int main_events = 0;
  double span_s = 0;                 // the first event's start to the last one's end
};

// A CUDA runtime or driver call (a GPU job's launches, copies, syncs).
bool is_runtime(const TorchTraceEvent& e) { return e.cat == "cuda_runtime" || e.cat == "cuda_driver"; }

// `model_threads`: the threads with events of the model's classes. Their
// top-level events follow one another as one sequence (a call's gap since
// the previous one ended spans no other model thread's work).
StepLayout step_layout(const std::vector<TorchTraceEvent>& ev, const std::set<long long>& model_threads, std::vector<double>& gaps,
                       std::vector<double>& views) {
  constexpr long long kModelThreads = std::numeric_limits<long long>::min();
  const std::size_t n = ev.size();
  StepLayout l;
  l.nested.assign(n, 0);
  l.inner_n.assign(n, 0);
  l.inner_s.assign(n, 0.0);
  l.lead.assign(n, 0.0);
  std::vector<int> classed_up(n, -1);  // the nearest enclosing event of a class
  std::vector<char> inside(n, 0), has_child(n, 0);
  std::map<std::pair<long long, int>, double> sibling_end;  // (thread, parent): the last child's end
  std::map<std::pair<long long, int>, bool> after_runtime;  // (thread, parent): the last child was a CUDA runtime call
  std::map<long long, int> per_thread;
  double first_us = 0, last_us = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const TorchTraceEvent& e = ev[i];
    const double end_us = e.ts_us + e.dur_us;
    first_us = i == 0 ? e.ts_us : std::min(first_us, e.ts_us);
    last_us = i == 0 ? end_us : std::max(last_us, end_us);
    ++per_thread[e.tid];
    const long long seq = e.parent < 0 && model_threads.count(e.tid) ? kModelThreads : e.tid;  // (the sequence it follows in)
    const auto [it, fresh] = sibling_end.try_emplace({seq, e.parent}, end_us);
    if (!fresh) l.lead[i] = std::max(0.0, e.ts_us - it->second) * 1e-6;
    it->second = std::max(it->second, end_us);
    if (e.parent < 0) continue;
    const auto up = static_cast<std::size_t>(e.parent);
    has_child[up] = 1;
    // events inside a classed event are its, but for those inside another
    // classed event within it (DDP's hooks inside AccumulateGrad): that one's
    classed_up[i] = !ev[up].cls.empty() ? e.parent : classed_up[up];
    if (classed_up[i] >= 0) {
      const auto a = static_cast<std::size_t>(classed_up[i]);
      ++l.nested[a];
      if (!e.cls.empty()) l.inner_s[a] += e.dur_us * 1e-6, ++l.inner_n[a];
    }
    // C++ calling C++: consecutive events inside one of the model's ops (not
    // next to a CUDA runtime call: the host's work around a launch, cuBLAS's
    // set-up, lies in those gaps, not only the profiler's)
    inside[i] = !ev[up].cls.empty() || inside[up];
    bool& was_runtime = after_runtime[{seq, e.parent}];
    if (!fresh && inside[i] && !is_runtime(e) && !was_runtime) gaps.push_back(l.lead[i]);
    was_runtime = is_runtime(e);
  }
  for (std::size_t i = 0; i < n; ++i)
    if (ev[i].name == "aten::as_strided" && !has_child[i]) views.push_back(ev[i].dur_us * 1e-6);
  for (const auto& [tid, k] : per_thread) {
    if (model_threads.empty()) l.main_events = std::max(l.main_events, k);
    else if (model_threads.count(tid)) l.main_events += k;
  }
  l.span_s = (last_us - first_us) * 1e-6;
  return l;
}

// A GPU job's step: per event of a class, the device work its launches did
// (compute, NCCL) and the host's waits for the device inside it: each
// runtime call belongs to its nearest enclosing classed event (none: the
// step's other work). `launched`: per correlation id, the device's
// microseconds (compute, NCCL).
struct StepDevice {
  std::vector<double> compute_s, nccl_s, sync_s;
  std::vector<int> syncs;  // the waits' events
  double other_s = 0, other_sync_s = 0;  // launched, or waited, outside every classed event
  int other_syncs = 0;
};

// the runtime calls that wait for the device (the host does no work meanwhile)
bool is_sync(const std::string& name) {
  return name == "cudaStreamSynchronize" || name == "cudaDeviceSynchronize" || name == "cudaEventSynchronize" || name == "cudaMemcpy" ||
         name == "cuStreamSynchronize" || name == "cuCtxSynchronize" || name == "cuEventSynchronize";
}

StepDevice step_device(const std::vector<TorchTraceEvent>& ev, const std::unordered_map<long long, std::pair<double, double>>& launched) {
  StepDevice d;
  d.compute_s.assign(ev.size(), 0.0);
  d.nccl_s.assign(ev.size(), 0.0);
  d.sync_s.assign(ev.size(), 0.0);
  d.syncs.assign(ev.size(), 0);
  for (std::size_t i = 0; i < ev.size(); ++i) {
    if (!is_runtime(ev[i])) continue;
    int owner = ev[i].parent;
    while (owner >= 0 && ev[static_cast<std::size_t>(owner)].cls.empty()) owner = ev[static_cast<std::size_t>(owner)].parent;
    double compute = 0, nccl = 0;
    if (const auto it = launched.find(ev[i].correlation); ev[i].correlation >= 0 && it != launched.end())
      compute = it->second.first * 1e-6, nccl = it->second.second * 1e-6;
    const bool sync = is_sync(ev[i].name);
    const double wait = sync ? ev[i].dur_us * 1e-6 : 0.0;
    if (owner < 0) {
      d.other_s += compute;  // (an NCCL kernel outside every collective's event: no step's work to model)
      d.other_sync_s += wait;
      d.other_syncs += sync;
      continue;
    }
    const auto o = static_cast<std::size_t>(owner);
    d.compute_s[o] += compute;
    d.nccl_s[o] += nccl;
    d.sync_s[o] += wait;
    d.syncs[o] += sync;
  }
  return d;
}

// Whole iterations: every class of the model's list k times its ops (a trace
// without ProfilerStep ranges may hold several steps); any other count is a
// trace of another model or other DDP settings (InputError naming `what` and
// the first class that differs), or, for the last of several steps (`last`),
// short of events but of no class, a step cut short.
int whole_iterations(const std::map<std::string, std::vector<std::size_t>>& by_class,
                     const std::map<std::string, std::vector<const TorchTraceEvent*>>& seen, const std::string& what, const std::string& model_name,
                     bool last) {
  int k = -1;
  std::string first_off;
  int differ = 0;
  bool prefix = true;  // every class at most the model's count
  for (const auto& [cls, ops] : by_class) {
    const std::size_t n = seen.count(cls) ? seen.at(cls).size() : 0;
    const int ki = n % ops.size() == 0 ? static_cast<int>(n / ops.size()) : -1;
    prefix = prefix && n <= ops.size();
    if (k < 0 && ki > 0) k = ki;
    if ((ki <= 0 || ki != k) && differ++ == 0)
      first_off = cls + ": " + std::to_string(n) + " events where the model has " + std::to_string(ops.size()) + " ops per iteration";
  }
  if (k > 0 && differ == 0) return k;
  if (last && prefix)
    throw InputError(what + ": the trace ends mid-step (" + first_off +
                     "); profile whole steps: torch.profiler's schedule writes the trace after its active steps end");
  throw InputError(what + ": not a trace of " + model_name + "'s model: " + std::to_string(differ) + " op class(es) have other counts than its op list (" +
                   first_off + "); another model, or other DDP settings (gradient_as_bucket_view, broadcast_buffers)?");
}

}  // namespace

ProfileComparison compare_torch_profile(const nlohmann::json& trace, const std::string& what, const Cluster& c, const Workload& w,
                                        const Calibration& cal, int ranks) {
  if (w.implementation != Implementation::pytorch)
    throw InputError((w.file.empty() ? w.name : w.file) + ": key 'implementation': a torch.profiler trace is of a PyTorch job; expected pytorch");
  const std::vector<nlohmann::json> steps = split_profiler_steps(trace, what);
  // a GPU job: each launch's device work, by correlation id (compute, NCCL; us)
  std::unordered_map<long long, std::pair<double, double>> launched;
  for (const TorchDeviceEvent& d : torch_device_events(trace, {}, what)) {
    if ((d.cat != "kernel" && d.cat != "gpu_memcpy" && d.cat != "gpu_memset") || d.correlation < 0) continue;
    auto& x = launched[d.correlation];
    (d.nccl ? x.second : x.first) += d.dur_us;
  }
  // each step's events, read once
  std::vector<std::vector<TorchTraceEvent>> step_events;
  for (const nlohmann::json& s : steps) step_events.push_back(read_torch_trace(s, what));
  // the job's torch: the workload's, else the one whose ops the first step holds
  Workload job = w;
  const TorchOpSet shown = torch_op_set_in(step_events.at(0));
  TorchOpSet torch_ops = w.torch_version.empty() ? shown : job_torch_ops(w, nullptr, host_track_applies(c, w));
  // (a torch 2 job's Adam: foreach where the trace shows it, whatever the cluster)
  if (torch_ops != TorchOpSet::torch1 && shown != TorchOpSet::torch1) torch_ops = shown;
  job.torch_ops = torch_ops;
  const ReplayInput in = make_replay_input(c, job, cal, layout_for(c, ranks, std::nullopt), w.batch_per_gpu, 0);
  // the model's ops per class, in order, and each op's unit and predicted
  // cost (the host's, where a device runs the ops behind it)
  const bool two_track = !in.op_host_s.empty();
  std::map<std::string, std::vector<std::size_t>> by_class;
  std::vector<std::string> unit_order;
  std::map<std::string, double> unit_cost, unit_calls, unit_elements, unit_device;
  auto unit_of = [&](std::size_t i) { return in.ops[i].torch_unit.empty() ? in.ops[i].torch_class : in.ops[i].torch_unit; };
  for (std::size_t i = 0; i < in.ops.size(); ++i) {
    if (in.ops[i].torch_class.empty()) continue;
    by_class[in.ops[i].torch_class].push_back(i);
    const std::string unit = unit_of(i);
    if (!unit_cost.count(unit)) unit_order.push_back(unit);
    unit_cost[unit] += two_track ? in.op_host_s[i] : in.op_time_s[i];
    unit_device[unit] += two_track ? in.op_time_s[i] : 0.0;
    unit_calls[unit] += in.ops[i].unit_calls;
    unit_elements[unit] += in.ops[i].unit_elements;
  }

  ProfileComparison p;
  p.torch_ops = torch_ops;
  p.cuda = !launched.empty();
  for (const Bucket& b : in.steady.buckets) p.bucket_bytes.push_back(b.bytes);
  p.broadcast_bytes = in.broadcast_buffers ? in.broadcast_bytes : 0.0;
  std::map<std::string, ProfileComm> comm;
  std::vector<double> dispatch, gaps, views;
  const std::string model_name = w.file.empty() ? w.name : w.file;
  for (std::size_t s = 0; s < steps.size(); ++s) {
    const std::vector<TorchTraceEvent>& ev = step_events[s];
    std::set<long long> model_threads;
    for (const TorchTraceEvent& e : ev)
      if (by_class.count(e.cls)) model_threads.insert(e.tid);
    const StepLayout lay = step_layout(ev, model_threads, gaps, views);
    const StepDevice sd = step_device(ev, launched);
    // the events of each class the model lists, in time order
    std::map<std::string, std::vector<const TorchTraceEvent*>> seen;
    std::vector<double> step_ar, step_bc;  // this step's collectives, in time order (gloo runs them on one thread)
    // a GPU job's device work and waits under events of no unit (a class the
    // model does not list: the batch's copy to the GPU, a loss's .item();
    // a collective's own waits): the step's, outside every unit
    double other_s = sd.other_s, other_sync_s = sd.other_sync_s;
    int other_syncs = sd.other_syncs;
    for (const TorchTraceEvent& e : ev) {
      if (e.cls.empty()) continue;
      const std::size_t at = static_cast<std::size_t>(&e - ev.data());
      if (!by_class.count(e.cls)) other_s += sd.compute_s[at], other_sync_s += sd.sync_s[at], other_syncs += sd.syncs[at];
      if (is_comm(e.cls)) {
        ProfileComm& k = comm[e.cls];
        k.cls = e.cls;
        ++k.events;
        // (a GPU job's collective: its NCCL kernels' time; its host event only launches them)
        const double t = p.cuda ? sd.nccl_s[at] : e.dur_us * 1e-6;
        k.measured_s += t;
        if (e.cls == "comm:all_reduce") step_ar.push_back(t);
        if (e.cls == "comm:broadcast") step_bc.push_back(t);
      } else if (by_class.count(e.cls)) {
        seen[e.cls].push_back(&e);
      } else {
        ++p.unknown[e.cls];
      }
    }
    // in time order (the trace is read per thread)
    for (auto& [cls, events] : seen)
      std::stable_sort(events.begin(), events.end(), [](const TorchTraceEvent* a, const TorchTraceEvent* b) { return a->ts_us < b->ts_us; });
    const std::string step_what = what + (steps.size() > 1 ? " (ProfilerStep " + std::to_string(s + 1) + ")" : std::string());
    const int k = whole_iterations(by_class, seen, step_what, model_name, steps.size() > 1 && s + 1 == steps.size() && p.iterations > 0);
    std::vector<std::map<std::string, ProfileUnit>> units(static_cast<std::size_t>(k));
    for (const auto& [cls, events] : seen) {
      const auto& ops = by_class.at(cls);
      for (std::size_t j = 0; j < events.size(); ++j) {
        const std::size_t op = ops[j % ops.size()];
        ProfileUnit& u = units[j / ops.size()][unit_of(op)];
        ++u.events;
        u.measured_s += events[j]->dur_us * 1e-6;
        const auto idx = static_cast<std::size_t>(events[j] - ev.data());
        u.nested_events += lay.nested[idx];
        u.inner_s += lay.inner_s[idx];
        u.inner_events += lay.inner_n[idx];
        u.lead_s += lay.lead[idx];
        u.leads += lay.lead[idx] > 0 ? 1 : 0;
        u.device_s += sd.compute_s[idx];
        u.sync_s += sd.sync_s[idx];
        u.syncs += sd.syncs[idx];
        if (in.ops[op].host_only) dispatch.push_back(events[j]->dur_us * 1e-6);
      }
    }
    for (int it = 0; it < k; ++it) {
      for (const std::string& name : unit_order) {
        ProfileUnit u = units[static_cast<std::size_t>(it)].count(name) ? units[static_cast<std::size_t>(it)].at(name) : ProfileUnit{};
        u.unit = name;
        u.iteration = p.iterations;
        u.predicted_s = unit_cost.at(name);
        u.calls = unit_calls.at(name);
        u.elements = unit_elements.at(name);
        u.device_predicted_s = unit_device.at(name);
        p.measured_total_s += u.measured_s;
        p.predicted_total_s += u.predicted_s;
        p.units.push_back(u);
      }
      p.step_events.push_back(static_cast<int>(std::lround(static_cast<double>(lay.main_events) / k)));
      // the step's collectives, split evenly among its iterations
      auto part = [&](const std::vector<double>& all) {
        const std::size_t per = all.size() / static_cast<std::size_t>(k), at = per * static_cast<std::size_t>(it);
        return std::vector<double>(all.begin() + static_cast<std::ptrdiff_t>(at), all.begin() + static_cast<std::ptrdiff_t>(at + per));
      };
      p.allreduce_s.push_back(part(step_ar));
      p.broadcast_s.push_back(part(step_bc));
      p.step_span_s.push_back(lay.span_s / k);
      p.step_sync_s.push_back(other_sync_s / k);
      p.step_syncs.push_back(static_cast<double>(other_syncs) / k);
      p.step_device_other_s.push_back(other_s / k);
      ++p.iterations;
    }
  }
  for (auto& [cls, k] : comm) {
    if (cls == "comm:all_reduce" && !in.steady.allreduce.empty()) {
      double sum = 0;
      for (const auto& e : in.steady.allreduce) sum += e.time_s;
      k.predicted_each_s = sum / static_cast<double>(in.steady.allreduce.size());
    } else if (cls == "comm:broadcast") {
      k.predicted_each_s = in.broadcast.time_s;
    }
    p.comm.push_back(k);
  }
  auto median_of = [](const std::vector<double>& v, double& m, int& n) {
    n = static_cast<int>(v.size());
    m = v.empty() ? 0.0 : median(v);
  };
  median_of(dispatch, p.dispatch_median_s, p.dispatch_events);
  median_of(gaps, p.profiler_gap_s, p.profiler_gaps);
  median_of(views, p.profiler_inside_s, p.profiler_views);
  return p;
}

std::string profile_report(const ProfileComparison& p) {
  std::ostringstream o;
  char b[256];
  o << "op list: " << torch_op_set_name(p.torch_ops) << "'s (the workload's torch, else the one the trace's ops show)\n";
  for (int it = 0; it < p.iterations; ++it) {
    o << "iteration " << it + 1 << " of " << p.iterations << " (measured: the summed durations of the unit's events; predicted: the replay's cost of its ops)\n";
    std::snprintf(b, sizeof b, "  %-36s %7s %12s %12s %9s", "op class (unit)", "events", "measured", "predicted", "meas/pred");
    o << b;
    // (a GPU job: its kernels' time on the device, against the replay's device track)
    if (p.cuda) std::snprintf(b, sizeof b, " %12s %12s", "device", "dev. pred."), o << b;
    o << "\n";
    double m = 0, q = 0;
    for (const ProfileUnit& u : p.units) {
      if (u.iteration != it) continue;
      m += u.measured_s;
      q += u.predicted_s;
      std::snprintf(b, sizeof b, "  %-36s %7d %12s %12s %9s", u.unit.c_str(), u.events, ms(u.measured_s).c_str(), ms(u.predicted_s).c_str(),
                    u.predicted_s > 0 ? (std::to_string(u.measured_s / u.predicted_s).substr(0, 5)).c_str() : "-");
      o << b;
      if (p.cuda) std::snprintf(b, sizeof b, " %12s %12s", ms(u.device_s).c_str(), ms(u.device_predicted_s).c_str()), o << b;
      o << "\n";
    }
    std::snprintf(b, sizeof b, "  %-36s %7s %12s %12s %9s\n", "all units", "", ms(m).c_str(), ms(q).c_str(),
                  q > 0 ? std::to_string(m / q).substr(0, 5).c_str() : "-");
    o << b;
  }
  auto list = [&](const char* title, const std::map<std::string, int>& m) {
    if (m.empty()) return;
    o << title << ":";
    for (const auto& [cls, n] : m) o << " " << cls << " (" << n << ")";
    o << "\n";
  };
  list("classes the model does not list (events)", p.unknown);
  for (const ProfileComm& k : p.comm) {
    o << "communication " << k.cls << ": " << k.events << " event(s), " << ms(k.measured_s) << " in all";
    if (k.events > 0) o << ", " << ms(k.measured_s / k.events) << " each";
    if (k.predicted_each_s > 0) o << "; the replay's " << ms(k.predicted_each_s) << " each";
    o << "\n";
  }
  if (p.dispatch_events > 0)
    o << "host dispatch per op (the median of the " << p.dispatch_events
      << " events of ops that launch no work: views, autograd's bookkeeping): " << ms(p.dispatch_median_s) << "\n";
  return o.str();
}

nlohmann::json profile_json(const ProfileComparison& p) {
  nlohmann::json units = nlohmann::json::array();
  for (const ProfileUnit& u : p.units) {
    units.push_back({{"unit", u.unit}, {"iteration", u.iteration}, {"events", u.events}, {"measured_s", u.measured_s}, {"predicted_s", u.predicted_s}});
    if (p.cuda) units.back()["device_s"] = u.device_s, units.back()["device_predicted_s"] = u.device_predicted_s;
  }
  nlohmann::json comm = nlohmann::json::array();
  for (const ProfileComm& k : p.comm)
    comm.push_back({{"class", k.cls}, {"events", k.events}, {"measured_s", k.measured_s}, {"predicted_each_s", k.predicted_each_s}});
  return {{"iterations", p.iterations}, {"units", units}, {"unknown_classes", p.unknown}, {"communication", comm},
          {"host_dispatch", {{"median_s", p.dispatch_median_s}, {"events", p.dispatch_events}}},
          {"measured_total_s", p.measured_total_s}, {"predicted_total_s", p.predicted_total_s}};
}

}  // namespace ks
