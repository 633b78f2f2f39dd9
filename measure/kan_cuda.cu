// CUDA kernels and their launches for the KAN layer (see kan_cuda.hpp).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/statistics.hpp"

#include "gpu.hpp"
#include "kan_cuda.hpp"
#include "workbench_gpu.hpp"

namespace ks {

namespace {

constexpr int kMaxOrder = 16;

void check(cudaError_t e, const char* call) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(call) + ": " + cudaGetErrorString(e));
}
void check(cublasStatus_t s, const char* call) {
  if (s != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(std::string(call) + ": cuBLAS status " + std::to_string(static_cast<int>(s)));
}
#define CK(x) check((x), #x)

struct Cublas {
  cublasHandle_t h{};
  Cublas() { CK(cublasCreate(&h)); }
  ~Cublas() { cublasDestroy(h); }
};

// Row-major C[M][N] = alpha op(A) op(B) + beta C, through column-major cuBLAS
// (C^T = op(B)^T op(A)^T). lda, ldb: the stored row lengths.
void gemm_rm(cublasHandle_t h, bool ta, bool tb, int M, int N, int K, const float* A, int lda, const float* B, int ldb,
             float* C, float beta) {
  const float alpha = 1.0f;
  CK(cublasSgemm(h, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K, &alpha, B, ldb, A, lda, &beta,
                 C, N));
}

__device__ float silu_d(float x) { return x / (1.0f + expf(-x)); }
__device__ float dsilu_d(float x) {
  const float s = 1.0f / (1.0f + expf(-x));
  return s + x * s * (1.0f - s);
}

// The local Cox-de Boor recursion of kan_cpu.cpp, on the device.
__device__ bool local_basis_d(const float* t, int G, int k, float x, int* first, float* b, float* db) {
  const int E = G + 2 * k;
  if (!(x >= t[0] && x < t[E])) return false;
  int lo_i = 0, hi_i = E;  // t[lo] <= x < t[hi]
  while (hi_i - lo_i > 1) {
    const int mid = (lo_i + hi_i) / 2;
    if (x >= t[mid]) lo_i = mid;
    else hi_i = mid;
  }
  const int j0 = lo_i;
  float w[kMaxOrder + 1], lo[kMaxOrder + 1];
  for (int r = 0; r <= k; ++r) w[r] = lo[r] = 0.0f;
  w[k] = 1.0f;
  for (int p = 1; p <= k; ++p) {
    if (p == k)
      for (int r = 0; r <= k; ++r) lo[r] = w[r];
    const int last = E - 1 - p;
    for (int r = 0; r <= k; ++r) {
      const int j = j0 - k + r;
      if (j < 0 || j > last) {
        w[r] = 0.0f;
        continue;
      }
      const float left = (x - t[j]) / (t[j + p] - t[j]) * w[r];
      const float right = r < k ? (t[j + p + 1] - x) / (t[j + p + 1] - t[j + 1]) * w[r + 1] : 0.0f;
      w[r] = left + right;
    }
  }
  *first = j0 - k;
  for (int r = 0; r <= k; ++r) {
    b[r] = w[r];
    const int j = j0 - k + r;
    if (k == 0 || j < 0 || j > E - 1 - k) {
      db[r] = 0.0f;
      continue;
    }
    const float a = lo[r] / (t[j + k] - t[j]);
    const float c = r < k ? lo[r + 1] / (t[j + k + 1] - t[j + 1]) : 0.0f;
    db[r] = k * (a - c);
  }
  return true;
}

// One thread per (sample, input): SiLU, the bases into bmat (pre-zeroed), derivatives.
__global__ void basis_kernel(const float* x, const float* grid, int B, int in, int G, int k, float* act, float* bmat,
                             int* first, float* dval) {
  const long idx = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x;
  if (idx >= static_cast<long>(B) * in) return;
  const int s = static_cast<int>(idx / in), i = static_cast<int>(idx % in);
  const int C = G + k, K = G + 2 * k + 1, k1 = k + 1;
  const float xv = x[idx];
  act[idx] = silu_d(xv);
  float b[kMaxOrder + 1], db[kMaxOrder + 1];
  int f = 0;
  if (!local_basis_d(grid + static_cast<long>(i) * K, G, k, xv, &f, b, db)) {
    first[idx] = INT_MIN;
    return;
  }
  first[idx] = f;
  for (int r = 0; r < k1; ++r) {
    dval[idx * k1 + r] = db[r];
    const int c = f + r;
    if (c >= 0 && c < C) bmat[(static_cast<long>(s) * in + i) * C + c] = b[r];
  }
}

// wt[i][c][o] = scaler[o][i] * spline[o][i][c]
__global__ void scale_weight_kernel(const float* spline, const float* scaler, int in, int out, int C, float* wt) {
  const long idx = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x;
  if (idx >= static_cast<long>(in) * C * out) return;
  const int o = static_cast<int>(idx % out);
  const long ic = idx / out;
  const int c = static_cast<int>(ic % C), i = static_cast<int>(ic / C);
  const long oi = static_cast<long>(o) * in + i;
  wt[idx] = scaler[oi] * spline[oi * C + c];
}

// From gt[i][c][o]: d_spline[o][i][c] = scaler * gt; d_scaler[o][i] = sum_c spline * gt
__global__ void spline_grad_kernel(const float* gt, const float* spline, const float* scaler, int in, int out, int C,
                                   float* d_spline, float* d_scaler) {
  const long oi = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x;
  if (oi >= static_cast<long>(out) * in) return;
  const int o = static_cast<int>(oi / in), i = static_cast<int>(oi % in);
  float acc = 0.0f;
  for (int c = 0; c < C; ++c) {
    const float g = gt[(static_cast<long>(i) * C + c) * out + o];
    d_spline[oi * C + c] = scaler[oi] * g;
    acc += spline[oi * C + c] * g;
  }
  d_scaler[oi] = acc;
}

// dx[s][i] = silu'(x) tmp[s][i] + sum_r dval * dsp[s][i*C + c]
__global__ void input_grad_kernel(const float* x, const float* tmp, const float* dsp, const int* first, const float* dval,
                                  int B, int in, int C, int k, float* dx) {
  const long idx = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x;
  if (idx >= static_cast<long>(B) * in) return;
  float v = dsilu_d(x[idx]) * tmp[idx];
  const int f = first[idx], k1 = k + 1;
  if (f != INT_MIN) {
    for (int r = 0; r < k1; ++r) {
      const int c = f + r;
      if (c >= 0 && c < C) v += dval[idx * k1 + r] * dsp[idx * C + c];
    }
  }
  dx[idx] = v;
}


// dy = 2/n (y - t); loss += sum (y - t)^2 (the CPU path's mse_forward_backward)
__global__ void mse_kernel(const float* y, const float* t, long n, float scale, float* dy, double* loss) {
  __shared__ double part[256];
  const long idx = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x;
  double d2 = 0;
  if (idx < n) {
    const float d = y[idx] - t[idx];
    dy[idx] = scale * d;
    d2 = static_cast<double>(d) * d;
  }
  part[threadIdx.x] = d2;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (static_cast<int>(threadIdx.x) < s) part[threadIdx.x] += part[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(loss, part[0]);
}

__global__ void scale_copy_kernel(const float* src, float* dst, long n, float a) {
  const long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x;
  if (i < n) dst[i] = a * src[i];
}

__global__ void fill_kernel(float* dst, long n, float v) {
  const long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x;
  if (i < n) dst[i] = v;
}

// torch's single-tensor Adam (adam.hpp), the CPU path's order of operations.
__global__ void adam_kernel(float* x, const float* g, float* m, float* v, long n, float w1, float b2, float w2,
                            float step_size, float bc2_sqrt, float eps) {
  const long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const float gi = g[i];
  const float mi = m[i] + w1 * (gi - m[i]);
  const float vi = v[i] * b2 + w2 * gi * gi;
  m[i] = mi;
  v[i] = vi;
  const float denom = sqrtf(vi) / bc2_sqrt + eps;
  x[i] = x[i] - step_size * (mi / denom);
}

int blocks(long n, int threads) { return static_cast<int>((n + threads - 1) / threads); }

}  // namespace

// ---------------------------------------------------------------- Gpu

struct Gpu::Impl {
  int device = 0;
  cudaStream_t compute{}, comm{};
  std::vector<cudaEvent_t> events;
  std::size_t next_event = 0;
  std::map<void*, std::size_t> sizes;
  double allocated = 0, peak = 0;
  cudaStream_t s(GpuStream which) const { return which == GpuStream::compute ? compute : comm; }
  void* raw_alloc(std::size_t bytes) {
    void* p = nullptr;
    if (bytes == 0) return nullptr;
    CK(cudaMalloc(&p, bytes));
    sizes[p] = bytes;
    allocated += static_cast<double>(bytes);
    peak = std::max(peak, allocated);
    return p;
  }
  void raw_free(void* p) {
    if (!p) return;
    auto it = sizes.find(p);
    if (it != sizes.end()) {
      allocated -= static_cast<double>(it->second);
      sizes.erase(it);
    }
    cudaFree(p);
  }
};

Gpu::Gpu(int device) : impl_(std::make_unique<Impl>()) {
  impl_->device = device;
  CK(cudaSetDevice(device));
  // Non-blocking: no implicit ordering with the legacy default stream.
  CK(cudaStreamCreateWithFlags(&impl_->compute, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&impl_->comm, cudaStreamNonBlocking));
}

Gpu::~Gpu() {
  cudaStreamSynchronize(impl_->compute);
  cudaStreamSynchronize(impl_->comm);
  for (auto e : impl_->events) cudaEventDestroy(e);
  for (auto& kv : impl_->sizes) cudaFree(kv.first);
  cudaStreamDestroy(impl_->compute);
  cudaStreamDestroy(impl_->comm);
}

int Gpu::device() const { return impl_->device; }

std::string Gpu::description() const {
  cudaDeviceProp p{};
  CK(cudaGetDeviceProperties(&p, impl_->device));
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s, sm_%d%d, %.1f GiB, %d SMs; driver %d.%d, runtime %d.%d", p.name, p.major, p.minor,
                static_cast<double>(p.totalGlobalMem) / (1u << 30), p.multiProcessorCount, driver / 1000,
                (driver % 1000) / 10, runtime / 1000, (runtime % 1000) / 10);
  return buf;
}

