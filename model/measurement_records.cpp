#include "measurement_records.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "kan_model.hpp"
#include "yaml_reader.hpp"

namespace ks {

nlohmann::json read_json_file(const std::string& path, const char* what) {
  // read_input_file refuses directories, devices, pipes and files too large to hold
  const std::string text = read_input_file(path, what);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(path + ": not JSON (" + std::string(e.what()) + "); expected " + what);
  }
}

namespace {

// A JSON value as T, its type and (for integers) its range checked first:
// nlohmann converts a float or an out-of-range integer to int without a
// word (undefined behaviour for a float), and aborts on a missing key.
template <typename T>
T checked(const nlohmann::json& v, const std::string& where) {
  if constexpr (std::is_same_v<T, bool>) {
    if (v.is_boolean()) return v.get<bool>();
    throw InputError(where + ": expected true or false, got " + v.dump());
  } else if constexpr (std::is_integral_v<T>) {
    static_assert(std::is_signed_v<T>);
    if (v.is_number_unsigned()) {
      if (v.get<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<T>::max())) return static_cast<T>(v.get<std::uint64_t>());
    } else if (v.is_number_integer()) {
      const std::int64_t x = v.get<std::int64_t>();
      if (x >= std::numeric_limits<T>::min() && x <= std::numeric_limits<T>::max()) return static_cast<T>(x);
    }
    throw InputError(where + ": expected an integer from " + std::to_string(std::numeric_limits<T>::min()) + " to " +
                     std::to_string(std::numeric_limits<T>::max()) + ", got " + v.dump());
  } else if constexpr (std::is_floating_point_v<T>) {
    if (v.is_number()) return v.get<T>();
    throw InputError(where + ": expected a number, got " + v.dump());
  } else {
    if (v.is_string()) return v.get<T>();
    throw InputError(where + ": expected a string, got " + v.dump());
  }
}

// An optional entry of an object (`fallback` when absent), checked; `at`
// is the key's prefix in messages.
template <typename T>
T value_or(const nlohmann::json& m, const char* key, T fallback, const std::string& path, const std::string& at = "metadata.") {
  if (!m.is_object() || !m.contains(key)) return fallback;
  return checked<T>(m[key], path + ": key '" + at + key + "'");
}

template <typename T>
std::optional<T> optional_value(const nlohmann::json& m, const char* key, const std::string& where) {
  if (!m.is_object() || !m.contains(key)) return std::nullopt;
  return checked<T>(m[key], where + ": key '" + key + "'");
}

// A required entry of row `index`.
template <typename T>
T field(const nlohmann::json& row, const char* key, const std::string& path, std::size_t index) {
  if (!row.is_object() || !row.contains(key)) throw InputError(path + ": row " + std::to_string(index) + " lacks '" + key + "'");
  return checked<T>(row[key], path + ": row " + std::to_string(index) + ": key '" + key + "'");
}

// metadata (or {} when absent)
const nlohmann::json& metadata_of(const nlohmann::json& j) {
  static const nlohmann::json empty = nlohmann::json::object();
  return j.is_object() && j.contains("metadata") ? j["metadata"] : empty;
}

}  // namespace

