#pragma once
// The timeline of an iteration as Chrome trace-event JSON (Perfetto,
// chrome://tracing): one type for a timed slice and one writer, used by the
// simulator's traces (sim/report) and the live trainer's (measure/), so a
// live timeline and a simulated one have the same tracks, names and
// arguments. One process per rank, two threads in it: 0 compute, 1
// communication; times in seconds here, microseconds in the file.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ks {

struct TraceSlice {
  int rank = 0;
  int track = 0;  // 0 compute, 1 communication
  std::int64_t iteration = 0;
  std::string name;
  std::string category;
  double t0_s = 0, t1_s = 0;
  double bytes = 0;  // communication slices: the message; written for track 1 only
};

// The slice as named JSON fields (the trainer sends its slices to rank 0
// this way) and back; from_json throws nlohmann's error on a missing field.
nlohmann::json to_json(const TraceSlice& s);
TraceSlice trace_slice_from_json(const nlohmann::json& j);

class ChromeTrace {
 public:
  // A rank's process: its name and its two named tracks.
  void add_process(int pid, const std::string& name);
  // A slice on process `pid` (the rank's, possibly offset when one file
  // holds several runs).
  void add(int pid, const TraceSlice& s);
  // The whole file; `other_data` (provenance) is written when not null.
  nlohmann::json json(const nlohmann::json& other_data = nullptr) const;

 private:
  nlohmann::json events_ = nlohmann::json::array();
};

// The complete slices ("ph": "X") of a trace written by ChromeTrace, with
// the process id as the rank (a trainer's trace: pid is the rank).
std::vector<TraceSlice> read_trace_slices(const nlohmann::json& trace);

}  // namespace ks
