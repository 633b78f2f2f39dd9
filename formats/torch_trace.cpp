#include "torch_trace.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_map>

#include "common/error.hpp"

namespace ks {

bool torch_device_category(const std::string& cat) {
  return cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset" || cat == "cuda_sync" || cat == "gpu_user_annotation";
}

namespace {

std::string strip_aten(const std::string& name) { return name.rfind("aten::", 0) == 0 ? name.substr(6) : name; }

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// The scopes torch's Python code opens with record_function: their children
// are the phase's ops, and each opens with the profiler's own aten::empty.
const char* scope_phase(const std::string& name) {
  if (starts_with(name, "Optimizer.zero_grad#")) return "zero_grad";
  if (starts_with(name, "Optimizer.step#")) return "optimizer";
  if (name == "DistributedDataParallel.forward") return "forward";
  return nullptr;
}

constexpr const char* kAutogradNode = "autograd::engine::evaluate_function: ";

// What the device ran (not the host's ops), and the profiler's own spans.
bool device_cat(const std::string& c) { return torch_device_category(c); }
bool step_mark(const std::string& name) { return starts_with(name, "ProfilerStep#"); }

// A trace's event list: a bare list, or an object's traceEvents.
const nlohmann::json& event_list(const nlohmann::json& trace, const std::string& what) {
  const nlohmann::json* list = &trace;
  if (trace.is_object()) {
    if (!trace.contains("traceEvents")) throw InputError(what + ": not a torch.profiler trace (no traceEvents)");
    list = &trace["traceEvents"];
  }
  if (!list->is_array()) throw InputError(what + ": not a torch.profiler trace (expected a list of events)");
  return *list;
}

// A complete event's name, start and duration, checked; its category ("" : none).
void read_span(const nlohmann::json& j, std::size_t i, const std::string& what, std::string& name, std::string& cat, double& ts, double& dur) {
  try {
    name = j.at("name").get<std::string>();
    ts = j.at("ts").get<double>();
    dur = j.at("dur").get<double>();
  } catch (const std::exception&) {
    throw InputError(what + ": event " + std::to_string(i) + ": expected name, ts, dur and tid");
  }
  const auto c = j.find("cat");
  cat = c != j.end() && c->is_string() ? c->get<std::string>() : std::string();
  // a microsecond stamp within 10^18 (30,000 years after 1970), a duration
  // within a day: one outside them is no profiler's
  if (!(std::fabs(ts) < 1e18)) throw InputError(what + ": event " + std::to_string(i) + " (\"" + name + "\"): ts out of range");
  if (!(dur >= 0)) throw InputError(what + ": event " + std::to_string(i) + " (\"" + name + "\"): negative duration");
  if (dur > 86400e6)
    throw InputError(what + ": event " + std::to_string(i) + " (\"" + name + "\"): a duration of " + std::to_string(dur / 86400e6) +
                     " days; expected at most a day (86400000000 us)");
}

bool complete(const nlohmann::json& j) {
  if (!j.is_object()) return false;
  const auto ph = j.find("ph");  // (one lookup each, no copies: a trace has a million events)
  return ph != j.end() && ph->is_string() && ph->get_ref<const std::string&>() == "X";
}

// args[key] when it is an integer, else `otherwise`
long long arg_int(const nlohmann::json& j, const char* key, long long otherwise) {
  const auto args = j.find("args");
  if (args == j.end() || !args->is_object()) return otherwise;
  const auto v = args->find(key);
  return v != args->end() && v->is_number_integer() ? v->get<long long>() : otherwise;
}

// Events whose parent the trace names (0: none), kept in time order.
std::vector<TorchTraceEvent> nest_by_ids(std::vector<TorchTraceEvent> ev, const std::vector<long long>& ids,
                                         const std::vector<long long>& parents, const std::string& what);

}  // namespace

namespace {
// Whether events[i] holds an op (not record_function's own aten::empty).
// Its children follow it in start order, within its span.
bool has_op_inside(const std::vector<TorchTraceEvent>& events, std::size_t i) {
  const TorchTraceEvent& e = events[i];
  for (std::size_t j = i + 1; j < events.size() && events[j].ts_us <= e.ts_us + e.dur_us; ++j)
    if (events[j].parent == static_cast<int>(i) && events[j].name != "aten::empty") return true;
  return false;
}
}  // namespace

std::string torch_op_class(const std::vector<TorchTraceEvent>& events, std::size_t i) {
  const TorchTraceEvent& e = events[i];
  const std::string& n = e.name;
  if (e.cat == "cuda_runtime" || e.cat == "cuda_driver") return "";  // a CUDA call inside an op, not an op
  // collectives on the backend's own threads (gloo's workers, nccl's stream)
  if (starts_with(n, "gloo:") || starts_with(n, "nccl:")) return "comm:" + n.substr(n.find(':') + 1);
  if (e.depth == 0) {
    // torch 2's zero_grad (set_to_none=True): the scope with no op inside
    if (starts_with(n, "Optimizer.zero_grad#") && !has_op_inside(events, i)) return "zero_grad:set_to_none";
    if (scope_phase(n) || n == "aten::zeros") return "";  // a scope, or the handle record_function makes
    if (starts_with(n, kAutogradNode)) {
      std::string node = n.substr(std::string(kAutogradNode).size());
      if (node == "torch::autograd::AccumulateGrad") node = "AccumulateGrad";
      return "backward:" + node;
    }
    if (n == "aten::ones_like") return "backward:ones_like";  // the gradient seed of loss.backward()
    if (n == "aten::mse_loss" || n == "aten::broadcast_tensors") return "loss:" + strip_aten(n);
    if (n == "torch.distributed.ddp.reducer::copy_bucket_to_grad") return "reducer:copy_bucket_to_grad";
    if (n == "aten::as_strided") return "reducer:as_strided";  // the bucket's view of each gradient, before the copy back
    return "other:" + n;
  }
  if (e.depth != 1 || e.parent < 0) return "";
  const std::string& p = events[static_cast<std::size_t>(e.parent)].name;
  if (const char* phase = scope_phase(p)) {
    if (n == "aten::empty") return "";  // record_function's own
    if (std::string(phase) == "forward") {
      // DDP's broadcast of the module's buffers, before the module runs
      if (n == "aten::flatten_dense_tensors" || n == "aten::unflatten_dense_tensors" || n == "aten::copy_") return "ddp:" + strip_aten(n);
      if (n == "c10d::broadcast_") return "ddp:broadcast_";
    }
    return std::string(phase) + ":" + strip_aten(n);
  }
  if (p == std::string(kAutogradNode) + "torch::autograd::AccumulateGrad") {
    // DDP's hook: the gradient copied into its bucket (scaled by 1/world), and
    // the bucket's all-reduce launched when it is full
    // (torch 2.x: the hook's own mul_out writes grad / world into the bucket)
    if (n == "aten::mul" || n == "aten::copy_" || n == "aten::div" || n == "torch::distributed::reducer::mul_out") return "reducer:bucket_copy";
    if (n == "c10d::allreduce_") return "reducer:allreduce";
  }
  return "";
}

TorchOpSet torch_op_set_in(const std::vector<TorchTraceEvent>& events) {
  // (an empty zero_grad is no evidence: torch 1.13 with set_to_none=True has one too)
  bool two = false, foreach = false;
  for (const TorchTraceEvent& e : events) {
    two = two || e.cls == "optimizer:lerp_" || e.name == "torch::distributed::reducer::mul_out";
    foreach = foreach || starts_with(e.cls, "optimizer:_foreach_");
  }
  if (!two) return TorchOpSet::torch1;  // (1.13 with foreach=True is not modelled: its counts will say so)
  return foreach ? TorchOpSet::torch2_foreach : TorchOpSet::torch2;
}

std::vector<TorchTraceEvent> read_torch_trace(const nlohmann::json& trace, const std::string& what) {
  const nlohmann::json& list = event_list(trace, what);
  std::vector<TorchTraceEvent> ev;
  std::vector<long long> ids, parents, step_ids;
  ev.reserve(list.size());
  for (std::size_t i = 0; i < list.size(); ++i) {
    const auto& j = list[i];
    if (!complete(j)) continue;
    TorchTraceEvent e;
    read_span(j, i, what, e.name, e.cat, e.ts_us, e.dur_us);
    if (device_cat(e.cat) || e.cat == "Trace") continue;  // the device's work; the profiler's own span
    if (step_mark(e.name)) {  // its ops nest as if it were not there
      if (const long long id = arg_int(j, "id", 0); id != 0) step_ids.push_back(id);
      continue;
    }
    try {
      const auto& tid = j.at("tid");
      e.tid = tid.is_number() ? tid.get<long long>() : static_cast<long long>(std::hash<std::string>{}(tid.dump()));
    } catch (const std::exception&) {
      throw InputError(what + ": event " + std::to_string(i) + ": expected name, ts, dur and tid");
    }
    e.correlation = arg_int(j, "correlation", -1);
    // the profiler's own tree, where the trace carries it (kanscale_torch's --profile)
    const auto args = j.find("args");
    const auto id_at = args != j.end() && args->is_object() ? args->find("id") : j.end();
    const auto parent_at = args != j.end() && args->is_object() ? args->find("parent") : j.end();
    if (args != j.end() && args->is_object() && id_at != args->end() && parent_at != args->end()) {
      const auto& id = *id_at;
      const auto& parent = *parent_at;
      if (!id.is_number_integer() || !parent.is_number_integer())
        throw InputError(what + ": event " + std::to_string(i) + ": args.id and args.parent must be integers");
      ids.push_back(id.get<long long>());
      parents.push_back(parent.get<long long>());
    }
    ev.push_back(std::move(e));
  }
  // a step's children: roots
  for (long long& p : parents)
    if (std::find(step_ids.begin(), step_ids.end(), p) != step_ids.end()) p = 0;
  if (!ids.empty() && ids.size() == ev.size()) return nest_by_ids(std::move(ev), ids, parents, what);
  // otherwise by time (Kineto's, export_chrome_trace's traces)
  // per thread, by start (the longer first at a tie: the parent), nested by time
  std::vector<std::size_t> order(ev.size());
  std::iota(order.begin(), order.end(), 0);
  const auto before = [&](std::size_t a, std::size_t b) {
    if (ev[a].tid != ev[b].tid) return ev[a].tid < ev[b].tid;
    if (ev[a].ts_us != ev[b].ts_us) return ev[a].ts_us < ev[b].ts_us;
    return ev[a].dur_us > ev[b].dur_us;
  };
  // (a profiler writes its events nearly in order: sorted ones are not sorted again)
  if (!std::is_sorted(order.begin(), order.end(), before)) std::stable_sort(order.begin(), order.end(), before);
  std::vector<TorchTraceEvent> out;
  out.reserve(ev.size());
  std::vector<std::size_t> stack;  // indices into out
  constexpr double kSlackUs = 1.0;  // whole-microsecond stamps
  for (std::size_t k : order) {
    TorchTraceEvent e = ev[k];
    while (!stack.empty()) {
      const TorchTraceEvent& top = out[stack.back()];
      const double top_end = top.ts_us + top.dur_us, end = e.ts_us + e.dur_us;
      // inside: starts before the parent ends (and may end a stamp past it);
      // or, both at one stamp, within it (a zero-length op's own children);
      // or a zero-length op on the parent's last stamp (the profiler stamps
      // whole microseconds: the parent's end is truncated, a child's at or
      // before it, as aten::zero_ at the end of aten::zeros)
      const bool inside = e.ts_us >= top.ts_us && ((e.ts_us < top_end && end <= top_end + kSlackUs) || (e.ts_us == top.ts_us && end <= top_end) ||
                                                   (e.dur_us == 0 && e.ts_us == top_end));
      if (top.tid == e.tid && inside) break;
      stack.pop_back();
    }
    e.depth = static_cast<int>(stack.size());
    e.parent = stack.empty() ? -1 : static_cast<int>(stack.back());
    out.push_back(std::move(e));
    stack.push_back(out.size() - 1);
  }
  for (std::size_t i = 0; i < out.size(); ++i) out[i].cls = torch_op_class(out, i);
  return out;
}

namespace {
std::vector<TorchTraceEvent> nest_by_ids(std::vector<TorchTraceEvent> ev, const std::vector<long long>& ids,
                                         const std::vector<long long>& parents, const std::string& what) {
  std::vector<std::size_t> order(ev.size());
  std::iota(order.begin(), order.end(), 0);
  const auto before = [&](std::size_t a, std::size_t b) {
    if (ev[a].ts_us != ev[b].ts_us) return ev[a].ts_us < ev[b].ts_us;
    return ev[a].dur_us > ev[b].dur_us;
  };
  if (!std::is_sorted(order.begin(), order.end(), before)) std::stable_sort(order.begin(), order.end(), before);
  // id -> index in out: a table when the ids are dense (the profiler numbers
  // its events 1, 2, 3, ...), a hash map otherwise
  long long lo = 0, hi = -1;
  for (std::size_t k = 0; k < ids.size(); ++k) {
    if (k == 0 || ids[k] < lo) lo = ids[k];
    if (k == 0 || ids[k] > hi) hi = ids[k];
  }
  // (the span in unsigned arithmetic: ids at both ends of the range do not overflow it)
  const unsigned long long span = static_cast<unsigned long long>(hi) - static_cast<unsigned long long>(lo);
  const bool dense = !ids.empty() && span < 4 * static_cast<unsigned long long>(ids.size()) + 16;
  constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  std::vector<std::size_t> table(dense ? static_cast<std::size_t>(span + 1) : 0, kNone);
  std::unordered_map<long long, std::size_t> map;
  if (!dense) map.reserve(ev.size());
  auto index_of = [&](long long id) {
    if (dense) return id < lo || id > hi ? kNone : table[static_cast<std::size_t>(static_cast<unsigned long long>(id) - static_cast<unsigned long long>(lo))];
    const auto it = map.find(id);
    return it == map.end() ? kNone : it->second;
  };
  std::vector<TorchTraceEvent> out;
  out.reserve(ev.size());
  std::vector<long long> out_parent;
  out_parent.reserve(ev.size());
  for (std::size_t k : order) {
    if (index_of(ids[k]) != kNone) throw InputError(what + ": event id " + std::to_string(ids[k]) + " appears twice");
    if (dense) table[static_cast<std::size_t>(static_cast<unsigned long long>(ids[k]) - static_cast<unsigned long long>(lo))] = out.size();
    else map.emplace(ids[k], out.size());
    out.push_back(std::move(ev[k]));
    out_parent.push_back(parents[k]);
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out_parent[i] == 0) continue;
    const std::size_t at = index_of(out_parent[i]);
    if (at == kNone) throw InputError(what + ": event " + out[i].name + ": its parent " + std::to_string(out_parent[i]) + " is not in the trace");
    out[i].parent = static_cast<int>(at);
  }
  // depths, each once (a parent may come later in time order only at equal
  // stamps): walk up to the first event whose depth is known, then down the
  // path; linear in the events however deep they nest
  std::vector<char> state(out.size(), 0);  // 0: not yet, 1: on the current path, 2: done
  std::vector<std::size_t> path;
  for (std::size_t i = 0; i < out.size(); ++i) {
    path.clear();
    std::size_t k = i;
    while (state[k] == 0) {
      state[k] = 1;
      path.push_back(k);
      if (out[k].parent < 0) break;
      k = static_cast<std::size_t>(out[k].parent);
    }
    // stopped on an event of this very path that has a parent: a cycle
    if (state[k] == 1 && out[k].parent >= 0) throw InputError(what + ": the events' parents form a cycle");
    int d = state[k] == 2 ? out[k].depth : -1;  // (k on the path: a root, depth 0 below)
    for (auto it = path.rbegin(); it != path.rend(); ++it) {
      if (state[*it] == 2) continue;
      d = out[*it].parent < 0 ? 0 : d + 1;
      out[*it].depth = d;
      state[*it] = 2;
    }
  }
  for (std::size_t i = 0; i < out.size(); ++i) out[i].cls = torch_op_class(out, i);
  return out;
}
}  // namespace