KernelsFile read_kernels_file(const std::string& path) {
  const auto j = read_json_file(path, "a kanscale measure kernels file");
  if (!j.is_object() || !j.contains("metadata") || !j.contains("rows") || !j["rows"].is_array())
    throw InputError(path + ": not a kanscale measure kernels file (no metadata/rows)");
  const auto& m = j["metadata"];
  KernelsFile f;
  f.path = path;
  f.ranks_per_node = value_or<double>(m, "concurrency_ranks_per_node", 1.0, path);
  f.host = value_or<std::string>(m, "host", "?", path);
  f.cpu_model = value_or<std::string>(m, "cpu_model", "?", path);
  f.date_utc = value_or<std::string>(m, "date_utc", "?", path);
  f.git_hash = value_or<std::string>(m, "git_hash", "?", path);
  f.ranks = value_or<int>(m, "ranks", 1, path);
  if (m.contains("machine")) {
    const auto& mm = m["machine"];
    if (!mm.is_object()) throw InputError(path + ": key 'metadata.machine': expected an object, got " + mm.dump());
    f.machine.cpu_model = value_or<std::string>(mm, "cpu_model", "", path, "metadata.machine.");
    f.machine.cores = value_or<int>(mm, "cores", 0, path, "metadata.machine.");
    f.machine.isa = value_or<std::string>(mm, "isa", "", path, "metadata.machine.");
    f.machine.memory_bytes = value_or<double>(mm, "memory_bytes", 0.0, path, "metadata.machine.");
    f.machine.gpu = value_or<std::string>(mm, "gpu", "", path, "metadata.machine.");
    f.machine.collective_library = value_or<std::string>(mm, "collective_library", "", path, "metadata.machine.");
  }
  if (m.contains("cache_probe_bytes_GBps")) {
    const auto& probe = m["cache_probe_bytes_GBps"];
    if (!probe.is_array()) throw InputError(path + ": key 'metadata.cache_probe_bytes_GBps': expected a list of [bytes, GB/s]");
    for (std::size_t c = 0; c < probe.size(); ++c) {
      if (!probe[c].is_array() || probe[c].size() != 2 || !probe[c][0].is_number() || !probe[c][1].is_number())
        throw InputError(path + ": key 'metadata.cache_probe_bytes_GBps[" + std::to_string(c) + "]': expected [bytes, GB/s], got " +
                         probe[c].dump());
      f.cache_probe.emplace_back(probe[c][0].get<double>(), probe[c][1].get<double>());
    }
  }
  if (m.contains("runtime_memory_bytes")) {
    f.runtime_memory_bytes = value_or<double>(m, "runtime_memory_bytes", 0, path);
    f.runtime_memory_what = value_or<std::string>(m, "runtime_memory_what", "", path);
  }
  if (j.contains("memory")) {
    std::size_t mi = 0;
    for (const auto& r : j["memory"]) {
      KernelMemoryRecord row;
      row.peak_bytes = field<double>(r, "peak_bytes", path, mi);
      row.in = field<std::int64_t>(r, "in", path, mi);
      row.out = field<std::int64_t>(r, "out", path, mi);
      row.grid_size = field<int>(r, "grid_size", path, mi);
      row.spline_order = field<int>(r, "spline_order", path, mi);
      row.batch = field<std::int64_t>(r, "batch", path, mi);
      // the shape goes into the memory model's integer arithmetic: a KAN kanscale could have measured
      if (row.in < 1 || row.out < 1 || row.batch < 1 || row.batch > (std::int64_t{1} << 40) || row.grid_size < 1 ||
          row.spline_order < 1 || row.spline_order > 16 || row.grid_size > (1 << 20) ||
          static_cast<double>(row.in) * static_cast<double>(row.out) * (row.grid_size + row.spline_order + 2) > 1e15)
        throw InputError(path + ": memory[" + std::to_string(mi) + "]: not a shape kanscale measures (batch " + std::to_string(row.batch) +
                         ", in " + std::to_string(row.in) + ", out " + std::to_string(row.out) + ", G " +
                         std::to_string(row.grid_size) + ", k " + std::to_string(row.spline_order) + ")");
      f.memory.push_back(row);
      ++mi;
    }
  }
  std::size_t i = 0;
  for (const auto& r : j["rows"]) {
    KernelRecord row;
    row.op = field<std::string>(r, "op", path, i);
    const auto& classes = kanscale_cost_classes();
    if (std::find(classes.begin(), classes.end(), row.op) == classes.end())
      throw InputError(path + ": row " + std::to_string(i) + ": unknown op '" + row.op + "'");
    row.time_median_s = field<double>(r, "time_median_s", path, i);
    row.flops = field<double>(r, "flops", path, i);
    row.bytes = field<double>(r, "bytes", path, i);
    row.cache = value_or<std::string>(r, "cache", "warm", path, "rows[" + std::to_string(i) + "].");
    if (!(row.time_median_s > 0) || row.flops < 0 || row.bytes < 0)
      throw InputError(path + ": row " + std::to_string(i) + ": times must be positive and counts non-negative");
    if (row.layer()) {
      row.batch = field<double>(r, "batch", path, i);
      row.in = field<double>(r, "in", path, i);
      row.out = field<double>(r, "out", path, i);
      row.grid_size = field<double>(r, "grid_size", path, i);
      row.spline_order = field<double>(r, "spline_order", path, i);
      if (row.cache != "cold") {
        row.unstable = field<bool>(r, "unstable", path, i);
        if (!row.unstable) row.time_cv = field<double>(r, "time_cv", path, i);
      }
    }
    f.rows.push_back(row);
    ++i;
  }
  return f;
}

