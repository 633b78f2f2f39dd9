#include "fit.hpp"

#include <Eigen/Dense>
#include <cmath>
#include <stdexcept>

namespace ks {

double predict(const LinearFit& f, const std::vector<double>& x) {
  double p = 0;
  for (std::size_t j = 0; j < f.coef.size(); ++j) p += f.coef[j] * x[j];
  return p;
}

LinearFit fit_relative_nonneg(const std::vector<std::string>& features, const std::vector<std::vector<double>>& X,
                              const std::vector<double>& y, const std::vector<bool>& holdout, const std::vector<double>& weights) {
  const std::size_t p = features.size();
  if (!weights.empty() && weights.size() != y.size()) throw std::invalid_argument("fit: one weight per row");
  auto weight = [&](std::size_t i) { return weights.empty() ? 1.0 : weights[i]; };
  LinearFit f;
  f.features = features;
  f.active.assign(p, true);
  f.coef.assign(p, 0.0);
  f.std_err.assign(p, 0.0);
  f.cov.assign(p, std::vector<double>(p, 0.0));
  std::vector<std::size_t> rows;
  for (std::size_t i = 0; i < y.size(); ++i) {
    if (!(y[i] > 0)) throw std::invalid_argument("fit: times must be positive");
    if (!(weight(i) > 0)) throw std::invalid_argument("fit: weights must be positive");
    if (!holdout[i]) rows.push_back(i);
  }
  double fit_weight = 0;  // the fitted rows' total weight (their count when unweighted)
  for (std::size_t r : rows) fit_weight += weight(r);
  f.n_fit = static_cast<int>(rows.size());
  f.n_holdout = static_cast<int>(y.size() - rows.size());
  for (;;) {
    std::vector<std::size_t> cols;
    for (std::size_t j = 0; j < p; ++j)
      if (f.active[j]) cols.push_back(j);
    if (cols.empty() || rows.size() < cols.size()) throw std::invalid_argument("fit: too few points for the features");
    // scale columns for conditioning
    Eigen::MatrixXd A(rows.size(), cols.size());
    Eigen::VectorXd b(rows.size());
    std::vector<double> scale(cols.size(), 0.0);
    for (std::size_t c = 0; c < cols.size(); ++c)
      for (std::size_t r = 0; r < rows.size(); ++r) scale[c] = std::max(scale[c], std::fabs(X[rows[r]][cols[c]] / y[rows[r]]));
    for (std::size_t r = 0; r < rows.size(); ++r) {
      const double root = std::sqrt(weight(rows[r]));  // (1 when unweighted: the rows unchanged)
      const double w = root / y[rows[r]];
      for (std::size_t c = 0; c < cols.size(); ++c) A(r, c) = X[rows[r]][cols[c]] * w / (scale[c] > 0 ? scale[c] : 1.0);
      b(r) = root;  // y * w
    }
    const Eigen::VectorXd sol = A.colPivHouseholderQr().solve(b);
    // drop the most negative coefficient, if any, and refit
    int worst = -1;
    double worst_v = 0;
    for (std::size_t c = 0; c < cols.size(); ++c)
      if (sol(c) < worst_v) {
        worst_v = sol(c);
        worst = static_cast<int>(c);
      }
    if (worst >= 0 && cols.size() > 1) {
      f.active[cols[static_cast<std::size_t>(worst)]] = false;
      continue;
    }
    const Eigen::VectorXd res = A * sol - b;
    const double rss = res.squaredNorm();
    const double dof = std::max<double>(1.0, fit_weight - static_cast<double>(cols.size()));
    const double sigma2 = rss / dof;
    // (A^T A)^-1 through its eigen-decomposition: where two features are all
    // but collinear over the measured points, a plain inverse of the nearly
    // singular matrix came out with negative variances (seen once in CI);
    // directions the points cannot tell apart get no variance instead, and
    // the covariance stays symmetric and positive semi-definite
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(A.transpose() * A);
    const Eigen::VectorXd lambda = eig.eigenvalues();
    const double floor = lambda.maxCoeff() * static_cast<double>(cols.size()) * 1e-12;
    Eigen::VectorXd inv_lambda(lambda.size());
    for (Eigen::Index i = 0; i < lambda.size(); ++i) inv_lambda(i) = lambda(i) > floor ? 1.0 / lambda(i) : 0.0;
    const Eigen::MatrixXd cov = sigma2 * eig.eigenvectors() * inv_lambda.asDiagonal() * eig.eigenvectors().transpose();
    for (std::size_t c = 0; c < cols.size(); ++c) {
      const double sc = scale[c] > 0 ? scale[c] : 1.0;
      f.coef[cols[c]] = std::max(0.0, sol(c)) / sc;
      f.std_err[cols[c]] = std::sqrt(std::max(0.0, cov(c, c))) / sc;
      for (std::size_t d = 0; d < cols.size(); ++d)
        f.cov[cols[c]][cols[d]] = cov(c, d) / (sc * (scale[d] > 0 ? scale[d] : 1.0));
    }
    // R^2 of the weighted (relative) problem; b is all ones
    const double mean = 1.0;
    double tss = 0;
    for (std::size_t r = 0; r < rows.size(); ++r) tss += (b(r) - mean) * (b(r) - mean);
    // with a constant target TSS is 0: report R^2 on the raw times instead
    double ss_res = 0, ss_tot = 0, ym = 0;
    for (std::size_t r : rows) ym += weight(r) * y[r];
    ym /= fit_weight;
    for (std::size_t r : rows) {
      const double e = predict(f, X[r]) - y[r];
      ss_res += weight(r) * e * e;
      ss_tot += weight(r) * (y[r] - ym) * (y[r] - ym);
    }
    (void)tss;
    f.r2 = ss_tot > 0 ? 1.0 - ss_res / ss_tot : 1.0;
    f.rms_rel_residual = std::sqrt(rss / fit_weight);
    break;
  }
  if (f.n_holdout > 0) {
    double sum = 0, mx = 0, held = 0;
    for (std::size_t i = 0; i < y.size(); ++i) {
      if (!holdout[i]) continue;
      const double e = std::fabs(predict(f, X[i]) - y[i]) / y[i];
      sum += weight(i) * e;
      held += weight(i);
      mx = std::max(mx, e);
    }
    f.holdout_mean_abs_rel = sum / held;
    f.holdout_max_abs_rel = mx;
  }
  return f;
}

}  // namespace ks
