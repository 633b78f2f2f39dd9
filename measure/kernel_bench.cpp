#include "kernel_bench.hpp"

#include <malloc.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <initializer_list>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <tuple>

#include "adam.hpp"
#include "data.hpp"
#include "kan.hpp"
#include "gpu.hpp"
#include "kan_cpu.hpp"
#include "kernel_bench_detail.hpp"
#include "workbench.hpp"
#include "machine_info.hpp"
#include "formats/measurement_records.hpp"
#include "formats/provenance.hpp"
#include "kanscale/build_info.hpp"
#include "model/kan_model.hpp"
#include "model/units.hpp"
#include "formats/yaml_reader.hpp"
#include "base/output_files.hpp"
#include "base/progress_line.hpp"
#include "model/statistics.hpp"
#include "model/units.hpp"

namespace ks {

KernelPlan load_kernel_plan(const std::string& path) {
  YamlMap m = YamlMap::load_file(path);
  KernelPlan p;
  p.name = m.string("name");
  p.repeats = static_cast<int>(m.integer_opt("repeats", 3, 1000).value_or(15));
  p.warmup = static_cast<int>(m.integer_opt("warmup", 0, 1000).value_or(3));
  p.threads = static_cast<int>(m.integer_opt("threads", 1, 1024).value_or(1));  // kanscale runs at most 1024 threads
  p.seed = static_cast<std::uint64_t>(m.integer_opt("seed", 0).value_or(1));
  p.backend = m.string_opt("backend").value_or("cpu");
  if (const auto flush = m.string_opt("flush_between_repeats")) {
    try {
      std::tie(p.flush_bytes, p.flush_llc_multiple) = parse_flush(*flush);
    } catch (const UnitError& e) {
      m.fail("flush_between_repeats", std::string(e.what()) + " (a size such as 64MiB, or a multiple of the last-level cache such as 2x_llc)");
    }
  }
  if (p.backend != "cpu" && p.backend != "cuda") m.fail("backend", "expected cpu or cuda, got \"" + p.backend + "\"");
  // shapes: a list of [batch, in, out, G, k]; the kernels keep every size in an int
  const auto shapes = m.integer_lists("shapes", 1, 5);
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const auto& v = shapes[i];
    if (v.size() != 5) m.fail_item("shapes", i, "expected [batch, in, out, grid_size, spline_order]");
    if (v[4] > 16) m.fail_item("shapes", i, "spline order above 16");
    if (const std::string why = kan_size_problem(KanShape{{v[1], v[2]}, static_cast<int>(v[3]), static_cast<int>(v[4])});
        !why.empty())
      m.fail_item("shapes", i, why);
    p.shapes.push_back({v[0], v[1], v[2], static_cast<int>(v[3]), static_cast<int>(v[4])});
  }
  m.finish();
  return p;
}

std::pair<double, double> parse_flush(const std::string& text) {
  const std::string suffix = "x_llc";
  if (text.size() > suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0) {
    const std::string n = text.substr(0, text.size() - suffix.size());
    char* end = nullptr;
    const double k = std::strtod(n.c_str(), &end);
    if (end != n.c_str() + n.size() || !(k >= 1 && k <= 16)) throw UnitError("\"" + text + "\": expected 1 to 16 before x_llc");
    return {0.0, k};
  }
  const double bytes = parse_size_bytes(text);
  if (!(bytes >= 0)) throw UnitError("\"" + text + "\": expected a size of at least 0");
  return {bytes, 0.0};
}

LastLevelCache last_level_cache(const std::string& sysfs_cpu) {
  LastLevelCache best;
  int best_level = 0;
  auto read = [](const std::string& f) {
    std::ifstream in(f);
    std::string s;
    std::getline(in, s);
    return s;
  };
  for (int i = 0; i < 16; ++i) {
    const std::string dir = sysfs_cpu + "/cache/index" + std::to_string(i);
    const std::string level = read(dir + "/level"), type = read(dir + "/type"), size = read(dir + "/size");
    if (level.empty() || size.empty() || type == "Instruction") continue;
    const int lv = std::atoi(level.c_str());
    double bytes = 0;
    try {
      bytes = parse_size_bytes(size.back() == 'K' ? size.substr(0, size.size() - 1) + "KiB" : size.back() == 'M' ? size.substr(0, size.size() - 1) + "MiB" : size);
    } catch (const UnitError&) {
      continue;
    }
    if (lv < best_level) continue;
    // the CPUs sharing it: "0-1", "0,2,4-7"
    int cpus = 0;
    std::istringstream list(read(dir + "/shared_cpu_list"));
    for (std::string part; std::getline(list, part, ',');) {
      const auto dash = part.find('-');
      cpus += dash == std::string::npos ? 1 : std::atoi(part.c_str() + dash + 1) - std::atoi(part.c_str()) + 1;
    }
    best_level = lv;
    best = {bytes, std::max(1, cpus)};
  }
  return best;
}

