// The CUDA trainer loop (--backend cuda): the model, its gradients, the
// buckets and Adam live on the GPU; NCCL all-reduces the buckets on a
// communication stream while the compute stream runs the rest of backward,
// as DDP's reducer does with ProcessGroupNCCL. Timing comes from CUDA
// events on both streams, so the records and the trace mean what the CPU
// loop's mean (trainer.cpp): same events, same tracks, same metrics. The
// bucket map, readiness and in-order launch are the shared Reducer's.
#include <algorithm>
#include <iostream>
#include <memory>
#include <stdexcept>

#include "comm.hpp"
#include "gpu.hpp"
#include "kan_cpu.hpp"
#include "checkpoint.hpp"
#include "formats/yaml_reader.hpp"
#include "reducer.hpp"
#include "trainer.hpp"
#include "trainer_detail.hpp"
#include "workbench.hpp"

namespace ks {

namespace {

// A bucket's device buffer and its timing marks in the current iteration.
struct DeviceBucket {
  float* buf = nullptr;
  std::size_t n = 0;
  int handle = -1;
  int ready_mark = -1, start_mark = -1, end_mark = -1;
};

std::vector<DeviceBucket> device_buckets(Gpu& gpu, const Reducer& reducer, Reducer::Plan plan) {
  std::vector<DeviceBucket> v;
  for (std::size_t b = 0; b < reducer.buckets(plan); ++b) {
    DeviceBucket d;
    d.n = reducer.elements(plan, b);
    d.buf = gpu.alloc(d.n);
    v.push_back(d);
  }
  return v;
}

// A slice of the trace between two event marks of the iteration.
struct Span {
  std::string name, cat;
  int track, a, b;
  double bytes = 0;
};

// The marks of the grids' broadcast before forward (-1: none).
struct BroadcastMarks {
  int bc0 = -1, bc1 = -1, bcw0 = -1, bcw1 = -1;
};

// DDP broadcasts the module's buffers (the grids, coalesced) before forward:
// on the communication stream, the compute stream waiting for it.
BroadcastMarks broadcast_grids(Gpu& gpu, Comm& nccl, KanGpuNet& dnet, std::vector<Span>& spans) {
  const GpuStream CS = GpuStream::compute, NS = GpuStream::comm;
  BroadcastMarks m;
  m.bcw0 = gpu.mark(CS);
  gpu.wait(NS, m.bcw0);
  m.bc0 = gpu.mark(NS);
  nccl.broadcast(dnet.grids(), dnet.grids_size(), 0);
  m.bc1 = gpu.mark(NS);
  gpu.wait(CS, m.bc1);
  m.bcw1 = gpu.mark(CS);
  spans.push_back({"broadcast buffers (nccl)", "comm", 1, m.bc0, m.bc1, 4.0 * static_cast<double>(dnet.grids_size())});
  spans.push_back({"wait for broadcast", "wait", 0, m.bcw0, m.bcw1});
  return m;
}

// After the iteration has synchronised: its communication (every bucket's
// all-reduce, the broadcast) and the compute stream's waits for it.
void account_iteration(Gpu& gpu, const std::vector<DeviceBucket>& buckets, int wait0, int wait1, const BroadcastMarks& bc,
                       train_detail::IterRecord& rec) {
  double comm_busy = 0, exposed = 0;
  for (const auto& d : buckets) {
    comm_busy += gpu.seconds(d.start_mark, d.end_mark);
    rec.bucket_s.push_back(gpu.seconds(d.start_mark, d.end_mark));
  }
  exposed += gpu.seconds(wait0, wait1);
  if (bc.bc0 >= 0) {
    comm_busy += gpu.seconds(bc.bc0, bc.bc1);
    exposed += gpu.seconds(bc.bcw0, bc.bcw1);
  }
  rec.comm_s = comm_busy;
  rec.exposed_s = exposed;
  rec.compute_s = (rec.end_s - rec.start_s) - exposed;
}

// Backward with DDP's hooks: each gradient scaled into its bucket on the
// compute stream; a full bucket's all-reduce on the communication stream,
// after the compute stream's mark (NCCL's stream waits for the copies).
void backward_with_hooks(Gpu& gpu, Comm& nccl, KanGpuNet& dnet, Reducer& reducer, std::vector<DeviceBucket>& buckets,
                         const std::vector<TensorRef>& prefs, float inv_world, std::vector<Span>& spans) {
  const GpuStream CS = GpuStream::compute, NS = GpuStream::comm;
  auto launch = [&](std::size_t b) {
    DeviceBucket& d = buckets[b];
    d.ready_mark = gpu.mark(CS);
    gpu.wait(NS, d.ready_mark);
    d.start_mark = gpu.mark(NS);
    d.handle = nccl.iallreduce_sum(d.buf, d.n);
    d.end_mark = gpu.mark(NS);
    spans.push_back({"allreduce bucket " + std::to_string(b) + " (nccl)", "comm", 1, d.start_mark, d.end_mark, 4.0 * static_cast<double>(d.n)});
  };
  int layer_start = gpu.mark(CS);
  dnet.backward(
      [&](int p) {
        const Reducer::Slot& slot = reducer.slot(p);
        const int c0 = gpu.mark(CS);
        gpu.scale_copy(dnet.grad(p), buckets[static_cast<std::size_t>(slot.bucket)].buf + slot.offset, prefs[static_cast<std::size_t>(p)].size(),
                       inv_world, CS);
        spans.push_back({"bucket_copy " + prefs[static_cast<std::size_t>(p)].name, "grad_copy", 0, c0, gpu.mark(CS)});
        reducer.mark_ready(p, launch);
      },
      [&](int l) {
        const int m = gpu.mark(CS);
        spans.push_back({"backward layer " + std::to_string(l), "backward", 0, layer_start, m});
        layer_start = m;
      });
}

}  // namespace

TrainResult run_train_cuda(const TrainOptions& o, Comm& host) {
  using namespace train_detail;
  const Workload& w = o.workload;
  const int rank = host.rank(), world = host.size();
  std::string why;
  if (!cuda_device_available(&why)) throw std::runtime_error("--backend cuda on rank " + std::to_string(rank) + ": " + why);
  set_cpu_threads(o.threads);  // for the host-side data generation
  const StopOnSignal stop_guard(!o.checkpoint.empty());
  if (local_ranks() > cuda_device_count())
    throw std::runtime_error("--backend cuda: " + std::to_string(local_ranks()) + " ranks on this node but " +
                             std::to_string(cuda_device_count()) + " visible GPU(s); NCCL needs one GPU per rank");
  Gpu gpu(local_device_index(cuda_device_count()));
  Setup setup = prepare(o, host);
  KanNet& net = setup.net;
  Adam& adam = setup.adam;
  const Dataset& data = setup.data;
  const auto prefs = kan_parameter_refs(net);
  const std::int64_t start_step = setup.start_step, batch = setup.batch, ipe = setup.ipe, total_steps = setup.total_steps;
  KanGpuNet dnet(gpu, net, static_cast<int>(batch));
  if (start_step > 0) dnet.adam_upload(adam);
  auto nccl = make_nccl_comm(host, gpu);
  const float inv_world = 1.0f / static_cast<float>(world);

  // One set of device buckets per plan (DDP's first iteration has its own).
  Reducer reducer(setup.plans, setup.param_elements);
  std::vector<DeviceBucket> buckets_of[2] = {device_buckets(gpu, reducer, Reducer::kFirst), device_buckets(gpu, reducer, Reducer::kSteady)};
  std::vector<float*> grads;
  for (std::size_t p = 0; p < prefs.size(); ++p) grads.push_back(dnet.grad(static_cast<int>(p)));
  // pinned batch buffers, freed on every path out
  auto free_host = [&gpu](float* p) { gpu.free_host(p); };
  std::unique_ptr<float, decltype(free_host)> X_owner(gpu.alloc_host(static_cast<std::size_t>(batch) * data.in()), free_host);
  std::unique_ptr<float, decltype(free_host)> T_owner(gpu.alloc_host(static_cast<std::size_t>(batch) * data.out()), free_host);
  float* X = X_owner.get();
  float* T = T_owner.get();

  auto save_everywhere = [&](std::int64_t at_step) {
    dnet.download(net);
    dnet.adam_download(adam);
    save_on_rank0(o, host, net, adam, at_step);
  };

  std::vector<TraceSlice> slices;
  std::vector<IterRecord> records;
  const Stopwatch origin;  // the host side of the trainer's instrumentation (the batch); the rest is the device's events
  auto now = [&] { return origin.seconds(); };
  StepBatches batches(w.dataset_size, world, rank, o.seed, batch, ipe);
  double last_loss = 0;
  std::int64_t step = start_step;
  bool first_iteration = true;
  const GpuStream CS = GpuStream::compute;
  for (; step < total_steps; ++step) {
    if (!o.checkpoint.empty() && host.allreduce_max(stop_requested() ? 1.0 : 0.0) > 0) break;
    const StepBatches::Slice slice = batches.at(step);
    const int B = slice.size;
    const Reducer::Plan plan = first_iteration ? Reducer::kFirst : Reducer::kSteady;
    reducer.begin(plan);
    std::vector<DeviceBucket>& buckets = buckets_of[plan];
    for (DeviceBucket& d : buckets) d.handle = -1;
    IterRecord rec;
    rec.step = step;
    rec.rank = rank;
    rec.batch = B;
    rec.first = first_iteration;
    gpu.clear_marks();
    nccl->release();
    rec.start_s = now();
    const int m0 = gpu.mark(CS);
    std::vector<Span> spans;
    const BroadcastMarks bc = w.ddp.broadcast_buffers && world > 1 ? broadcast_grids(gpu, *nccl, dnet, spans) : BroadcastMarks{};
    const double load0 = now();
    for (int s = 0; s < B; ++s)
      data.sample(slice.index[s], X + static_cast<std::size_t>(s) * data.in(),
                  T + static_cast<std::size_t>(s) * data.out());
    const double load1 = now();
    int prev = gpu.mark(CS);
    dnet.forward(X, T, B, [&](int l) {
      const int m = gpu.mark(CS);
      spans.push_back({"forward layer " + std::to_string(l), "forward", 0, prev, m});
      prev = m;
    });
    backward_with_hooks(gpu, *nccl, dnet, reducer, buckets, prefs, inv_world, spans);
    if (!reducer.all_launched()) throw std::logic_error("CUDA trainer: a bucket never became ready");
    const int wait0 = gpu.mark(CS);
    for (const auto& d : buckets) nccl->wait(d.handle);  // the compute stream waits for every bucket
    const int wait1 = gpu.mark(CS);
    spans.push_back({"wait for all-reduce", "wait", 0, wait0, wait1});
    const int cb0 = gpu.mark(CS);
    std::vector<float*> bufs;
    for (auto& d : buckets) bufs.push_back(d.buf);
    const std::vector<const float*> gptr = reducer.reduced_gradients(
        bufs, w.ddp.gradient_as_bucket_view, grads, [&](float* dst, const float* src, std::size_t n) { gpu.copy(dst, src, n, CS); });
    const int cb1 = gpu.mark(CS);
    if (!w.ddp.gradient_as_bucket_view) spans.push_back({"copy_back", "copy_back", 0, cb0, cb1});
    ++adam.step;
    dnet.adam_step(adam, adam.step, gptr);
    const int end = gpu.mark(CS);
    spans.push_back({"adam", "optimizer", 0, cb1, end});
    nccl->synchronize();      // watches NCCL's asynchronous errors: a dead peer ends the run, no hang
    last_loss = dnet.loss();  // like loss.item(): the host waits for the iteration
    gpu.synchronize();
    rec.end_s = now();
    rec.loss = last_loss;
    auto at = [&](int m) { return rec.start_s + gpu.seconds(m0, m); };
    account_iteration(gpu, buckets, wait0, wait1, bc, rec);
    if (!o.trace.empty()) {
      slices.push_back({rank, 0, step, "load batch", "host", load0, load1, 0});
      for (const auto& sp : spans) slices.push_back({rank, sp.track, step, sp.name, sp.cat, at(sp.a), at(sp.b), sp.bytes});
    }
    first_iteration = false;
    end_step(o, rank, step, total_steps, rec, records, save_everywhere);
  }
  if (!o.checkpoint.empty()) save_everywhere(step);
  dnet.download(net);
  const double device_peak = gpu.peak_bytes();
  for (auto& v : buckets_of)
    for (auto& d : v) gpu.free(d.buf);
  return report(o, host, net, records, slices, ReportContext{start_step, step, total_steps, batch, last_loss, device_peak, nccl->backend(), batches.epoch_start_s()});
}

}  // namespace ks
