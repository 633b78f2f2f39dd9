#include "kan_cpu.hpp"

#include <Eigen/Dense>
#include <dnnl.h>
#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <vector>
#include <stdexcept>
#include <string>

#include "model/kan_model.hpp"
#include "model/statistics.hpp"
#include "workbench.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif
// (-march=native: the bases' SiLU and interval search, and the input
// gradient's SiLU', in AVX-512 where the machine has it; GCC 12 leaves the
// portable loops scalar: std::floor and the clamps in exp_vec)
#if defined(__AVX512F__)
#include <immintrin.h>
#define KS_KAN_AVX512 1
#elif defined(__AVX2__)
// AVX2 without AVX-512 (AMD Zen 2/3, older Xeons): the same SiLU, interval
// search and SiLU' on 8 lanes; the bases' stores stay scalar
#include <immintrin.h>
#define KS_KAN_AVX2 1
#endif

namespace ks {

namespace {
constexpr int kMaxOrder = 16;

// C[M][N] = op(A) op(B), or C += op(A) op(B) with `accumulate`; all row-major,
// op(X) = X for 'N' and X^T (stored transposed) for 'T'. oneDNN's sgemm (Debian's
// libdnnl, JIT-compiled for the machine's ISA): on the layers' shapes it ran at
// 1.05-1.35x Eigen's GEMM on one thread and 1.1-1.5x on two (Intel Xeon VM,
// 6 Dec 2026); Eigen's GEMM had capped the kernels below 80% of the SGEMM
// reference (Eigen at 1024^3, which stays the reference).
// It splits no product over threads unless a matrix is too small to split
// otherwise, so results repeat for a given thread count, though the sums'
// order may differ between thread counts.
void sgemm(char ta, char tb, std::size_t M, std::size_t N, std::size_t K, const float* A, const float* B,
           bool accumulate, float* C) {
  if (M == 0 || N == 0) return;
  const auto m = static_cast<dnnl_dim_t>(M), n = static_cast<dnnl_dim_t>(N), k = static_cast<dnnl_dim_t>(K);
  const dnnl_status_t st = dnnl_sgemm(ta, tb, m, n, k, 1.0f, A, ta == 'N' ? k : m, B, tb == 'N' ? n : k,
                                      accumulate ? 1.0f : 0.0f, C, n);
  if (st != dnnl_success) throw std::runtime_error("oneDNN sgemm failed (status " + std::to_string(static_cast<int>(st)) + ")");
}

// exp(x) in a form the compiler vectorises (std::exp does not without
// -ffast-math): Cody-Waite reduction by ln 2 and Cephes' degree-6
// polynomial for expf on [-ln2/2, ln2/2] (relative error within 1e-7 of
// std::exp over [-87, 88], measured; the layer tests check SiLU through
// the fp64 reference).
inline float exp_vec(float x) {
  x = std::min(88.0f, std::max(-87.0f, x));
  const float n = std::floor(x * 1.44269504088896341f + 0.5f);
  const float r = x - n * 0.693359375f + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float y = p * r * r + r + 1.0f;
  const std::int32_t bits = (static_cast<std::int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return y * scale;
}

// Times the scope into one phase when a KernelPhases is given (the
// workbench's Stopwatch; no clock is read without one).
class PhaseTimer {
 public:
  PhaseTimer(KernelPhases* p, KernelPhases::Phase phase) : p_(p), phase_(phase) {
    if (p_) watch_.emplace();
  }
  // Ends the current phase and starts `next`.
  void next(KernelPhases::Phase next) {
    if (!p_) return;
    p_->seconds[phase_] += watch_->seconds();
    watch_->restart();
    phase_ = next;
  }
  ~PhaseTimer() {
    if (p_) p_->seconds[phase_] += watch_->seconds();
  }

 private:
  KernelPhases* p_;
  KernelPhases::Phase phase_;
  std::optional<Stopwatch> watch_;
};

inline float silu_f(float x) { return x / (1.0f + exp_vec(-x)); }

inline float dsilu_f(float x) {
  const float s = 1.0f / (1.0f + exp_vec(-x));
  return s + x * s * (1.0f - s);
}

// exp_vec, silu_f and dsilu_f on a vector of lanes (16 with AVX-512, 8 with
// AVX2), operation for operation. GCC's vector add and multiply may be
// contracted into fused multiply-adds as the scalar code may (its C++ default
// is -ffp-contract=fast); GCC 12 at -O3 -march=native fuses neither here, so
// every lane rounds as the scalar code does and training is bit-identical to
// the portable loops. That is checked, not guaranteed by the source:
// scripts/behaviour-snapshot.sh and the trained checkpoint's bytes on the
// Intel VM with AVX-512, 3 Dec 2026; the checkpoints of six trainings at 1
// and 2 threads on an AMD EPYC Zen 3 with AVX2, 6 Dec 2026. Another compiler
// or version may round the two paths apart, within the fp64 reference tests'
// tolerance.
// Each ISA gives the primitives; one body below uses them.
#if defined(KS_KAN_AVX512)
using vfloat = __m512;
inline vfloat add(vfloat a, vfloat b) { return _mm512_add_ps(a, b); }
inline vfloat sub(vfloat a, vfloat b) { return _mm512_sub_ps(a, b); }
inline vfloat mul(vfloat a, vfloat b) { return _mm512_mul_ps(a, b); }
inline vfloat quot(vfloat a, vfloat b) { return _mm512_div_ps(a, b); }
inline vfloat splat(float v) { return _mm512_set1_ps(v); }
inline vfloat clamp(vfloat x, float lo, float hi) { return _mm512_min_ps(_mm512_max_ps(x, splat(lo)), splat(hi)); }
inline vfloat floor_v(vfloat x) { return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC); }
inline vfloat neg(vfloat x) { return _mm512_sub_ps(_mm512_setzero_ps(), x); }
// y 2^n by scalef: exact, as the scalar's exponent bits
inline vfloat scale2n(vfloat y, vfloat n) { return _mm512_scalef_ps(y, n); }
// the first n (1..16) lanes
inline __mmask16 lanes(int n) { return n >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << n) - 1u); }
#elif defined(KS_KAN_AVX2)
using vfloat = __m256;
inline vfloat add(vfloat a, vfloat b) { return _mm256_add_ps(a, b); }
inline vfloat sub(vfloat a, vfloat b) { return _mm256_sub_ps(a, b); }
inline vfloat mul(vfloat a, vfloat b) { return _mm256_mul_ps(a, b); }
inline vfloat quot(vfloat a, vfloat b) { return _mm256_div_ps(a, b); }
inline vfloat splat(float v) { return _mm256_set1_ps(v); }
inline vfloat clamp(vfloat x, float lo, float hi) { return _mm256_min_ps(_mm256_max_ps(x, splat(lo)), splat(hi)); }
inline vfloat floor_v(vfloat x) { return _mm256_round_ps(x, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC); }
// the sign bit flipped, as the scalar's unary minus does
inline vfloat neg(vfloat x) { return _mm256_xor_ps(x, splat(-0.0f)); }
// y 2^n with 2^n built from its exponent bits, as the scalar builds it
inline vfloat scale2n(vfloat y, vfloat n) {
  return mul(y, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvttps_epi32(n), _mm256_set1_epi32(127)), 23)));
}
// a mask of the first n (0..8) lanes, for maskload and maskstore
inline __m256i lanes8(int n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(std::max(0, std::min(8, n))), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
#endif
#if defined(KS_KAN_AVX512) || defined(KS_KAN_AVX2)
inline vfloat exp_v(vfloat x) {
  x = clamp(x, -87.0f, 88.0f);
  const vfloat n = floor_v(add(mul(x, splat(1.44269504088896341f)), splat(0.5f)));
  const vfloat r = add(sub(x, mul(n, splat(0.693359375f))), mul(n, splat(2.12194440e-4f)));
  vfloat p = splat(1.9875691500e-4f);
  p = add(mul(p, r), splat(1.3981999507e-3f));
  p = add(mul(p, r), splat(8.3334519073e-3f));
  p = add(mul(p, r), splat(4.1665795894e-2f));
  p = add(mul(p, r), splat(1.6666665459e-1f));
  p = add(mul(p, r), splat(5.0000001201e-1f));
  const vfloat y = add(add(mul(mul(p, r), r), r), splat(1.0f));
  return scale2n(y, n);
}
inline vfloat silu_v(vfloat x) { return quot(x, add(splat(1.0f), exp_v(neg(x)))); }
inline vfloat dsilu_v(vfloat x) {
  const vfloat s = quot(splat(1.0f), add(splat(1.0f), exp_v(neg(x))));
  return add(s, mul(mul(x, s), sub(splat(1.0f), s)));
}
#endif
}  // namespace

