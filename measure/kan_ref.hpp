#pragma once
// The plain double-precision reference of the KAN layer, for tests: the
// full Cox-de Boor recursion over every knot interval, exactly as
// efficient-kan's b_splines computes it, and the layer's forward and
// backward written straight from the formulas.
#include <vector>

#include "kan.hpp"

namespace ks::ref {

// knots t[0 .. G+2k] (G+2k+1 values); writes the C = G+k bases at x.
void basis(const double* t, int G, int k, double x, double* out);
// Bases and their derivatives with respect to x.
void basis_and_derivative(const double* t, int G, int k, double x, double* b, double* db);

struct LayerGrad {
  std::vector<double> base_weight, spline_weight, spline_scaler, x;
};

// x: [B][in] -> y: [B][out]
void layer_forward(const KanLayer& L, const std::vector<double>& x, int B, std::vector<double>& y);
// dy: [B][out]; fills g (x only when need_dx).
void layer_backward(const KanLayer& L, const std::vector<double>& x, int B, const std::vector<double>& dy, LayerGrad& g,
                    bool need_dx);

// MSE loss (mean over B*out) of the whole net; when grads is given, fills
// one vector per parameter in definition order.
double net_loss(const KanNet& net, const std::vector<double>& X, const std::vector<double>& T, int B,
                std::vector<std::vector<double>>* grads);

}  // namespace ks::ref
