#pragma once
// Least-squares fits that carry their quality (coefficients, standard
// errors, R^2, residuals, error on held-out points). Eigen stays in here.
#include <string>
#include <vector>

namespace ks {

struct LinearFit {
  std::vector<std::string> features;  // as given; dropped ones have coef 0 and active false
  std::vector<double> coef, std_err;
  // the coefficients' covariance (sigma^2 (A'A)^-1 of the weighted problem,
  // in the coefficients' units); rows and columns of dropped features are 0
  std::vector<std::vector<double>> cov;
  std::vector<bool> active;
  double r2 = 0;                     // on the fitted points, of the relative model
  double rms_rel_residual = 0;       // on the fitted points
  double holdout_mean_abs_rel = -1;  // mean |pred - y| / y on held-out points (-1: none)
  double holdout_max_abs_rel = -1;
  int n_fit = 0, n_holdout = 0;
};

// Fits y ~ sum_j coef_j x_j minimising relative residuals (weights 1/y, as
// times span decades), with every coefficient kept non-negative (a feature
// whose coefficient comes out negative is dropped and the fit redone).
// Rows with holdout[i] true are left out of the fit and scored afterwards.
// `weights` (empty: 1 each) are frequency weights: a row of weight w counts
// as w rows would (the residual sums, the degrees of freedom, R^2 and the
// held-out mean); all 1 gives the unweighted fit exactly.
LinearFit fit_relative_nonneg(const std::vector<std::string>& features, const std::vector<std::vector<double>>& X,
                              const std::vector<double>& y, const std::vector<bool>& holdout,
                              const std::vector<double>& weights = {});

double predict(const LinearFit& f, const std::vector<double>& x);

}  // namespace ks
