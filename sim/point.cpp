#include "sim/point.hpp"

#include "model/uncertainty.hpp"
#include "model/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>

#include "model/statistics.hpp"
#include "model/units.hpp"
#include "formats/config_files.hpp"
#include "formats/yaml_reader.hpp"

namespace ks {

const char* to_string(Scaling s) {
  switch (s) {
    case Scaling::strong: return "strong";
    case Scaling::strong_global_batch: return "strong-global-batch";
    case Scaling::weak: return "weak";
  }
  return "?";
}

Layout layout_for(const Cluster& c, int gpus, std::optional<int> gpus_per_node) {
  if (gpus < 1) throw InputError("--gpus: a GPU count must be at least 1, got " + std::to_string(gpus));
  const int per_node = gpus_per_node.value_or(c.gpus_per_node);
  if (per_node < 1 || per_node > c.gpus_per_node) {
    throw InputError("--gpus-per-node " + std::to_string(per_node) + ": cluster '" + c.name + "' (" + c.file + ") has " +
                     std::to_string(c.gpus_per_node) + " GPUs per node");
  }
  Layout l;
  l.ranks = gpus;
  if (gpus <= per_node) {
    l.nodes = 1;
  } else {
    if (gpus % per_node != 0) {
      throw InputError("--gpus " + std::to_string(gpus) + ": cannot be laid out on cluster '" + c.name + "' (" + c.file +
                       "): above " + std::to_string(per_node) + " GPUs a count must fill whole nodes of " +
                       std::to_string(per_node) + " (use --gpus-per-node to place fewer per node)");
    }
    l.nodes = gpus / per_node;
  }
  if (l.nodes > c.nodes) {
    throw InputError("--gpus " + std::to_string(gpus) + ": needs " + std::to_string(l.nodes) + " nodes but cluster '" +
                     c.name + "' (" + c.file + ") has " + std::to_string(c.nodes));
  }
  return l;
}

static std::vector<int> default_trace_ranks(int n) {
  std::vector<int> r;
  if (n <= 16) {
    for (int i = 0; i < n; ++i) r.push_back(i);
  } else {
    r = {0, 1, n / 2, n - 1};
  }
  return r;
}

WorkEstimate replay_work(double ranks, double iterations, double buckets) {
  WorkEstimate e;
  e.events = ranks * iterations * (buckets + 4);
  e.bytes = ranks * iterations * (40 + 8 * (buckets + 1)) + ranks * (250 + 8 * buckets);
  return e;
}

WorkEstimate estimate_study_work(const Workload& w, const StudyOptions& o) {
  const KanShape shape{w.widths, w.grid_size, w.spline_order};
  std::vector<double> pbytes;
  for (const auto& p : kan_parameters(shape)) pbytes.push_back(p.bytes());
  // (the workload's torch only: a bound on the work, the calibration's torch 2 would have fewer buckets, not more)
  const auto plans = ddp_bucket_plans(pbytes, kan_ready_order(shape), w.ddp, job_torch_ops(w, nullptr, false) != TorchOpSet::torch1);
  const double buckets = static_cast<double>(std::max(plans.first_iteration.size(), plans.steady.size()));
  WorkEstimate total = replay_work(1, o.iterations, buckets);  // the one-GPU baseline
  for (int n : o.gpus) {
    const WorkEstimate e = replay_work(n, o.iterations, buckets);
    total.events += e.events;
    total.bytes += e.bytes;
  }
  return total;
}

void check_work(const WorkEstimate& e, double max_events, const std::string& what) {
  if (e.events <= max_events) return;
  char buf[400];
  std::snprintf(buf, sizeof buf,
                "%s: would replay about %.3g events (about %.3g s at 4e5 events/s) and hold %s of records, above the "
                "limit of %.3g events (raise it with --max-events)",
                what.c_str(), e.events, e.events / 4e5, format_bytes(e.bytes).c_str(), max_events);
  throw InputError(buf);
}

ReplayInput replay_structure(const Workload& w, const Layout& layout, std::int64_t batch_per_gpu, TorchOpSet torch) {
  const KanShape shape{w.widths, w.grid_size, w.spline_order};
  std::vector<double> pbytes;
  for (const auto& p : kan_parameters(shape)) pbytes.push_back(p.bytes());
  const bool pytorch = w.implementation == Implementation::pytorch;
  const auto plans = ddp_bucket_plans(pbytes, kan_ready_order(shape), w.ddp, pytorch && torch != TorchOpSet::torch1);
  ReplayInput in;
  in.ops = !pytorch ? kanscale_iteration(shape, batch_per_gpu, w.ddp.gradient_as_bucket_view)
                    : efficient_kan_iteration(shape, batch_per_gpu, w.ddp.gradient_as_bucket_view, w.ddp.broadcast_buffers, torch);
  in.ranks = layout.ranks;
  in.first.buckets = plans.first_iteration;
  in.steady.buckets = plans.steady;
  in.broadcast_buffers = w.ddp.broadcast_buffers;
  in.broadcast_bytes = kan_buffer_bytes(shape);
  return in;
}

namespace {
const HostTerms& default_host_terms(const Calibration& cal) {
  if (!cal.default_host_terms)
    throw InputError("calibration '" + cal.name + "' has no PyTorch op classes, and no host terms were passed in for the host track "
                     "(the shipped dispatch prior's; formats' with_default_host_terms)");
  return *cal.default_host_terms;
}
}  // namespace

std::string host_terms_note(const Cluster& c, const Workload& w, const Calibration& cal) {
  if (!needs_default_host_terms(c, w, cal)) return "";
  const HostTerms& h = default_host_terms(cal);
  std::string each = "each op class's fixed cost per call";
  if (h.per_dispatch_s > 0) {
    char us[32];
    std::snprintf(us, sizeof us, "%.3g", h.per_dispatch_s * 1e6);
    each = std::string(us) + " us per dispatch (every op, view and autograd node torch runs)";
  }
  return "note: the host's cost of PyTorch's ops (Python, the dispatcher, autograd) comes from " + h.from + ": " + each +
         ", plus the cluster's kernel_launch per kernel; calibration '" + cal.name + "' has no PyTorch op classes of its own";
}

namespace {
// A pytorch workload on a CUDA cluster: per op the host's time (its class's
// fixed cost in h.ops, on the op that carries the class's unit;
// or h.per_dispatch_s on every op torch dispatches; plus a launch per
// kernel) and the device's (the roofline without the launch).
void set_two_track_costs(ReplayInput& in, const Cluster& c, const Calibration& cal, const HostTerms& h) {
  const std::size_t n = in.ops.size();
  in.op_time_s.assign(n, 0.0);
  in.op_host_s.assign(n, 0.0);
  auto roofline = [&](const Op& o) {
    OpCost k = o.kind == OpKind::gemm ? cal.gemm : cal.elementwise;
    k.fixed_s = 0;  // the launch is the host's
    return k.time_s(o.flops, o.bytes);
  };
  // A GPU job's traced classes: each unit's kernels' time (from the op that
  // carries its calls and elements), spread over its ops that launch
  // kernels in proportion to their rooflines, so that each kernel runs
  // where its op does (the reducer's copy back after the all-reduces, not
  // in backward); on the carrying op when none of its ops launches one
  struct UnitDevice {
    double total_s = 0, roofline_s = 0;
    int kernels = 0;
  };
  std::map<std::string, UnitDevice> unit_device;
  if (!cal.torch_device_ops.empty())
    for (const Op& o : in.ops) {
      if (o.torch_unit.empty()) continue;
      UnitDevice& u = unit_device[o.torch_unit];
      if (o.unit_calls > 0)
        if (const auto d = cal.torch_device_ops.find(o.torch_unit); d != cal.torch_device_ops.end())
          u.total_s += std::max(0.0, d->second.time_s(o.unit_calls, o.unit_elements));
      if (!o.host_only) u.roofline_s += roofline(o), ++u.kernels;
    }
  for (std::size_t i = 0; i < n; ++i) {
    const Op& o = in.ops[i];
    double host = 0, device = 0;
    if (h.per_dispatch_s > 0) {
      if (!o.torch_class.empty()) host = h.per_dispatch_s;
    } else if (!o.torch_unit.empty() && o.unit_calls > 0) {
      const auto it = h.ops.find(o.torch_unit);
      if (it == h.ops.end())
        throw InputError(h.from + ": no cost for PyTorch op class '" + o.torch_unit + "' (its torch_ops lack it); measure it again (kanscale calibrate "
                         "configs/calibrate/pytorch-cpu.yaml, or pytorch-gpu.yaml on a GPU node)");
      host = std::max(0.0, o.unit_calls * it->second.fixed_s);
    }
    if (!o.host_only) {
      if (!h.has_launch) host += c.gpu.kernel_launch_s;
      device = roofline(o);
    }
    if (const auto u = unit_device.find(o.torch_unit); u != unit_device.end()) {
      const UnitDevice& d = u->second;
      device = d.kernels == 0         ? (o.unit_calls > 0 ? d.total_s : 0.0)
               : o.host_only          ? 0.0
               : d.roofline_s > 0     ? d.total_s * roofline(o) / d.roofline_s
                                      : d.total_s / d.kernels;
    }
    in.op_host_s[i] = host;
    in.op_time_s[i] = device;
  }
  in.launch_queue_depth = c.gpu.launch_queue_depth;
}
}  // namespace

void set_replay_costs(ReplayInput& in, const Cluster& c, const Workload& w, const Calibration& cal, const Layout& layout,
                      std::int64_t batch_per_gpu, const CollectiveModel& coll) {
  check_calibration_covers(w, cal, "");
  double cold_fraction = 0;
  if (w.implementation == Implementation::kanscale && !cal.ops_cold.empty()) {
    // how far from cache-warm toward cold this rank's working set runs
    // (everything a training step touches but the runtime)
    const KanShape shape{w.widths, w.grid_size, w.spline_order};
    const MemoryEstimate m = calibrated_memory(kanscale_memory(shape, batch_per_gpu, w.ddp, 0.0, 0.0), shape, cal);
    cold_fraction = cold_fraction_for(cal, m.peak_bytes - m.runtime_bytes);
  }
  bool host_from_prior = false;
  if (host_track_applies(c, w)) {
    // the device runs the ops behind the host (sim/replay's host track)
    if (cal.torch_ops.empty()) {
      const HostTerms& h = default_host_terms(cal);
      host_from_prior = h.per_dispatch_s > 0;
      set_two_track_costs(in, c, cal, h);
    } else {
      // (the calibration's own live term, of this rank count, is applied below)
      HostTerms own;
      own.ops = cal.torch_ops;
      own.has_launch = cal.torch_host_has_launch;
      own.from = "calibration '" + cal.name + "'";
      set_two_track_costs(in, c, cal, own);
    }
  } else {
    // (a GPU job's traced host costs hold its kernels' launches, not a CPU's arithmetic)
    if (cal.torch_host_has_launch && w.implementation == Implementation::pytorch)
      throw InputError("calibration '" + cal.name + "': its PyTorch op classes come from a GPU job's traces (torch_ops: host_has_launch), but cluster " +
                       c.file + " has no GPU: use it with the GPU cluster the traces ran on");
    in.op_time_s = op_times_s(in.ops, cal, cold_fraction);
    in.op_host_s.clear();
  }
  // what live runs on the calibration's shapes cost beyond the microbenchmarks
  // (per ranks on a node), and a drawn model error when sampling intervals
  const Calibration::LiveTerm* live = live_term_for(cal, layout.ranks_per_node());
  for (double& t : in.op_time_s) t *= (live ? live->compute_factor : 1.0) * cal.compute_scale;
  // (a host from the dispatch prior has the prior's error, not the compute's)
  for (double& t : in.op_host_s) t *= (live ? live->compute_factor : 1.0) * (host_from_prior ? cal.host_scale : cal.compute_scale);
  for (PlannedBuckets* pb : {&in.first, &in.steady}) {
    pb->allreduce.clear();
    for (const auto& b : pb->buckets) pb->allreduce.push_back(coll.allreduce(b.bytes, layout));
    if (live)
      for (auto& e : pb->allreduce) {  // (the launch is part of the time)
        e.time_s *= live->comm_factor;
        e.launch_s *= live->comm_factor;
      }
    if (cal.comm_scale != 1.0)
      for (auto& e : pb->allreduce) e.time_s *= cal.comm_scale;
  }
  in.broadcast = coll.broadcast(in.broadcast_bytes, layout);
  // Steps (mpi_progress) are how kanscale's trainer drives MPI: it polls
  // from its compute thread. PyTorch's MPI process group runs each
  // collective on a thread of its own, so there a collective progresses
  // by itself.
  const bool polled = w.implementation == Implementation::kanscale;
  if (!polled) {
    for (PlannedBuckets* pb : {&in.first, &in.steady})
      for (auto& e : pb->allreduce) e.steps = 1;
    in.broadcast.steps = 1;
  }
  // (the per-bucket cost at the steady plan's buckets, in every iteration:
  // the first iteration's single bucket is costed as the steady ones)
  in.host_overhead_s = cal.host_overhead_s + (live ? live->host_overhead_s + live->per_bucket_s * static_cast<double>(in.steady.buckets.size()) : 0.0);
  // A rate or time at the edge of the double range (a FLOP rate of 1e-300,
  // an overhead of 1e300 s) makes durations the event core cannot order:
  // refuse any beyond ~30,000 years, naming where they came from.
  constexpr double kMaxDuration_s = 1e12;
  auto check_duration = [&](double t, const char* what, const std::string* name = nullptr) {
    if (t >= 0 && t <= kMaxDuration_s) return;
    char buf[96];
    std::snprintf(buf, sizeof buf, "%.3g s", t);
    throw InputError(what + (name ? "'" + *name + "'" : std::string()) + " would take " + buf + ": a rate or time in calibration '" + cal.name + "' or cluster " +
                     c.file + " is out of range (at most 1e12 s per step)");
  };
  for (std::size_t i = 0; i < in.op_time_s.size(); ++i) check_duration(in.op_time_s[i], "op ", &in.ops[i].name);
  for (std::size_t i = 0; i < in.op_host_s.size(); ++i) check_duration(in.op_host_s[i], "the host's dispatch of op ", &in.ops[i].name);
  for (const auto* pb : {&in.first, &in.steady})
    for (const auto& e : pb->allreduce) check_duration(e.time_s, "an all-reduce");
  check_duration(in.broadcast.time_s, "the buffer broadcast");
  check_duration(in.host_overhead_s, "the host overhead");
  in.jitter_sigma = cal.jitter_sigma;
  // the progress benchmark's, measured with the MPI collective's own steps, when fitted
  const bool mpi_steps = polled && c.collectives.family == CollFamily::mpi && cal.mpi_progress && cal.mpi_progress->interference;
  in.interference = mpi_steps ? *cal.mpi_progress->interference : cal.interference;
}

ReplayInput make_replay_input(const Cluster& c, const Workload& w, const Calibration& cal, const Layout& layout,
                              std::int64_t batch_per_gpu, std::uint64_t seed) {
  ReplayInput in = replay_structure(w, layout, batch_per_gpu, job_torch_ops(w, &cal, host_track_applies(c, w)));
  set_replay_costs(in, c, w, cal, layout, batch_per_gpu, *make_collective_model(c, cal));
  // a rank's persistent speed, at the ranks' expected order (an interval
  // sample draws its own instead: add_bands)
  in.rank_factor = rank_spread_factors(cal.rank_sigma, layout.ranks);
  in.seed = seed;
  return in;
}

namespace {
// A point's per-GPU batch, dataset and iterations per epoch under the
// scaling mode (throws InputError when the global batch does not split).
struct PointSplit {
  std::int64_t batch_per_gpu = 0, dataset_size = 0, iterations_per_epoch = 0;
};
PointSplit point_split(const Workload& w, Scaling scaling, int gpus) {
  ScalingPoint pt;
  switch (scaling) {
    case Scaling::strong:
      pt.batch_per_gpu = w.batch_per_gpu;
      pt.dataset_size = w.dataset_size;
      break;
    case Scaling::strong_global_batch: {
      const std::int64_t global = w.global_batch.value_or(w.batch_per_gpu);
      if (global % gpus != 0) {
        throw InputError(w.file + ": key 'global_batch': " + std::to_string(global) + " cannot be split evenly over " +
                         std::to_string(gpus) + " GPUs (--scaling strong-global-batch)");
      }
      pt.batch_per_gpu = global / gpus;
      pt.dataset_size = w.dataset_size;
      break;
    }
    case Scaling::weak:
      pt.batch_per_gpu = w.batch_per_gpu;
      if (w.dataset_size > kMaxDatasetSize / gpus) {
        throw InputError(w.file + ": key 'dataset_size': " + std::to_string(w.dataset_size) + " x " + std::to_string(gpus) +
                         " GPUs (--scaling weak) passes the largest dataset kanscale counts, 2^53 samples");
      }
      pt.dataset_size = w.dataset_size * gpus;
      break;
  }
  // (The short last batch of an epoch is timed as a full one.)
  const EpochSplit split = distributed_sampler_split(pt.dataset_size, gpus, pt.batch_per_gpu);
  pt.batch_per_gpu = split.batch;
  pt.iterations_per_epoch = split.iterations;

  return PointSplit{pt.batch_per_gpu, pt.dataset_size, pt.iterations_per_epoch};
}
}  // namespace

MemoryEstimate point_memory(const Cluster& c, const Workload& w, const Calibration& cal, const Layout& layout,
                            std::int64_t batch_per_gpu) {
  const KanShape shape{w.widths, w.grid_size, w.spline_order};
  // the runtime's own memory grows with the other ranks of the node (MPI's
  // shared-memory segments, where the calibration measured it)
  const double runtime = cal.runtime_memory_bytes + cal.runtime_memory_per_local_peer_bytes * (layout.ranks_per_node() - 1);
  const MemoryEstimate modelled = w.implementation == Implementation::kanscale
                                      ? kanscale_memory(shape, batch_per_gpu, w.ddp, runtime, c.gpu.memory_bytes)
                                      : efficient_kan_memory(shape, batch_per_gpu, w.ddp, runtime, c.gpu.memory_bytes);
  MemoryEstimate memory = w.implementation == Implementation::kanscale ? calibrated_memory(modelled, shape, cal) : modelled;
  if (layout.ranks > 1 && cal.memory_collective_in_flight > 0) {
    // every bucket can be in flight at the end of backward: the library's
    // copies of all the gradients (the gradient bytes themselves, not the
    // calibrated per-parameter total)
    memory.collective_bytes = cal.memory_collective_in_flight * modelled.gradients_bytes;
    memory.peak_bytes += memory.collective_bytes;
  }

  return memory;
}

ScalingPoint simulate_point(const Cluster& c, const Workload& w, const Calibration& cal, const StudyOptions& o, const Layout& layout) {
  const int gpus = layout.ranks;
  ScalingPoint pt;
  pt.gpus = gpus;
  pt.nodes = layout.nodes;
  const PointSplit split = point_split(w, o.scaling, gpus);
  pt.batch_per_gpu = split.batch_per_gpu;
  pt.dataset_size = split.dataset_size;
  pt.iterations_per_epoch = split.iterations_per_epoch;

  const KanShape shape{w.widths, w.grid_size, w.spline_order};
  const auto params = kan_parameters(shape);
  ReplayInput in = make_replay_input(c, w, cal, layout, pt.batch_per_gpu, o.seed);
  in.iterations = std::max(2, o.iterations);
  in.include_first = true;
  if (o.trace) in.trace_ranks = o.trace_ranks.empty() ? default_trace_ranks(gpus) : o.trace_ranks;

  ReplayResult res = replay(in);
  pt.events = res.events;

  // Per rank: mean over steady iterations; then median and p95 over ranks.
  const int I = in.iterations;
  std::vector<double> it(gpus), cp(gpus), cm(gpus), ex(gpus), first(gpus);
  for (int r = 0; r < gpus; ++r) {
    double a = 0, b = 0, cc = 0, d = 0;
    for (int i = 1; i < I; ++i) {
      const auto& ri = res.iterations[i][r];
      a += ri.iteration_s();
      b += ri.compute_s;
      cc += ri.comm_s;
      d += ri.exposed_s;
    }
    it[r] = a / (I - 1);
    cp[r] = b / (I - 1);
    cm[r] = cc / (I - 1);
    ex[r] = d / (I - 1);
    first[r] = res.iterations[0][r].iteration_s();
  }
  pt.iteration_s = summarize(it);
  pt.compute_s = summarize(cp);
  pt.comm_s = summarize(cm);
  pt.exposed_s = summarize(ex);
  pt.first_iteration_s = summarize(first);
  pt.overhead_exposed = pt.exposed_s.median / pt.iteration_s.median;
  pt.overhead_total = pt.comm_s.median / pt.iteration_s.median;
  pt.samples_per_s = static_cast<double>(gpus) * static_cast<double>(pt.batch_per_gpu) / pt.iteration_s.median;
  pt.epoch_s = static_cast<double>(pt.iterations_per_epoch) * pt.iteration_s.median + w.epoch_overhead_s;
  const double total_iters = static_cast<double>(pt.iterations_per_epoch) * w.epochs;
  pt.job_fixed_s = c.job.total(gpus, w.implementation);
  pt.time_to_train_s =
      pt.job_fixed_s + pt.first_iteration_s.median + (total_iters - 1) * pt.iteration_s.median + w.epochs * w.epoch_overhead_s;
  pt.gpu_hours = gpus * pt.time_to_train_s / 3600.0;
  pt.memory = point_memory(c, w, cal, layout, pt.batch_per_gpu);

  // Bucket plans with timings: first iteration and the last steady one, on rank 0.
  auto rows = [&](const PlannedBuckets& pb, int iteration) {
    std::vector<BucketRow> out;
    const double t0 = res.iterations[iteration][0].start_s;
    for (std::size_t b = 0; b < pb.buckets.size(); ++b) {
      BucketRow row;
      row.index = static_cast<int>(b);
      for (int p : pb.buckets[b].params) row.params.push_back(params[p].name);
      row.bytes = pb.buckets[b].bytes;
      row.label = pb.allreduce[b].label();
      for (const auto& cr : res.collectives) {
        if (cr.iteration == iteration && cr.bucket == static_cast<int>(b)) {
          row.start_s = cr.start_s - t0;
          row.end_s = cr.end_s - t0;
        }
      }
      out.push_back(row);
    }
    return out;
  };
  pt.first_plan = rows(in.first, 0);
  pt.steady_plan = rows(in.steady, I - 1);
  pt.broadcast_label = w.ddp.broadcast_buffers ? in.broadcast.label() : "off";
  pt.trace = std::move(res.trace);
  return pt;
}

bool has_measured_uncertainty(const Calibration& cal) {
  return has_parameter_uncertainty(cal) || cal.jitter_sigma > 0 || cal.model_error_sigma > 0 || cal.drift_sigma > 0 || cal.comm_error_sigma > 0 ||
         cal.rank_sigma > 0 || cal.host_prior_sigma > 0;
}

Band central_band(std::vector<double> v, double level) {
  const double tail = (1.0 - level) / 2;
  return {quantile(v, tail), quantile(std::move(v), 1.0 - tail)};
}

namespace {
// Monte Carlo over the calibration's uncertainty: sample s replays the
// baseline and every point with the calibration drawn as number s and the
// jitter seeded by s; the bands are the central intervals over samples.
// A sample needs only each point's median iteration time, which
// replay_iteration_median gets from the ranks that decide the timeline
// (o.interval_full_replays: from every rank, as simulate_point would).
// Every op's time (device and host) and every all-reduce's by `f`.
void scale_iteration(ReplayInput& in, double f) {
  for (double& t : in.op_time_s) t *= f;
  for (double& t : in.op_host_s) t *= f;
  for (PlannedBuckets* pb : {&in.first, &in.steady})
    for (auto& e : pb->allreduce) {
      e.time_s *= f;
      e.launch_s *= f;
    }
}

// The note a prediction prints when it reaches past the calibration's live
// runs: which counts, and how the intervals widen for it.
std::string extrapolation_note(const Calibration& cal, const std::vector<Layout>& layouts) {
  std::string counts;
  Extrapolation any;
  for (const Layout& l : layouts)
    if (const Extrapolation x = extrapolation_for(cal, l.ranks); x.applies()) {
      counts += (counts.empty() ? "" : ", ") + std::to_string(l.ranks);
      any = x;
    }
  if (counts.empty()) return "";
  char per[32];
  std::snprintf(per, sizeof per, "%.3g", any.per_doubling_sigma);
  return "live term of " + std::to_string(any.measured_ranks) + " rank(s) reused for " + counts +
         " (calibration '" + cal.name + "' measured no more): the live factors and the ranks' spread are carried there unmeasured, "
         "and the intervals widen by a lognormal sigma of " + per + " per doubling of the ranks beyond " +
         std::to_string(any.measured_ranks) + ", from " + any.source;
}

void add_bands(const Cluster& c, const Workload& w, const Calibration& cal, const StudyOptions& o, const Layout& one,
               const std::vector<Layout>& layouts, StudyResult& sr) {
  if (!has_measured_uncertainty(cal)) {
    sr.interval_note = "calibration '" + cal.name + "' (" + cal.source + ") records no measured uncertainty: no intervals";
    return;
  }
  const Rng rng(o.seed ^ 0x5eed1e7e7a15ULL);
  // the baseline, then every point: its layout and its share of the work
  std::vector<Layout> all{one};
  all.insert(all.end(), layouts.begin(), layouts.end());
  std::vector<PointSplit> splits;
  std::vector<ReplayInput> inputs;  // ops and bucket plans once; costs per sample
  for (const Layout& l : all) {
    splits.push_back(point_split(w, o.scaling, l.ranks));
    inputs.push_back(replay_structure(w, l, splits.back().batch_per_gpu, job_torch_ops(w, &cal, host_track_applies(c, w))));
    inputs.back().iterations = std::max(2, o.iterations);
    inputs.back().include_first = true;
  }
  // each point's reach past the live runs' ranks (model/config): its sigma, once
  std::vector<double> reach_sigma;
  for (const Layout& l : all) reach_sigma.push_back(extrapolation_for(cal, l.ranks).sigma);
  std::vector<std::vector<double>> iter(layouts.size()), speedup(layouts.size());
  std::vector<double> epoch(all.size());
  JitterTable jitter;
  for (int s = 0; s < o.interval_samples; ++s) {
    const Calibration drawn = draw_calibration(cal, rng, static_cast<std::uint64_t>(s));
    const std::uint64_t seed = o.seed + 1 + static_cast<std::uint64_t>(s);
    const auto coll = make_collective_model(c, drawn);
    for (std::size_t k = 0; k < all.size(); ++k) {
      ReplayInput& in = inputs[k];
      set_replay_costs(in, c, w, drawn, all[k], splits[k].batch_per_gpu, *coll);
      in.seed = seed;
      // ranks beyond the live runs': the carried terms' own error, one draw
      // per sample for every point (a systematic error, growing with the reach)
      if (reach_sigma[k] > 0) scale_iteration(in, std::exp(reach_sigma[k] * rng.normal(0x4000, static_cast<std::uint64_t>(s))));
      // this sample's ranks, each at a persistent speed of its own (median 1)
      if (cal.rank_sigma > 0 && all[k].ranks > 1) {
        in.rank_factor.resize(static_cast<std::size_t>(all[k].ranks));
        for (std::size_t r = 0; r < in.rank_factor.size(); ++r)
          in.rank_factor[r] = std::exp(cal.rank_sigma * rng.normal(0x3000 + r, static_cast<std::uint64_t>(s)));
      }
      IterationMedian m;
      if (o.interval_full_replays) {
        m = replay_iteration_median_full(in);
      } else {
        m = replay_iteration_median(in, &jitter);
      }
      (m.reduced ? sr.interval_replays_reduced : sr.interval_replays_full) += 1;
      sr.interval_ranks_replayed += static_cast<std::uint64_t>(m.ranks_replayed);
      epoch[k] = static_cast<double>(splits[k].iterations_per_epoch) * m.steady_s + w.epoch_overhead_s;
      if (k > 0) {
        iter[k - 1].push_back(m.steady_s);
        ScalingPoint& pt = sr.points[k - 1];
        const double total_iters = static_cast<double>(pt.iterations_per_epoch) * w.epochs;
        pt.time_to_train_samples.push_back(pt.job_fixed_s + pt.first_iteration_s.median + (total_iters - 1) * m.steady_s +
                                           w.epochs * w.epoch_overhead_s);
      }
    }
    for (std::size_t i = 0; i < layouts.size(); ++i) {
      const double n = layouts[i].ranks;
      speedup[i].push_back(o.scaling == Scaling::weak ? n * epoch[0] / epoch[i + 1] : epoch[0] / epoch[i + 1]);
    }
  }
  for (std::size_t i = 0; i < layouts.size(); ++i) {
    sr.points[i].iteration_band = central_band(iter[i], o.interval_level);
    sr.points[i].speedup_band = central_band(speedup[i], o.interval_level);
  }
  sr.interval_samples = o.interval_samples;
}
}  // namespace

std::string batch_change_note(const Workload& w, Scaling scaling, const ScalingPoint& p) {
  const std::int64_t asked = scaling == Scaling::strong_global_batch ? w.global_batch.value_or(w.batch_per_gpu) / p.gpus : w.batch_per_gpu;
  if (p.batch_per_gpu == asked) return "";
  const std::int64_t per_rank = (p.dataset_size + p.gpus - 1) / p.gpus;
  return "N=" + std::to_string(p.gpus) + ": batch per GPU " + std::to_string(p.batch_per_gpu) + ", not the workload's " +
         std::to_string(asked) + ": the dataset's " + std::to_string(p.dataset_size) + " samples over " + std::to_string(p.gpus) +
         " GPUs leave each ceil(" + std::to_string(p.dataset_size) + "/" + std::to_string(p.gpus) + ") = " + std::to_string(per_rank) +
         " per epoch, one iteration of " + std::to_string(p.batch_per_gpu);
}

StudyResult run_study(const Cluster& c, const Workload& w, const Calibration& cal, const StudyOptions& o) {
  if (o.gpus.empty()) throw InputError("--gpus: give at least one GPU count");
  // Every layout, once, before simulating anything (an impossible one is an InputError).
  std::vector<Layout> layouts;
  for (int n : o.gpus) layouts.push_back(layout_for(c, n, o.gpus_per_node));
  StudyResult sr;
  sr.parameters = kan_parameter_count(KanShape{w.widths, w.grid_size, w.spline_order});
  sr.collective_family = to_string(c.collectives.family);
  if (const std::string m = collective_family_mismatch(c, cal); !m.empty()) sr.warnings.push_back(m);
  if (const std::string m = host_terms_note(c, w, cal); !m.empty()) sr.warnings.push_back(m);
  if (const std::string m = extrapolation_note(cal, layouts); !m.empty()) sr.warnings.push_back(m);
  StudyOptions base = o;
  base.trace = false;
  const Layout one = layout_for(c, 1, o.gpus_per_node);
  sr.baseline = simulate_point(c, w, cal, base, one);
  for (const Layout& layout : layouts) {
    const int n = layout.ranks;
    ScalingPoint pt = (n == 1 && !o.trace) ? sr.baseline : simulate_point(c, w, cal, o, layout);
    if (o.scaling == Scaling::weak) {
      // Work grows with N: speedup is N times the epoch-time ratio.
      pt.speedup = n * sr.baseline.epoch_s / pt.epoch_s;
    } else {
      pt.speedup = sr.baseline.epoch_s / pt.epoch_s;
    }
    pt.efficiency = pt.speedup / n;
    pt.extrapolation_sigma = extrapolation_for(cal, n).sigma;
    if (const std::string note = batch_change_note(w, o.scaling, pt); !note.empty()) sr.warnings.push_back(note);
    if (pt.memory.exceeds_capacity()) {
      sr.warnings.push_back("N=" + std::to_string(n) + ": predicted peak memory " + format_bytes(pt.memory.peak_bytes) +
                            " exceeds the " + c.gpu.model + "'s " + format_bytes(pt.memory.capacity_bytes) +
                            ": this run would fail with out-of-memory");
    }
    sr.points.push_back(std::move(pt));
  }
  sr.baseline.speedup = 1.0;
  sr.baseline.efficiency = 1.0;
  if (o.interval_samples > 0) add_bands(c, w, cal, o, one, layouts, sr);
  return sr;
}

}  // namespace ks
