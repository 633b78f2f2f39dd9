#include "measurement_records.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <type_traits>

#include "model/kan_model.hpp"
#include "model/limits.hpp"
#include "nccl_tests_log.hpp"
#include "provenance.hpp"
#include "yaml_reader.hpp"

namespace ks {

// nlohmann's message without its "[json.exception.KIND.N] " tag
std::string json_message(const std::exception& e) {
  std::string m = e.what();
  if (m.compare(0, 16, "[json.exception.") == 0) {
    const auto close = m.find("] ");
    if (close != std::string::npos) m = m.substr(close + 2);
  }
  return m;
}

nlohmann::json read_json_file(const std::string& path, const char* what) {
  // read_input_file refuses directories, devices, pipes and files too large to hold
  const std::string text = read_input_file(path, what);
  // kanscale's files and torch.profiler's traces nest a few levels: a deeply
  // nested document is refused before the library (whose copies and
  // destruction recurse: 100,000 levels overflowed the stack)
  constexpr int kMaxDepth = 256;
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxDepth)
        throw InputError(path + ": JSON nested more than " + std::to_string(kMaxDepth) + " levels deep (at byte " + std::to_string(i) +
                         "); expected " + what);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(path + ": not JSON (" + json_message(e) + "); expected " + what);
  } catch (const nlohmann::json::exception& e) {  // out_of_range.406: a number beyond a double (1e999)
    throw InputError(path + ": a number beyond the range of a double (" + json_message(e) + "); expected " + what);
  }
}

