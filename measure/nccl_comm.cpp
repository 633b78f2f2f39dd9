// NCCL as the trainer's and the sweep's process group (see comm.hpp):
// bootstrapped over a host communicator, collectives enqueued on the GPU's
// communication stream, completion seen through CUDA events. Like DDP's
// ProcessGroupNCCL, wait() makes the compute stream wait (device side).
#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "comm.hpp"
#include "gpu.hpp"

namespace ks {

namespace {

class NcclComm final : public Comm {
 public:
  NcclComm(Comm& host, Gpu& gpu) : host_(host), gpu_(gpu) {
    ncclUniqueId id;
    std::memset(&id, 0, sizeof id);
    if (host.rank() == 0) check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    static_assert(sizeof(ncclUniqueId) % sizeof(float) == 0, "the id travels as floats (bit copies)");
    host.broadcast(reinterpret_cast<float*>(&id), sizeof id / sizeof(float), 0);
    check(ncclCommInitRank(&comm_, host.size(), id, host.rank()), "ncclCommInitRank");
  }
  ~NcclComm() override {
    for (auto e : events_) cudaEventDestroy(e);
    if (!comm_) return;
    // After an error (an exception unwinding, or NCCL's own) a collective may
    // never finish: abort the communicator instead of waiting for it.
    ncclResult_t async = ncclSuccess;
    ncclCommGetAsyncError(comm_, &async);
    if (std::uncaught_exceptions() > 0 || async != ncclSuccess) {
      ncclCommAbort(comm_);
      return;
    }
    cudaStreamSynchronize(stream());
    ncclCommDestroy(comm_);
  }
  int rank() const override { return host_.rank(); }
  int size() const override { return host_.size(); }
  std::string backend() const override { return "nccl"; }
  bool device_buffers() const override { return true; }

  void broadcast(float* data, std::size_t n, int root) override {
    check(ncclBroadcast(data, data, n, ncclFloat, root, comm_, stream()), "ncclBroadcast");
  }
  int iallreduce_sum(float* data, std::size_t n) override {
    check(ncclAllReduce(data, data, n, ncclFloat, ncclSum, comm_, stream()), "ncclAllReduce");
    if (next_ == events_.size()) {
      cudaEvent_t e{};
      cuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
      events_.push_back(e);
    }
    cuda(cudaEventRecord(events_[next_], stream()), "cudaEventRecord");
    return static_cast<int>(next_++);
  }
  bool test(int h) override {
    const cudaError_t e = cudaEventQuery(events_.at(static_cast<std::size_t>(h)));
    if (e == cudaErrorNotReady) {
      (void)cudaGetLastError();
      async_error();
      return false;
    }
    cuda(e, "cudaEventQuery");
    return true;
  }
  void wait(int h) override {
    cuda(cudaStreamWaitEvent(static_cast<cudaStream_t>(gpu_.stream(GpuStream::compute)), events_.at(static_cast<std::size_t>(h)), 0),
         "cudaStreamWaitEvent");
  }
  void release() override { next_ = 0; }
  void barrier() override {
    synchronize();
    host_.barrier();
  }
  double allreduce_max(double v) override { return host_.allreduce_max(v); }
  double allreduce_sum(double v) override { return host_.allreduce_sum(v); }
  void allreduce_sum(std::vector<double>& v) override { host_.allreduce_sum(v); }
  std::vector<std::string> gather(const std::string& s) override { return host_.gather(s); }
  std::vector<std::string> hosts() override { return host_.hosts(); }
  void allreduce_floats(const float* send, float* recv, std::size_t n) override {
    check(ncclAllReduce(send, recv, n, ncclFloat, ncclSum, comm_, stream()), "ncclAllReduce");
  }
  std::string library_version() const override {
    int v = 0;
    ncclGetVersion(&v);
    // NCCL_VERSION(X,Y,Z): X*10000 + Y*100 + Z since 2.9 (X*1000 + Y*100 + Z before)
    const int major = v >= 10000 ? v / 10000 : v / 1000, minor = v >= 10000 ? (v / 100) % 100 : (v / 100) % 10;
    return "NCCL " + std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(v % 100);
  }
  void abort(int code) override {
    if (comm_) ncclCommAbort(comm_);
    comm_ = nullptr;
    host_.abort(code);
  }
  // Waits for the communication stream, watching for NCCL's asynchronous
  // errors (a peer that died) so that a failure ends the run instead of
  // hanging it.
  void synchronize() override {
    for (;;) {
      const cudaError_t e = cudaStreamQuery(stream());
      if (e == cudaSuccess) return;
      if (e != cudaErrorNotReady) cuda(e, "cudaStreamQuery");
      (void)cudaGetLastError();
      async_error();
      std::this_thread::sleep_for(std::chrono::microseconds(10));
    }
  }
  float* alloc_buffer(std::size_t n) override { return gpu_.alloc(n == 0 ? 1 : n); }
  void free_buffer(float* p) override { gpu_.free(p); }
  void to_buffer(float* dst, const float* host, std::size_t n) override {
    gpu_.copy(dst, host, n, GpuStream::comm);
    synchronize();
  }
  void from_buffer(float* host, const float* src, std::size_t n) override {
    gpu_.copy(host, src, n, GpuStream::comm);
    synchronize();
  }
  void copy_buffer(float* dst, const float* src, std::size_t n) override { gpu_.copy(dst, src, n, GpuStream::comm); }

 private:
  cudaStream_t stream() const { return static_cast<cudaStream_t>(gpu_.stream(GpuStream::comm)); }
  void check(ncclResult_t r, const char* call) {
    if (r == ncclSuccess || r == ncclInProgress) return;
    const char* last_c = ncclGetLastError(comm_);  // the communicator argument is unused (may be null)
    const std::string last = last_c ? last_c : "";
    throw std::runtime_error(std::string(call) + " failed on rank " + std::to_string(host_.rank()) + ": " +
                             ncclGetErrorString(r) + (last.empty() ? "" : " (" + last + ")"));
  }
  void cuda(cudaError_t e, const char* call) {
    if (e != cudaSuccess)
      throw std::runtime_error(std::string(call) + " failed on rank " + std::to_string(host_.rank()) + ": " + cudaGetErrorString(e));
  }
  void async_error() {
    if (!comm_) throw std::runtime_error("NCCL communicator already aborted on rank " + std::to_string(host_.rank()));
    ncclResult_t r = ncclSuccess;
    check(ncclCommGetAsyncError(comm_, &r), "ncclCommGetAsyncError");
    check(r, "NCCL (asynchronous error)");
  }
  Comm& host_;
  Gpu& gpu_;
  ncclComm_t comm_ = nullptr;
  std::vector<cudaEvent_t> events_;
  std::size_t next_ = 0;
};

}  // namespace

std::unique_ptr<Comm> make_nccl_comm(Comm& host, Gpu& gpu) { return std::make_unique<NcclComm>(host, gpu); }

}  // namespace ks
