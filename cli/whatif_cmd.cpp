// kanscale whatif gpus|model|bucket-cap|cluster|change: capacity-planning
// answers (study/whatif.hpp), printed as an answer line, the reasoning and
// the table searched; --json FILE writes the same as JSON.
#include <boost/program_options.hpp>

#include <iostream>
#include <sstream>

#include "commands.hpp"
#include "sim/report.hpp"
#include "model/limits.hpp"
#include "base/output_files.hpp"
#include "model/units.hpp"
#include "formats/yaml_reader.hpp"
#include "options.hpp"
#include "study/whatif.hpp"
#include "formats/config_files.hpp"

namespace po = boost::program_options;

namespace ks::cli {

namespace {

const char* kUsage =
    "usage: kanscale whatif QUERY [options]\n"
    "  gpus        the fewest GPUs (and node layout) that train --epochs within --budget [--min-efficiency X]\n"
    "  model       the largest hidden width (--vary widths) or grid (--vary grid) that fits GPU memory\n"
    "  bucket-cap  the bucket cap (and gradient_as_bucket_view) with the shortest iteration at --gpus N\n"
    "  cluster     the cheapest of several --cluster files in GPU-hours, and in money where they give a price\n"
    "  change      --set KEY=VALUE|FACTORx ... as a before/after table at --gpus N\n"
    "Every query takes --workload W, --calibration K (default: the cluster's datasheet), --seed, --iterations,\n"
    "--scaling strong|strong-global-batch|weak and --json FILE; see kanscale whatif QUERY --help.";

Scaling scaling_of(const std::string& s) {
  if (s == "strong") return Scaling::strong;
  if (s == "strong-global-batch") return Scaling::strong_global_batch;
  if (s == "weak") return Scaling::weak;
  throw InputError("--scaling: unknown value \"" + s + "\"; expected strong, strong-global-batch or weak");
}

double time_option(const std::string& text, const std::string& option) {
  try {
    return parse_quantity(text, Quantity::time);
  } catch (const std::exception& e) {
    throw InputError(option + " " + text + ": " + e.what());
  }
}

// What a whatif command line says, before anything is read.
struct WhatifArgs {
  std::string query;
  std::vector<std::string> clusters, calibrations, sets;
  std::string workload, seed, json, scaling = "strong", gpus_text, budget_text, caps_text = "1MiB,5MiB,10MiB,25MiB,50MiB,100MiB",
              vary = "widths", views = "both";
  int iterations = kDefaultIterations, gpus_per_node = 0, gpus = 8, interval_samples = 100;
  std::string confidence = "0.9";
  double memory_headroom_pct = 10;
  double epochs = 0, min_eff = 0, max_events = kDefaultMaxEvents;
  long long limit = 1 << 20;
};

// The options every query takes.
void common_options(po::options_description& desc, WhatifArgs& w) {
  const bool cluster = w.query == "cluster";
  desc.add_options()
      ("help,h", "show this help")
      ("cluster", po::value(&w.clusters)->value_name("FILE"), cluster ? "cluster YAML, two or more times" : "cluster YAML")
      ("workload", po::value(&w.workload)->value_name("FILE"), "workload YAML")
      ("calibration", po::value(&w.calibrations)->value_name("FILE"),
       cluster ? "calibration YAML: once for every cluster, or once per --cluster in order (default: datasheets)"
               : "calibration YAML (default: the cluster's datasheet)")
      ("seed", po::value(&w.seed)->value_name("S"), "random seed (default: the workload's)")
      ("iterations", po::value(&w.iterations)->default_value(w.iterations), "iterations replayed per prediction (2 to 1000; simulate's default)")
      ("max-events", po::value(&w.max_events)->default_value(w.max_events, "5e7"),
       "refuse a query estimated to replay more events than this, all its candidates together")
      ("scaling", po::value(&w.scaling)->default_value(w.scaling), "strong | strong-global-batch | weak")
      ("json", po::value(&w.json)->value_name("FILE"), "also write the answer, reasoning and table as JSON");
}

// The options of one query.
void query_options(po::options_description& desc, WhatifArgs& w) {
  const std::string& q = w.query;
  if (q == "gpus" || q == "cluster") {
    desc.add_options()
        ("epochs", po::value(&w.epochs)->value_name("E"), "epochs to train (default: the workload's)")
        ("budget", po::value(&w.budget_text)->value_name("TIME"), q == "gpus" ? "time budget, e.g. 2h (required)" : "time budget, e.g. 2h")
        ("min-efficiency", po::value(&w.min_eff)->value_name("X"), "parallel efficiency of at least X (0 to 1)")
        ("gpus", po::value(&w.gpus_text)->value_name("N[,N...]"), "GPU counts to search (default: powers of two up to the cluster)")
        ("confidence", po::value(&w.confidence)->default_value(w.confidence),
         "meet the budget at this quantile of the predicted time to train (0 to 1; a fitted calibration's intervals), or 'point': "
         "on the prediction itself")
        ("interval-samples", po::value(&w.interval_samples)->default_value(w.interval_samples),
         "Monte Carlo samples behind each candidate's interval, as simulate draws them (0: none)");
  }
  if (q == "gpus" || q == "model" || q == "bucket-cap" || q == "change")
    desc.add_options()("gpus-per-node", po::value(&w.gpus_per_node)->value_name("M"),
                       q == "gpus" ? "(gpus searches every layout itself)" : "place M GPUs per node (default: the cluster's)");
  if (q == "model") {
    w.gpus = 1;
    desc.add_options()
        ("vary", po::value(&w.vary)->default_value(w.vary), "widths (every hidden layer) or grid")
        ("gpus", po::value(&w.gpus)->default_value(w.gpus), "GPUs (the runtime's and the library's memory grow with them)")
        ("limit", po::value(&w.limit)->default_value(w.limit), "largest value searched")
        ("memory-headroom", po::value(&w.memory_headroom_pct)->default_value(w.memory_headroom_pct),
         "percent of the predicted peak memory kept free (the peak memory's mean error in the local-cpu validation runs: "
         "8.3-8.7%, at most 15%; docs/whatif.md)");
  }
  if (q == "bucket-cap")
    desc.add_options()
        ("gpus", po::value(&w.gpus)->default_value(w.gpus), "GPU count")
        ("caps", po::value(&w.caps_text)->default_value(w.caps_text), "bucket caps to search")
        ("views", po::value(&w.views)->default_value(w.views), "both: gradient_as_bucket_view false and true; current: the workload's");
  if (q == "change")
    desc.add_options()
        ("gpus", po::value(&w.gpus)->default_value(w.gpus), "GPU count")
        ("set", po::value(&w.sets)->value_name("KEY=VALUE"), (std::string("a change, one or more times; keys: ") + kWhatifChangeKeys).c_str());
}

// The flags every query shares, checked.
void check_common(const WhatifArgs& w) {
  if (w.workload.empty()) throw InputError("missing required option --workload");
  if (w.clusters.empty()) throw InputError("missing required option --cluster");
  if (w.query != "cluster" && w.clusters.size() > 1)
    throw InputError("--cluster: whatif " + w.query + " takes one cluster (whatif cluster compares several)");
  if (w.calibrations.size() > 1 && w.calibrations.size() != w.clusters.size())
    throw InputError("--calibration: give one for every cluster, or one per --cluster (" + std::to_string(w.clusters.size()) + ")");
  if (w.iterations < 2 || w.iterations > kMaxIterations)
    throw InputError("--iterations: expected 2 (the first iteration and one steady one) to " + std::to_string(kMaxIterations) + ", got " +
                     std::to_string(w.iterations));
  if (!(w.max_events > 0)) throw InputError("--max-events: expected a positive number, got " + printf_number("%g", w.max_events));
}

// The clusters, their calibrations and the workload, read and checked; the
// --json output checked against them.
WhatifBase load_base(const WhatifArgs& w, const po::variables_map& vm) {
  WhatifBase base;
  base.workload = load_workload(w.workload);
  for (std::size_t i = 0; i < w.clusters.size(); ++i) {
    WhatifCluster wc;
    wc.cluster = load_cluster(w.clusters[i]);
    wc.label = wc.cluster.name;
    const std::string cal = w.calibrations.empty() ? "" : w.calibrations.size() == 1 ? w.calibrations[0] : w.calibrations[i];
    wc.calibration = with_shipped_defaults(cal.empty() || cal == "datasheet" ? datasheet_calibration(wc.cluster, base.workload.precision)
                                                                               : load_calibration(cal, wc.cluster, base.workload.precision),
                                             wc.cluster, base.workload);
    check_calibration_covers(base.workload, wc.calibration, cal);
    for (const auto& o : base.clusters)
      if (o.label == wc.label) wc.label += " (" + w.clusters[i] + ")";
    base.clusters.push_back(std::move(wc));
  }
  base.options.iterations = w.iterations;
  if (w.interval_samples < 0 || w.interval_samples > 100000)
    throw InputError("--interval-samples: expected 0 to 100000, got " + std::to_string(w.interval_samples));
  base.options.interval_samples = w.interval_samples;
  base.max_events = w.max_events;
  base.options.scaling = scaling_of(w.scaling);
  base.options.seed = vm.count("seed") ? parse_seed(w.seed) : base.workload.seed;
  if (vm.count("gpus-per-node")) {
    if (w.gpus_per_node < 1) throw InputError("--gpus-per-node: must be at least 1, got " + std::to_string(w.gpus_per_node));
    base.options.gpus_per_node = w.gpus_per_node;
  }
  if (!w.json.empty()) {
    check_output_path(w.json, "--json");
    std::vector<std::string> inputs = w.clusters;
    inputs.push_back(w.workload);
    inputs.insert(inputs.end(), w.calibrations.begin(), w.calibrations.end());
    check_outputs_spare_inputs(inputs, {{w.json, "--json"}});
  }
  return base;
}

std::vector<double> caps_of(const std::string& text) {
  std::vector<double> caps;
  std::string item;
  std::stringstream ss(text);
  while (std::getline(ss, item, ',')) {
    try {
      caps.push_back(parse_quantity(item, Quantity::size));
    } catch (const std::exception& e) {
      throw InputError("--caps " + item + ": " + e.what());
    }
  }
  return caps;
}

std::vector<Change> changes_of(const std::vector<std::string>& sets) {
  std::vector<Change> changes;
  for (const auto& s : sets) {
    const auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == s.size())
      throw InputError("--set " + s + ": expected KEY=VALUE or KEY=FACTORx, e.g. --set network.latency=2x");
    changes.push_back(Change{s.substr(0, eq), s.substr(eq + 1)});
  }
  return changes;
}

// --confidence: a quantile in (0, 1), or "point" (nullopt).
std::optional<double> confidence_of(const std::string& text) {
  if (text == "point") return std::nullopt;
  char* end = nullptr;
  const double c = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !(c > 0 && c < 1))
    throw InputError("--confidence " + text + ": expected a quantile between 0 and 1 (e.g. 0.9), or point");
  return c;
}