void* Gpu::stream(GpuStream s) const { return impl_->s(s); }

float* Gpu::alloc(std::size_t n) { return static_cast<float*>(impl_->raw_alloc(n * sizeof(float))); }
void Gpu::free(float* p) { impl_->raw_free(p); }
double Gpu::allocated_bytes() const { return impl_->allocated; }
double Gpu::peak_bytes() const { return impl_->peak; }
void Gpu::reset_peak() { impl_->peak = impl_->allocated; }
double Gpu::device_used_bytes() const {
  std::size_t free_b = 0, total_b = 0;
  CK(cudaMemGetInfo(&free_b, &total_b));
  return static_cast<double>(total_b - free_b);
}

float* Gpu::alloc_host(std::size_t n) {
  void* p = nullptr;
  if (n) CK(cudaMallocHost(&p, n * sizeof(float)));
  return static_cast<float*>(p);
}
void Gpu::free_host(float* p) {
  if (p) cudaFreeHost(p);
}

void Gpu::copy(float* dst, const float* src, std::size_t n, GpuStream s) {
  if (n) CK(cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyDefault, impl_->s(s)));
}

void Gpu::fill(float* dst, float value, std::size_t n, GpuStream s) {
  if (!n) return;
  fill_kernel<<<blocks(static_cast<long>(n), 256), 256, 0, impl_->s(s)>>>(dst, static_cast<long>(n), value);
  CK(cudaGetLastError());
}

