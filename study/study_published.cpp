#include "study_published.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <sstream>

#include "formats/yaml_reader.hpp"
#include "infer.hpp"
#include "sim/report.hpp"

namespace ks {

namespace {

std::string pct(double fraction) { return printf_number("%.2f%%", 100 * fraction); }

// A metric of a scaling study's result, or nothing where the result cannot
// give it (a missing GPU count).
using Metric = std::function<std::optional<double>(const StudyResult&)>;

const ScalingPoint* at(const StudyResult& r, int gpus) {
  for (const auto& p : r.points)
    if (p.gpus == gpus) return &p;
  return nullptr;
}

// Weak scaling's published shape: throughput per GPU drops from 1 to 2 GPUs
// (by at least 2%), then stays within half that drop over 2..gpus (the
// inference's margin, study/infer, at least 0).
std::optional<double> weak_shape(const StudyResult& r, int gpus) {
  const std::vector<double> t = weak_series(r, gpus);
  if (t.empty()) return std::nullopt;
  return weak_shape_value(t) >= 0 ? 1.0 : 0.0;
}

// Whether the overhead over 2..gpus rises and falls (or falls and rises):
// two successive changes of opposite sign, each above kMinTurnPts.
std::optional<double> overhead_not_monotonic(const StudyResult& r, int gpus, bool exposed) {
  const std::vector<double> o = overhead_series_pct(r, gpus, exposed);
  if (o.size() < 3) return std::nullopt;
  return not_monotonic_value(o) > kMinTurnPts ? 1.0 : 0.0;
}

// The overhead's lowest or highest value over 2..gpus.
std::optional<double> overhead_extreme(const StudyResult& r, int gpus, bool exposed, bool highest) {
  std::optional<double> v;
  for (const auto& p : r.points) {
    if (p.gpus < 2 || p.gpus > gpus) continue;
    const double o = exposed ? p.overhead_exposed : p.overhead_total;
    v = !v ? o : highest ? std::max(*v, o) : std::min(*v, o);
  }
  return v;
}

// Distance along an unknown's own scale (log for factors and batches).
double scale_of(const Unknown& u, double v) { return u.log_scale() ? std::log(v) : v; }
double from_scale(const Unknown& u, double x) { return u.log_scale() ? std::exp(x) : x; }

struct Sweep {
  std::vector<double> values;
  std::vector<std::optional<double>> metric;
};

// The point prediction of scenario i at GPU counts `gpus` with unknown k at
// `value` and every other unknown at its point value.
StudyResult predict_with(const StudySpec& s, std::size_t i, std::size_t k, double value, const std::vector<int>& gpus) {
  std::vector<double> values;
  for (const auto& u : s.unknowns) values.push_back(u.nominal);
  values.at(k) = value;
  Scenario x = scenario_at(s, i, values);
  x.options.gpus = gpus;
  x.options.interval_samples = 0;
  return run_study(x.cluster_config, x.workload, x.calibration, x.options);
}

// What unknown k alone needs to reach `target` (a value, or the shape when
// `boolean`), from its point value.
UnknownNeed need_of(const StudySpec& s, std::size_t i, std::size_t k, const Metric& m, double target, bool boolean,
                    const std::vector<int>& gpus, const std::function<std::string(double)>& show) {
  const Unknown& u = s.unknowns[k];
  UnknownNeed n;
  n.key = u.key;
  Sweep sw;
  for (double v : u.grid(17)) {
    std::optional<double> y;
    try {
      y = m(predict_with(s, i, k, v, gpus));
    } catch (const InputError&) {
      // a value the scenario cannot take (a batch that does not split)
    }
    sw.values.push_back(v);
    sw.metric.push_back(y);
  }
  const double x0 = scale_of(u, u.nominal);
  std::optional<double> best;  // the reaching value nearest the point value
  auto consider = [&](double v) {
    if (!best || std::abs(scale_of(u, v) - x0) < std::abs(scale_of(u, *best) - x0)) best = v;
  };
  if (boolean) {
    for (std::size_t j = 0; j < sw.values.size(); ++j)
      if (sw.metric[j] && *sw.metric[j] > 0.5) consider(sw.values[j]);
  } else if (u.kind == Unknown::Kind::choice) {
    for (std::size_t j = 0; j < sw.values.size(); ++j)
      if (sw.metric[j] && *sw.metric[j] == target) consider(sw.values[j]);
  } else {
    for (std::size_t j = 0; j + 1 < sw.values.size(); ++j) {
      if (!sw.metric[j] || !sw.metric[j + 1]) continue;
      const double a = *sw.metric[j] - target, b = *sw.metric[j + 1] - target;
      if (a == 0) consider(sw.values[j]);
      if (b == 0) consider(sw.values[j + 1]);
      if (a * b < 0) {
        if (u.kind == Unknown::Kind::pow2) {
          // batch sizes are powers of two: the one past the crossing, seen
          // from the point value, is the first that reaches the figure
          consider(u.nominal <= sw.values[j] ? sw.values[j + 1] : sw.values[j]);
          continue;
        }
        // bisection in the unknown's scale, 12 halvings of the bracket (the
        // metric can be far from linear across it: 1 / (a + E) for a
        // per-epoch cost E)
        double xa = scale_of(u, sw.values[j]), xb = scale_of(u, sw.values[j + 1]), fa = a;
        for (int it = 0; it < 12; ++it) {
          const double xm = 0.5 * (xa + xb);
          std::optional<double> y;
          try {
            y = m(predict_with(s, i, k, from_scale(u, xm), gpus));
          } catch (const InputError&) {
          }
          if (!y) break;
          const double fm = *y - target;
          if (fm == 0) {
            xa = xb = xm;
            break;
          }
          if (fa * fm < 0) {
            xb = xm;
          } else {
            xa = xm;
            fa = fm;
          }
        }
        consider(from_scale(u, 0.5 * (xa + xb)));
      }
    }
  }
  if (best) {
    n.reached = true;
    n.lo = std::min(u.nominal, *best);
    n.hi = std::max(u.nominal, *best);
    n.text = u.kind == Unknown::Kind::choice ? u.text(*best) : "[" + u.text(n.lo) + ", " + u.text(n.hi) + "]";
    return n;
  }
  // not reached: what it gives alone
  std::string alone;
  if (u.kind == Unknown::Kind::choice || boolean) {
    for (std::size_t j = 0; j < sw.values.size(); ++j) {
      if (u.kind != Unknown::Kind::choice && j != 0 && j + 1 != sw.values.size()) continue;
      alone += (alone.empty() ? "" : ", ") + u.text(sw.values[j]) + ": " + (sw.metric[j] ? show(*sw.metric[j]) : "-");
    }
  } else {
    double lo = 1e300, hi = -1e300;
    for (const auto& y : sw.metric)
      if (y) {
        lo = std::min(lo, *y);
        hi = std::max(hi, *y);
      }
    alone = lo <= hi ? show(lo) + " to " + show(hi) : "no prediction";
  }
  n.text = "not alone (" + alone + ")";
  return n;
}

// Yes/no figures over the unknowns' samples, one run per sample for all of
// them: for each, whether all and whether any sample shows it (the point
// prediction, `points[m]`, counts as a sample).
std::vector<std::pair<double, double>> shapes_over_samples(const StudySpec& s, std::size_t i, const std::vector<int>& gpus,
                                                           const std::vector<Metric>& metrics, const std::vector<double>& points) {
  std::vector<std::pair<double, double>> all_any;
  for (double p : points) all_any.emplace_back(p, p);
  for (const auto& values : s.unknown_points) {
    Scenario x = scenario_at(s, i, values);
    x.options.gpus = gpus;
    x.options.interval_samples = 0;
    StudyResult r;
    try {
      r = run_study(x.cluster_config, x.workload, x.calibration, x.options);
    } catch (const InputError&) {
      continue;  // a value the scenario cannot take
    }
    for (std::size_t m = 0; m < metrics.size(); ++m) {
      const double v = metrics[m](r).value_or(0);
      all_any[m].first = std::min(all_any[m].first, v);
      all_any[m].second = std::max(all_any[m].second, v);
    }
  }
  return all_any;
}

std::string yes_no(double v) { return v > 0.5 ? "yes" : "no"; }

}  // namespace

std::vector<FigureCheck> check_published(const StudySpec& s, const std::vector<StudyResult>& results) {
  std::vector<FigureCheck> out;
  if (!s.published.given) return out;
  const PublishedFigures& pub = s.published;
  const int g = pub.gpus;
  std::vector<int> gpus;
  for (int n : s.gpus)
    if (n <= g) gpus.push_back(n);
  std::sort(gpus.begin(), gpus.end());
  for (std::size_t i = 0; i < results.size() && i < s.scenarios.size(); ++i) {
    const Scenario& sc = s.scenarios[i];
    const StudyResult& r = results[i];
    const bool weak = sc.options.scaling == Scaling::weak;
    const ScalingPoint* top = at(r, g);
    if (!top) continue;
    auto add = [&](const std::string& figure, const std::string& published, const std::string& predicted, double band_lo,
                   double band_hi, bool inside, double point, const Metric& m, double target, bool boolean,
                   const std::function<std::string(double)>& show) {
      FigureCheck f;
      f.figure = figure;
      f.scenario = sc.label;
      f.published = published;
      f.predicted = predicted;
      f.band = boolean ? (band_hi > 0.5 ? (band_lo > 0.5 ? "always" : "in some samples") : "in no sample")
                       : "[" + show(band_lo) + ", " + show(band_hi) + "]";
      f.inside = inside;
      f.published_value = target;
      f.prediction_value = point;
      f.band_lo = band_lo;
      f.band_hi = band_hi;
      f.half_width = boolean || point == 0 ? 0 : (band_hi - band_lo) / 2 / std::abs(point);
      if (!s.unknowns.empty())
        for (std::size_t k = 0; k < s.unknowns.size(); ++k) f.needs.push_back(need_of(s, i, k, m, target, boolean, gpus, show));
      out.push_back(std::move(f));
    };
    auto band_or_point = [&](const ScalingPoint& p, double v, const Band ScalingPoint::ScenarioBands::*member,
                             const std::optional<Band>& calibration) {
      if (p.scenario) return (*p.scenario).*member;
      if (calibration) return *calibration;
      return Band{v, v};
    };
    if (!weak) {
      const Band sp = band_or_point(*top, top->speedup, &ScalingPoint::ScenarioBands::speedup, top->speedup_band);
      const Metric speedup = [g](const StudyResult& x) -> std::optional<double> {
        const ScalingPoint* p = at(x, g);
        return p ? std::optional<double>(p->speedup) : std::nullopt;
      };
      auto times = [](double v) { return printf_number("%.2fx", v); };
      if (pub.speedup)
        add("speedup at " + std::to_string(g) + " GPUs", printf_number("%.2fx", *pub.speedup), times(top->speedup), sp.lo, sp.hi,
            sp.lo <= *pub.speedup + pub.speedup_tol && *pub.speedup - pub.speedup_tol <= sp.hi, top->speedup, speedup, *pub.speedup,
            false, times);
      if (pub.efficiency) {
        const Metric eff = [g](const StudyResult& x) -> std::optional<double> {
          const ScalingPoint* p = at(x, g);
          return p ? std::optional<double>(p->efficiency) : std::nullopt;
        };
        add("parallel efficiency at " + std::to_string(g) + " GPUs", pct(*pub.efficiency), pct(top->efficiency), sp.lo / g, sp.hi / g,
            sp.lo / g <= *pub.efficiency + pub.efficiency_tol && *pub.efficiency - pub.efficiency_tol <= sp.hi / g, top->efficiency, eff,
            *pub.efficiency, false, pct);
      }
      if (pub.overhead) {
        // whether the overhead rises and falls: exposed and total from one
        // pass over the samples
        auto wiggle_of = [g](bool exposed) -> Metric {
          return [g, exposed](const StudyResult& x) { return overhead_not_monotonic(x, g, exposed); };
        };
        const std::vector<double> wiggle_points = {overhead_not_monotonic(r, g, true).value_or(0),
                                                   overhead_not_monotonic(r, g, false).value_or(0)};
        const auto wiggle_bands = shapes_over_samples(s, i, gpus, {wiggle_of(true), wiggle_of(false)}, wiggle_points);
        for (bool exposed : {true, false}) {
          const auto member = exposed ? &ScalingPoint::ScenarioBands::overhead_exposed : &ScalingPoint::ScenarioBands::overhead_total;
          // the extreme over N of each band's ends bounds the extreme's band
          double min_lo = 1e300, min_hi = 1e300, max_lo = -1e300, max_hi = -1e300;
          std::string seq;
          for (const auto& p : r.points) {
            if (p.gpus < 2 || p.gpus > g) continue;
            const double v = exposed ? p.overhead_exposed : p.overhead_total;
            const Band b = p.scenario ? (*p.scenario).*member : Band{v, v};
            min_lo = std::min(min_lo, b.lo);
            min_hi = std::min(min_hi, b.hi);
            max_lo = std::max(max_lo, b.lo);
            max_hi = std::max(max_hi, b.hi);
            seq += (seq.empty() ? "" : ", ") + std::to_string(p.gpus) + ": " + pct(v);
          }
          if (seq.empty()) continue;
          const std::string kind = exposed ? "exposed" : "total";
          const double lo_pub = pub.overhead->first, hi_pub = pub.overhead->second;
          const double pmin = *overhead_extreme(r, g, exposed, false), pmax = *overhead_extreme(r, g, exposed, true);
          const Metric mmin = [g, exposed](const StudyResult& x) { return overhead_extreme(x, g, exposed, false); };
          const Metric mmax = [g, exposed](const StudyResult& x) { return overhead_extreme(x, g, exposed, true); };
          add("lowest " + kind + " communication overhead over 2-" + std::to_string(g) + " GPUs", pct(lo_pub), pct(pmin) + " (" + seq + ")",
              min_lo, min_hi, min_lo <= lo_pub + pub.overhead_tol && lo_pub - pub.overhead_tol <= min_hi, pmin, mmin, lo_pub, false, pct);
          add("highest " + kind + " communication overhead over 2-" + std::to_string(g) + " GPUs", pct(hi_pub), pct(pmax), max_lo,
              max_hi, max_lo <= hi_pub + pub.overhead_tol && hi_pub - pub.overhead_tol <= max_hi, pmax, mmax, hi_pub, false, pct);
          const Metric wiggle = wiggle_of(exposed);
          const double wp = wiggle_points[exposed ? 0 : 1];
          const auto [all, any] = wiggle_bands[exposed ? 0 : 1];
          add(kind + " communication overhead not monotonic in the GPU count (2-" + std::to_string(g) + ")", "not monotonic",
              yes_no(wp), all, any, any > 0.5, wp, wiggle, 1, true, yes_no);
        }
      }
    } else if (pub.weak_drop_then_plateau) {
      const Metric shape = [g](const StudyResult& x) { return weak_shape(x, g); };
      const double point = weak_shape(r, g).value_or(0);
      const auto [all, any] = shapes_over_samples(s, i, gpus, {shape}, {point}).front();
      std::string per_gpu;
      for (const auto& p : r.points)
        if (p.gpus <= g) per_gpu += (per_gpu.empty() ? "" : ", ") + std::to_string(p.gpus) + ": " + printf_number("%.0f", epoch_throughput_per_gpu(p));
      add("weak scaling: samples/s per GPU over an epoch drop from 1 to 2 GPUs (>= 2%), then stay within half that drop",
          "drop, then plateau", yes_no(point) + " (" + per_gpu + ")", all, any, any > 0.5, point, shape, 1, true, yes_no);
    }
  }
  return out;
}

std::string published_markdown(const StudySpec& s, const std::vector<FigureCheck>& checks) {
  std::ostringstream md;
  md << "\n## Published figures\n\nSource: " << s.published.source
     << ". Each figure against the scenario band (the envelope over the unknowns' ranges" << (s.unknowns.empty() ? ": none given" : "")
     << "). A figure is inside when the band comes within half a unit of its last published digit. The half-width is the band's "
        "shown, relative to the point prediction (for speedup and efficiency the band at " << s.published.gpus
     << " GPUs; for the overhead's lowest and highest values the band of that extreme over 2-" << s.published.gpus
     << " GPUs), so a band wide enough to cover anything shows as such. \"Needs\": for each unknown alone (the others at their "
        "point values), the narrowest range from its point value that reaches the figure (bisected for times and factors; for "
        "batch sizes, the first power of two past it).\n\n";
  md << "| figure | scenario | published | prediction | band | inside | half-width |";
  for (const auto& u : s.unknowns) md << " needs " << u.key << " |";
  md << "\n|---|---|---|---|---|---|---|";
  for (std::size_t k = 0; k < s.unknowns.size(); ++k) md << "---|";
  md << "\n";
  for (const auto& c : checks) {
    md << "| " << c.figure << " | " << c.scenario << " | " << c.published << " | " << c.predicted << " | " << c.band << " | "
       << (c.inside ? "yes" : "**no**") << " | " << (c.half_width > 0 ? pct(c.half_width) : "-") << " |";
    for (const auto& n : c.needs) md << " " << n.text << " |";
    md << "\n";
  }
  return md.str();
}

nlohmann::json published_json(const std::vector<FigureCheck>& checks) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& c : checks) {
    nlohmann::json needs = nlohmann::json::array();
    for (const auto& n : c.needs)
      needs.push_back({{"unknown", n.key}, {"reached", n.reached}, {"lo", n.reached ? nlohmann::json(n.lo) : nlohmann::json(nullptr)},
                       {"hi", n.reached ? nlohmann::json(n.hi) : nlohmann::json(nullptr)}, {"text", n.text}});
    a.push_back({{"figure", c.figure}, {"scenario", c.scenario}, {"published", c.published}, {"prediction", c.predicted},
                 {"band", c.band}, {"inside", c.inside}, {"band_half_width_relative", c.half_width}, {"needs", needs},
                 {"published_value", c.published_value}, {"prediction_value", c.prediction_value}, {"band_lo", c.band_lo},
                 {"band_hi", c.band_hi}});
  }
  return a;
}

}  // namespace ks