const char* KernelPhases::name(int p) {
  static const char* const names[count] = {"weights", "bases", "base GEMM", "spline GEMM", "base grads",
                                           "spline grads", "per-weight", "input grad", "loss"};
  return p >= 0 && p < count ? names[p] : "?";
}

void set_cpu_threads(int threads) {
#ifdef _OPENMP
  omp_set_num_threads(std::max(1, threads));
#endif
  Eigen::setNbThreads(std::max(1, threads));
}

double measure_gemm_flops(int threads) {
  set_cpu_threads(threads);
  const int n = 1024;
  Eigen::MatrixXf a = Eigen::MatrixXf::Random(n, n), b = Eigen::MatrixXf::Random(n, n), c(n, n);
  const Stat t = time_calls(Repeats{2, 7}, [&] { c.noalias() = a * b; });
  return 2.0 * n * n * n / t.median;
}

double measure_onednn_sgemm_flops(int threads, std::size_t M, std::size_t N, std::size_t K, char ta, char tb) {
  set_cpu_threads(threads);
  std::mt19937 gen(11);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> a(M * K), b(K * N), c(M * N);
  for (auto& x : a) x = u(gen);
  for (auto& x : b) x = u(gen);
  const Stat t = time_calls(Repeats{2, 7}, [&] { sgemm(ta, tb, M, N, K, a.data(), b.data(), false, c.data()); });
  return 2.0 * static_cast<double>(M) * N * K / t.median;
}

