#include "kan.hpp"

#include <Eigen/Dense>
#include <cmath>

#include "kan_ref.hpp"
#include "model/rng.hpp"

namespace ks {

std::vector<std::int64_t> KanNet::widths() const {
  std::vector<std::int64_t> w;
  if (layers.empty()) return w;
  w.push_back(layers[0].in);
  for (const auto& l : layers) w.push_back(l.out);
  return w;
}

std::int64_t KanNet::parameter_count() const {
  std::int64_t n = 0;
  for (const auto& l : layers) n += static_cast<std::int64_t>(l.base_weight.size() + l.spline_weight.size() + l.spline_scaler.size());
  return n;
}

std::size_t TensorRef::size() const {
  std::size_t n = 1;
  for (auto d : shape) n *= static_cast<std::size_t>(d);
  return n;
}

KanNet init_kan(const std::vector<std::int64_t>& widths, int G, int k, std::uint64_t seed) {
  KanNet net;
  const Rng rng(seed);
  std::uint64_t stream = 1000;  // one stream per tensor
  for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
    KanLayer L;
    L.in = static_cast<int>(widths[l]);
    L.out = static_cast<int>(widths[l + 1]);
    L.G = G;
    L.k = k;
    const int K = L.knots(), C = L.C();
    const double h = (L.grid_hi - L.grid_lo) / G;
    L.grid.resize(static_cast<std::size_t>(L.in) * K);
    for (int i = 0; i < L.in; ++i)
      for (int j = 0; j < K; ++j) {
        // as efficient-kan computes them: (arange(-k, G+k+1) * h + lo) in fp32
        const float jh = static_cast<float>(j - k) * static_cast<float>(h);
        L.grid[static_cast<std::size_t>(i) * K + j] = jh + static_cast<float>(L.grid_lo);
      }
    const double bound = 1.0 / std::sqrt(static_cast<double>(L.in));
    auto uniform = [&](std::vector<float>& v, std::size_t n, std::uint64_t s) {
      v.resize(n);
      for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>((2 * rng.uniform(s, i) - 1) * bound);
    };
    uniform(L.base_weight, static_cast<std::size_t>(L.out) * L.in, stream++);
    uniform(L.spline_scaler, static_cast<std::size_t>(L.out) * L.in, stream++);
    // curve2coeff: per input, the basis at the G+1 interior knots (A: (G+1) x C),
    // the minimum-norm least-squares solution for each output's noise.
    L.spline_weight.assign(static_cast<std::size_t>(L.out) * L.in * C, 0.f);
    const std::uint64_t noise_stream = stream++;
    std::vector<double> knots(K), b(C);
    for (int i = 0; i < L.in; ++i) {
      for (int j = 0; j < K; ++j) knots[j] = L.grid[static_cast<std::size_t>(i) * K + j];
      Eigen::MatrixXd A(G + 1, C);
      for (int p = 0; p <= G; ++p) {
        ref::basis(knots.data(), G, k, knots[k + p], b.data());
        for (int c = 0; c < C; ++c) A(p, c) = b[c];
      }
      const Eigen::CompleteOrthogonalDecomposition<Eigen::MatrixXd> cod(A);
      for (int o = 0; o < L.out; ++o) {
        Eigen::VectorXd y(G + 1);
        for (int p = 0; p <= G; ++p) {
          const std::uint64_t idx = (static_cast<std::uint64_t>(p) * L.in + i) * L.out + o;
          y(p) = (rng.uniform(noise_stream, idx) - 0.5) * 0.1 / G;
        }
        const Eigen::VectorXd coef = cod.solve(y);
        for (int c = 0; c < C; ++c) L.spline_weight[(static_cast<std::size_t>(o) * L.in + i) * C + c] = static_cast<float>(coef(c));
      }
    }
    net.layers.push_back(std::move(L));
  }
  return net;
}

std::vector<TensorRef> kan_parameter_refs(KanNet& net) {
  std::vector<TensorRef> r;
  for (std::size_t l = 0; l < net.layers.size(); ++l) {
    KanLayer& L = net.layers[l];
    const std::string p = "layers." + std::to_string(l) + ".";
    r.push_back({p + "base_weight", {L.out, L.in}, L.base_weight.data()});
    r.push_back({p + "spline_weight", {L.out, L.in, L.C()}, L.spline_weight.data()});
    r.push_back({p + "spline_scaler", {L.out, L.in}, L.spline_scaler.data()});
  }
  return r;
}

std::vector<TensorRef> kan_state_refs(KanNet& net) {
  std::vector<TensorRef> r = kan_parameter_refs(net);
  for (std::size_t l = 0; l < net.layers.size(); ++l) {
    KanLayer& L = net.layers[l];
    r.push_back({"layers." + std::to_string(l) + ".grid", {L.in, L.knots()}, L.grid.data()});
  }
  return r;
}

}  // namespace ks