std::vector<TorchDeviceEvent> torch_device_events(const nlohmann::json& trace, const std::vector<TorchTraceEvent>& host, const std::string& what) {
  const nlohmann::json& list = event_list(trace, what);
  std::unordered_map<long long, int> launch;  // correlation id -> the host call
  for (std::size_t k = 0; k < host.size(); ++k)
    if (host[k].correlation >= 0 && (host[k].cat == "cuda_runtime" || host[k].cat == "cuda_driver"))
      launch.emplace(host[k].correlation, static_cast<int>(k));
  std::vector<TorchDeviceEvent> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const auto& j = list[i];
    if (!complete(j)) continue;
    TorchDeviceEvent d;
    read_span(j, i, what, d.name, d.cat, d.ts_us, d.dur_us);
    if (!device_cat(d.cat)) continue;
    const auto pid = j.find("pid"), tid = j.find("tid");
    d.device = arg_int(j, "device", pid != j.end() && pid->is_number_integer() ? pid->get<long long>() : 0);
    d.stream = arg_int(j, "stream", tid != j.end() && tid->is_number_integer() ? tid->get<long long>() : 0);
    d.correlation = arg_int(j, "correlation", -1);
    if (const auto it = launch.find(d.correlation); d.correlation >= 0 && it != launch.end()) d.launch = it->second;
    d.nccl = d.cat == "kernel" && (starts_with(d.name, "ncclKernel") || starts_with(d.name, "ncclDevKernel"));
    out.push_back(std::move(d));
  }
  std::stable_sort(out.begin(), out.end(), [](const TorchDeviceEvent& a, const TorchDeviceEvent& b) { return a.ts_us < b.ts_us; });
  return out;
}