namespace {
// The recursion on the window around x. `inv_ph` (uniform grids): the
// reciprocals 1/(p h) of the denominators t[j+p] - t[j]; null: divide.
inline bool local_basis_impl(const float* t, int G, int k, float x, const float* inv_ph, float inv_h, int* first,
                             float* b, float* db) {
  const int E = G + 2 * k;  // degree-0 intervals [t_j, t_{j+1})
  if (!(x >= t[0] && x < t[E])) return false;
  int j0;
  if (inv_ph) {
    j0 = std::min(E - 1, static_cast<int>((x - t[0]) * inv_h));
    while (j0 > 0 && x < t[j0]) --j0;  // settle rounding against the stored knots
    while (j0 < E - 1 && x >= t[j0 + 1]) ++j0;
  } else {
    j0 = static_cast<int>(std::upper_bound(t, t + E + 1, x) - t) - 1;  // t[j0] <= x < t[j0+1]
  }
  // Window w[r] holds B_{j0-k+r, p}; entries whose index is < 0 or beyond
  // level p's last basis (E-1-p) do not exist in the full recursion: zero.
  float w[kMaxOrder + 1] = {0};
  float lo[kMaxOrder + 1] = {0};  // level k-1, for the derivative
  w[k] = 1.0f;
  for (int p = 1; p <= k; ++p) {
    if (p == k) std::copy(w, w + k + 1, lo);
    const int last = E - 1 - p;
    for (int r = 0; r <= k; ++r) {
      const int j = j0 - k + r;
      if (j < 0 || j > last) {
        w[r] = 0.0f;
        continue;
      }
      const float left = inv_ph ? (x - t[j]) * inv_ph[p] * w[r] : (x - t[j]) / (t[j + p] - t[j]) * w[r];
      const float right = r >= k ? 0.0f
                          : inv_ph ? (t[j + p + 1] - x) * inv_ph[p] * w[r + 1]
                                   : (t[j + p + 1] - x) / (t[j + p + 1] - t[j + 1]) * w[r + 1];
      w[r] = left + right;
    }
  }
  *first = j0 - k;
  for (int r = 0; r <= k; ++r) b[r] = w[r];
  if (db) {
    if (k == 0) {
      for (int r = 0; r <= k; ++r) db[r] = 0.0f;
    } else {
      // lo[r] = B_{j0-k+r, k-1}; lo[k+1] would be B_{j0+1,k-1} = 0 (x < t[j0+1]).
      for (int r = 0; r <= k; ++r) {
        const int j = j0 - k + r;
        if (j < 0 || j > E - 1 - k) {
          db[r] = 0.0f;
          continue;
        }
        const float a = inv_ph ? lo[r] * inv_ph[k] : lo[r] / (t[j + k] - t[j]);
        const float c = r >= k ? 0.0f : inv_ph ? lo[r + 1] * inv_ph[k] : lo[r + 1] / (t[j + k + 1] - t[j + 1]);
        db[r] = k * (a - c);
      }
    }
  }
  return true;
}

// Uniform knots (efficient-kan's grid before any update): reciprocal
// denominators, and the interval found by arithmetic instead of a search.
struct UniformGrid {
  bool uniform = false;
  float inv_h = 0;
  float inv_ph[kMaxOrder + 1] = {0};
};
UniformGrid uniform_grid(const float* t, int G, int k) {
  UniformGrid u;
  const int E = G + 2 * k;
  const double h = (static_cast<double>(t[E]) - t[0]) / E;
  if (!(h > 0)) return u;
  for (int j = 0; j <= E; ++j)
    if (std::fabs(t[j] - (t[0] + j * h)) > 1e-5 * h) return u;
  u.uniform = true;
  u.inv_h = static_cast<float>(1.0 / h);
  for (int p = 1; p <= k; ++p) u.inv_ph[p] = static_cast<float>(1.0 / (p * h));
  return u;
}
}  // namespace

bool local_basis(const float* t, int G, int k, float x, int* first, float* b, float* db) {
  return local_basis_impl(t, G, k, x, nullptr, 0.0f, first, b, db);
}

