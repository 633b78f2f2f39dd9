#include "trace.hpp"

namespace ks {

nlohmann::json to_json(const TraceSlice& s) {
  return {{"rank", s.rank}, {"track", s.track}, {"iteration", s.iteration}, {"name", s.name},
          {"cat", s.category}, {"t0_s", s.t0_s}, {"t1_s", s.t1_s}, {"bytes", s.bytes}};
}

TraceSlice trace_slice_from_json(const nlohmann::json& j) {
  TraceSlice s;
  s.rank = j.at("rank").get<int>();
  s.track = j.at("track").get<int>();
  s.iteration = j.at("iteration").get<std::int64_t>();
  s.name = j.at("name").get<std::string>();
  s.category = j.at("cat").get<std::string>();
  s.t0_s = j.at("t0_s").get<double>();
  s.t1_s = j.at("t1_s").get<double>();
  s.bytes = j.at("bytes").get<double>();
  return s;
}

void ChromeTrace::add_process(int pid, const std::string& name) {
  events_.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"args", {{"name", name}}}});
  events_.push_back({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", pid}, {"args", {{"sort_index", pid}}}});
  events_.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", pid}, {"tid", 0}, {"args", {{"name", "compute"}}}});
  events_.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", pid}, {"tid", 1}, {"args", {{"name", "communication"}}}});
}

void ChromeTrace::add(int pid, const TraceSlice& s) {
  nlohmann::json e = {{"ph", "X"},
                      {"name", s.name},
                      {"cat", s.category},
                      {"pid", pid},
                      {"tid", s.track},
                      {"ts", s.t0_s * 1e6},
                      {"dur", (s.t1_s - s.t0_s) * 1e6},
                      {"args", {{"iteration", s.iteration}}}};
  if (s.track == 1) e["args"]["bytes"] = s.bytes;
  events_.push_back(std::move(e));
}

nlohmann::json ChromeTrace::json(const nlohmann::json& other_data) const {
  nlohmann::json j = {{"traceEvents", events_}, {"displayTimeUnit", "ms"}};
  if (!other_data.is_null()) j["otherData"] = other_data;
  return j;
}

std::vector<TraceSlice> read_trace_slices(const nlohmann::json& trace) {
  std::vector<TraceSlice> v;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") != "X") continue;
    TraceSlice s;
    s.rank = e.at("pid").get<int>();
    s.track = e.at("tid").get<int>();
    const auto& args = e.at("args");
    s.iteration = args.at("iteration").get<std::int64_t>();
    if (args.contains("bytes")) s.bytes = args["bytes"].get<double>();
    s.name = e.at("name").get<std::string>();
    s.category = e.at("cat").get<std::string>();
    s.t0_s = e.at("ts").get<double>() * 1e-6;
    s.t1_s = s.t0_s + e.at("dur").get<double>() * 1e-6;
    v.push_back(std::move(s));
  }
  return v;
}

}  // namespace ks
