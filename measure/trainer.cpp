// The CPU trainer loop (--backend cpu): the model in host memory, the
// gradient all-reduces non-blocking over the MPI process group (Comm),
// progressed by MPI_Test between backward layers, as DDP's reducer with
// ProcessGroupMPI would. What it shares with the CUDA loop: the setup
// below, the reducer (reducer.hpp), checkpoints (checkpoint.hpp) and the
// report (train_report.cpp).
#include "trainer.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <functional>
#include <iostream>
#include <thread>

#include "adam.hpp"
#include "checkpoint.hpp"
#include "data.hpp"
#include "kan.hpp"
#include "kan_cpu.hpp"
#include "model/buckets.hpp"
#include "model/kan_model.hpp"
#include "model/sampler.hpp"
#include "formats/yaml_reader.hpp"
#include "reducer.hpp"
#include "trainer_detail.hpp"
#include "workbench.hpp"

namespace ks {
namespace train_detail {

namespace {
std::atomic<int> g_stop{0};
extern "C" void on_signal(int) { g_stop = 1; }
}  // namespace

bool stop_requested() { return g_stop.load() != 0; }

StopOnSignal::StopOnSignal(bool on) : active(on) {
  g_stop = 0;
  if (!active) return;
  old_int = std::signal(SIGINT, on_signal);
  old_term = std::signal(SIGTERM, on_signal);
}

StopOnSignal::~StopOnSignal() {
  if (!active) return;
  std::signal(SIGINT, old_int);
  std::signal(SIGTERM, old_term);
}

Setup prepare(const TrainOptions& o, Comm& comm) {
  const Workload& w = o.workload;
  const int world = comm.size();
  Setup setup{Dataset(w.task, static_cast<int>(w.widths.front()), static_cast<int>(w.widths.back()), w.dataset_size, o.seed),
              init_kan(w.widths, w.grid_size, w.spline_order, o.seed)};
  Dataset& data = setup.data;
  data.materialize(512.0 * 1024 * 1024);  // in memory when it fits in 512 MiB, like a TensorDataset
  KanNet& net = setup.net;
  Adam& adam = setup.adam;
  adam.lr = w.learning_rate;
  auto prefs = kan_parameter_refs(net);
  std::vector<std::size_t> sizes;
  for (const auto& p : prefs) sizes.push_back(p.size());
  adam.init(sizes);
  setup.param_elements = sizes;
  std::int64_t start_step = 0;
  if (!o.resume.empty()) {
    start_step = resume_checkpoint(o, world, net, adam);
    prefs = kan_parameter_refs(net);
  }
  // DDP construction: parameters (and buffers) broadcast from rank 0.
  for (auto& t : kan_state_refs(net)) comm.broadcast(t.data, t.size(), 0);

  std::vector<double> pbytes;
  for (const auto& p : prefs) pbytes.push_back(4.0 * static_cast<double>(p.size()));
  const KanShape shape{w.widths, w.grid_size, w.spline_order};
  setup.plans = ddp_bucket_plans(pbytes, kan_ready_order(shape), w.ddp);

  const EpochSplit split = distributed_sampler_split(w.dataset_size, world, w.batch_per_gpu);
  setup.batch = split.batch;
  setup.ipe = split.iterations;
  const int epochs = o.epochs > 0 ? o.epochs : w.epochs;
  setup.total_steps = o.steps > 0 ? o.steps : setup.ipe * epochs;
  if (setup.total_steps <= start_step) {
    throw InputError(o.resume + ": the checkpoint is at step " + std::to_string(start_step) +
                     "; ask for more steps (--steps or --epochs) than that");
  }
  setup.start_step = start_step;
  return setup;
}

void end_step(const TrainOptions& o, int rank, std::int64_t step, std::int64_t total_steps, const IterRecord& rec,
              std::vector<IterRecord>& records, const std::function<void(std::int64_t)>& save_everywhere) {
  records.push_back(rec);
  // Without --json/--csv only a recent window feeds the summary: a long run
  // must not grow without bound.
  if (o.json.empty() && o.csv.empty() && records.size() > 20000) records.erase(records.begin(), records.begin() + 10000);
  if (!o.quiet && rank == 0 && (step % 50 == 0 || step + 1 == total_steps))
    std::cerr << "step " << step << "/" << total_steps << " loss " << rec.loss << "\n";
  if (!o.checkpoint.empty() && o.checkpoint_every > 0 && (step + 1) % o.checkpoint_every == 0) save_everywhere(step + 1);
}

}  // namespace train_detail

namespace {

// A bucket's host buffer and its timing in the current iteration.
struct BucketRun {
  std::vector<float> buf;
  int handle = -1;
  bool launched = false, done = false, mpi_done = false;
  double launch_s = 0, start_s = 0, end_s = 0;
};

using Record = std::function<void(int track, std::string name, const char* cat, double t0, double t1, double bytes)>;

// The iteration's buckets on the MPI process group: launched when the
// reducer says, progressed by MPI_Test between layers. A collective is over
// when MPI says so and every earlier one is (they complete in order, FIFO);
// it started when it was launched or the previous one ended, whichever is
// later.
struct BucketTracker {
  std::vector<BucketRun>& runs;
  Comm& comm;
  double inject_delay_s;
  const std::function<double()>& now;