namespace {
// The bases on uniform grids (efficient-kan's, before any grid update), a
// block of inputs at a time so that the compiler vectorises across inputs.
// With knots t_j = t_0 + j h, x = t_0 + (j0 + f) h, the recursion's factors
// are functions of f alone: (x - t_j) / (p h) = (f + k - r) / p and
// (t_{j+p+1} - x) / (p h) = (r + p + 1 - k - f) / p for the window entry r
// (j = j0 - k + r). Entries the full recursion would zero (indices outside
// a level's range) feed only bases outside [0, C) at the last level, which
// are not stored, so the window needs no masks.
constexpr int kLanes = 16;

void bases_uniform(const KanLayer& L, const float* x, int B, LayerWork& w) {
  const int in = L.in, C = L.C(), K = L.knots(), k = L.k, k1 = k + 1, E = L.G + 2 * k;
  const std::size_t IC = static_cast<std::size_t>(in) * C;
  std::vector<float> t0(static_cast<std::size_t>(in)), tE(static_cast<std::size_t>(in)), invh(static_cast<std::size_t>(in));
  for (int i = 0; i < in; ++i) {
    const float* t = &L.grid[static_cast<std::size_t>(i) * K];
    t0[i] = t[0];
    tE[i] = t[E];
    invh[i] = static_cast<float>(E / (static_cast<double>(t[E]) - t[0]));
  }
  float inv_p[kMaxOrder + 1] = {0};
  for (int p = 1; p <= k; ++p) inv_p[p] = 1.0f / static_cast<float>(p);
#ifdef KS_KAN_AVX512
  // a block's row segment, 16 inputs x C floats, as C vectors: the lane
  // (input of the block) and the column of each float
  std::vector<std::int32_t> seg_lane(static_cast<std::size_t>(C) * kLanes), seg_col(seg_lane.size());
  for (int e = 0; e < C * kLanes; ++e) {
    seg_lane[e] = e / C;
    seg_col[e] = e % C;
  }
#endif
#pragma omp parallel for schedule(static)
  for (int s = 0; s < B; ++s) {
    float* row = &w.bmat[static_cast<std::size_t>(s) * IC];
#ifndef KS_KAN_AVX512
    std::fill(row, row + IC, 0.0f);
#else
    // locals, not the shared vectors: their pointers stay in registers
    // across the stores below (which might otherwise alias them)
    const std::int32_t* const seg_lane_p = seg_lane.data();
    const std::int32_t* const seg_col_p = seg_col.data();
    const float* const invh_p = invh.data();
    const float* const t0_p = t0.data();
    const float* const tE_p = tE.data();
#endif
    const float* xs = x + static_cast<std::size_t>(s) * in;
    float* act = &w.act[static_cast<std::size_t>(s) * in];
    int* first = &w.first[static_cast<std::size_t>(s) * in];
    float* dval = &w.dval[static_cast<std::size_t>(s) * in * k1];
    for (int i0 = 0; i0 < in; i0 += kLanes) {
      const int n = std::min(kLanes, in - i0);
      alignas(64) float f[kLanes], wv[kMaxOrder + 2][kLanes], lo[kMaxOrder + 2][kLanes];
      alignas(64) int j0[kLanes];
#ifdef KS_KAN_AVX512
      __mmask16 in_grid;
      {
        // lanes past the last input load zeros (every grid term too): computed, never stored
        const __mmask16 m = lanes(n);
        const __m512 xv = _mm512_maskz_loadu_ps(m, xs + i0);
        _mm512_mask_storeu_ps(act + i0, m, silu_v(xv));
        const __m512 t0v = _mm512_maskz_loadu_ps(m, t0_p + i0);
        in_grid = m & _mm512_cmp_ps_mask(xv, t0v, _CMP_GE_OQ) & _mm512_cmp_ps_mask(xv, _mm512_maskz_loadu_ps(m, tE_p + i0), _CMP_LT_OQ);
        const __m512 u = _mm512_mul_ps(_mm512_sub_ps(xv, t0v), _mm512_maskz_loadu_ps(m, invh_p + i0));
        const __m512 fl = _mm512_roundscale_ps(u, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
        // (max and min return their second operand for a NaN: 0, then E - 1)
        const __m512 jj = _mm512_min_ps(_mm512_max_ps(fl, _mm512_setzero_ps()), _mm512_set1_ps(static_cast<float>(E - 1)));
        _mm512_store_si512(j0, _mm512_cvttps_epi32(jj));
        _mm512_storeu_ps(f, _mm512_sub_ps(u, jj));
      }
#elif defined(KS_KAN_AVX2)
      bool inside[kLanes];
      for (int h = 0; h < kLanes; h += 8) {
        // lanes past the last input load zeros: computed, never stored (a
        // half with no input left points at the block's start, masked off)
        const __m256i m = lanes8(n - h);
        const int i = i0 + (h < n ? h : 0);
        const __m256 xv = _mm256_maskload_ps(xs + i, m);
        _mm256_maskstore_ps(act + i, m, silu_v(xv));
        const __m256 t0v = _mm256_maskload_ps(t0.data() + i, m);
        const int ins = _mm256_movemask_ps(_mm256_and_ps(_mm256_cmp_ps(xv, t0v, _CMP_GE_OQ),
                                                         _mm256_cmp_ps(xv, _mm256_maskload_ps(tE.data() + i, m), _CMP_LT_OQ)));
        for (int l = 0; l < 8; ++l) inside[h + l] = (ins >> l) & 1;
        const vfloat u = mul(sub(xv, t0v), _mm256_maskload_ps(invh.data() + i, m));
        // (clamp's max and min return their second operand for a NaN: 0, then E - 1)
        const vfloat jj = clamp(floor_v(u), 0.0f, static_cast<float>(E - 1));
        _mm256_store_si256(reinterpret_cast<__m256i*>(j0 + h), _mm256_cvttps_epi32(jj));
        _mm256_store_ps(f + h, sub(u, jj));
      }
#else
      bool inside[kLanes];
#pragma omp simd
      for (int l = 0; l < kLanes; ++l) {
        const int i = std::min(i0 + l, in - 1);
        const float xv = xs[i];
        act[i] = silu_f(xv);
        inside[l] = xv >= t0[i] && xv < tE[i];
        const float u = (xv - t0[i]) * invh[i];
        const float fl = std::floor(u);
        const float jj = std::min(static_cast<float>(E - 1), std::max(0.0f, fl));
        j0[l] = static_cast<int>(jj);
        f[l] = u - jj;
      }
#endif
      for (int r = 0; r <= k + 1; ++r)
        for (int l = 0; l < kLanes; ++l) wv[r][l] = 0.0f;
      for (int l = 0; l < kLanes; ++l) wv[k][l] = 1.0f;
      for (int p = 1; p <= k; ++p) {
        if (p == k)
          for (int r = 0; r <= k + 1; ++r)
            for (int l = 0; l < kLanes; ++l) lo[r][l] = wv[r][l];
        // entries r < k - p stay +0 (both terms multiply zeros): not computed
        for (int r = k - p; r <= k; ++r) {
          const float a0 = static_cast<float>(k - r), b0 = static_cast<float>(r + p + 1 - k);
#pragma omp simd
          for (int l = 0; l < kLanes; ++l)
            wv[r][l] = ((f[l] + a0) * wv[r][l] + (b0 - f[l]) * wv[r + 1][l]) * inv_p[p];
        }
      }
#ifdef KS_KAN_AVX512
      {
        // the same values as the loop below, 16 inputs at a time: first;
        // per r the derivative (dval[r][i]), one store; and the block's
        // C-wide row segments, 16 floats a store, each float the basis
        // whose column it is or zero (no fill, no scatter)
        const __mmask16 m = lanes(n);
        const __m512i fiv = _mm512_sub_epi32(_mm512_load_si512(j0), _mm512_set1_epi32(k));
        _mm512_mask_storeu_epi32(first + i0, m, _mm512_mask_blend_epi32(in_grid, _mm512_set1_epi32(INT_MIN), fiv));
        const __m512 ih = _mm512_maskz_loadu_ps(m, invh_p + i0);
        for (int r = 0; r < k1; ++r)
          _mm512_mask_storeu_ps(dval + static_cast<std::size_t>(r) * in + i0, m,
                                _mm512_mul_ps(_mm512_sub_ps(_mm512_load_ps(lo[r]), _mm512_load_ps(lo[r + 1])), ih));
        // lanes outside the grid: a first column no float's column matches
        const __m512i fig = _mm512_mask_blend_epi32(in_grid, _mm512_set1_epi32(-(1 << 20)), fiv);
        const __m512 w0 = _mm512_load_ps(wv[0]), w1 = k1 > 1 ? _mm512_load_ps(wv[1]) : _mm512_setzero_ps();
        const __m512 w2 = k1 > 2 ? _mm512_load_ps(wv[2]) : _mm512_setzero_ps(), w3 = k1 > 3 ? _mm512_load_ps(wv[3]) : _mm512_setzero_ps();
        float* seg = row + static_cast<std::size_t>(i0) * C;
        const int floats = n * C;
        for (int q = 0; q * kLanes < floats; ++q) {
          const __m512i lv = _mm512_loadu_si512(seg_lane_p + static_cast<std::size_t>(q) * kLanes);
          const __m512i rel = _mm512_sub_epi32(_mm512_loadu_si512(seg_col_p + static_cast<std::size_t>(q) * kLanes), _mm512_permutexvar_epi32(lv, fig));
          const __mmask16 ok = _mm512_cmple_epu32_mask(rel, _mm512_set1_epi32(k));  // 0 <= rel <= k
          const __m512i idx = _mm512_add_epi32(_mm512_slli_epi32(rel, 4), lv);      // wv[rel][lane]
          __m512 v;
          if (k1 <= 4) {
            const __mmask16 hi = _mm512_test_epi32_mask(idx, _mm512_set1_epi32(32));
            v = _mm512_mask_blend_ps(hi, _mm512_permutex2var_ps(w0, idx, w1), _mm512_permutex2var_ps(w2, idx, w3));
          } else {
            v = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), ok, idx, &wv[0][0], 4);
          }
          _mm512_mask_storeu_ps(seg + static_cast<std::size_t>(q) * kLanes, lanes(floats - q * kLanes), _mm512_maskz_mov_ps(ok, v));
        }
      }
#else
      for (int l = 0; l < n; ++l) {
        const int i = i0 + l;
        if (!inside[l]) {
          first[i] = INT_MIN;
          continue;
        }
        const int fi = j0[l] - k;
        first[i] = fi;
        for (int r = 0; r < k1; ++r) {
          // d/dx B_{j,k} = (B_{j,k-1} - B_{j+1,k-1}) / h
          dval[static_cast<std::size_t>(r) * in + i] = (lo[r][l] - lo[r + 1][l]) * invh[i];
          const int c = fi + r;
          if (c >= 0 && c < C) row[static_cast<std::size_t>(i) * C + c] = wv[r][l];
        }
      }
#endif
    }
  }
}
}  // namespace

