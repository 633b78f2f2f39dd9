// The CUDA trainer loop (--backend cuda): the model, its gradients, the
// buckets and Adam live on the GPU; NCCL all-reduces the buckets on a
// communication stream while the compute stream runs the rest of backward,
// as DDP's reducer does with ProcessGroupNCCL. Timing comes from CUDA
// events on both streams, so the records and the trace mean what the CPU
// loop's mean (trainer.cpp): same events, same tracks, same metrics. The
// bucket map, readiness and in-order launch are the shared Reducer's.
#include <algorithm>
#include <chrono>
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

namespace ks {

namespace {

using Clock = std::chrono::steady_clock;

// A bucket's device buffer and its timing marks in the current iteration.
struct DeviceBucket {
  float* buf = nullptr;
  std::size_t n = 0;
  int handle = -1;
  int ready_mark = -1, start_mark = -1, end_mark = -1;
};

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
  std::vector<DeviceBucket> buckets_of[2];
  for (Reducer::Plan plan : {Reducer::kFirst, Reducer::kSteady})
    for (std::size_t b = 0; b < reducer.buckets(plan); ++b) {
      DeviceBucket d;
      d.n = reducer.elements(plan, b);
      d.buf = gpu.alloc(d.n);
      buckets_of[plan].push_back(d);
    }
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
  const auto t_origin = Clock::now();
  auto now = [&] { return std::chrono::duration<double>(Clock::now() - t_origin).count(); };
  StepBatches batches(w.dataset_size, world, rank, o.seed, batch, ipe);
  double last_loss = 0;
  std::int64_t step = start_step;
  bool first_iteration = true;
  const GpuStream CS = GpuStream::compute, NS = GpuStream::comm;
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
    struct Span {
      std::string name, cat;
      int track, a, b;
      double bytes = 0;
    };
    std::vector<Span> spans;
    int bc0 = -1, bc1 = -1, bcw0 = -1, bcw1 = -1;
    if (w.ddp.broadcast_buffers && world > 1) {  // the grids, coalesced, before forward
      bcw0 = gpu.mark(CS);
      gpu.wait(NS, bcw0);
      bc0 = gpu.mark(NS);
      nccl->broadcast(dnet.grids(), dnet.grids_size(), 0);
      bc1 = gpu.mark(NS);
      gpu.wait(CS, bc1);
      bcw1 = gpu.mark(CS);
      spans.push_back({"broadcast buffers (nccl)", "comm", 1, bc0, bc1, 4.0 * static_cast<double>(dnet.grids_size())});
      spans.push_back({"wait for broadcast", "wait", 0, bcw0, bcw1});
    }
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
    auto launch = [&](std::size_t b) {
      DeviceBucket& d = buckets[b];
      d.ready_mark = gpu.mark(CS);
      gpu.wait(NS, d.ready_mark);
      d.start_mark = gpu.mark(NS);
      d.handle = nccl->iallreduce_sum(d.buf, d.n);
      d.end_mark = gpu.mark(NS);
      spans.push_back({"allreduce bucket " + std::to_string(b) + " (nccl)", "comm", 1, d.start_mark, d.end_mark, 4.0 * static_cast<double>(d.n)});
    };
    prev = gpu.mark(CS);
    int layer_start = prev;
    dnet.backward(
        [&](int p) {
          const Reducer::Slot& slot = reducer.slot(p);
          const int c0 = gpu.mark(CS);
          gpu.scale_copy(dnet.grad(p), buckets[static_cast<std::size_t>(slot.bucket)].buf + slot.offset,
                         prefs[static_cast<std::size_t>(p)].size(), inv_world, CS);
          spans.push_back({"bucket_copy " + prefs[static_cast<std::size_t>(p)].name, "grad_copy", 0, c0, gpu.mark(CS)});
          reducer.mark_ready(p, launch);
        },
        [&](int l) {
          const int m = gpu.mark(CS);
          spans.push_back({"backward layer " + std::to_string(l), "backward", 0, layer_start, m});
          layer_start = m;
        });
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
    double comm_busy = 0, exposed = 0;
    for (const auto& d : buckets) {
      comm_busy += gpu.seconds(d.start_mark, d.end_mark);
      rec.bucket_s.push_back(gpu.seconds(d.start_mark, d.end_mark));
    }
    exposed += gpu.seconds(wait0, wait1);
    if (bc0 >= 0) {
      comm_busy += gpu.seconds(bc0, bc1);
      exposed += gpu.seconds(bcw0, bcw1);
    }
    rec.comm_s = comm_busy;
    rec.exposed_s = exposed;
    rec.compute_s = (rec.end_s - rec.start_s) - exposed;
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