// The node's ranks that share one last-level cache: at most its CPUs, at least 1.
int llc_sharing_ranks(int ranks_here, const LastLevelCache& llc) { return std::max(1, std::min(ranks_here, llc.sharing_cpus)); }

double llc_flush_bytes(double multiple, int ranks_here, const LastLevelCache& llc, std::string* why) {
  constexpr double kFallback = 64.0 * 1024 * 1024;
  if (!(llc.bytes > 0)) {
    if (why) *why = "the last-level cache is unknown (no sysfs cache index): 64 MiB";
    return kFallback;
  }
  const int sharing = llc_sharing_ranks(ranks_here, llc);
  const double bytes = std::max(llc.bytes, multiple * llc.bytes / sharing);
  if (why) {
    std::ostringstream o;
    o << multiple << " x the last-level cache (" << format_bytes(llc.bytes) << ", shared by " << llc.sharing_cpus << " CPUs) / " << sharing
      << " rank(s) sharing it, at least one LLC";
    *why = o.str();
  }
  return bytes;
}

namespace {

using namespace kernel_bench_detail;

// Evicts the caches between repetitions when the plan asks (flush_bytes):
// in training an op finds its weights and workspaces evicted by the other
// layers and the optimizer, not left warm by its previous repetition.
std::vector<char> g_flush;
volatile char g_flush_sink = 0;
// the ops this shape and pass leave untimed (KernelPlan::skip_classes)
std::set<std::string> g_skip;
bool skipped(const char* op) { return g_skip.count(op) > 0; }
void flush_caches() {
  if (g_flush.empty()) return;
  char acc = 0;
  for (std::size_t i = 0; i < g_flush.size(); i += 64) {
    g_flush[i] = static_cast<char>(g_flush[i] + 1);
    acc = static_cast<char>(acc ^ g_flush[i]);
  }
  g_flush_sink = acc;
}

// The working set a rank can keep in cache while its neighbours run too:
// read bandwidth over buffers of 64 KiB .. 128 MiB (all ranks at once);
// the largest size still read faster than the geometric mean of the
// in-cache plateau (the best of the sizes up to 512 KiB) and the memory
// plateau (the worst of the sizes from 64 MiB).
// The sum runs in kProbeChains independent float chains (8 vector
// accumulators at the ISA's full width; GCC may use 256-bit vectors on an
// AVX-512 machine, 16 accumulators then), so that the loads, not the adds'
// latency, bound it. With one accumulator (an `omp simd` reduction: one
// vector register) it measured the add latency instead: a flat 30-34 GB/s
// from 64 KiB to 8 MiB on the AMD EPYC (Zen 3, AVX2) of 6 Dec 2026, which
// now reads 84-102 GB/s up to 256 KiB, 58-77 from 512 KiB to 4 MiB (its L3)
// and 13-18 from 32 MiB (the shipped local-cpu calibration's rounds); the
// model could not tell its L2 from its L3.
#ifdef __AVX512F__
constexpr int kProbeChains = 128;
#else
constexpr int kProbeChains = 64;
#endif
constexpr std::size_t kProbeMinBytes = std::size_t{64} << 10;
static_assert((kProbeMinBytes / sizeof(float)) % kProbeChains == 0, "the probe's buffers must hold whole rows of chains");
nlohmann::json g_probe = nlohmann::json::array();
double probe_effective_cache(Comm& comm) {
  std::vector<std::pair<double, double>> bw;  // (bytes, B/s)
  for (std::size_t bytes = kProbeMinBytes; bytes <= (128u << 20); bytes *= 2) {  // doubling: multiples of the smallest
    std::vector<float> buf(bytes / sizeof(float), 1.0f);
    const int passes = static_cast<int>(std::max<std::size_t>(2, (256u << 20) / bytes));
    volatile float sink = 0;
    const Stat t = time_calls(
        Repeats{0, 3},
        [&] {
          float acc[kProbeChains] = {};
          for (int p = 0; p < passes; ++p)
            for (std::size_t i = 0; i < buf.size(); i += kProbeChains)
              for (int j = 0; j < kProbeChains; ++j) acc[j] += buf[i + j];
          float s = 0;
          for (float a : acc) s += a;
          sink = s;
        },
        TimerHooks{[&] { comm.barrier(); }, {}, {}});
    (void)sink;
    bw.emplace_back(static_cast<double>(bytes), static_cast<double>(bytes) * passes / t.median);
    g_probe.push_back({bw.back().first, bw.back().second / 1e9});
  }
  double hi = 0, lo = 1e300;
  for (const auto& [b, v] : bw) {
    if (b <= (512u << 10)) hi = std::max(hi, v);
    if (b >= (64u << 20)) lo = std::min(lo, v);
  }
  const double mid = std::sqrt(hi * lo);
  double cache = 0;
  for (const auto& [b, v] : bw)
    if (v > mid) cache = b;
  return cache;
}

// The plan's stopping rule (KernelPlan::target_rel_halfwidth) for this run.
double g_target = 0;

// The plan's warm-up and repeats, every rank at once (neighbours time
// together, and stop together under the stopping rule); caches evicted
// before each sample when the plan asks, else the calls per sample scaled to
// kMinSampleS.
template <typename F>
Stat time_op(Comm& comm, F&& f, int warmup, int reps) {
  const bool cold = !g_flush.empty();
  Repeats r{warmup, reps, 1, cold ? 0.0 : kMinSampleS};
  r.target_rel_halfwidth = g_target;
  return time_calls(r, std::forward<F>(f),
                    TimerHooks{[&] { comm.barrier(); }, {}, cold ? std::function<void()>(flush_caches) : nullptr,
                               [&](bool known) { return comm.allreduce_max(known ? 0.0 : 1.0) == 0.0; }});
}

// Bytes the allocator holds for the program (glibc's accounting: the main
// arena's allocated blocks and the mmapped ones).
double heap_in_use() {
  const struct mallinfo2 mi = mallinfo2();
  return static_cast<double>(mi.uordblks) + static_cast<double>(mi.hblkhd);
}

double rss_bytes() {
  std::ifstream f("/proc/self/statm");
  double pages = 0, resident = 0;
  f >> pages >> resident;
  return resident * static_cast<double>(sysconf(_SC_PAGESIZE));
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown";
}

std::string host() {
  char b[256] = {0};
  gethostname(b, sizeof b - 1);
  return b;
}

double memcpy_bandwidth(int reps) {
  const std::size_t n = 64u << 20;  // 64 MiB
  std::vector<char> a(n, 1), b(n, 2);
  std::size_t i = 0;
  const Stat t = time_calls(Repeats{1, reps}, [&] {  // the first copy warms up
    std::memcpy(b.data(), a.data(), n);
    a[i] = b[i + 1];
    ++i;
  });
  return 2.0 * n / t.median;  // read + write
}

// Times shape `si` on the CPU path and adds its rows; returns the heap bytes
// a training step of that one-layer net holds at its peak (parameters,
// gradients, Adam state, a bucket, activations and workspaces).
double measure_shape_cpu(Comm& comm, const KernelPlan& plan, std::size_t si, const AddRow& add_row) {
  const int rank = comm.rank();
  const double heap0 = heap_in_use();
  double peak = 0;
  {
    const KernelShape& s = plan.shapes[si];
    const int B = static_cast<int>(s.batch);
    KanNet net = init_kan({s.in, s.out}, s.G, s.k, plan.seed + si);
    KanLayer& L = net.layers[0];
    std::mt19937 gen(static_cast<unsigned>(plan.seed * 7919 + si + 101 * rank));
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    randomize_parameters(L, [&] { return u(gen); });
    // fresh random inputs for every repetition set (never zeros)
    std::vector<float> x(static_cast<std::size_t>(B) * s.in), y(static_cast<std::size_t>(B) * s.out),
        dy(static_cast<std::size_t>(B) * s.out), t(y.size()), dx(x.size());
    for (auto& v : x) v = u(gen);
    for (auto& v : dy) v = u(gen);
    for (auto& v : t) v = u(gen);
    LayerWork w;
    BackwardScratch scratch;
    std::vector<float> db(L.base_weight.size()), ds(L.spline_weight.size()), dsc(L.spline_scaler.size());
    const auto fw = kanscale_layer_forward(s.in, s.out, s.G, s.k, s.batch);
    // A skipped layer still runs once, untimed: the backward needs the
    // forward's workspaces, and its scratch (and the GEMMs' state) belongs
    // to the step's peak memory.
    auto forward = [&] { layer_forward_cpu(L, x.data(), B, y.data(), w); };
    Stat tf;
    if (skipped("kan_forward")) forward();
    else tf = time_op(comm, forward, plan.warmup, plan.repeats);
    const double ws = 4.0 * static_cast<double>(w.bmat.size() + w.dval.size() + w.act.size() + w.ws.size() + w.first.size());
    if (!skipped("kan_forward")) add_row("kan_forward", "", fw.flops, fw.bytes, tf, ws);
    for (bool need_dx : {true, false}) {
      auto backward = [&] {
        layer_backward_cpu(L, x.data(), B, dy.data(), w, scratch, db.data(), ds.data(), dsc.data(), need_dx ? dx.data() : nullptr);
      };
      if (skipped("kan_backward")) {
        backward();
        continue;
      }
      const auto bw = kanscale_layer_backward(s.in, s.out, s.G, s.k, s.batch, need_dx);
      const Stat tb = time_op(comm, backward, plan.warmup, plan.repeats);
      add_row("kan_backward", need_dx ? "with input gradient" : "without input gradient", bw.flops, bw.bytes, tb,
          ws + 4.0 * static_cast<double>(scratch.floats()));
    }
    // loss
    if (!skipped("mse")) {
      const double n = static_cast<double>(y.size());
      const Stat tl = time_op(comm, [&] { mse_forward_backward(y.data(), t.data(), y.size(), dy.data()); }, plan.warmup, plan.repeats);
      add_row("mse", "", 5 * n, 16 * n, tl, 0);
      for (auto& v : dy) v = u(gen);  // the loss overwrote it
    }
    // copies into buckets (scaled) and back, Adam: per parameter of this layer.
    // Cold, each op after its own eviction: one eviction shared by the small
    // ops (on buffers of their own) raised their held-out errors in 3 of 3
    // interleaved calibrations (Zen 3 VM, 7 Dec 2026): the first op after the
    // pass pays for its write-backs, the others do not.
    auto prefs = kan_parameter_refs(net);
    for (std::size_t p = 0; p < prefs.size(); ++p) {
      const std::size_t n = prefs[p].size();
      std::vector<float> g(n), bucket(n);
      for (auto& v : g) v = u(gen);
      const float inv = 0.5f;
      if (!skipped("bucket_copy")) {
        const Stat tc = time_op(comm, [&] { for (std::size_t i = 0; i < n; ++i) bucket[i] = g[i] * inv; }, plan.warmup, plan.repeats);
        add_row("bucket_copy", prefs[p].name, static_cast<double>(n), 8.0 * n, tc, 0);
      }
      if (!skipped("copy_back")) {
        const Stat tk = time_op(comm, [&] { std::copy(bucket.begin(), bucket.end(), g.begin()); }, plan.warmup, plan.repeats);
        add_row("copy_back", prefs[p].name, 0, 8.0 * n, tk, 0);
      }
      if (!skipped("adam")) {
        Adam adam;
        adam.init({n});
        std::vector<float> param(prefs[p].data, prefs[p].data + n);
        const Stat ta = time_op(comm, [&] { adam.update({param.data()}, {g.data()}); }, plan.warmup, plan.repeats);
        add_row("adam", prefs[p].name, 10.0 * n, 28.0 * n, ta, 0);
      }
    }
    // the batch (random samples held in memory, gathered by index)
    if (!skipped("load_batch")) {
      const Dataset data = held_batch_source(s, [&] { return u(gen); });
      const auto idx = shard_indices(4 * s.batch, 1, 0, plan.seed, 0);
      std::vector<float> X(static_cast<std::size_t>(B) * s.in), T(static_cast<std::size_t>(B) * s.out);
      const Stat tb = time_op(comm, [&] {
        for (int i = 0; i < B; ++i) data.sample(idx[static_cast<std::size_t>(i)], &X[static_cast<std::size_t>(i) * s.in], &T[static_cast<std::size_t>(i) * s.out]);
      }, plan.warmup, plan.repeats);
      add_row("load_batch", "", 0, 8.0 * s.batch * static_cast<double>(s.in + s.out), tb, 0);
    }
    // the training step's state held at once: Adam's two moments and a
    // bucket beside the parameters, gradients, activations and workspaces
    Adam adam;
    std::vector<std::size_t> sizes;
    for (const auto& p : kan_parameter_refs(net)) sizes.push_back(p.size());
    adam.init(sizes);
    std::vector<float> bucket(static_cast<std::size_t>(net.parameter_count()), 1.0f);
    peak = heap_in_use() - heap0;
  }
  return peak;
}

}  // namespace