void layer_forward_cpu(const KanLayer& L, const float* x, int B, float* y, LayerWork& w) {
  if (L.k > kMaxOrder) throw std::invalid_argument("spline order above 16");
  const int in = L.in, out = L.out, C = L.C(), K = L.knots(), k1 = L.k + 1;
  const std::size_t IC = static_cast<std::size_t>(in) * C;
  w.B = B;
  w.first.resize(static_cast<std::size_t>(B) * in);
  w.dval.resize(static_cast<std::size_t>(B) * in * k1);
  w.act.resize(static_cast<std::size_t>(B) * in);
  w.bmat.resize(static_cast<std::size_t>(B) * IC);
  w.ws.resize(IC * out);
  PhaseTimer clock(w.phases, KernelPhases::weight_layout);
  // scaled spline weight in the spline weight's own layout:
  // ws[o][i][c] = scaler[o][i] * spline[o][i][c], read and written in order.
  // (Laid out transposed, [i][c][o], it was written with a stride of `out`
  // floats: 4 ns a weight, as long as the spline GEMM itself at small
  // batches; Eigen packs a transposed operand at no extra cost.)
#pragma omp parallel for schedule(static)
  for (int o = 0; o < out; ++o)
    for (int i = 0; i < in; ++i) {
      const std::size_t oi = static_cast<std::size_t>(o) * in + i;
      const float sc = L.spline_scaler[oi];
      for (int c = 0; c < C; ++c) w.ws[oi * C + c] = sc * L.spline_weight[oi * C + c];
    }
  // Bases by local support (k+1 per sample and input, O(k^2) work), laid
  // into the rows of a [B][in*C] matrix so the contraction is one GEMM.
  clock.next(KernelPhases::bases);
  std::vector<UniformGrid> ug(static_cast<std::size_t>(in));
  bool all_uniform = L.k >= 1;
  for (int i = 0; i < in; ++i) {
    ug[i] = uniform_grid(&L.grid[static_cast<std::size_t>(i) * K], L.G, L.k);
    all_uniform = all_uniform && ug[i].uniform;
  }
  if (all_uniform) {
    bases_uniform(L, x, B, w);
  } else {
#pragma omp parallel for schedule(static)
  for (int s = 0; s < B; ++s) {
    float* row = &w.bmat[static_cast<std::size_t>(s) * IC];
    std::fill(row, row + IC, 0.0f);
    for (int i = 0; i < in; ++i) {
      const std::size_t si = static_cast<std::size_t>(s) * in + i;
      const float xv = x[si];
      w.act[si] = silu_f(xv);
      float bv[kMaxOrder + 1], db[kMaxOrder + 1];
      const UniformGrid& g = ug[i];
      if (!local_basis_impl(&L.grid[static_cast<std::size_t>(i) * K], L.G, L.k, xv, g.uniform ? g.inv_ph : nullptr,
                            g.inv_h, &w.first[si], bv, db)) {
        w.first[si] = INT_MIN;
        continue;
      }
      for (int r = 0; r < k1; ++r) {
        w.dval[(static_cast<std::size_t>(s) * k1 + r) * in + i] = db[r];
        const int c = w.first[si] + r;
        if (c >= 0 && c < C) row[static_cast<std::size_t>(i) * C + c] = bv[r];
      }
    }
  }
  }
  clock.next(KernelPhases::base_gemm);
  sgemm('N', 'T', B, out, in, w.act.data(), L.base_weight.data(), false, y);  // silu(x) Wb^T
  clock.next(KernelPhases::spline_gemm);
  sgemm('N', 'T', B, out, IC, w.bmat.data(), w.ws.data(), true, y);  // + b(x) ws^T
}

