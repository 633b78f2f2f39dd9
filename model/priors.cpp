#include "priors.hpp"

#include <boost/math/distributions/students_t.hpp>

#include <cmath>
#include <map>
#include <stdexcept>

namespace ks {

double student_t_quantile(double p, int df) { return boost::math::quantile(boost::math::students_t(df), p); }

NcclPriors::Rms rms_over_machines(const std::vector<FactorSample>& samples, bool squares) {
  std::map<std::string, std::pair<double, int>> m;
  for (const auto& s : samples) {
    auto& x = m[s.system];
    const double l = std::log(s.ratio);
    x.first += squares ? l * l : l;
    ++x.second;
  }
  NcclPriors::Rms r;
  double s2 = 0;
  for (const auto& [k, x] : m) s2 += squares ? x.first / x.second : (x.first / x.second) * (x.first / x.second);
  r.machines = static_cast<int>(m.size());
  r.rms = r.machines ? std::sqrt(s2 / r.machines) : 0.0;
  return r;
}

double FactorPrior::log_half_width(double level) const {
  if (!usable() || df < 1) return 0.0;
  return student_t_quantile(0.5 + level / 2, df) * sigma * std::sqrt(1.0 + 1.0 / systems);
}

double FactorPrior::log_half_width_at_one(double level) const {
  if (!usable()) return 0.0;
  return student_t_quantile(0.5 + level / 2, systems) * rms;
}

namespace {
struct SystemLog {
  std::string cls;
  double sum = 0;
  int n = 0;
  std::vector<std::string> entries;
  double cc = 0;
  double mean() const { return sum / n; }
};
}  // namespace

FactorPrior fit_factor_prior(const std::vector<FactorSample>& samples, const std::string& cls, const std::string& leave_out) {
  // a machine in two classes (one node, several) counts in each class, and
  // once among every class's machines (whole: all its samples' mean)
  std::map<std::string, SystemLog> sys, machines;
  for (const auto& s : samples) {
    if (!(s.ratio > 0) || !std::isfinite(s.ratio)) throw std::invalid_argument("fit_factor_prior: a ratio must be positive");
    if (!leave_out.empty() && s.system == leave_out) continue;
    for (SystemLog* y : {&sys[s.cls + "#" + s.system], &machines[s.system]}) {
      y->cls = s.cls;
      y->sum += std::log(s.ratio);
      ++y->n;
      y->entries.push_back(s.entry);
      y->cc = s.cc;
    }
  }
  // per class: the systems' mean log factors
  std::map<std::string, std::vector<const SystemLog*>> by_class;
  for (const auto& [k, y] : sys) by_class[y.cls].push_back(&y);
  auto mean_of = [](const std::vector<const SystemLog*>& v) {
    double m = 0;
    for (auto* y : v) m += y->mean();
    return m / v.size();
  };
  FactorPrior p;
  std::vector<const SystemLog*> all;
  for (const auto& [k, y] : machines) all.push_back(&y);
  const auto it = by_class.find(cls);
  if (it != by_class.end() && it->second.size() >= 2) {
    p.scope = "class";
    p.median = std::exp(mean_of(it->second));
    p.systems = static_cast<int>(it->second.size());
    for (auto* y : it->second) p.from.insert(p.from.end(), y->entries.begin(), y->entries.end()), p.ccs.insert(y->cc);
    // the spread pooled within classes (each class about its own mean)
    double ss = 0;
    int df = 0;
    for (const auto& [c, v] : by_class) {
      if (v.size() < 2) continue;
      const double m = mean_of(v);
      for (auto* y : v) ss += (y->mean() - m) * (y->mean() - m);
      df += static_cast<int>(v.size()) - 1;
    }
    p.df = df;
    p.sigma = std::sqrt(ss / df);
    double s2 = 0;
    for (auto* y : it->second) s2 += y->mean() * y->mean();
    p.rms = std::sqrt(s2 / p.systems);
  } else if (all.size() >= 2) {
    p.scope = "pooled";
    const double m = mean_of(all);
    double ss = 0;
    for (auto* y : all) ss += (y->mean() - m) * (y->mean() - m);
    p.median = std::exp(m);
    p.systems = static_cast<int>(all.size());
    p.df = p.systems - 1;
    p.sigma = std::sqrt(ss / p.df);
    double s2 = 0;
    for (auto* y : all) s2 += y->mean() * y->mean();
    p.rms = std::sqrt(s2 / p.systems);
    for (auto* y : all) p.from.insert(p.from.end(), y->entries.begin(), y->entries.end()), p.ccs.insert(y->cc);
  }
  return p;
}

std::string nccl_prior_class(bool nvlink, int gpus_per_node, int nodes, const std::string& network_kind) {
  if (nodes > 1) return network_kind == "infiniband" || network_kind == "roce" ? network_kind : "";
  if (nvlink) return gpus_per_node > 2 ? "nvswitch" : "nvlink";
  return "pcie";
}

ScaledTime scale_time(double latency_s, double bandwidth_s, double lambda, double h_lambda, double eta, double h_eta) {
  ScaledTime r;
  const double lat = lambda * latency_s, bw = bandwidth_s / eta;
  r.time_s = lat + bw;
  if (r.time_s <= 0) return r;
  const double wl = lat / r.time_s, wb = bw / r.time_s;
  r.log_half_width = std::hypot(wl * h_lambda, wb * h_eta);
  return r;
}

}  // namespace ks
