#include "uncertainty.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <stdexcept>

namespace ks {

bool has_parameter_uncertainty(const Calibration& cal) {
  for (const auto* table : {&cal.ops, &cal.ops_cold})
    for (const auto& [name, c] : *table)
      if (!c.cov.empty()) return true;
  for (const auto& r : cal.mpi_regimes)
    if (!r.cov.empty()) return true;
  for (const auto* table : {&cal.torch_ops, &cal.torch_device_ops})
    for (const auto& [name, c] : *table)
      if (!c.cov.empty()) return true;
  for (const auto* g : {&cal.gloo_allreduce, &cal.gloo_broadcast})
    if (*g && !(*g)->cov.empty()) return true;
  return cal.mpi_broadcast && !cal.mpi_broadcast->cov.empty();
}

std::vector<double> correlated_normal(const std::vector<double>& mean, const std::vector<std::vector<double>>& cov,
                                      const std::vector<double>& z) {
  const std::size_t n = mean.size();
  if (cov.size() != n || z.size() != n) throw std::invalid_argument("correlated_normal: sizes differ");
  Eigen::MatrixXd C(n, n);
  for (std::size_t i = 0; i < n; ++i) {
    if (cov[i].size() != n) throw std::invalid_argument("correlated_normal: covariance is not square");
    for (std::size_t j = 0; j < n; ++j) C(i, j) = 0.5 * (cov[i][j] + cov[j][i]);
  }
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(C);
  const Eigen::VectorXd root = es.eigenvalues().cwiseMax(0.0).cwiseSqrt();
  Eigen::VectorXd zz(n);
  for (std::size_t i = 0; i < n; ++i) zz(i) = z[i];
  const Eigen::VectorXd x = es.eigenvectors() * root.asDiagonal() * zz;
  std::vector<double> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = mean[i] + x(i);
  return out;
}

Calibration draw_calibration(const Calibration& fitted, const Rng& rng, std::uint64_t draw) {
  Calibration cal = fitted;
  std::uint64_t term = 0;  // each term its own stream of normals, in a fixed order
  auto normals = [&](std::size_t n) {
    std::vector<double> z(n);
    for (std::size_t i = 0; i < n; ++i) z[i] = rng.normal(0x1000 + term, draw * 16 + i);
    ++term;
    return z;
  };
  for (auto* table : {&cal.ops, &cal.ops_cold}) {
    for (auto& [name, c] : *table) {
      if (c.cov.empty()) {
        ++term;
        continue;
      }
      const bool layer = name == "kan_forward" || name == "kan_backward";
      const std::vector<double> mean = op_coefficients(c, layer);
      set_op_coefficients(c, layer, correlated_normal(mean, c.cov, normals(mean.size())), true);
    }
  }
  for (auto& r : cal.mpi_regimes) {
    if (r.cov.empty() || !r.latency_s) {
      ++term;
      continue;
    }
    const std::vector<double> mean = alpha_beta_coefficients(r.latency_s, r.bandwidth_Bps);
    set_alpha_beta(r.latency_s, r.bandwidth_Bps, correlated_normal(mean, r.cov, normals(2)));
  }
  // an alpha-beta term with a covariance, drawn (a term of its own in the stream order either way)
  auto draw_term = [&](std::optional<AlphaBetaTerm>& t) {
    if (!t || t->cov.empty()) {
      ++term;
      return;
    }
    std::optional<double> latency = t->latency_s;
    set_alpha_beta(latency, t->bandwidth_Bps, correlated_normal(alpha_beta_coefficients(latency, t->bandwidth_Bps), t->cov, normals(2)));
    t->latency_s = latency.value_or(0.0);
  };
  if (cal.mpi_broadcast && !cal.mpi_broadcast->cov.empty()) draw_term(cal.mpi_broadcast);  // (no stream taken without one, as ever)
  // PyTorch's op classes: each class's (fixed, per element) from its covariance
  auto draw_torch = [&](std::map<std::string, TorchOpCost>& table) {
    for (auto& [name, c] : table) {
      if (c.cov.empty()) {
        ++term;
        continue;
      }
      const auto x = correlated_normal({c.fixed_s, c.element_s}, c.cov, normals(2));
      c.fixed_s = x[0];
      c.element_s = x[1];
    }
  };
  draw_torch(cal.torch_ops);
  draw_term(cal.gloo_allreduce);
  draw_term(cal.gloo_broadcast);
  // a GPU job's traced device terms (after the others: their streams stay as they were)
  draw_torch(cal.torch_device_ops);
  // the model error the live runs showed out of sample, and the run's own
  // drift: two independent factors on every compute op
  cal.compute_scale = rng.lognormal_mean_one(cal.model_error_sigma, 0x2000, draw) * rng.lognormal_mean_one(cal.drift_sigma, 0x2001, draw);
  // and on the gradient all-reduces, their own (one factor for all of them)
  cal.comm_scale = rng.lognormal_mean_one(cal.comm_error_sigma, 0x2002, draw);
  // and on the host's dispatches, the prior's (one factor for every op;
  // median one: the point is the prior's median, a geometric mean)
  cal.host_scale = rng.lognormal_median_one(cal.host_prior_sigma, 0x2003, draw);
  return cal;
}

}  // namespace ks