void Gpu::scale_copy(const float* src, float* dst, std::size_t n, float a, GpuStream s) {
  if (!n) return;
  scale_copy_kernel<<<blocks(static_cast<long>(n), 256), 256, 0, impl_->s(s)>>>(src, dst, static_cast<long>(n), a);
  CK(cudaGetLastError());
}

int Gpu::mark(GpuStream s) {
  auto& ev = impl_->events;
  if (impl_->next_event == ev.size()) {
    cudaEvent_t e{};
    CK(cudaEventCreate(&e));
    ev.push_back(e);
  }
  CK(cudaEventRecord(ev[impl_->next_event], impl_->s(s)));
  return static_cast<int>(impl_->next_event++);
}

void Gpu::wait(GpuStream waiter, int mark) {
  CK(cudaStreamWaitEvent(impl_->s(waiter), impl_->events.at(static_cast<std::size_t>(mark)), 0));
}

bool Gpu::reached(int mark) {
  const cudaError_t e = cudaEventQuery(impl_->events.at(static_cast<std::size_t>(mark)));
  if (e == cudaErrorNotReady) {
    (void)cudaGetLastError();  // not an error: clear it
    return false;
  }
  CK(e);
  return true;
}

void Gpu::synchronize() {
  CK(cudaStreamSynchronize(impl_->compute));
  CK(cudaStreamSynchronize(impl_->comm));
}

