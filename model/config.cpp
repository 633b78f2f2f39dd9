#include "config.hpp"
#include "limits.hpp"

#include <cstdio>
#include <algorithm>
#include <cmath>
#include <limits>

#include "kan_model.hpp"
#include "yaml_reader.hpp"

namespace ks {

const char* to_string(LinkKind k) {
  switch (k) {
    case LinkKind::nvlink: return "nvlink";
    case LinkKind::pcie: return "pcie";
    case LinkKind::shm: return "shm";
  }
  return "?";
}
const char* to_string(Algo a) { return a == Algo::ring ? "ring" : "tree"; }
const char* to_string(MpiAlgo a) { return a == MpiAlgo::ring ? "ring" : "recursive_doubling"; }

int mpi_progress_steps(const MpiProgress& p, double bytes) {
  double steps = p.min_steps;
  // a step moves at most chunk bytes (capped at 4096 steps, as the fit's models)
  if (p.chunk_bytes > 0) steps = std::max(steps, std::min(std::ceil(bytes / p.chunk_bytes), 4096.0));
  return std::max(1, static_cast<int>(steps));
}
const char* to_string(Proto p) {
  switch (p) {
    case Proto::ll: return "LL";
    case Proto::ll128: return "LL128";
    case Proto::simple: return "Simple";
  }
  return "?";
}
const char* to_string(Precision p) { return p == Precision::fp32 ? "fp32" : "tf32"; }
const char* to_string(Implementation i) { return i == Implementation::efficient_kan ? "efficient-kan" : "kanscale"; }

double OpCost::time_s(double flops, double bytes, double elements, double weights) const {
  // (a rate below 0 comes only from a drawn calibration: see set_op_coefficients)
  const double tf = flop_rate != 0 ? flops / flop_rate : 0.0;
  const double tb = byte_rate != 0 ? bytes / byte_rate : 0.0;
  return std::max(0.0, fixed_s + (roofline ? std::max(tf, tb) : tf + tb) + elements * element_s + weights * weight_s);
}

// ---------------------------------------------------------------- NCCL tables
NcclConstants nccl_constants_for(const std::string& version, const std::string& where) {
  // Source: NVIDIA/nccl v2.14.3-1, src/graph/tuning.cc (baseLat, hwLat,
  // ll128MaxBwPerCh, llMaxBws, perChMaxTreeBws, treeCorrectionFactor, the
  // 235 GB/s sm_80 cap and the 1.9 ring plateau factor in
  // ncclTopoGetAlgoTime). Index order: algo {tree, ring}, proto {LL, LL128,
  // Simple}; kanscale stores algo as {ring, tree}.
  const bool is_214 = version.size() > 5 && version.rfind("2.14.", 0) == 0 &&
                      version.find_first_not_of("0123456789", 5) == std::string::npos;
  if (!is_214) {
    throw InputError(where + ": NCCL version \"" + version +
                     "\" is not supported: kanscale carries NCCL's tuning constants for 2.14.x only "
                     "(a version such as \"2.14.3\")");
  }
  NcclConstants c;
  const double base[2][3] = {{3.6, 10.0, 8.4}, {4.4, 4.4, 0.0}};  // ring, tree
  const double hw[3][2][3] = {
      {{.47, 1.9, 3.4}, {.52, 1.25, 28}},   // NVLink: ring, tree
      {{1.0, 2.5, 5.7}, {1.0, 1.9, 28}},    // PCI
      {{2.7, 4.0, 9.6}, {5.0, 8.5, 28}}};   // NET
  const double llmax[2][3] = {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}};
  const double treemax[2][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}};
  const double corr[3][23] = {
      {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
      {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
      {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}};
  std::copy(&base[0][0], &base[0][0] + 6, &c.base_latency_us[0][0]);
  std::copy(&hw[0][0][0], &hw[0][0][0] + 18, &c.hw_latency_us[0][0][0]);
  std::copy(&llmax[0][0], &llmax[0][0] + 6, &c.ll_max_bw_GBps[0][0]);
  std::copy(&treemax[0][0], &treemax[0][0] + 6, &c.per_ch_max_tree_bw_GBps[0][0]);
  std::copy(&corr[0][0], &corr[0][0] + 69, &c.tree_correction[0][0]);
  c.ll128_max_bw_per_ch_GBps = 20.0;
  c.ampere_bus_bw_cap_GBps = 235.0;
  c.ring_plateau_factor = 1.9;
  return c;
}

// ---------------------------------------------------------------- cluster
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
  c.gpu.model = g.string("model");
  c.gpu.compute_capability = g.number_opt("compute_capability", Bound::positive).value_or(0.0);  // GPUs (NCCL's rules)
  c.gpu.fp32_flops = g.quantity("fp32", Quantity::flop_rate, Bound::positive);
  c.gpu.tf32_flops = g.quantity_opt("tf32", Quantity::flop_rate, Bound::positive).value_or(c.gpu.fp32_flops);
  c.gpu.memory_bandwidth_Bps = g.quantity("memory_bandwidth", Quantity::rate, Bound::positive);
  c.gpu.memory_bytes = g.quantity("memory", Quantity::size, Bound::positive);
  c.gpu.kernel_launch_s = g.quantity("kernel_launch", Quantity::time, Bound::non_negative);
  c.gpu.runtime_memory_bytes = g.quantity("runtime_memory", Quantity::size, Bound::non_negative);
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
  net.string_opt("kind");
  net.finish();

  YamlMap col = m.map("collectives");
  const std::string fam = col.choice("family", {"nccl", "mpi"});
  c.collectives.family = fam == "nccl" ? CollFamily::nccl : CollFamily::mpi;
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
  const auto impl = m.choice_opt("implementation", {"efficient-kan", "kanscale"}).value_or("efficient-kan");
  w.implementation = impl == "efficient-kan" ? Implementation::efficient_kan : Implementation::kanscale;
  if (auto d = m.map_opt("ddp")) {
    w.ddp.bucket_cap_bytes = d->quantity_opt("bucket_cap", Quantity::size, Bound::positive).value_or(w.ddp.bucket_cap_bytes);
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

// ---------------------------------------------------------------- calibration
Calibration datasheet_calibration(const Cluster& c, Precision precision) {
  Calibration cal;
  cal.name = c.name + "-datasheet";
  cal.source = "datasheet";
  cal.derived_from = c.file;
  cal.concurrency = c.gpus_per_node;
  // Roofline at datasheet peaks: an optimistic bound, labelled as derived.
  cal.gemm = OpCost{c.gpu.kernel_launch_s, precision == Precision::tf32 ? c.gpu.tf32_flops : c.gpu.fp32_flops,
                  c.gpu.memory_bandwidth_Bps, true};
  cal.elementwise = OpCost{c.gpu.kernel_launch_s, c.gpu.fp32_flops, c.gpu.memory_bandwidth_Bps, true};
  // Unknown without measurement: host overhead, jitter and interference are 0.
  cal.host_overhead_s = 0;
  cal.jitter_sigma = 0;
  cal.interference = 0;
  if (c.collectives.family == CollFamily::nccl) cal.nccl = nccl_constants_for(c.collectives.version, c.file);
  // OpenMPI's fixed decision (ompi/mca/coll/tuned/coll_tuned_decision_fixed.c,
  // 4.0: intermediate_message = 10000 B): recursive doubling below, ring above.
  cal.mpi_regimes = {MpiRegime{10000.0, MpiAlgo::recursive_doubling, std::nullopt, std::nullopt, std::nullopt, std::nullopt},
                   MpiRegime{std::numeric_limits<double>::infinity(), MpiAlgo::ring, std::nullopt, std::nullopt, std::nullopt, std::nullopt}};
  cal.runtime_memory_bytes = c.gpu.runtime_memory_bytes;
  return cal;
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

static Calibration read_calibration(YamlMap m, const Cluster& c, Precision precision) {
  Calibration cal = datasheet_calibration(c, precision);
  cal.name = m.string("name");
  cal.source = m.choice("source", {"datasheet", "fitted"});
  cal.derived_from = m.string("fitted_from");
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
    cal.host_overhead_s = comp->quantity_opt("host_overhead", Quantity::time, Bound::non_negative).value_or(0.0);
    cal.jitter_sigma = comp->number_opt("jitter_sigma", Bound::non_negative).value_or(0.0);
    if (cal.jitter_sigma > 1.0) {
      comp->fail("jitter_sigma", "must be at most 1 (a lognormal sigma; 0.01-0.1 is typical), got " + [&] { char b[32]; std::snprintf(b, sizeof b, "%g", cal.jitter_sigma); return std::string(b); }());
    }
    cal.interference = comp->number_opt("interference", Bound::non_negative).value_or(0.0);
    comp->finish();
  }
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
      MpiBroadcast mb;
      mb.latency_s = b->quantity("latency", Quantity::time, Bound::non_negative);
      mb.bandwidth_Bps = b->quantity_opt("bandwidth", Quantity::rate, Bound::positive);
      if (auto cov = b->matrix_opt("cov", 2)) mb.cov = *cov;
      b->finish();
      cal.mpi_broadcast = mb;
    }
    if (auto pr = col->map_opt("mpi_progress")) {
      MpiProgress mp;
      mp.min_steps = static_cast<int>(pr->integer("min_steps", 1, 4096));
      mp.chunk_bytes = pr->quantity_opt("chunk", Quantity::size, Bound::positive).value_or(0.0);
      mp.interference = pr->number_opt("interference", Bound::non_negative);
      if (mp.interference && *mp.interference > 100) pr->fail("interference", "must be at most 100 (compute lost per second of collective), got " + [&] { char b[32]; std::snprintf(b, sizeof b, "%g", *mp.interference); return std::string(b); }());
      pr->finish();
      cal.mpi_progress = mp;
      cal.has_mpi_terms = true;
    }
    col->finish();
  }
  if (auto live = m.map_opt("live")) {
    cal.model_error_sigma = live->number_opt("model_error_sigma", Bound::non_negative).value_or(0.0);
    if (cal.model_error_sigma > 1.0) live->fail("model_error_sigma", "must be at most 1 (a lognormal sigma), got " + std::to_string(cal.model_error_sigma));
    for (auto& t : live->map_list_opt("terms")) {
      Calibration::LiveTerm lt;
      lt.ranks = static_cast<int>(t.integer("ranks", 1));
      lt.compute_factor = t.number("compute_factor", Bound::positive);
      if (lt.compute_factor > 100) t.fail("compute_factor", "must be at most 100, got " + std::to_string(lt.compute_factor));
      lt.host_overhead_s = t.quantity_opt("host_overhead", Quantity::time, Bound::non_negative).value_or(0.0);
      t.finish();
      cal.live_terms.push_back(lt);
    }
    live->finish();
  }
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
  m.finish();
  return cal;
}