namespace {

nlohmann::json shapes_json(const KernelPlan& plan) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& s : plan.shapes) a.push_back({s.batch, s.in, s.out, s.G, s.k});
  return a;
}

}  // namespace

namespace {
// The first of `keys` whose value in an earlier file's metadata `was`
// differs from this run's `now`, as "key (was, now now)"; empty if none.
std::string first_difference(const nlohmann::json& was, const nlohmann::json& now, std::initializer_list<const char*> keys) {
  for (const char* k : keys)
    if (!was.contains(k) || was[k] != now[k])
      return std::string(k) + " (" + (was.contains(k) ? was[k].dump() : "none") + ", now " + now[k].dump() + ")";
  return "";
}
}  // namespace

KernelsResume read_kernels_resume(const std::string& path, const nlohmann::json& meta, std::size_t plan_shapes) {
  const nlohmann::json j = read_json_file(path, "a kanscale measure kernels file");
  if (!j.is_object() || !j.contains("metadata") || !j["metadata"].is_object() || !j.contains("rows") || !j.contains("memory") ||
      !j["metadata"].contains("shapes_done"))
    throw InputError(path + ": not a kanscale measure kernels file (no metadata/rows/memory/shapes_done)");
  const auto& m = j["metadata"];
  if (const std::string other = first_difference(m, meta, {"plan", "backend", "ranks", "threads_per_rank", "repeats", "warmup", "seed", "shapes"});
      !other.empty())
    throw InputError(path + ": was measured with another " + other);
  // the skipping rule (--skip-from): the rounds it was computed from may lie
  // elsewhere now, the classes and threshold must be the same
  auto skip_rule = [](const nlohmann::json& md) {
    if (!md.contains("skipped_at_odd_shapes") || !md["skipped_at_odd_shapes"].is_object()) return nlohmann::json();
    nlohmann::json r = md["skipped_at_odd_shapes"];
    r.erase("from");
    return r;
  };
  if (const nlohmann::json was = skip_rule(m), now = skip_rule(meta); was != now)
    throw InputError(path + ": was measured with another --skip-from rule (" + (was.is_null() ? "none" : was.dump()) + ", now " +
                     (now.is_null() ? "none" : now.dump()) + ")");
  // shapes_done decides where the run continues: out of range, the plan
  // would be taken as complete with shapes missing
  const auto& sd = m["shapes_done"];
  if (!sd.is_number_integer() || sd.get<std::int64_t>() < 0 || sd.get<std::uint64_t>() > plan_shapes)
    throw InputError(path + ": key 'metadata.shapes_done': expected an integer from 0 to " + std::to_string(plan_shapes) +
                     " (the plan's shapes), got " + sd.dump());
  KernelsResume r;
  r.shapes_done = sd.get<std::size_t>();
  for (const char* k : {"rows", "memory"})
    if (!j[k].is_array()) throw InputError(path + ": key '" + std::string(k) + "': expected a list, got " + j[k].dump());
  for (std::size_t i = 0; i < j["rows"].size(); ++i) r.rows.push_back(kernel_record_from_json(j["rows"][i], path, i, true));
  for (std::size_t i = 0; i < j["memory"].size(); ++i) r.memory.push_back(kernel_memory_from_json(j["memory"][i], path, i, true));
  // every finished shape left one memory entry per rank
  const std::size_t ranks = meta["ranks"].get<std::size_t>();
  if (r.memory.size() != r.shapes_done * ranks)
    throw InputError(path + ": key 'metadata.shapes_done': " + std::to_string(r.shapes_done) + " shape(s) done at " +
                     std::to_string(ranks) + " rank(s), but 'memory' holds " + std::to_string(r.memory.size()) +
                     " entries (an interrupted or edited file?)");
  r.metadata = m;
  return r;
}