nlohmann::json machine_json(const Machine& m) {
  return {{"cpu_model", m.cpu_model}, {"cores", m.cores}, {"isa", m.isa}, {"memory_bytes", m.memory_bytes}, {"gpu", m.gpu},
          {"collective_library", m.collective_library}};
}

KernelsFile read_runtime_memory_file(const std::string& path) {
  const auto j = read_json_file(path, "a kanscale measure kernels file");
  if (!j.is_object() || !j.contains("metadata") || !j["metadata"].contains("runtime_memory_bytes"))
    throw InputError(path + ": not a kanscale measure kernels file with runtime_memory_bytes");
  const auto& m = j["metadata"];
  KernelsFile f;
  f.path = path;
  f.ranks_per_node = value_or<double>(m, "concurrency_ranks_per_node", 1.0, path);
  f.runtime_memory_bytes = value_or<double>(m, "runtime_memory_bytes", 0, path);
  if (m.contains("runtime_memory_what")) f.runtime_memory_what = value_or<std::string>(m, "runtime_memory_what", "", path);
  return f;
}

CollectiveSweepFile read_collective_sweep_file(const std::string& path) {
  const auto j = read_json_file(path, "a kanscale measure allreduce or broadcast file");
  CollectiveSweepFile f;
  f.path = path;
  f.has_metadata = j.is_object() && j.contains("metadata");
  const auto& m = metadata_of(j);
  f.backend = value_or<std::string>(m, "backend", "mpi", path);
  f.op = value_or<std::string>(m, "op", "", path);
  f.library = value_or<std::string>(m, "library", "?", path);
  f.date_utc = value_or<std::string>(m, "date_utc", "?", path);
  if (m.contains("ranks")) f.ranks = value_or<int>(m, "ranks", 0, path);
  f.nonblocking = value_or<bool>(m, "nonblocking", false, path);
  if (m.contains("hosts")) {
    const auto& hs = m["hosts"];
    if (!hs.is_array()) throw InputError(path + ": key 'metadata.hosts': expected a list of host names, got " + hs.dump());
    for (std::size_t h = 0; h < hs.size(); ++h) f.hosts.push_back(checked<std::string>(hs[h], path + ": key 'metadata.hosts[" + std::to_string(h) + "]'"));
  }
  f.has_points = j.is_object() && j.contains("points");
  if (!f.has_points) return f;
  std::size_t i = 0;
  for (const auto& p : j["points"]) {
    CollectivePoint pt;
    pt.size_bytes = field<double>(p, "size_bytes", path, i);
    auto timing = [&](const char* key) -> std::optional<CollectiveTiming> {
      if (!p.contains(key)) return std::nullopt;
      const auto& t = p[key];
      const std::string where = path + ": row " + std::to_string(i);
      CollectiveTiming c;
      c.time_us = optional_value<double>(t, "time_us", where);
      c.busbw_GBps = optional_value<double>(t, "busbw_GBps", where);
      c.launch_us = optional_value<double>(t, "launch_us", where);
      c.wrong = optional_value<std::int64_t>(t, "wrong", where);
      return c;
    };
    pt.out_of_place = timing("out_of_place");
    pt.in_place = timing("in_place");
    f.points.push_back(pt);
    ++i;
  }
  return f;
}