std::vector<double> op_coefficients(const OpCost& c, bool layer) {
  auto per = [](double rate) { return rate > 0 ? 1.0 / rate : 0.0; };
  if (layer) return {c.fixed_s, per(c.flop_rate), per(c.byte_rate), c.element_s, c.weight_s};
  return {c.fixed_s, per(c.byte_rate)};
}

void set_op_coefficients(OpCost& c, bool layer, const std::vector<double>& coef, bool signed_terms) {
  auto rate = [&](double per) { return per > 0 || (signed_terms && per < 0) ? 1.0 / per : 0.0; };
  auto term = [&](double v) { return signed_terms ? v : std::max(0.0, v); };
  c.fixed_s = term(coef.at(0));
  if (layer) {
    c.flop_rate = rate(coef.at(1));
    c.byte_rate = rate(coef.at(2));
    c.element_s = term(coef.at(3));
    c.weight_s = term(coef.at(4));
  } else {
    c.byte_rate = rate(coef.at(1));
  }
}

std::vector<double> alpha_beta_coefficients(const std::optional<double>& latency_s, const std::optional<double>& bandwidth_Bps) {
  return {latency_s.value_or(0.0), bandwidth_Bps && *bandwidth_Bps > 0 ? 1.0 / *bandwidth_Bps : 0.0};
}