std::vector<TorchProfilerStep> torch_profiler_steps(const nlohmann::json& trace, const std::string& what) {
  const nlohmann::json& list = event_list(trace, what);
  std::vector<TorchProfilerStep> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const auto& j = list[i];
    if (!complete(j)) continue;
    std::string name, cat;
    TorchProfilerStep st;
    read_span(j, i, what, name, cat, st.ts_us, st.dur_us);
    if (!step_mark(name) || device_cat(cat)) continue;  // (a CUDA trace also marks each step on the GPU: gpu_user_annotation)
    const std::string n = name.substr(std::string("ProfilerStep#").size());
    if (n.empty() || n.size() > 18 || n.find_first_not_of("0123456789") != std::string::npos)
      throw InputError(what + ": event " + std::to_string(i) + " (\"" + name + "\"): expected ProfilerStep# and a step number");
    st.number = std::stoll(n);
    out.push_back(st);
  }
  std::stable_sort(out.begin(), out.end(), [](const TorchProfilerStep& a, const TorchProfilerStep& b) { return a.ts_us < b.ts_us; });
  return out;
}

std::map<std::string, int> torch_class_counts(const std::vector<TorchTraceEvent>& events) {
  std::map<std::string, int> n;
  for (const auto& e : events)
    if (!e.cls.empty()) ++n[e.cls];
  return n;
}

}  // namespace ks
