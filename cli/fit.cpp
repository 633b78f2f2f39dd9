// kanscale fit: calibration from measurement files (kanscale measure kernels
// and measure allreduce JSON), written as a calibration YAML with its
// provenance and the quality of every fit.
#include <boost/program_options.hpp>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <limits>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>
#include <type_traits>

#include "commands.hpp"
#include "kanscale/build_info.hpp"
#include "model/cost.hpp"
#include "model/fit.hpp"
#include "model/kan_model.hpp"
#include "model/nccl_tests_log.hpp"
#include "model/yaml_reader.hpp"
#include "options.hpp"
#include "sim/report.hpp"

namespace po = boost::program_options;

namespace ks::cli {

namespace {

nlohmann::json read_json(const std::string& path, const char* what) {
  struct stat st {};
  if (stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    throw InputError(path + (S_ISDIR(st.st_mode) ? ": is a directory; expected " : ": not a file; expected ") + what);
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot open file");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(path + ": not JSON (" + std::string(e.what()) + "); expected " + what);
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

// An optional metadata entry (`fallback` when absent), checked.
template <typename T>
T meta_value(const nlohmann::json& m, const char* key, T fallback, const std::string& path, const std::string& at = "metadata.") {
  if (!m.is_object() || !m.contains(key)) return fallback;
  return checked<T>(m[key], path + ": key '" + at + key + "'");
}

template <typename T>
T field(const nlohmann::json& row, const char* key, const std::string& path, std::size_t index) {
  if (!row.is_object() || !row.contains(key)) throw InputError(path + ": row " + std::to_string(index) + " lacks '" + key + "'");
  return checked<T>(row[key], path + ": row " + std::to_string(index) + ": key '" + key + "'");
}

std::string num(double v, const char* unit) {
  char b[64];
  std::snprintf(b, sizeof b, "\"%.6g%s\"", v, unit);
  return b;
}

// The top fraction of points (by `key`) are held out: extrapolation is
// what users ask of a fit.
std::vector<bool> hold_out_largest(const std::vector<double>& key, double fraction) {
  std::vector<double> s = key;
  std::sort(s.begin(), s.end());
  const std::size_t n_hold = static_cast<std::size_t>(std::floor(fraction * static_cast<double>(s.size())));
  std::vector<bool> h(key.size(), false);
  if (n_hold == 0 || s.size() - n_hold < 4) return h;
  const double cut = s[s.size() - n_hold];
  for (std::size_t i = 0; i < key.size(); ++i) h[i] = key[i] >= cut;
  return h;
}

std::string quality(const LinearFit& f) {
  std::ostringstream o;
  o << std::setprecision(4) << "{r2: " << f.r2 << ", rms_rel_residual: " << f.rms_rel_residual << ", points: " << f.n_fit
    << ", held_out: " << f.n_holdout;
  if (f.n_holdout > 0) o << ", held_out_mean_abs_rel_error: " << f.holdout_mean_abs_rel << ", held_out_max_abs_rel_error: " << f.holdout_max_abs_rel;
  o << ", std_err: [";
  for (std::size_t j = 0; j < f.std_err.size(); ++j) o << (j ? ", " : "") << f.std_err[j];
  o << "]}";
  return o.str();
}

void report_row(std::ostream& os, const std::string& name, const LinearFit& f, const std::vector<std::string>& units,
                const std::vector<double>& scales) {
  os << "  " << std::left << std::setw(20) << name;
  for (std::size_t j = 0; j < 5; ++j) {
    std::ostringstream c;
    if (j >= f.coef.size()) c << "";
    else if (f.active[j]) c << std::setprecision(3) << f.coef[j] * scales[j] << "+-" << std::setprecision(2) << f.std_err[j] * scales[j] << " " << units[j];
    else c << "(dropped)";
    os << std::setw(24) << c.str();
  }
  os << "R2 " << std::fixed << std::setprecision(4) << f.r2 << std::defaultfloat;
  if (f.n_holdout > 0) os << "  held-out " << f.n_holdout << ": mean " << std::setprecision(3) << 100 * f.holdout_mean_abs_rel << "%, max " << 100 * f.holdout_max_abs_rel << "%";
  os << "  (n=" << f.n_fit << ")\n";
}

// Collectives, mpi family: alpha-beta per regime from all-reduce sweeps at
// any rank counts, and the broadcast from broadcast sweeps.
void fit_mpi_collectives(const std::vector<std::pair<std::string, nlohmann::json>>& sweeps, std::ostream& from, std::ostream& coll,
                         std::ostream& report) {
  // Regimes: OpenMPI's switch at 10000 B (recursive doubling below, ring
  // above), and the ring again above 4 MiB, where the buffers leave the
  // caches (measured here: the time per byte grows there).
  struct Regime {
    const char* algo;
    double below;
    std::vector<std::vector<double>> x;
    std::vector<double> y, k;
    std::vector<int> n;
    std::vector<std::vector<double>> lx;  // launch: [1, bytes]
    std::vector<double> ly, lk;
  };
  std::vector<Regime> regimes = {{"recursive_doubling", 10000.0, {}, {}, {}, {}, {}, {}, {}},
                                 {"ring", 4.0 * 1048576, {}, {}, {}, {}, {}, {}, {}},
                                 {"ring", 0.0, {}, {}, {}, {}, {}, {}, {}}};
  // broadcast sweeps (kanscale measure broadcast): the binomial tree's
  // ceil(log2 n) x (latency + bytes/bw), one fit over every size
  std::vector<std::vector<double>> bx;
  std::vector<double> by, bk;
  for (const auto& [path, j] : sweeps) {
    const std::string op = j.contains("metadata") ? meta_value<std::string>(j["metadata"], "op", std::string(""), path) : "";
    if (!j.contains("points") || (op != "allreduce" && op != "broadcast"))
      throw InputError(path + ": not a kanscale measure allreduce or broadcast file");
    if (op == "broadcast") {
      const int n = meta_value<int>(j["metadata"], "ranks", 1, path);
      if (n < 2) throw InputError(path + ": measured on one rank: no communication to fit");
      from << (from.tellp() > 0 ? "; " : "") << path << " (broadcast, " << n << " ranks)";
      const double st = std::ceil(std::log2(static_cast<double>(n)));
      std::size_t i = 0;
      for (const auto& p : j["points"]) {
        const double bytes = field<double>(p, "size_bytes", path, i);
        if (!p.contains("in_place")) throw InputError(path + ": point " + std::to_string(i) + " lacks 'in_place'");
        if (field<long long>(p["in_place"], "wrong", path, i) != 0)
          throw InputError(path + ": point " + std::to_string(i) + " has wrong results");
        bx.push_back({st, st * bytes});
        by.push_back(field<double>(p["in_place"], "time_us", path, i) * 1e-6);  // in place: as the trainer broadcasts its buffers
        if (!(by.back() > 0)) throw InputError(path + ": point " + std::to_string(i) + ": 'in_place.time_us' must be greater than zero");
        bk.push_back(bytes);
        ++i;
      }
      continue;
    }
    const int n = meta_value<int>(j["metadata"], "ranks", 1, path);
    if (n < 2) throw InputError(path + ": measured on one rank: no communication to fit");
    from << (from.tellp() > 0 ? "; " : "") << path << " (" << n << " ranks, " << meta_value<std::string>(j["metadata"], "library", std::string("?"), path) << ", " << meta_value<std::string>(j["metadata"], "date_utc", std::string("?"), path) << ")";
    std::size_t i = 0;
    for (const auto& p : j["points"]) {
      const double bytes = field<double>(p, "size_bytes", path, i);
      if (!p.contains("out_of_place") || !p.contains("in_place")) throw InputError(path + ": point " + std::to_string(i) + " lacks timings");
      const double t = field<double>(p["out_of_place"], "time_us", path, i) * 1e-6;
      if (!(t > 0)) throw InputError(path + ": point " + std::to_string(i) + ": 'out_of_place.time_us' must be greater than zero");
      if (field<long long>(p["out_of_place"], "wrong", path, i) != 0)
        throw InputError(path + ": point " + std::to_string(i) + " has wrong results");
      Regime& r = bytes < regimes[0].below ? regimes[0] : bytes < regimes[1].below ? regimes[1] : regimes[2];
      if (&r == &regimes[0]) {
        const double st = std::ceil(std::log2(static_cast<double>(n)));
        r.x.push_back({st, st * bytes});
      } else {
        r.x.push_back({2.0 * (n - 1), 2.0 * (n - 1) / n * bytes});
      }
      r.y.push_back(t);
      r.k.push_back(bytes);
      r.n.push_back(n);
      if (meta_value<bool>(j["metadata"], "nonblocking", false, path) && p["in_place"].contains("launch_us")) {
        const double lt = field<double>(p["in_place"], "launch_us", path, i) * 1e-6;  // in place: as the trainer issues it
        if (lt > 0) {
          r.lx.push_back({1.0, bytes});
          r.ly.push_back(lt);
          r.lk.push_back(bytes);
        }
      }
      ++i;
    }
  }
  auto holdout = [](const std::vector<double>& k, const std::vector<int>& ns) {
    const int nmax = *std::max_element(ns.begin(), ns.end()), nmin = *std::min_element(ns.begin(), ns.end());
    if (nmax != nmin) {  // hold out the largest rank count
      std::vector<bool> h(ns.size());
      for (std::size_t i = 0; i < ns.size(); ++i) h[i] = ns[i] == nmax;
      return h;
    }
    return hold_out_largest(k, 0.2);
  };
  coll << "  mpi_regimes:\n";
  report << "collectives (mpi: recursive doubling ceil(log2 n) x (latency + bytes/bw) below 10000 B (OpenMPI's\n"
            "switch), ring 2(n-1) x latency + 2(n-1)/n x bytes/bw below and above 4 MiB; held out: the largest\n"
            "rank count, or the largest 20% of sizes):\n";
  for (std::size_t ri = 0; ri < regimes.size(); ++ri) {
    Regime& r = regimes[ri];
    const std::string below = r.below > 0 ? "below: \"" + std::to_string(static_cast<long long>(r.below)) + "B\", " : "";
    const std::string label = std::string(r.algo) + (ri == 2 ? " (large)" : "");
    if (r.x.size() < 3) {
      report << "  " << label << ": too few points (" << r.x.size() << "); left at the link defaults\n";
      coll << "    - {" << below << "algorithm: " << r.algo << "}   # not measured: the link's defaults\n";
      continue;
    }
    const LinearFit f = fit_relative_nonneg({"latency_s", "s_per_byte"}, r.x, r.y, holdout(r.k, r.n));
    coll << "    - {" << below << "algorithm: " << r.algo << ", latency: " << num(f.coef[0] * 1e6, "us");
    if (f.active[1] && f.coef[1] > 0) coll << ", bandwidth: " << num(1e-9 / f.coef[1], "GB/s");
    std::string launch_quality;
    if (r.lx.size() >= 3) {
      const LinearFit lf = fit_relative_nonneg({"launch_s", "launch_s_per_byte"}, r.lx, r.ly, hold_out_largest(r.lk, 0.2));
      coll << ", launch: " << num(lf.coef[0] * 1e6, "us");
      if (lf.active[1] && lf.coef[1] > 0) coll << ", launch_byte_rate: " << num(1e-9 / lf.coef[1], "GB/s");
      launch_quality = " launch " + quality(lf);
      report_row(report, label + " launch", lf, {"us", "ns/kB"}, {1e6, 1e12});
    }
    coll << "}   # " << quality(f) << launch_quality << "\n";
    report_row(report, label, f, {"us", "ns/kB"}, {1e6, 1e12});
  }
  if (by.size() >= 3) {
    const LinearFit f = fit_relative_nonneg({"latency_s", "s_per_byte"}, bx, by, hold_out_largest(bk, 0.2));
    coll << "  mpi_broadcast: {latency: " << num(f.coef[0] * 1e6, "us");
    if (f.active[1] && f.coef[1] > 0) coll << ", bandwidth: " << num(1e-9 / f.coef[1], "GB/s");
    coll << "}   # " << quality(f) << "\n";
    report << "broadcast (mpi: binomial tree, ceil(log2 n) x (latency + bytes/bw); held out: the largest 20% of sizes):\n";
    report_row(report, "binomial", f, {"us", "ns/kB"}, {1e6, 1e12});
  } else if (!by.empty()) {
    report << "broadcast: too few points (" << by.size() << "); left to the all-reduce regimes\n";
  }
}

// One NCCL all-reduce sweep: nccl-tests' log or kanscale's own (--backend nccl).
struct NcclSweep {
  int nodes = 1;
  std::vector<std::pair<double, double>> bytes_busbw;  // per size: the better of in and out of place, GB/s
};

// Collectives, nccl family: the bus bandwidth per level from NCCL sweeps.
void fit_nccl_sweeps(const std::vector<NcclSweep>& sweeps, std::ostream& coll, std::ostream& report) {
  double intra = 0, inter = 0;
  int n_intra = 0, n_inter = 0;
  for (const auto& sw : sweeps) {
    // NCCL's busbw at large sizes is its model's bus bandwidth (latency
    // amortised): take the best of the sizes >= 32 MiB, or of all sizes.
    double best_large = 0, best = 0;
    for (const auto& [bytes, b] : sw.bytes_busbw) {
      best = std::max(best, b);
      if (bytes >= 32.0 * 1048576) best_large = std::max(best_large, b);
    }
    const double v = best_large > 0 ? best_large : best;
    if (sw.nodes <= 1) {
      intra = std::max(intra, v);
      ++n_intra;
    } else {
      inter = std::max(inter, v);
      ++n_inter;
    }
  }
  coll << "  nccl:\n";
  report << "collectives (nccl): bus bandwidth per level = the best busbw at >= 32 MiB (NCCL's busbw there is its\n"
            "model's bus bandwidth); latencies stay at NCCL's constants (small-message times mix several protocols'\n"
            "base and per-hop latencies, which one sweep cannot separate)\n";
  if (n_intra) {
    coll << "    bus_bandwidth_intra: " << num(intra, "GB/s") << "   # from " << n_intra << " single-node sweep(s)\n";
    report << "  intra-node bus bandwidth " << intra << " GB/s (" << n_intra << " log(s))\n";
  } else {
    report << "  intra-node bus bandwidth: no single-node log; stays at the cluster's value\n";
  }
  if (n_inter) {
    coll << "    bus_bandwidth_inter: " << num(inter, "GB/s") << "   # from " << n_inter << " multi-node sweep(s)\n";
    report << "  inter-node bus bandwidth " << inter << " GB/s (" << n_inter << " log(s))\n";
  } else {
    report << "  inter-node bus bandwidth: no multi-node log; stays at the cluster's value\n";
  }
}

}  // namespace

int fit(const std::vector<std::string>& args, const std::string& cmdline) {
  std::vector<std::string> kernels, collectives, nccl_logs;
  std::vector<std::string> interference, runtime_files;
  std::string out, name;
  po::options_description desc("fit options");
  desc.add_options()
      ("help,h", "show this help")
      ("kernels", po::value(&kernels)->multitoken(), "kanscale measure kernels JSON file(s)")
      ("collectives", po::value(&collectives)->multitoken(), "kanscale measure allreduce and broadcast JSON file(s), any rank counts")
      ("interference", po::value(&interference)->multitoken(), "kanscale bench interference JSON file(s) (the median is used)")
      ("nccl-tests", po::value(&nccl_logs)->multitoken(), "nccl-tests all_reduce_perf logs (nccl family)")
      ("runtime-memory", po::value(&runtime_files)->multitoken(),
       "kanscale measure kernels JSON file(s) at other ranks per node: only their runtime memory is read")
      ("name", po::value(&name), "calibration name (default: from the output file)")
      ("out", po::value(&out)->value_name("FILE"), "calibration YAML to write (configs/calibrations/)");
  po::variables_map vm;
  if (!parse_args(args, desc, "usage: kanscale fit --kernels K.json [--collectives A.json ...] [--interference I.json] [--runtime-memory K1.json ...] --out K.yaml", vm))
    return 0;
  if (out.empty()) throw InputError("missing required option --out");
  check_output_paths({{out, "--out"}});
  if (kernels.empty() && collectives.empty() && nccl_logs.empty())
    throw InputError("give --kernels, --collectives and/or --nccl-tests");
  if (name.empty()) {
    name = out.substr(out.find_last_of('/') + 1);
    name = name.substr(0, name.rfind('.'));
  }
  std::ostringstream yaml, report, from, coll;
  int concurrency = 1;
  double jitter_sigma = 0;
  // ---- compute: one fit per cost class over [1, flops, bytes]
  std::map<std::string, std::vector<std::vector<double>>> X;
  std::map<std::string, std::vector<double>> Y, key;
  std::vector<double> cvs;
  // memory: per shape, the peak of a one-layer training step
  std::vector<std::vector<double>> mem_x;
  std::vector<double> mem_y;
  double runtime_bytes = -1;
  std::string runtime_what;
  std::map<int, double> runtime_at;  // ranks per node -> the largest rank's runtime memory
  nlohmann::json cache_probe = nlohmann::json::array();
  for (const auto& path : kernels) {
    const auto j = read_json(path, "a kanscale measure kernels file");
    if (!j.contains("metadata") || !j.contains("rows") || !j["rows"].is_array())
      throw InputError(path + ": not a kanscale measure kernels file (no metadata/rows)");
    const auto& m = j["metadata"];
    concurrency = std::max(concurrency, static_cast<int>(std::lround(meta_value<double>(m, "concurrency_ranks_per_node", 1.0, path))));
    from << (from.tellp() > 0 ? "; " : "") << path << " (" << meta_value<std::string>(m, "host", std::string("?"), path) << ", " << meta_value<std::string>(m, "cpu_model", std::string("?"), path) << ", "
         << meta_value<std::string>(m, "date_utc", std::string("?"), path) << ", kanscale " << meta_value<std::string>(m, "git_hash", std::string("?"), path) << ", " << meta_value<int>(m, "ranks", 1, path) << " rank(s))";
    if (m.contains("cache_probe_bytes_GBps") && cache_probe.empty()) {
      // a list of [bytes, GB/s] pairs
      const auto& probe = m["cache_probe_bytes_GBps"];
      if (!probe.is_array()) throw InputError(path + ": key 'metadata.cache_probe_bytes_GBps': expected a list of [bytes, GB/s]");
      for (std::size_t c = 0; c < probe.size(); ++c)
        if (!probe[c].is_array() || probe[c].size() != 2 || !probe[c][0].is_number() || !probe[c][1].is_number())
          throw InputError(path + ": key 'metadata.cache_probe_bytes_GBps[" + std::to_string(c) + "]': expected [bytes, GB/s], got " +
                           probe[c].dump());
      cache_probe = probe;
    }
    if (m.contains("runtime_memory_bytes")) {
      runtime_bytes = std::max(runtime_bytes, meta_value<double>(m, "runtime_memory_bytes", 0, path));
      runtime_what = meta_value<std::string>(m, "runtime_memory_what", std::string(""), path);
      const int rpn = static_cast<int>(std::lround(meta_value<double>(m, "concurrency_ranks_per_node", 1.0, path)));
      runtime_at[rpn] = std::max(runtime_at[rpn], meta_value<double>(m, "runtime_memory_bytes", 0, path));
    }
    if (j.contains("memory")) {
      std::size_t mi = 0;
      for (const auto& r : j["memory"]) {
        const double peak = field<double>(r, "peak_bytes", path, mi);
        const KanShape shape{{field<std::int64_t>(r, "in", path, mi), field<std::int64_t>(r, "out", path, mi)},
                             field<int>(r, "grid_size", path, mi), field<int>(r, "spline_order", path, mi)};
        const auto batch = field<std::int64_t>(r, "batch", path, mi);
        // the shape goes into the memory model's integer arithmetic: a KAN kanscale could have measured
        if (shape.widths[0] < 1 || shape.widths[1] < 1 || batch < 1 || batch > (std::int64_t{1} << 40) || shape.grid_size < 1 ||
            shape.spline_order < 1 || shape.spline_order > 16 || shape.grid_size > (1 << 20) ||
            static_cast<double>(shape.widths[0]) * static_cast<double>(shape.widths[1]) * (shape.grid_size + shape.spline_order + 2) > 1e15)
          throw InputError(path + ": memory[" + std::to_string(mi) + "]: not a shape kanscale measures (batch " + std::to_string(batch) +
                           ", in " + std::to_string(shape.widths[0]) + ", out " + std::to_string(shape.widths[1]) + ", G " +
                           std::to_string(shape.grid_size) + ", k " + std::to_string(shape.spline_order) + ")");
        const auto est = kanscale_memory(shape, batch, DdpSettings{}, 0, 0);
        if (peak > 0) {  // a shape whose state came from freed blocks reads 0: nothing to learn from it
          mem_x.push_back({1.0, static_cast<double>(kan_parameter_count(shape)),
                           est.activations_bytes + est.transient_bytes + est.batch_bytes});
          mem_y.push_back(peak);
        }
        ++mi;
      }
    }
    std::size_t i = 0;
    for (const auto& r : j["rows"]) {
      const std::string op = field<std::string>(r, "op", path, i);
      const auto& classes = kanscale_cost_classes();
      if (std::find(classes.begin(), classes.end(), op) == classes.end())
        throw InputError(path + ": row " + std::to_string(i) + ": unknown op '" + op + "'");
      const double t = field<double>(r, "time_median_s", path, i), fl = field<double>(r, "flops", path, i),
                   by = field<double>(r, "bytes", path, i);
      // cold rows (caches evicted before each repetition) get their own fits
      const std::string key_op =
          meta_value<std::string>(r, "cache", "warm", path, "rows[" + std::to_string(i) + "].") == "cold" ? op + "@cold" : op;
      if (!(t > 0) || fl < 0 || by < 0) throw InputError(path + ": row " + std::to_string(i) + ": times must be positive and counts non-negative");
      const bool layer = op == "kan_forward" || op == "kan_backward";
      // layers: a fixed term, FLOPs, bytes and the basis evaluations (B*in),
      // the basis separately from the contractions; the rest move memory
      // (their FLOPs are proportional to their bytes): fixed and bytes.
      if (layer)
        X[key_op].push_back({1.0, fl, by, field<double>(r, "batch", path, i) * field<double>(r, "in", path, i),
                         field<double>(r, "in", path, i) * field<double>(r, "out", path, i) *
                             (field<double>(r, "grid_size", path, i) + field<double>(r, "spline_order", path, i))});
      else X[key_op].push_back({1.0, by});
      Y[key_op].push_back(t);
      key[key_op].push_back(fl + by);
      if (key_op == op && (op == "kan_forward" || op == "kan_backward") && !field<bool>(r, "unstable", path, i))
        cvs.push_back(field<double>(r, "time_cv", path, i));
      ++i;
    }
  }
  if (!cvs.empty()) {
    std::sort(cvs.begin(), cvs.end());
    const double cv = cvs[cvs.size() / 2];
    jitter_sigma = std::sqrt(std::log(1 + cv * cv));  // lognormal sigma with that CV
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
  };
  double interf = 0, inflight = -1;
  if (!interference.empty()) {
    // the simulator slows compute only while a collective is in flight:
    // use the compute lost per second of collective (median over files);
    // and the library's memory per byte in flight, where recorded
    std::vector<double> v, mem;
    for (const auto& path : interference) {
      const auto j = read_json(path, "a kanscale bench interference file");
      if (!j.contains("interference_per_collective_second_mean"))
        throw InputError(path + ": lacks 'interference_per_collective_second_mean' (measured by an older kanscale?)");
      // the file's top level holds what a kernels file keeps under metadata
      v.push_back(std::max(0.0, meta_value<double>(j, "interference_per_collective_second_mean", 0, path, "")));
      const double bytes = meta_value<double>(j, "allreduce_bytes", 0, path, "");
      if (j.contains("inflight_memory_bytes_max") && bytes > 0 && meta_value<int>(j, "ranks", 1, path, "") > 1)
        mem.push_back(std::max(0.0, meta_value<double>(j, "inflight_memory_bytes_max", 0, path, "")) / bytes);
      from << (from.tellp() > 0 ? "; " : "") << path << " (interference)";
    }
    interf = median(v);
    if (!mem.empty()) inflight = median(mem);
  }
  std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  report << "kanscale fit: " << name << "\n";
  if (!X.empty()) {
    yaml << "compute:\n  jitter_sigma: " << jitter_sigma << "   # from the median spread (CV) of the layer timings\n"
         << "  interference: " << interf
         << (interference.empty() ? "   # not measured (kanscale bench interference)" : "   # compute lost per second of collective in flight")
         << "\n"
         << "  host_overhead: \"0s\"   # the trainer's host work is in load_batch; no separate term\n";
    if (!cache_probe.empty()) {
      yaml << "  cache_probe:   # read bandwidth against buffer size, all ranks at once: [bytes, GB/s]\n    [";
      for (std::size_t c = 0; c < cache_probe.size(); ++c)
        yaml << (c ? ", " : "") << "[" << cache_probe[c][0].get<double>() << ", " << cache_probe[c][1].get<double>() << "]";
      yaml << "]\n";
    }
    report << "compute (time = fixed + flops/flop_rate + bytes/byte_rate; relative least squares, non-negative;\n"
              "largest 20% of each op's points held out):\n";
    bool cold_header = false;
    yaml << "  ops:\n";
    // warm fits first, then the cold ones (std::map orders "op@cold" after "op"; split by the suffix)
    std::vector<std::string> order;
    for (const auto& kv : X)
      if (kv.first.find("@cold") == std::string::npos) order.push_back(kv.first);
    for (const auto& kv : X)
      if (kv.first.find("@cold") != std::string::npos) order.push_back(kv.first);
    for (const auto& key_name : order) {
      const auto& rows = X[key_name];
      const bool cold = key_name.find("@cold") != std::string::npos;
      const std::string op = cold ? key_name.substr(0, key_name.find('@')) : key_name;
      if (cold && !cold_header) {
        yaml << "  ops_cold:   # the same ops with the caches evicted before each repetition\n";
        report << "cold (caches evicted before each repetition):\n";
        cold_header = true;
      }
      const bool layer = rows.front().size() == 5;
      const LinearFit f = layer ? fit_relative_nonneg({"fixed_s", "s_per_flop", "s_per_byte", "s_per_element", "s_per_weight"}, rows,
                                                      Y[key_name], hold_out_largest(key[key_name], 0.2))
                                : fit_relative_nonneg({"fixed_s", "s_per_byte"}, rows, Y[key_name], hold_out_largest(key[key_name], 0.2));
      yaml << "    " << op << ": {fixed: " << num(f.coef[0] * 1e6, "us");
      if (layer) {
        if (f.active[1] && f.coef[1] > 0) yaml << ", flop_rate: " << num(1e-9 / f.coef[1], "GFLOP/s");
        if (f.active[2] && f.coef[2] > 0) yaml << ", byte_rate: " << num(1e-9 / f.coef[2], "GB/s");
        if (f.active[3] && f.coef[3] > 0) yaml << ", per_element: " << num(f.coef[3] * 1e9, "ns");
        if (f.active[4] && f.coef[4] > 0) yaml << ", per_weight: " << num(f.coef[4] * 1e9, "ns");
        report_row(report, op, f, {"us", "ns/kFLOP", "ns/kB", "ns/elem", "ns/weight"}, {1e6, 1e12, 1e12, 1e9, 1e9});
      } else {
        if (f.active[1] && f.coef[1] > 0) yaml << ", byte_rate: " << num(1e-9 / f.coef[1], "GB/s");
        report_row(report, op, f, {"us", "ns/kB"}, {1e6, 1e12});
      }
      yaml << ", combine: sum,\n      fit: " << quality(f) << "}\n";
    }
  }
  // kanscale's own sweeps: MPI ones fit the mpi family, NCCL ones (--backend
  // nccl) the nccl family's bus bandwidth, as nccl-tests' logs do
  std::vector<std::pair<std::string, nlohmann::json>> mpi_sweeps;
  std::vector<NcclSweep> nccl;
  for (const auto& path : collectives) {
    auto j = read_json(path, "a kanscale measure allreduce or broadcast file");
    if (!j.contains("metadata") || meta_value<std::string>(j["metadata"], "backend", std::string("mpi"), path) != "nccl") {
      mpi_sweeps.emplace_back(path, std::move(j));
      continue;
    }
    if (meta_value<std::string>(j["metadata"], "op", std::string(""), path) != "allreduce")
      throw InputError(path + ": an NCCL " + meta_value<std::string>(j["metadata"], "op", std::string("?"), path) +
                       " sweep: only NCCL all-reduce sweeps are fitted (the NCCL model derives its broadcast from the ring)");
    NcclSweep sw;
    std::set<std::string> hosts;
    if (j["metadata"].contains("hosts")) {
      const auto& hs = j["metadata"]["hosts"];
      if (!hs.is_array()) throw InputError(path + ": key 'metadata.hosts': expected a list of host names, got " + hs.dump());
      for (std::size_t h = 0; h < hs.size(); ++h) hosts.insert(checked<std::string>(hs[h], path + ": key 'metadata.hosts[" + std::to_string(h) + "]'"));
    }
    sw.nodes = std::max<int>(1, static_cast<int>(hosts.size()));
    if (!j.contains("points")) throw InputError(path + ": no points");
    std::size_t i = 0;
    for (const auto& p : j["points"]) {
      if (!p.contains("out_of_place") || !p.contains("in_place")) throw InputError(path + ": point " + std::to_string(i) + " lacks timings");
      sw.bytes_busbw.emplace_back(field<double>(p, "size_bytes", path, i),
                                  std::max(field<double>(p["out_of_place"], "busbw_GBps", path, i),
                                           field<double>(p["in_place"], "busbw_GBps", path, i)));
      ++i;
    }
    from << (from.tellp() > 0 ? "; " : "") << path << " (NCCL sweep, " << meta_value<int>(j["metadata"], "ranks", 0, path) << " ranks on " << sw.nodes
         << " node(s))";
    nccl.push_back(std::move(sw));
  }
  for (const auto& path : nccl_logs) {
    const NcclTestsLog log = read_nccl_tests_log(path);
    from << (from.tellp() > 0 ? "; " : "") << path << " (nccl-tests, " << log.ranks << " ranks on " << log.nodes << " node(s)"
         << (log.nccl_version.empty() ? "" : ", NCCL " + log.nccl_version) << ")";
    NcclSweep sw;
    sw.nodes = log.nodes;
    for (const auto& r : log.rows) sw.bytes_busbw.emplace_back(r.bytes, std::max(r.busbw_GBps[0], r.busbw_GBps[1]));
    nccl.push_back(std::move(sw));
  }
  if (!mpi_sweeps.empty()) fit_mpi_collectives(mpi_sweeps, from, coll, report);
  if (!nccl.empty()) fit_nccl_sweeps(nccl, coll, report);
  if (!coll.str().empty()) yaml << "collectives:\n" << coll.str();
  // ---- runtime memory at other ranks per node (their op timings are not used)
  for (const auto& path : runtime_files) {
    const auto j = read_json(path, "a kanscale measure kernels file");
    if (!j.contains("metadata") || !j["metadata"].contains("runtime_memory_bytes"))
      throw InputError(path + ": not a kanscale measure kernels file with runtime_memory_bytes");
    const auto& m = j["metadata"];
    const int rpn = static_cast<int>(std::lround(meta_value<double>(m, "concurrency_ranks_per_node", 1.0, path)));
    runtime_at[rpn] = std::max(runtime_at[rpn], meta_value<double>(m, "runtime_memory_bytes", 0, path));
    runtime_what = meta_value<std::string>(m, "runtime_memory_what", runtime_what, path);
    from << (from.tellp() > 0 ? "; " : "") << path << " (runtime memory, " << rpn << " rank(s) per node)";
  }
  // runtime = at one rank + per_local_peer x (ranks per node - 1), least
  // squares over the measured counts (two counts: the line through them)
  double runtime_one = runtime_bytes, per_peer = -1;
  if (runtime_at.size() >= 2) {
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    const double n = static_cast<double>(runtime_at.size());
    for (const auto& [rpn, b] : runtime_at) {
      const double x = rpn - 1;
      sx += x, sy += b, sxx += x * x, sxy += x * b;
    }
    per_peer = std::max(0.0, (n * sxy - sx * sy) / (n * sxx - sx * sx));
    runtime_one = (sy - per_peer * sx) / n;
    if (runtime_one < 0) {  // a line through the origin instead
      runtime_one = 0;
      per_peer = sxx > 0 ? std::max(0.0, sxy / sxx) : 0.0;
    }
  } else if (!runtime_files.empty()) {
    report << "memory: the --runtime-memory files were measured at the same ranks per node as the kernels: no per-rank term\n";
  }
  // ---- memory: peak = fixed + per_parameter x P + activation_factor x A
  if (runtime_bytes >= 0 || per_peer >= 0 || inflight >= 0 || !mem_y.empty()) {
    yaml << "memory:\n";
    if (per_peer >= 0) {
      std::ostringstream at;
      for (const auto& [rpn, b] : runtime_at) at << (at.tellp() > 0 ? ", " : "") << format_bytes(b) << " at " << rpn;
      yaml << "  runtime: " << num(runtime_one, "B") << "   # one rank per node; measured: " << runtime_what << " (largest rank): "
           << at.str() << " rank(s) per node\n"
           << "  runtime_per_local_peer: " << num(per_peer, "B") << "   # per other rank of the node (MPI's shared memory)\n";
      report << "memory: runtime " << format_bytes(runtime_one) << " at one rank per node + " << format_bytes(per_peer)
             << " per other rank of the node (" << runtime_what << "; measured " << at.str() << " rank(s) per node)\n";
    } else if (runtime_bytes >= 0) {
      yaml << "  runtime: " << num(runtime_bytes, "B") << "   # measured: " << runtime_what << " (largest rank)\n";
      report << "memory: runtime " << format_bytes(runtime_bytes) << " (" << runtime_what << ")\n";
    }
    if (inflight >= 0) {
      yaml << "  collective_in_flight: " << inflight
           << "   # the library's memory per byte of a non-blocking all-reduce in flight (bench interference, largest rank)\n";
      report << "memory: a non-blocking all-reduce in flight holds " << inflight << " x its bytes (median over the interference files)\n";
    }
    if (mem_y.size() >= 4) {
      const LinearFit f = fit_relative_nonneg({"fixed_bytes", "bytes_per_parameter", "activation_factor"}, mem_x, mem_y,
                                              hold_out_largest(mem_y, 0.2));
      yaml << "  fixed: " << num(f.coef[0], "B") << "\n  per_parameter: " << num(f.coef[1], "B")
           << "   # the model's own accounting: 20 B (parameter, gradient, bucket, Adam's two moments)\n"
           << "  activation_factor: " << f.coef[2] << "   # on the model's activation, workspace and batch bytes\n"
           << "  fit: " << quality(f) << "\n";
      report << "memory (peak of a one-layer training step = fixed + per_parameter x P + factor x the model's activation\n"
                "bytes; relative least squares, largest 20% held out):\n";
      report_row(report, "peak", f, {"KiB", "B/param", "x"}, {1.0 / 1024, 1.0, 1.0});
    } else {
      report << "memory: " << mem_y.size() << " shape(s) with a peak: too few to fit; the model's own accounting stays\n";
    }
  }
  std::ostringstream head;  // written last: it names every file the fit used
  head << "# Fitted by kanscale fit " << build::version << " (" << build::git_hash << ") on " << date << "\n# " << cmdline << "\n";
  head << "name: " << name << "\nsource: fitted\nfitted_from: " << nlohmann::json(from.str()).dump() << "\nconcurrency: " << concurrency << "\n";
  report << "jitter_sigma " << jitter_sigma << ", interference " << interf << ", concurrency " << concurrency << " rank(s) per node\n";
  write_files_atomic({{out, head.str() + yaml.str()}});
  std::cout << report.str() << "wrote " << out << "\n";
  return 0;
}

}  // namespace ks::cli
