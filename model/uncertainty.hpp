#pragma once
// Draws of a fitted calibration from its fits' uncertainty: every term whose
// fit recorded the coefficients' covariance (compute ops, MPI all-reduce
// regimes, the MPI broadcast) gets coefficients drawn from a normal with
// that covariance around the fitted values, clipped at 0 (a negative time
// per unit is no term). The interval engine (sim/interval) replays with
// such draws; run-to-run jitter comes from the replay's own seed.
#include <cstdint>
#include <vector>

#include "config.hpp"
#include "rng.hpp"

namespace ks {

// Whether any fitted term carries a covariance to draw from (the model
// error, the drift and the jitter are has_measured_uncertainty's too).
bool has_parameter_uncertainty(const Calibration& cal);

// Draw number `draw` (reproducible: a function of the rng's seed and
// `draw`); the draw numbered 0 is a draw too, not the fitted calibration.
Calibration draw_calibration(const Calibration& fitted, const Rng& rng, std::uint64_t draw);

// x ~ N(mean, cov) from standard normals z (as many as mean has): mean + L z
// with L L' = cov, L from the eigen-decomposition (negative eigenvalues of a
// rounded matrix count as 0).
std::vector<double> correlated_normal(const std::vector<double>& mean, const std::vector<std::vector<double>>& cov,
                                      const std::vector<double>& z);

}  // namespace ks
