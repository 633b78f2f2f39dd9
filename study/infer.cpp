#include "infer.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "model/rng.hpp"
#include "sim/report.hpp"
#include "settings.hpp"

namespace ks {

namespace {
constexpr double kNoBound = 1e300;

std::string pct_text(double v) { return printf_number("%.1f%%", v); }
}  // namespace

// ------------------------------------------------------------ the findings

double epoch_throughput_per_gpu(const ScalingPoint& p) { return static_cast<double>(p.dataset_size) / p.epoch_s / p.gpus; }

std::vector<double> weak_series(const StudyResult& r, int gpus) {
  std::vector<double> t(2, 0.0);
  bool one = false, two = false;
  for (const auto& p : r.points) {
    if (p.gpus == 1) t[0] = epoch_throughput_per_gpu(p), one = true;
    else if (p.gpus == 2) t[1] = epoch_throughput_per_gpu(p), two = true;
    else if (p.gpus > 2 && p.gpus <= gpus) t.push_back(epoch_throughput_per_gpu(p));
  }
  if (!one || !two) t.clear();
  return t;
}

std::vector<double> overhead_series_pct(const StudyResult& r, int gpus, bool exposed) {
  std::vector<double> o;
  for (const auto& p : r.points)
    if (p.gpus >= 2 && p.gpus <= gpus) o.push_back(100 * (exposed ? p.overhead_exposed : p.overhead_total));
  return o;
}

double overhead_range_value(const std::vector<double>& o, double lo, double hi) {
  if (o.empty()) return std::nan("");
  const auto [mn, mx] = std::minmax_element(o.begin(), o.end());
  // the value furthest outside [lo, hi], or the highest when all lie inside:
  // it lies in [lo, hi] exactly when every value does
  if (*mn < lo) return *mn;
  if (*mx > hi) return *mx;
  return *mx;
}

double not_monotonic_value(const std::vector<double>& o) {
  // the largest, over successive triples, of the smaller of the two changes,
  // signed: positive when they have opposite signs (a rise and a fall)
  double best = -kNoBound;
  for (std::size_t i = 0; i + 2 < o.size(); ++i) {
    const double a = o[i + 1] - o[i], b = o[i + 2] - o[i + 1];
    const double m = std::min(std::abs(a), std::abs(b));
    best = std::max(best, (a * b < 0 ? m : -m) + 0.0);  // (+ 0.0: no -0, which a sum over ranks would turn into 0)
  }
  return o.size() < 3 ? std::nan("") : best;
}

double weak_shape_value(const std::vector<double>& t) {
  // throughput per GPU drops from 1 to 2 GPUs by at least 2%, then stays
  // within half that drop: the margin (points) by which both hold
  if (t.size() < 3 || !(t[0] > 0)) return std::nan("");
  const double drop = 100 * (1 - t[1] / t[0]);
  const auto [mn, mx] = std::minmax_element(t.begin() + 1, t.end());
  const double spread = 100 * (*mx / *mn - 1);
  return std::min(drop - 2, drop / 2 - spread);
}

double rising_value(const std::vector<double>& r) {
  // the smallest relative rise between successive sizes (%): positive when
  // the ratio rises at every step
  if (r.size() < 2) return std::nan("");
  double m = kNoBound;
  for (std::size_t i = 0; i + 1 < r.size(); ++i) m = std::min(m, 100 * (r[i + 1] / r[i] - 1));
  return m;
}

std::vector<Predicate> study_predicates(const PublishedFigures& pub) {
  std::vector<Predicate> p;
  const int g = pub.gpus;
  if (pub.speedup) {
    const double m = pub.speedup_match > 0 ? pub.speedup_match : pub.speedup_tol;
    p.push_back({"speedup", "speedup at " + std::to_string(g) + " GPUs", printf_number("%.2f", *pub.speedup) + " +- " + printf_number("%.2f", m),
                 *pub.speedup - m, *pub.speedup + m});
  }
  if (pub.overhead) {
    const double lo = 100 * pub.overhead->first, hi = 100 * pub.overhead->second, tol = 100 * pub.overhead_tol;
    for (const char* r : {"exposed", "total"}) {
      p.push_back({std::string("overhead_range_") + r, std::string(r) + " overhead at every GPU count of 2-" + std::to_string(g) +
                   " within the published range (value: the one furthest outside, %)",
                   "[" + pct_text(lo) + ", " + pct_text(hi) + "]", lo - tol, hi + tol});
      p.push_back({std::string("overhead_not_monotonic_") + r, std::string(r) + " overhead rises and falls over 2-" + std::to_string(g) +
                   " GPUs (value: the smaller change of the turn, points, negative when monotonic)",
                   "not monotonic", kMinTurnPts, kNoBound});
    }
  }
  if (pub.weak_drop_then_plateau)
    p.push_back({"weak_drop_then_plateau", "weak scaling: samples/s per GPU drop >= 2% from 1 to 2 GPUs, then stay within half that drop up to " +
                 std::to_string(g) + " (value: the margin, points)", "drop, then plateau", 0, kNoBound});
  if (pub.model_widths.size() >= 2)
    p.push_back({"model_size_ratio", "parameter-to-memory ratio rises over the " + std::to_string(pub.model_widths.size()) +
                 " model sizes (value: the smallest rise between sizes, %)", "rises with size", 1e-9, kNoBound});
  return p;
}

std::vector<std::pair<std::string, std::vector<bool>>> readings_of(const std::vector<Predicate>& preds) {
  std::vector<std::pair<std::string, std::vector<bool>>> out;
  for (const std::string r : {"exposed", "total"}) {
    std::vector<bool> use(preds.size());
    for (std::size_t i = 0; i < preds.size(); ++i) {
      const std::string& id = preds[i].id;
      const bool overhead = id.rfind("overhead_", 0) == 0;
      use[i] = !overhead || (id.size() > r.size() && id.compare(id.size() - r.size(), r.size(), r) == 0);
    }
    out.emplace_back(r, use);
  }
  return out;
}

// ------------------------------------------------------------ the draws

std::vector<int> predictive_gpus(const StudySpec& s) {
  std::vector<int> g;
  for (int n : s.gpus)
    if (n > 1 && n <= s.published.gpus) g.push_back(n);
  for (int n : s.infer.predict_gpus) g.push_back(n);
  std::sort(g.begin(), g.end());
  g.erase(std::unique(g.begin(), g.end()), g.end());
  return g;
}

std::vector<Unknown> scaled_unknowns(const std::vector<Unknown>& unknowns, double scale) {
  std::vector<Unknown> out = unknowns;
  if (scale == 1) return out;
  for (Unknown& u : out) {
    if (u.kind == Unknown::Kind::choice) continue;
    const bool log_scale = u.log_scale();
    const double a = log_scale ? std::log(u.lo) : u.lo, b = log_scale ? std::log(u.hi) : u.hi;
    const double c = (a + b) / 2, h = (b - a) / 2 * scale;
    double lo = log_scale ? std::exp(c - h) : c - h, hi = log_scale ? std::exp(c + h) : c + h;
    lo = std::max(lo, u.setting->lo);
    hi = std::min(hi, u.setting->hi);
    if (u.kind == Unknown::Kind::whole) {
      lo = std::floor(lo);
      hi = std::ceil(hi);
    }
    u.lo = lo;
    u.hi = hi;
  }
  return out;
}

namespace {

struct Scenarios {
  std::size_t strong = 0, weak = 0;
  bool has_strong = false, has_weak = false;
  std::vector<int> gpus;  // 1..published
};

Scenarios scenarios_of(const StudySpec& s) {
  Scenarios x;
  for (std::size_t i = 0; i < s.scenario_bases.size(); ++i) {
    const Scaling sc = s.scenario_bases[i].options.scaling;
    if (!x.has_strong && sc != Scaling::weak) x.strong = i, x.has_strong = true;
    if (!x.has_weak && sc == Scaling::weak) x.weak = i, x.has_weak = true;
  }
  for (int n : s.gpus)
    if (n <= s.published.gpus) x.gpus.push_back(n);
  std::sort(x.gpus.begin(), x.gpus.end());
  return x;
}

// Scenario i at a draw's values, replayed at `gpus` without intervals;
// `change` adjusts it before the replay (model size, node layout).
StudyResult run_at(const StudySpec& s, const std::vector<Unknown>& us, std::size_t i, const std::vector<double>& theta,
                   const std::vector<int>& gpus, const std::function<void(Scenario&)>& change = nullptr) {
  Scenario x = s.scenario_bases.at(i);
  for (std::size_t k = 0; k < us.size(); ++k) apply_unknown(x, us[k], theta[k]);
  x.options.gpus = gpus;
  x.options.interval_samples = 0;
  if (change) change(x);
  return run_study(x.cluster_config, x.workload, x.calibration, x.options);
}

// The predicates' values of one draw (ok false: the model cannot take it).
Draw simulate_draw(const StudySpec& s, const Scenarios& sc, const std::vector<Unknown>& us, const std::vector<Predicate>& preds,
                   std::vector<double> theta, bool sizes) {
  Draw d;
  d.theta = std::move(theta);
  d.values.assign(preds.size(), std::nan(""));
  try {
    std::vector<double> exposed, total, weak, ratio;
    double speedup = std::nan("");
    const int g = s.published.gpus;
    if (sc.has_strong) {
      const StudyResult r = run_at(s, us, sc.strong, d.theta, sc.gpus);
      for (const auto& p : r.points)
        if (p.gpus == g) speedup = p.speedup;
      exposed = overhead_series_pct(r, g, true);
      total = overhead_series_pct(r, g, false);
    }
    if (sc.has_weak) weak = weak_series(run_at(s, us, sc.weak, d.theta, sc.gpus), g);
    if (sc.has_strong && sizes)
      for (const auto& w : s.published.model_widths)
        ratio.push_back(run_at(s, us, sc.strong, d.theta, {1}, [&w](Scenario& x) { x.workload.widths = w; })
                            .points.at(0).memory.parameter_to_memory_ratio());
    for (std::size_t i = 0; i < preds.size(); ++i) {
      const std::string& id = preds[i].id;
      const bool ex = id.size() > 7 && id.compare(id.size() - 7, 7, "exposed") == 0;
      if (id == "speedup") d.values[i] = speedup;
      else if (id.rfind("overhead_range_", 0) == 0) d.values[i] = overhead_range_value(ex ? exposed : total, preds[i].lo, preds[i].hi);
      else if (id.rfind("overhead_not_monotonic_", 0) == 0) d.values[i] = not_monotonic_value(ex ? exposed : total);
      else if (id == "weak_drop_then_plateau") d.values[i] = weak_shape_value(weak);
      else if (id == "model_size_ratio") d.values[i] = rising_value(ratio);
    }
    d.ok = true;
  } catch (const InputError&) {
    d.ok = false;  // a batch that does not split over a GPU count, a model that does not fit
  }
  return d;
}

std::vector<std::string> predictive_names(const StudySpec& s) {
  std::vector<std::string> n;
  for (int gpn : s.infer.predict_gpus_per_node)
    for (int g : predictive_gpus(s))
      for (const char* m : {"speedup", "overhead_exposed_pct", "overhead_total_pct"})
        n.push_back(std::string(m) + "@" + std::to_string(g) + "/" + std::to_string(gpn));
  return n;
}

void add_predictive(const StudySpec& s, const Scenarios& sc, const std::vector<Unknown>& us, Draw& d) {
  std::vector<int> gpus = {1};
  for (int g : predictive_gpus(s)) gpus.push_back(g);
  for (int gpn : s.infer.predict_gpus_per_node) {
    try {
      const StudyResult r = run_at(s, us, sc.strong, d.theta, gpus, [gpn](Scenario& x) { x.options.gpus_per_node = gpn; });
      for (const auto& p : r.points) {
        if (p.gpus == 1) continue;
        d.extra.push_back(p.speedup);
        d.extra.push_back(100 * p.overhead_exposed);
        d.extra.push_back(100 * p.overhead_total);
      }
    } catch (const InputError&) {
      for (std::size_t j = 0; j < 3 * (gpus.size() - 1); ++j) d.extra.push_back(std::nan(""));
    }
  }
}

}  // namespace

namespace {

// Simulates a batch split over the ranks (draw i on rank i mod ranks); every
// rank gets every draw's values through sum_all.
std::vector<Draw> simulate_batch(const StudySpec& s, const Scenarios& sc, const InferRun& run, const std::vector<std::vector<double>>& us,
                                 int rank, int ranks, const SumAll& sum_all) {
  const std::size_t P = run.preds.size(), width = P + 1;
  std::vector<double> flat(us.size() * width, 0.0);
  std::vector<Draw> out(us.size());
  for (std::size_t i = 0; i < us.size(); ++i) {
    out[i].u = us[i];
    for (std::size_t k = 0; k < run.unknowns.size(); ++k) out[i].theta.push_back(run.unknowns[k].at(us[i][k]));
    if (static_cast<int>(i % static_cast<std::size_t>(ranks)) != rank) continue;
    const Draw d = simulate_draw(s, sc, run.unknowns, run.preds, out[i].theta, run.model_sizes);
    flat[i * width] = d.ok ? 1 : 0;
    for (std::size_t j = 0; j < P; ++j) flat[i * width + 1 + j] = d.ok ? d.values[j] : 0.0;
  }
  if (ranks > 1) flat = sum_all(flat);
  for (std::size_t i = 0; i < us.size(); ++i) {
    out[i].ok = flat[i * width] != 0;
    out[i].values.assign(flat.begin() + static_cast<std::ptrdiff_t>(i * width + 1), flat.begin() + static_cast<std::ptrdiff_t>((i + 1) * width));
    if (!out[i].ok) out[i].values.assign(P, std::nan(""));
  }
  return out;
}

// The posterior predictive of up to predict_max of the draws, split over
// the ranks like the simulations.
std::vector<Draw> predictive_of(const StudySpec& s, const Scenarios& sc, const InferRun& run, const std::vector<Draw>& posterior, int rank,
                                int ranks, const SumAll& sum_all) {
  // an even spread over the population (resampling leaves it in acceptance order)
  const std::size_t n = posterior.size(), m = std::min(n, static_cast<std::size_t>(s.infer.predict_max));
  std::vector<Draw> out;
  for (std::size_t i = 0; i < m; ++i) out.push_back(posterior[i * n / m]);
  const std::size_t E = run.extra_names.size();
  std::vector<double> flat(out.size() * E, 0.0);
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (static_cast<int>(i % static_cast<std::size_t>(ranks)) != rank) continue;
    Draw d = out[i];
    add_predictive(s, sc, run.unknowns, d);
    for (std::size_t j = 0; j < E && j < d.extra.size(); ++j) flat[i * E + j] = d.extra[j];
  }
  if (ranks > 1) flat = sum_all(flat);
  for (std::size_t i = 0; i < out.size(); ++i) out[i].extra.assign(flat.begin() + static_cast<std::ptrdiff_t>(i * E), flat.begin() + static_cast<std::ptrdiff_t>((i + 1) * E));
  return out;
}

}  // namespace