namespace {

// --resume: rank 0 reads and checks; every rank learns where to start
// (shapes_done) or that the file is unusable.
KernelsResume resume_kernels(Comm& comm, const std::string& resume, const nlohmann::json& meta, std::size_t plan_shapes) {
  KernelsResume done;
  float status[2] = {0, 0};  // shapes done, error
  std::string resume_error;
  if (comm.rank() == 0 && !resume.empty()) {
    try {
      done = read_kernels_resume(resume, meta, plan_shapes);
      status[0] = static_cast<float>(done.shapes_done);
    } catch (const InputError& e) {
      resume_error = e.what();
      status[1] = 1;
    }
  }
  comm.broadcast(status, 2, 0);
  if (status[1] > 0) throw InputError(comm.rank() == 0 ? resume_error : resume + ": unusable (see rank 0)");
  done.shapes_done = static_cast<std::size_t>(status[0]);
  return done;
}

// The earlier rounds a --skip-from rule was computed from were measured as
// this run will be (backend, ranks, threads, warm-up, eviction, CPU): a
// class's error over rounds measured otherwise says nothing of this run's
// shapes. Read on rank 0; its verdict is every rank's.
void check_skip_sources(Comm& comm, const std::vector<std::string>& from, const nlohmann::json& meta) {
  std::string error;
  if (comm.rank() == 0) {
    try {
      for (const auto& f : from) {
        const nlohmann::json j = read_json_file(f, "a kanscale measure kernels file");
        if (!j.is_object() || !j.contains("metadata") || !j["metadata"].is_object())
          throw InputError("--skip-from " + f + ": not a kanscale measure kernels file (no metadata)");
        if (const std::string other =
                first_difference(j["metadata"], meta, {"backend", "ranks", "threads_per_rank", "warmup", "flush_between_repeats_bytes", "cpu_model"});
            !other.empty())
          throw InputError("--skip-from " + f + ": measured with another " + other + ": give this run's earlier rounds");
      }
    } catch (const InputError& e) {
      error = e.what();
    }
  }
  float failed = error.empty() ? 0.0f : 1.0f;
  comm.broadcast(&failed, 1, 0);
  if (failed > 0) throw InputError(comm.rank() == 0 ? error : "--skip-from: unusable (see rank 0)");
}

KernelRecord kernel_row(const KernelShape& s, const std::string& op, const std::string& detail, const std::string& cache, double flops,
                        double bytes, const Stat& t, double ws, int rank) {
  KernelRecord r;
  r.op = op;
  r.detail = detail;
  r.cache = cache;
  r.batch = s.batch;
  r.in = s.in;
  r.out = s.out;
  r.grid_size = s.G;
  r.spline_order = s.k;
  r.flops = flops;
  r.bytes = bytes;
  r.time_median_s = t.median;
  r.time_iqr_s = t.iqr;
  r.time_cv = t.cv;
  r.unstable = t.cv > 0.05;
  r.samples = static_cast<int>(t.n);
  r.workspace_bytes = ws;
  r.rank = rank;
  return r;
}

// The JSON and CSV of every finished shape (all ranks' rows), atomically.
void write_kernels_files(const std::string& json, const std::string& csv, const nlohmann::json& meta, const KernelsResume& done) {
  std::vector<std::pair<std::string, std::string>> files;
  if (!json.empty()) {
    nlohmann::json rows = nlohmann::json::array(), memory = nlohmann::json::array();
    for (const auto& r : done.rows) rows.push_back(to_json(r));
    for (const auto& m : done.memory) memory.push_back(to_json(m));
    files.emplace_back(json, nlohmann::json{{"metadata", meta}, {"rows", rows}, {"memory", memory}}.dump(2) + "\n");
  }
  if (!csv.empty()) {
    std::ostringstream c;
    c << std::setprecision(9);
    c << "op,batch,in,out,grid_size,spline_order,detail,flops,bytes,time_median_s,time_iqr_s,time_cv,unstable,workspace_bytes,rank\n";
    for (const KernelRecord& r : done.rows) {
      c << r.op << "," << r.batch << "," << r.in << "," << r.out << "," << r.grid_size << "," << r.spline_order << "," << r.detail << ","
        << r.flops << "," << r.bytes << "," << r.time_median_s << "," << r.time_iqr_s << "," << r.time_cv << "," << (r.unstable ? 1 : 0)
        << "," << r.workspace_bytes << "," << r.rank << "\n";
    }
    add_csv_output(files, csv, c.str(), provenance_of(meta), {{"metadata", meta}});
  }
  write_files_atomic(files);
}

}  // namespace

