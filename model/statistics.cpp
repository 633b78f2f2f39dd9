#include "statistics.hpp"

#include <algorithm>
#include <limits>
#include <cmath>

#include <boost/math/distributions/normal.hpp>

namespace ks {

namespace {
// On sorted values.
double median_sorted(const std::vector<double>& s) {
  const std::size_t n = s.size();
  if (n == 0) return 0;
  return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}
double quantile_sorted(const std::vector<double>& s, double q) {
  if (s.empty()) return 0;
  const double rank = std::ceil(std::clamp(q, 0.0, 1.0) * static_cast<double>(s.size()));
  const std::size_t idx = rank < 1 ? 0 : static_cast<std::size_t>(rank) - 1;
  return s[std::min(idx, s.size() - 1)];
}
}  // namespace

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return median_sorted(v);
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return quantile_sorted(v, q);
}

bool median_ci(std::vector<double> v, double level, double& lo, double& hi) {
  const std::size_t n = v.size();
  const double alpha = (1.0 - level) / 2.0;
  // cdf: P(Binomial(n, 1/2) <= j - 1), its terms C(n, i) / 2^n in logs (n may be large)
  double cdf = 0;
  std::size_t j = 0;
  while (j < n / 2) {
    const double term = std::exp(std::lgamma(static_cast<double>(n) + 1) - std::lgamma(static_cast<double>(j) + 1) -
                                 std::lgamma(static_cast<double>(n - j) + 1) - static_cast<double>(n) * std::log(2.0));
    if (cdf + term > alpha) break;
    cdf += term;
    ++j;
  }
  if (j == 0) return false;
  std::sort(v.begin(), v.end());
  lo = v[j - 1];
  hi = v[n - j];
  return true;
}

double median_rel_halfwidth(const std::vector<double>& v, double level) {
  double lo = 0, hi = 0;
  const double m = median(v);
  if (!median_ci(v, level, lo, hi) || !(m > 0)) return std::numeric_limits<double>::infinity();
  return (hi - lo) / 2.0 / m;
}

Stat summarize(std::vector<double> v) {
  Stat s;
  s.n = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.median = median_sorted(v);
  s.p95 = quantile_sorted(v, 0.95);
  s.iqr = quantile_sorted(v, 0.75) - quantile_sorted(v, 0.25);
  s.min = v.front();
  s.max = v.back();
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  if (v.size() >= 2 && s.mean > 0) {
    double var = 0;
    for (double x : v) var += (x - s.mean) * (x - s.mean);
    s.cv = std::sqrt(var / static_cast<double>(v.size() - 1)) / s.mean;
  }
  return s;
}

double round_drift_sigma(const std::vector<std::vector<double>>& runs_rounds_s) {
  const std::size_t rounds = runs_rounds_s.empty() ? 0 : runs_rounds_s.front().size();
  if (rounds < 2) return 0;
  std::vector<double> effect(rounds, 0.0);
  int used = 0;
  for (const auto& r : runs_rounds_s) {
    if (r.size() != rounds) continue;
    double mean = 0;
    for (double t : r) mean += std::log(t) / static_cast<double>(rounds);
    for (std::size_t k = 0; k < rounds; ++k) effect[k] += std::log(r[k]) - mean;
    ++used;
  }
  if (used == 0) return 0;
  double v = 0;
  for (double& e : effect) e /= used;  // each round's mean deviation (their mean is 0)
  for (double e : effect) v += e * e / static_cast<double>(rounds - 1);
  return std::sqrt(v);
}

double rank_spread_sigma(const std::vector<std::vector<double>>& runs_rank_medians_s) {
  double ss = 0;
  long dof = 0;
  for (const auto& run : runs_rank_medians_s) {
    if (run.size() < 2 || std::any_of(run.begin(), run.end(), [](double t) { return !(t > 0); })) continue;
    double mean = 0;
    for (double t : run) mean += std::log(t) / static_cast<double>(run.size());
    for (double t : run) ss += (std::log(t) - mean) * (std::log(t) - mean);
    dof += static_cast<long>(run.size()) - 1;
  }
  return dof > 0 ? std::sqrt(ss / static_cast<double>(dof)) : 0.0;
}

std::vector<double> rank_spread_factors(double sigma, int ranks) {
  if (!(sigma > 0) || ranks < 2) return {};
  const boost::math::normal_distribution<double> z;
  std::vector<double> f(static_cast<std::size_t>(ranks));
  for (int i = 1; i <= ranks; ++i)
    f[static_cast<std::size_t>(i - 1)] = std::exp(sigma * boost::math::quantile(z, (i - 0.375) / (ranks + 0.25)));
  return f;
}

}  // namespace ks