void layer_backward_cpu(const KanLayer& L, const float* x, int B, const float* dy, const LayerWork& w, BackwardScratch& sc,
                        float* d_base, float* d_spline, float* d_scaler, float* dx) {
  const int in = L.in, out = L.out, C = L.C(), k1 = L.k + 1;
  const std::size_t IC = static_cast<std::size_t>(in) * C;
  PhaseTimer clock(w.phases, KernelPhases::base_grads);
  // base weight: dWb = dy^T silu(x)
  sgemm('T', 'N', out, in, B, dy, w.act.data(), false, d_base);
  // gt[o][i][c] = sum_s dy[s,o] b[s,i,c], written into d_spline (the spline
  // weight's own layout) and scaled there in place, so that the loop below
  // reads and writes every array in order and no third [out][in][C] array
  // streams through the cache. (Laid out [i][c][o], it read gt with a stride
  // of `out` floats, all in*C rows again for every output; with a
  // power-of-two `out` those rows share cache sets, and at small batches the
  // loop took 3-5 ns a weight.)
  clock.next(KernelPhases::spline_grads);
  sgemm('T', 'N', out, IC, B, dy, w.bmat.data(), false, d_spline);
  clock.next(KernelPhases::per_weight);
  // spline weight and scaler. The arrays are distinct (restrict) and the
  // scaler is read once per (o, i): otherwise every store to d_spline made
  // the compiler load the scaler again and keep the stores in order with the
  // weight's loads, and the pass took 0.55-1.0 ns a weight on the Zen 3 EPYC
  // of 6 Dec 2026, depending on where the allocator put the arrays
  // relative to each other (4 KiB aliasing of the loads with pending stores).
  // The same products and sums in the same order.
  {
    float* __restrict gt = d_spline;
    const float* __restrict sw = L.spline_weight.data();
    const float* __restrict scaler = L.spline_scaler.data();
    float* __restrict dsc = d_scaler;
#pragma omp parallel for schedule(static)
    for (int o = 0; o < out; ++o)
      for (int i = 0; i < in; ++i) {
        const std::size_t oi = static_cast<std::size_t>(o) * in + i;
        const float s = scaler[oi];
        float acc = 0;
        for (int c = 0; c < C; ++c) {
          const float g = gt[oi * C + c];
          gt[oi * C + c] = s * g;
          acc += sw[oi * C + c] * g;
        }
        dsc[oi] = acc;
      }
  }
  if (!dx) return;
  // input: silu'(x) (dy Wb) + sum over the k+1 local bases of b'(x) (dy ws)[s, i*C+c]
  clock.next(KernelPhases::base_grads);
  sc.tmp.resize(static_cast<std::size_t>(B) * in);
  sgemm('N', 'N', B, in, out, dy, L.base_weight.data(), false, sc.tmp.data());
  // dsp = dy ws: with one output, each entry is one product, dy[s] ws[j],
  // rounded once whichever way it is computed: taken where it is needed,
  // not written as a [B][in*C] matrix and read back
  const bool outer = out == 1;
  clock.next(KernelPhases::spline_grads);
  if (!outer) {
    sc.dsp.resize(static_cast<std::size_t>(B) * IC);
    sgemm('N', 'N', B, IC, out, dy, w.ws.data(), false, sc.dsp.data());
  }
  clock.next(KernelPhases::input_grad);
#pragma omp parallel for schedule(static)
  for (int smp = 0; smp < B; ++smp) {
    const float* ds = outer ? w.ws.data() : &sc.dsp[static_cast<std::size_t>(smp) * IC];
    const float ds_scale = outer ? dy[smp] : 1.0f;  // ds[j] * ds_scale: the product, or the entry itself
    const std::size_t s0 = static_cast<std::size_t>(smp) * in;
    const float* dv = &w.dval[s0 * k1];  // [k+1][in] for this sample
    // silu'(x) (dy Wb), then the local bases' terms added in order r = 0..k
#ifdef KS_KAN_AVX512
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (int i0 = 0; i0 < in; i0 += 16) {
      const __mmask16 m = lanes(in - i0);
      const __m512 xv = _mm512_maskz_loadu_ps(m, x + s0 + i0);
      __m512 v = _mm512_mul_ps(dsilu_v(xv), _mm512_maskz_loadu_ps(m, &sc.tmp[s0 + i0]));
      const __m512i f = _mm512_maskz_loadu_epi32(m, &w.first[s0 + i0]);
      const __mmask16 valid = m & _mm512_cmpneq_epi32_mask(f, _mm512_set1_epi32(INT_MIN));
      // ds[i*C + f + r]
      const __m512i at = _mm512_add_epi32(_mm512_mullo_epi32(_mm512_add_epi32(_mm512_set1_epi32(i0), lane), _mm512_set1_epi32(C)), f);
      for (int r = 0; r < k1; ++r) {
        const __m512i c = _mm512_add_epi32(f, _mm512_set1_epi32(r));
        const __mmask16 ok = _mm512_mask_cmplt_epu32_mask(valid, c, _mm512_set1_epi32(C));  // 0 <= c < C
        __m512 g = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), ok, _mm512_add_epi32(at, _mm512_set1_epi32(r)), ds, 4);
        if (outer) g = _mm512_mul_ps(g, _mm512_set1_ps(ds_scale));
        // v += dval * ds as the scalar loop compiles it (one fused multiply-add)
        v = _mm512_mask3_fmadd_ps(_mm512_maskz_loadu_ps(m, dv + static_cast<std::size_t>(r) * in + i0), g, v, ok);
      }
      _mm512_mask_storeu_ps(dx + s0 + i0, m, v);
    }
