#pragma once
// The KAN model kanscale trains: exactly efficient-kan's KANLinear layers
// (shared/reference/kan.md): per-input grid, Cox-de Boor B-splines of order
// k, SiLU base branch, spline weight with a standalone spline scaler, no
// bias. Parameters are fp32 and laid out as PyTorch stores them.
#include <cstdint>
#include <string>
#include <vector>

namespace ks {

struct KanLayer {
  int in = 0, out = 0, G = 5, k = 3;
  double grid_lo = -1.0, grid_hi = 1.0;
  std::vector<float> grid;           // [in][G+2k+1]  (a buffer)
  std::vector<float> base_weight;    // [out][in]
  std::vector<float> spline_weight;  // [out][in][C]
  std::vector<float> spline_scaler;  // [out][in]
  int C() const { return G + k; }
  int knots() const { return G + 2 * k + 1; }
};

struct KanNet {
  std::vector<KanLayer> layers;
  std::vector<std::int64_t> widths() const;
  std::int64_t parameter_count() const;
};

// efficient-kan's initialisation, drawn from kanscale's seeded RNG:
// base_weight and spline_scaler ~ U(+-1/sqrt(in)) (kaiming_uniform with
// a = sqrt(5)); spline_weight = the minimum-norm least-squares coefficients
// that fit noise ~ (U(0,1) - 1/2) * 0.1 / G at the G+1 interior knots.
KanNet init_kan(const std::vector<std::int64_t>& widths, int G, int k, std::uint64_t seed);

// Fills a layer's parameters with U(-1, 1) draws from `next()` (the
// microbenchmarks' layers: random, never the initialisation's small values).
template <typename Draw>
void randomize_parameters(KanLayer& L, Draw&& next) {
  for (auto* v : {&L.base_weight, &L.spline_weight, &L.spline_scaler})
    for (auto& x : *v) x = next();
}

// A parameter or buffer by efficient-kan's state-dict name, with its shape.
struct TensorRef {
  std::string name;
  std::vector<std::int64_t> shape;
  float* data;
  std::size_t size() const;
};
// Parameters in definition order: per layer base_weight, spline_weight,
// spline_scaler (the order of model/kan_model.hpp's kan_parameters()).
std::vector<TensorRef> kan_parameter_refs(KanNet& net);
// Parameters and then the grids: the whole state dict.
std::vector<TensorRef> kan_state_refs(KanNet& net);

}  // namespace ks