std::vector<KernelRecord> run_kernel_plan(Comm& comm, const KernelPlan& plan_in, const std::string& json, const std::string& csv,
                                       const std::string& command_line, const std::string& resume) {
  KernelPlan plan = plan_in;
  set_cpu_threads(plan.threads);
  const int rank = comm.rank();
#if KANSCALE_HAVE_CUDA
  std::unique_ptr<Gpu> gpu;
  if (plan.backend == "cuda") {
    std::string why;
    if (!cuda_device_available(&why)) throw std::runtime_error("--backend cuda on rank " + std::to_string(rank) + ": " + why);
    gpu = std::make_unique<Gpu>(local_device_index(cuda_device_count()));
  }
#define KS_GPU_OR(on_gpu, on_cpu) (gpu ? (on_gpu) : (on_cpu))
#else
  if (plan.backend == "cuda") throw InputError("backend cuda: this kanscale was built without CUDA (nvcc was not found)");
#define KS_GPU_OR(on_gpu, on_cpu) (on_cpu)
#endif
  const double runtime_mine = KS_GPU_OR(gpu->device_used_bytes(), rss_bytes());
  const auto hosts = comm.hosts();
  std::set<std::string> nodes(hosts.begin(), hosts.end());
  // an "Nx_llc" eviction: sized by this node's last-level cache and its ranks
  std::string flush_rule;
  const int ranks_here = static_cast<int>(std::count(hosts.begin(), hosts.end(), host()));
  const LastLevelCache llc = plan.backend == "cpu" ? last_level_cache() : LastLevelCache{};
  if (plan.flush_llc_multiple > 0 && plan.backend == "cpu") plan.flush_bytes = llc_flush_bytes(plan.flush_llc_multiple, ranks_here, llc, &flush_rule);
  nlohmann::json meta = {{kProvenanceKey, to_json(provenance(command_line))}, {"plan", plan.name}, {"backend", plan.backend}, {"cpu_model", cpu_model()},
                         {"gpu", KS_GPU_OR(gpu->description(), std::string("none"))},
                         {"machine", machine_json(this_machine(KS_GPU_OR(gpu->description(), std::string("none")), comm.library_version()))},
                         {"busy_runnable_threads", other_runnable_threads(comm.size() - 1)},
                         {"host", host()}, {"hosts", hosts}, {"collective_library", comm.library_version()},
                         {"ranks", comm.size()}, {"nodes", nodes.size()},
                         {"concurrency_ranks_per_node", static_cast<double>(comm.size()) / std::max<std::size_t>(1, nodes.size())},
                         {"threads_per_rank", plan.threads}, {"repeats", plan.repeats}, {"target_rel_halfwidth", plan.target_rel_halfwidth}, {"warmup", plan.warmup},
                         {"seed", plan.seed}, {"shapes", shapes_json(plan)}, {"shapes_done", 0},
                         {"flush_between_repeats_bytes", plan.flush_bytes},
                         {"effective_cache_what", "largest buffer a rank reads at more than the geometric mean of its in-cache and "
                                                  "in-memory bandwidths, all ranks reading at once (0: not probed)"},
                         {"runtime_memory_what", KS_GPU_OR("device memory in use before any kanscale allocation (CUDA context)",
                                                           "resident set size before any shape (MPI, OpenMP, libraries)")},
                         {"peak_memory_what", KS_GPU_OR("device allocation high-water mark of a training step (kanscale's allocations)",
                                                        "heap bytes held at the peak of a training step (glibc's accounting)")},
                         {"unstable_threshold_cv", 0.05}};
  if (!flush_rule.empty()) meta["flush_between_repeats_rule"] = flush_rule;
  if (!plan.skip_from.empty()) {
    meta["skipped_at_odd_shapes"] = {{"from", plan.skip_from}, {"under", plan.skip_under}, {"classes", plan.skip_classes}};
    check_skip_sources(comm, plan.skip_from, meta);
  }
  KernelsResume done = resume_kernels(comm, resume, meta, plan.shapes.size());
  // a fixed eviction smaller than twice the node's last-level cache may leave the cold ops' data cached
  if (comm.rank() == 0 && plan.backend == "cpu" && plan.flush_bytes > 0 && plan.flush_llc_multiple <= 0) {
    if (llc.bytes > 0 && plan.flush_bytes * llc_sharing_ranks(ranks_here, llc) < 2 * llc.bytes)
      std::cerr << "kanscale: warning: the cold repetitions' eviction (" << format_bytes(plan.flush_bytes) << " a rank) is under twice this node's "
                << "last-level cache (" << format_bytes(llc.bytes) << "): cold timings may find their data cached; flush_between_repeats: 2x_llc "
                << "sizes it to the cache\n";
  }
  // the inputs are good: now say whether the machine is busy
  if (comm.rank() == 0 && meta["busy_runnable_threads"].get<int>() > 0)
    std::cerr << "kanscale: warning: " << meta["busy_runnable_threads"].get<int>()
              << " other runnable thread(s) on this machine as the measurement starts: every timing means less\n";
  const std::size_t start = done.shapes_done;
  // The machine's ceilings belong to the measurement: a resumed file keeps
  // the ones (and the date) it was started with, and records the resume.
  static const char* const kKept[] = {"gemm_flops_per_s", "memcpy_bytes_per_s", "runtime_memory_bytes",
                                      "effective_cache_bytes", "cache_probe_bytes_GBps", "cpu_model", "gpu", "machine", "host", "hosts"};
  if (resume.empty()) {
    const double gemm = KS_GPU_OR(gpu->sgemm_flops(), measure_gemm_flops(plan.threads));
    const double membw = KS_GPU_OR(gpu->copy_bandwidth(), memcpy_bandwidth(5));
    set_cpu_threads(plan.threads);
    meta["runtime_memory_bytes"] = comm.allreduce_max(runtime_mine);
    meta["effective_cache_bytes"] = KS_GPU_OR(0.0, comm.allreduce_max(probe_effective_cache(comm)));
    meta["cache_probe_bytes_GBps"] = g_probe;
    meta["gemm_flops_per_s"] = gemm;
    meta["memcpy_bytes_per_s"] = membw;
  } else if (rank == 0) {
    nlohmann::json resumed = done.metadata.contains("resumed") && done.metadata["resumed"].is_array() ? done.metadata["resumed"]
                                                                                                   : nlohmann::json::array();
    resumed.push_back({{"date_utc", meta[kProvenanceKey]["date_utc"]}, {"host", host()}, {"shapes_done_before", done.shapes_done},
                       {"command_line", command_line}});
    for (const char* k : kKept)
      if (done.metadata.contains(k)) meta[k] = done.metadata[k];
    const nlohmann::json& started = provenance_of(done.metadata);
    if (started.contains("date_utc")) meta[kProvenanceKey]["date_utc"] = started["date_utc"];
    meta["resumed"] = resumed;
  }

  auto write = [&](std::size_t shapes_done) {
    meta["shapes_done"] = shapes_done;
    write_kernels_files(json, csv, meta, done);
  };

  Progress progress(plan.shapes.size() - std::min(start, plan.shapes.size()), "shapes");
  for (std::size_t si = start; si < plan.shapes.size(); ++si) {
    if (plan.max_shapes > 0 && si - start >= static_cast<std::size_t>(plan.max_shapes)) break;
    const KernelShape& s = plan.shapes[si];
    nlohmann::json mine = nlohmann::json::array();
    std::string cache = "warm";
    // (the rows' own heap is the benchmark's, not the step's: the peak below
    // leaves it out; it was ~2 KiB a row, so a shape with classes skipped
    // read lower)
    double rows_heap = 0;
    auto add_row = [&](const std::string& op, const std::string& detail, double flops, double bytes, const Stat& t, double ws) {
      const double before = heap_in_use();
      mine.push_back(to_json(kernel_row(s, op, detail, cache, flops, bytes, t, ws, rank)));
      rows_heap += heap_in_use() - before;
    };
    // warm: repetitions back to back; cold: caches evicted before each one.
    // A skipped class is timed at every other shape (the first kept).
    auto skip_for = [&](const std::string& pass) {
      g_skip.clear();
      if (si % 2 == 0) return;
      for (const auto& [cls, error] : plan.skip_classes) {
        const auto at = cls.find('@');
        if ((at == std::string::npos ? std::string("warm") : cls.substr(at + 1)) == pass) g_skip.insert(cls.substr(0, at));
      }
    };
    g_target = plan.target_rel_halfwidth;
    g_flush.clear();
    skip_for("warm");
    const double peak = KS_GPU_OR(measure_shape_cuda(comm, *gpu, plan, si, add_row), measure_shape_cpu(comm, plan, si, add_row) - rows_heap);
    if (plan.flush_bytes > 0 && plan.backend == "cpu") {
      cache = "cold";
      skip_for("cold");
      g_flush.assign(static_cast<std::size_t>(plan.flush_bytes), 1);
      measure_shape_cpu(comm, plan, si, add_row);
      g_flush.clear();
    }
    g_skip.clear();
    const KernelMemoryRecord memory{s.in, s.out, s.batch, s.G, s.k, peak, rank};
    // every finished shape is on disk at once (all ranks' rows)
    const auto all = comm.gather(nlohmann::json{{"rows", mine}, {"memory", to_json(memory)}}.dump());
    if (rank != 0) continue;
    for (std::size_t r = 0; r < all.size(); ++r) {
      const auto part = nlohmann::json::parse(all[r]);
      const std::string from = "rank " + std::to_string(r) + "'s measurements";
      for (std::size_t i = 0; i < part["rows"].size(); ++i) done.rows.push_back(kernel_record_from_json(part["rows"][i], from, i, true));
      done.memory.push_back(kernel_memory_from_json(part["memory"], from, 0, true));
    }
    write(si + 1);
    progress.finished("[" + std::to_string(s.batch) + ", " + std::to_string(s.in) + ", " + std::to_string(s.out) + ", G=" +
                      std::to_string(s.G) + ", k=" + std::to_string(s.k) + "]");
  }
  g_flush.clear();
  g_flush.shrink_to_fit();
  if (rank != 0) return {};
  progress.close();
  if (start >= plan.shapes.size()) write(plan.shapes.size());
  return done.rows;
#undef KS_GPU_OR
}

}  // namespace ks