namespace {

// What a measurement file's numbers may be, by the key that holds them (one
// place for every reader below): a time (a key ending in _s or _us, seconds
// or microseconds) is finite, not negative, below a year (model/limits.hpp)
// and, unless 0, at least a picosecond, except a spread (a key ending in
// _iqr_s: the repetitions' interquartile range of a time per call, which
// the workbench averages over many calls); a byte count (a key ending in
// _bytes or _bytes_max, or "bytes") is 0 to 2^60; a shape's batch, in, out,
// grid_size and spline_order are within the workload's ranges. Above those
// a value is a unit slip or a corrupted file, and it would carry into every
// fit and percentage.
std::string leaf_key(const std::string& where) {
  const auto q = where.rfind('\'');
  const auto p = q == std::string::npos || q == 0 ? std::string::npos : where.rfind('\'', q - 1);
  if (p == std::string::npos) return "";
  std::string key = where.substr(p + 1, q - p - 1);
  // summary.iteration_time_s.median, bucket_communication_s[3]: the quantity is the key before
  for (const char* tail : {".median", ".p95", ".min", ".max", ".mean"})
    if (key.size() > std::strlen(tail) && key.compare(key.size() - std::strlen(tail), std::strlen(tail), tail) == 0)
      key.erase(key.size() - std::strlen(tail));
  if (!key.empty() && key.back() == ']' && key.rfind('[') != std::string::npos) key.erase(key.rfind('['));
  if (const auto dot = key.rfind('.'); dot != std::string::npos) key = key.substr(dot + 1);
  return key;
}

bool ends_with(const std::string& key, const char* e) {
  const std::size_t n = std::strlen(e);
  return key.size() >= n && key.compare(key.size() - n, n, e) == 0;
}

void check_measured_value(double x, const std::string& where) {
  const std::string key = leaf_key(where);
  if (key.empty()) return;
  char buf[64];
  const double unit = ends_with(key, "_us") ? 1e-6 : ends_with(key, "_s") && !ends_with(key, "per_s") ? 1.0 : 0.0;
  if (unit > 0) {
    const bool spread = ends_with(key, "_iqr_s");
    if (!std::isfinite(x) || x < 0 || x * unit > kMaxMeasuredS || (x != 0 && x * unit < 1e-12 && !spread)) {
      std::snprintf(buf, sizeof buf, "%g%s", x, unit == 1 ? " s" : " us");
      throw InputError(where + ": a measured time of " + buf + "; expected a time of 0 or from a picosecond to a year");
    }
    return;
  }
  if (key == "bytes" || ends_with(key, "_bytes") || ends_with(key, "_bytes_max")) {
    if (!(x >= 0 && x <= 1152921504606846976.0)) {
      std::snprintf(buf, sizeof buf, "%g", x);
      throw InputError(where + ": " + buf + " bytes; expected 0 to 2^60");
    }
    return;
  }
  struct Range {
    const char* key;
    double lo, hi;
  };
  static const Range shape[] = {{"batch", 1, static_cast<double>(kMaxBatch)},
                                {"in", 1, 2147483647.0},
                                {"out", 1, 2147483647.0},
                                {"grid_size", 1, static_cast<double>(kMaxGridSize)},
                                {"spline_order", 1, static_cast<double>(kMaxSplineOrder)}};
  for (const auto& r : shape)
    if (key == r.key && !(x >= r.lo && x <= r.hi)) {
      std::snprintf(buf, sizeof buf, "%g; expected %g to %g", x, r.lo, r.hi);
      throw InputError(where + ": " + buf);
    }
}

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
      if (v.get<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<T>::max())) {
        check_measured_value(static_cast<double>(v.get<std::uint64_t>()), where);
        return static_cast<T>(v.get<std::uint64_t>());
      }
    } else if (v.is_number_integer()) {
      const std::int64_t x = v.get<std::int64_t>();
      if (x >= std::numeric_limits<T>::min() && x <= std::numeric_limits<T>::max()) {
        check_measured_value(static_cast<double>(x), where);
        return static_cast<T>(x);
      }
    }
    throw InputError(where + ": expected an integer from " + std::to_string(std::numeric_limits<T>::min()) + " to " +
                     std::to_string(std::numeric_limits<T>::max()) + ", got " + v.dump());
  } else if constexpr (std::is_floating_point_v<T>) {
    if (v.is_number()) {
      const T x = v.get<T>();
      check_measured_value(static_cast<double>(x), where);
      return x;
    }
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
  if (!m.is_object()) throw InputError(path + ": key '" + at.substr(0, at.size() - 1) + "': expected an object, got " + m.type_name());
  if (!m.contains(key)) return fallback;
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

namespace {
// obj[name] as T into `out` when present; absent: an InputError when
// required ("missing; expected ..."), else `out` keeps its default.
template <typename T>
void entry(const nlohmann::json& obj, const char* name, bool required, T& out, const std::string& path, const std::string& at) {
  const std::string key = path + ": key '" + at + "." + name + "'";
  if (!obj.contains(name)) {
    if (!required) return;
    const char* expected = std::is_same_v<T, bool>           ? "true or false"
                           : std::is_integral_v<T>           ? "an integer"
                           : std::is_floating_point_v<T>     ? "a number"
                                                             : "a string";
    throw InputError(key + ": missing; expected " + expected);
  }
  out = checked<T>(obj[name], key);
}

// The shape (batch, in, out, grid_size, spline_order) both kernel records carry.
template <typename Record>
void shape_entries(const nlohmann::json& j, bool required, Record& r, const std::string& path, const std::string& at) {
  entry(j, "batch", required, r.batch, path, at);
  entry(j, "in", required, r.in, path, at);
  entry(j, "out", required, r.out, path, at);
  entry(j, "grid_size", required, r.grid_size, path, at);
  entry(j, "spline_order", required, r.spline_order, path, at);
}
}  // namespace

nlohmann::json to_json(const KernelRecord& r) {
  return {{"op", r.op},
          {"batch", r.batch},
          {"in", r.in},
          {"out", r.out},
          {"grid_size", r.grid_size},
          {"spline_order", r.spline_order},
          {"detail", r.detail},
          {"flops", r.flops},
          {"bytes", r.bytes},
          {"time_median_s", r.time_median_s},
          {"time_iqr_s", r.time_iqr_s},
          {"time_cv", r.time_cv},
          {"unstable", r.unstable},
          {"workspace_bytes", r.workspace_bytes},
          {"cache", r.cache},
          {"samples", r.samples},
          {"rank", r.rank}};
}

KernelRecord kernel_record_from_json(const nlohmann::json& j, const std::string& path, std::size_t index, bool complete) {
  const std::string at = "rows[" + std::to_string(index) + "]";
  if (!j.is_object()) throw InputError(path + ": key '" + at + "': expected an object, got " + j.dump());
  KernelRecord r;
  entry(j, "op", true, r.op, path, at);
  entry(j, "time_median_s", true, r.time_median_s, path, at);
  entry(j, "flops", true, r.flops, path, at);
  entry(j, "bytes", true, r.bytes, path, at);
  entry(j, "cache", false, r.cache, path, at);
  shape_entries(j, complete || r.layer(), r, path, at);
  entry(j, "unstable", complete || (r.layer() && r.cache != "cold"), r.unstable, path, at);
  entry(j, "time_cv", complete || (r.layer() && r.cache != "cold" && !r.unstable), r.time_cv, path, at);
  entry(j, "detail", complete, r.detail, path, at);
  entry(j, "time_iqr_s", complete, r.time_iqr_s, path, at);
  entry(j, "workspace_bytes", complete, r.workspace_bytes, path, at);
  entry(j, "rank", complete, r.rank, path, at);
  entry(j, "samples", false, r.samples, path, at);  // (files from before it was recorded have none)
  if (r.rank < 0) throw InputError(path + ": key '" + at + ".rank': expected a rank from 0, got " + std::to_string(r.rank));
  if (r.samples < 0) throw InputError(path + ": key '" + at + ".samples': expected a count from 0, got " + std::to_string(r.samples));
  return r;
}

nlohmann::json to_json(const KernelMemoryRecord& r) {
  return {{"batch", r.batch}, {"in", r.in},           {"out", r.out},  {"grid_size", r.grid_size},
          {"spline_order", r.spline_order}, {"peak_bytes", r.peak_bytes}, {"rank", r.rank}};
}

KernelMemoryRecord kernel_memory_from_json(const nlohmann::json& j, const std::string& path, std::size_t index, bool complete) {
  const std::string at = "memory[" + std::to_string(index) + "]";
  if (!j.is_object()) throw InputError(path + ": key '" + at + "': expected an object, got " + j.dump());
  KernelMemoryRecord r;
  entry(j, "peak_bytes", true, r.peak_bytes, path, at);
  shape_entries(j, true, r, path, at);
  entry(j, "rank", complete, r.rank, path, at);
  // the shape goes into the memory model's integer arithmetic: a KAN kanscale could have measured
  if (r.in < 1 || r.out < 1 || r.batch < 1 || r.batch > (std::int64_t{1} << 40) || r.grid_size < 1 || r.spline_order < 1 ||
      r.spline_order > 16 || r.grid_size > (1 << 20) ||
      static_cast<double>(r.in) * static_cast<double>(r.out) * (r.grid_size + r.spline_order + 2) > 1e15)
    throw InputError(path + ": key '" + at + "': not a shape kanscale measures (batch " + std::to_string(r.batch) + ", in " +
                     std::to_string(r.in) + ", out " + std::to_string(r.out) + ", G " + std::to_string(r.grid_size) + ", k " +
                     std::to_string(r.spline_order) + ")");
  return r;
}

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
  const auto& pv = provenance_of(m);
  const std::string pv_at = &pv == &m ? "metadata." : "metadata.provenance.";
  f.date_utc = value_or<std::string>(pv, "date_utc", "?", path, pv_at);
  f.git_hash = value_or<std::string>(pv, "git_hash", "?", path, pv_at);
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
    if (!j["memory"].is_array()) throw InputError(path + ": key 'memory': expected a list, got " + j["memory"].dump());
    for (std::size_t i = 0; i < j["memory"].size(); ++i) f.memory.push_back(kernel_memory_from_json(j["memory"][i], path, i, false));
  }
  const auto& classes = kanscale_cost_classes();
  if (j["rows"].empty()) throw InputError(path + ": key 'rows': an empty list; expected the measured kernels (kanscale measure kernels)");
  for (std::size_t i = 0; i < j["rows"].size(); ++i) {
    KernelRecord row = kernel_record_from_json(j["rows"][i], path, i, false);
    const std::string at = path + ": key 'rows[" + std::to_string(i) + "]";
    if (std::find(classes.begin(), classes.end(), row.op) == classes.end()) throw InputError(at + ".op': unknown op '" + row.op + "'");
    if (!(row.time_median_s > 0) || row.flops < 0 || row.bytes < 0)
      throw InputError(at + "': times must be positive and counts non-negative");
    f.rows.push_back(std::move(row));
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

nlohmann::json to_json(const CollectivePoint& p) {
  nlohmann::json j = {{"size_bytes", p.size_bytes}, {"type", p.type}, {"redop", p.redop}, {"root", p.root}};
  if (p.count) j["count"] = *p.count;
  auto side = [](const CollectiveTiming& t) {
    nlohmann::json s = nlohmann::json::object();
    if (t.time_us) s["time_us"] = *t.time_us;
    if (t.algbw_GBps) s["algbw_GBps"] = *t.algbw_GBps;
    if (t.busbw_GBps) s["busbw_GBps"] = *t.busbw_GBps;
    if (t.wrong) s["wrong"] = *t.wrong;
    if (t.launch_us) s["launch_us"] = *t.launch_us;
    return s;
  };
  if (p.out_of_place) j["out_of_place"] = side(*p.out_of_place);
  if (p.in_place) j["in_place"] = side(*p.in_place);
  return j;
}

CollectivePoint collective_point_from_json(const nlohmann::json& p, const std::string& path, std::size_t index, bool complete) {
  const std::string at = "points[" + std::to_string(index) + "]";
  if (!p.is_object()) throw InputError(path + ": key '" + at + "': expected an object, got " + p.dump());
  // an entry of `obj` at `key`: absent is an error when required
  auto entry = [&](const nlohmann::json& obj, const std::string& key, const char* name, bool required,
                   const char* expected) -> const nlohmann::json* {
    if (obj.contains(name)) return &obj[name];
    if (required) throw InputError(path + ": key '" + key + "." + name + "': missing; expected " + expected);
    return nullptr;
  };
  CollectivePoint pt;
  pt.size_bytes = checked<double>(*entry(p, at, "size_bytes", true, "a number"), path + ": key '" + at + ".size_bytes'");
  if (const auto* v = entry(p, at, "count", complete, "an integer")) pt.count = checked<std::int64_t>(*v, path + ": key '" + at + ".count'");
  if (const auto* v = entry(p, at, "type", false, "")) pt.type = checked<std::string>(*v, path + ": key '" + at + ".type'");
  if (const auto* v = entry(p, at, "redop", false, "")) pt.redop = checked<std::string>(*v, path + ": key '" + at + ".redop'");
  if (const auto* v = entry(p, at, "root", false, "")) pt.root = checked<int>(*v, path + ": key '" + at + ".root'");
  for (const char* name : {"out_of_place", "in_place"}) {
    const nlohmann::json* side = entry(p, at, name, complete, "an object");
    if (!side) continue;
    const std::string key = at + "." + name;
    if (!side->is_object()) throw InputError(path + ": key '" + key + "': expected an object, got " + side->dump());
    CollectiveTiming t;
    auto number = [&](const char* f, bool required) -> std::optional<double> {
      if (const auto* v = entry(*side, key, f, required, "a number")) return checked<double>(*v, path + ": key '" + key + "." + f + "'");
      return std::nullopt;
    };
    t.time_us = number("time_us", complete);
    t.algbw_GBps = number("algbw_GBps", complete);
    t.busbw_GBps = number("busbw_GBps", complete);
    t.launch_us = number("launch_us", false);
    if (const auto* v = entry(*side, key, "wrong", complete, "an integer"))
      t.wrong = checked<std::int64_t>(*v, path + ": key '" + key + ".wrong'");
    (std::string(name) == "out_of_place" ? pt.out_of_place : pt.in_place) = t;
  }
  return pt;
}

CollectiveSweepFile read_collective_sweep_file(const std::string& path) {
  const auto j = read_json_file(path, "a kanscale measure allreduce or broadcast file");
  CollectiveSweepFile f;
  f.path = path;
  f.has_metadata = j.is_object() && j.contains("metadata");
  const auto& m = metadata_of(j);
  f.backend = value_or<std::string>(m, "backend", "mpi", path);
  f.op = value_or<std::string>(m, "op", "", path);
  // the names measure allreduce|broadcast writes (measure/collective_sweep's table)
  static const std::pair<const char*, SweptCollective> kOps[] = {{"allreduce", SweptCollective::allreduce},
                                                                 {"broadcast", SweptCollective::broadcast}};
  for (const auto& [name, kind] : kOps)
    if (f.op == name) f.collective = kind;
  f.library = value_or<std::string>(m, "library", "?", path);
  const auto& pv = provenance_of(m);
  f.date_utc = value_or<std::string>(pv, "date_utc", "?", path, &pv == &m ? "metadata." : "metadata.provenance.");
  if (m.contains("ranks")) f.ranks = value_or<int>(m, "ranks", 0, path);
  f.nonblocking = value_or<bool>(m, "nonblocking", false, path);
  if (m.contains("hosts")) {
    const auto& hs = m["hosts"];
    if (!hs.is_array()) throw InputError(path + ": key 'metadata.hosts': expected a list of host names, got " + hs.dump());
    for (std::size_t h = 0; h < hs.size(); ++h) f.hosts.push_back(checked<std::string>(hs[h], path + ": key 'metadata.hosts[" + std::to_string(h) + "]'"));
  }
  f.has_points = j.is_object() && j.contains("points");
  if (!f.has_points) return f;
  if (!j["points"].is_array()) throw InputError(path + ": key 'points': expected a list, got " + j["points"].dump());
  for (std::size_t i = 0; i < j["points"].size(); ++i) f.points.push_back(collective_point_from_json(j["points"][i], path, i, false));
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
          {"bucket_communication_s", s.bucket_communication_s},
          {"epoch_fixed_s", s.epoch_fixed_s ? nlohmann::json(*s.epoch_fixed_s) : nlohmann::json(nullptr)},
          {"ops", [&] {
             nlohmann::json a = nlohmann::json::array();
             for (const auto& [name, t] : s.op_s) a.push_back({{"op", name}, {"median_s", t}});
             return a;
           }()}};
}

