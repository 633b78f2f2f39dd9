#include "scenario.hpp"
#include "model/limits.hpp"
#include "formats/config_files.hpp"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <stdexcept>

#include "model/kan_model.hpp"
#include "base/plot.hpp"
#include "model/rng.hpp"
#include "sim/report.hpp"
#include "model/collectives.hpp"
#include "model/units.hpp"
#include <algorithm>
#include <sstream>
#include "formats/yaml_reader.hpp"

namespace ks {

// ---------------------------------------------------------------- unknowns
namespace {
double pow2_at_least(double v) { return std::exp2(std::ceil(std::log2(std::max(v, 1.0)) - 1e-12)); }
double pow2_at_most(double v) { return std::exp2(std::floor(std::log2(std::max(v, 1.0)) + 1e-12)); }
}  // namespace

std::string Unknown::text(double v) const {
  char buf[64];
  switch (kind) {
    case Kind::pow2:
    case Kind::whole: std::snprintf(buf, sizeof buf, "%.0f", v); return buf;
    case Kind::factor: std::snprintf(buf, sizeof buf, "%.4gx", v); return buf;
    case Kind::time: return format_time(v);
    case Kind::choice: return choices.at(static_cast<std::size_t>(v));
  }
  return "";
}

double Unknown::at(double u) const {
  u = std::clamp(u, 0.0, 1.0);
  switch (kind) {
    case Kind::pow2: {
      const double a = std::log2(pow2_at_least(lo)), b = std::log2(pow2_at_most(hi));
      return std::exp2(std::round(a + u * (b - a)));
    }
    case Kind::whole: return std::min(hi, std::floor(lo + u * (hi - lo + 1)));
    case Kind::factor: return lo * std::pow(hi / lo, u);
    case Kind::time: return lo + u * (hi - lo);
    case Kind::choice: return std::min(std::floor(u * static_cast<double>(choices.size())), static_cast<double>(choices.size() - 1));
  }
  return lo;
}

std::vector<double> Unknown::grid(int n) const {
  std::vector<double> g;
  if (kind == Kind::pow2) {
    for (double v = pow2_at_least(lo); v <= pow2_at_most(hi); v *= 2) g.push_back(v);
  } else if (kind == Kind::choice) {
    for (std::size_t i = 0; i < choices.size(); ++i) g.push_back(static_cast<double>(i));
  } else if (kind == Kind::whole && hi - lo + 1 <= std::max(n, 2)) {
    for (double v = lo; v <= hi; ++v) g.push_back(v);
  } else {
    for (int i = 0; i < n; ++i) g.push_back(at(n > 1 ? static_cast<double>(i) / (n - 1) : 0.0));
  }
  return g;
}

namespace {
CaseRef case_of(Scenario& sc) { return CaseRef{sc.cluster_config, sc.calibration, sc.workload, sc.options}; }
}  // namespace

void apply_unknown(Scenario& sc, const Unknown& u, double v) {
  CaseRef c = case_of(sc);
  SettingValue value;
  value.number = v;
  if (u.kind == Unknown::Kind::choice) {
    // a choice unknown's value indexes its own list; the setting's index is
    // that choice's place among the setting's choices
    const auto& all = u.setting->choices;
    value.text = u.choices.at(static_cast<std::size_t>(v));
    value.number = static_cast<double>(std::find(all.begin(), all.end(), value.text) - all.begin());
  }
  u.setting->apply(c, value);
}

Scenario scenario_at(const StudySpec& s, std::size_t i, const std::vector<double>& values) {
  Scenario x = s.scenario_bases.at(i);
  for (std::size_t k = 0; k < s.unknowns.size(); ++k) apply_unknown(x, s.unknowns[k], values.at(k));
  return x;
}

namespace {

// unknowns: {samples: N, KEY: [lo, hi] | {range: [lo, hi], nominal: v}, batch_mode: [per_gpu, global]}
// (the keys: settings() with kUnknown)
Unknown read_unknown(YamlMap& um, const Setting& st, const StudySpec& s) {
  const std::string key = st.key;
  Unknown u;
  u.setting = &st;
  u.key = key;
  std::vector<std::string> range;
  std::optional<std::string> nominal;
  if (um.has_map(key)) {
    YamlMap long_form = um.map(key);
    range = long_form.string_list("range");
    nominal = long_form.string_opt("nominal");
    long_form.finish();
  } else {
    range = um.string_list(key);
  }
  auto bad = [&](const std::string& what) { um.fail(key, what); };
  auto value = [&](const std::string& t) -> double {
    try {
      return parse_setting(st, t).number;
    } catch (const InputError& e) {
      um.fail(key, "\"" + t + "\": " + e.what());
    }
  };
  if (st.kind == SettingKind::choice) {
    u.kind = Unknown::Kind::choice;
    for (const auto& c : range) {
      value(c);
      if (std::find(u.choices.begin(), u.choices.end(), c) != u.choices.end()) bad("\"" + c + "\" is given twice");
      u.choices.push_back(c);
    }
    u.lo = 0;
    u.hi = static_cast<double>(u.choices.size() - 1);
    u.nominal = 0;
    if (nominal) {
      const auto it = std::find(u.choices.begin(), u.choices.end(), *nominal);
      if (it == u.choices.end()) bad("nominal \"" + *nominal + "\" is not one of the choices");
      u.nominal = static_cast<double>(it - u.choices.begin());
    }
    // a choice's value is its index in the setting's own choices
    return u;
  }
  if (range.size() != 2) bad("expected a range [lo, hi]");
  // batch sizes are taken as powers of two; factors spread on a log scale
  // batch sizes and widths as powers of two, other whole numbers (the grid)
  // as they are, factors on a log scale, times on a linear one
  u.kind = st.kind == SettingKind::whole ? (key == "grid_size" ? Unknown::Kind::whole : Unknown::Kind::pow2)
           : st.kind == SettingKind::time ? Unknown::Kind::time
                                          : Unknown::Kind::factor;
  u.lo = value(range[0]);
  u.hi = value(range[1]);
  if (u.lo > u.hi) bad("the range's low end " + range[0] + " is above its high end " + range[1]);
  if (u.kind == Unknown::Kind::pow2 && pow2_at_least(u.lo) > u.hi) bad("the range holds no power of two (batch sizes and widths are taken as powers of two)");
  if (u.kind == Unknown::Kind::whole && (u.lo != std::floor(u.lo) || u.hi != std::floor(u.hi))) bad("expected whole numbers");
  // the point prediction's value: given, or the study workload's (a
  // factor's is 1; a calibration term's is its value in no calibration: a
  // host overhead of 0), kept in the range
  double base = u.kind == Unknown::Kind::factor ? 1 : 0;
  if (st.current) {
    Workload w = s.workload;
    Cluster c;
    Calibration cal;
    StudyOptions o;
    base = st.current(CaseRef{c, cal, w, o});
  }
  u.nominal = nominal ? value(*nominal) : std::clamp(base, u.lo, u.hi);
  if (u.nominal < u.lo || u.nominal > u.hi) bad("nominal " + *nominal + " lies outside the range");
  if (u.kind == Unknown::Kind::pow2) {
    // the point prediction takes one of the values the band samples
    const double p2lo = pow2_at_least(u.lo), p2hi = pow2_at_most(u.hi);
    if (nominal && std::exp2(std::round(std::log2(u.nominal))) != u.nominal)
      bad("nominal " + *nominal + " is not a power of two (batch sizes are taken as powers of two)");
    u.nominal = std::clamp(std::exp2(std::round(std::log2(u.nominal))), p2lo, p2hi);
  }
  return u;
}

void read_unknowns(YamlMap& m, StudySpec& s) {
  auto um = m.map_opt("unknowns");
  if (!um) return;
  s.unknown_samples = static_cast<int>(um->integer_opt("samples", 0, 10000).value_or(32));
  for (const Setting& st : settings())
    if ((st.uses & kUnknown) && um->has(st.key)) s.unknowns.push_back(read_unknown(*um, st, s));
  um->finish();
  if (s.unknowns.empty()) m.fail("unknowns", "expected at least one unknown: " + setting_keys(kUnknown));
  if (s.unknowns.size() > kMaxUnknowns) m.fail("unknowns", "at most " + std::to_string(kMaxUnknowns) + " unknowns");
  // every corner of the ranges (every choice), then random points inside;
  // past kMaxCornerUnknowns (2^8 corners) the random points alone
  std::vector<std::vector<double>> corners{{}};
  if (s.unknowns.size() > kMaxCornerUnknowns) corners.clear();
  for (const auto& u : s.unknowns) {
    if (corners.empty()) break;
    std::vector<double> ends = u.kind == Unknown::Kind::choice ? u.grid(0) : std::vector<double>{u.at(0), u.at(1)};
    if (ends.size() == 2 && ends[0] == ends[1]) ends.pop_back();
    std::vector<std::vector<double>> next;
    for (const auto& c : corners)
      for (double e : ends) {
        next.push_back(c);
        next.back().push_back(e);
      }
    corners = std::move(next);
  }
  s.unknown_points = corners;
  const Rng rng(s.seed ^ 0x756e6b6e6f776eULL);
  for (int j = 0; j < s.unknown_samples; ++j) {
    std::vector<double> v;
    for (std::size_t k = 0; k < s.unknowns.size(); ++k) v.push_back(s.unknowns[k].at(rng.uniform(k, static_cast<std::uint64_t>(j))));
    s.unknown_points.push_back(v);
  }
}

}  // namespace

namespace {

// One swept key: its values as text, and how a value changes a scenario.
struct SweepAxis {
  std::string key;
  std::vector<std::string> values;
  std::function<void(Scenario&, std::size_t)> apply;
};

// A swept value that moves nothing in the model in use (at the study's
// largest GPU count on each cluster) is refused, not ignored; one that acts on some
// clusters only is noted for the others.
void check_sweep_value(StudySpec& s, const Setting& st, const SettingValue& v, const YamlMap& from, const std::string& name, std::size_t i) {
  std::vector<int> counts = s.gpus;
  std::sort(counts.rbegin(), counts.rend());
  std::vector<std::string> idle;
  for (const auto& c : s.clusters) {
    Layout l;  // at the largest of the study's GPU counts the cluster holds
    int n = 0;
    for (int g : counts) {
      try {
        l = layout_for(c.cluster, g, std::nullopt);
        n = g;
        break;
      } catch (const InputError&) {
        // more GPUs than the cluster has: reported with the GPU counts below
      }
    }
    if (n == 0) continue;
    Cluster cluster = c.cluster;
    Calibration cal = c.calibration;
    Workload w = s.workload;
    StudyOptions o;
    if (const std::string why = st.idle(CaseRef{cluster, cal, w, o}, v, l); !why.empty())
      idle.push_back("cluster '" + c.label + "' (" + std::to_string(l.nodes) + " node(s) at " + std::to_string(n) + " GPUs: " + why + ")");
  }
  if (idle.size() == s.clusters.size())
    from.fail_item(name, i, v.text + " moves nothing in the model in use for " + idle.front() + "; drop it or sweep GPU counts where it acts");
  for (const auto& c : idle)
    s.notes.push_back(std::string(st.key) + " " + v.text + " moves nothing for " + c + ": its scenarios equal the " +
                      (st.kind == SettingKind::factor ? "1x" : "all") + " ones");
}

// name, description, seed, iterations, intervals and the workload
void read_study_header(YamlMap& m, StudySpec& s) {
  s.file = m.file();
  s.name = m.string("name");
  if (!plot_safe_name(s.name)) m.fail("name", "\"" + s.name + "\" holds characters plots cannot show safely; expected " + std::string(kPlotSafeCharacters));
  s.description = m.string_opt("description").value_or("");
  s.seed = static_cast<std::uint64_t>(m.integer_opt("seed", 0, std::numeric_limits<std::int64_t>::max()).value_or(0));
  s.iterations = static_cast<int>(m.integer_opt("iterations", 2, 1000).value_or(5));
  if (auto iv = m.map_opt("intervals")) {
    s.interval_samples = static_cast<int>(iv->integer_opt("samples", 0, 100000).value_or(0));
    s.interval_level = iv->number_opt("level", Bound::positive).value_or(0.9);
    if (!(s.interval_level < 1)) iv->fail("level", "expected a number between 0 and 1, e.g. 0.9, got " + printf_number("%g", s.interval_level));
    iv->finish();
  }

  s.workload_file = m.string("workload");
  const std::string workload_path = m.path("workload");
  s.input_paths.push_back(workload_path);
  try {
    s.workload = load_workload(workload_path);
  } catch (const InputError& e) {
    m.fail("workload", e.what());
  }
  s.workload.file = s.workload_file;  // reports name it as the study does

}

// clusters: [{file, nodes, label, calibration}]
void read_study_clusters(YamlMap& m, StudySpec& s, const std::string& calibration_override) {
  const std::vector<YamlMap> cl = m.map_list_opt("clusters");
  if (cl.empty()) m.fail("clusters", "expected a list of clusters, each {file: CLUSTER.yaml, calibration: FILE|datasheet}");
  for (std::size_t i = 0; i < cl.size(); ++i) {
    YamlMap c = cl[i];
    StudyCluster sc;
    const std::string file = c.string("file");
    const std::string file_path = c.path("file");
    s.input_paths.push_back(file_path);
    try {
      sc.cluster = load_cluster(file_path);
    } catch (const InputError& e) {
      c.fail("file", e.what());
    }
    sc.cluster.file = file;  // reports name it as the study does
    if (auto nodes = c.integer_opt("nodes", 1, kMaxGpus)) {
      if (*nodes * sc.cluster.gpus_per_node > kMaxGpus)
        c.fail("nodes", std::to_string(*nodes) + " nodes x " + std::to_string(sc.cluster.gpus_per_node) + " GPUs per node is more than " +
                            std::to_string(kMaxGpus) + " GPUs, kanscale's limit");
      sc.cluster.nodes = static_cast<int>(*nodes);
    }
    sc.label = c.string_opt("label").value_or(sc.cluster.name);
    if (!plot_safe_name(sc.label))
      c.fail(c.has("label") ? "label" : "file", "cluster label \"" + sc.label +
                                                  "\" holds characters plots cannot show safely; expected " + std::string(kPlotSafeCharacters));
    for (const auto& other : s.clusters)
      if (other.label == sc.label) c.fail("label", "\"" + sc.label + "\" names two clusters; give each a label of its own");
    const std::string given = c.string_opt("calibration").value_or("datasheet");
    const std::string cal = calibration_override.empty() ? given : calibration_override;
    // the study's own calibration resolves against the study; --calibration against the working directory
    const std::string cal_path = cal == "datasheet" || !calibration_override.empty() ? cal : c.path("calibration");
    if (cal != "datasheet") s.input_paths.push_back(cal_path);
    try {
      sc.calibration = with_shipped_defaults(cal == "datasheet" ? datasheet_calibration(sc.cluster, s.workload.precision)
                                                                  : load_calibration(cal_path, sc.cluster, s.workload.precision),
                                               sc.cluster, s.workload);
      check_calibration_covers(s.workload, sc.calibration, cal);
    } catch (const InputError& e) {
      c.fail("calibration", e.what());
    }
    if (cal != "datasheet") sc.calibration_file = cal;
    c.finish();
    s.clusters.push_back(std::move(sc));
  }

}

// sweep.gpus and every swept setting (settings(), in the table's order)
std::vector<SweepAxis> read_sweep(YamlMap& sw, StudySpec& s) {
  for (auto g : sw.integer_list("gpus", 1, 1, kMaxGpus)) {
    if (std::find(s.gpus.begin(), s.gpus.end(), static_cast<int>(g)) != s.gpus.end())
      sw.fail_item("gpus", s.gpus.size(), std::to_string(g) + " is given twice");
    s.gpus.push_back(static_cast<int>(g));
  }
  std::vector<SweepAxis> axes;
  auto net = sw.map_opt("network");  // sweep.network.KEY: the settings network.KEY
  for (const Setting& st : settings()) {
    if (!(st.uses & kSweep)) continue;
    const std::string key = st.key;
    const bool in_net = key.rfind("network.", 0) == 0;
    YamlMap* from = in_net ? (net ? &*net : nullptr) : &sw;
    const std::string name = in_net ? key.substr(8) : key;
    std::vector<std::string> texts;
    if (from && from->has(name)) {
      if (st.kind == SettingKind::widths) {
        for (const auto& w : from->integer_lists(name, 1, 2)) texts.push_back(widths_text(w));
      } else {
        texts = from->string_list(name);
      }
    } else if (key == "scaling") {
      texts = {"strong", "weak"};  // both, unless the study says
    } else {
      continue;
    }
    std::vector<SettingValue> values;
    SweepAxis axis{key, {}, nullptr};
    for (std::size_t i = 0; i < texts.size(); ++i) {
      try {
        values.push_back(parse_setting(st, texts[i]));
      } catch (const InputError& e) {
        from->fail_item(name, i, "\"" + texts[i] + "\": " + e.what());
      }
      if (st.kind == SettingKind::widths)
        if (const std::string why = kan_size_problem(KanShape{values.back().widths, s.workload.grid_size, s.workload.spline_order}); !why.empty())
          from->fail_item(name, i, why);
      axis.values.push_back(setting_label(st, values.back()));
      if (st.idle && !setting_is_neutral(st, values.back())) check_sweep_value(s, st, values.back(), *from, name, i);
    }
    axis.apply = [&st, values](Scenario& sc, std::size_t i) {
      CaseRef c = case_of(sc);
      st.apply(c, values[i]);
    };
    axes.push_back(std::move(axis));
  }
  if (net) net->finish();
  return axes;
}

// published: figures to check the bands against
void read_published(YamlMap& m, StudySpec& s) {
  std::string loaded;
  if (auto pub = m.map_or_file_opt("published", &loaded)) {
    if (!loaded.empty()) s.input_paths.push_back(loaded);
    s.published.given = true;
    pub->ignore("kind");
    pub->ignore("workload");  // a validation plan's (the study names its own)
    s.published.source = pub->string("source");
    // where speedup and efficiency were reported: a GPU count, or the
    // published GPU counts (the largest)
    if (pub->has_list("gpus")) {
      const auto g = pub->integer_list("gpus", 1, 1, kMaxGpus);
      s.published.gpus = static_cast<int>(*std::max_element(g.begin(), g.end()));
      if (s.published.gpus < 2) pub->fail("gpus", "expected GPU counts up to at least 2");
    } else {
      s.published.gpus = static_cast<int>(pub->integer_opt("gpus", 2, kMaxGpus).value_or(8));
    }
    // half a unit of the last digit a figure was published with
    auto half_unit = [](double v) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.10g", v);
      const char* dot = std::strchr(buf, '.');
      const int decimals = dot ? static_cast<int>(std::strlen(dot + 1)) : 0;
      return 0.5 * std::pow(10.0, -decimals);
    };
    s.published.speedup = pub->number_opt("speedup", Bound::positive);
    if (s.published.speedup) s.published.speedup_tol = half_unit(*s.published.speedup);
    if (auto e = pub->number_opt("efficiency_pct", Bound::positive)) {
      if (*e > 100) pub->fail("efficiency_pct", "expected a percentage up to 100");
      s.published.efficiency = *e / 100;
      s.published.efficiency_tol = half_unit(*e) / 100;
    }
    if (auto o = pub->number_list_opt("overhead_pct", Bound::non_negative)) {
      if (o->size() != 2 || (*o)[0] > (*o)[1]) pub->fail("overhead_pct", "expected [lowest, highest] in percent");
      s.published.overhead = std::make_pair((*o)[0] / 100, (*o)[1] / 100);
      s.published.overhead_tol = std::max(half_unit((*o)[0]), half_unit((*o)[1])) / 100;
    }
    s.published.weak_drop_then_plateau = pub->boolean_opt("weak_drop_then_plateau").value_or(false);
    // the inference's match of the speedup (one observation: its own
    // tolerance, not the rounding of its last digit)
    s.published.speedup_match = pub->number_opt("speedup_match", Bound::positive).value_or(s.published.speedup_tol);
    if (pub->has("model_widths")) s.published.model_widths = pub->integer_lists("model_widths", 1, 2);
    pub->finish();
    const int g = s.published.gpus;
    bool have_gpus = std::find(s.gpus.begin(), s.gpus.end(), 1) != s.gpus.end() &&
                     std::find(s.gpus.begin(), s.gpus.end(), g) != s.gpus.end();
    if (!have_gpus) m.fail("published", "the study's GPU counts must include 1 and " + std::to_string(g) + " to compare with the figures");
  }
}

// infer: {samples: N, budget: B, population: P, seed: S, predict: {gpus: [...], gpus_per_node: [...], max: M}}
void read_infer(YamlMap& m, StudySpec& s) {
  auto im = m.map_opt("infer");
  if (!im) return;
  InferSpec& f = s.infer;
  f.given = true;
  f.samples = static_cast<int>(im->integer("samples", 100, 1000000));
  f.budget = static_cast<int>(im->integer("budget", 100, 10000000));
  f.population = static_cast<int>(im->integer_opt("population", 10, 100000).value_or(300));
  if (f.population > f.samples) im->fail("population", "expected at most samples (" + std::to_string(f.samples) + "): the first population is the prior's draws nearest the findings");
  f.seed = static_cast<std::uint64_t>(im->integer_opt("seed", 0).value_or(static_cast<std::int64_t>(s.seed)));
  YamlMap pm = im->map("predict");
  for (auto g : pm.integer_list("gpus", 2, 1, kMaxGpus)) f.predict_gpus.push_back(static_cast<int>(g));
  for (auto g : pm.integer_list("gpus_per_node", 1, 1, kMaxGpusPerNode)) f.predict_gpus_per_node.push_back(static_cast<int>(g));
  f.predict_max = static_cast<int>(pm.integer_opt("max", 1, 100000).value_or(200));
  pm.finish();
  im->finish();
  if (!s.published.given) m.fail("infer", "the inference needs the study's published findings (published:)");
  if (s.unknowns.empty()) m.fail("infer", "the inference needs unknowns to infer (unknowns:)");
}

// clusters x every axis, counted before any scenario is made; the swept keys
void count_scenarios(YamlMap& m, YamlMap& sw, StudySpec& s, const std::vector<SweepAxis>& axes) {
  {  // the scenarios are counted before any is made: clusters x every axis, checked
    std::int64_t n = static_cast<std::int64_t>(s.clusters.size());
    std::string product = std::to_string(s.clusters.size()) + " cluster(s)";
    for (const auto& a : axes) {
      product += " x " + std::to_string(a.values.size()) + " " + a.key;
      n = a.values.size() > static_cast<std::size_t>(kMaxScenarios) ? kMaxScenarios + 1
                                                                     : std::min<std::int64_t>(n * static_cast<std::int64_t>(a.values.size()), kMaxScenarios + 1);
    }
    if (n > kMaxScenarios)
      m.fail("sweep", product + " is more than " + std::to_string(kMaxScenarios) + " scenarios, kanscale's limit for a study; split it into several studies");
  }
  for (const auto& a : axes) {
    for (std::size_t i = 0; i < a.values.size(); ++i)
      for (std::size_t j = 0; j < i; ++j)
        if (a.values[i] == a.values[j]) sw.fail(a.key, "value " + a.values[i] + " is given twice");
    if (a.values.size() > 1 || a.key == "scaling") s.swept.push_back(a.key);
  }
  if (s.clusters.size() > 1) s.swept.insert(s.swept.begin(), "cluster");

}

void expand_scenarios(StudySpec& s, const std::vector<SweepAxis>& axes) {
  // clusters x axes, the last axis fastest
  for (std::size_t c = 0; c < s.clusters.size(); ++c) {
    std::vector<std::size_t> idx(axes.size(), 0);
    for (;;) {
      Scenario sc;
      sc.cluster = c;
      sc.workload = s.workload;
      sc.cluster_config = s.clusters[c].cluster;
      sc.calibration = s.clusters[c].calibration;
      sc.options.gpus = s.gpus;
      sc.options.iterations = s.iterations;
      sc.options.seed = s.seed;
      sc.options.interval_samples = s.interval_samples;
      sc.options.interval_level = s.interval_level;
      sc.label = s.clusters[c].label;
      sc.curve = sc.label;
      for (std::size_t a = 0; a < axes.size(); ++a) {
        axes[a].apply(sc, idx[a]);
        sc.settings.emplace_back(axes[a].key, axes[a].values[idx[a]]);
        if (axes[a].values.size() > 1 || axes[a].key == "scaling") {
          const std::string part = axes[a].key + "=" + axes[a].values[idx[a]];
          sc.label += " " + part;
          if (axes[a].key != "scaling") sc.curve += " " + part;
        }
      }
      if (!s.unknowns.empty()) {
        s.scenario_bases.push_back(sc);  // before the unknowns' nominal values
        for (const auto& u : s.unknowns) apply_unknown(sc, u, u.nominal);
      }
      s.scenarios.push_back(std::move(sc));
      std::size_t a = axes.size();
      while (a > 0 && ++idx[a - 1] == axes[a - 1].values.size()) idx[--a] = 0;
      if (a == 0) break;
    }
  }

}

void check_published_modes(YamlMap& m, const StudySpec& s) {
  if (s.published.given) {
    bool strong = false, weak = false;
    for (const auto& sc : s.scenarios) (sc.options.scaling == Scaling::weak ? weak : strong) = true;
    if (!strong && (s.published.speedup || s.published.efficiency || s.published.overhead))
      m.fail("published", "speedup, efficiency and overhead figures need a strong-scaling scenario (sweep.scaling: strong)");
    if (!weak && s.published.weak_drop_then_plateau)
      m.fail("published", "weak_drop_then_plateau needs a weak-scaling scenario (sweep.scaling: weak)");
  }

}

void check_scenarios(YamlMap& sw, const StudySpec& s, double max_events) {
  // Everything a run needs is checked before it starts: the workload each
  // scenario makes, every layout, the family of each restriction, the work.
  WorkEstimate total;
  for (const auto& sc : s.scenarios) {
    const std::string where = "scenario '" + sc.label + "'";
    const Cluster& cc = sc.cluster_config;
    if (const std::string why = kan_size_problem(KanShape{sc.workload.widths, sc.workload.grid_size, sc.workload.spline_order});
        !why.empty())
      sw.fail("grid_size", where + ": " + why);
    try {
      for (int n : s.gpus) {
        layout_for(cc, n, sc.options.gpus_per_node);
        if (sc.options.scaling == Scaling::strong_global_batch && sc.workload.global_batch.value_or(sc.workload.batch_per_gpu) % n != 0)
          throw InputError(where + ": the workload's global_batch " + std::to_string(sc.workload.global_batch.value_or(sc.workload.batch_per_gpu)) +
                           " does not split evenly over " + std::to_string(n) + " GPUs");
        if (sc.options.scaling == Scaling::weak && sc.workload.dataset_size > kMaxDatasetSize / n)
          throw InputError(where + ": dataset_size x " + std::to_string(n) + " GPUs passes 2^53 samples");
      }
    } catch (const InputError& e) {
      // layout_for speaks of simulate's flags; here they are the sweep's keys
      std::string why = e.what();
      const bool per_node = why.rfind("--gpus-per-node", 0) == 0;
      for (const auto& [flag, key] : {std::pair<std::string, std::string>{"--gpus-per-node", "gpus_per_node"}, {"--gpus", "gpus"}})
        for (std::size_t at; (at = why.find(flag)) != std::string::npos;) why.replace(at, flag.size(), key);
      sw.fail(per_node ? "gpus_per_node" : "gpus", where + ": " + why);
    }
    WorkEstimate e = estimate_study_work(sc.workload, sc.options);
    if (s.interval_samples > 0 && has_measured_uncertainty(sc.calibration)) e.events *= s.interval_samples + 1;
    e.events *= 1 + static_cast<double>(s.unknown_points.size());  // the scenario band's samples
    total.events += e.events;
    total.bytes = std::max(total.bytes, e.bytes);
  }
  try {
    check_work(total, max_events, "the study's scenarios (" + std::to_string(s.scenarios.size()) + ") and GPU counts");
  } catch (const InputError& e) {
    sw.fail("gpus", e.what());
  }
}

StudySpec read_study(YamlMap m, double max_events, const std::string& calibration_override = "",
                     std::optional<Implementation> implementation_override = std::nullopt) {
  StudySpec s;
  read_study_header(m, s);
  if (implementation_override) s.workload.implementation = *implementation_override;
  read_study_clusters(m, s, calibration_override);
  YamlMap sw = m.map("sweep");
  const std::vector<SweepAxis> axes = read_sweep(sw, s);
  sw.finish();
  read_unknowns(m, s);
  read_published(m, s);
  read_infer(m, s);
  m.finish();
  count_scenarios(m, sw, s, axes);
  expand_scenarios(s, axes);
  check_published_modes(m, s);
  check_scenarios(sw, s, max_events);
  return s;
}

}  // namespace

