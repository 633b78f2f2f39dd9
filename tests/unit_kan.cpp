// The KAN layer: basis, gradients, the fast fp32 path against the fp64
// reference, Adam, data sharding, checkpoint files.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <random>

#include "measure/adam.hpp"
#include "measure/data.hpp"
#include "measure/kan.hpp"
#include "measure/kan_cpu.hpp"
#include "measure/kan_ref.hpp"
#include "measure/safetensors.hpp"
#include "model/kan_model.hpp"
#include "formats/yaml_reader.hpp"

using namespace ks;

namespace {
std::vector<double> uniform_knots(int G, int k, double a = -1, double b = 1) {
  std::vector<double> t(G + 2 * k + 1);
  for (int j = 0; j < static_cast<int>(t.size()); ++j) t[j] = a + (j - k) * (b - a) / G;
  return t;
}
double max_rel_err(const std::vector<float>& got, const std::vector<double>& ref) {
  double scale = 0, err = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    scale = std::max(scale, std::fabs(ref[i]));
    err = std::max(err, std::fabs(got[i] - ref[i]));
  }
  return scale > 0 ? err / scale : err;
}
}  // namespace

TEST_CASE("basis: partition of unity inside the grid, k+1 non-zeros, zero outside") {
  for (int k : {1, 2, 3, 5}) {
    for (int G : {3, 5, 20}) {
      const auto t = uniform_knots(G, k);
      std::vector<double> b(G + k);
      for (double x = -0.999; x < 1.0; x += 0.0371) {
        ref::basis(t.data(), G, k, x, b.data());
        double sum = 0;
        int nz = 0;
        for (double v : b) {
          sum += v;
          nz += v != 0.0;
        }
        CHECK(sum == doctest::Approx(1.0).epsilon(1e-12));
        CHECK(nz <= k + 1);
        CHECK(nz >= 1);
      }
      // outside the extended grid every basis is zero
      for (double x : {-1.0 - 2.0 * (k + 1) / G, 1.0 + 2.0 * (k + 1) / G, 50.0}) {
        ref::basis(t.data(), G, k, x, b.data());
        for (double v : b) CHECK(v == 0.0);
      }
    }
  }
}

TEST_CASE("local basis (fp32) equals the full fp64 recursion, in and outside the grid") {
  for (int k : {1, 3, 4}) {
    const int G = 7;
    const auto t = uniform_knots(G, k);
    std::vector<float> tf(t.begin(), t.end());
    std::vector<double> b(G + k), db(G + k);
    float lb[17], ldb[17];
    int first = 0;
    for (double x = -1.9; x < 1.9; x += 0.0173) {
      ref::basis_and_derivative(t.data(), G, k, static_cast<float>(x), b.data(), db.data());
      std::vector<double> got(G + k, 0.0), dgot(G + k, 0.0);
      if (local_basis(tf.data(), G, k, static_cast<float>(x), &first, lb, ldb)) {
        for (int r = 0; r <= k; ++r) {
          const int c = first + r;
          if (c >= 0 && c < G + k) {
            got[c] = lb[r];
            dgot[c] = ldb[r];
          }
        }
      }
      for (int c = 0; c < G + k; ++c) {
        CHECK(got[c] == doctest::Approx(b[c]).epsilon(1e-5).scale(1.0));
        CHECK(dgot[c] == doctest::Approx(db[c]).epsilon(1e-4).scale(10.0));
      }
    }
  }
}

TEST_CASE("basis derivative against central differences of the fp64 basis") {
  const int G = 5, k = 3;
  const auto t = uniform_knots(G, k);
  std::vector<double> b(G + k), db(G + k), bp(G + k), bm(G + k);
  const double h = 1e-6;
  for (double x = -0.95; x < 0.95; x += 0.0913) {
    ref::basis_and_derivative(t.data(), G, k, x, b.data(), db.data());
    ref::basis(t.data(), G, k, x + h, bp.data());
    ref::basis(t.data(), G, k, x - h, bm.data());
    for (int c = 0; c < G + k; ++c) CHECK(db[c] == doctest::Approx((bp[c] - bm[c]) / (2 * h)).epsilon(1e-6).scale(1.0));
  }
}