#else
#ifdef KS_KAN_AVX2
    for (int i0 = 0; i0 < in; i0 += 8) {
      const __m256i m = lanes8(in - i0);
      _mm256_maskstore_ps(dx + s0 + i0, m, _mm256_mul_ps(dsilu_v(_mm256_maskload_ps(x + s0 + i0, m)), _mm256_maskload_ps(&sc.tmp[s0 + i0], m)));
    }
#else
    for (int i = 0; i < in; ++i) dx[s0 + i] = dsilu_f(x[s0 + i]) * sc.tmp[s0 + i];
#endif
    for (int i = 0; i < in; ++i) {
      const std::size_t si = s0 + i;
      float v = dx[si];
      const int f = w.first[si];
      if (f != INT_MIN) {
        for (int r = 0; r < k1; ++r) {
          const int c = f + r;
          if (c >= 0 && c < C) {
            const float g = outer ? ds[static_cast<std::size_t>(i) * C + c] * ds_scale : ds[static_cast<std::size_t>(i) * C + c];
            v += dv[static_cast<std::size_t>(r) * in + i] * g;
          }
        }
      }
      dx[si] = v;
    }
#endif
  }
}

// FLOPs the CPU path executes (its GEMMs run over all C bases; the zeros of
// the local support are multiplied too, at GEMM speed): model/'s counts.
OpCount layer_forward_count(const KanLayer& L, int B) {
  const auto c = kanscale_layer_forward(L.in, L.out, L.G, L.k, B);
  return {c.flops, c.bytes};
}

