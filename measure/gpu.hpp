#pragma once
// The device side of measure/: one GPU's streams, events and memory, and a
// whole KAN resident on it (forward, backward, loss, Adam), for the CUDA
// trainer and the CUDA kernel microbenchmarks. Built when nvcc is found
// (measure/kan_cuda.cu); plain C++ here, so callers never see CUDA types.
// Every CUDA or cuBLAS error throws std::runtime_error naming the call.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "adam.hpp"
#include "kan.hpp"

namespace ks {

enum class GpuStream { compute, comm };

// One device, two streams (compute and communication, as DDP's default
// stream and NCCL's), a pool of timing events and counted allocations.
class Gpu {
 public:
  explicit Gpu(int device);
  ~Gpu();
  Gpu(const Gpu&) = delete;
  Gpu& operator=(const Gpu&) = delete;

  int device() const;
  // "NVIDIA H200, sm_90, 139.8 GiB; driver 13.0, runtime 13.0"
  std::string description() const;
  void* stream(GpuStream s) const;  // a cudaStream_t

  // Device memory (fp32). Every allocation is counted: peak_bytes() is the
  // high-water mark of what kanscale holds (cuBLAS's workspace excluded).
  float* alloc(std::size_t n);
  void free(float* p);
  double allocated_bytes() const;
  double peak_bytes() const;
  void reset_peak();
  // What the device reports in use (cudaMemGetInfo: total - free), the
  // CUDA context included.
  double device_used_bytes() const;
  // The device's own ceilings, measured: cuBLAS SGEMM 8192^3 (FLOP/s) and a
  // 1 GiB device-to-device copy (bytes read + written per second); medians.
  double sgemm_flops();
  double copy_bandwidth();
  // Pinned host memory (for asynchronous copies).
  float* alloc_host(std::size_t n);
  void free_host(float* p);
  void copy(float* dst, const float* src, std::size_t n, GpuStream s);  // any direction, asynchronous
  void fill(float* dst, float value, std::size_t n, GpuStream s);
  void scale_copy(const float* src, float* dst, std::size_t n, float a, GpuStream s);  // dst = a * src

  // Events: mark() records one on a stream and returns its id; ids are
  // valid until clear_marks(). seconds(a, b): time from mark a to mark b
  // (both complete).
  int mark(GpuStream s);
  void wait(GpuStream waiter, int mark);  // the stream waits (device side) for the mark
  bool reached(int mark);                 // non-blocking query
  void synchronize();                     // both streams
  double seconds(int a, int b);
  void clear_marks();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  friend class KanGpuNet;
};

// A KAN on the device. Parameters are indexed as kan_parameter_refs():
// per layer base_weight, spline_weight, spline_scaler. The grids lie in one
// contiguous buffer (DDP broadcasts the buffers coalesced).
class KanGpuNet {
 public:
  KanGpuNet(Gpu& gpu, const KanNet& net, int max_batch);
  ~KanGpuNet();
  KanGpuNet(const KanGpuNet&) = delete;
  KanGpuNet& operator=(const KanGpuNet&) = delete;

  void upload(const KanNet& net);          // parameters and grids (synchronous)
  void download(KanNet& net) const;        // parameters and grids (synchronous)
  float* param(int p);
  float* grad(int p);
  std::size_t size(int p) const;
  int parameters() const;
  float* grids();
  std::size_t grids_size() const;

  // All on the compute stream, asynchronous. X and T are host arrays
  // (pinned for a truly asynchronous copy). after_layer(l) is called once
  // layer l's work was enqueued (the caller marks an event there).
  void forward(const float* X, const float* T, int B, const std::function<void(int)>& after_layer = nullptr);
  // The loss of the last forward (synchronises the compute stream).
  double loss();
  // The output of the last forward, copied to the host (synchronous).
  std::vector<float> output();
  // ready(p) once parameter p's gradient kernel was enqueued, in
  // efficient-kan's order (spline_weight, spline_scaler, base_weight from
  // the last layer down); after_layer(l) once layer l's backward was.
  void backward(const std::function<void(int)>& ready, const std::function<void(int)>& after_layer);
  // One layer's backward from an output gradient on the device, after a
  // forward; dx_device (null: no input gradient) receives [B][in].
  void layer_backward(int l, const float* dy_device, float* dx_device);
  // Pieces alone, for the microbenchmarks: layer l's forward from the input
  // already on the device (the input of layer 0 is the last batch), the
  // loss and its gradient on the last output, one parameter's Adam step.
  void layer_forward(int l, int B);
  void loss_only(int B);
  void adam_step_param(const Adam& hyper, std::int64_t step, int p, const float* grad);
  float* input();  // [max_batch][in] of layer 0

  // Adam, torch's rule (adam.hpp), on every parameter; grads[p] may point
  // into a bucket (gradient_as_bucket_view). State kept on the device.
  void adam_step(const Adam& hyper, std::int64_t step, const std::vector<const float*>& grads);
  void adam_download(Adam& state) const;  // exp_avg, exp_avg_sq (synchronous)
  void adam_upload(const Adam& state);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Whether a CUDA device can run the kernels; `why` says why not.
bool cuda_device_available(std::string* why);
// Devices visible to this process (0 without CUDA).
int cuda_device_count();

}  // namespace ks