double Gpu::seconds(int a, int b) {
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, impl_->events.at(static_cast<std::size_t>(a)), impl_->events.at(static_cast<std::size_t>(b))));
  return ms * 1e-3;
}

void Gpu::clear_marks() { impl_->next_event = 0; }

namespace {
// The median of `reps` timings of f on the compute stream, after one
// warm-up (the workbench's timer on the device's clock).
template <typename F>
double median_seconds(Gpu& g, F&& f, int reps) {
  GpuEventClock clock(g);
  return time_calls(Repeats{1, reps}, std::forward<F>(f), clock).median;
}
}  // namespace

double Gpu::sgemm_flops() {
  const int n = 8192;
  const std::size_t nn = static_cast<std::size_t>(n) * n;
  float* a = alloc(nn);
  float* b = alloc(nn);
  float* c = alloc(nn);
  fill(a, 0.5f, nn, GpuStream::compute);
  fill(b, 0.25f, nn, GpuStream::compute);
  Cublas cb;
  CK(cublasSetStream(cb.h, impl_->compute));
  const double s = median_seconds(*this, [&] { gemm_rm(cb.h, false, false, n, n, n, a, n, b, n, c, 0.0f); }, 5);
  free(a);
  free(b);
  free(c);
  return 2.0 * n * static_cast<double>(n) * n / s;
}

double Gpu::copy_bandwidth() {
  const std::size_t n = (1u << 30) / sizeof(float);
  float* a = alloc(n);
  float* b = alloc(n);
  fill(a, 1.0f, n, GpuStream::compute);
  const double s = median_seconds(*this, [&] { copy(b, a, n, GpuStream::compute); }, 5);
  free(a);
  free(b);
  return 2.0 * static_cast<double>(n * sizeof(float)) / s;
}

// ---------------------------------------------------------------- KanGpuNet

