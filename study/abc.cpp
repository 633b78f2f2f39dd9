#include "abc.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "model/rng.hpp"
#include "model/statistics.hpp"

namespace ks {

bool holds(const Predicate& p, double value) { return std::isfinite(value) && value >= p.lo && value <= p.hi; }

std::vector<double> prior_rates(const std::vector<Draw>& draws, const std::vector<Predicate>& preds) {
  std::vector<double> rate(preds.size(), 0.0);
  std::size_t n = 0;
  for (const Draw& d : draws) {
    if (!d.ok) continue;
    ++n;
    for (std::size_t i = 0; i < preds.size(); ++i) rate[i] += holds(preds[i], d.values.at(i)) ? 1.0 : 0.0;
  }
  for (double& r : rate) r = n ? r / static_cast<double>(n) : 0.0;
  return rate;
}

std::vector<bool> informative(const std::vector<double>& rates, const std::vector<bool>& use) {
  std::vector<bool> out(rates.size(), false);
  for (std::size_t i = 0; i < rates.size(); ++i) out[i] = use.at(i) && rates[i] < kInformativeBelow;
  return out;
}

namespace {
bool satisfies_all(const Draw& d, const std::vector<Predicate>& preds, const std::vector<bool>& use, std::size_t skip) {
  if (!d.ok) return false;
  for (std::size_t i = 0; i < preds.size(); ++i)
    if (i != skip && use[i] && !holds(preds[i], d.values.at(i))) return false;
  return true;
}
constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
}  // namespace

std::vector<std::size_t> accept(const std::vector<Draw>& draws, const std::vector<Predicate>& preds, const std::vector<bool>& use) {
  std::vector<std::size_t> out;
  for (std::size_t j = 0; j < draws.size(); ++j)
    if (satisfies_all(draws[j], preds, use, kNone)) out.push_back(j);
  return out;
}

Quantiles quantiles(std::vector<double> x, double level) {
  Quantiles q;
  x.erase(std::remove_if(x.begin(), x.end(), [](double v) { return !std::isfinite(v); }), x.end());
  q.n = x.size();
  if (x.empty()) {
    q.lo = q.median = q.hi = std::nan("");
    return q;
  }
  q.lo = quantile(x, (1 - level) / 2);
  q.median = median(x);
  q.hi = quantile(x, (1 + level) / 2);
  return q;
}

LeftOut predict_left_out(const std::vector<Draw>& conditioned, const std::vector<Predicate>& preds, std::size_t k, double level) {
  LeftOut lo;
  lo.predicate = k;
  std::vector<double> v;
  std::size_t hit = 0;
  for (const Draw& d : conditioned) {
    v.push_back(d.values.at(k));
    hit += holds(preds[k], d.values[k]) ? 1 : 0;
  }
  lo.conditioned = v.size();
  lo.value = quantiles(v, level);
  lo.p_holds = v.empty() ? 0.0 : static_cast<double>(hit) / static_cast<double>(v.size());
  // the band reaches the target when the two intervals meet (a yes/no
  // finding: its band reaches 1 when it holds in more than (1 - level) / 2
  // of the draws)
  lo.inside = !v.empty() && lo.value.lo <= preds[k].hi && preds[k].lo <= lo.value.hi;
  return lo;
}

std::vector<LeftOut> leave_one_out(const std::vector<Draw>& draws, const std::vector<Predicate>& preds, const std::vector<bool>& inf,
                                   double level) {
  std::vector<LeftOut> out;
  for (std::size_t k = 0; k < preds.size(); ++k) {
    if (!inf[k]) continue;
    std::vector<Draw> conditioned;
    for (const Draw& d : draws)
      if (satisfies_all(d, preds, inf, k)) conditioned.push_back(d);
    out.push_back(predict_left_out(conditioned, preds, k, level));
  }
  return out;
}

int resisting(const std::vector<Draw>& draws, const std::vector<Predicate>& preds, const std::vector<bool>& inf) {
  if (std::none_of(inf.begin(), inf.end(), [](bool b) { return b; })) return -1;
  if (!accept(draws, preds, inf).empty()) return -1;
  int best = -1;
  std::size_t most = 0;
  for (std::size_t k = 0; k < preds.size(); ++k) {
    if (!inf[k]) continue;
    std::size_t n = 0;
    for (const Draw& d : draws) n += satisfies_all(d, preds, inf, k) ? 1 : 0;
    if (best < 0 || n > most) {
      best = static_cast<int>(k);
      most = n;
    }
  }
  return best;
}

}  // namespace ks