// The query asked, answered.
WhatifAnswer answer(const WhatifArgs& w, const WhatifBase& base, const po::variables_map& vm) {
  if (w.query == "gpus") {
    if (w.budget_text.empty()) throw InputError("whatif gpus: missing required option --budget (e.g. --budget 2h)");
    GpusQuery q;
    q.epochs = vm.count("epochs") ? w.epochs : base.workload.epochs;
    q.budget_s = time_option(w.budget_text, "--budget");
    if (vm.count("min-efficiency")) q.min_efficiency = w.min_eff;
    if (!w.gpus_text.empty()) q.gpus = parse_int_list(w.gpus_text, "--gpus");
    q.confidence = confidence_of(w.confidence);
    return whatif_gpus(base, q);
  }
  if (w.query == "model") {
    if (!(w.memory_headroom_pct >= 0 && w.memory_headroom_pct <= 1000))
      throw InputError("--memory-headroom: expected 0 to 1000 (percent of the predicted peak), got " + printf_number("%g", w.memory_headroom_pct));
    return whatif_model(base, ModelQuery{w.vary, w.gpus, w.limit, w.memory_headroom_pct / 100});
  }
  if (w.query == "bucket-cap") {
    if (w.views != "both" && w.views != "current") throw InputError("--views: expected both or current, got '" + w.views + "'");
    return whatif_bucket_cap(base, BucketQuery{w.gpus, caps_of(w.caps_text), w.views == "both"});
  }
  if (w.query == "cluster") {
    ClusterQuery q;
    q.epochs = vm.count("epochs") ? w.epochs : base.workload.epochs;
    if (!w.budget_text.empty()) q.budget_s = time_option(w.budget_text, "--budget");
    if (vm.count("min-efficiency")) q.min_efficiency = w.min_eff;
    if (!w.gpus_text.empty()) q.gpus = parse_int_list(w.gpus_text, "--gpus");
    q.confidence = confidence_of(w.confidence);
    return whatif_cluster(base, q);
  }
  return whatif_change(base, w.gpus, changes_of(w.sets));
}

}  // namespace