struct KanGpuNet::Impl {
  Gpu& gpu;
  Cublas cb;
  int max_batch = 0, B = 0;
  struct Layer {
    int in, out, G, k;
    float *grid, *base, *spline, *scaler, *wt;
    float *gbase, *gspline, *gscaler;
    float *act, *bmat, *dval, *gt, *tmp, *dsp;
    int* first;
    int C() const { return G + k; }
  };
  std::vector<Layer> layers;
  std::vector<float*> acts;  // acts[0]: the input batch; acts[l+1]: layer l's output
  float *target = nullptr, *dy0 = nullptr, *dy1 = nullptr, *grids = nullptr;
  std::size_t grids_n = 0;
  double* loss = nullptr;
  std::vector<float*> m, v;  // Adam state per parameter
  explicit Impl(Gpu& g) : gpu(g) {}
  ~Impl() {
    // unchecked: a destructor must not throw (an error may be unwinding)
    cudaStreamSynchronize(gpu.impl_->compute);
    cudaStreamSynchronize(gpu.impl_->comm);
    for (auto& L : layers) {
      for (float* p : {L.base, L.spline, L.scaler, L.wt, L.gbase, L.gspline, L.gscaler, L.act, L.bmat, L.dval, L.gt, L.tmp,
                       L.dsp})
        gpu.free(p);
      gpu.impl_->raw_free(L.first);
    }
    for (float* p : acts) gpu.free(p);
    for (float* p : {target, dy0, dy1, grids}) gpu.free(p);
    for (float* p : m) gpu.free(p);
    for (float* p : v) gpu.free(p);
    gpu.impl_->raw_free(loss);
  }
  cudaStream_t cs() const { return gpu.impl_->compute; }
  float* zeros(std::size_t n) {
    float* p = gpu.alloc(n);
    if (n) CK(cudaMemsetAsync(p, 0, n * sizeof(float), cs()));
    return p;
  }
  std::size_t psize(int p) const {
    const Layer& L = layers[static_cast<std::size_t>(p / 3)];
    const std::size_t oi = static_cast<std::size_t>(L.out) * L.in;
    return p % 3 == 1 ? oi * L.C() : oi;
  }
  float* param(int p) const {
    const Layer& L = layers[static_cast<std::size_t>(p / 3)];
    return p % 3 == 0 ? L.base : p % 3 == 1 ? L.spline : L.scaler;
  }
  float* grad(int p) const {
    const Layer& L = layers[static_cast<std::size_t>(p / 3)];
    return p % 3 == 0 ? L.gbase : p % 3 == 1 ? L.gspline : L.gscaler;
  }
  void forward_layer(std::size_t l, int Bn) {
    Layer& L = layers[l];
    const int C = L.C();
    if (L.k > kMaxOrder) throw std::invalid_argument("spline order above 16");
    const long nw = static_cast<long>(L.in) * C * L.out;
    scale_weight_kernel<<<blocks(nw, 256), 256, 0, cs()>>>(L.spline, L.scaler, L.in, L.out, C, L.wt);
    CK(cudaGetLastError());
    basis(l, Bn);
    gemm_rm(cb.h, false, true, Bn, L.out, L.in, L.act, L.in, L.base, L.in, acts[l + 1], 0.0f);              // act Wb^T
    gemm_rm(cb.h, false, false, Bn, L.out, L.in * C, L.bmat, L.in * C, L.wt, L.out, acts[l + 1], 1.0f);  // + bmat wt
  }
  void basis(std::size_t l, int Bn) {
    Layer& L = layers[l];
    CK(cudaMemsetAsync(L.bmat, 0, sizeof(float) * static_cast<std::size_t>(Bn) * L.in * L.C(), cs()));
    basis_kernel<<<blocks(static_cast<long>(Bn) * L.in, 256), 256, 0, cs()>>>(acts[l], L.grid, Bn, L.in, L.G, L.k, L.act,
                                                                              L.bmat, L.first, L.dval);
    CK(cudaGetLastError());
  }
  void backward_layer(std::size_t l, const float* dy, float* dx) {
    Layer& L = layers[l];
    const int in = L.in, out = L.out, C = L.C();
    gemm_rm(cb.h, true, false, out, in, B, dy, out, L.act, in, L.gbase, 0.0f);        // dy^T act
    gemm_rm(cb.h, true, false, in * C, out, B, L.bmat, in * C, dy, out, L.gt, 0.0f);  // bmat^T dy
    spline_grad_kernel<<<blocks(static_cast<long>(out) * in, 256), 256, 0, cs()>>>(L.gt, L.spline, L.scaler, in, out, C,
                                                                                   L.gspline, L.gscaler);
    CK(cudaGetLastError());
    if (!dx) return;
    gemm_rm(cb.h, false, false, B, in, out, dy, out, L.base, in, L.tmp, 0.0f);    // dy Wb
    gemm_rm(cb.h, false, true, B, in * C, out, dy, out, L.wt, out, L.dsp, 0.0f);  // dy wt^T
    input_grad_kernel<<<blocks(static_cast<long>(B) * in, 256), 256, 0, cs()>>>(acts[l], L.tmp, L.dsp, L.first, L.dval, B,
                                                                                in, C, L.k, dx);
    CK(cudaGetLastError());
  }
};

