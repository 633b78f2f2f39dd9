// CUDA kernels and their launches for the KAN layer (see kan_cuda.hpp).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <climits>
#include <stdexcept>
#include <string>
#include <vector>

#include "kan_cuda.hpp"

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

// Device memory owned by a vector-like holder.
struct Buf {
  float* p = nullptr;
  size_t n = 0;
  explicit Buf(size_t count) : n(count) {
    if (n) CK(cudaMalloc(&p, n * sizeof(float)));
  }
  Buf(const float* host, size_t count) : Buf(count) {
    if (n) CK(cudaMemcpy(p, host, n * sizeof(float), cudaMemcpyHostToDevice));
  }
  ~Buf() {
    if (p) cudaFree(p);
  }
  Buf(const Buf&) = delete;
  Buf& operator=(const Buf&) = delete;
  void to_host(float* host) const {
    if (n) CK(cudaMemcpy(host, p, n * sizeof(float), cudaMemcpyDeviceToHost));
  }
};

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

int blocks(long n, int threads) { return static_cast<int>((n + threads - 1) / threads); }

struct DeviceLayer {
  Buf grid, base, spline, scaler, wt;
  DeviceLayer(const KanLayer& L)
      : grid(L.grid.data(), L.grid.size()),
        base(L.base_weight.data(), L.base_weight.size()),
        spline(L.spline_weight.data(), L.spline_weight.size()),
        scaler(L.spline_scaler.data(), L.spline_scaler.size()),
        wt(static_cast<size_t>(L.in) * L.C() * L.out) {
    const long n = static_cast<long>(L.in) * L.C() * L.out;
    scale_weight_kernel<<<blocks(n, 256), 256>>>(spline.p, scaler.p, L.in, L.out, L.C(), wt.p);
    CK(cudaGetLastError());
  }
};

struct DeviceForward {
  Buf x, act, bmat, dval, y;
  int* first = nullptr;
  DeviceForward(const KanLayer& L, const float* hx, int B)
      : x(hx, static_cast<size_t>(B) * L.in),
        act(static_cast<size_t>(B) * L.in),
        bmat(static_cast<size_t>(B) * L.in * L.C()),
        dval(static_cast<size_t>(B) * L.in * (L.k + 1)),
        y(static_cast<size_t>(B) * L.out) {
    CK(cudaMalloc(&first, sizeof(int) * static_cast<size_t>(B) * L.in));
  }
  ~DeviceForward() {
    if (first) cudaFree(first);
  }
};

void forward_on_device(cublasHandle_t h, const KanLayer& L, const DeviceLayer& d, DeviceForward& f, int B) {
  const int in = L.in, out = L.out, C = L.C();
  if (L.k > kMaxOrder) throw std::invalid_argument("spline order above 16");
  CK(cudaMemset(f.bmat.p, 0, f.bmat.n * sizeof(float)));
  basis_kernel<<<blocks(static_cast<long>(B) * in, 256), 256>>>(f.x.p, d.grid.p, B, in, L.G, L.k, f.act.p, f.bmat.p,
                                                                  f.first, f.dval.p);
  CK(cudaGetLastError());
  gemm_rm(h, false, true, B, out, in, f.act.p, in, d.base.p, in, f.y.p, 0.0f);         // act Wb^T
  gemm_rm(h, false, false, B, out, in * C, f.bmat.p, in * C, d.wt.p, out, f.y.p, 1.0f);  // + bmat wt
}

}  // namespace

bool cuda_device_available(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    if (why) *why = e != cudaSuccess ? std::string("no usable CUDA device: ") + cudaGetErrorString(e) : "no CUDA device";
    return false;
  }
  return true;
}

void layer_forward_cuda(const KanLayer& L, const float* x, int B, float* y) {
  Cublas cb;
  DeviceLayer d(L);
  DeviceForward f(L, x, B);
  forward_on_device(cb.h, L, d, f, B);
  f.y.to_host(y);
}

void layer_backward_cuda(const KanLayer& L, const float* x, int B, const float* dy, float* d_base, float* d_spline,
                         float* d_scaler, float* dx) {
  const int in = L.in, out = L.out, C = L.C();
  Cublas cb;
  DeviceLayer d(L);
  DeviceForward f(L, x, B);
  forward_on_device(cb.h, L, d, f, B);
  Buf ddy(dy, static_cast<size_t>(B) * out), gbase(static_cast<size_t>(out) * in), gt(static_cast<size_t>(in) * C * out),
      gspline(L.spline_weight.size()), gscaler(L.spline_scaler.size());
  gemm_rm(cb.h, true, false, out, in, B, ddy.p, out, f.act.p, in, gbase.p, 0.0f);         // dy^T act
  gemm_rm(cb.h, true, false, in * C, out, B, f.bmat.p, in * C, ddy.p, out, gt.p, 0.0f);    // bmat^T dy
  spline_grad_kernel<<<blocks(static_cast<long>(out) * in, 256), 256>>>(gt.p, d.spline.p, d.scaler.p, in, out, C,
                                                                         gspline.p, gscaler.p);
  CK(cudaGetLastError());
  gbase.to_host(d_base);
  gspline.to_host(d_spline);
  gscaler.to_host(d_scaler);
  if (!dx) return;
  Buf tmp(static_cast<size_t>(B) * in), dsp(static_cast<size_t>(B) * in * C), ddx(static_cast<size_t>(B) * in);
  gemm_rm(cb.h, false, false, B, in, out, ddy.p, out, d.base.p, in, tmp.p, 0.0f);        // dy Wb
  gemm_rm(cb.h, false, true, B, in * C, out, ddy.p, out, d.wt.p, out, dsp.p, 0.0f);      // dy wt^T
  input_grad_kernel<<<blocks(static_cast<long>(B) * in, 256), 256>>>(f.x.p, tmp.p, dsp.p, f.first, f.dval.p, B, in, C,
                                                                       L.k, ddx.p);
  CK(cudaGetLastError());
  ddx.to_host(dx);
}

}  // namespace ks
