#include "study_report.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "formats/provenance.hpp"
#include "sim/report.hpp"
#include "model/units.hpp"

namespace ks {

namespace {

using json = nlohmann::json;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string algorithms_text(const Cluster& c) {
  if (c.collectives.family != CollFamily::nccl) return "mpi";
  std::string s;
  for (Algo a : c.collectives.algorithms) s += (s.empty() ? "" : "+") + std::string(to_string(a));
  s += "/";
  bool first = true;
  for (Proto p : c.collectives.protocols) {
    s += (first ? "" : "+") + std::string(to_string(p));
    first = false;
  }
  return s;
}

json band_lo(const std::optional<Band>& b, double scale = 1) { return b ? json(b->lo * scale) : json(nullptr); }
json band_hi(const std::optional<Band>& b, double scale = 1) { return b ? json(b->hi * scale) : json(nullptr); }

std::string bucket_choices(const std::vector<BucketRow>& rows) {
  std::string s;
  for (const auto& b : rows) s += (s.empty() ? "" : "; ") + format_bytes(b.bytes) + " " + b.label;
  return s;
}

const std::vector<std::string> kCommonColumns = {
    "scenario", "label", "cluster", "widths", "parameters", "grid_size", "bucket_cap_bytes", "gradient_as_bucket_view",
    "gpus_per_node", "collectives_allowed", "scaling", "gpus", "nodes", "batch_per_gpu_samples"};

std::vector<json> common_cells(const StudySpec& s, std::size_t i, const StudyResult& r, const ScalingPoint& p) {
  const Scenario& sc = s.scenarios[i];
  return {static_cast<int>(i),
          sc.label,
          s.clusters[sc.cluster].label,
          widths_text(sc.workload.widths),
          r.parameters,
          sc.workload.grid_size,
          sc.workload.ddp.bucket_cap_bytes,
          sc.workload.ddp.gradient_as_bucket_view,
          sc.options.gpus_per_node.value_or(sc.cluster_config.gpus_per_node),
          algorithms_text(sc.cluster_config),
          to_string(sc.options.scaling),
          p.gpus,
          p.nodes,
          p.batch_per_gpu};
}

// The curve's name in a plot: the varying settings, the scaling mode only
// when it is not the plot's own.
std::string series_title(const Scenario& sc, Scaling plot_mode) {
  return sc.options.scaling == plot_mode ? sc.curve : sc.curve + " " + to_string(sc.options.scaling);
}

// The model-size plot's groups: the label without the model's own settings.
std::string size_group(const StudySpec& s, const Scenario& sc) {
  std::string g = s.clusters[sc.cluster].label;
  for (const auto& [key, value] : sc.settings) {
    if (key == "widths" || key == "grid_size" || key == "scaling") continue;
    if (std::find(s.swept.begin(), s.swept.end(), key) != s.swept.end()) g += " " + key + "=" + value;
  }
  return g;
}

bool strong_mode(Scaling m) { return m != Scaling::weak; }

json provenance_json(const StudySpec& s, const std::string& command_line) {
  json clusters = json::array();
  for (const auto& c : s.clusters) {
    json cal = {{"name", c.calibration.name},
                {"source", c.calibration.source},
                {"file", c.calibration_file},
                {"derived_from", c.calibration.derived_from},
                {"measured_uncertainty", has_measured_uncertainty(c.calibration)}};
    if (!c.calibration.machine.empty()) cal["machine"] = describe(c.calibration.machine);
    clusters.push_back({{"label", c.label}, {"name", c.cluster.name}, {"file", c.cluster.file}, {"nodes", c.cluster.nodes}, {"calibration", cal}});
  }
  nlohmann::json j = to_json(provenance(command_line, Dated::no));
  j.update({{"study", {{"name", s.name}, {"file", s.file}}},
          {"seed", s.seed},
          {"iterations_simulated", s.iterations},
          {"intervals", {{"samples", s.interval_samples}, {"level", s.interval_level}}},
          {"workload", {{"name", s.workload.name}, {"file", s.workload.file}}},
          {"clusters", clusters},
          {"gpus", s.gpus},
          {"swept", s.swept}});
  return j;
}

}  // namespace

namespace {

// The four tables and six plots a study fills, scenario by scenario.
struct Panels {
  DimensionTable strong, weak, comm, size;
  PlotSpec sp, se, wt, co, me, mm;
  std::map<std::string, std::size_t> size_series;  // group -> index in me/mm
  int max_gpus;
  // throughput per GPU scales with the batch: where an unknown is the batch,
  // weak throughput's envelope over it would mix setups rather than bound
  // one, and is left off the plot (the table keeps it)
  bool weak_band = true;
};

// One scenario's lines in the plots.
struct ScenarioSeries {
  PlotSeries s_sp, s_se, s_wt, s_ce, s_ct;
};

Panels make_panels(const StudySpec& s) {
  DimensionTable strong{"strong_scaling", "Strong scaling: speedup and parallel efficiency", kCommonColumns, {}};
  for (const char* c : {"iteration_time_s", "iteration_time_lo_s", "iteration_time_hi_s", "epoch_time_s", "speedup", "speedup_lo",
                        "speedup_hi", "efficiency", "efficiency_lo", "efficiency_hi", "time_to_train_s", "gpu_hours",
                        "iteration_time_scenario_lo_s", "iteration_time_scenario_hi_s", "speedup_scenario_lo", "speedup_scenario_hi",
                        "efficiency_scenario_lo", "efficiency_scenario_hi", "time_to_train_scenario_lo_s", "time_to_train_scenario_hi_s"})
    strong.columns.push_back(c);
  DimensionTable weak{"weak_scaling", "Weak scaling: throughput per GPU", kCommonColumns, {}};
  for (const char* c : {"iteration_time_s", "iteration_time_lo_s", "iteration_time_hi_s", "samples_per_s", "samples_per_s_per_gpu",
                        "samples_per_s_per_gpu_lo", "samples_per_s_per_gpu_hi", "efficiency", "efficiency_lo", "efficiency_hi", "epoch_time_s",
                        "samples_per_s_per_gpu_scenario_lo", "samples_per_s_per_gpu_scenario_hi", "efficiency_scenario_lo",
                        "efficiency_scenario_hi"})
    weak.columns.push_back(c);
  DimensionTable comm{"communication", "Communication overhead: exposed and total, with each bucket's algorithm/protocol", kCommonColumns, {}};
  for (const char* c : {"iteration_time_s", "compute_time_s", "communication_time_s", "exposed_communication_s",
                        "overhead_exposed_fraction", "overhead_total_fraction", "broadcast_buffers", "buckets_steady",
                        "overhead_exposed_scenario_lo", "overhead_exposed_scenario_hi", "overhead_total_scenario_lo",
                        "overhead_total_scenario_hi"})
    comm.columns.push_back(c);
  DimensionTable size{"model_size", "Model-size scaling: epoch time and memory per GPU", kCommonColumns, {}};
  for (const char* c : {"epoch_time_s", "epoch_time_lo_s", "epoch_time_hi_s", "time_to_train_s", "peak_memory_per_gpu_bytes",
                        "memory_capacity_bytes", "parameter_to_memory_ratio", "exceeds_capacity",
                        "epoch_time_scenario_lo_s", "epoch_time_scenario_hi_s"})
    size.columns.push_back(c);

  PlotSpec sp{"strong_speedup", "Strong scaling: speedup (" + s.name + ")", "GPUs", "speedup over 1 GPU", Axis::log2, Axis::log2,
              true, true, "ideal", "", {}};
  PlotSpec se{"strong_efficiency", "Strong scaling: parallel efficiency (" + s.name + ")", "GPUs", "parallel efficiency (percent)",
              Axis::log2, Axis::linear, true, false, "", "", {}};
  PlotSpec wt{"weak_throughput", "Weak scaling: throughput per GPU (" + s.name + ")", "GPUs", "samples/s per GPU", Axis::log2,
              Axis::linear, true, false, "", "", {}};
  PlotSpec co{"communication_overhead", "Communication overhead (" + s.name + ")", "GPUs",
              "communication / iteration (percent): exposed solid, total dashed", Axis::log2, Axis::linear, true, false, "", "", {}};
  const int max_gpus = *std::max_element(s.gpus.begin(), s.gpus.end());
  PlotSpec me{"model_size_epoch_time", "Model size: epoch time at " + std::to_string(max_gpus) + " GPUs (" + s.name + ")",
              "parameters", "epoch time (s)", Axis::log10, Axis::log10, true, false, "", "", {}};
  PlotSpec mm{"model_size_memory", "Model size: peak memory per GPU at " + std::to_string(max_gpus) + " GPUs (" + s.name + ")",
              "parameters", "peak memory per GPU (GiB)", Axis::log10, Axis::log10, true, false, "", "", {}};
  const std::string band_note = "Bands: the central " + fixed(100 * s.interval_level, 0) +
                                "% interval over the calibration's Monte Carlo samples (fit covariances, jitter, model error)" +
                                (s.unknowns.empty() ? std::string(".")
                                                    : "; hatched: the scenario band, the envelope over the unknowns' ranges.");
  for (PlotSpec* p : {&sp, &se, &wt, &me, &co}) {
    p->note = band_note;
    p->band_title = printf_number("%g", 100 * s.interval_level) + " percent interval";
    p->outer_title = "scenario range over the unknowns";
  }

  bool weak_band = true;
  for (const auto& u : s.unknowns) weak_band = weak_band && u.key != "batch_per_gpu" && u.key != "global_batch" && u.key != "batch_mode";
  return Panels{strong, weak, comm, size, sp, se, wt, co, me, mm, {}, max_gpus, weak_band};
}

// Point p of scenario i: its rows in the tables, its points in the plots.
void add_point(Panels& pn, ScenarioSeries& ss, const StudySpec& s, std::size_t i, const StudyResult& r, const ScalingPoint& p) {
  auto& [strong, weak, comm, size, sp, se, wt, co, me, mm, size_series, max_gpus, weak_band] = pn;
  auto& [s_sp, s_se, s_wt, s_ce, s_ct] = ss;
  const Scenario& sc = s.scenarios[i];
  const bool is_strong = strong_mode(sc.options.scaling);
  const auto common = common_cells(s, i, r, p);
  auto row = [&](std::vector<json> extra) {
    std::vector<json> v = common;
    v.insert(v.end(), extra.begin(), extra.end());
    return v;
  };
  const double n = p.gpus;
  std::optional<Band> eff;
  if (p.speedup_band) eff = Band{p.speedup_band->lo / n, p.speedup_band->hi / n};
  // the scenario band (unknowns), when the study has one
  const auto& sb = p.scenario;
  auto sband = [&](const Band ScalingPoint::ScenarioBands::*m, double scale = 1) -> std::optional<Band> {
    if (!sb) return std::nullopt;
    return Band{((*sb).*m).lo * scale, ((*sb).*m).hi * scale};
  };
  const auto s_it = sband(&ScalingPoint::ScenarioBands::iteration_s), s_sp_b = sband(&ScalingPoint::ScenarioBands::speedup),
             s_eff = sband(&ScalingPoint::ScenarioBands::speedup, 1 / n), s_ttt = sband(&ScalingPoint::ScenarioBands::time_to_train_s),
             s_thr = sband(&ScalingPoint::ScenarioBands::samples_per_s, 1 / n),
             s_ex = sband(&ScalingPoint::ScenarioBands::overhead_exposed), s_tot = sband(&ScalingPoint::ScenarioBands::overhead_total),
             s_ep = sband(&ScalingPoint::ScenarioBands::epoch_s);
  auto outer = [](const std::optional<Band>& b, double scale = 1) {
    return b ? std::array<double, 2>{b->lo * scale, b->hi * scale} : std::array<double, 2>{kNaN, kNaN};
  };
  if (is_strong) {
    strong.rows.push_back(row({p.iteration_s.median, band_lo(p.iteration_band), band_hi(p.iteration_band), p.epoch_s, p.speedup,
                               band_lo(p.speedup_band), band_hi(p.speedup_band), p.efficiency, band_lo(eff), band_hi(eff),
                               p.time_to_train_s, p.gpu_hours, band_lo(s_it), band_hi(s_it), band_lo(s_sp_b), band_hi(s_sp_b),
                               band_lo(s_eff), band_hi(s_eff), band_lo(s_ttt), band_hi(s_ttt)}));
    s_sp.points.push_back({n, p.speedup, p.speedup_band ? p.speedup_band->lo : kNaN, p.speedup_band ? p.speedup_band->hi : kNaN});
    s_sp.outer.push_back(outer(s_sp_b));
    s_se.points.push_back({n, 100 * p.efficiency, eff ? 100 * eff->lo : kNaN, eff ? 100 * eff->hi : kNaN});
    s_se.outer.push_back(outer(s_eff, 100));
    const double per_iter = static_cast<double>(p.iterations_per_epoch);
    size.rows.push_back(row({p.epoch_s, band_lo(p.iteration_band, per_iter), band_hi(p.iteration_band, per_iter), p.time_to_train_s,
                             p.memory.peak_bytes, p.memory.capacity_bytes, p.memory.parameter_to_memory_ratio(), p.memory.exceeds_capacity(), band_lo(s_ep), band_hi(s_ep)}));
    if (p.gpus == max_gpus && sc.options.scaling == Scaling::strong) {
      const std::string g = size_group(s, sc);
      if (!size_series.count(g)) {
        size_series[g] = me.series.size();
        me.series.push_back({g, {}, false, 0});
        mm.series.push_back({g, {}, false, 0});
      }
      const std::size_t k = size_series[g];
      me.series[k].points.push_back({static_cast<double>(r.parameters), p.epoch_s,
                                     p.iteration_band ? p.iteration_band->lo * per_iter : kNaN,
                                     p.iteration_band ? p.iteration_band->hi * per_iter : kNaN});
      me.series[k].outer.push_back(outer(s_ep));
      mm.series[k].points.push_back({static_cast<double>(r.parameters), p.memory.peak_bytes / 1073741824.0, kNaN, kNaN});
    }
  } else {
    const double b = static_cast<double>(p.batch_per_gpu);
    std::optional<Band> per_gpu;
    if (p.iteration_band) per_gpu = Band{b / p.iteration_band->hi, b / p.iteration_band->lo};
    weak.rows.push_back(row({p.iteration_s.median, band_lo(p.iteration_band), band_hi(p.iteration_band), p.samples_per_s,
                             p.samples_per_s / n, band_lo(per_gpu), band_hi(per_gpu), p.efficiency, band_lo(eff), band_hi(eff),
                             p.epoch_s, band_lo(s_thr), band_hi(s_thr), band_lo(s_eff), band_hi(s_eff)}));
    s_wt.points.push_back({n, p.samples_per_s / n, per_gpu ? per_gpu->lo : kNaN, per_gpu ? per_gpu->hi : kNaN});
    s_wt.outer.push_back(weak_band ? outer(s_thr) : outer(std::nullopt));
  }
  comm.rows.push_back(row({p.iteration_s.median, p.compute_s.median, p.comm_s.median, p.exposed_s.median, p.overhead_exposed,
                           p.overhead_total, p.broadcast_label, bucket_choices(p.steady_plan), band_lo(s_ex), band_hi(s_ex),
                           band_lo(s_tot), band_hi(s_tot)}));
  s_ce.points.push_back({n, 100 * p.overhead_exposed, kNaN, kNaN});
  s_ce.outer.push_back(outer(s_ex, 100));
  s_ct.outer.push_back(outer(s_tot, 100));
  s_ct.points.push_back({n, 100 * p.overhead_total, kNaN, kNaN});
}

// The dimension small multiples split by: of the swept keys and the
// cluster, the one with the fewest values (at least two); "" when nothing
// varies.
std::string panel_dimension(const StudySpec& s) {
  std::map<std::string, std::set<std::string>> values;
  for (const auto& sc : s.scenarios) {
    values["cluster"].insert(s.clusters[sc.cluster].label);
    for (const auto& [key, value] : sc.settings) values[key].insert(value);
  }
  std::string best;
  std::size_t fewest = 0;
  for (const auto& [key, vals] : values) {
    // a plot holds one scaling mode, and GPU counts are its x axis
    if (vals.size() < 2 || key == "scaling" || key == "gpus") continue;
    if (best.empty() || vals.size() < fewest) best = key, fewest = vals.size();
  }
  return best;
}

std::string panel_of(const StudySpec& s, const Scenario& sc, const std::string& dim) {
  if (dim.empty()) return "";
  if (dim == "cluster") return plot_safe_text(s.clusters[sc.cluster].label);
  for (const auto& [key, value] : sc.settings)
    if (key == dim) return plot_safe_text(key + "=" + value);
  return "";
}

// The study's published figures on the plots, each with its stated
// precision (half a unit of its last digit) as the error bar: the speedup
// and the efficiency at their GPU count, the overhead's range over 2..N.
void add_published_markers(const StudySpec& s, PlotSpec& sp, PlotSpec& se, PlotSpec& co) {
  const PublishedFigures& f = s.published;
  if (!f.given) return;
  const double g = f.gpus;
  // (the source is the report's and the script's note: a key entry that long would not fit beside the plot)
  for (PlotSpec* p : {&sp, &se, &co})
    if (!f.source.empty()) p->note += " Published figures: " + f.source + ".";
  if (f.speedup) {
    sp.published.push_back({g, *f.speedup, g, g, *f.speedup - f.speedup_tol, *f.speedup + f.speedup_tol});
    sp.published_title = "published, error bar its stated precision";
  }
  if (f.efficiency) {
    se.published.push_back({g, 100 * *f.efficiency, g, g, 100 * (*f.efficiency - f.efficiency_tol), 100 * (*f.efficiency + f.efficiency_tol)});
    se.published_title = "published, error bar its stated precision";
  }
  if (f.overhead) {
    const auto [lo, hi] = *f.overhead;
    co.published.push_back({std::sqrt(2 * g), 50 * (lo + hi), 2, g, 100 * (lo - f.overhead_tol), 100 * (hi + f.overhead_tol)});
    co.published_title = "published: the overhead range over 2 to " + std::to_string(f.gpus) + " GPUs";
  }
}

}  // namespace

StudyOutputs study_outputs(const StudySpec& s, const std::vector<StudyResult>& results, const std::string& command_line) {
  StudyOutputs o;
  Panels pn = make_panels(s);
  auto& [strong, weak, comm, size, sp, se, wt, co, me, mm, size_series, max_gpus, weak_band] = pn;
  const std::string panel_dim = panel_dimension(s);
  // per scaling mode (0 strong, 1 weak): the smallest GPU count where a
  // scenario's batch per GPU falls below the workload's, and that batch
  std::pair<int, std::int64_t> batch_marks[2] = {{0, 0}, {0, 0}};
  bool any_strong = false;
  for (const auto& sc : s.scenarios) any_strong |= strong_mode(sc.options.scaling);
  json scenarios = json::array();
  for (std::size_t i = 0; i < results.size(); ++i) {
    const Scenario& sc = s.scenarios[i];
    const StudyResult& r = results[i];
    const bool is_strong = strong_mode(sc.options.scaling);
    const std::string panel = panel_of(s, sc, panel_dim);
    PlotSeries s_sp{series_title(sc, Scaling::strong), {}, false, 0, {}, panel}, s_se = s_sp;
    PlotSeries s_wt{series_title(sc, Scaling::weak), {}, false, 0, {}, panel};
    const int color = static_cast<int>(co.series.size() / 2) + 1;  // exposed and total of one scenario alike
    ScenarioSeries ss{s_sp, s_se, s_wt, {series_title(sc, Scaling::strong) + " exposed", {}, false, color, {}, panel},
                      {series_title(sc, Scaling::strong) + " total", {}, true, color, {}, panel}};
    for (const ScalingPoint& p : r.points) {
      add_point(pn, ss, s, i, r, p);
      // where the batch per GPU first falls below the workload's, per scaling mode: marked on its plots
      if (!batch_change_note(sc.workload, sc.options.scaling, p).empty()) {
        auto& first = batch_marks[is_strong ? 0 : 1];
        if (first.first == 0 || p.gpus < first.first) first = {p.gpus, p.batch_per_gpu};
      }
    }
    if (is_strong) {
      sp.series.push_back(std::move(ss.s_sp));
      se.series.push_back(std::move(ss.s_se));
    } else {
      wt.series.push_back(std::move(ss.s_wt));
    }
    if (is_strong || !any_strong) {  // weak runs repeat the strong ones' communication at larger datasets
      co.series.push_back(std::move(ss.s_ce));
      co.series.push_back(std::move(ss.s_ct));
    }
    RunInfo info{command_line, &sc.cluster_config, &sc.workload, &sc.calibration, sc.options,
                 s.clusters[sc.cluster].calibration_file};
    json settings = json::object();
    for (const auto& [k, v] : sc.settings) settings[k] = v;
    scenarios.push_back({{"index", i}, {"label", sc.label}, {"cluster", s.clusters[sc.cluster].label}, {"settings", settings},
                         {"result", study_json(r, info)}});
  }
  // a model-size line runs from the smallest model to the largest
  for (PlotSpec* p : {&me, &mm})
    for (auto& series : p->series)
      std::stable_sort(series.points.begin(), series.points.end(), [](const auto& a, const auto& b) { return a[0] < b[0]; });
  o.tables = {strong, weak, comm, size};
  // a model-size plot needs two model sizes somewhere to draw a line
  bool sizes = false;
  for (const auto& series : me.series) sizes |= series.points.size() > 1;
  if (!sizes) me.series.clear(), mm.series.clear();
  add_published_markers(s, sp, se, co);
  auto mark = [&](PlotSpec& p, int mode) {
    const auto [n, batch] = batch_marks[mode];
    if (n > 0) p.xmarks.emplace_back(n, "batch per GPU below the workload from N=" + std::to_string(n) + " (" + std::to_string(batch) + ")");
  };
  mark(sp, 0), mark(se, 0), mark(wt, 1), mark(co, any_strong ? 0 : 1);
  for (PlotSpec* p : {&sp, &se, &wt, &co, &me, &mm}) {
    if (p->series.empty()) continue;
    if (p->series.size() <= kMaxSeriesPerPanel)
      for (auto& series : p->series) series.panel.clear();  // within the limit: one panel
    merge_identical_series(*p);
    for (auto& panel : split_panels(*p)) o.plots.push_back(std::move(panel));
  }
  o.study = {{"provenance", provenance_json(s, command_line)}, {"scenarios", scenarios}};
  o.published = check_published(s, results);
  return o;
}

std::string table_csv(const DimensionTable& t) {
  std::ostringstream os;
  os << std::setprecision(10);
  for (std::size_t c = 0; c < t.columns.size(); ++c) os << (c ? "," : "") << t.columns[c];
  os << "\n";
  for (const auto& row : t.rows) {
    for (std::size_t c = 0; c < row.size(); ++c) {
      if (c) os << ",";
      const json& v = row[c];
      if (v.is_null()) continue;
      if (v.is_string()) {
        os << csv_escape(v.get<std::string>());
      } else if (v.is_boolean()) {
        os << (v.get<bool>() ? "true" : "false");
      } else if (v.is_number_float()) {
        os << v.get<double>();
      } else {
        os << v.dump();
      }
    }
    os << "\n";
  }
  return os.str();
}

json table_json(const DimensionTable& t, const json& provenance) {
  json rows = json::array();
  for (const auto& row : t.rows) {
    nlohmann::ordered_json r;
    for (std::size_t c = 0; c < t.columns.size(); ++c) r[t.columns[c]] = row[c];
    rows.push_back(json::parse(r.dump()));  // keys sorted in JSON; the column order is in "columns"
  }
  return {{"provenance", provenance}, {"dimension", t.name}, {"title", t.title}, {"columns", t.columns}, {"rows", rows}};
}

namespace {

std::size_t column(const DimensionTable& t, const std::string& name) {
  return static_cast<std::size_t>(std::find(t.columns.begin(), t.columns.end(), name) - t.columns.begin());
}

double num(const json& v) { return v.is_number() ? v.get<double>() : kNaN; }
std::string opt_pct(const json& lo, const json& hi) {
  if (lo.is_null() || hi.is_null()) return "";
  return "[" + fixed(100 * lo.get<double>(), 1) + ", " + fixed(100 * hi.get<double>(), 1) + "]";
}
std::string opt_num(const json& lo, const json& hi, int prec) {
  if (lo.is_null() || hi.is_null()) return "";
  return "[" + fixed(lo.get<double>(), prec) + ", " + fixed(hi.get<double>(), prec) + "]";
}
std::string opt_time(const json& lo, const json& hi) {
  if (lo.is_null() || hi.is_null()) return "";
  return "[" + format_time(lo.get<double>()) + ", " + format_time(hi.get<double>()) + "]";
}

// The main columns of each dimension as text cells, for the terminal and report.md.
std::vector<std::vector<std::string>> summary_rows(const DimensionTable& t, std::vector<std::string>& head) {
  const std::size_t label = column(t, "label"), gpus = column(t, "gpus");
  std::vector<std::vector<std::string>> out;
  auto cell = [&](const std::vector<json>& r, const std::string& c) -> const json& { return r[column(t, c)]; };
  if (t.name == "strong_scaling") {
    head = {"scenario", "N", "iteration", "iteration 90%", "epoch", "speedup", "speedup 90%", "speedup (unknowns)", "efficiency",
            "efficiency 90%", "efficiency (unknowns)"};
    for (const auto& r : t.rows)
      out.push_back({r[label].get<std::string>(), r[gpus].dump(), format_time(num(cell(r, "iteration_time_s"))),
                     opt_time(cell(r, "iteration_time_lo_s"), cell(r, "iteration_time_hi_s")), format_time(num(cell(r, "epoch_time_s"))),
                     fixed(num(cell(r, "speedup")), 2), opt_num(cell(r, "speedup_lo"), cell(r, "speedup_hi"), 2),
                     opt_num(cell(r, "speedup_scenario_lo"), cell(r, "speedup_scenario_hi"), 2),
                     fixed(100 * num(cell(r, "efficiency")), 1) + "%", opt_pct(cell(r, "efficiency_lo"), cell(r, "efficiency_hi")),
                     opt_pct(cell(r, "efficiency_scenario_lo"), cell(r, "efficiency_scenario_hi"))});
  } else if (t.name == "weak_scaling") {
    head = {"scenario", "N", "iteration", "samples/s", "samples/s per GPU", "per GPU 90%", "per GPU (unknowns)", "efficiency",
            "efficiency 90%", "efficiency (unknowns)"};
    for (const auto& r : t.rows)
      out.push_back({r[label].get<std::string>(), r[gpus].dump(), format_time(num(cell(r, "iteration_time_s"))),
                     fixed(num(cell(r, "samples_per_s")), 0), fixed(num(cell(r, "samples_per_s_per_gpu")), 0),
                     opt_num(cell(r, "samples_per_s_per_gpu_lo"), cell(r, "samples_per_s_per_gpu_hi"), 0),
                     opt_num(cell(r, "samples_per_s_per_gpu_scenario_lo"), cell(r, "samples_per_s_per_gpu_scenario_hi"), 0),
                     fixed(100 * num(cell(r, "efficiency")), 1) + "%", opt_pct(cell(r, "efficiency_lo"), cell(r, "efficiency_hi")),
                     opt_pct(cell(r, "efficiency_scenario_lo"), cell(r, "efficiency_scenario_hi"))});
  } else if (t.name == "communication") {
    head = {"scenario", "N", "iteration", "communication", "exposed", "overhead exposed", "exposed (unknowns)", "overhead total",
            "total (unknowns)", "buckets (steady)"};
    for (const auto& r : t.rows)
      out.push_back({r[label].get<std::string>(), r[gpus].dump(), format_time(num(cell(r, "iteration_time_s"))),
                     format_time(num(cell(r, "communication_time_s"))), format_time(num(cell(r, "exposed_communication_s"))),
                     fixed(100 * num(cell(r, "overhead_exposed_fraction")), 1) + "%",
                     opt_pct(cell(r, "overhead_exposed_scenario_lo"), cell(r, "overhead_exposed_scenario_hi")),
                     fixed(100 * num(cell(r, "overhead_total_fraction")), 1) + "%",
                     opt_pct(cell(r, "overhead_total_scenario_lo"), cell(r, "overhead_total_scenario_hi")),
                     cell(r, "buckets_steady").get<std::string>()});
  } else {
    head = {"scenario", "N", "parameters", "epoch", "epoch 90%", "epoch (unknowns)", "peak memory/GPU", "parameter-to-memory", "fits"};
    for (const auto& r : t.rows)
      out.push_back({r[label].get<std::string>(), r[gpus].dump(), cell(r, "parameters").dump(), format_time(num(cell(r, "epoch_time_s"))),
                     opt_time(cell(r, "epoch_time_lo_s"), cell(r, "epoch_time_hi_s")),
                     opt_time(cell(r, "epoch_time_scenario_lo_s"), cell(r, "epoch_time_scenario_hi_s")),
                     format_bytes(num(cell(r, "peak_memory_per_gpu_bytes"))),
                     fixed(100 * num(cell(r, "parameter_to_memory_ratio")), 2) + "%", cell(r, "exceeds_capacity").get<bool>() ? "NO (exceeds)" : "yes"});
  }
  return out;
}

std::string intervals_line(const StudySpec& s) {
  std::string line;
  if (s.interval_samples == 0) return "intervals: none asked for (intervals.samples: 0)";
  line = "intervals: central " + fixed(100 * s.interval_level, 0) + "% over " + std::to_string(s.interval_samples) +
         " Monte Carlo samples per scenario for calibrations with measured uncertainty";
  for (const auto& c : s.clusters)
    if (!has_measured_uncertainty(c.calibration))
      line += "; " + c.label + ": calibration '" + c.calibration.name + "' (" + c.calibration.source + ") has no measured uncertainty, no band";
  return line;
}

std::string unknowns_line(const StudySpec& s) {
  if (s.unknowns.empty()) return "unknowns: none given (no scenario bands)";
  std::string line = "unknowns (scenario bands: the envelope over " + std::to_string(s.unknown_points.size()) +
                     " samples, " + (s.unknowns.size() > kMaxCornerUnknowns ? std::string("no corners (more than ") + std::to_string(kMaxCornerUnknowns) + " unknowns), " : std::string("every corner and ")) +
                     std::to_string(s.unknown_samples) + " inside): ";
  for (std::size_t k = 0; k < s.unknowns.size(); ++k) {
    const Unknown& u = s.unknowns[k];
    line += (k ? "; " : "") + u.key + " ";
    if (u.kind == Unknown::Kind::choice) {
      for (std::size_t c = 0; c < u.choices.size(); ++c) line += (c ? "|" : "") + u.choices[c];
    } else {
      line += "[" + u.text(u.kind == Unknown::Kind::pow2 ? u.at(0) : u.lo) + ", " + u.text(u.kind == Unknown::Kind::pow2 ? u.at(1) : u.hi) + "]";
    }
    line += " (point prediction: " + u.text(u.nominal) + ")";
  }
  return line;
}

}  // namespace

std::string tables_text(const StudySpec& s, const StudyOutputs& o) {
  std::ostringstream os;
  os << "kanscale study " << s.name << ": " << s.scenarios.size() << " scenario(s) x " << s.gpus.size() << " GPU count(s); seed "
     << s.seed << "\n  " << intervals_line(s) << "\n  " << unknowns_line(s) << "\n";
  for (const auto& n : s.notes) os << "  note: " << n << "\n";
  for (const auto& t : o.tables) {
    if (t.rows.empty()) continue;
    std::vector<std::string> head;
    const auto rows = summary_rows(t, head);
    std::vector<std::size_t> w(head.size());
    for (std::size_t c = 0; c < head.size(); ++c) {
      w[c] = head[c].size();
      for (const auto& r : rows) w[c] = std::max(w[c], r[c].size());
    }
    os << "\n" << t.title << " (" << t.name << ".csv)\n";
    for (std::size_t c = 0; c < head.size(); ++c) os << std::left << std::setw(static_cast<int>(w[c] + 2)) << head[c];
    os << "\n";
    for (const auto& r : rows) {
      for (std::size_t c = 0; c < r.size(); ++c) os << std::left << std::setw(static_cast<int>(w[c] + 2)) << r[c];
      os << "\n";
    }
  }
  if (!o.published.empty()) {
    os << "\nPublished figures (" << s.published.source << "; published.json, report.md)\n";
    for (const auto& c : o.published) {
      os << "  " << c.figure << " [" << c.scenario << "]: published " << c.published << ", predicted " << c.predicted << ", band "
         << c.band << (c.inside ? " (inside" : " (OUTSIDE") << (c.half_width > 0 ? ", half-width " + fixed(100 * c.half_width, 1) + "%)" : ")")
         << "\n";
      for (const auto& n : c.needs) os << "      " << n.key << " alone: " << n.text << "\n";
    }
  }
  return os.str();
}

std::string study_markdown(const StudySpec& s, const StudyOutputs& o) {
  std::ostringstream md;
  const json& prov = o.study["provenance"];
  md << "# kanscale study: " << s.name << "\n\n";
  if (!s.description.empty()) md << s.description << "\n\n";
  md << "- Study file: `" << s.file << "`\n"
     << "- Command: `" << prov["command_line"].get<std::string>() << "`\n"
     << "- " << describe(provenance()) << "\n"
     << "- Seed: " << s.seed << "; " << s.iterations << " iterations replayed per point (the first and steady ones)\n"
     << "- " << intervals_line(s) << "\n"
     << "- " << unknowns_line(s) << "\n"
     << "- Workload: " << s.workload.name << " (`" << s.workload.file << "`): widths " << widths_text(s.workload.widths) << ", G="
     << s.workload.grid_size << ", k=" << s.workload.spline_order << ", batch " << s.workload.batch_per_gpu << " per GPU, dataset "
     << s.workload.dataset_size << " samples, " << s.workload.epochs << " epoch(s)\n"
     << "- GPU counts: ";
  for (std::size_t i = 0; i < s.gpus.size(); ++i) md << (i ? ", " : "") << s.gpus[i];
  md << "\n- Swept: ";
  for (std::size_t i = 0; i < s.swept.size(); ++i) md << (i ? ", " : "") << s.swept[i];
  md << " (" << s.scenarios.size() << " scenarios)\n\n## Clusters and calibrations\n\n";
  md << "| label | cluster file | nodes | GPU | collectives | calibration | measured on |\n|---|---|---|---|---|---|---|\n";
  for (const auto& c : s.clusters)
    md << "| " << c.label << " | `" << c.cluster.file << "` | " << c.cluster.nodes << " x " << c.cluster.gpus_per_node << " | "
       << c.cluster.gpu.model << " | " << (c.cluster.collectives.family == CollFamily::nccl ? "NCCL " : "MPI ")
       << c.cluster.collectives.version << " | " << c.calibration.name << " (" << c.calibration.source
       << (c.calibration_file.empty() ? "" : ", `" + c.calibration_file + "`") << ") | "
       << (c.calibration.machine.empty() ? "-" : describe(c.calibration.machine)) << " |\n";
  for (const auto& t : o.tables) {
    if (t.rows.empty()) continue;
    md << "\n## " << t.title << "\n\n";
    for (const auto& p : o.plots) {
      const bool mine = (t.name == "strong_scaling" && p.name.rfind("strong_", 0) == 0) ||
                        (t.name == "weak_scaling" && p.name.rfind("weak_throughput", 0) == 0) ||
                        (t.name == "communication" && p.name.rfind("communication_overhead", 0) == 0) ||
                        (t.name == "model_size" && p.name.rfind("model_size", 0) == 0);
      if (mine) md << "![" << p.title << "](" << p.name << ".svg)\n\n";
    }
    md << "Data: [" << t.name << ".csv](" << t.name << ".csv), [" << t.name << ".json](" << t.name << ".json)\n\n";
    std::vector<std::string> head;
    const auto rows = summary_rows(t, head);
    md << "|";
    for (const auto& h : head) md << " " << h << " |";
    md << "\n|";
    for (std::size_t c = 0; c < head.size(); ++c) md << "---|";
    md << "\n";
    for (const auto& r : rows) {
      md << "|";
      for (const auto& c : r) md << " " << c << " |";
      md << "\n";
    }
  }
  if (!o.published.empty()) md << published_markdown(s, o.published);
  if (!s.notes.empty()) {
    md << "\n## Notes\n\n";
    for (const auto& n : s.notes) md << "- " << n << "\n";
  }
  std::set<std::string> warnings;
  for (const auto& sc : o.study["scenarios"])
    for (const auto& w : sc["result"]["warnings"]) warnings.insert(sc["label"].get<std::string>() + ": " + w.get<std::string>());
  if (!warnings.empty()) {
    md << "\n## Warnings\n\n";
    for (const auto& w : warnings) md << "- " << w << "\n";
  }
  md << "\nEvery plot's gnuplot script (`.gp`) and data (`.dat`) lie beside its SVG and PNG: edit the script and run `gnuplot NAME.gp` "
        "in this directory to restyle it. study.json holds every scenario's full result.\n";
  return md.str();
}

std::vector<std::pair<std::string, std::string>> study_files(const StudySpec& s, const StudyOutputs& o) {
  std::vector<std::pair<std::string, std::string>> files;
  const json& prov = o.study["provenance"];
  for (const auto& t : o.tables) {
    files.emplace_back(t.name + ".csv", table_csv(t));
    files.emplace_back(t.name + ".meta.json", csv_meta_text(t.name + ".csv", prov));
    files.emplace_back(t.name + ".json", table_json(t, prov).dump(2) + "\n");
  }
  for (const auto& p : o.plots) {
    files.emplace_back(p.name + ".gp", gnuplot_script(p));
    files.emplace_back(p.name + ".dat", gnuplot_data(p));
  }
  files.emplace_back("study.json", o.study.dump(2) + "\n");
  if (s.published.given)
    files.emplace_back("published.json", nlohmann::json{{"provenance", prov}, {"source", s.published.source},
                                                         {"figures", published_json(o.published)}}.dump(2) + "\n");
  files.emplace_back("report.md", study_markdown(s, o));
  return files;
}

}  // namespace ks