nlohmann::json to_json(const TrainSummary& s) {
  auto mp = [](const TrainSummary::MedianP95& m) { return nlohmann::json{{"median", m.median}, {"p95", m.p95}}; };
  return {{"iteration_time_s", mp(s.iteration_s)},
          {"compute_time_s", mp(s.compute_s)},
          {"communication_time_s", mp(s.communication_s)},
          {"exposed_communication_s", mp(s.exposed_communication_s)},
          {"samples_per_s", s.samples_per_s},
          {"peak_rss_bytes", s.peak_rss_bytes},
          {"peak_device_bytes", s.peak_device_bytes ? nlohmann::json(*s.peak_device_bytes) : nlohmann::json(nullptr)},
          {"final_loss", s.final_loss},
          {"steps", s.steps},
          {"interrupted", s.interrupted},
          {"bucket_communication_s", s.bucket_communication_s}};
}

TrainSummary train_summary_from_json(const nlohmann::json& j, const std::string& path) {
  if (!j.is_object()) throw InputError(path + ": key 'summary': expected an object");
  auto need = [&](const char* key) -> const nlohmann::json& {
    if (!j.contains(key)) throw InputError(path + ": key 'summary." + std::string(key) + "': missing");
    return j[key];
  };
  auto mp = [&](const char* key) {
    const auto& m = need(key);
    const std::string at = std::string("summary.") + key + ".";
    return TrainSummary::MedianP95{value_or<double>(m, "median", 0.0, path, at), value_or<double>(m, "p95", 0.0, path, at)};
  };
  TrainSummary s;
  s.iteration_s = mp("iteration_time_s");
  s.compute_s = mp("compute_time_s");
  s.communication_s = mp("communication_time_s");
  s.exposed_communication_s = mp("exposed_communication_s");
  s.samples_per_s = checked<double>(need("samples_per_s"), path + ": key 'summary.samples_per_s'");
  s.peak_rss_bytes = value_or<double>(j, "peak_rss_bytes", 0.0, path, "summary.");
  if (j.contains("peak_device_bytes") && !j["peak_device_bytes"].is_null())
    s.peak_device_bytes = checked<double>(j["peak_device_bytes"], path + ": key 'summary.peak_device_bytes'");
  if (j.contains("final_loss") && !j["final_loss"].is_null()) s.final_loss = value_or<double>(j, "final_loss", 0.0, path, "summary.");
  s.steps = value_or<std::int64_t>(j, "steps", 0, path, "summary.");
  s.interrupted = value_or<bool>(j, "interrupted", false, path, "summary.");
  if (j.contains("bucket_communication_s")) {
    const auto& b = j["bucket_communication_s"];
    if (!b.is_array()) throw InputError(path + ": key 'summary.bucket_communication_s': expected a list of seconds");
    for (std::size_t i = 0; i < b.size(); ++i)
      s.bucket_communication_s.push_back(checked<double>(b[i], path + ": key 'summary.bucket_communication_s[" + std::to_string(i) + "]'"));
  }
  return s;
}

InterferenceFile read_interference_file(const std::string& path) {
  const auto j = read_json_file(path, "a kanscale bench interference file");
  if (!j.is_object() || !j.contains("interference_per_collective_second_mean"))
    throw InputError(path + ": lacks 'interference_per_collective_second_mean' (measured by an older kanscale?)");
  // the file's top level holds what a kernels file keeps under metadata
  InterferenceFile f;
  f.path = path;
  f.per_collective_second = value_or<double>(j, "interference_per_collective_second_mean", 0, path, "");
  f.allreduce_bytes = value_or<double>(j, "allreduce_bytes", 0, path, "");
  f.ranks = value_or<int>(j, "ranks", 1, path, "");
  if (j.contains("inflight_memory_bytes_max")) f.inflight_memory_bytes_max = value_or<double>(j, "inflight_memory_bytes_max", 0, path, "");
  return f;
}

}  // namespace ks