void set_alpha_beta(std::optional<double>& latency_s, std::optional<double>& bandwidth_Bps, const std::vector<double>& coef) {
  latency_s = std::max(0.0, coef.at(0));
  if (coef.at(1) > 0) bandwidth_Bps = 1.0 / coef.at(1);
  else bandwidth_Bps.reset();
}

const Calibration::LiveTerm* live_term_for(const Calibration& cal, int ranks_per_node) {
  const Calibration::LiveTerm* best = nullptr;
  for (const auto& t : cal.live_terms)
    if (t.ranks <= ranks_per_node && (!best || t.ranks > best->ranks)) best = &t;
  return best;
}

double cold_fraction_for(const Calibration& cal, double ws) {
  const auto& p = cal.cache_probe;
  if (p.size() < 2 || !(ws > 0)) return 0.0;
  double hi = 0, lo = 1e300;
  for (const auto& [b, bw] : p) {
    hi = std::max(hi, bw);
    lo = std::min(lo, bw);
  }
  if (!(hi > lo)) return 0.0;
  double bw = p.front().second;
  if (ws >= p.back().first) {
    bw = p.back().second;
  } else if (ws > p.front().first) {
    for (std::size_t i = 1; i < p.size(); ++i) {
      if (ws <= p[i].first) {
        const double a = std::log(p[i - 1].first), b = std::log(p[i].first), t = (std::log(ws) - a) / (b - a);
        bw = p[i - 1].second + t * (p[i].second - p[i - 1].second);
        break;
      }
    }
  }
  return std::clamp((hi - bw) / (hi - lo), 0.0, 1.0);
}

std::string collective_family_mismatch(const Cluster& c, const Calibration& cal) {
  const bool nccl = c.collectives.family == CollFamily::nccl;
  if ((nccl && cal.has_mpi_terms && !cal.has_nccl_terms) || (!nccl && cal.has_nccl_terms && !cal.has_mpi_terms))
    return "calibration '" + cal.name + "' has " + (nccl ? "MPI" : "NCCL") + " collective terms only; cluster '" + c.name + "' uses " +
           (nccl ? "NCCL" : "MPI") + ": its collectives stay at the cluster's datasheet values";
  return "";
}

Calibration load_calibration(const std::string& path, const Cluster& c, Precision precision) {
  return read_calibration(YamlMap::load_file(path), c, precision);
}
Calibration parse_calibration(const std::string& text, const std::string& name, const Cluster& c, Precision precision) {
  return read_calibration(YamlMap::load_string(text, name), c, precision);
}

}  // namespace ks