TrainSummary train_summary_from_json(const nlohmann::json& j, const std::string& path) {
  if (!j.is_object()) throw InputError(path + ": key 'summary': expected an object");
  auto need = [&](const char* key) -> const nlohmann::json& {
    if (!j.contains(key)) throw InputError(path + ": key 'summary." + std::string(key) + "': missing");
    return j[key];
  };
  // nulls (a PyTorch run's compute/communication split, which torch does not
  // expose) read as NaN: not measured
  auto mp = [&](const char* key) {
    const auto& m = need(key);
    const std::string at = std::string("summary.") + key + ".";
    if (!m.is_object()) throw InputError(path + ": key '" + at.substr(0, at.size() - 1) + "': expected {median, p95}");
    auto one = [&](const char* k) {
      if (m.contains(k) && m[k].is_null()) return std::numeric_limits<double>::quiet_NaN();
      return value_or<double>(m, k, 0.0, path, at);
    };
    return TrainSummary::MedianP95{one("median"), one("p95")};
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
  if (j.contains("epoch_fixed_s") && !j["epoch_fixed_s"].is_null())
    s.epoch_fixed_s = checked<double>(j["epoch_fixed_s"], path + ": key 'summary.epoch_fixed_s'");
  if (j.contains("ops")) {  // absent in files from before it was recorded
    const auto& a = j["ops"];
    if (!a.is_array()) throw InputError(path + ": key 'summary.ops': expected a list of {op, median_s}");
    for (std::size_t i = 0; i < a.size(); ++i) {
      const std::string at = path + ": key 'summary.ops[" + std::to_string(i) + "]";
      if (!a[i].is_object() || !a[i].contains("op") || !a[i].contains("median_s"))
        throw InputError(at + "': expected {op, median_s}");
      const double t = checked<double>(a[i]["median_s"], at + ".median_s'");
      if (!(t >= 0)) throw InputError(at + ".median_s': expected seconds >= 0");
      s.op_s.emplace_back(checked<std::string>(a[i]["op"], at + ".op'"), t);
    }
  }
  return s;
}

nlohmann::json to_json(const InterferenceFile& f) {
  nlohmann::json j = {{"command_line", f.command_line},
                      {"ranks", f.ranks},
                      {"threads_per_rank", f.threads_per_rank},
                      {"allreduce_bytes", f.allreduce_bytes},
                      {"alone_s", f.alone_s},
                      {"with_communication_s", f.with_communication_s},
                      {"interference_rank0", f.interference_rank0},
                      {"interference_mean", f.interference_mean},
                      {"interference_max", f.interference_max},
                      {"allreduce_alone_s", f.allreduce_alone_s},
                      {"interference_per_collective_second_mean", f.per_collective_second}};
  if (f.inflight_memory_bytes_max) j["inflight_memory_bytes_max"] = *f.inflight_memory_bytes_max;
  return j;
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
  f.command_line = value_or<std::string>(j, "command_line", "", path, "");
  f.threads_per_rank = value_or<int>(j, "threads_per_rank", 1, path, "");
  f.alone_s = value_or<double>(j, "alone_s", 0, path, "");
  f.with_communication_s = value_or<double>(j, "with_communication_s", 0, path, "");
  f.interference_rank0 = value_or<double>(j, "interference_rank0", 0, path, "");
  f.interference_mean = value_or<double>(j, "interference_mean", 0, path, "");
  f.interference_max = value_or<double>(j, "interference_max", 0, path, "");
  f.allreduce_alone_s = value_or<double>(j, "allreduce_alone_s", 0, path, "");
  if (j.contains("inflight_memory_bytes_max")) f.inflight_memory_bytes_max = value_or<double>(j, "inflight_memory_bytes_max", 0, path, "");
  return f;
}

nlohmann::json to_json(const ProgressFile& f) {
  nlohmann::json pts = nlohmann::json::array();
  for (const auto& p : f.points)
    pts.push_back({{"bytes", p.bytes},
                   {"alone_s", p.alone_s},
                   {"poll_interval_s", p.poll_interval_s},
                   {"compute_s", p.compute_s},
                   {"wait_s", p.wait_s},
                   {"compute_alone_s", p.compute_alone_s}});
  return {{"command_line", f.command_line}, {"ranks", f.ranks}, {"mpi_library", f.mpi_library}, {"cpu_model", f.cpu_model},
          {"date_utc", f.date_utc}, {"points", pts}};
}

ProgressFile read_progress_file(const std::string& path) {
  const auto j = read_json_file(path, "a kanscale bench progress file");
  if (!j.is_object() || !j.contains("points") || !j["points"].is_array())
    throw InputError(path + ": lacks the list 'points' (not a kanscale bench progress file?)");
  ProgressFile f;
  f.path = path;
  f.command_line = value_or<std::string>(j, "command_line", "", path, "");
  f.ranks = value_or<int>(j, "ranks", 1, path, "");
  f.mpi_library = value_or<std::string>(j, "mpi_library", "", path, "");
  f.cpu_model = value_or<std::string>(j, "cpu_model", "", path, "");
  f.date_utc = value_or<std::string>(j, "date_utc", "", path, "");
  const auto& a = j["points"];
  if (a.size() > 200) throw InputError(path + ": key 'points': at most 200 (bench progress writes sizes x poll intervals), got " + std::to_string(a.size()));
  for (std::size_t i = 0; i < a.size(); ++i) {
    ProgressPoint p;
    p.bytes = field<double>(a[i], "bytes", path, i);
    p.alone_s = field<double>(a[i], "alone_s", path, i);
    p.poll_interval_s = field<double>(a[i], "poll_interval_s", path, i);
    p.compute_s = field<double>(a[i], "compute_s", path, i);
    p.wait_s = field<double>(a[i], "wait_s", path, i);
    p.compute_alone_s = a[i].is_object() && a[i].contains("compute_alone_s") ? field<double>(a[i], "compute_alone_s", path, i) : 0.0;
    const std::string row = path + ": row " + std::to_string(i) + ": ";
    if (!(p.bytes > 0 && p.bytes <= 1099511627776.0))
      throw InputError(row + "key 'bytes': expected a size from 1 B to 1 TiB, got " + std::to_string(p.bytes));
    for (const auto& [key, v] : {std::pair<const char*, double>{"alone_s", p.alone_s}, {"poll_interval_s", p.poll_interval_s},
                                 {"compute_s", p.compute_s}, {"wait_s", p.wait_s},
                                 {"compute_alone_s", p.compute_alone_s}})
      if (!(v >= 0) || !std::isfinite(v)) throw InputError(row + "key '" + key + "': expected a non-negative time in seconds, got " + std::to_string(v));
    f.points.push_back(p);
  }
  return f;
}

std::string TorchOpsFile::fingerprint() const {
  const std::string lib = blas.substr(blas.rfind('/') + 1);
  return "torch " + torch + ", " + lib + ", Python " + python + ", " + std::to_string(threads) + (threads == 1 ? " thread" : " threads");
}

TorchOpsFile read_torch_ops_file(const std::string& path) {
  const auto j = read_json_file(path, "a kanscale measure torch-ops file");
  const auto& m = metadata_of(j);
  if (value_or<std::string>(m, "op", "", path) != "torch_ops" || !j.contains("records") || !j["records"].is_array())
    throw InputError(path + ": not a kanscale measure torch-ops file (expected metadata.op \"torch_ops\" and a list 'records')");
  TorchOpsFile f;
  f.path = path;
  f.torch = value_or<std::string>(m, "torch", "?", path);
  f.blas = value_or<std::string>(m, "blas", "?", path);
  f.python = value_or<std::string>(m, "python", "?", path);
  f.threads = value_or<int>(m, "threads", 1, path);
  if (f.threads < 1 || f.threads > 4096) throw InputError(path + ": key 'metadata.threads': expected 1 to 4096, got " + std::to_string(f.threads));
  if (m.contains("machine")) {
    const auto& mm = m["machine"];
    f.machine.cpu_model = value_or<std::string>(mm, "cpu_model", "", path, "metadata.machine.");
    f.machine.cores = value_or<int>(mm, "cores", 0, path, "metadata.machine.");
  }
  if (m.contains("dropped") && m["dropped"].is_array()) f.dropped = static_cast<int>(m["dropped"].size());
  const auto& pv = provenance_of(m);
  f.date_utc = value_or<std::string>(pv, "date_utc", "?", path, &pv == &m ? "metadata." : "metadata.provenance.");
  const auto& rows = j["records"];
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    TorchOpRecord t;
    t.cls = field<std::string>(r, "class", path, i);
    t.calls = field<double>(r, "calls", path, i);
    t.elements = field<double>(r, "elements", path, i);
    t.time_median_s = field<double>(r, "time_median_s", path, i);
    if (r.contains("time_iqr_s")) t.time_iqr_s = field<double>(r, "time_iqr_s", path, i);
    if (r.contains("reps")) t.reps = field<int>(r, "reps", path, i);
    const std::string at = "records[" + std::to_string(i) + "].shape";
    if (!r.contains("shape") || !r["shape"].is_object()) throw InputError(path + ": row " + std::to_string(i) + " lacks 'shape'");
    shape_entries(r["shape"], true, t, path, at);
    if (r["shape"].contains("widths")) {
      const auto& w = r["shape"]["widths"];
      if (!w.is_array()) throw InputError(path + ": key '" + at + ".widths': expected a list of widths, got " + w.dump());
      for (std::size_t k = 0; k < w.size(); ++k) t.widths.push_back(checked<std::int64_t>(w[k], path + ": key '" + at + ".widths[" + std::to_string(k) + "]'"));
    }
    const std::string row = path + ": row " + std::to_string(i) + ": ";
    if (t.cls.empty() || t.cls.size() > 64 || t.cls.find_first_not_of("abcdefghijklmnopqrstuvwxyz_:@") != std::string::npos)
      throw InputError(row + "key 'class': expected an op class such as forward:bases, got \"" + t.cls + "\"");
    if (!(t.calls >= 1 && t.calls <= 1e6)) throw InputError(row + "key 'calls': expected 1 to 1e6, got " + std::to_string(t.calls));
    if (!(t.elements >= 0 && t.elements <= 1e18)) throw InputError(row + "key 'elements': expected 0 to 1e18, got " + std::to_string(t.elements));
    if (!(t.time_median_s > 0)) throw InputError(row + "key 'time_median_s': expected a time above 0");
    f.records.push_back(std::move(t));
  }
  return f;
}

FitInputs read_fit_inputs(const std::vector<std::string>& kernels, const std::vector<std::string>& collectives,
                          const std::vector<std::string>& interference, const std::vector<std::string>& nccl_tests,
                          const std::vector<std::string>& runtime_memory, const std::vector<std::string>& progress,
                          const std::vector<std::string>& torch_ops) {
  FitInputs in;
  for (const auto& p : torch_ops) in.torch_ops.push_back(read_torch_ops_file(p));
  for (const auto& p : progress) in.progress.push_back(read_progress_file(p));
  for (const auto& p : kernels) in.kernels.push_back(read_kernels_file(p));
  for (const auto& p : interference) in.interference.push_back(read_interference_file(p));
  for (const auto& p : collectives) in.collectives.push_back(read_collective_sweep_file(p));
  for (const auto& p : nccl_tests) in.nccl_tests.push_back(read_nccl_tests_log(p));
  for (const auto& p : runtime_memory) in.runtime_memory.push_back(read_runtime_memory_file(p));
  return in;
}

}  // namespace ks