// ---------------------------------------------------------------- ABC-SMC

namespace ks {

std::vector<double> value_scales(const std::vector<Draw>& prior, const std::vector<Predicate>& preds) {
  std::vector<double> scales(preds.size(), 1.0);
  for (std::size_t i = 0; i < preds.size(); ++i) {
    std::vector<double> v;
    for (const Draw& d : prior)
      if (d.ok && std::isfinite(d.values.at(i))) v.push_back(d.values[i]);
    if (v.empty()) continue;
    const double m = median(v);
    for (double& x : v) x = std::abs(x - m);
    const double mad = median(v);
    if (mad > 0) scales[i] = mad;
  }
  return scales;
}

double distance(const Draw& d, const std::vector<Predicate>& preds, const std::vector<bool>& use, const std::vector<double>& scales) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (!d.ok) return kInf;
  double worst = 0;
  for (std::size_t i = 0; i < preds.size(); ++i) {
    if (!use[i]) continue;
    const double v = d.values.at(i);
    if (!std::isfinite(v)) return kInf;
    const double out = v < preds[i].lo ? preds[i].lo - v : v > preds[i].hi ? v - preds[i].hi : 0.0;
    worst = std::max(worst, out / scales[i]);
  }
  return worst;
}

namespace {

struct Population {
  std::vector<Draw> draws;
  std::vector<double> w, dist;
};

// A counter-based stream of uniforms and normals (model/rng).
struct Stream {
  Rng rng;
  std::uint64_t n = 0;
  double uniform() { return rng.uniform(1, n++); }
  double normal() { return rng.normal(2, n++); }
};

// The draw a uniform u picks by weight.
std::size_t pick(const std::vector<double>& w, double u) {
  double c = 0;
  for (std::size_t j = 0; j < w.size(); ++j) {
    c += w[j];
    if (u <= c) return j;
  }
  return w.size() - 1;
}

std::vector<double> kernel_sigmas(const Population& p) {
  const std::size_t K = p.draws.front().u.size();
  std::vector<double> sigma(K);
  for (std::size_t k = 0; k < K; ++k) {
    double mean = 0, var = 0;
    for (std::size_t j = 0; j < p.draws.size(); ++j) mean += p.w[j] * p.draws[j].u[k];
    for (std::size_t j = 0; j < p.draws.size(); ++j) var += p.w[j] * (p.draws[j].u[k] - mean) * (p.draws[j].u[k] - mean);
    sigma[k] = std::max(1e-3, std::sqrt(2 * var));
  }
  return sigma;
}

// A point near a weighted particle, inside the unit cube.
std::vector<double> propose(const Population& p, const std::vector<double>& sigma, Stream& s) {
  const Draw& from = p.draws[pick(p.w, s.uniform())];
  std::vector<double> u(from.u.size());
  for (std::size_t k = 0; k < u.size(); ++k) {
    double x = -1;
    for (int tries = 0; tries < 100 && !(x >= 0 && x <= 1); ++tries) x = from.u[k] + sigma[k] * s.normal();
    u[k] = std::clamp(x, 0.0, 1.0);
  }
  return u;
}

// prior / proposal density (the prior is uniform on the cube), up to a constant
double importance(const Population& p, const std::vector<double>& sigma, const std::vector<double>& u) {
  std::vector<double> logk(p.draws.size());
  double top = -std::numeric_limits<double>::infinity();
  for (std::size_t j = 0; j < p.draws.size(); ++j) {
    double e = 0;
    for (std::size_t k = 0; k < u.size(); ++k) {
      const double z = (u[k] - p.draws[j].u[k]) / sigma[k];
      e -= 0.5 * z * z;
    }
    logk[j] = std::log(std::max(p.w[j], 1e-300)) + e;
    top = std::max(top, logk[j]);
  }
  double sum = 0;
  for (double l : logk) sum += std::exp(l - top);
  return std::exp(-top) / sum;
}

// The next generation at tolerance eps, or an empty one when the budget
// ends first.
Population next_generation(const Population& p, double eps, const std::vector<Predicate>& preds, const std::vector<bool>& use,
                           const std::vector<double>& scales, const SimulateBatch& simulate, const SmcOptions& opt, Stream& s,
                           std::size_t& simulated) {
  const std::vector<double> sigma = kernel_sigmas(p);
  Population q;
  while (q.draws.size() < opt.population && simulated < opt.budget) {
    std::vector<std::vector<double>> batch;
    while (batch.size() < std::min(opt.batch, opt.budget - simulated)) batch.push_back(propose(p, sigma, s));
    std::vector<Draw> sims = simulate(batch);
    simulated += batch.size();
    for (std::size_t i = 0; i < sims.size() && q.draws.size() < opt.population; ++i) {
      sims[i].u = batch[i];
      const double d = distance(sims[i], preds, use, scales);
      if (!(d <= eps)) continue;
      q.w.push_back(importance(p, sigma, batch[i]));
      q.dist.push_back(d);
      q.draws.push_back(std::move(sims[i]));
    }
  }
  if (q.draws.size() < opt.population) return {};
  double total = 0;
  for (double w : q.w) total += w;
  for (double& w : q.w) w /= total;
  return q;
}

// Systematic resampling to equal weights.
std::vector<Draw> resample(const Population& p, Stream& s) {
  std::vector<Draw> out;
  const std::size_t n = p.draws.size();
  const double start = s.uniform() / static_cast<double>(n);
  double c = p.w.front();
  std::size_t j = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double target = start + static_cast<double>(i) / static_cast<double>(n);
    while (target > c && j + 1 < n) c += p.w[++j];
    out.push_back(p.draws[j]);
  }
  return out;
}

}  // namespace