KanGpuNet::KanGpuNet(Gpu& gpu, const KanNet& net, int max_batch) : impl_(std::make_unique<Impl>(gpu)) {
  Impl& d = *impl_;
  if (max_batch < 1) throw std::invalid_argument("KanGpuNet: max_batch must be at least 1");
  d.max_batch = max_batch;
  CK(cublasSetStream(d.cb.h, d.cs()));
  const std::size_t Bm = static_cast<std::size_t>(max_batch);
  for (const auto& L : net.layers) d.grids_n += L.grid.size();
  d.grids = d.zeros(d.grids_n);
  d.acts.push_back(d.zeros(Bm * static_cast<std::size_t>(net.layers.front().in)));
  std::size_t widest = 0, off = 0;
  for (const auto& L : net.layers) {
    Impl::Layer g{};
    g.in = L.in;
    g.out = L.out;
    g.G = L.G;
    g.k = L.k;
    const std::size_t oi = static_cast<std::size_t>(L.out) * L.in, C = static_cast<std::size_t>(L.C());
    g.grid = d.grids + off;
    off += L.grid.size();
    g.base = d.zeros(oi);
    g.spline = d.zeros(oi * C);
    g.scaler = d.zeros(oi);
    g.wt = d.zeros(oi * C);
    g.gbase = d.zeros(oi);
    g.gspline = d.zeros(oi * C);
    g.gscaler = d.zeros(oi);
    const std::size_t bi = Bm * static_cast<std::size_t>(L.in);
    g.act = d.zeros(bi);
    g.bmat = d.zeros(bi * C);
    g.dval = d.zeros(bi * static_cast<std::size_t>(L.k + 1));
    g.gt = d.zeros(oi * C);
    g.tmp = d.zeros(bi);
    g.dsp = d.zeros(bi * C);
    g.first = static_cast<int*>(gpu.impl_->raw_alloc(sizeof(int) * bi));
    d.layers.push_back(g);
    d.acts.push_back(d.zeros(Bm * static_cast<std::size_t>(L.out)));
    widest = std::max({widest, bi, Bm * static_cast<std::size_t>(L.out)});
  }
  d.target = d.zeros(Bm * static_cast<std::size_t>(net.layers.back().out));
  d.dy0 = d.zeros(widest);
  d.dy1 = d.zeros(widest);
  d.loss = static_cast<double*>(gpu.impl_->raw_alloc(sizeof(double)));
  for (int p = 0; p < parameters(); ++p) {
    d.m.push_back(d.zeros(size(p)));
    d.v.push_back(d.zeros(size(p)));
  }
  upload(net);
}

KanGpuNet::~KanGpuNet() = default;

int KanGpuNet::parameters() const { return static_cast<int>(3 * impl_->layers.size()); }
std::size_t KanGpuNet::size(int p) const { return impl_->psize(p); }
float* KanGpuNet::param(int p) { return impl_->param(p); }
float* KanGpuNet::grad(int p) { return impl_->grad(p); }
float* KanGpuNet::grids() { return impl_->grids; }
std::size_t KanGpuNet::grids_size() const { return impl_->grids_n; }