OpCount layer_backward_count(const KanLayer& L, int B, bool need_dx) {
  const auto c = kanscale_layer_backward(L.in, L.out, L.G, L.k, B, need_dx);
  return {c.flops, c.bytes};
}

double mse_forward_backward(const float* y, const float* t, std::size_t n, float* dy) {
  double loss = 0;
  const float scale = 2.0f / static_cast<float>(n);
  for (std::size_t j = 0; j < n; ++j) {
    const double d = static_cast<double>(y[j]) - t[j];
    loss += d * d;
    dy[j] = scale * (y[j] - t[j]);
  }
  return loss / static_cast<double>(n);
}

KanCpuNet::KanCpuNet(KanNet& net) : net_(net) {
  work_.resize(net.layers.size());
  acts_.resize(net.layers.size() + 1);
  for (const auto& L : net.layers) {
    grads_.emplace_back(L.base_weight.size());
    grads_.emplace_back(L.spline_weight.size());
    grads_.emplace_back(L.spline_scaler.size());
  }
}

void KanCpuNet::time_phases(KernelPhases* p) {
  phases_ = p;
  for (auto& w : work_) w.phases = p;
}

double KanCpuNet::forward(const float* X, const float* T, int B, const std::function<void(int)>& after_layer) {
  B_ = B;
  const auto& ls = net_.layers;
  acts_[0].assign(X, X + static_cast<std::size_t>(B) * ls.front().in);
  for (std::size_t l = 0; l < ls.size(); ++l) {
    acts_[l + 1].resize(static_cast<std::size_t>(B) * ls[l].out);
    layer_forward_cpu(ls[l], acts_[l].data(), B, acts_[l + 1].data(), work_[l]);
    if (after_layer) after_layer(static_cast<int>(l));
  }
  const auto& y = acts_.back();
  PhaseTimer clock(phases_, KernelPhases::loss);
  target_.assign(T, T + y.size());
  double loss = 0;
  for (std::size_t j = 0; j < y.size(); ++j) {
    const double d = static_cast<double>(y[j]) - T[j];
    loss += d * d;
  }
  return loss / static_cast<double>(y.size());
}

void KanCpuNet::backward(const std::function<void(int)>& ready, const std::function<void(int)>& piece) {
  const auto& ls = net_.layers;
  const auto& y = acts_.back();
  dy_.resize(y.size());
  {
    PhaseTimer clock(phases_, KernelPhases::loss);
    const float scale = 2.0f / static_cast<float>(y.size());
    for (std::size_t j = 0; j < y.size(); ++j) dy_[j] = scale * (y[j] - target_[j]);
  }
  for (std::size_t l = ls.size(); l-- > 0;) {
    const bool need_dx = l > 0;
    dx_.resize(need_dx ? static_cast<std::size_t>(B_) * ls[l].in : 0);
    layer_backward_cpu(ls[l], acts_[l].data(), B_, dy_.data(), work_[l], scratch_, grads_[3 * l].data(), grads_[3 * l + 1].data(),
                       grads_[3 * l + 2].data(), need_dx ? dx_.data() : nullptr);
    // efficient-kan's order inside a layer: spline_weight, spline_scaler, base_weight
    ready(static_cast<int>(3 * l + 1));
    ready(static_cast<int>(3 * l + 2));
    ready(static_cast<int>(3 * l + 0));
    if (piece) piece(static_cast<int>(l));
    std::swap(dy_, dx_);
  }
}

}  // namespace ks