SmcResult abc_smc(const std::vector<Draw>& prior, const std::vector<Predicate>& preds, const std::vector<bool>& use,
                  const SimulateBatch& simulate, const SmcOptions& opt) {
  SmcResult r;
  Stream s{Rng(opt.seed ^ 0x736d63ULL)};
  const std::vector<double> scales = value_scales(prior, preds);
  // generation 0: the population nearest the findings among the prior's draws
  std::vector<std::pair<double, std::size_t>> order;
  for (std::size_t j = 0; j < prior.size(); ++j) {
    const double d = distance(prior[j], preds, use, scales);
    if (std::isfinite(d)) order.emplace_back(d, j);
  }
  std::sort(order.begin(), order.end());
  if (order.size() < opt.population) return r;  // too few usable draws to start
  Population p;
  for (std::size_t i = 0; i < opt.population; ++i) {
    p.draws.push_back(prior[order[i].second]);
    p.dist.push_back(order[i].first);
    p.w.push_back(1.0 / static_cast<double>(opt.population));
  }
  double eps = p.dist.back();
  r.tolerances.push_back(eps);
  while (eps > 0 && r.simulated < opt.budget) {
    double next = std::min(eps, quantile(p.dist, opt.quantile));
    // (distances tied at the quantile: a tenth lower, so that it falls)
    if (next >= eps) next = quantile(p.dist, opt.quantile) > 0 ? 0.9 * eps : 0.0;
    Population q = next_generation(p, next, preds, use, scales, simulate, opt, s, r.simulated);
    if (q.draws.empty()) break;
    p = std::move(q);
    eps = next;
    r.tolerances.push_back(eps);
  }
  r.exact = eps == 0;
  r.population = resample(p, s);
  return r;
}

}  // namespace ks
