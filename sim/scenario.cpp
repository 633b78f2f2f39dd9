#include "scenario.hpp"

#include <cmath>
#include <cstdlib>
#include <functional>
#include <stdexcept>

#include "model/kan_model.hpp"
#include "model/plot.hpp"
#include "model/collectives.hpp"
#include "model/units.hpp"
#include <algorithm>
#include <sstream>
#include "model/yaml_reader.hpp"

namespace ks {

std::string widths_text(const std::vector<std::int64_t>& w) {
  std::string s;
  for (auto v : w) s += (s.empty() ? "" : "-") + std::to_string(v);
  return s;
}

void apply_network_factor(Cluster& c, Calibration& cal, const std::string& what, double f) {
  auto scale_hw = [&](int level) {
    for (auto& algo : cal.nccl.hw_latency_us[level])
      for (double& v : algo) v *= f;
  };
  if (what == "intra_bandwidth") {
    c.intra.bandwidth_Bps *= f;
    if (cal.nccl_bus_bw_intra_Bps) *cal.nccl_bus_bw_intra_Bps *= f;
    for (auto& r : cal.mpi_regimes)
      if (r.bandwidth_Bps) *r.bandwidth_Bps *= f;
    if (cal.mpi_broadcast && cal.mpi_broadcast->bandwidth_Bps) *cal.mpi_broadcast->bandwidth_Bps *= f;
  } else if (what == "inter_bandwidth") {
    c.net.nic_bandwidth_Bps *= f;
    if (cal.nccl_bus_bw_inter_Bps) *cal.nccl_bus_bw_inter_Bps *= f;
  } else if (what == "intra_latency") {
    c.intra.latency_s *= f;
    scale_hw(0);  // NVLink
    scale_hw(1);  // PCI
    for (auto& r : cal.mpi_regimes)
      if (r.latency_s) *r.latency_s *= f;
    if (cal.mpi_broadcast) cal.mpi_broadcast->latency_s *= f;
  } else if (what == "inter_latency") {
    c.net.latency_s *= f;
    scale_hw(2);  // network
  } else {
    throw std::invalid_argument("apply_network_factor: unknown network value " + what);
  }
}

bool network_factor_moves(const Cluster& c, const Calibration& cal, const Layout& layout, const std::string& what, double factor) {
  Cluster c2 = c;
  Calibration cal2 = cal;
  apply_network_factor(c2, cal2, what, factor);
  const auto a = make_collective_model(c, cal), b = make_collective_model(c2, cal2);
  for (double bytes = 4096; bytes <= 268435456; bytes *= 4)
    if (a->allreduce(bytes, layout).time_s != b->allreduce(bytes, layout).time_s ||
        a->broadcast(bytes, layout).time_s != b->broadcast(bytes, layout).time_s)
      return true;
  return false;
}

// "2x", "0.5x" or a plain number: a positive finite factor.
double parse_factor(const std::string& text) {
  std::string t = text;
  if (!t.empty() && (t.back() == 'x' || t.back() == 'X')) t.pop_back();
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (t.empty() || end != t.c_str() + t.size() || !std::isfinite(v) || v <= 0 || v > 1e6) return -1;
  return v;
}

namespace {

// One swept key: its values as text, and how a value changes a scenario.
struct Axis {
  std::string key;
  std::vector<std::string> values;
  std::function<void(Scenario&, std::size_t)> apply;
};

StudySpec read_study(YamlMap m, double max_events, const std::string& calibration_override = "") {
  StudySpec s;
  s.file = m.file();
  s.name = m.string("name");
  if (!plot_safe_name(s.name)) m.fail("name", "\"" + s.name + "\" holds characters plots cannot show safely; expected " + std::string(kPlotSafeCharacters));
  s.description = m.string_opt("description").value_or("");
  s.seed = static_cast<std::uint64_t>(m.integer_opt("seed", 0, std::numeric_limits<std::int64_t>::max()).value_or(0));
  s.iterations = static_cast<int>(m.integer_opt("iterations", 2, 1000).value_or(5));
  if (auto iv = m.map_opt("intervals")) {
    s.interval_samples = static_cast<int>(iv->integer_opt("samples", 0, 100000).value_or(0));
    s.interval_level = iv->number_opt("level", Bound::positive).value_or(0.9);
    if (!(s.interval_level < 1)) iv->fail("level", "expected a number between 0 and 1, e.g. 0.9");
    iv->finish();
  }

  s.workload_file = m.string("workload");
  try {
    s.workload = load_workload(s.workload_file);
  } catch (const InputError& e) {
    m.fail("workload", e.what());
  }

  const std::vector<YamlMap> cl = m.map_list_opt("clusters");
  if (cl.empty()) m.fail("clusters", "expected a list of clusters, each {file: CLUSTER.yaml, calibration: FILE|datasheet}");
  for (std::size_t i = 0; i < cl.size(); ++i) {
    YamlMap c = cl[i];
    StudyCluster sc;
    const std::string file = c.string("file");
    try {
      sc.cluster = load_cluster(file);
    } catch (const InputError& e) {
      c.fail("file", e.what());
    }
    if (auto nodes = c.integer_opt("nodes", 1, 1 << 24)) sc.cluster.nodes = static_cast<int>(*nodes);
    sc.label = c.string_opt("label").value_or(sc.cluster.name);
    if (!plot_safe_name(sc.label))
      c.fail(c.has("label") ? "label" : "file", "cluster label \"" + sc.label +
                                                  "\" holds characters plots cannot show safely; expected " + std::string(kPlotSafeCharacters));
    for (const auto& other : s.clusters)
      if (other.label == sc.label) c.fail("label", "\"" + sc.label + "\" names two clusters; give each a label of its own");
    const std::string given = c.string_opt("calibration").value_or("datasheet");
    const std::string cal = calibration_override.empty() ? given : calibration_override;
    try {
      sc.calibration = cal == "datasheet" ? datasheet_calibration(sc.cluster, s.workload.precision)
                                          : load_calibration(cal, sc.cluster, s.workload.precision);
    } catch (const InputError& e) {
      c.fail("calibration", e.what());
    }
    if (cal != "datasheet") sc.calibration_file = cal;
    c.finish();
    s.clusters.push_back(std::move(sc));
  }

  YamlMap sw = m.map("sweep");
  for (auto g : sw.integer_list("gpus", 1, 1, 1 << 24)) s.gpus.push_back(static_cast<int>(g));
  std::vector<Axis> axes;
  if (sw.has("widths")) {
    const auto ws = sw.integer_lists("widths", 1, 2);
    Axis a{"widths", {}, nullptr};
    for (std::size_t i = 0; i < ws.size(); ++i) {
      if (const std::string why = kan_size_problem(KanShape{ws[i], s.workload.grid_size, s.workload.spline_order}); !why.empty())
        sw.fail_item("widths", i, why);
      a.values.push_back(widths_text(ws[i]));
    }
    a.apply = [ws](Scenario& sc, std::size_t i) { sc.workload.widths = ws[i]; };
    axes.push_back(std::move(a));
  }
  if (sw.has("grid_size")) {
    const auto gs = sw.integer_list("grid_size", 1, 1, 1 << 16);
    Axis a{"grid_size", {}, [gs](Scenario& sc, std::size_t i) { sc.workload.grid_size = static_cast<int>(gs[i]); }};
    for (auto g : gs) a.values.push_back(std::to_string(g));
    axes.push_back(std::move(a));
  }
  if (sw.has("batch_per_gpu")) {
    const auto bs = sw.integer_list("batch_per_gpu", 1, 1, std::int64_t{1} << 40);
    Axis a{"batch_per_gpu", {}, [bs](Scenario& sc, std::size_t i) { sc.workload.batch_per_gpu = bs[i]; }};
    for (auto b : bs) a.values.push_back(std::to_string(b));
    axes.push_back(std::move(a));
  }
  if (sw.has("bucket_cap")) {
    const auto caps = sw.quantity_list("bucket_cap", Quantity::size, Bound::positive);
    Axis a{"bucket_cap", {}, [caps](Scenario& sc, std::size_t i) { sc.workload.ddp.bucket_cap_bytes = caps[i]; }};
    for (double c : caps) a.values.push_back(format_bytes(c));
    axes.push_back(std::move(a));
  }
  if (sw.has("gradient_as_bucket_view")) {
    const auto v = sw.choice_list("gradient_as_bucket_view", {"false", "true"});
    Axis a{"gradient_as_bucket_view", v, [v](Scenario& sc, std::size_t i) { sc.workload.ddp.gradient_as_bucket_view = v[i] == "true"; }};
    axes.push_back(std::move(a));
  }
  if (sw.has("gpus_per_node")) {
    const auto g = sw.integer_list("gpus_per_node", 1, 1, 1 << 16);
    Axis a{"gpus_per_node", {}, [g](Scenario& sc, std::size_t i) { sc.options.gpus_per_node = static_cast<int>(g[i]); }};
    for (auto v : g) a.values.push_back(std::to_string(v));
    axes.push_back(std::move(a));
  }
  // NCCL_ALGO / NCCL_PROTO restrictions ("all": the cluster's own list)
  if (sw.has("nccl_algo")) {
    const auto v = sw.choice_list("nccl_algo", {"all", "ring", "tree"});
    axes.push_back(Axis{"nccl_algo", v, [v](Scenario& sc, std::size_t i) {
                          if (v[i] != "all") sc.cluster_config.collectives.algorithms = {v[i] == "ring" ? Algo::ring : Algo::tree};
                        }});
  }
  if (sw.has("nccl_proto")) {
    const auto v = sw.choice_list("nccl_proto", {"all", "LL", "LL128", "Simple"});
    axes.push_back(Axis{"nccl_proto", v, [v](Scenario& sc, std::size_t i) {
                          if (v[i] == "all") return;
                          sc.cluster_config.collectives.protocols = {v[i] == "LL" ? Proto::ll : v[i] == "LL128" ? Proto::ll128 : Proto::simple};
                        }});
  }
  if (auto net = sw.map_opt("network")) {
    for (const std::string what : {"intra_bandwidth", "inter_bandwidth", "intra_latency", "inter_latency"}) {
      if (!net->has(what)) continue;
      const auto texts = net->string_list(what);
      std::vector<double> f;
      for (std::size_t i = 0; i < texts.size(); ++i) {
        f.push_back(parse_factor(texts[i]));
        if (f.back() < 0) net->fail_item(what, i, "\"" + texts[i] + "\": expected a positive factor such as 2x or 0.5x");
        if (f.back() == 1) continue;
        // a what-if that moves nothing in the model in use is refused, not
        // ignored; one that acts on some clusters only is noted for the others
        const int n = *std::max_element(s.gpus.begin(), s.gpus.end());
        std::vector<std::string> idle;
        for (const auto& c : s.clusters) {
          Layout l;
          try {
            l = layout_for(c.cluster, n, std::nullopt);
          } catch (const InputError&) {
            continue;  // reported with the GPU counts below
          }
          if (!network_factor_moves(c.cluster, c.calibration, l, what, f.back()))
            idle.push_back("cluster '" + c.label + "' (" + std::to_string(l.nodes) + " node(s) at " + std::to_string(n) + " GPUs, " +
                           (c.cluster.collectives.family == CollFamily::nccl
                                ? "NCCL: another link bounds the bandwidth, or the level is not used"
                                : "MPI: its fitted regimes hold the latency and bandwidth") +
                           ")");
        }
        if (idle.size() == s.clusters.size())
          net->fail_item(what, i, texts[i] + " moves nothing in the collective model in use for " + idle.front() +
                                      "; drop it or sweep GPU counts where it acts");
        for (const auto& c : idle)
          s.notes.push_back("network." + what + " " + texts[i] + " moves nothing for " + c + ": its scenarios equal the 1x ones");
      }
      std::vector<std::string> labels;
      for (double v : f) {
        std::ostringstream os;
        os << v << "x";
        labels.push_back(os.str());
      }
      axes.push_back(Axis{"network." + what, labels, [f, what](Scenario& sc, std::size_t i) {
                            if (f[i] != 1) apply_network_factor(sc.cluster_config, sc.calibration, what, f[i]);
                          }});
    }
    net->finish();
  }
  {
    const std::vector<std::string> v = sw.has("scaling") ? sw.choice_list("scaling", {"strong", "strong-global-batch", "weak"})
                                                         : std::vector<std::string>{"strong", "weak"};
    axes.push_back(Axis{"scaling", v, [v](Scenario& sc, std::size_t i) {
                          sc.options.scaling = v[i] == "strong" ? Scaling::strong
                                               : v[i] == "weak" ? Scaling::weak
                                                                : Scaling::strong_global_batch;
                        }});
  }
  sw.finish();
  m.finish();
  for (const auto& a : axes) {
    for (std::size_t i = 0; i < a.values.size(); ++i)
      for (std::size_t j = 0; j < i; ++j)
        if (a.values[i] == a.values[j]) sw.fail(a.key, "value " + a.values[i] + " is given twice");
    if (a.values.size() > 1 || a.key == "scaling") s.swept.push_back(a.key);
  }
  if (s.clusters.size() > 1) s.swept.insert(s.swept.begin(), "cluster");

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
      s.scenarios.push_back(std::move(sc));
      std::size_t a = axes.size();
      while (a > 0 && ++idx[a - 1] == axes[a - 1].values.size()) idx[--a] = 0;
      if (a == 0) break;
    }
  }

