#include "kan_ref.hpp"

#include <cmath>

namespace ks::ref {

namespace {
// Cox-de Boor up to degree `deg`; returns level-deg values (E - deg of them).
std::vector<double> recursion(const double* t, int G, int k, int deg, double x) {
  const int E = G + 2 * k;  // degree-0 intervals
  std::vector<double> b(E);
  for (int j = 0; j < E; ++j) b[j] = (t[j] <= x && x < t[j + 1]) ? 1.0 : 0.0;
  for (int p = 1; p <= deg; ++p) {
    const int n = E - p;
    for (int j = 0; j < n; ++j) {
      b[j] = (x - t[j]) / (t[j + p] - t[j]) * b[j] + (t[j + p + 1] - x) / (t[j + p + 1] - t[j + 1]) * b[j + 1];
    }
    b.resize(n);
  }
  return b;
}
double silu(double x) { return x / (1.0 + std::exp(-x)); }
double dsilu(double x) {
  const double s = 1.0 / (1.0 + std::exp(-x));
  return s + x * s * (1.0 - s);
}
std::vector<double> knots_of(const KanLayer& L, int i) {
  std::vector<double> t(L.knots());
  for (int j = 0; j < L.knots(); ++j) t[j] = L.grid[static_cast<std::size_t>(i) * L.knots() + j];
  return t;
}
}  // namespace

void basis(const double* t, int G, int k, double x, double* out) {
  const auto b = recursion(t, G, k, k, x);
  for (int c = 0; c < G + k; ++c) out[c] = b[c];
}

void basis_and_derivative(const double* t, int G, int k, double x, double* b, double* db) {
  basis(t, G, k, x, b);
  const auto lo = recursion(t, G, k, k - 1, x);  // G+k+1 values
  for (int c = 0; c < G + k; ++c) {
    db[c] = k * (lo[c] / (t[c + k] - t[c]) - lo[c + 1] / (t[c + k + 1] - t[c + 1]));
  }
}

void layer_forward(const KanLayer& L, const std::vector<double>& x, int B, std::vector<double>& y) {
  const int C = L.C();
  y.assign(static_cast<std::size_t>(B) * L.out, 0.0);
  std::vector<double> b(C);
  for (int i = 0; i < L.in; ++i) {
    const auto t = knots_of(L, i);
    for (int s = 0; s < B; ++s) {
      const double xv = x[static_cast<std::size_t>(s) * L.in + i];
      basis(t.data(), L.G, L.k, xv, b.data());
      for (int o = 0; o < L.out; ++o) {
        const std::size_t oi = static_cast<std::size_t>(o) * L.in + i;
        double acc = L.base_weight[oi] * silu(xv);
        double sp = 0;
        for (int c = 0; c < C; ++c) sp += static_cast<double>(L.spline_weight[oi * C + c]) * b[c];
        acc += L.spline_scaler[oi] * sp;
        y[static_cast<std::size_t>(s) * L.out + o] += acc;
      }
    }
  }
}

void layer_backward(const KanLayer& L, const std::vector<double>& x, int B, const std::vector<double>& dy, LayerGrad& g,
                    bool need_dx) {
  const int C = L.C();
  g.base_weight.assign(static_cast<std::size_t>(L.out) * L.in, 0.0);
  g.spline_weight.assign(static_cast<std::size_t>(L.out) * L.in * C, 0.0);
  g.spline_scaler.assign(static_cast<std::size_t>(L.out) * L.in, 0.0);
  g.x.assign(need_dx ? static_cast<std::size_t>(B) * L.in : 0, 0.0);
  std::vector<double> b(C), db(C);
  for (int i = 0; i < L.in; ++i) {
    const auto t = knots_of(L, i);
    for (int s = 0; s < B; ++s) {
      const double xv = x[static_cast<std::size_t>(s) * L.in + i];
      basis_and_derivative(t.data(), L.G, L.k, xv, b.data(), db.data());
      for (int o = 0; o < L.out; ++o) {
        const std::size_t oi = static_cast<std::size_t>(o) * L.in + i;
        const double d = dy[static_cast<std::size_t>(s) * L.out + o];
        g.base_weight[oi] += d * silu(xv);
        double sp = 0, dsp = 0;
        for (int c = 0; c < C; ++c) {
          const double w = L.spline_weight[oi * C + c];
          g.spline_weight[oi * C + c] += d * L.spline_scaler[oi] * b[c];
          sp += w * b[c];
          dsp += w * db[c];
        }
        g.spline_scaler[oi] += d * sp;
        if (need_dx) g.x[static_cast<std::size_t>(s) * L.in + i] += d * (L.base_weight[oi] * dsilu(xv) + L.spline_scaler[oi] * dsp);
      }
    }
  }
}

double net_loss(const KanNet& net, const std::vector<double>& X, const std::vector<double>& T, int B,
                std::vector<std::vector<double>>* grads) {
  const std::size_t nl = net.layers.size();
  std::vector<std::vector<double>> acts(nl + 1);
  acts[0] = X;
  for (std::size_t l = 0; l < nl; ++l) layer_forward(net.layers[l], acts[l], B, acts[l + 1]);
  const auto& y = acts[nl];
  double loss = 0;
  for (std::size_t j = 0; j < y.size(); ++j) loss += (y[j] - T[j]) * (y[j] - T[j]);
  loss /= static_cast<double>(y.size());
  if (!grads) return loss;
  grads->assign(3 * nl, {});
  std::vector<double> dy(y.size());
  for (std::size_t j = 0; j < y.size(); ++j) dy[j] = 2.0 * (y[j] - T[j]) / static_cast<double>(y.size());
  for (std::size_t l = nl; l-- > 0;) {
    LayerGrad g;
    layer_backward(net.layers[l], acts[l], B, dy, g, l > 0);
    (*grads)[3 * l + 0] = g.base_weight;
    (*grads)[3 * l + 1] = g.spline_weight;
    (*grads)[3 * l + 2] = g.spline_scaler;
    dy = g.x;
  }
  return loss;
}

}  // namespace ks::ref
