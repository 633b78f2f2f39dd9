#include "config_files.hpp"

#include "base/data_dir.hpp"

#include <algorithm>
#include <filesystem>
#include <cstdio>
#include <cmath>
#include <limits>

#include "kanscale/build_info.hpp"
#include "formats/yaml_reader.hpp"
#include "formats/corpus.hpp"
#include "model/priors.hpp"
#include "model/kan_model.hpp"
#include "model/limits.hpp"
#include "model/machine.hpp"

namespace ks {

// ---------------------------------------------------------------- cluster
// gpu.sheet: a GPU model of configs/gpus/ (issue 57: GPU facts live once per
// model), looked for beside the cluster file (../gpus/NAME.yaml) and then in
// the data directory; an unknown model is refused.
static GpuSheet cluster_gpu_sheet(YamlMap& g, const std::string& cluster_file) {
  const std::string name = g.string("sheet");
  if (name.empty() || name.find('/') != std::string::npos || name[0] == '.')
    g.fail("sheet", "expected a GPU model's name in configs/gpus/, e.g. a100-sxm4-40gb");
  const std::filesystem::path beside = std::filesystem::path(cluster_file).parent_path() / ".." / "gpus" / (name + ".yaml");
  if (std::filesystem::is_regular_file(beside)) return load_gpu_sheet(beside.string());
  const std::string dir = data_dir().path + "/configs/gpus";
  if (std::filesystem::is_regular_file(dir + "/" + name + ".yaml")) return load_gpu_sheet(dir + "/" + name + ".yaml");
  g.fail("sheet", "unknown GPU model \"" + name + "\": no " + name + ".yaml in " + beside.parent_path().lexically_normal().string() +
                      " or " + dir);
}

static Cluster read_cluster(YamlMap m) {
  Cluster c;
  c.file = m.file();
  c.name = m.string("name");
  c.nodes = static_cast<int>(m.integer("nodes", 1, kMaxGpus));
  c.gpus_per_node = static_cast<int>(m.integer("gpus_per_node", 1, kMaxGpusPerNode));
  if (static_cast<std::int64_t>(c.nodes) * c.gpus_per_node > kMaxGpus)
    m.fail("nodes", std::to_string(c.nodes) + " nodes x " + std::to_string(c.gpus_per_node) + " GPUs per node is " +
                        std::to_string(static_cast<std::int64_t>(c.nodes) * c.gpus_per_node) + " GPUs; kanscale models at most " +
                        std::to_string(kMaxGpus));

  YamlMap g = m.map("gpu");
  // the sheet's figures, each replaced where the cluster file gives its own
  // (e.g. the capacity as nvidia-smi reports it)
  std::optional<GpuSheet> sheet;
  if (g.has("sheet")) sheet = cluster_gpu_sheet(g, c.file), c.gpu = gpu_spec_of(*sheet);
  auto figure = [&](const char* key, Quantity q, double from_sheet) {
    return sheet && from_sheet > 0 && !g.has(key) ? from_sheet : g.quantity(key, q, Bound::positive);
  };
  if (!sheet || g.has("model")) c.gpu.model = g.string("model");
  c.gpu.compute_capability = g.number_opt("compute_capability", Bound::positive).value_or(c.gpu.compute_capability);  // GPUs (NCCL's rules)
  c.gpu.fp32_flops = figure("fp32", Quantity::flop_rate, c.gpu.fp32_flops);
  c.gpu.tf32_flops = g.quantity_opt("tf32", Quantity::flop_rate, Bound::positive).value_or(sheet && sheet->tf32_flops > 0 ? sheet->tf32_flops : c.gpu.fp32_flops);
  c.gpu.memory_bandwidth_Bps = figure("memory_bandwidth", Quantity::rate, c.gpu.memory_bandwidth_Bps);
  c.gpu.memory_bytes = figure("memory", Quantity::size, c.gpu.memory_bytes);
  c.gpu.kernel_launch_s = g.quantity("kernel_launch", Quantity::time, Bound::non_negative);
  c.gpu.runtime_memory_bytes = g.quantity("runtime_memory", Quantity::size, Bound::non_negative);
  c.gpu.launch_queue_depth = static_cast<int>(g.integer_opt("launch_queue_depth", 1, 1 << 24).value_or(c.gpu.launch_queue_depth));
  g.finish();

  if (auto cpu = m.map_opt("cpu")) {
    const std::string v = cpu->choice("vendor", {"intel", "amd", "other"});
    c.cpu_vendor = v == "intel" ? CpuVendor::intel : v == "amd" ? CpuVendor::amd : CpuVendor::other;
    cpu->string_opt("model");
    cpu->finish();
  }

  YamlMap in = m.map("intra_node");
  const std::string kind = in.choice("kind", {"nvlink", "pcie", "shm"});
  c.intra.kind = kind == "nvlink" ? LinkKind::nvlink : kind == "pcie" ? LinkKind::pcie : LinkKind::shm;
  c.intra.bandwidth_Bps = in.quantity("bandwidth", Quantity::rate, Bound::positive);
  c.intra.latency_s = in.quantity("latency", Quantity::time, Bound::non_negative);
  in.finish();

  YamlMap net = m.map("network");
  c.net.nics_per_node = static_cast<int>(net.integer("nics_per_node", 1));
  c.net.nic_bandwidth_Bps = net.quantity("nic_bandwidth", Quantity::rate, Bound::positive);
  c.net.latency_s = net.quantity("latency", Quantity::time, Bound::non_negative);
  c.net.kind = net.string_opt("kind").value_or("");  // free text; infiniband and roce select the corpus priors
  net.finish();

  YamlMap col = m.map("collectives");
  const std::string fam = col.choice("family", {"nccl", "mpi", "gloo"});
  c.collectives.family = fam == "nccl" ? CollFamily::nccl : fam == "mpi" ? CollFamily::mpi : CollFamily::gloo;
  c.collectives.version = col.string("version");
  if (c.collectives.family == CollFamily::nccl) {
    for (const auto& a : col.choice_list("algorithms", {"ring", "tree"}))
      c.collectives.algorithms.push_back(a == "ring" ? Algo::ring : Algo::tree);
    for (const auto& p : col.choice_list("protocols", {"LL", "LL128", "Simple"}))
      c.collectives.protocols.push_back(p == "LL" ? Proto::ll : p == "LL128" ? Proto::ll128 : Proto::simple);
    c.collectives.channels = static_cast<int>(col.integer("channels", 1));
    try {
      nccl_constants_for(c.collectives.version, "NCCL");
    } catch (const InputError& e) {
      col.fail("version", e.what());
    }
  }
  col.finish();
  // a job's fixed costs (time to train): the cluster's own figures, else the documented defaults
  c.job = job_costs_default(c.collectives.family);
  if (auto job = m.map_opt("job")) {
    c.job.startup_s = job->quantity_opt("startup", Quantity::time, Bound::non_negative).value_or(c.job.startup_s);
    c.job.communicator_init_s = job->quantity_opt("communicator_init", Quantity::time, Bound::non_negative).value_or(c.job.communicator_init_s);
    c.job.communicator_init_per_rank_s =
        job->quantity_opt("communicator_init_per_rank", Quantity::time, Bound::non_negative).value_or(c.job.communicator_init_per_rank_s);
    c.job.source = job->string("source");
    c.job.defaulted = false;
    // (a day bounds any of them; beyond it the figure is a typo)
    if (c.job.startup_s > 86400) job->fail("startup", "expected at most a day (86400 s)");
    if (c.job.communicator_init_s > 86400) job->fail("communicator_init", "expected at most a day (86400 s)");
    if (c.job.communicator_init_per_rank_s > 1) job->fail("communicator_init_per_rank", "expected at most 1 s per rank");
    job->finish();
  }
  if (auto price = m.map_opt("price")) {
    // what a GPU-hour costs here (kanscale whatif cluster compares money too)
    c.price_per_gpu_hour = price->number_opt("per_gpu_hour", Bound::positive);
    if (!c.price_per_gpu_hour) price->fail("per_gpu_hour", "expected a positive price per GPU-hour, e.g. per_gpu_hour: 2.40");
    c.currency = price->string_opt("currency").value_or("");
    if (c.currency.empty() || c.currency.size() > 8 ||
        c.currency.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") != std::string::npos)
      price->fail("currency", "expected a currency code of letters, e.g. currency: EUR");
    price->finish();
  }
  m.finish();
  return c;
}

Cluster load_cluster(const std::string& path) { return read_cluster(YamlMap::load_file(path)); }
Cluster parse_cluster(const std::string& text, const std::string& name) {
  return read_cluster(YamlMap::load_string(text, name));
}

// ---------------------------------------------------------------- workload
static Workload read_workload(YamlMap m) {
  Workload w;
  w.file = m.file();
  w.name = m.string("name");
  YamlMap kan = m.map("kan");
  w.widths = kan.integer_list("widths", 1, 2);
  w.grid_size = static_cast<int>(kan.integer_opt("grid_size", 1, kMaxGridSize).value_or(5));
  w.spline_order = static_cast<int>(kan.integer_opt("spline_order", 1, kMaxSplineOrder).value_or(3));
  if (const std::string why = kan_size_problem(KanShape{w.widths, w.grid_size, w.spline_order}); !why.empty())
    kan.fail("widths", why);
  kan.finish();
  w.task = m.choice_opt("task", {"teacher", "pykan-exp-sin", "pykan-exp-sin-4d", "pykan-bessel"}).value_or("teacher");
  w.batch_per_gpu = m.integer("batch_per_gpu", 1, kMaxBatch);
  w.global_batch = m.integer_opt("global_batch", 1, kMaxBatch * kMaxGpus);
  w.dataset_size = m.integer("dataset_size", 1, kMaxDatasetSize);
  w.epochs = static_cast<int>(m.integer_opt("epochs", 1, kMaxEpochs).value_or(1));
  w.epoch_overhead_s = m.quantity_opt("epoch_overhead", Quantity::time, Bound::non_negative).value_or(0.0);
  if (w.epoch_overhead_s > 1e9) m.fail("epoch_overhead", "expected at most 1e9 s per epoch");
  w.learning_rate = m.number_opt("learning_rate", Bound::positive).value_or(1e-3);
  w.seed = static_cast<std::uint64_t>(m.integer_opt("seed", 0, std::numeric_limits<std::int64_t>::max()).value_or(0));
  w.precision = m.choice_opt("precision", {"fp32", "tf32"}).value_or("fp32") == "fp32" ? Precision::fp32 : Precision::tf32;
  // "efficient-kan" is the former name of pytorch (the same model), still accepted
  const auto impl = m.choice_opt("implementation", {"pytorch", "kanscale", "efficient-kan"}).value_or("pytorch");
  w.implementation = impl == "kanscale" ? Implementation::kanscale : Implementation::pytorch;
  if (auto v = m.string_opt("torch")) {
    if (w.implementation != Implementation::pytorch) m.fail("torch", "applies to implementation: pytorch only");
    if (!torch_op_set_of(*v)) m.fail("torch", "expected the torch version the job runs, like \"2.11\" or \"1.13\"; got \"" + *v + "\"");
    w.torch_version = *v;
  }
  if (auto d = m.map_opt("ddp")) {
    const auto cap = d->quantity_opt("bucket_cap", Quantity::size, Bound::positive);
    w.ddp.bucket_cap_given = cap.has_value();
    w.ddp.bucket_cap_bytes = cap.value_or(w.ddp.bucket_cap_bytes);
    w.ddp.first_bucket_bytes = d->quantity_opt("first_bucket", Quantity::size, Bound::positive).value_or(w.ddp.first_bucket_bytes);
    w.ddp.gradient_as_bucket_view = d->boolean_opt("gradient_as_bucket_view").value_or(false);
    w.ddp.find_unused_parameters = d->boolean_opt("find_unused_parameters").value_or(false);
    w.ddp.broadcast_buffers = d->boolean_opt("broadcast_buffers").value_or(true);
    d->finish();
  }
  m.finish();
  return w;
}

Workload load_workload(const std::string& path) { return read_workload(YamlMap::load_file(path)); }
Workload parse_workload(const std::string& text, const std::string& name) {
  return read_workload(YamlMap::load_string(text, name));
}

 
// coefficients: how many a fitted op of this class has (op_coefficients);
// its fit's covariance, when recorded, must be that square.
static void read_op_cost(YamlMap& parent, const std::string& key, OpCost* cost, std::size_t coefficients = 0) {
  auto m = parent.map_opt(key);
  if (!m) return;
  cost->fixed_s = m->quantity_opt("fixed", Quantity::time, Bound::non_negative).value_or(cost->fixed_s);
  cost->flop_rate = m->quantity_opt("flop_rate", Quantity::flop_rate, Bound::positive).value_or(cost->flop_rate);
  cost->byte_rate = m->quantity_opt("byte_rate", Quantity::rate, Bound::positive).value_or(cost->byte_rate);
  if (auto comb = m->choice_opt("combine", {"max", "sum"})) cost->roofline = *comb == "max";
  cost->element_s = m->quantity_opt("per_element", Quantity::time, Bound::non_negative).value_or(cost->element_s);
  cost->weight_s = m->quantity_opt("per_weight", Quantity::time, Bound::non_negative).value_or(cost->weight_s);
  // bytes_at: working_set (OpCost::bytes_at_working_set), for a fitted layer
  // only; the compute section's cache_probe must then be there
  if (m->choice_opt("bytes_at", {"working_set"})) {
    if (coefficients != 5) m->fail("bytes_at", "only a fitted layer (kan_forward, kan_backward) scales its bytes by the cache probe");
    cost->bytes_at_working_set = true;
  }
  // the fit's quality, recorded for people, and its covariance, read for intervals
  if (coefficients > 0 && m->has_map("fit")) {
    if (auto cov = m->map("fit").matrix_opt("cov", coefficients)) cost->cov = *cov;
  }
  m->ignore("fit");
  m->finish();
}

static void read_table(YamlMap& m, const std::string& key, double* out) {
  // {LL: 1.0, LL128: 2.0, Simple: 3.0} in microseconds
  auto t = m.map_opt(key);
  if (!t) return;
  const char* names[3] = {"LL", "LL128", "Simple"};
  for (int p = 0; p < 3; ++p) {
    if (auto v = t->quantity_opt(names[p], Quantity::time, Bound::non_negative)) out[p] = *v * 1e6;
  }
  t->finish();
}

// compute: per-class op costs (warm and cold), jitter, interference, the cache probe
static void read_calibration_compute(YamlMap& m, Calibration& cal) {
  if (auto comp = m.map_opt("compute")) {
    read_op_cost(*comp, "gemm", &cal.gemm);
    read_op_cost(*comp, "elementwise", &cal.elementwise);
    for (const char* table : {"ops", "ops_cold"}) {
      auto ops = comp->map_opt(table);
      if (!ops) continue;
      for (const auto& cls : kanscale_cost_classes()) {
        if (!ops->has(cls)) continue;
        OpCost c{0, 0, 0, false};
        read_op_cost(*ops, cls, &c, op_coefficients(c, cls == "kan_forward" || cls == "kan_backward").size());
        (std::string(table) == "ops" ? cal.ops : cal.ops_cold)[cls] = c;
      }
      ops->finish();
    }
    if (comp->has("cache_probe")) {
      const auto pts = comp->number_pairs("cache_probe");
      for (const auto& [bytes, gbps] : pts) {
        if (!(bytes > 0) || !(gbps > 0)) comp->fail("cache_probe", "expected [bytes, GB/s] pairs of positive numbers");
        cal.cache_probe.emplace_back(bytes, gbps * 1e9);
      }
    }
    for (const auto* table : {&cal.ops, &cal.ops_cold})
      for (const auto& [cls, c] : *table)
        if (c.bytes_at_working_set && cal.cache_probe.size() < 2)
          comp->fail("cache_probe", std::string(table == &cal.ops ? "ops." : "ops_cold.") + cls +
                                        " says bytes_at: working_set, which needs a cache_probe of at least two [bytes, GB/s] points");
    cal.host_overhead_s = comp->quantity_opt("host_overhead", Quantity::time, Bound::non_negative).value_or(0.0);
    cal.jitter_sigma = comp->number_opt("jitter_sigma", Bound::non_negative).value_or(0.0);
    if (cal.jitter_sigma > 1.0) {
      comp->fail("jitter_sigma", "must be at most 1 (a lognormal sigma; 0.01-0.1 is typical), got " + gnum(cal.jitter_sigma));
    }
    cal.interference = comp->number_opt("interference", Bound::non_negative).value_or(0.0);
    if (cal.interference > 100)
      comp->fail("interference", "must be at most 100 (compute lost per second of collective in flight), got " + gnum(cal.interference));
    comp->finish();
  }
}

// {latency, bandwidth, cov}: an MPI broadcast's or a gloo collective's terms
static AlphaBetaTerm read_alpha_beta(YamlMap& m) {
  AlphaBetaTerm t;
  t.latency_s = m.quantity("latency", Quantity::time, Bound::non_negative);
  t.bandwidth_Bps = m.quantity_opt("bandwidth", Quantity::rate, Bound::positive);
  if (auto cov = m.matrix_opt("cov", 2)) t.cov = *cov;
  return t;
}

// collectives: NCCL's bus bandwidths and constants, MPI's regimes, broadcast and progress
static void read_calibration_collectives(YamlMap& m, Calibration& cal) {
  if (auto col = m.map_opt("collectives")) {
    if (auto n = col->map_opt("nccl")) {
      cal.has_nccl_terms = true;
      cal.nccl_bus_bw_intra_Bps = n->quantity_opt("bus_bandwidth_intra", Quantity::rate, Bound::positive);
      cal.nccl_bus_bw_inter_Bps = n->quantity_opt("bus_bandwidth_inter", Quantity::rate, Bound::positive);
      for (int a = 0; a < 2; ++a) {
        const std::string an = a == 0 ? "ring" : "tree";
        read_table(*n, "base_latency_" + an, cal.nccl.base_latency_us[a]);
        const char* hw[3] = {"nvlink", "pci", "net"};
        for (int h = 0; h < 3; ++h) read_table(*n, "hop_latency_" + std::string(hw[h]) + "_" + an, cal.nccl.hw_latency_us[h][a]);
      }
      n->finish();
    }
    auto regimes = col->map_list_opt("mpi_regimes");
    if (!regimes.empty()) {
      cal.mpi_regimes.clear();
      cal.has_mpi_terms = true;
      for (auto& r : regimes) {
        MpiRegime g;
        g.max_bytes = r.quantity_opt("below", Quantity::size, Bound::positive).value_or(std::numeric_limits<double>::infinity());
        g.algorithm = r.choice("algorithm", {"recursive_doubling", "ring"}) == "ring" ? MpiAlgo::ring : MpiAlgo::recursive_doubling;
        g.latency_s = r.quantity_opt("latency", Quantity::time, Bound::non_negative);
        g.bandwidth_Bps = r.quantity_opt("bandwidth", Quantity::rate, Bound::positive);
        g.launch_s = r.quantity_opt("launch", Quantity::time, Bound::non_negative);
        g.launch_Bps = r.quantity_opt("launch_byte_rate", Quantity::rate, Bound::positive);
        if (auto cov = r.matrix_opt("cov", 2)) g.cov = *cov;
        // the regimes are searched in order for the first whose limit lies above
        // a message: limits must rise, or a later regime could never be reached
        if (!cal.mpi_regimes.empty() && !(g.max_bytes > cal.mpi_regimes.back().max_bytes))
          r.fail("below", (std::isinf(cal.mpi_regimes.back().max_bytes) ? std::string("a regime after the last one (which has no 'below')")
                                                                         : "'below' " + format_bytes(g.max_bytes) + " is not above the regime before it (" +
                                                                               format_bytes(cal.mpi_regimes.back().max_bytes) + ")") +
                              "; expected the regimes in order of rising 'below'");
        r.finish();
        cal.mpi_regimes.push_back(g);
      }
      if (!std::isinf(cal.mpi_regimes.back().max_bytes)) col->fail("mpi_regimes", "the last regime must have no 'below' limit");
    }
    if (auto b = col->map_opt("mpi_broadcast")) {
      cal.has_mpi_terms = true;
      cal.mpi_broadcast = read_alpha_beta(*b);
      b->finish();
    }
    if (auto g = col->map_opt("gloo")) {
      for (const char* key : {"allreduce", "broadcast"}) {
        auto t = g->map_opt(key);
        if (!t) continue;
        (std::string(key) == "allreduce" ? cal.gloo_allreduce : cal.gloo_broadcast) = read_alpha_beta(*t);
        t->ignore("fit");
        t->finish();
        cal.has_gloo_terms = true;
      }
      g->finish();
    }
    if (auto pr = col->map_opt("mpi_progress")) {
      MpiProgress mp;
      mp.min_steps = static_cast<int>(pr->integer("min_steps", 1, 4096));
      mp.chunk_bytes = pr->quantity_opt("chunk", Quantity::size, Bound::positive).value_or(0.0);
      mp.interference = pr->number_opt("interference", Bound::non_negative);
      if (mp.interference && *mp.interference > 100) pr->fail("interference", "must be at most 100 (compute lost per second of collective), got " + gnum(*mp.interference));
      pr->finish();
      cal.mpi_progress = mp;
      cal.has_mpi_terms = true;
    }
    col->finish();
  }
}

// torch_ops: PyTorch's op classes, calls x fixed + elements x per_element
static void read_calibration_torch(YamlMap& m, Calibration& cal) {
  auto t = m.map_opt("torch_ops");
  if (!t) return;
  cal.torch_fingerprint = t->string("measured_with");
  cal.torch_host_has_launch = t->boolean_opt("host_has_launch").value_or(false);
  auto classes = t->map("classes");
  // the classes efficient-kan's op list has (model/kan_model): a class no op
  // carries would cost nothing, a misspelled one would go unused
  static const std::vector<std::string> known = [] {
    std::vector<std::string> v;
    for (TorchOpSet set : {TorchOpSet::torch1, TorchOpSet::torch2, TorchOpSet::torch2_foreach})
      for (const Op& o : efficient_kan_iteration(KanShape{{2, 2, 1}, 3, 2}, 1, false, true, set))
        if (!o.torch_unit.empty() && std::find(v.begin(), v.end(), o.torch_unit) == v.end()) v.push_back(o.torch_unit);
    return v;
  }();
  for (const auto& cls : classes.keys()) {
    if (std::find(known.begin(), known.end(), cls) == known.end()) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      classes.fail(cls, "\"" + cls + "\" is not an op class of efficient-kan's; expected one of " + list);
    }
    auto c = classes.map(cls);
    TorchOpCost cost;
    cost.fixed_s = c.quantity("fixed", Quantity::time, Bound::non_negative);
    cost.element_s = c.quantity("per_element", Quantity::time, Bound::non_negative);
    if (auto cov = c.matrix_opt("cov", 2)) cost.cov = *cov;
    c.ignore("fit");
    if (auto d = c.map_opt("device")) {
      // the device's time for the class's kernels (a GPU job's traces)
      TorchOpCost dev;
      dev.fixed_s = d->quantity("fixed", Quantity::time, Bound::non_negative);
      dev.element_s = d->quantity("per_element", Quantity::time, Bound::non_negative);
      if (auto cov = d->matrix_opt("cov", 2)) dev.cov = *cov;
      d->ignore("fit");
      d->finish();
      cal.torch_device_ops[cls] = dev;
    }
    c.finish();
    cal.torch_ops[cls] = cost;
  }
  if (cal.torch_ops.empty()) classes.fail("", "expected at least one op class");
  classes.finish();
  t->finish();
}

// The live section's errors are measured, and a disturbed machine measures
// large ones (live runs beside another load: a model error of 1.4 seen here):
// a file kanscale writes must read back. 5 (predictions off by e^5 = 148x)
// is beyond any run that measured something; above it the file is refused.
constexpr double kMaxSigma = 5;
const std::string kSigmaRange = "expected a lognormal sigma from 0 to 5 (e^5 = 148x), got ";

static void read_calibration_live(YamlMap& m, Calibration& cal) {
  if (auto live = m.map_opt("live")) {
    cal.model_error_sigma = live->number_opt("model_error_sigma", Bound::non_negative).value_or(0.0);
    if (cal.model_error_sigma > kMaxSigma) live->fail("model_error_sigma", kSigmaRange + gnum(cal.model_error_sigma));
    cal.comm_error_sigma = live->number_opt("comm_error_sigma", Bound::non_negative).value_or(0.0);
    if (cal.comm_error_sigma > kMaxSigma) live->fail("comm_error_sigma", kSigmaRange + gnum(cal.comm_error_sigma));
    cal.unwatched_error_sigma = live->number_opt("unwatched_error_sigma", Bound::non_negative).value_or(0.0);
    if (cal.unwatched_error_sigma > kMaxSigma) live->fail("unwatched_error_sigma", kSigmaRange + gnum(cal.unwatched_error_sigma));
    cal.memory_error_sigma = live->number_opt("memory_error_sigma", Bound::non_negative).value_or(0.0);
    if (cal.memory_error_sigma > kMaxSigma) live->fail("memory_error_sigma", kSigmaRange + gnum(cal.memory_error_sigma));
    cal.unwatched_memory_sigma = live->number_opt("unwatched_memory_sigma", Bound::non_negative).value_or(0.0);
    if (cal.unwatched_memory_sigma > kMaxSigma) live->fail("unwatched_memory_sigma", kSigmaRange + gnum(cal.unwatched_memory_sigma));
    cal.memory_live_extra_bytes = live->quantity_opt("memory_extra", Quantity::size, Bound::non_negative).value_or(0.0);
    cal.drift_sigma = live->number_opt("drift_sigma", Bound::non_negative).value_or(0.0);
    if (cal.drift_sigma > kMaxSigma) live->fail("drift_sigma", kSigmaRange + gnum(cal.drift_sigma));
    cal.rank_sigma = live->number_opt("rank_spread_sigma", Bound::non_negative).value_or(0.0);
    if (cal.rank_sigma > kMaxSigma) live->fail("rank_spread_sigma", kSigmaRange + gnum(cal.rank_sigma));
    for (auto& t : live->map_list_opt("terms")) {
      Calibration::LiveTerm lt;
      lt.ranks = static_cast<int>(t.integer("ranks", 1));
      for (const auto& other : cal.live_terms)
        if (other.ranks == lt.ranks) t.fail("ranks", std::to_string(lt.ranks) + " rank(s) have a term already; expected one term per rank count");
      // a factor is what live runs cost over the microbenchmarks: 1e-300 or
      // 1e300 is no machine's
      lt.compute_factor = t.number("compute_factor", Bound::positive);
      if (lt.compute_factor < 0.01 || lt.compute_factor > 100)
        t.fail("compute_factor", "expected 0.01 to 100, got " + gnum(lt.compute_factor));
      lt.host_overhead_s = t.quantity_opt("host_overhead", Quantity::time, Bound::non_negative).value_or(0.0);
      lt.per_bucket_s = t.quantity_opt("per_bucket", Quantity::time, Bound::non_negative).value_or(0.0);
      lt.comm_factor = t.number_opt("comm_factor", Bound::positive).value_or(1.0);
      if (lt.comm_factor < 0.01 || lt.comm_factor > 100) t.fail("comm_factor", "expected 0.01 to 100, got " + gnum(lt.comm_factor));
      t.finish();
      cal.live_terms.push_back(lt);
    }
    live->finish();
  }
}

static void read_calibration_memory(YamlMap& m, Calibration& cal) {
  if (auto mem = m.map_opt("memory")) {
    cal.runtime_memory_bytes = mem->quantity_opt("runtime", Quantity::size, Bound::non_negative).value_or(cal.runtime_memory_bytes);
    cal.runtime_memory_per_local_peer_bytes =
        mem->quantity_opt("runtime_per_local_peer", Quantity::size, Bound::non_negative).value_or(0.0);
    cal.memory_collective_in_flight = mem->number_opt("collective_in_flight", Bound::non_negative).value_or(0.0);
    // fitted terms (kanscale fit): peak = runtime + fixed + per_parameter x P
    //                                      + activation_factor x (activations + transients + batch)
    cal.memory_fixed_bytes = mem->quantity_opt("fixed", Quantity::size, Bound::non_negative).value_or(0.0);
    cal.memory_bytes_per_parameter = mem->quantity_opt("per_parameter", Quantity::size, Bound::non_negative);
    cal.memory_activation_factor = mem->number_opt("activation_factor", Bound::non_negative);
    // copies and factors of what the model counts: measured 1-2 here (bench interference, kanscale fit);
    // a parameter costs 16-20 B (fp32 value, gradient, bucket, Adam's moments)
    auto at_most = [&](const char* key, std::optional<double> v, double hi, const char* what) {
      if (v && *v > hi) {
        char buf[128];
        std::snprintf(buf, sizeof buf, "%g is above %g; expected %s", *v, hi, what);
        mem->fail(key, buf);
      }
    };
    at_most("collective_in_flight", cal.memory_collective_in_flight, 100, "the copies of a message in flight (1-2 measured)");
    at_most("activation_factor", cal.memory_activation_factor, 100, "a factor on the modelled activations (about 1)");
    at_most("per_parameter", cal.memory_bytes_per_parameter, 1024, "bytes per parameter (16-20 for fp32 with Adam)");
    mem->ignore("fit");
    mem->finish();
  }
}

// posterior: what the settings were conditioned on, the point and the draws
// (each a map of study setting keys to values as text)
static void read_calibration_posterior(YamlMap& m, Calibration& cal) {
  YamlMap p = m.map("posterior");
  PosteriorSettings& ps = cal.posterior;
  ps.conditioned_on = p.string("conditioned_on");
  ps.band_without = p.string_opt("band_without").value_or("");
  auto entries = [](YamlMap& e) {
    std::vector<PosteriorSettings::Entry> out;
    for (const std::string& k : e.keys()) out.push_back({k, e.string(k), e.where(k)});
    e.finish();
    return out;
  };
  YamlMap point = p.map("point");
  ps.point = entries(point);
  if (ps.point.empty()) p.fail("point", "expected at least one setting (a map such as {compute_time: 1.2x})");
  for (auto& d : p.map_list_opt("draws")) ps.draws.push_back(entries(d));
  p.finish();
}

static Calibration read_calibration(YamlMap m, const Cluster& c, Precision precision, bool allow_posterior) {
  Calibration cal = datasheet_calibration(c, precision);
  cal.name = m.string("name");
  cal.source = m.choice("source", {"datasheet", "fitted", "posterior"});
  cal.derived_from = m.string("fitted_from");
  if (cal.source == "posterior") {
    // a datasheet calibration with settings conditioned on findings
    if (!allow_posterior)
      m.fail("source", "a posterior calibration (kanscale study --infer) is read by `kanscale simulate` only; expected datasheet or fitted here");
    cal.source = "datasheet";
    read_calibration_posterior(m, cal);
  }
  cal.concurrency = static_cast<int>(m.integer("concurrency", 1));
  if (auto mm = m.map_opt("machine")) {
    cal.machine.cpu_model = mm->string("cpu_model");
    cal.machine.cores = static_cast<int>(mm->integer("cores", 0));
    cal.machine.isa = mm->string_opt("isa").value_or("");
    cal.machine.memory_bytes = mm->quantity_opt("memory", Quantity::size, Bound::non_negative).value_or(0.0);
    cal.machine.gpu = mm->string_opt("gpu").value_or("");
    cal.machine.collective_library = mm->string_opt("collective_library").value_or("");
    mm->finish();
  }
  read_calibration_compute(m, cal);
  read_calibration_collectives(m, cal);
  read_calibration_torch(m, cal);
  read_calibration_live(m, cal);
  read_calibration_memory(m, cal);
  m.finish();
  return cal;
}

Calibration load_calibration(const std::string& path, const Cluster& c, Precision precision, bool allow_posterior) {
  return read_calibration(YamlMap::load_file(path), c, precision, allow_posterior);
}
Calibration parse_calibration(const std::string& text, const std::string& name, const Cluster& c, Precision precision, bool allow_posterior) {
  return read_calibration(YamlMap::load_string(text, name), c, precision, allow_posterior);
}

std::string shipped_pytorch_calibration_path() { return shipped_path("configs/calibrations/pytorch-cpu.yaml"); }

const HostTerms& dispatch_prior_host_terms() {
  static const HostTerms terms = [] {
    const std::string path = shipped_path("configs/priors/gpu.yaml");
    const FactorPrior& d = load_nccl_priors(path).dispatch_us;
    if (!d.usable() || d.df < 1)
      throw InputError(path + ": key 'dispatch.per_op_us': no usable prior of PyTorch's per-op host cost (kanscale fit --priors writes it)");
    HostTerms h;
    h.per_dispatch_s = d.median * 1e-6;
    // the lognormal sigma whose normal 90% band matches the t interval of one more CPU
    h.sigma = d.log_half_width(0.90) / 1.6448536;
    h.from = "configs/priors/gpu.yaml (shipped): PyTorch's eager per-op host cost, the median over " + std::to_string(d.systems) +
             " CPUs' public measurements (validation/corpus)";
    return h;
  }();
  return terms;
}

Calibration with_default_host_terms(Calibration cal, const Cluster& c, const Workload& w) {
  if (needs_default_host_terms(c, w, cal)) cal.default_host_terms = dispatch_prior_host_terms();
  return cal;
}

namespace {
struct StandIn {
  double sigma = 0;
  std::string source;
  double memory_sigma = 0;  // its peak memory's error (live.memory_error_sigma)
  std::string rel;
};
// The shipped calibration's unwatched error, read once per implementation.
const StandIn& unwatched_stand_in(Implementation impl) {
  static const auto read = [](Implementation i) {
    const std::string rel = i == Implementation::pytorch ? "configs/calibrations/pytorch-cpu.yaml" : "configs/calibrations/local-cpu.yaml";
    Cluster any;
    any.collectives.family = i == Implementation::pytorch ? CollFamily::gloo : CollFamily::mpi;
    const Calibration cal = load_calibration(shipped_path(rel), any, Precision::fp32);
    return StandIn{cal.unwatched_error_sigma,
                   "CPU stand-in: " + rel + "'s live runs predicted from its microbenchmarks alone (" +
                       (cal.machine.empty() ? std::string("an unrecorded machine") : describe(cal.machine)) + ")",
                   cal.unwatched_memory_sigma, rel};
  };
  static const StandIn pytorch = read(Implementation::pytorch), kanscale = read(Implementation::kanscale);
  return impl == Implementation::pytorch ? pytorch : kanscale;
}
}  // namespace

Calibration with_shipped_defaults(Calibration cal, const Cluster& c, const Workload& w) {
  cal = with_default_host_terms(std::move(cal), c, w);
  if (cal.default_host_terms && cal.default_host_terms->per_dispatch_s > 0 && cal.host_prior_sigma == 0)
    cal.host_prior_sigma = cal.default_host_terms->sigma;
  if (cal.live_terms.empty() && cal.model_error_sigma == 0) {
    const StandIn& s = unwatched_stand_in(w.implementation);
    if (s.sigma > 0) {
      cal.model_error_sigma = cal.unwatched_sigma_applied = s.sigma;
      cal.unwatched_source = s.source;
    }
  }
  if (cal.memory_error_sigma == 0) {
    const StandIn& s = unwatched_stand_in(w.implementation);
    if (c.collectives.family == CollFamily::nccl)
      cal.memory_source = "no interval: no GPU job's memory was measured, and the CPU calibrations' error (a process's resident set "
                          "against the model) does not carry to a GPU's allocations";
    else if (s.memory_sigma > 0) {
      cal.memory_error_sigma = s.memory_sigma;
      cal.memory_source = "UNWATCHED, CPU stand-in: " + s.rel + "'s live runs' peak memory against the memory model with no live term";
    }
  } else {
    cal.memory_source = "the calibration's live runs' peak memory, leave one shape out";
  }
  if (cal.source == "datasheet" && c.collectives.family == CollFamily::nccl && cal.comm_error_sigma == 0) {
    const std::string path = shipped_path("configs/priors/gpu.yaml");
    const NcclPriors pr = load_nccl_priors(path);
    if (const auto it = pr.datasheet_rms.find("all"); it != pr.datasheet_rms.end() && it->second.machines >= 2) {
      // the lognormal sigma whose normal 90% band matches the t interval of one more machine
      const double t = student_t_quantile(0.95, it->second.machines);
      cal.comm_error_sigma = cal.priors_sigma_applied = it->second.rms * t / 1.6448536;
      cal.priors_source = "configs/priors/gpu.yaml (shipped): the datasheet NCCL model's RMS log error on " + std::to_string(it->second.machines) +
                          " machines' public all-reduce logs (every regime: gradient buckets span them), x t(0.95; " +
                          std::to_string(it->second.machines) + ") / z(0.95)";
    }
  }
  return cal;
}


}  // namespace ks