  // Everything a run needs is checked before it starts: the workload each
  // scenario makes, every layout, the family of each restriction, the work.
  WorkEstimate total;
  for (const auto& sc : s.scenarios) {
    const std::string where = "scenario '" + sc.label + "'";
    const Cluster& cc = sc.cluster_config;
    if (cc.collectives.family != CollFamily::nccl)
      for (const auto& [key, value] : sc.settings)
        if ((key == "nccl_algo" || key == "nccl_proto") && value != "all")
          sw.fail(key, "cluster '" + s.clusters[sc.cluster].label + "' (" + cc.file + ") uses MPI collectives; " + key +
                           " restricts NCCL's choice only");
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
      sw.fail("gpus", e.what());
    }
    WorkEstimate e = estimate_study_work(sc.workload, sc.options);
    if (s.interval_samples > 0 && has_measured_uncertainty(sc.calibration)) e.events *= s.interval_samples + 1;
    total.events += e.events;
    total.bytes = std::max(total.bytes, e.bytes);
  }
  try {
    check_work(total, max_events, "the study's scenarios (" + std::to_string(s.scenarios.size()) + ") and GPU counts");
  } catch (const InputError& e) {
    sw.fail("gpus", e.what());
  }
  return s;
}

}  // namespace

StudySpec load_study(const std::string& path, double max_events, const std::string& calibration_override) {
  return read_study(YamlMap::load_file(path), max_events, calibration_override);
}
StudySpec parse_study(const std::string& text, const std::string& name, double max_events) {
  return read_study(YamlMap::load_string(text, name), max_events);
}

std::vector<StudyResult> run_scenarios(const StudySpec& s, std::size_t begin, std::size_t end) {
  std::vector<StudyResult> out;
  for (std::size_t i = begin; i < end && i < s.scenarios.size(); ++i) {
    const Scenario& sc = s.scenarios[i];
    out.push_back(run_study(sc.cluster_config, sc.workload, sc.calibration, sc.options));
  }
  return out;
}

}  // namespace ks