int whatif(const std::vector<std::string>& args_in) {
  if (args_in.empty() || args_in[0] == "--help" || args_in[0] == "-h") {
    std::cout << kUsage << "\n";
    if (args_in.empty()) throw InputError("whatif: expected a query: gpus, model, bucket-cap, cluster or change");
    return 0;
  }
  WhatifArgs w;
  w.query = args_in[0];
  if (w.query != "gpus" && w.query != "model" && w.query != "bucket-cap" && w.query != "cluster" && w.query != "change")
    throw InputError("whatif: unknown query '" + w.query + "'; expected gpus, model, bucket-cap, cluster or change");
  po::options_description desc("whatif " + w.query + " options");
  common_options(desc, w);
  query_options(desc, w);
  po::variables_map vm;
  if (!parse_args({args_in.begin() + 1, args_in.end()}, desc, kUsage, vm)) return 0;
  check_common(w);
  // Everything is read and checked before anything runs.
  const WhatifBase base = load_base(w, vm);
  const WhatifAnswer a = answer(w, base, vm);
  std::cout << a.text();
  if (!w.json.empty()) write_files_atomic({{w.json, a.to_json().dump(2) + "\n"}});
  if (a.nothing_fits) {
    std::cerr << "kanscale whatif: " << a.answer << "\n";
    return 1;
  }
  return 0;
}

}  // namespace ks::cli