StudySpec load_study(const std::string& path, double max_events, const std::string& calibration_override,
                     std::optional<Implementation> implementation_override) {
  return read_study(YamlMap::load_file(path), max_events, calibration_override, implementation_override);
}
StudySpec parse_study(const std::string& text, const std::string& name, double max_events) {
  return read_study(YamlMap::load_string(text, name), max_events);
}

namespace {
void widen(Band& b, double lo, double hi) {
  b.lo = std::min(b.lo, lo);
  b.hi = std::max(b.hi, hi);
}
// The scenario band of every point: the envelope over the unknowns' samples
// of the point prediction, widened by each sample's calibration interval
// where it has one (iteration time, speedup).
void add_scenario_bands(const StudySpec& s, std::size_t i, StudyResult& r) {
  auto seed_band = [](double v) { return Band{v, v}; };
  for (ScalingPoint& p : r.points) {
    ScalingPoint::ScenarioBands b{seed_band(p.iteration_s.median), seed_band(p.speedup),        seed_band(p.overhead_exposed),
                                  seed_band(p.overhead_total),     seed_band(p.samples_per_s),  seed_band(p.epoch_s),
                                  seed_band(p.time_to_train_s)};
    if (p.iteration_band) widen(b.iteration_s, p.iteration_band->lo, p.iteration_band->hi);
    if (p.speedup_band) widen(b.speedup, p.speedup_band->lo, p.speedup_band->hi);
    p.scenario = b;
  }
  for (const auto& values : s.unknown_points) {
    const Scenario x = scenario_at(s, i, values);
    StudyResult rs;
    try {
      rs = run_study(x.cluster_config, x.workload, x.calibration, x.options);
    } catch (const InputError&) {
      ++r.unknown_skipped;  // e.g. a global batch that does not split over a GPU count
      continue;
    }
    ++r.unknown_samples;
    // (their intervals' replays count with the scenario's)
    r.interval_replays_reduced += rs.interval_replays_reduced;
    r.interval_replays_full += rs.interval_replays_full;
    r.interval_ranks_replayed += rs.interval_ranks_replayed;
    for (std::size_t j = 0; j < r.points.size() && j < rs.points.size(); ++j) {
      const ScalingPoint& q = rs.points[j];
      ScalingPoint::ScenarioBands& b = *r.points[j].scenario;
      widen(b.iteration_s, q.iteration_band ? q.iteration_band->lo : q.iteration_s.median,
            q.iteration_band ? q.iteration_band->hi : q.iteration_s.median);
      widen(b.speedup, q.speedup_band ? q.speedup_band->lo : q.speedup, q.speedup_band ? q.speedup_band->hi : q.speedup);
      widen(b.overhead_exposed, q.overhead_exposed, q.overhead_exposed);
      widen(b.overhead_total, q.overhead_total, q.overhead_total);
      widen(b.samples_per_s, q.samples_per_s, q.samples_per_s);
      widen(b.epoch_s, q.epoch_s, q.epoch_s);
      widen(b.time_to_train_s, q.time_to_train_s, q.time_to_train_s);
    }
  }
}
}  // namespace

std::vector<StudyResult> run_scenarios(const StudySpec& s, std::size_t begin, std::size_t end) {
  std::vector<StudyResult> out;
  for (std::size_t i = begin; i < end && i < s.scenarios.size(); ++i) {
    const Scenario& sc = s.scenarios[i];
    out.push_back(run_study(sc.cluster_config, sc.workload, sc.calibration, sc.options));
    if (!s.unknowns.empty()) add_scenario_bands(s, i, out.back());
  }
  return out;
}

}  // namespace ks
