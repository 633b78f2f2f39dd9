// The CUDA trainer loop (--backend cuda): the model, its gradients, the
// buckets and Adam live on the GPU; NCCL all-reduces the buckets on a
// communication stream while the compute stream runs the rest of backward,
// as DDP's reducer does with ProcessGroupNCCL. Timing comes from CUDA
// events on both streams, so the records and the trace mean what the CPU
// loop's mean (trainer.cpp): same events, same tracks, same metrics.
#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>
#include <memory>
#include <stdexcept>

#include "comm.hpp"
#include "gpu.hpp"
#include "kan_cpu.hpp"
#include "model/yaml_reader.hpp"
#include "trainer.hpp"
#include "trainer_detail.hpp"

namespace ks {

namespace {

using Clock = std::chrono::steady_clock;

// A bucket's device buffer and the offsets of its parameters.
struct DeviceBucket {
  float* buf = nullptr;
  std::size_t n = 0;
  int ready = 0;
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
  std::map<const std::vector<Bucket>*, std::vector<DeviceBucket>> device_buckets;
  std::vector<std::pair<int, std::size_t>> where(prefs.size());
  for (const auto* plan : {&setup.plans.first_iteration, &setup.plans.steady}) {
    auto& v = device_buckets[plan];
    for (const auto& b : *plan) {
      DeviceBucket d;
      for (int p : b.params) d.n += prefs[static_cast<std::size_t>(p)].size();
      d.buf = gpu.alloc(d.n);
      v.push_back(d);
    }
  }
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

  std::vector<Event> events;
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
    const auto& plan = first_iteration ? setup.plans.first_iteration : setup.plans.steady;
    auto& buckets = device_buckets[&plan];
    for (std::size_t b = 0; b < plan.size(); ++b) {
      std::size_t off = 0;
      for (int p : plan[b].params) {
        where[static_cast<std::size_t>(p)] = {static_cast<int>(b), off};
        off += prefs[static_cast<std::size_t>(p)].size();
      }
      buckets[b].ready = 0;
      buckets[b].handle = -1;
    }
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
      spans.push_back({"broadcast buffers (nccl)", "comm", 1, bc0, bc1});
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
    std::size_t next_launch = 0;
    auto launch_ready = [&] {
      while (next_launch < buckets.size() && buckets[next_launch].ready == static_cast<int>(plan[next_launch].params.size())) {
        DeviceBucket& d = buckets[next_launch];
        d.ready_mark = gpu.mark(CS);
        gpu.wait(NS, d.ready_mark);
        d.start_mark = gpu.mark(NS);
        d.handle = nccl->iallreduce_sum(d.buf, d.n);
        d.end_mark = gpu.mark(NS);
        spans.push_back({"allreduce bucket " + std::to_string(next_launch) + " (nccl)", "comm", 1, d.start_mark, d.end_mark});
        ++next_launch;
      }
    };
    prev = gpu.mark(CS);
    int layer_start = prev;
    dnet.backward(
        [&](int p) {
          const auto [b, off] = where[static_cast<std::size_t>(p)];
          const int c0 = gpu.mark(CS);
          gpu.scale_copy(dnet.grad(p), buckets[static_cast<std::size_t>(b)].buf + off, prefs[static_cast<std::size_t>(p)].size(),
                         inv_world, CS);
          spans.push_back({"bucket_copy " + prefs[static_cast<std::size_t>(p)].name, "grad_copy", 0, c0, gpu.mark(CS)});
          ++buckets[static_cast<std::size_t>(b)].ready;
          launch_ready();
        },
        [&](int l) {
          const int m = gpu.mark(CS);
          spans.push_back({"backward layer " + std::to_string(l), "backward", 0, layer_start, m});
          layer_start = m;
        });
    if (next_launch != buckets.size())
      throw std::logic_error("CUDA trainer: bucket " + std::to_string(next_launch) + " never became ready");
    const int wait0 = gpu.mark(CS);
    for (const auto& d : buckets) nccl->wait(d.handle);  // the compute stream waits for every bucket
    const int wait1 = gpu.mark(CS);
    spans.push_back({"wait for all-reduce", "wait", 0, wait0, wait1});
    std::vector<const float*> gptr(prefs.size());
    const int cb0 = gpu.mark(CS);
    for (std::size_t p = 0; p < prefs.size(); ++p) {
      const auto [b, off] = where[p];
      const float* src = buckets[static_cast<std::size_t>(b)].buf + off;
      if (w.ddp.gradient_as_bucket_view) {
        gptr[p] = src;
      } else {
        gpu.copy(dnet.grad(static_cast<int>(p)), src, prefs[p].size(), CS);
        gptr[p] = dnet.grad(static_cast<int>(p));
      }
    }
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
    records.push_back(rec);
    if (!o.trace.empty()) {
      events.push_back({"load batch", "host", 0, load0, load1, step});
      for (const auto& s : spans) events.push_back({s.name, s.cat, s.track, at(s.a), at(s.b), step});
    }
    if (o.json.empty() && o.csv.empty() && records.size() > 20000) records.erase(records.begin(), records.begin() + 10000);
    first_iteration = false;
    if (!o.quiet && rank == 0 && (step % 50 == 0 || step + 1 == total_steps))
      std::cerr << "step " << step << "/" << total_steps << " loss " << last_loss << "\n";
    if (!o.checkpoint.empty() && o.checkpoint_every > 0 && (step + 1) % o.checkpoint_every == 0) save_everywhere(step + 1);
  }
  if (!o.checkpoint.empty()) save_everywhere(step);
  dnet.download(net);
  const double device_peak = gpu.peak_bytes();
  for (auto& kv : device_buckets)
    for (auto& d : kv.second) gpu.free(d.buf);
  return report(o, host, net, records, events, ReportContext{start_step, step, total_steps, batch, last_loss, device_peak, nccl->backend()});
}

}  // namespace ks
