#include "validate.hpp"
#include "formats/config_files.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "formats/provenance.hpp"
#include "base/output_files.hpp"
#include "model/units.hpp"
#include "formats/yaml_reader.hpp"
#include "sim/report.hpp"
#include "sim/point.hpp"

namespace ks {

struct WeakRow {
  std::string row;
  bool same_shape;
};

// weak scaling: per-GPU throughput against one GPU, as a row
WeakRow weak_row(const StudyResult& weak, int top_gpus) {
  std::ostringstream rows;
  rows << std::fixed << std::setprecision(2);
  std::ostringstream wk;
  wk << std::fixed << std::setprecision(1);
  double base = 0, drop = 0, lo = 1e300, hi = 0;
  for (const auto& pt : weak.points) {
    const double per_gpu = pt.samples_per_s / pt.gpus;
    if (pt.gpus == 1) base = per_gpu;
  }
  for (const auto& pt : weak.points) {
    const double rel = base > 0 ? pt.samples_per_s / pt.gpus / base : 0;
    wk << (pt.gpus == weak.points.front().gpus ? "" : ", ") << pt.gpus << ": " << 100 * rel << "%";
    if (pt.gpus >= 2) {
      lo = std::min(lo, rel);
      hi = std::max(hi, rel);
      if (drop == 0) drop = 1 - rel;
    }
  }
  const bool weak_same = drop > 0 && (hi - lo) < drop;
  rows << "| weak scaling: per-GPU throughput against 1 GPU | drops from 1 to several GPUs, then stable | " << wk.str() << " | "
       << (weak_same ? "same shape" : "different shape") << " (drop 1->2: " << 100 * drop << "%, spread over 2.." << top_gpus
       << ": " << 100 * (hi - lo) << " points) |\n";
  return {rows.str(), weak_same};
}

struct ModelSizeRows {
  std::string table, rows;
  bool ratio_up;
};

// model size: each published width's memory, ratio and epoch time at the top GPU count
ModelSizeRows model_size_rows(const Cluster& c, const Workload& w, const Calibration& cal, const PublishedSpec& pub, int top_gpus) {
  std::ostringstream rows;
  rows << std::fixed << std::setprecision(2);
  std::ostringstream ms;
  ms << std::fixed << std::setprecision(3);
  bool ratio_up = true, time_up = true;
  double prev_ratio = -1, prev_time = -1, prev_params = -1;
  std::vector<double> exps;
  ms << "| widths | parameters | peak memory per GPU | parameter-to-memory ratio | epoch time at " << top_gpus << " GPUs |\n|---|---|---|---|---|\n";
  for (const auto& widths : pub.model_widths) {
    Workload wm = w;
    wm.widths = widths;
    StudyOptions om;
    om.gpus = {top_gpus};
    const StudyResult r = run_study(c, wm, cal, om);
    const ScalingPoint& pt = r.points.back();
    const double ratio = pt.memory.parameter_to_memory_ratio();
    std::string ws;
    for (auto x : widths) ws += (ws.empty() ? "" : ", ") + std::to_string(x);
    ms << "| [" << ws << "] | " << r.parameters << " | " << format_bytes(pt.memory.peak_bytes) << " | " << 100 * ratio << "% | "
       << format_time(pt.epoch_s) << " |\n";
    if (prev_ratio >= 0) {
      ratio_up = ratio_up && ratio > prev_ratio;
      time_up = time_up && pt.epoch_s > prev_time;
      exps.push_back(std::log(pt.epoch_s / prev_time) / std::log(static_cast<double>(r.parameters) / prev_params));
    }
    prev_ratio = ratio;
    prev_time = pt.epoch_s;
    prev_params = static_cast<double>(r.parameters);
  }
  if (!pub.model_widths.empty()) {
    std::ostringstream e;
    e << std::fixed << std::setprecision(2);
    for (std::size_t i = 0; i < exps.size(); ++i) e << (i ? ", " : "") << exps[i];
    rows << "| model size: parameter-to-memory ratio as models grow | improves | " << (ratio_up ? "improves" : "does not always improve")
         << " | " << (ratio_up ? "same trend" : "different trend") << " |\n";
    rows << "| model size: training time as models grow | grows unfavourably | " << (time_up ? "grows" : "does not always grow")
         << " (epoch time ~ parameters^" << e.str() << " between sizes) | " << (time_up ? "grows; see the exponents" : "different trend")
         << " |\n";
  }
  return {ms.str(), rows.str(), ratio_up};
}

int published_comparison(const ValidationPlan& plan, const std::string& out_dir, const std::string& cmdline) {
  if (!plan.published.enabled) throw InputError(plan.file + ": the plan has no published: section");
  const PublishedSpec& pub = plan.published;
  const Cluster c = load_cluster(plan.cluster_file);
  Workload w = load_workload(pub.workload);
  w.file = pub.workload_shown;  // reports name it as the plan does
  // datasheet only: nothing tuned to the figures
  const Calibration cal = with_shipped_defaults(datasheet_calibration(c, w.precision), c, w);
  StudyOptions o;
  o.gpus = pub.gpus;
  o.scaling = Scaling::strong;
  const StudyResult strong = run_study(c, w, cal, o);
  o.scaling = Scaling::weak;
  const StudyResult weak = run_study(c, w, cal, o);
  const ScalingPoint& top = strong.points.back();
  std::ostringstream md, rows;
  md << std::fixed << std::setprecision(2);
  rows << std::fixed << std::setprecision(2);
  auto dev = [](double pred, double published) { return 100.0 * (pred - published) / published; };
  rows << "| strong scaling: speedup at " << top.gpus << " GPUs | " << pub.speedup << "x | " << top.speedup << "x | "
       << std::showpos << dev(top.speedup, pub.speedup) << std::noshowpos << "% |\n";
  rows << "| strong scaling: parallel efficiency at " << top.gpus << " GPUs | " << pub.efficiency << "% | " << 100 * top.efficiency
       << "% | " << std::showpos << dev(100 * top.efficiency, pub.efficiency) << std::noshowpos << "% |\n";
  double ex_lo = 1e9, ex_hi = 0, tot_lo = 1e9, tot_hi = 0;
  std::ostringstream ex_seq, tot_seq;
  ex_seq << std::fixed << std::setprecision(1);
  tot_seq << std::fixed << std::setprecision(1);
  std::vector<double> ex_v;
  for (const auto& pt : strong.points) {
    if (pt.gpus < 2) continue;
    ex_lo = std::min(ex_lo, 100 * pt.overhead_exposed);
    ex_hi = std::max(ex_hi, 100 * pt.overhead_exposed);
    tot_lo = std::min(tot_lo, 100 * pt.overhead_total);
    tot_hi = std::max(tot_hi, 100 * pt.overhead_total);
    ex_seq << (ex_v.empty() ? "" : ", ") << pt.gpus << ": " << 100 * pt.overhead_exposed << "%";
    tot_seq << (ex_v.empty() ? "" : ", ") << pt.gpus << ": " << 100 * pt.overhead_total << "%";
    ex_v.push_back(pt.overhead_exposed);
  }
  bool monotonic = true;
  for (std::size_t i = 1; i < ex_v.size(); ++i) monotonic = monotonic && ex_v[i] >= ex_v[i - 1];
  rows << "| communication overhead, exposed (range over 2.." << top.gpus << " GPUs) | " << pub.overhead_min_pct << "-"
       << pub.overhead_max_pct << "% | " << ex_lo << "-" << ex_hi << "% (" << ex_seq.str() << ") | low end "
       << std::showpos << ex_lo - pub.overhead_min_pct << ", high end " << ex_hi - pub.overhead_max_pct << std::noshowpos
       << " points |\n";
  rows << "| communication overhead, total (range) | " << pub.overhead_min_pct << "-" << pub.overhead_max_pct << "% | " << tot_lo << "-"
       << tot_hi << "% (" << tot_seq.str() << ") | low end " << std::showpos << tot_lo - pub.overhead_min_pct << ", high end "
       << tot_hi - pub.overhead_max_pct << std::noshowpos << " points |\n";
  rows << "| overhead across GPU counts | not monotonic | " << (monotonic ? "monotonic (rises with GPU count)" : "not monotonic")
       << " | " << (monotonic ? "different shape" : "same shape") << " |\n";
  const WeakRow wr = weak_row(weak, top.gpus);
  rows << wr.row;
  const bool weak_same = wr.same_shape;
  const ModelSizeRows sizes = model_size_rows(c, w, cal, pub, top.gpus);
  const bool ratio_up = sizes.ratio_up;
  rows << sizes.rows;
  md << "# kanscale against the published figures: " << plan.name << "\n\n"
     << "Published: " << pub.source << ". Predicted: `kanscale` with the datasheet calibration of `" << plan.cluster_shown
     << "` (nothing fitted, nothing tuned to these figures), workload `" << pub.workload_shown << "` (" << strong.parameters
     << " parameters, batch " << w.batch_per_gpu << " per GPU, implementation " << to_string(w.implementation)
     << "). " << describe(provenance()) << ".\n\n"
     << "| figure | published | predicted | deviation |\n|---|---|---|---|\n" << rows.str() << "\n"
     << "Overhead is stated both ways: exposed (compute idle waiting for communication, per iteration) and total "
     << "(communication busy time, per iteration); the study does not say which it reports.\n\n";
  if (!pub.model_widths.empty()) md << "## Model size\n\n" << sizes.table << "\n";
  md << "## What is unknown about the published setup\n\n"
     << "Only the abstract is public: the widths, grid size, batch size, dataset size, number of epochs, what \"overhead\" "
        "measures, the software versions beyond NCCL 2.14.3 seen in other jobs on the machine, and the InfiniBand rate "
        "(HDR 200 Gb/s or HDR100) are not known. The workload above is a stand-in of the kind the study describes; the "
        "deviations are stated as they come out, not minimised.\n\n`"
     << cmdline << "`\n";
  nlohmann::json j = {{"plan", plan.file}, {"source", pub.source}, {"workload", pub.workload_shown},
                      {"published", {{"speedup", pub.speedup}, {"efficiency_pct", pub.efficiency},
                                     {"overhead_pct", {pub.overhead_min_pct, pub.overhead_max_pct}}}},
                      {"predicted", {{"gpus", top.gpus}, {"speedup", top.speedup}, {"efficiency_pct", 100 * top.efficiency},
                                     {"overhead_exposed_pct", {ex_lo, ex_hi}}, {"overhead_total_pct", {tot_lo, tot_hi}},
                                     {"overhead_monotonic", monotonic}, {"weak_same_shape", weak_same},
                                     {"ratio_improves", ratio_up}}}};
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  write_owned_files(out_dir, {{out_dir + "/report.md", md.str()}, {out_dir + "/results.json", j.dump(2) + "\n"}});
  std::cout << md.str();
  return 0;
}

}  // namespace ks
