"""efficient-kan's KANLinear and KAN, written from the formulas in
shared/reference/kan.md (efficient-kan's kan.py is the model users run; this
module follows its parameters, their order and its op sequence, and is not a
copy of its code). It is the one home of the layer for kanscale's PyTorch
side: bench/pytorch_efficient_kan.py and the DDP entry point both import it.

What matters for kanscale is that the ops torch runs per iteration are the
ones efficient-kan runs: the Cox-de Boor recursion on (B, in, G+2k) tensors
(two comparisons, an and, a cast, then per degree two subtractions, two
divisions, two multiplications and an add), SiLU and F.linear for the base
branch, the scaled spline weight and F.linear for the spline branch.
kanscale's model of that op list (model/kan_model.cpp,
efficient_kan_iteration) is checked against torch.profiler traces of this
module (tests/unit_torch_trace.cpp).
"""
import math

import torch
import torch.nn.functional as F


def b_splines(x, grid, k):
    """Bases of every input: x (B, in), grid (in, G+2k+1) -> (B, in, G+k).

    Degree 0 is the half-open indicator [t_j <= x < t_j+1]; each degree p
    mixes neighbours with the weights (x - t_j)/(t_j+p - t_j) and
    (t_j+p+1 - x)/(t_j+p+1 - t_j+1)."""
    x = x.unsqueeze(-1)
    bases = ((x >= grid[:, :-1]) & (x < grid[:, 1:])).to(x.dtype)
    for p in range(1, k + 1):
        lo = (x - grid[:, :-(p + 1)]) / (grid[:, p:-1] - grid[:, :-(p + 1)]) * bases[:, :, :-1]
        hi = (grid[:, p + 1:] - x) / (grid[:, p + 1:] - grid[:, 1:(-p)]) * bases[:, :, 1:]
        bases = lo + hi
    return bases.contiguous()


class KANLinear(torch.nn.Module):
    """One KAN layer in -> out: y = SiLU(x) W_b^T + B(x) (W_s * S)^T.

    Parameters in efficient-kan's order: base_weight (out, in),
    spline_weight (out, in, G+k), spline_scaler (out, in); the knots are the
    buffer `grid` (in, G+2k+1), uniform on grid_range extended by k cells on
    each side."""

    def __init__(self, in_features, out_features, grid_size=5, spline_order=3, scale_noise=0.1, scale_base=1.0,
                 scale_spline=1.0, grid_range=(-1.0, 1.0)):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.grid_size, self.spline_order = grid_size, spline_order
        h = (grid_range[1] - grid_range[0]) / grid_size
        knots = torch.arange(-spline_order, grid_size + spline_order + 1, dtype=torch.float32) * h + grid_range[0]
        self.register_buffer("grid", knots.expand(in_features, -1).contiguous())
        self.base_weight = torch.nn.Parameter(torch.empty(out_features, in_features))
        self.spline_weight = torch.nn.Parameter(torch.empty(out_features, in_features, grid_size + spline_order))
        self.spline_scaler = torch.nn.Parameter(torch.empty(out_features, in_features))
        self.reset_parameters(scale_noise, scale_base, scale_spline)

    def reset_parameters(self, scale_noise, scale_base, scale_spline):
        # kaiming-uniform with a = sqrt(5) * scale: U(+-scale/sqrt(in)) at scale 1
        torch.nn.init.kaiming_uniform_(self.base_weight, a=math.sqrt(5) * scale_base)
        torch.nn.init.kaiming_uniform_(self.spline_scaler, a=math.sqrt(5) * scale_spline)
        with torch.no_grad():
            # the spline weight fits small noise at the G+1 interior knots (least squares)
            g = self.grid_size
            noise = (torch.rand(g + 1, self.in_features, self.out_features) - 0.5) * scale_noise / g
            at = self.grid.T[self.spline_order:-self.spline_order]  # (G+1, in)
            self.spline_weight.copy_(self.curve_to_coeff(at, noise))

    def curve_to_coeff(self, x, y):
        """Coefficients whose splines pass closest to y (B, in, out) at x (B, in): (out, in, G+k)."""
        a = b_splines(x, self.grid, self.spline_order).transpose(0, 1)  # (in, B, G+k)
        sol = torch.linalg.lstsq(a, y.transpose(0, 1)).solution  # (in, G+k, out)
        return sol.permute(2, 0, 1).contiguous()

    @property
    def scaled_spline_weight(self):
        return self.spline_weight * self.spline_scaler.unsqueeze(-1)

    def forward(self, x):
        base = F.linear(F.silu(x), self.base_weight)
        spline = F.linear(b_splines(x, self.grid, self.spline_order).view(x.size(0), -1),
                          self.scaled_spline_weight.view(self.out_features, -1))
        return base + spline


class KAN(torch.nn.Module):
    """Layers widths[0] -> widths[1] -> ... ; parameters() yields per layer
    base_weight, spline_weight, spline_scaler (model/kan_model.hpp's order)."""

    def __init__(self, widths, grid_size=5, spline_order=3):
        super().__init__()
        self.layers = torch.nn.ModuleList(
            KANLinear(i, o, grid_size, spline_order) for i, o in zip(widths[:-1], widths[1:]))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x