TEST_CASE("layer gradients (every parameter and the input) against central finite differences in fp64") {
  // A 2-layer net so the input gradient of layer 1 is exercised too. The
  // loss is quadratic in the parameters' neighbourhood: central differences
  // with h = 1e-4 (relative to O(1) values) are accurate to ~1e-8.
  KanNet net = init_kan({3, 4, 2}, 5, 3, 11);
  // Move the weights away from their small initial values.
  std::mt19937 gen(3);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  for (auto& L : net.layers)
    for (auto* v : {&L.base_weight, &L.spline_weight, &L.spline_scaler})
      for (auto& x : *v) x = u(gen);
  const int B = 5;
  std::vector<double> X(B * 3), T(B * 2);
  for (auto& x : X) x = u(gen) * 1.8;
  for (auto& x : T) x = u(gen);
  std::vector<std::vector<double>> grads;
  ref::net_loss(net, X, T, B, &grads);
  auto refs = kan_parameter_refs(net);
  const double h = 1e-3;  // parameters are fp32: steps well above their rounding
  for (std::size_t p = 0; p < refs.size(); ++p) {
    for (std::size_t i = 0; i < refs[p].size(); i += 3) {
      const float orig = refs[p].data[i];
      refs[p].data[i] = orig + static_cast<float>(h);
      const double hp = static_cast<double>(refs[p].data[i]) - orig;
      const double lp = ref::net_loss(net, X, T, B, nullptr);
      refs[p].data[i] = orig - static_cast<float>(h);
      const double hm = orig - static_cast<double>(refs[p].data[i]);
      const double lm = ref::net_loss(net, X, T, B, nullptr);
      refs[p].data[i] = orig;
      CAPTURE(refs[p].name);
      CHECK(grads[p][i] == doctest::Approx((lp - lm) / (hp + hm)).epsilon(1e-5).scale(1e-3));
    }
  }
  // the input gradient: layer 0's dx from the reference backward
  std::vector<double> y0;
  ref::layer_forward(net.layers[0], X, B, y0);
  std::vector<double> y1;
  ref::layer_forward(net.layers[1], y0, B, y1);
  std::vector<double> dy(y1.size());
  for (std::size_t j = 0; j < y1.size(); ++j) dy[j] = 2 * (y1[j] - T[j]) / static_cast<double>(y1.size());
  ref::LayerGrad g1, g0;
  ref::layer_backward(net.layers[1], y0, B, dy, g1, true);
  ref::layer_backward(net.layers[0], X, B, g1.x, g0, true);
  for (std::size_t i = 0; i < X.size(); ++i) {
    auto Xp = X, Xm = X;
    Xp[i] += 1e-6;
    Xm[i] -= 1e-6;
    const double fd = (ref::net_loss(net, Xp, T, B, nullptr) - ref::net_loss(net, Xm, T, B, nullptr)) / 2e-6;
    CHECK(g0.x[i] == doctest::Approx(fd).epsilon(1e-5).scale(1e-3));
  }
}

