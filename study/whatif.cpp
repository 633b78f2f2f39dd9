#include "whatif.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <map>
#include <sstream>

#include "model/limits.hpp"
#include "model/statistics.hpp"
#include "model/units.hpp"
#include "formats/yaml_reader.hpp"
#include "sim/report.hpp"
#include "scenario.hpp"

namespace ks {

const char* const kWhatifChangeKeys =
    "network.latency, network.nic_bandwidth, intra_node.latency, intra_node.bandwidth (factors: 2x, 0.5x); "
    "compute_time (factor on every op's time); host_overhead (a time or factor); batch_per_gpu, grid_size, gpus "
    "(a value or factor); widths (e.g. 64-512-512-1); bucket_cap, gpu.memory (a size or factor); gpus_per_node; "
    "gradient_as_bucket_view, broadcast_buffers (true|false); nccl_algo (all|ring|tree); nccl_proto (all|LL|LL128|Simple); "
    "nccl_at_1node, nccl_at_2nodes, nccl_at_4nodes, ... nccl_at_1024nodes (a factor on NCCL's time at that many nodes)";

namespace {

using nlohmann::json;

std::string whole_pct(double fraction) { return printf_number("%.0f%%", 100 * fraction); }

std::string cell_text(const json& v, const std::string& kind, const std::string& unit = "") {
  if (v.is_null()) return "-";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  const double x = v.get<double>();
  const std::string k = kind == "by_unit" ? unit : kind;
  if (k == "time" || k == "s") return format_time(x);
  if (k == "bytes" || k == "B") return format_bytes(x);
  if (k == "int") return printf_number("%.0f", x);
  if (k == "ratio") return printf_number("%.3f", x);
  if (k == "gpu_hours") return printf_number("%.4g", x);
  if (k == "money") return printf_number("%.2f", x);
  if (k == "percent") return printf_number("%+.1f%%", x);
  return printf_number("%.4g", x);
}

// A prediction at n GPUs (gpn per node, or the cluster's), with the
// speedup and efficiency against one GPU; no trace; with `bands`, the
// options' interval samples (a budget's probability), else none.
ScalingPoint predict(const Cluster& c, const Workload& w, const Calibration& cal, StudyOptions o, int n,
                     std::optional<int> gpn, bool bands = false) {
  o.gpus = {n};
  o.gpus_per_node = gpn;
  o.trace = false;
  if (!bands) o.interval_samples = 0;
  return run_study(c, w, cal, o).points.front();
}

// The answer's words on the interval of a time to train: "(90% interval
// 2.9 s to 3.1 s; within the budget with probability 0.94)".
std::string interval_words(const ScalingPoint& p, double level, const std::optional<double>& budget_s) {
  if (p.time_to_train_samples.empty()) return "";
  const Band b = central_band(p.time_to_train_samples, level);
  std::string s = " (" + printf_number("%.0f", 100 * level) + "% interval " + format_time(b.lo) + " to " + format_time(b.hi);
  if (budget_s) s += "; within the budget with probability " + printf_number("%.2f", *probability_within(p, *budget_s));
  return s + ")";
}

// How candidates were judged against the budget, for the reasoning.
std::string confidence_words(const std::vector<ScalingPoint>& pts, const std::optional<double>& confidence, const std::string& calibration,
                             int interval_samples) {
  bool samples = false;
  for (const auto& p : pts) samples = samples || !p.time_to_train_samples.empty();
  if (!confidence) return "judged on the point prediction (--confidence point)";
  if (interval_samples == 0) return "judged on the point prediction: --interval-samples 0 turns the intervals off";
  if (!samples)
    return "judged on the point prediction: calibration '" + calibration + "' records no measured uncertainty, so there is no interval";
  return "judged at the " + printf_number("%g", *confidence) + " quantile of each candidate's time to train over " +
         std::to_string(pts.front().time_to_train_samples.size()) + " interval samples (--confidence; point: on the prediction)";
}

// The replay's work for candidates at `counts` GPUs, each tried `tries`
// times (layouts, settings), with its one-GPU baseline; refused above the
// query's --max-events before anything runs.
void check_candidates(const WhatifBase& b, const Workload& w, const std::vector<int>& counts, double tries, const std::string& what) {
  WorkEstimate total;
  for (int n : counts) {
    StudyOptions o = b.options;
    o.gpus = {n};
    const WorkEstimate e = estimate_study_work(w, o);
    total.events += tries * e.events;
    total.bytes = std::max(total.bytes, e.bytes);
  }
  check_work(total, b.max_events, what);
}

// A note when an epoch holds only a few iterations: the short last batch
// is timed as a full one, so times move in whole iterations there.
std::string few_iterations(const ScalingPoint& p) {
  if (p.iterations_per_epoch > 4) return "";
  return "at " + std::to_string(p.gpus) + " GPU(s) an epoch is only " + std::to_string(p.iterations_per_epoch) +
         " iteration(s) of " + std::to_string(p.batch_per_gpu) +
         " samples per GPU (a short last batch is timed as a full one): time and GPU-hours move in whole iterations here";
}

// Where the chosen point's batch per GPU is not the workload's: says so.
void note_batch(WhatifAnswer& a, const WhatifBase& b, const ScalingPoint& p) {
  if (const std::string n = batch_change_note(b.workload, b.options.scaling, p); !n.empty()) a.reasoning.push_back(n);
}

// The median iteration split into compute and exposed communication.
std::string breakdown(const ScalingPoint& p) {
  const double it = p.iteration_s.median, cp = p.compute_s.median, ex = p.exposed_s.median;
  std::string s = "iteration " + format_time(it) + ": compute " + format_time(cp) + " (" + whole_pct(cp / it) +
                  "), exposed communication " + format_time(ex) + " (" + whole_pct(ex / it) + ")";
  const double rest = it - cp - ex;
  if (rest > 1e-3 * it) s += ", waiting for slower ranks " + format_time(rest);
  s += "; dominant: " + std::string(cp >= ex ? "compute" : "exposed communication");
  if (p.gpus > 1 && !p.steady_plan.empty())
    s += " (" + std::to_string(p.steady_plan.size()) + " bucket(s), the last " + p.steady_plan.back().label + ")";
  return s;
}

std::string layout_text(int gpus, int nodes) {
  return std::to_string(gpus) + " GPU(s) on " + std::to_string(nodes) + " node(s) x " + std::to_string(gpus / nodes);
}

std::vector<int> powers_of_two_up_to(int n) {
  std::vector<int> v;
  for (int g = 1; g <= n && g > 0; g *= 2) v.push_back(g);
  return v;
}

void require_epochs(double e) {
  if (!(e >= 1 && e <= static_cast<double>(kMaxEpochs) && e == std::floor(e)))
    throw InputError("--epochs: expected a whole number of epochs from 1 to " + std::to_string(kMaxEpochs) + ", got " + printf_number("%.10g", e));
}

// How far a candidate misses: max(time / budget, target efficiency /
// efficiency); at most 1 when it meets both.
double miss(double time_s, double efficiency, std::optional<double> budget_s, std::optional<double> min_eff) {
  double m = 0;
  if (budget_s) m = std::max(m, time_s / *budget_s);
  if (min_eff) m = std::max(m, efficiency > 0 ? *min_eff / efficiency : 1e300);
  return m;
}

// The candidates whose predicted peak memory exceeds their GPU's, ruled out
// of every answer: "1, 2 GPUs: 88.2 GiB of 40.0 GiB" (the largest need).
struct MemoryRule {
  std::vector<std::string> over;  // candidate names, each with its need and its GPU's capacity
  double least_peak = 0, least_capacity = 0;  // the candidate that misses by least
  std::size_t fitting = 0;
  bool fits(const std::string& name, const ScalingPoint& p) {
    if (!p.memory.exceeds_capacity()) {
      ++fitting;
      return true;
    }
    over.push_back(name + " " + format_bytes(p.memory.peak_bytes) + " of " + format_bytes(p.memory.capacity_bytes));
    if (least_peak == 0 || p.memory.peak_bytes - p.memory.capacity_bytes < least_peak - least_capacity) {
      least_peak = p.memory.peak_bytes;
      least_capacity = p.memory.capacity_bytes;
    }
    return false;
  }
  // the reasoning line, "" when every candidate fits
  std::string line() const {
    if (over.empty()) return "";
    std::string names;
    for (std::size_t i = 0; i < over.size(); ++i) names += (i ? ", " : "") + over[i];
    return "ruled out, over the GPU's memory: " + names;
  }
  // when nothing fits: the answer (exit 1)
  void nothing_fits(WhatifAnswer& a, const std::string& gpu) const {
    a.met = false;
    a.nothing_fits = true;
    a.answer = "nothing searched fits in the " + gpu + " memory: the closest candidate needs " + format_bytes(least_peak) + " of " +
               format_bytes(least_capacity) + "; the smallest setup that would fit: a GPU with at least " + format_bytes(least_peak) +
               ", or a smaller model or per-GPU batch (kanscale whatif model finds the largest that fits)";
  }
};

}  // namespace

json WhatifAnswer::to_json() const {
  json j;
  j["query"] = query;
  j["met"] = met;
  j["answer"] = answer;
  j["reasoning"] = reasoning;
  j["inputs"] = inputs;
  json cols = json::array();
  for (const auto& c : columns) cols.push_back({{"key", c.key}, {"unit", c.kind}});
  j["columns"] = cols;
  json rs = json::array();
  for (const auto& r : rows) {
    json o = json::object();
    for (std::size_t i = 0; i < columns.size() && i < r.size(); ++i) o[columns[i].key] = r[i];
    rs.push_back(o);
  }
  j["rows"] = rs;
  j["chosen_row"] = chosen >= 0 ? json(chosen) : json(nullptr);
  j["nothing_fits"] = nothing_fits;
  return j;
}

std::string WhatifAnswer::text() const {
  std::ostringstream os;
  os << (met ? "answer: " : nothing_fits ? "nothing fits: " : "no candidate meets it: ") << answer << "\n";
  if (!reasoning.empty()) {
    os << "why:\n";
    for (const auto& r : reasoning) os << "  - " << r << "\n";
  }
  os << "searched (" << rows.size() << " row(s); * marks the " << (met ? "answer" : "closest") << "):\n";
  std::size_t unit_col = columns.size();
  for (std::size_t i = 0; i < columns.size(); ++i)
    if (columns[i].key == "unit") unit_col = i;
  std::vector<std::vector<std::string>> cells;
  std::vector<std::size_t> width(columns.size(), 0);
  for (std::size_t i = 0; i < columns.size(); ++i) width[i] = columns[i].key.size();
  for (const auto& r : rows) {
    std::vector<std::string> line;
    const std::string unit = unit_col < r.size() && r[unit_col].is_string() ? r[unit_col].get<std::string>() : "";
    for (std::size_t i = 0; i < columns.size(); ++i) {
      line.push_back(cell_text(i < r.size() ? r[i] : json(nullptr), columns[i].kind, unit));
      width[i] = std::max(width[i], line.back().size());
    }
    cells.push_back(std::move(line));
  }
  auto put = [&](const std::vector<std::string>& line, bool mark) {
    os << (mark ? "* " : "  ");
    for (std::size_t i = 0; i < line.size(); ++i) os << std::left << std::setw(static_cast<int>(width[i]) + 2) << line[i];
    os << "\n";
  };
  std::vector<std::string> head;
  for (const auto& c : columns) head.push_back(c.key);
  put(head, false);
  for (std::size_t r = 0; r < cells.size(); ++r) put(cells[r], static_cast<int>(r) == chosen);
  return os.str();
}

double time_to_train_at(const ScalingPoint& p, const std::optional<double>& confidence) {
  if (!confidence || p.time_to_train_samples.empty()) return p.time_to_train_s;
  return quantile(p.time_to_train_samples, *confidence);
}

std::optional<double> probability_within(const ScalingPoint& p, double budget_s) {
  if (p.time_to_train_samples.empty()) return std::nullopt;
  double in = 0;
  for (double t : p.time_to_train_samples) in += t <= budget_s;
  return in / static_cast<double>(p.time_to_train_samples.size());
}

// ---------------------------------------------------------------- gpus
namespace {

// whatif gpus' answer when a GPU count meets the budget: why the next count
// down does not do.
void explain_met(WhatifAnswer& a, const std::vector<ScalingPoint>& pts, const GpusQuery& q, const std::string& budget) {
  const ScalingPoint& p = pts[a.chosen];
  a.answer = layout_text(p.gpus, p.nodes) + " train " + printf_number("%.0f", q.epochs) + " epoch(s) in " + format_time(p.time_to_train_s) +
             interval_words(p, 0.9, q.budget_s) + ", within " + budget + " (parallel efficiency " + printf_number("%.3f", p.efficiency) + ", " +
             printf_number("%.4g", p.gpu_hours) + " GPU-hours)";
  a.reasoning.push_back(breakdown(p));
  if (const std::string f = few_iterations(p); !f.empty()) a.reasoning.push_back(f);
  if (p.gpus > 1) {
    // the next count down (its fastest layout): why it does not do
    int below = -1;
    for (std::size_t k = 0; k < pts.size(); ++k) {
      if (pts[k].gpus >= p.gpus || pts[k].memory.exceeds_capacity()) continue;
      if (below < 0 || pts[k].gpus > pts[below].gpus ||
          (pts[k].gpus == pts[below].gpus && pts[k].time_to_train_s < pts[below].time_to_train_s))
        below = static_cast<int>(k);
    }
    if (below >= 0) {
      const ScalingPoint& o = pts[static_cast<std::size_t>(below)];
      a.reasoning.push_back(std::to_string(o.gpus) + " GPU(s) would take " + format_time(o.time_to_train_s) + interval_words(o, 0.9, q.budget_s) +
                            " at efficiency " + printf_number("%.3f", o.efficiency) + ": " +
                            (time_to_train_at(o, q.confidence) > q.budget_s ? "over the time budget" : "below the efficiency asked"));
    }
  }
}

// ... and when none does: the closest, and which constraint excludes what.
void explain_missed(WhatifAnswer& a, const std::vector<ScalingPoint>& pts, const GpusQuery& q, const std::string& budget) {
  a.met = false;
  double best = 1e300;
  for (std::size_t i = 0; i < pts.size(); ++i) {
    if (pts[i].memory.exceeds_capacity()) continue;
    const double m = miss(pts[i].time_to_train_s, pts[i].efficiency, q.budget_s, q.min_efficiency);
    if (m < best) {
      best = m;
      a.chosen = static_cast<int>(i);
    }
  }
  const ScalingPoint& p = pts[a.chosen];
  a.answer = "no GPU count searched trains " + printf_number("%.0f", q.epochs) + " epoch(s) within " + budget + "; closest: " +
             layout_text(p.gpus, p.nodes) + " in " + format_time(p.time_to_train_s) + " (" + printf_number("%.3g", p.time_to_train_s / q.budget_s) +
             "x the budget" + [&] {
               const auto pr = probability_within(p, q.budget_s);
               return pr ? ", within it with probability " + printf_number("%.2f", *pr) : std::string();
             }() + ") at efficiency " + printf_number("%.3f", p.efficiency);
  a.reasoning.push_back(breakdown(p));
  // which constraint excludes what: the GPU counts that meet each alone
  int most_efficient = 0, fewest_fast = 0;  // the largest count meeting the efficiency, the smallest meeting the time
  double fastest = 1e300;
  for (const auto& o : pts) {
    if (o.memory.exceeds_capacity()) continue;  // ruled out: said in its own line
    fastest = std::min(fastest, o.time_to_train_s);
    if (q.min_efficiency && o.efficiency >= *q.min_efficiency) most_efficient = std::max(most_efficient, o.gpus);
    if (time_to_train_at(o, q.confidence) <= q.budget_s && (fewest_fast == 0 || o.gpus < fewest_fast)) fewest_fast = o.gpus;
  }
  if (fewest_fast == 0) {
    a.reasoning.push_back("no candidate meets the time budget: the fastest takes " + format_time(fastest) + " (" +
                          printf_number("%.3g", fastest / q.budget_s) + "x the budget)" +
                          (q.min_efficiency && most_efficient == 0 ? "" : "; more GPUs than searched, or a faster cluster, are needed") +
                          (q.min_efficiency ? std::string(", and more GPUs lower the efficiency further") : std::string()));
  } else if (q.min_efficiency) {
    a.reasoning.push_back(
        most_efficient == 0
            ? "no candidate reaches efficiency " + printf_number("%.2f", *q.min_efficiency) + ", not even the smallest searched"
            : "efficiency >= " + printf_number("%.2f", *q.min_efficiency) + " holds up to " + std::to_string(most_efficient) +
                  " GPU(s), but the budget needs " + std::to_string(fewest_fast) + " or more: no GPU count gives both");
  }
}

}  // namespace

WhatifAnswer whatif_gpus(const WhatifBase& b, const GpusQuery& q) {
  require_epochs(q.epochs);
  if (!(q.budget_s > 0)) throw InputError("--budget: expected a positive time, e.g. 2h");
  if (q.budget_s < kMinBudgetS || q.budget_s > kMaxBudgetS)
    throw InputError("--budget: " + format_time(q.budget_s) + " is outside kanscale's range; expected a time budget from 1 ms to 100 years");
  if (q.min_efficiency && !(*q.min_efficiency > 0 && *q.min_efficiency <= 1))
    throw InputError("--min-efficiency: expected a fraction above 0 and at most 1, e.g. 0.7, got " + printf_number("%g", *q.min_efficiency));
  const WhatifCluster& wc = b.clusters.front();
  const Cluster& c = wc.cluster;
  Workload w = b.workload;
  w.epochs = static_cast<int>(q.epochs);
  const std::vector<int> gpus = q.gpus.empty() ? powers_of_two_up_to(c.nodes * c.gpus_per_node) : q.gpus;
  check_candidates(b, w, gpus, std::floor(std::log2(c.gpus_per_node)) + 1, "whatif gpus: its candidates (--gpus and --iterations)");

  WhatifAnswer a;
  a.query = "gpus";
  a.inputs = {{"cluster", c.file}, {"workload", w.file}, {"calibration", wc.calibration.name}, {"epochs", q.epochs},
              {"budget_s", q.budget_s}, {"min_efficiency", q.min_efficiency ? json(*q.min_efficiency) : json(nullptr)},
              {"scaling", to_string(b.options.scaling)}, {"confidence", q.confidence ? json(*q.confidence) : json("point")},
              {"interval_samples", b.options.interval_samples}};
  a.columns = {{"gpus", "int"},         {"gpus_per_node", "int"},   {"nodes", "int"},      {"iteration_s", "time"},
               {"compute_s", "time"},   {"exposed_comm_s", "time"}, {"epoch_s", "time"},   {"time_to_train_s", "time"},
               {"efficiency", "ratio"}, {"gpu_hours", "gpu_hours"}, {"meets", "bool"},     {"time_to_train_lo_s", "time"},
               {"time_to_train_hi_s", "time"}, {"p_within_budget", "ratio"}};
  std::vector<ScalingPoint> pts;
  std::vector<std::string> skipped;
  MemoryRule memory;
  for (int n : gpus) {
    std::vector<int> seen_nodes;
    for (int gpn = std::min(c.gpus_per_node, n); gpn >= 1; gpn /= 2) {
      Layout l;
      try {
        l = layout_for(c, n, gpn);
      } catch (const InputError&) {
        continue;  // does not fill whole nodes, or needs more nodes than the cluster has
      }
      if (std::find(seen_nodes.begin(), seen_nodes.end(), l.nodes) != seen_nodes.end()) continue;
      seen_nodes.push_back(l.nodes);
      ScalingPoint p;
      try {
        p = predict(c, w, wc.calibration, b.options, n, gpn, true);
      } catch (const InputError& e) {
        skipped.push_back(std::to_string(n) + " GPUs: " + e.what());
        break;
      }
      const bool fits = memory.fits(std::to_string(n) + " GPUs", p);
      const bool meets = fits && time_to_train_at(p, q.confidence) <= q.budget_s && (!q.min_efficiency || p.efficiency >= *q.min_efficiency);
      json lo = nullptr, hi = nullptr, pr = nullptr;
      if (!p.time_to_train_samples.empty()) {
        const Band band = central_band(p.time_to_train_samples, 0.9);
        lo = band.lo;
        hi = band.hi;
        pr = *probability_within(p, q.budget_s);
      }
      a.rows.push_back({n, gpn, p.nodes, p.iteration_s.median, p.compute_s.median, p.exposed_s.median, p.epoch_s,
                        p.time_to_train_s, p.efficiency, p.gpu_hours, meets, lo, hi, pr});
      pts.push_back(std::move(p));
    }
  }
  if (a.rows.empty())
    throw InputError("whatif gpus: no GPU count " + std::string(q.gpus.empty() ? "up to the cluster's" : "of --gpus") +
                     " can be laid out on cluster " + c.file + (skipped.empty() ? "" : ": " + skipped.front()));
  if (memory.fitting == 0) {
    memory.nothing_fits(a, c.gpu.model + "'s");
    a.reasoning.push_back(memory.line());
    return a;
  }
  // the fewest GPUs that meet; the fastest of their layouts
  for (std::size_t i = 0; i < a.rows.size(); ++i) {
    if (!a.rows[i][10].get<bool>()) continue;
    if (a.chosen < 0 || pts[i].gpus < pts[a.chosen].gpus ||
        (pts[i].gpus == pts[a.chosen].gpus && pts[i].time_to_train_s < pts[a.chosen].time_to_train_s))
      a.chosen = static_cast<int>(i);
  }
  const std::string budget = format_time(q.budget_s) + (q.min_efficiency ? " at efficiency >= " + printf_number("%.2f", *q.min_efficiency) : "");
  if (a.chosen >= 0) {
    explain_met(a, pts, q, budget);
  } else {
    explain_missed(a, pts, q, budget);
  }
  if (a.chosen >= 0) note_batch(a, b, pts[a.chosen]);
  a.reasoning.push_back(confidence_words(pts, q.confidence, wc.calibration.name, b.options.interval_samples));
  if (const std::string m = memory.line(); !m.empty()) a.reasoning.push_back(m);
  for (const auto& s : skipped) a.reasoning.push_back("skipped " + s);
  return a;
}

// ---------------------------------------------------------------- model
WhatifAnswer whatif_model(const WhatifBase& b, const ModelQuery& q) {
  const WhatifCluster& wc = b.clusters.front();
  const Cluster& c = wc.cluster;
  const Workload& w0 = b.workload;
  if (q.vary != "widths" && q.vary != "grid") throw InputError("--vary: expected widths or grid, got '" + q.vary + "'");
  if (q.vary == "widths" && w0.widths.size() < 3)
    throw InputError("whatif model --vary widths: workload " + w0.file + " (widths " + widths_text(w0.widths) +
                     ") has no hidden layer to grow; use --vary grid");
  if (q.limit < 1) throw InputError("--limit: expected at least 1, got " + std::to_string(q.limit));
  if (!(q.memory_headroom >= 0 && q.memory_headroom <= 10))
    throw InputError("--memory-headroom: expected 0% to 1000% of the predicted peak, got " + printf_number("%g%%", 100 * q.memory_headroom));
  const Layout layout = layout_for(c, q.gpus, b.options.gpus_per_node);
  std::int64_t batch = w0.batch_per_gpu;
  if (b.options.scaling == Scaling::strong_global_batch) batch = w0.global_batch.value_or(w0.batch_per_gpu) / q.gpus;
  if (batch < 1) throw InputError("whatif model: the global batch gives less than one sample per GPU at " + std::to_string(q.gpus) + " GPUs");
  auto shaped = [&](std::int64_t v) {
    Workload w = w0;
    if (q.vary == "widths") {
      for (std::size_t i = 1; i + 1 < w.widths.size(); ++i) w.widths[i] = v;
    } else {
      w.grid_size = static_cast<int>(v);
    }
    return w;
  };
  struct Tried {
    std::int64_t v;
    std::int64_t params;
    MemoryEstimate m;
    bool fits;
  };
  std::map<std::int64_t, Tried> tried;
  auto fits = [&](std::int64_t v) {
    const Workload w = shaped(v);
    const KanShape shape{w.widths, w.grid_size, w.spline_order};
    if (!kan_size_problem(shape).empty()) return false;  // beyond what kanscale models: stop there
    const MemoryEstimate m = point_memory(c, w, wc.calibration, layout, batch);
    const bool ok = m.peak_bytes * (1 + q.memory_headroom) <= c.gpu.memory_bytes;
    tried[v] = Tried{v, kan_parameter_count(shape), m, ok};
    return ok;
  };
  std::int64_t good = 0, bad = 0;  // largest fitting, smallest not fitting (0: none found)
  for (std::int64_t v = 1;; v = std::min(v * 2, q.limit)) {
    if (fits(v)) {
      good = v;
      if (v == q.limit) break;
    } else {
      bad = v;
      break;
    }
  }
  if (good > 0 && bad > 0) {
    while (bad - good > 1) {
      const std::int64_t mid = good + (bad - good) / 2;
      (fits(mid) ? good : bad) = mid;
    }
  }
  const char* what = q.vary == "widths" ? "hidden width" : "grid size";
  WhatifAnswer a;
  a.query = "model";
  a.inputs = {{"cluster", c.file}, {"workload", w0.file}, {"calibration", wc.calibration.name}, {"vary", q.vary},
              {"gpus", q.gpus}, {"batch_per_gpu", batch}, {"gpu_memory_bytes", c.gpu.memory_bytes}, {"limit", q.limit},
              {"memory_headroom", q.memory_headroom}};
  a.columns = {{q.vary == "widths" ? "hidden_width" : "grid_size", "int"}, {"widths", "text"}, {"parameters", "int"},
               {"model_state_bytes", "bytes"}, {"activations_bytes", "bytes"}, {"peak_bytes", "bytes"}, {"fits", "bool"}};
  for (const auto& [v, t] : tried) {
    const Workload w = shaped(v);
    const double state = t.m.parameters_bytes + t.m.gradients_bytes + t.m.buckets_bytes + t.m.optimizer_bytes;
    a.rows.push_back({v, widths_text(w.widths), t.params, state, t.m.activations_bytes + t.m.transient_bytes + t.m.batch_bytes,
                      t.m.peak_bytes, t.fits});
    if (v == good) a.chosen = static_cast<int>(a.rows.size() - 1);
  }
  const std::string where = " of the " + c.gpu.model + "'s " + format_bytes(c.gpu.memory_bytes) + " at batch " +
                            std::to_string(batch) + " per GPU on " + std::to_string(q.gpus) + " GPU(s), with " +
                            printf_number("%g%%", 100 * q.memory_headroom) + " headroom over the predicted peak";
  if (good == 0) {
    a.met = false;
    a.chosen = a.rows.empty() ? -1 : 0;
    const Tried& t = tried.begin()->second;
    a.answer = std::string("not even a ") + what + " of 1 fits: it needs " + format_bytes(t.m.peak_bytes) + where;
    a.nothing_fits = true;
  } else {
    const Tried& t = tried.at(good);
    a.answer = std::string("the largest ") + what + " that fits is " + std::to_string(good) + " (widths " +
               widths_text(shaped(good).widths) + ", grid " + std::to_string(shaped(good).grid_size) + ", " +
               std::to_string(t.params) + " parameters): peak " + format_bytes(t.m.peak_bytes) + where;
    if (good == q.limit) a.answer += " (the search limit; larger may fit)";
    else if (const Workload next = shaped(good + 1); !kan_size_problem(KanShape{next.widths, next.grid_size, next.spline_order}).empty())
      a.answer += " (kanscale's size limit, docs/configuration.md (Limits); larger may fit the memory)";
    const double state = t.m.parameters_bytes + t.m.gradients_bytes + t.m.buckets_bytes + t.m.optimizer_bytes;
    const double act = t.m.activations_bytes + t.m.transient_bytes + t.m.batch_bytes;
    const double other = t.m.peak_bytes - state - act;
    a.reasoning.push_back("at " + std::to_string(good) + ": parameters, gradients, DDP buckets and Adam's moments " +
                          format_bytes(state) + " (" + whole_pct(state / t.m.peak_bytes) + "), activations and temporaries " +
                          format_bytes(act) + " (" + whole_pct(act / t.m.peak_bytes) + "), runtime, grids and library copies " +
                          format_bytes(other) + "; dominant: " +
                          (state >= act && state >= other ? "model state (grows with the parameters)"
                           : act >= other                 ? "activations (grow with the batch)"
                                                          : "the runtime"));
    if (bad > 0 && tried.count(bad))
      a.reasoning.push_back(std::to_string(bad) + " needs " + format_bytes(tried.at(bad).m.peak_bytes) + ", over the " +
                            format_bytes(c.gpu.memory_bytes));
  }
  return a;
}

// ---------------------------------------------------------------- bucket cap
WhatifAnswer whatif_bucket_cap(const WhatifBase& b, const BucketQuery& q) {
  const WhatifCluster& wc = b.clusters.front();
  if (q.caps.empty()) throw InputError("--caps: give at least one bucket cap");
  for (double cap : q.caps)
    if (!(cap > 0)) throw InputError("--caps: every cap must be a positive size");
  std::vector<bool> views = q.both_views ? std::vector<bool>{false, true} : std::vector<bool>{b.workload.ddp.gradient_as_bucket_view};
  WhatifAnswer a;
  a.query = "bucket-cap";
  a.inputs = {{"cluster", wc.cluster.file}, {"workload", b.workload.file}, {"calibration", wc.calibration.name}, {"gpus", q.gpus}};
  a.columns = {{"bucket_cap_bytes", "bytes"}, {"gradient_as_bucket_view", "bool"}, {"buckets", "int"}, {"iteration_s", "time"},
               {"exposed_comm_s", "time"},    {"compute_s", "time"},             {"peak_memory_bytes", "bytes"}};
  check_candidates(b, b.workload, {q.gpus}, static_cast<double>(views.size() * q.caps.size()),
                   "whatif bucket-cap: its candidates (--caps and --iterations)");
  std::vector<ScalingPoint> pts;
  std::vector<std::pair<double, bool>> settings;
  for (bool view : views) {
    for (double cap : q.caps) {
      Workload w = b.workload;
      w.ddp.bucket_cap_bytes = cap;
      w.ddp.bucket_cap_given = true;
      w.ddp.gradient_as_bucket_view = view;
      ScalingPoint p = predict(wc.cluster, w, wc.calibration, b.options, q.gpus, b.options.gpus_per_node);
      a.rows.push_back({cap, view, static_cast<int>(p.steady_plan.size()), p.iteration_s.median, p.exposed_s.median,
                        p.compute_s.median, p.memory.peak_bytes});
      pts.push_back(std::move(p));
      settings.emplace_back(cap, view);
    }
  }
  MemoryRule memory;
  std::vector<bool> fits;
  for (std::size_t i = 0; i < pts.size(); ++i)
    fits.push_back(memory.fits(format_bytes(settings[i].first) + (settings[i].second ? " with view" : " without view"), pts[i]));
  if (memory.fitting == 0) {
    memory.nothing_fits(a, wc.cluster.gpu.model + "'s");
    a.reasoning.push_back(memory.line());
    return a;
  }
  double best = 1e300, worst = 0;
  for (std::size_t i = 0; i < pts.size(); ++i) {
    if (!fits[i]) continue;
    best = std::min(best, pts[i].iteration_s.median);
    worst = std::max(worst, pts[i].iteration_s.median);
  }
  std::vector<std::size_t> ties;
  for (std::size_t i = 0; i < pts.size(); ++i)
    if (fits[i] && pts[i].iteration_s.median <= best * (1 + 1e-9)) ties.push_back(i);
  if (const std::string m = memory.line(); !m.empty()) a.reasoning.push_back(m);
  std::size_t pick = ties.front();
  for (std::size_t i : ties) {
    const auto& [cap, view] = settings[i];
    const auto& [pcap, pview] = settings[pick];
    if ((view && !pview) || (view == pview && cap > pcap)) pick = i;
  }
  a.chosen = static_cast<int>(pick);
  const ScalingPoint& p = pts[pick];
  a.answer = "bucket_cap " + format_bytes(settings[pick].first) + " with gradient_as_bucket_view " +
             (settings[pick].second ? "true" : "false") + ": iteration " + format_time(p.iteration_s.median) + " on " +
             std::to_string(q.gpus) + " GPU(s), " + std::to_string(p.steady_plan.size()) + " bucket(s)";
  a.reasoning.push_back(breakdown(p));
  if (worst <= best * (1 + 1e-9)) {
    a.reasoning.push_back("every setting searched gives the same iteration time: the choice does not matter here (the tie goes "
                          "to gradient_as_bucket_view, which saves the buckets' copy of the gradients, and the larger cap)");
  } else {
    if (ties.size() > 1) {
      std::string t;
      for (std::size_t i : ties)
        if (i != pick) t += (t.empty() ? "" : ", ") + format_bytes(settings[i].first) + (settings[i].second ? " with view" : " without view");
      a.reasoning.push_back("as fast: " + t + "; the tie goes to gradient_as_bucket_view, then to the larger cap");
    }
    std::size_t slow = 0;
    for (std::size_t i = 0; i < pts.size(); ++i)
      if (pts[i].iteration_s.median > pts[slow].iteration_s.median) slow = i;
    a.reasoning.push_back("slowest: " + format_bytes(settings[slow].first) + (settings[slow].second ? ", view" : ", no view") + ", " +
                          format_time(pts[slow].iteration_s.median) + " with " + std::to_string(pts[slow].steady_plan.size()) +
                          " bucket(s) and " + format_time(pts[slow].exposed_s.median) +
                          " exposed communication: more buckets pay more per-collective latency, fewer start later");
    // the workload's own setting, and what each of the two knobs alone does to it
    for (std::size_t i = 0; i < pts.size(); ++i) {
      if (settings[i].first != b.workload.ddp.bucket_cap_bytes || settings[i].second != b.workload.ddp.gradient_as_bucket_view || i == pick)
        continue;
      std::string line = "the workload's own setting (" + format_bytes(settings[i].first) +
                         (settings[i].second ? ", view" : ", no view") + ") takes " + format_time(pts[i].iteration_s.median) +
                         ", " + whole_pct(pts[i].iteration_s.median / p.iteration_s.median - 1) + " longer";
      for (std::size_t j = 0; j < pts.size(); ++j)
        if (settings[j].first == settings[i].first && settings[j].second != settings[i].second)
          line += "; with gradient_as_bucket_view " + std::string(settings[j].second ? "on" : "off") + " alone: " +
                  format_time(pts[j].iteration_s.median);
      for (std::size_t j = 0; j < pts.size(); ++j)
        if (settings[j].first == settings[pick].first && settings[j].second == settings[i].second && j != i)
          line += "; with the cap alone (" + format_bytes(settings[pick].first) + "): " + format_time(pts[j].iteration_s.median);
      a.reasoning.push_back(line);
    }
  }
  return a;
}

// ---------------------------------------------------------------- cluster
namespace {
void check_cluster_query(const WhatifBase& b, const ClusterQuery& q) {
  require_epochs(q.epochs);
  if (b.clusters.size() < 2) throw InputError("whatif cluster: give at least two --cluster files to compare");
  if (q.budget_s && !(*q.budget_s > 0)) throw InputError("--budget: expected a positive time, e.g. 2h");
  if (q.budget_s && (*q.budget_s < kMinBudgetS || *q.budget_s > kMaxBudgetS))
    throw InputError("--budget: " + format_time(*q.budget_s) + " is outside kanscale's range; expected a time budget from 1 ms to 100 years");
  if (q.min_efficiency && !(*q.min_efficiency > 0 && *q.min_efficiency <= 1))
    throw InputError("--min-efficiency: expected a fraction above 0 and at most 1, e.g. 0.7, got " + printf_number("%g", *q.min_efficiency));
}

// Whether every cluster gives a price in one currency (`currency`: the first
// price's, empty when none gives one).
bool all_priced_in_one_currency(const WhatifBase& b, std::string& currency) {
  bool all_priced = true;
  for (const auto& wc : b.clusters) {
    if (!wc.cluster.price_per_gpu_hour) all_priced = false;
    else if (currency.empty()) currency = wc.cluster.currency;
    else if (currency != wc.cluster.currency) all_priced = false;
  }
  return all_priced;
}
}  // namespace

WhatifAnswer whatif_cluster(const WhatifBase& b, const ClusterQuery& q) {
  check_cluster_query(b, q);
  Workload w = b.workload;
  w.epochs = static_cast<int>(q.epochs);
  std::string currency;
  const bool all_priced = all_priced_in_one_currency(b, currency);
  WhatifAnswer a;
  a.query = "cluster";
  a.inputs = {{"workload", w.file}, {"epochs", q.epochs}, {"budget_s", q.budget_s ? json(*q.budget_s) : json(nullptr)},
              {"min_efficiency", q.min_efficiency ? json(*q.min_efficiency) : json(nullptr)}};
  for (const auto& wc : b.clusters) a.inputs["clusters"].push_back({{"label", wc.label}, {"file", wc.cluster.file}, {"calibration", wc.calibration.name}});
  a.columns = {{"cluster", "text"},        {"gpus", "int"},          {"nodes", "int"},        {"time_to_train_s", "time"},
               {"efficiency", "ratio"},    {"gpu_hours", "gpu_hours"}, {"price_per_gpu_hour", "money"}, {"cost", "money"},
               {"meets", "bool"}};
  struct Cand {
    std::size_t cluster;
    ScalingPoint p;
    std::optional<double> cost;
    bool meets;
  };
  std::vector<Cand> cands;
  MemoryRule memory;
  {
    std::vector<int> all;
    for (const auto& wc : b.clusters)
      for (int n : q.gpus.empty() ? powers_of_two_up_to(wc.cluster.nodes * wc.cluster.gpus_per_node) : q.gpus) all.push_back(n);
    check_candidates(b, w, all, 1, "whatif cluster: its candidates (--gpus and --iterations)");
  }
  for (std::size_t k = 0; k < b.clusters.size(); ++k) {
    const WhatifCluster& wc = b.clusters[k];
    const std::vector<int> gpus = q.gpus.empty() ? powers_of_two_up_to(wc.cluster.nodes * wc.cluster.gpus_per_node) : q.gpus;
    for (int n : gpus) {
      try {
        layout_for(wc.cluster, n, std::nullopt);
      } catch (const InputError&) {
        continue;  // not on this cluster
      }
      Cand c{k, predict(wc.cluster, w, wc.calibration, b.options, n, std::nullopt, q.budget_s.has_value()), std::nullopt, true};
      if (wc.cluster.price_per_gpu_hour) c.cost = c.p.gpu_hours * *wc.cluster.price_per_gpu_hour;
      const bool fits = memory.fits("'" + wc.label + "' " + std::to_string(n) + " GPUs", c.p);
      c.meets = fits && (!q.budget_s || time_to_train_at(c.p, q.confidence) <= *q.budget_s) &&
                (!q.min_efficiency || c.p.efficiency >= *q.min_efficiency);
      a.rows.push_back({wc.label, n, c.p.nodes, c.p.time_to_train_s, c.p.efficiency, c.p.gpu_hours,
                        wc.cluster.price_per_gpu_hour ? json(*wc.cluster.price_per_gpu_hour) : json(nullptr),
                        c.cost ? json(*c.cost) : json(nullptr), c.meets});
      cands.push_back(std::move(c));
    }
  }
  if (cands.empty()) throw InputError("whatif cluster: no GPU count of --gpus fits any of the clusters");
  if (memory.fitting == 0) {
    memory.nothing_fits(a, "clusters' GPU");
    a.reasoning.push_back(memory.line());
    return a;
  }
  auto cheapest = [&](bool money) {
    int best = -1;
    for (std::size_t i = 0; i < cands.size(); ++i) {
      if (!cands[i].meets) continue;
      const double v = money ? *cands[i].cost : cands[i].p.gpu_hours;
      const double bv = best < 0 ? 0 : money ? *cands[best].cost : cands[best].p.gpu_hours;
      if (best < 0 || v < bv || (v == bv && cands[i].p.time_to_train_s < cands[best].p.time_to_train_s)) best = static_cast<int>(i);
    }
    return best;
  };
  const int by_hours = cheapest(false);
  const int by_money = all_priced ? cheapest(true) : -1;
  auto describe = [&](const Cand& c) {
    return "'" + b.clusters[c.cluster].label + "' with " + layout_text(c.p.gpus, c.p.nodes) + ": " + printf_number("%.4g", c.p.gpu_hours) +
           " GPU-hours, " + format_time(c.p.time_to_train_s) + " to train" + interval_words(c.p, 0.9, q.budget_s) +
           (c.cost ? ", " + printf_number("%.2f", *c.cost) + " " + b.clusters[c.cluster].cluster.currency : std::string());
  };
  if (by_hours >= 0) {
    a.chosen = all_priced ? by_money : by_hours;
    if (all_priced) {
      a.answer = "cheapest in money: " + describe(cands[by_money]);
      a.answer += by_hours == by_money ? "; also the fewest GPU-hours" : "; fewest GPU-hours: " + describe(cands[by_hours]);
    } else {
      a.answer = "fewest GPU-hours: " + describe(cands[by_hours]);
      a.reasoning.push_back(currency.empty() ? "no cluster gives a price: compared in GPU-hours only"
                                             : "not every cluster gives a price in one currency: compared in GPU-hours only");
    }
    a.reasoning.push_back(breakdown(cands[a.chosen].p));
    if (const std::string f = few_iterations(cands[a.chosen].p); !f.empty()) a.reasoning.push_back(f);
    for (std::size_t k = 0; k < b.clusters.size(); ++k) {
      int best = -1;
      for (std::size_t i = 0; i < cands.size(); ++i)
        if (cands[i].cluster == k && cands[i].meets && (best < 0 || cands[i].p.gpu_hours < cands[best].p.gpu_hours))
          best = static_cast<int>(i);
      a.reasoning.push_back(best < 0 ? "'" + b.clusters[k].label + "': no GPU count searched meets the budget"
                                     : "best on " + describe(cands[best]));
    }
  } else {
    a.met = false;
    double best = 1e300;
    for (std::size_t i = 0; i < cands.size(); ++i) {
      if (cands[i].p.memory.exceeds_capacity()) continue;
      const double m = miss(cands[i].p.time_to_train_s, cands[i].p.efficiency, q.budget_s, q.min_efficiency);
      if (m < best) {
        best = m;
        a.chosen = static_cast<int>(i);
      }
    }
    a.answer = "no cluster and GPU count searched meets " +
               (q.budget_s ? format_time(*q.budget_s) : std::string("the budget")) +
               (q.min_efficiency ? " at efficiency >= " + printf_number("%.2f", *q.min_efficiency) : "") + "; closest: " + describe(cands[a.chosen]) +
               " at efficiency " + printf_number("%.3f", cands[a.chosen].p.efficiency);
    a.reasoning.push_back(breakdown(cands[a.chosen].p));
  }
  if (q.budget_s) {
    std::vector<ScalingPoint> pts;
    for (const auto& c : cands) pts.push_back(c.p);
    std::string names;
    for (const auto& wc : b.clusters) names += (names.empty() ? "" : "', '") + wc.calibration.name;
    a.reasoning.push_back(confidence_words(pts, q.confidence, names, b.options.interval_samples));
  }
  if (a.chosen >= 0) note_batch(a, b, cands[a.chosen].p);
  if (const std::string m = memory.line(); !m.empty()) a.reasoning.push_back(m);
  return a;
}

// ---------------------------------------------------------------- change
namespace {

struct Case {
  Cluster cluster;
  Calibration cal;
  Workload w;
  StudyOptions options;  // the query's, with the case's GPUs per node
  int gpus = 1;
  CaseRef ref() { return CaseRef{cluster, cal, w, options, &gpus}; }
};

// A change as the settings table reads it (study/settings).
struct Parsed {
  const Setting* setting = nullptr;
  SettingValue value;
  std::string idle;  // why it moves nothing in the model in use (the bound that holds the cost); empty: it acts
};

// Parses --set KEY=VALUE against the case it changes and applies it. A
// value that moves nothing in the model in use is an answer (0%, and the
// bound that holds it: Parsed::idle), except a restriction of NCCL's
// choice on a cluster without NCCL, which is a mistake and refused.
Parsed apply_change(Case& k, const Change& ch) {
  const std::string where = "--set " + ch.key + "=" + ch.value;
  Parsed p;
  p.setting = find_setting(ch.key, kSet);
  if (!p.setting) throw InputError(where + ": unknown key; expected one of: " + kWhatifChangeKeys);
  CaseRef c = k.ref();
  try {
    p.value = parse_setting(*p.setting, ch.value, &c, true);
  } catch (const InputError& e) {
    throw InputError(where + ": " + e.what());
  }
  if (p.setting->idle) {
    const Layout l = layout_for(k.cluster, k.gpus, k.options.gpus_per_node);
    if (std::string why = p.setting->idle(c, p.value, l); !why.empty()) {
      if (std::string(p.setting->key).rfind("nccl_", 0) == 0) throw InputError(where + ": " + why);
      p.idle = std::move(why);
    }
  }
  p.setting->apply(c, p.value);
  if (const std::string why = kan_size_problem(KanShape{k.w.widths, k.w.grid_size, k.w.spline_order}); !why.empty())
    throw InputError(where + ": " + why);
  return p;
}

bool same_prediction(const ScalingPoint& a, const ScalingPoint& b) {
  return a.iteration_s.median == b.iteration_s.median && a.first_iteration_s.median == b.first_iteration_s.median &&
         a.compute_s.median == b.compute_s.median && a.exposed_s.median == b.exposed_s.median && a.epoch_s == b.epoch_s &&
         a.time_to_train_s == b.time_to_train_s && a.memory.peak_bytes == b.memory.peak_bytes &&
         a.memory.capacity_bytes == b.memory.capacity_bytes && a.efficiency == b.efficiency &&
         a.gpus == b.gpus && a.nodes == b.nodes;
}

ScalingPoint predict_case(const Case& k) { return predict(k.cluster, k.w, k.cal, k.options, k.gpus, k.options.gpus_per_node); }

}  // namespace

WhatifAnswer whatif_change(const WhatifBase& b, int gpus, const std::vector<Change>& changes) {
  if (changes.empty()) throw InputError("whatif change: give at least one --set KEY=VALUE (or KEY=FACTORx)");
  const WhatifCluster& wc = b.clusters.front();
  Case before{wc.cluster, wc.calibration, b.workload, b.options, gpus};
  for (std::size_t i = 0; i < changes.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (changes[i].key == changes[j].key)
        throw InputError("--set " + changes[i].key + ": given twice (" + changes[j].value + " and " + changes[i].value + "); give each key once");
  {  // every case it will replay, estimated before any runs: before, each change alone, all of them
    Case all = before;
    std::vector<int> counts = {gpus};
    for (const Change& ch : changes) {
      Case alone = before;
      apply_change(alone, ch);
      apply_change(all, ch);
      counts.push_back(alone.gpus);
      check_candidates(b, alone.w, {alone.gpus}, 1, "whatif change: --set " + ch.key + "=" + ch.value + " (with --iterations)");
    }
    counts.push_back(all.gpus);
    check_candidates(b, all.w, counts, 1, "whatif change: its cases (--gpus, --set and --iterations)");
  }
  const ScalingPoint p0 = predict_case(before);
  Case after = before;
  std::vector<std::pair<std::string, std::string>> still;  // (KEY=VALUE, why) for each change that alone moves nothing
  for (const Change& ch : changes) {
    Case alone = before;
    const Parsed parsed = apply_change(alone, ch);
    ScalingPoint pa;
    try {
      pa = predict_case(alone);
    } catch (const InputError& e) {
      throw InputError("--set " + ch.key + "=" + ch.value + ": " + e.what());
    }
    if (same_prediction(pa, p0)) {
      // why: the bound the key's setting names, else what the key says, else from the predictions
      std::string why = parsed.idle;
      if (why.empty()) why = parsed.setting->why_same ? parsed.setting->why_same(before.ref(), parsed.value) : "";
      if (why.empty() && std::string(parsed.setting->key) == "bucket_cap" && pa.steady_plan.size() == p0.steady_plan.size())
        why = "the bucket plan is the same (" + std::to_string(p0.steady_plan.size()) +
              " bucket(s)): the model's gradients are split alike with either cap";
      if (why.empty()) why = "the prediction (iteration, memory, time to train) is identical";
      still.emplace_back(ch.key + "=" + ch.value, why);
    }
    apply_change(after, ch);
  }
  const ScalingPoint p1 = predict_case(after);
  WhatifAnswer a;
  a.query = "change";
  json ch = json::array();
  std::string list;
  for (const auto& c : changes) {
    ch.push_back(c.key + "=" + c.value);
    list += (list.empty() ? "" : ", ") + c.key + "=" + c.value;
  }
  a.inputs = {{"cluster", wc.cluster.file}, {"workload", b.workload.file}, {"calibration", wc.calibration.name}, {"gpus", gpus},
              {"changes", ch}};
  a.columns = {{"metric", "text"}, {"unit", "text"}, {"before", "by_unit"}, {"after", "by_unit"}, {"change", "percent"}};
  auto row = [&](const char* metric, const char* unit, double x0, double x1) {
    a.rows.push_back({metric, unit, x0, x1, x0 != 0 ? json(100 * (x1 / x0 - 1)) : json(nullptr)});
  };
  row("gpus", "", p0.gpus, p1.gpus);
  row("nodes", "", p0.nodes, p1.nodes);
  row("batch_per_gpu", "", static_cast<double>(p0.batch_per_gpu), static_cast<double>(p1.batch_per_gpu));
  row("iteration", "s", p0.iteration_s.median, p1.iteration_s.median);
  row("compute", "s", p0.compute_s.median, p1.compute_s.median);
  row("communication", "s", p0.comm_s.median, p1.comm_s.median);
  row("exposed_communication", "s", p0.exposed_s.median, p1.exposed_s.median);
  row("epoch", "s", p0.epoch_s, p1.epoch_s);
  row("time_to_train", "s", p0.time_to_train_s, p1.time_to_train_s);
  row("speedup", "", p0.speedup, p1.speedup);
  row("efficiency", "", p0.efficiency, p1.efficiency);
  row("gpu_hours", "", p0.gpu_hours, p1.gpu_hours);
  row("peak_memory", "B", p0.memory.peak_bytes, p1.memory.peak_bytes);
  a.chosen = 3;
  const double it0 = p0.iteration_s.median, it1 = p1.iteration_s.median;
  a.answer = list + ": iteration " + format_time(it0) + " -> " + format_time(it1) + " (" + printf_number("%+.1f%%", 100 * (it1 / it0 - 1)) +
             "), time to train " + format_time(p0.time_to_train_s) + " -> " + format_time(p1.time_to_train_s) + " (" +
             printf_number("%+.1f%%", 100 * (p1.time_to_train_s / p0.time_to_train_s - 1)) + ") at " + std::to_string(p1.gpus) + " GPU(s)";
  if (still.size() == changes.size() && same_prediction(p1, p0)) {  // nothing moves: the answer is 0%, and what holds the cost
    std::string whys;
    for (const auto& w : still) whys += (whys.empty() ? "" : "; ") + w.second;
    a.answer = list + ": 0% at " + std::to_string(p1.gpus) + " GPU(s) (iteration " + format_time(it0) + ", time to train " +
               format_time(p0.time_to_train_s) + "): " + whys;
  }
  if (changes.size() > 1)  // (one change: the answer says it)
    for (const auto& w : still) a.reasoning.push_back("alone, " + w.first + " moves nothing in the model in use: " + w.second);
  // (differences below 1e-9 of the iteration are rounding: shown as 0)
  auto settle = [&](double x) { return std::abs(x) < 1e-9 * it0 ? 0.0 : x; };
  const double dc = settle(p1.compute_s.median - p0.compute_s.median), de = settle(p1.exposed_s.median - p0.exposed_s.median);
  const double d = it1 - it0;
  if (d != 0) {
    a.reasoning.push_back("of the iteration's change (" + printf_number("%+.4g", d * 1e3) + " ms): compute " + printf_number("%+.4g", dc * 1e3) +
                          " ms, exposed communication " + printf_number("%+.4g", de * 1e3) + " ms; it is mostly " +
                          (std::abs(dc) >= std::abs(de) ? "compute" : "exposed communication"));
  }
  a.reasoning.push_back("before: " + breakdown(p0));
  a.reasoning.push_back("after: " + breakdown(p1));
  const std::string n0 = batch_change_note(before.w, before.options.scaling, p0), n1 = batch_change_note(after.w, after.options.scaling, p1);
  if (!n0.empty()) a.reasoning.push_back("before: " + n0);
  if (!n1.empty()) a.reasoning.push_back("after: " + n1);
  if (p1.memory.exceeds_capacity() && !p0.memory.exceeds_capacity()) {
    const std::string oom = "after the change the run no longer fits the GPU: peak " + format_bytes(p1.memory.peak_bytes) + " of " +
                            format_bytes(p1.memory.capacity_bytes);
    a.reasoning.push_back(oom);
    a.answer = oom + "; " + a.answer;  // the limit first: the times would never be reached
  } else if (p1.memory.exceeds_capacity()) {
    a.reasoning.push_back("before and after the change the run does not fit the GPU: peak " + format_bytes(p1.memory.peak_bytes) + " of " +
                          format_bytes(p1.memory.capacity_bytes));
  }
  return a;
}

}  // namespace ks
