// Fitting recovers known parameters from synthetic measurements.
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "model/fit.hpp"

using namespace ks;

TEST_CASE("fit recovers known parameters under 5% lognormal noise, within 4 standard errors") {
  // time = 5 us + flops / 100 GFLOP/s + bytes / 50 GB/s + elements * 20 ns
  const std::vector<double> truth = {5e-6, 1e-11, 2e-11, 2e-8};
  std::mt19937 gen(42);
  std::lognormal_distribution<double> noise(0.0, 0.05);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<std::vector<double>> X;
  std::vector<double> y;
  for (int i = 0; i < 400; ++i) {
    // features spread over decades and not collinear
    const double flops = std::pow(10.0, 5 + 4 * u(gen)), bytes = std::pow(10.0, 4 + 4 * u(gen)), el = std::pow(10.0, 2 + 3 * u(gen));
    X.push_back({1.0, flops, bytes, el});
    double t = 0;
    for (int j = 0; j < 4; ++j) t += truth[j] * X.back()[j];
    y.push_back(t * noise(gen));
  }
  std::vector<bool> hold(y.size(), false);
  for (std::size_t i = 0; i < y.size(); i += 5) hold[i] = true;
  const LinearFit f = fit_relative_nonneg({"fixed", "flop", "byte", "element"}, X, y, hold);
  for (int j = 0; j < 4; ++j) {
    CAPTURE(j);
    CHECK(f.active[j]);
    CHECK(f.std_err[j] > 0);
    // a correct estimator lands within 4 standard errors (p ~ 6e-5 to miss)
    CHECK(std::fabs(f.coef[j] - truth[j]) < 4 * f.std_err[j]);
  }
  CHECK(f.n_fit == 320);
  CHECK(f.n_holdout == 80);
  // held-out points: the model is right, so the error is the noise (~4% mean |.|)
  CHECK(f.holdout_mean_abs_rel < 0.08);
  CHECK(f.rms_rel_residual == doctest::Approx(0.05).epsilon(0.3));
}

TEST_CASE("a feature with no effect whose estimate goes negative is dropped, not kept negative") {
  // time = 2 us + bytes / 10 GB/s; the flops column is noise-correlated junk
  std::mt19937 gen(7);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::lognormal_distribution<double> noise(0.0, 0.02);
  std::vector<std::vector<double>> X;
  std::vector<double> y;
  for (int i = 0; i < 50; ++i) {
    const double bytes = std::pow(10.0, 3 + 4 * u(gen));
    const double t = (2e-6 + bytes * 1e-10) * noise(gen);
    X.push_back({1.0, bytes * (0.9 + 0.2 * u(gen)) * (t > 0 ? 1 : 1), bytes});
    y.push_back(t);
  }
  const LinearFit f = fit_relative_nonneg({"fixed", "junk", "byte"}, X, y, std::vector<bool>(y.size(), false));
  for (double c : f.coef) CHECK(c >= 0);
  CHECK(f.coef[2] + f.coef[1] == doctest::Approx(1e-10).epsilon(0.1).scale(0));
}

TEST_CASE("fit covariance: collinear features get no negative variance (the covariance stays positive semi-definite)") {
  // two features equal at every point (a shape set that cannot tell them
  // apart), times 2x with +-1% noise: (A^T A) is singular
  std::vector<std::vector<double>> X;
  std::vector<double> y;
  for (int i = 1; i <= 12; ++i) {
    X.push_back({static_cast<double>(i), static_cast<double>(i)});
    y.push_back(2.0 * i * (1 + (i % 2 ? 0.01 : -0.01)));
  }
  const auto f = ks::fit_relative_nonneg({"a", "b"}, X, y, std::vector<bool>(y.size(), false));
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(f.cov[i][i] >= 0);
    for (std::size_t j = 0; j < 2; ++j) CHECK(f.cov[i][j] == doctest::Approx(f.cov[j][i]));
  }
  // the fitted sum still gives the times (the split between a and b is not identifiable)
  CHECK(f.coef[0] + f.coef[1] == doctest::Approx(2.0).epsilon(0.02));
}

TEST_CASE("frequency weights: a row of weight 2 fits as that row twice; weights of 1 change nothing") {
  // reference: the unweighted fit of the rows with the weight-2 ones written twice
  std::mt19937 gen(7);
  std::lognormal_distribution<double> noise(0.0, 0.1);
  std::vector<std::vector<double>> X, Xr;
  std::vector<double> y, yr, w;
  std::vector<bool> hold, holdr;
  for (int i = 0; i < 30; ++i) {
    const double b = 1000.0 * (i + 1);
    X.push_back({1.0, b});
    y.push_back((3e-6 + 2e-9 * b) * noise(gen));
    w.push_back(i % 3 == 0 ? 2.0 : 1.0);
    hold.push_back(i >= 25);
    for (int k = 0; k < static_cast<int>(w.back()); ++k) {
      Xr.push_back(X.back());
      yr.push_back(y.back());
      holdr.push_back(hold.back());
    }
  }
  const LinearFit f = fit_relative_nonneg({"fixed", "byte"}, X, y, hold, w);
  const LinearFit r = fit_relative_nonneg({"fixed", "byte"}, Xr, yr, holdr);
  for (int j = 0; j < 2; ++j) {
    CHECK(f.coef[j] == doctest::Approx(r.coef[j]).epsilon(1e-9).scale(0));
    CHECK(f.std_err[j] == doctest::Approx(r.std_err[j]).epsilon(1e-9).scale(0));
  }
  CHECK(f.r2 == doctest::Approx(r.r2).epsilon(1e-9).scale(0));
  CHECK(f.rms_rel_residual == doctest::Approx(r.rms_rel_residual).epsilon(1e-9).scale(0));
  CHECK(f.holdout_mean_abs_rel == doctest::Approx(r.holdout_mean_abs_rel).epsilon(1e-9).scale(0));
  // (the weights matter here: unweighted, the coefficients differ)
  const LinearFit plain = fit_relative_nonneg({"fixed", "byte"}, X, y, hold);
  CHECK(std::fabs(plain.coef[1] / r.coef[1] - 1) > 1e-4);
  // weights of 1: the unweighted fit, bit for bit
  const LinearFit ones = fit_relative_nonneg({"fixed", "byte"}, X, y, hold, std::vector<double>(y.size(), 1.0));
  CHECK(ones.coef == plain.coef);
  CHECK(ones.std_err == plain.std_err);
  CHECK(ones.holdout_mean_abs_rel == plain.holdout_mean_abs_rel);
  CHECK_THROWS(fit_relative_nonneg({"fixed", "byte"}, X, y, hold, std::vector<double>(3, 1.0)));
}