TEST_CASE("fast CPU path against the fp64 reference on random shapes (odd widths, inputs outside the grid)") {
  struct Shape {
    int in, out, G, k, B;
  };
  for (const Shape s : {Shape{1, 1, 5, 3, 7}, Shape{17, 33, 5, 3, 29}, Shape{64, 1, 20, 3, 100}, Shape{5, 70, 3, 1, 13},
                        Shape{23, 19, 8, 4, 31}}) {
    CAPTURE(s.in);
    CAPTURE(s.out);
    KanNet net = init_kan({s.in, s.out}, s.G, s.k, 5);
    KanLayer& L = net.layers[0];
    std::mt19937 gen(s.in * 100 + s.out);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    for (auto* v : {&L.base_weight, &L.spline_weight, &L.spline_scaler})
      for (auto& x : *v) x = u(gen);
    std::vector<float> x(static_cast<std::size_t>(s.B) * s.in), dy(static_cast<std::size_t>(s.B) * s.out);
    for (auto& v : x) v = 1.6f * u(gen);  // ~40% outside [-1, 1], some outside the extended grid
    if (s.in == 23) {
      // a non-uniform grid (as after a grid update): the division path
      for (int i = 0; i < L.in; ++i)
        for (int j = 1; j < L.knots(); ++j) L.grid[static_cast<std::size_t>(i) * L.knots() + j] += 0.03f * j * j / L.knots();
    }
    for (auto& v : dy) v = u(gen);
    std::vector<double> xd(x.begin(), x.end()), dyd(dy.begin(), dy.end()), yref;
    ref::layer_forward(L, xd, s.B, yref);
    ref::LayerGrad g;
    ref::layer_backward(L, xd, s.B, dyd, g, true);
    LayerWork w;
    BackwardScratch scratch;
    std::vector<float> y(static_cast<std::size_t>(s.B) * s.out);
    layer_forward_cpu(L, x.data(), s.B, y.data(), w);
    std::vector<float> db(L.base_weight.size()), ds(L.spline_weight.size()), dsc(L.spline_scaler.size()), dx(x.size());
    layer_backward_cpu(L, x.data(), s.B, dy.data(), w, scratch, db.data(), ds.data(), dsc.data(), dx.data());
    // fp32 sums of up to B*C terms: relative error ~1e-6; 1e-5 (1e-4 for dx,
    // which adds two such sums) leaves room.
    CHECK(max_rel_err(y, yref) < 1e-5);
    CHECK(max_rel_err(db, g.base_weight) < 1e-5);
    CHECK(max_rel_err(ds, g.spline_weight) < 1e-5);
    CHECK(max_rel_err(dsc, g.spline_scaler) < 1e-5);
    CHECK(max_rel_err(dx, g.x) < 1e-4);
  }
}

TEST_CASE("efficient-kan's initialisation: bounds, grid, and spline weights fitting small noise") {
  KanNet net = init_kan({8, 16}, 5, 3, 1);
  const KanLayer& L = net.layers[0];
  const double bound = 1 / std::sqrt(8.0);
  for (float v : L.base_weight) CHECK(std::fabs(v) <= bound);
  for (float v : L.spline_scaler) CHECK(std::fabs(v) <= bound);
  CHECK(L.grid[0] == doctest::Approx(-1 - 3 * 0.4));  // t_0 = a - k h, h = 2/5
  CHECK(L.grid[11] == doctest::Approx(1 + 3 * 0.4));
  // the spline at the interior knots reproduces noise of size <= 0.1/G/2 = 0.01
  for (float v : L.spline_weight) CHECK(std::fabs(v) < 0.2);
  CHECK(net.parameter_count() == kan_parameter_count(KanShape{{8, 16}, 5, 3}));
}

TEST_CASE("Adam matches PyTorch's update computed by hand") {
  // one parameter, g = 0.5 twice, lr 0.1: step 1: m = 0.05, v = 0.00025,
  // m_hat = 0.5, v_hat = 0.25 -> p -= 0.1 * 0.5 / (0.5 + 1e-8)
  Adam a;
  a.lr = 0.1;
  a.init({1});
  float p = 1.0f;
  const float g = 0.5f;
  a.update({&p}, {&g});
  CHECK(p == doctest::Approx(1.0 - 0.1 * 0.5 / (0.5 + 1e-8)).epsilon(1e-6));
  // step 2: m = 0.095, v = 0.00049975; m_hat = 0.095/0.19 = 0.5, v_hat = 0.00049975/0.001999 = 0.25
  a.update({&p}, {&g});
  CHECK(p == doctest::Approx(0.9 - 0.1).epsilon(1e-6));
}