  void reset() {
    for (BucketRun& r : runs) {
      r.handle = -1;
      r.launched = r.done = r.mpi_done = false;
      r.launch_s = r.start_s = r.end_s = 0;
    }
  }
  void finish_if_done(std::size_t b) {
    BucketRun& r = runs[b];
    if (r.done || !r.launched) return;
    if (!r.mpi_done && comm.test(r.handle)) r.mpi_done = true;
    if (!r.mpi_done) return;
    if (b > 0 && !runs[b - 1].done) return;
    const double start = std::max(r.launch_s, b > 0 ? runs[b - 1].end_s : 0.0);
    const double t = now();
    if (inject_delay_s > 0 && t < start + inject_delay_s) return;
    r.start_s = start;
    // with an injected delay the collective lasts exactly that long (if MPI finished sooner)
    r.end_s = inject_delay_s > 0 ? start + inject_delay_s : t;
    r.done = true;
  }
  void progress() {
    for (std::size_t b = 0; b < runs.size(); ++b) finish_if_done(b);
  }
  void launch(std::size_t b) {
    BucketRun& r = runs[b];
    r.launch_s = now();
    r.handle = comm.iallreduce_sum(r.buf.data(), r.buf.size());
    r.launched = true;
  }
  // Waits for every bucket; records the wait and each collective, adds the
  // communication and the exposed wait to the iteration's record.
  void wait_all(const Record& record, train_detail::IterRecord& rec, double& comm_busy, double& exposed) {
    const double wait0 = now();
    for (;;) {
      progress();
      if (std::all_of(runs.begin(), runs.end(), [](const BucketRun& r) { return r.done; })) break;
      if (inject_delay_s > 0) std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    for (const auto& r : runs) comm.wait(r.handle);
    comm.release();
    const double wait1 = std::max(now(), runs.back().end_s);
    record(0, "wait for all-reduce", "wait", wait0, wait1, 0);
    exposed += wait1 - wait0;
    for (std::size_t b = 0; b < runs.size(); ++b) {
      const BucketRun& r = runs[b];
      record(1, "allreduce bucket " + std::to_string(b) + " (" + comm.backend() + ")", "comm", r.start_s, r.end_s,
             4.0 * static_cast<double>(r.buf.size()));
      comm_busy += r.end_s - std::max(r.launch_s, b > 0 ? runs[b - 1].end_s : 0.0);
      rec.bucket_s.push_back(r.end_s - r.start_s);
    }
  }
};

// DDP's broadcast of the module's buffers (the grids, coalesced): copy in,
// broadcast, copy back. Returns its start and end.
std::pair<double, double> broadcast_grids(Comm& comm, KanNet& net, std::vector<float>& flat, const std::function<double()>& now) {
  const double t0 = now();
  std::size_t off = 0;
  for (const auto& L : net.layers) {
    std::copy(L.grid.begin(), L.grid.end(), flat.begin() + static_cast<std::ptrdiff_t>(off));
    off += L.grid.size();
  }
  comm.broadcast(flat.data(), flat.size(), 0);
  off = 0;
  for (auto& L : net.layers) {
    std::copy(flat.begin() + static_cast<std::ptrdiff_t>(off), flat.begin() + static_cast<std::ptrdiff_t>(off + L.grid.size()), L.grid.begin());
    off += L.grid.size();
  }
  return {t0, now()};
}

// Backward with DDP's hooks: each gradient, as it is ready, scaled into its
// bucket (launched when full), MPI progressed between layers. The slices do
// not overlap: a layer's backward ends where its first gradient copy
// starts; a copy ends before its bucket's launch (its own slice); the MPI
// progress after a layer is a slice of its own.
void backward_with_hooks(KanCpuNet& cpu, int layers, Reducer& reducer, BucketTracker& buckets, const std::vector<TensorRef>& prefs,
                         float inv_world, const Record& record, const std::function<double()>& now) {
  std::vector<BucketRun>& runs = buckets.runs;
  auto launch = [&](std::size_t b) { buckets.launch(b); };
  double t0 = now();
  int layer = layers - 1;
  bool layer_open = true;
  cpu.backward(
      [&](int p) {
        if (layer_open) record(0, "backward layer " + std::to_string(layer), "backward", t0, now(), 0);
        layer_open = false;
        const double c0 = now();  // after the record, which is no copy's cost
        const Reducer::Slot& s = reducer.slot(p);
        const auto& g = cpu.grads()[static_cast<std::size_t>(p)];
        float* dst = runs[static_cast<std::size_t>(s.bucket)].buf.data() + s.offset;
        for (std::size_t i = 0; i < g.size(); ++i) dst[i] = g[i] * inv_world;
        const double c1 = now();
        record(0, "bucket_copy " + prefs[static_cast<std::size_t>(p)].name, "grad_copy", c0, c1, 0);
        if (reducer.mark_ready(p, launch)) record(0, "launch", "launch", c1, now(), 0);
      },
      [&](int l) {
        if (layer_open) record(0, "backward layer " + std::to_string(l), "backward", t0, now(), 0);
        const double p0 = now();
        buckets.progress();
        record(0, "progress", "launch", p0, now(), 0);
        layer = l - 1;
        layer_open = true;
        t0 = now();  // after the record, which is no layer's cost
      });
}

}  // namespace

TrainResult run_train(const TrainOptions& o, Comm& comm) {
  using namespace train_detail;
  const Workload& w = o.workload;
  const int rank = comm.rank(), world = comm.size();
  set_cpu_threads(o.threads);
  const StopOnSignal stop_guard(!o.checkpoint.empty());
  Setup setup = prepare(o, comm);
  Dataset& data = setup.data;
  KanNet& net = setup.net;
  Adam& adam = setup.adam;
  auto prefs = kan_parameter_refs(net);
  const std::int64_t start_step = setup.start_step, batch = setup.batch, ipe = setup.ipe, total_steps = setup.total_steps;
  Reducer reducer(setup.plans, setup.param_elements);
  KanCpuNet cpu(net);
  const float inv_world = 1.0f / static_cast<float>(world);
  std::vector<float> grids_flat;
  for (const auto& L : net.layers) grids_flat.insert(grids_flat.end(), L.grid.begin(), L.grid.end());
  std::vector<float*> grads, params;
  for (auto& g : cpu.grads()) grads.push_back(g.data());
  for (auto& p : prefs) params.push_back(p.data);

  auto save_everywhere = [&](std::int64_t at_step) { save_on_rank0(o, comm, net, adam, at_step); };
  std::vector<TraceSlice> slices;
  std::int64_t step = start_step;
  // Every op is timed whether or not a trace is asked for: the summary
  // reports each op's median per steady iteration (summary.ops). Without
  // --trace only a recent window is kept, so a long run stays bounded.
  const Record record_slice = [&](int track, std::string name, const char* cat, double t0, double t1, double bytes) {
    slices.push_back({rank, track, step, std::move(name), cat, t0, t1, bytes});
    if (o.trace.empty() && slices.size() > 400000) slices.erase(slices.begin(), slices.begin() + 200000);
  };
  auto record = [&](int track, std::string name, const char* cat, double t0, double t1, double bytes = 0) {
    record_slice(track, std::move(name), cat, t0, t1, bytes);
  };
  std::vector<IterRecord> records;
  const Stopwatch origin;  // the trainer's per-op instrumentation reads this one clock
  const std::function<double()> now = [&] { return origin.seconds(); };
  StepBatches batches(w.dataset_size, world, rank, o.seed, batch, ipe);
  std::vector<float> X, T;
  double last_loss = 0;
  // The buckets persist across iterations, as DDP's flat bucket tensors do
  // (fresh buffers every iteration cost page faults and the MPI library's
  // memory registration: measured here, ~240 us in the call that starts a
  // 1 MB all-reduce). The first iteration's are freed after it, as DDP
  // frees them when it rebuilds.
  std::vector<BucketRun> runs_of[2];
  for (Reducer::Plan plan : {Reducer::kFirst, Reducer::kSteady}) {
    runs_of[plan].resize(reducer.buckets(plan));
    for (std::size_t b = 0; b < reducer.buckets(plan); ++b) runs_of[plan][b].buf.resize(reducer.elements(plan, b));
  }
  bool first_iteration = true;  // of this DDP instance
  for (; step < total_steps; ++step) {
    if (!o.checkpoint.empty() && comm.allreduce_max(stop_requested() ? 1.0 : 0.0) > 0) break;
    const StepBatches::Slice slice = batches.at(step);
    const int B = slice.size;
    IterRecord rec;
    rec.step = step;
    rec.rank = rank;
    rec.batch = B;
    rec.first = first_iteration;
    rec.start_s = now();
    double comm_busy = 0, exposed = 0;

    // grids broadcast before forward (broadcast_buffers)
    if (w.ddp.broadcast_buffers && world > 1) {
      const auto [t0, t1] = broadcast_grids(comm, net, grids_flat, now);
      record(1, "broadcast buffers (" + comm.backend() + ")", "comm", t0, t1, 4.0 * static_cast<double>(grids_flat.size()));
      record(0, "wait for broadcast", "wait", t0, t1);
      comm_busy += t1 - t0;
      exposed += t1 - t0;
    }
    // the batch
    double t0 = now();
    X.resize(static_cast<std::size_t>(B) * data.in());
    T.resize(static_cast<std::size_t>(B) * data.out());
    for (int s = 0; s < B; ++s) data.sample(slice.index[s], &X[static_cast<std::size_t>(s) * data.in()], &T[static_cast<std::size_t>(s) * data.out()]);
    record(0, "load batch", "host", t0, now());
    // forward
    t0 = now();
    last_loss = cpu.forward(X.data(), T.data(), B, [&](int l) {
      const double t1 = now();
      record(0, "forward layer " + std::to_string(l), "forward", t0, t1);
      t0 = t1;
    });
    record(0, "mse", "forward", t0, now());  // the loss after the last layer
    rec.loss = last_loss;
    // backward with DDP's hooks
    const Reducer::Plan plan = first_iteration ? Reducer::kFirst : Reducer::kSteady;
    reducer.begin(plan);
    std::vector<BucketRun>& runs = runs_of[plan];
    BucketTracker buckets{runs, comm, o.inject_delay_s, now};
    buckets.reset();
    backward_with_hooks(cpu, static_cast<int>(net.layers.size()), reducer, buckets, prefs, inv_world, record_slice, now);
    if (!reducer.all_launched()) throw std::logic_error("CPU trainer: a bucket never became ready");
    buckets.wait_all(record_slice, rec, comm_busy, exposed);
    // copy back, Adam
    t0 = now();
    std::vector<float*> bufs;
    for (auto& r : runs) bufs.push_back(r.buf.data());
    const std::vector<const float*> reduced = reducer.reduced_gradients(
        bufs, w.ddp.gradient_as_bucket_view, grads, [](float* dst, const float* src, std::size_t n) { std::copy(src, src + n, dst); });
    if (!w.ddp.gradient_as_bucket_view) record(0, "copy_back", "copy_back", t0, now());
    t0 = now();
    adam.update(params, reduced);
    rec.end_s = now();
    record(0, "adam", "optimizer", t0, rec.end_s);
    rec.comm_s = comm_busy;
    rec.exposed_s = exposed;
    rec.compute_s = (rec.end_s - rec.start_s) - exposed;
    if (first_iteration) std::vector<BucketRun>().swap(runs_of[Reducer::kFirst]);
    first_iteration = false;
    end_step(o, rank, step, total_steps, rec, records, save_everywhere);
  }
  if (!o.checkpoint.empty()) save_everywhere(step);

  return report(o, comm, net, records, slices, ReportContext{start_step, step, total_steps, batch, last_loss, -1.0, comm.backend(), batches.epoch_start_s()});
}

}  // namespace ks