void KanGpuNet::upload(const KanNet& net) {
  Impl& d = *impl_;
  d.gpu.synchronize();
  if (net.layers.size() != d.layers.size()) throw std::invalid_argument("KanGpuNet::upload: another net");
  for (std::size_t l = 0; l < d.layers.size(); ++l) {
    const KanLayer& L = net.layers[l];
    const Impl::Layer& g = d.layers[l];
    if (L.in != g.in || L.out != g.out || L.G != g.G || L.k != g.k) throw std::invalid_argument("KanGpuNet::upload: another net");
    CK(cudaMemcpy(g.grid, L.grid.data(), L.grid.size() * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(g.base, L.base_weight.data(), L.base_weight.size() * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(g.spline, L.spline_weight.data(), L.spline_weight.size() * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(g.scaler, L.spline_scaler.data(), L.spline_scaler.size() * sizeof(float), cudaMemcpyHostToDevice));
  }
  // pageable copies may still be in flight on the legacy stream, which the
  // non-blocking compute stream does not wait for
  CK(cudaDeviceSynchronize());
}

void KanGpuNet::download(KanNet& net) const {
  const Impl& d = *impl_;
  d.gpu.synchronize();
  for (std::size_t l = 0; l < d.layers.size(); ++l) {
    KanLayer& L = net.layers[l];
    const Impl::Layer& g = d.layers[l];
    CK(cudaMemcpy(L.grid.data(), g.grid, L.grid.size() * sizeof(float), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(L.base_weight.data(), g.base, L.base_weight.size() * sizeof(float), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(L.spline_weight.data(), g.spline, L.spline_weight.size() * sizeof(float), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(L.spline_scaler.data(), g.scaler, L.spline_scaler.size() * sizeof(float), cudaMemcpyDeviceToHost));
  }
}

void KanGpuNet::forward(const float* X, const float* T, int B, const std::function<void(int)>& after_layer) {
  Impl& d = *impl_;
  if (B < 1 || B > d.max_batch) throw std::invalid_argument("KanGpuNet::forward: batch outside 1..max_batch");
  d.B = B;
  const auto& first = d.layers.front();
  const auto& last = d.layers.back();
  CK(cudaMemcpyAsync(d.acts[0], X, sizeof(float) * static_cast<std::size_t>(B) * first.in, cudaMemcpyDefault, d.cs()));
  if (T) CK(cudaMemcpyAsync(d.target, T, sizeof(float) * static_cast<std::size_t>(B) * last.out, cudaMemcpyDefault, d.cs()));
  for (std::size_t l = 0; l < d.layers.size(); ++l) {
    d.forward_layer(l, B);
    if (after_layer) after_layer(static_cast<int>(l));
  }
  const long n = static_cast<long>(B) * last.out;
  CK(cudaMemsetAsync(d.loss, 0, sizeof(double), d.cs()));
  mse_kernel<<<blocks(n, 256), 256, 0, d.cs()>>>(d.acts.back(), d.target, n, 2.0f / static_cast<float>(n), d.dy0, d.loss);
  CK(cudaGetLastError());
}

double KanGpuNet::loss() {
  Impl& d = *impl_;
  double v = 0;
  CK(cudaMemcpyAsync(&v, d.loss, sizeof(double), cudaMemcpyDeviceToHost, d.cs()));
  CK(cudaStreamSynchronize(d.cs()));
  return v / (static_cast<double>(d.B) * d.layers.back().out);
}

std::vector<float> KanGpuNet::output() {
  Impl& d = *impl_;
  std::vector<float> y(static_cast<std::size_t>(d.B) * d.layers.back().out);
  CK(cudaMemcpyAsync(y.data(), d.acts.back(), y.size() * sizeof(float), cudaMemcpyDeviceToHost, d.cs()));
  CK(cudaStreamSynchronize(d.cs()));
  return y;
}

void KanGpuNet::backward(const std::function<void(int)>& ready, const std::function<void(int)>& after_layer) {
  Impl& d = *impl_;
  float* dy = d.dy0;
  float* dx = d.dy1;
  for (std::size_t l = d.layers.size(); l-- > 0;) {
    d.backward_layer(l, dy, l > 0 ? dx : nullptr);
    if (ready) {
      ready(static_cast<int>(3 * l + 1));
      ready(static_cast<int>(3 * l + 2));
      ready(static_cast<int>(3 * l + 0));
    }
    if (after_layer) after_layer(static_cast<int>(l));
    std::swap(dy, dx);
  }
}

void KanGpuNet::layer_backward(int l, const float* dy_device, float* dx_device) {
  Impl& d = *impl_;
  if (l < 0 || l >= static_cast<int>(d.layers.size())) throw std::invalid_argument("KanGpuNet::layer_backward: no such layer");
  if (d.B < 1) throw std::logic_error("KanGpuNet::layer_backward: run a forward of that layer first");
  d.backward_layer(static_cast<std::size_t>(l), dy_device, dx_device);
}

void KanGpuNet::layer_forward(int l, int B) {
  Impl& d = *impl_;
  if (B < 1 || B > d.max_batch) throw std::invalid_argument("KanGpuNet::layer_forward: batch outside 1..max_batch");
  d.B = B;
  d.forward_layer(static_cast<std::size_t>(l), B);
}

void KanGpuNet::loss_only(int B) {
  Impl& d = *impl_;
  if (B < 1 || B > d.max_batch) throw std::invalid_argument("KanGpuNet::loss_only: batch outside 1..max_batch");
  d.B = B;
  const long n = static_cast<long>(B) * d.layers.back().out;
  CK(cudaMemsetAsync(d.loss, 0, sizeof(double), d.cs()));
  mse_kernel<<<blocks(n, 256), 256, 0, d.cs()>>>(d.acts.back(), d.target, n, 2.0f / static_cast<float>(n), d.dy0, d.loss);
  CK(cudaGetLastError());
}

float* KanGpuNet::input() { return impl_->acts[0]; }

void KanGpuNet::adam_step_param(const Adam& hyper, std::int64_t step, int p, const float* grad) {
  Impl& d = *impl_;
  const double bc1 = 1.0 - std::pow(hyper.beta1, static_cast<double>(step));
  const double bc2 = 1.0 - std::pow(hyper.beta2, static_cast<double>(step));
  const float step_size = static_cast<float>(hyper.lr / bc1), bc2_sqrt = static_cast<float>(std::sqrt(bc2));
  const long n = static_cast<long>(size(p));
  adam_kernel<<<blocks(n, 256), 256, 0, d.cs()>>>(param(p), grad, d.m[static_cast<std::size_t>(p)], d.v[static_cast<std::size_t>(p)],
                                                  n, static_cast<float>(1.0 - hyper.beta1), static_cast<float>(hyper.beta2),
                                                  static_cast<float>(1.0 - hyper.beta2), step_size, bc2_sqrt,
                                                  static_cast<float>(hyper.eps));
  CK(cudaGetLastError());
}

void KanGpuNet::adam_step(const Adam& hyper, std::int64_t step, const std::vector<const float*>& grads) {
  for (int p = 0; p < parameters(); ++p) adam_step_param(hyper, step, p, grads.at(static_cast<std::size_t>(p)));
}

void KanGpuNet::adam_download(Adam& state) const {
  const Impl& d = *impl_;
  d.gpu.synchronize();
  state.exp_avg.resize(d.m.size());
  state.exp_avg_sq.resize(d.v.size());
  for (std::size_t p = 0; p < d.m.size(); ++p) {
    state.exp_avg[p].resize(size(static_cast<int>(p)));
    state.exp_avg_sq[p].resize(size(static_cast<int>(p)));
    CK(cudaMemcpy(state.exp_avg[p].data(), d.m[p], state.exp_avg[p].size() * sizeof(float), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(state.exp_avg_sq[p].data(), d.v[p], state.exp_avg_sq[p].size() * sizeof(float), cudaMemcpyDeviceToHost));
  }
}

void KanGpuNet::adam_upload(const Adam& state) {
  Impl& d = *impl_;
  d.gpu.synchronize();
  if (state.exp_avg.size() != d.m.size()) throw std::invalid_argument("KanGpuNet::adam_upload: another net");
  for (std::size_t p = 0; p < d.m.size(); ++p) {
    if (state.exp_avg[p].size() != size(static_cast<int>(p))) throw std::invalid_argument("KanGpuNet::adam_upload: another net");
    CK(cudaMemcpy(d.m[p], state.exp_avg[p].data(), state.exp_avg[p].size() * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d.v[p], state.exp_avg_sq[p].data(), state.exp_avg_sq[p].size() * sizeof(float), cudaMemcpyHostToDevice));
  }
  CK(cudaDeviceSynchronize());  // as in upload
}

// ---------------------------------------------------------------- queries and host wrappers

bool cuda_device_available(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    if (why) *why = e != cudaSuccess ? std::string("no usable CUDA device: ") + cudaGetErrorString(e) : "no CUDA device";
    (void)cudaGetLastError();
    return false;
  }
  return true;
}

int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

namespace {
KanNet one_layer(const KanLayer& L) {
  KanNet n;
  n.layers.push_back(L);
  return n;
}
}  // namespace

void layer_forward_cuda(const KanLayer& L, const float* x, int B, float* y) {
  Gpu gpu(0);
  KanGpuNet net(gpu, one_layer(L), B);
  net.forward(x, nullptr, B);
  const auto out = net.output();
  std::copy(out.begin(), out.end(), y);
}

void layer_backward_cuda(const KanLayer& L, const float* x, int B, const float* dy, float* d_base, float* d_spline,
                         float* d_scaler, float* dx) {
  Gpu gpu(0);
  KanGpuNet net(gpu, one_layer(L), B);
  net.forward(x, nullptr, B);
  const std::size_t ny = static_cast<std::size_t>(B) * L.out, nx = static_cast<std::size_t>(B) * L.in;
  float* ddy = gpu.alloc(ny);
  float* ddx = gpu.alloc(nx);
  gpu.copy(ddy, dy, ny, GpuStream::compute);
  net.layer_backward(0, ddy, dx ? ddx : nullptr);
  gpu.synchronize();
  CK(cudaMemcpy(d_base, net.grad(0), net.size(0) * sizeof(float), cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(d_spline, net.grad(1), net.size(1) * sizeof(float), cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(d_scaler, net.grad(2), net.size(2) * sizeof(float), cudaMemcpyDeviceToHost));
  if (dx) CK(cudaMemcpy(dx, ddx, nx * sizeof(float), cudaMemcpyDeviceToHost));
  gpu.free(ddy);
  gpu.free(ddx);
}

}  // namespace ks