InferRun run_inference(const StudySpec& s, double range_scale, int rank, int ranks, const SumAll& sum_all,
                       const std::function<void(const std::string&)>& progress) {
  InferRun run;
  run.range_scale = range_scale;
  run.unknowns = scaled_unknowns(s.unknowns, range_scale);
  run.preds = study_predicates(s.published);
  run.extra_names = predictive_names(s);
  const Scenarios sc = scenarios_of(s);
  const SimulateBatch simulate = [&](const std::vector<std::vector<double>>& us) { return simulate_batch(s, sc, run, us, rank, ranks, sum_all); };
  // the prior: each unknown uniform on its own scale, one stream per unknown
  const Rng rng(s.infer.seed ^ 0x696e666572ULL ^ (range_scale == 1 ? 0 : 0x646f75626c6564ULL));
  std::vector<std::vector<double>> us(static_cast<std::size_t>(s.infer.samples));
  for (std::size_t j = 0; j < us.size(); ++j)
    for (std::size_t k = 0; k < run.unknowns.size(); ++k) us[j].push_back(rng.uniform(k, j));
  if (progress) progress("the prior's " + std::to_string(us.size()) + " draws");
  run.prior = simulate(us);
  run.rates = prior_rates(run.prior, run.preds);
  // the model sizes' replays only where some reading conditions on them
  run.model_sizes = false;
  for (const auto& reading : readings_of(run.preds)) {
    const std::vector<bool> inf = informative(run.rates, reading.second);
    for (std::size_t i = 0; i < inf.size(); ++i) run.model_sizes = run.model_sizes || (inf[i] && run.preds[i].id == "model_size_ratio");
  }
  SmcOptions opt;
  opt.population = static_cast<std::size_t>(s.infer.population);
  opt.budget = static_cast<std::size_t>(s.infer.budget);
  opt.batch = static_cast<std::size_t>(std::max(16, 8 * ranks));
  for (const auto& [reading, use] : readings_of(run.preds)) {
    const std::vector<bool> inf = informative(run.rates, use);
    std::vector<int> leave = {-1};
    if (range_scale == 1)
      for (std::size_t k = 0; k < inf.size(); ++k)
        if (inf[k]) leave.push_back(static_cast<int>(k));
    for (int k : leave) {
      SmcRun r;
      r.reading = reading;
      r.use = inf;
      r.left_out = k;
      if (k >= 0) r.use[static_cast<std::size_t>(k)] = false;
      opt.seed = s.infer.seed + 0x100 * run.runs.size();
      if (progress) progress(reading + (k >= 0 ? ", leaving out " + run.preds[static_cast<std::size_t>(k)].id : std::string(", every finding")));
      r.result = abc_smc(run.prior, run.preds, r.use, simulate, opt);
      run.runs.push_back(std::move(r));
    }
  }
  if (range_scale == 1 && !run.runs.empty()) {
    run.predictive = predictive_of(s, sc, run, run.runs.front().result.population, rank, ranks, sum_all);
    // the first reading without its first finding (the speedup): the band a
    // posterior calibration carries
    for (const SmcRun& r : run.runs)
      if (r.reading == run.runs.front().reading && r.left_out == 0) {
        run.without = run.preds.front().id;
        run.predictive_without = predictive_of(s, sc, run, r.result.population, rank, ranks, sum_all);
      }
  }
  return run;
}

}  // namespace ks
