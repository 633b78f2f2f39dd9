#include "plan.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "measure/kernel_bench.hpp"
#include "measure/torch_run.hpp"
#include "model/kan_model.hpp"
#include "model/limits.hpp"
#include "formats/measurement_records.hpp"
#include "model/units.hpp"
#include "formats/yaml_reader.hpp"

namespace ks {

std::string ValidationCase::label() const {
  std::string w;
  for (auto x : widths) w += (w.empty() ? "" : "-") + std::to_string(x);
  return "np" + std::to_string(ranks) + " [" + w + "] G" + std::to_string(grid_size) + " b" + std::to_string(batch) +
         " cap " + format_bytes(bucket_cap_bytes) + (transport.empty() ? "" : " " + transport) +
         (oversubscribed ? " (oversubscribed)" : "");
}

// The MPI transports a plan can name, as Open MPI MCA settings.
//  shm:      shared memory between the ranks of a node (the vader BTL);
//  tcp:      TCP over the loopback interface;
//  tcp-slow: TCP with 16 KiB socket buffers, which caps the loopback's
//            all-reduce bandwidth near 0.7 GB/s (measured here: a 1 MiB
//            all-reduce 1.4 ms against 0.3 ms on plain tcp), a network
//            slower than the cores, as between nodes, where communication
//            dominates. The microbenchmarks that calibrate it run with the
//            same settings.
std::vector<std::pair<std::string, std::string>> transport_mca(const std::string& t) {
  if (t == "shm") return {{"btl", "self,vader"}};
  if (t == "tcp") return {{"btl", "self,tcp"}};
  if (t == "tcp-slow") return {{"btl", "self,tcp"}, {"btl_tcp_sndbuf", "16384"}, {"btl_tcp_rcvbuf", "16384"}};
  return {};
}

namespace {
bool known_transport(const std::string& t) { return !transport_mca(t).empty(); }

// KAN widths lists, each a model kanscale can build.
std::vector<std::vector<std::int64_t>> widths_lists(YamlMap& m, const std::string& key) {
  // the trainer keeps widths in ints
  auto ws = m.integer_lists(key, 1, 2);
  for (std::size_t i = 0; i < ws.size(); ++i)
    if (const std::string why = kan_size_problem(KanShape{ws[i], 5, 3}); !why.empty()) m.fail_item(key, i, why);
  return ws;
}
}  // namespace

namespace {
// A matrix of live runs (a plan's cases:, or its calibration's measure.live:):
// ranks x transports x widths x grid sizes x batches x bucket caps, one-rank
// runs once per model and batch.
// `one_gpu`: a GPU plan's profiled runs (profile:), one GPU each at
// PyTorch's default bucket cap (25 MiB): no ranks or bucket_caps keys.
std::vector<ValidationCase> case_matrix(YamlMap& c, bool one_gpu = false) {
  std::vector<ValidationCase> out;
  if (one_gpu)
    for (const char* key : {"ranks", "oversubscribed_ranks", "transports", "bucket_caps"})
      if (c.has(key)) c.fail(key, "profiled runs are one GPU's, at PyTorch's default bucket cap; leave it out");
  const auto ranks = one_gpu ? std::vector<std::int64_t>{1} : c.integer_list("ranks", 1, 1, kMaxGpus);
  std::vector<std::int64_t> over;
  if (c.has("oversubscribed_ranks")) over = c.integer_list("oversubscribed_ranks", 1, 1, kMaxGpus);
  const auto grids = c.integer_list("grid_sizes", 1, 1, kMaxGridSize);
  const auto batches = c.integer_list("batch_per_gpu", 1, 1, kMaxBatch);
  std::vector<std::string> transports = {""};
  if (c.has("transports")) {
    transports = c.string_list("transports");
    for (std::size_t i = 0; i < transports.size(); ++i) {
      if (!known_transport(transports[i])) c.fail_item("transports", i, "expected shm, tcp or tcp-slow, got \"" + transports[i] + "\"");
      for (std::size_t j = 0; j < i; ++j)
        if (transports[j] == transports[i]) c.fail_item("transports", i, "\"" + transports[i] + "\" is given twice");
    }
  }
  const auto widths = widths_lists(c, "widths");
  const std::vector<double> caps = one_gpu ? std::vector<double>{25.0 * 1024 * 1024} : c.quantity_list("bucket_caps", Quantity::size, Bound::positive);
  c.finish();
  auto add_all = [&](const std::vector<std::int64_t>& rs, bool oversub) {
    // oversubscribed ranks (reported, not judged) run on the first transport only
    const std::vector<std::string> ts = oversub ? std::vector<std::string>{transports.front()} : transports;
    for (const auto& t : ts)
      for (auto r : rs)
        for (const auto& w : widths)
          for (auto g : grids)
            for (auto b : batches)
              for (double cap : caps) {
                ValidationCase vc;
                vc.ranks = static_cast<int>(r);
                vc.widths = w;
                vc.grid_size = static_cast<int>(g);
                vc.batch = b;
                vc.bucket_cap_bytes = cap;
                vc.transport = r > 1 ? t : "";
                vc.oversubscribed = oversub;
                // One-rank cases do not communicate: one per transport list,
                // and one per bucket-cap list (the cap only regroups the
                // same gradient copies; it is the speedups' baseline).
                if (r == 1) vc.bucket_cap_bytes = caps.front();
                bool dup = false;
                for (const auto& e : out)
                  dup = dup || (e.ranks == vc.ranks && e.widths == vc.widths && e.grid_size == vc.grid_size &&
                                e.batch == vc.batch && e.bucket_cap_bytes == vc.bucket_cap_bytes &&
                                e.transport == vc.transport && e.oversubscribed == vc.oversubscribed);
                if (!dup) out.push_back(vc);
              }
  };
  add_all(ranks, false);
  add_all(over, true);
  return out;
}
}  // namespace

std::vector<std::string> plan_inputs(const ValidationPlan& p) {
  return {p.file, p.cluster_file, p.calibration_file, p.measure.enabled ? p.measure.kernels_plan : std::string(),
          p.measure.enabled ? p.measure.torch_ops_plan : std::string(), p.published.file};
}

// calibration.measure: what every round measures to fit its calibration
// (kernels, collectives, interference, progress, transports, live runs)
// A pytorch plan's: PyTorch's op classes (measure torch-ops) and gloo's
// all-reduce and broadcast through torch.distributed; one calibration, "gloo".
// calibration.measure.interference: bench interference's all-reduce size
static void read_interference_bytes(YamlMap& ms, ValidationPlan& p) {
  p.measure.interference_bytes = ms.string_opt("interference").value_or("");
  if (p.measure.interference_bytes.empty()) return;
  try {
    const double b = parse_size_bytes(p.measure.interference_bytes);
    if (!(b >= kProgressMinBytes && b <= kProgressMaxBytes)) throw UnitError("expected a size from 4B to 4GiB (bench interference --bytes)");
  } catch (const UnitError& e) {
    ms.fail("interference", e.what());
  }
}

static void read_stopping_rule(YamlMap& ms, ValidationPlan& p) {
  if (auto t = ms.number_opt("target_rel_halfwidth", Bound::any)) {
    if (!(*t >= 0 && *t < 1)) ms.fail("target_rel_halfwidth", "expected a fraction from 0 (take cap_samples always) to below 1");
    p.measure.target_rel_halfwidth = *t;
  }
  p.measure.cap_samples_given = ms.has("cap_samples");
  p.measure.cap_samples = static_cast<int>(ms.integer_opt("cap_samples", 6, 10000).value_or(kDefaultCapSamples));
}

// A GPU node's (backend cuda): profiled 1-GPU runs instead of torch_ops,
// NCCL's all-reduce through torch.distributed at `ranks` GPUs (1: none),
// live runs; no gloo interference or broadcast.
static void read_torch_gpu_measure_section(YamlMap& ms, ValidationPlan& p) {
  for (const char* cpu_only : {"torch_ops", "interference", "broadcast"})
    if (ms.has(cpu_only))
      ms.fail(cpu_only, "for a CPU plan (backend cpu); a GPU plan measures its op classes from profiled runs (profile:), NCCL's all-reduce and "
                        "live runs");
  p.measure.enabled = true;
  read_stopping_rule(ms, p);
  p.measure.ranks = static_cast<int>(ms.integer_opt("ranks", 1, kMaxGpus).value_or(1));  // (1: no sweep)
  p.measure.allreduce = ms.string_opt("allreduce").value_or(p.measure.allreduce);
  p.measure.transports = {"nccl"};
  YamlMap pr = ms.map("profile");
  p.measure.profile = case_matrix(pr, true);
  if (p.measure.profile.size() < 3)
    ms.fail("profile", "expected at least 3 shapes (widths x grid_sizes x batch_per_gpu) to fit each class's fixed and per-element terms, got " +
                    std::to_string(p.measure.profile.size()));
  if (ms.has_map("live")) {
    YamlMap l = ms.map("live");
    if (l.has("transports")) l.fail("transports", "a pytorch plan's live runs use torch.distributed; leave transports out");
    p.measure.live = case_matrix(l);
  }
}

static void read_torch_measure_section(YamlMap& ms, ValidationPlan& p) {
  for (const char* mpi_only : {"kernels", "progress", "transports"})
    if (ms.has(mpi_only))
      ms.fail(mpi_only, "for implementation kanscale; a pytorch plan measures torch_ops, gloo's allreduce and broadcast, "
                        "the interference of gloo's threads, and live runs");
  if (p.backend == "cuda") return read_torch_gpu_measure_section(ms, p);
  if (ms.has("profile")) ms.fail("profile", "for a GPU plan (backend cuda); a CPU plan times its op classes with torch_ops");
  p.measure.enabled = true;
  read_stopping_rule(ms, p);
  p.measure.ranks = static_cast<int>(ms.integer("ranks", 2, kMaxGpus));
  p.measure.torch_ops_plan = ms.path("torch_ops");
  try {
    load_torch_ops_plan(p.measure.torch_ops_plan);
  } catch (const InputError& e) {
    ms.fail("torch_ops", "\"" + p.measure.torch_ops_plan + "\" is not a torch-ops plan (configs/measure/pytorch-cpu.yaml): " + e.what());
  }
  p.measure.allreduce = ms.string_opt("allreduce").value_or(p.measure.allreduce);
  p.measure.broadcast = ms.string_opt("broadcast").value_or("");
  // how much compute slows while gloo's threads run an all-reduce
  // (bench interference --backend gloo, on configs/workloads/interference-pytorch.yaml)
  read_interference_bytes(ms, p);
  p.measure.transports = {"gloo"};
  // live PyTorch DDP jobs on the calibration's own shapes: what a whole
  // step costs beyond the op classes measured one at a time (the autograd
  // graph a forward records, the working set of a whole step, the Python
  // between ops, gloo's threads beside the compute; calibration_live)
  if (ms.has_map("live")) {
    YamlMap l = ms.map("live");
    if (l.has("transports")) l.fail("transports", "a pytorch plan's live runs use gloo, its one transport; leave transports out");
    p.measure.live = case_matrix(l);
  }
}

static void read_measure_section(YamlMap& ms, ValidationPlan& p) {
  if (p.implementation == "pytorch") return read_torch_measure_section(ms, p);
  p.measure.enabled = true;
  read_stopping_rule(ms, p);
  p.measure.ranks = static_cast<int>(ms.integer("ranks", 1, kMaxGpus));
  p.measure.kernels_plan = ms.path("kernels");
  try {  // read as what it claims to be before the run directory gets a copy
    load_kernel_plan(p.measure.kernels_plan);
  } catch (const InputError& e) {
    ms.fail("kernels", "\"" + p.measure.kernels_plan + "\" is not a kernel measurement plan (configs/measure/): " + e.what());
  }
  // kernels rounds after the first: a class whose fit over the earlier
  // rounds predicts each left-out shape within this (mean) error is timed at
  // every other shape (measure kernels --skip-from); 0: every shape, always
  if (auto u = ms.number_opt("skip_shapes_under", Bound::any)) {
    if (!(*u == 0 || (*u >= 0.001 && *u < 1)))
      ms.fail("skip_shapes_under", "expected 0 (time every shape in every round) or a fraction from 0.001 to below 1");
    if (*u > 0 && p.backend != "cpu")
      ms.fail("skip_shapes_under", "for the CPU kernels (backend cpu)");
    p.measure.skip_shapes_under = *u;
  }
  p.measure.allreduce = ms.string_opt("allreduce").value_or(p.measure.allreduce);
  if (ms.has("broadcast")) {
    p.measure.broadcast = ms.string("broadcast");
    if (p.measure.broadcast.find_first_not_of(" \t") == std::string::npos)
      ms.fail("broadcast", "expected sweep options such as \"-b 8 -e 1M -f 2 -n 50 -w 10\"");
    if (p.measure.ranks < 2) ms.fail("broadcast", "a broadcast sweep needs ranks of 2 or more");
  }
  read_interference_bytes(ms, p);
  p.measure.progress_sizes = ms.string_opt("progress").value_or("");
  if (!p.measure.progress_sizes.empty()) {
    try {
      (void)parse_size_list(p.measure.progress_sizes, kProgressMinBytes, kProgressMaxBytes);
    } catch (const UnitError& e) {
      ms.fail("progress", std::string("expected comma-separated sizes such as \"64KiB,1MiB\": ") + e.what());
    }
    if (p.measure.ranks < 2) ms.fail("progress", "the progress benchmark needs ranks of 2 or more");
    if (p.backend != "cpu") ms.fail("progress", "the progress benchmark measures MPI's progress: backend cpu only");
  }
  if (ms.has("transports")) {
    const auto ts = ms.string_list("transports");
    for (std::size_t i = 0; i < ts.size(); ++i) {
      if (!known_transport(ts[i])) ms.fail_item("transports", i, "expected shm, tcp or tcp-slow, got \"" + ts[i] + "\"");
      for (std::size_t j = 0; j < i; ++j)  // each transport's files would overwrite the other's
        if (ts[j] == ts[i]) ms.fail_item("transports", i, "\"" + ts[i] + "\" is given twice");
      p.measure.transports.push_back(ts[i]);
    }
  }
  if (p.measure.transports.empty()) p.measure.transports.push_back("");
  if (ms.has_map("live")) {
    YamlMap l = ms.map("live");
    p.measure.live = case_matrix(l);
    for (const auto& vc : p.measure.live)
      if (vc.ranks > 1 && std::find(p.measure.transports.begin(), p.measure.transports.end(), vc.transport) == p.measure.transports.end())
        ms.fail("live", "its runs use transport \"" + vc.transport + "\", which calibration.measure.transports does not measure");
  }
}

// published: the study's findings (a map, or the findings file the study
// reads too), for validate --published
static void read_published_spec(YamlMap& m, ValidationPlan& p) {
  std::string loaded;
  if (auto pub = m.map_or_file_opt("published", &loaded)) {
    p.published.enabled = true;
    if (!loaded.empty()) p.published.file = loaded;
    // a study's keys (study/scenario: the inference's findings)
    for (const char* k : {"kind", "weak_drop_then_plateau", "speedup_match"}) pub->ignore(k);
    p.published.workload_shown = pub->string("workload");
    p.published.workload = pub->path("workload");
    if (pub->has("gpus")) {
      p.published.gpus.clear();
      for (auto g : pub->integer_list("gpus", 1, 2, kMaxGpus)) p.published.gpus.push_back(static_cast<int>(g));
    }
    p.published.speedup = pub->number("speedup", Bound::positive);
    p.published.efficiency = pub->number("efficiency_pct", Bound::positive);
    const auto ov = pub->number_list_opt("overhead_pct", Bound::non_negative);
    if (!ov || ov->size() != 2) pub->fail("overhead_pct", "expected [lowest, highest] in percent");
    p.published.overhead_min_pct = (*ov)[0];
    p.published.overhead_max_pct = (*ov)[1];
    if (pub->has("model_widths")) p.published.model_widths = widths_lists(*pub, "model_widths");
    p.published.source = pub->string("source");
    pub->finish();
  }
}

ValidationPlan load_validation_plan(const std::string& path, bool need_cases) {
  YamlMap m = YamlMap::load_file(path);
  ValidationPlan p;
  p.file = path;
  p.name = m.string("name");
  p.cluster_shown = m.string("cluster");
  p.cluster_file = m.path("cluster");
  p.backend = m.choice_opt("backend", {"cpu", "cuda"}).value_or("cpu");
  // "efficient-kan" is the former name of pytorch
  p.implementation = m.choice_opt("implementation", {"kanscale", "pytorch", "efficient-kan"}).value_or("kanscale");
  if (p.implementation == "efficient-kan") p.implementation = "pytorch";
  p.threads_per_rank = static_cast<int>(m.integer_opt("threads_per_rank", 1, 1024).value_or(1));
  p.launcher = m.choice_opt("launcher", {"mpirun", "srun"}).value_or("mpirun");
  p.gpus_per_node = static_cast<int>(m.integer_opt("gpus_per_node", 1, kMaxGpusPerNode).value_or(0));
  p.steps = static_cast<int>(m.integer_opt("steps", 3, kMaxLiveSteps).value_or(30));
  // every round runs every case: a thousand is already weeks of running
  p.rounds = static_cast<int>(m.integer_opt("rounds", 1, 1000).value_or(3));
  p.spline_order = static_cast<int>(m.integer_opt("spline_order", 1, kMaxSplineOrder).value_or(3));
  // runs of the whole plan, judged together (verdict.hpp): three at least, a verdict needs them
  p.runs = static_cast<int>(m.integer_opt("runs", 1, 20).value_or(1));
  if (p.runs == 2) m.fail("runs", "2 runs cannot be judged against each other; expected 1 (one run, judged alone) or 3 to 20");
  if (auto v = m.map_opt("verdict")) {
    VerdictThresholds& t = p.verdict;
    auto pct = [&](const char* key, double& out, double lo, double hi) {
      const auto x = v->number_opt(key, Bound::any);
      if (!x) return;
      if (!(*x >= lo && *x <= hi)) {
        char b[160];
        std::snprintf(b, sizeof b, "%g is out of range; expected %g to %g", *x, lo, hi);
        v->fail(key, b);
      }
      out = *x;
    };
    pct("mean_factor", t.mean_factor, 1, 10);
    pct("mean_points", t.mean_points, 0, 100);
    pct("group_bias_pct", t.group_bias_pct, 0, 100);
    pct("too_fast_min_pct", t.too_fast_min_pct, 0, 100);
    pct("too_fast_max_pct", t.too_fast_max_pct, 0, 100);
    pct("coverage_min_pct", t.coverage_min_pct, 0, 100);
    pct("half_width_factor", t.half_width_factor, 0.1, 100);
    pct("inconclusive_p90_pct", t.inconclusive_p90_pct, 0, 1000);
    if (t.too_fast_min_pct > t.too_fast_max_pct) v->fail("too_fast_min_pct", "is above too_fast_max_pct");
    v->finish();
    // the thresholds judge runs: 3 or more of the whole plan
    if (p.runs < 3)
      m.fail("verdict", "a verdict judges 3 or more runs of the plan, but runs is " + std::to_string(p.runs) + "; set runs: 3 (or more) or leave verdict out");
  }
  p.interval_samples = static_cast<int>(m.integer_opt("interval_samples", 0, 100000).value_or(100));
  // calibration: a file, "datasheet", or {measure: {...}} within the rounds
  if (!m.has("calibration")) m.fail("calibration", "missing required key (a calibration file, datasheet, or {measure: ...})");
  if (m.has_map("calibration")) {
    YamlMap c = m.map("calibration");
    YamlMap ms = c.map("measure");
    read_measure_section(ms, p);
    ms.finish();
    c.finish();
  } else {
    const std::string cal = m.string("calibration");
    if (cal == "datasheet") {
      p.datasheet = true;
    } else {
      p.calibration_shown = cal;
      p.calibration_file = m.path("calibration");
    }
  }
  if (auto b = m.map_opt("bound")) {
    if (b->has("noise_factor")) {
      p.noise_factor = b->number("noise_factor", Bound::positive);
      p.noise_floor_pct = b->number_opt("floor_pct", Bound::non_negative).value_or(0.0);
      p.exposed_floor_pct = b->number_opt("exposed_floor_pct", Bound::non_negative).value_or(0.0);
    } else {
      p.bound_mean_pct = b->number("mean_abs_pct", Bound::positive);
      p.bound_max_pct = b->number("max_abs_pct", Bound::positive);
    }
    b->finish();
  }
  read_published_spec(m, p);
  if (p.implementation == "pytorch") {
    // PyTorch ranks are started by kanscale train on this node, over gloo's TCP (or nccl)
    if (p.launcher == "srun") m.fail("launcher", "a pytorch plan's ranks are started by kanscale train on one node: use mpirun (the default)");
  }
  if (m.has("cases")) {
    YamlMap c = m.map("cases");
    if (p.implementation == "pytorch" && c.has("transports"))
      c.fail("transports", "MPI transports do not apply to a pytorch plan (its ranks talk over gloo)");
    p.cases = case_matrix(c);

    if (p.measure.enabled && p.implementation != "pytorch") {  // (a pytorch plan's ranks talk over gloo, which it measures)
      for (const auto& vc : p.cases) {
        if (vc.ranks < 2) continue;
        if (std::find(p.measure.transports.begin(), p.measure.transports.end(), vc.transport) == p.measure.transports.end())
          m.fail("calibration", "the cases use transport \"" + vc.transport + "\", which calibration.measure.transports does not measure");
      }
    }
  } else if (need_cases && !p.published.enabled) {
    m.fail("cases", "missing required key (or a published: section)");
  }
  m.finish();
  return p;
}

}  // namespace ks