TEST_CASE("sharding like DistributedSampler: disjoint, padded, deterministic") {
  const auto a0 = shard_indices(10, 3, 0, 5, 0), a1 = shard_indices(10, 3, 1, 5, 0), a2 = shard_indices(10, 3, 2, 5, 0);
  CHECK(a0.size() == 4);  // ceil(10/3), padded to 12 by wrapping
  std::vector<int> seen(10, 0);
  for (const auto* s : {&a0, &a1, &a2})
    for (auto i : *s) ++seen[static_cast<std::size_t>(i)];
  for (int c : seen) CHECK(c >= 1);  // every sample, two of them twice
  CHECK(shard_indices(10, 3, 0, 5, 0) == a0);
  CHECK(shard_indices(10, 3, 0, 5, 1) != a0);  // a new permutation each epoch
  // one rank with batch 2b sees what two ranks with batch b see together
  const auto one = shard_indices(8, 1, 0, 9, 0), r0 = shard_indices(8, 2, 0, 9, 0), r1 = shard_indices(8, 2, 1, 9, 0);
  for (std::size_t i = 0; i < 4; ++i) {
    CHECK(r0[i] == one[2 * i]);
    CHECK(r1[i] == one[2 * i + 1]);
  }
}

TEST_CASE("tasks check their widths; samples are deterministic") {
  CHECK_THROWS_WITH_AS(Dataset("pykan-exp-sin", 3, 1, 10, 1), doctest::Contains("needs widths [2"), InputError);
  const Dataset d("pykan-exp-sin", 2, 1, 10, 1);
  float x[2], y[1], x2[2], y2[1];
  d.sample(3, x, y);
  d.sample(3, x2, y2);
  CHECK(x[0] == x2[0]);
  CHECK(y[0] == doctest::Approx(std::exp(std::sin(M_PI * x[0]) + x[1] * x[1])));
  const Dataset t("teacher", 7, 3, 10, 1);
  float xt[7], yt[3];
  t.sample(0, xt, yt);
  for (float v : yt) CHECK(std::fabs(v) <= 1.0f);
}

TEST_CASE("a held dataset serves its own samples by index") {
  // 3 samples of widths 2 -> 1: sample i is x = (10i, 10i+1), y = 100i
  const Dataset d = Dataset::held(2, 1, {0, 1, 10, 11, 20, 21}, {0, 100, 200});
  CHECK(d.size() == 3);
  float x[2], y[1];
  d.sample(2, x, y);
  CHECK(x[0] == 20.f);
  CHECK(x[1] == 21.f);
  CHECK(y[0] == 200.f);
  CHECK_THROWS(Dataset::held(2, 1, {0, 1, 10}, {0, 100}));  // a sample cut short
  CHECK_THROWS(Dataset::held(2, 1, {0, 1, 10, 11}, {0}));   // one target for two samples
}

TEST_CASE("safetensors: round trip, and truncated or corrupted files fail with a clear error") {
  StFile f;
  f.tensors["a"] = StTensor{{2, 3}, {1, 2, 3, 4, 5, 6}};
  f.tensors["b.c"] = StTensor{{1}, {7}};
  f.metadata["format"] = "pt";
  const std::string bytes = safetensors_bytes(f);
  CHECK((bytes.size() - 8 - 6 * 4 - 4) % 8 == 0);  // header padded to 8 bytes
  const std::string path = "/tmp/kanscale-unit-st.safetensors";
  std::ofstream(path, std::ios::binary) << bytes;
  const StFile g = read_safetensors(path);
  CHECK(g.tensors.at("a").data == f.tensors.at("a").data);
  CHECK(g.tensors.at("a").shape == std::vector<std::int64_t>{2, 3});
  CHECK(g.metadata.at("format") == "pt");
  std::ofstream(path, std::ios::binary) << bytes.substr(0, bytes.size() - 4);
  CHECK_THROWS_WITH_AS(read_safetensors(path), doctest::Contains("outside the data (truncated?)"), InputError);
  std::ofstream(path, std::ios::binary) << bytes.substr(0, 20);
  CHECK_THROWS_WITH_AS(read_safetensors(path), doctest::Contains("runs past the end"), InputError);
  std::string junk = bytes;
  junk[8] = '!';  // the header's opening brace
  std::ofstream(path, std::ios::binary) << junk;
  CHECK_THROWS_WITH_AS(read_safetensors(path), doctest::Contains("not JSON"), InputError);
  std::remove(path.c_str());
}
