// kanscale whatif gpus|model|bucket-cap|cluster|change: capacity-planning
// answers (sim/whatif.hpp), printed as an answer line, the reasoning and
// the table searched; --json FILE writes the same as JSON.
#include <boost/program_options.hpp>

#include <iostream>

#include "commands.hpp"
#include "sim/report.hpp"
#include "model/limits.hpp"
#include "model/output_files.hpp"
#include "model/units.hpp"
#include "model/yaml_reader.hpp"
#include "options.hpp"
#include "sim/whatif.hpp"

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

}  // namespace

int whatif(const std::vector<std::string>& args_in) {
  if (args_in.empty() || args_in[0] == "--help" || args_in[0] == "-h") {
    std::cout << kUsage << "\n";
    if (args_in.empty()) throw InputError("whatif: expected a query: gpus, model, bucket-cap, cluster or change");
    return 0;
  }
  const std::string query = args_in[0];
  if (query != "gpus" && query != "model" && query != "bucket-cap" && query != "cluster" && query != "change")
    throw InputError("whatif: unknown query '" + query + "'; expected gpus, model, bucket-cap, cluster or change");
  const std::vector<std::string> args(args_in.begin() + 1, args_in.end());

  std::vector<std::string> clusters, calibrations, sets;
  std::string workload, seed, json, scaling = "strong", gpus_text, budget_text, caps_text = "1MiB,5MiB,10MiB,25MiB,50MiB,100MiB",
                                    vary = "widths", views = "both";
  int iterations = 4, gpus_per_node = 0;
  double epochs = 0, min_eff = 0, max_events = kDefaultMaxEvents;
  long long limit = 1 << 20;
  po::options_description desc("whatif " + query + " options");
  desc.add_options()
      ("help,h", "show this help")
      ("cluster", po::value(&clusters)->value_name("FILE"), query == "cluster" ? "cluster YAML, two or more times" : "cluster YAML")
      ("workload", po::value(&workload)->value_name("FILE"), "workload YAML")
      ("calibration", po::value(&calibrations)->value_name("FILE"),
       query == "cluster" ? "calibration YAML: once for every cluster, or once per --cluster in order (default: datasheets)"
                          : "calibration YAML (default: the cluster's datasheet)")
      ("seed", po::value(&seed)->value_name("S"), "random seed (default: the workload's)")
      ("iterations", po::value(&iterations)->default_value(iterations), "iterations replayed per prediction (2 to 1000)")
      ("max-events", po::value(&max_events)->default_value(max_events, "5e7"),
       "refuse a query estimated to replay more events than this, all its candidates together")
      ("scaling", po::value(&scaling)->default_value(scaling), "strong | strong-global-batch | weak")
      ("json", po::value(&json)->value_name("FILE"), "also write the answer, reasoning and table as JSON");
  if (query == "gpus" || query == "cluster") {
    desc.add_options()
        ("epochs", po::value(&epochs)->value_name("E"), "epochs to train (default: the workload's)")
        ("budget", po::value(&budget_text)->value_name("TIME"), query == "gpus" ? "time budget, e.g. 2h (required)" : "time budget, e.g. 2h")
        ("min-efficiency", po::value(&min_eff)->value_name("X"), "parallel efficiency of at least X (0 to 1)")
        ("gpus", po::value(&gpus_text)->value_name("N[,N...]"), "GPU counts to search (default: powers of two up to the cluster)");
  }
  if (query == "gpus" || query == "model" || query == "bucket-cap" || query == "change")
    desc.add_options()("gpus-per-node", po::value(&gpus_per_node)->value_name("M"),
                       query == "gpus" ? "(gpus searches every layout itself)" : "place M GPUs per node (default: the cluster's)");
  int gpus = query == "model" ? 1 : 8;
  if (query == "model") {
    desc.add_options()
        ("vary", po::value(&vary)->default_value(vary), "widths (every hidden layer) or grid")
        ("gpus", po::value(&gpus)->default_value(gpus), "GPUs (the runtime's and the library's memory grow with them)")
        ("limit", po::value(&limit)->default_value(limit), "largest value searched");
  }
  if (query == "bucket-cap") {
    desc.add_options()
        ("gpus", po::value(&gpus)->default_value(gpus), "GPU count")
        ("caps", po::value(&caps_text)->default_value(caps_text), "bucket caps to search")
        ("views", po::value(&views)->default_value(views), "both: gradient_as_bucket_view false and true; current: the workload's");
  }
  if (query == "change") {
    desc.add_options()
        ("gpus", po::value(&gpus)->default_value(gpus), "GPU count")
        ("set", po::value(&sets)->value_name("KEY=VALUE"), (std::string("a change, one or more times; keys: ") + kWhatifChangeKeys).c_str());
  }
  po::variables_map vm;
  if (!parse_args(args, desc, kUsage, vm)) return 0;

  if (workload.empty()) throw InputError("missing required option --workload");
  if (clusters.empty()) throw InputError("missing required option --cluster");
  if (query != "cluster" && clusters.size() > 1) throw InputError("--cluster: whatif " + query + " takes one cluster (whatif cluster compares several)");
  if (calibrations.size() > 1 && calibrations.size() != clusters.size())
    throw InputError("--calibration: give one for every cluster, or one per --cluster (" + std::to_string(clusters.size()) + ")");
  if (iterations < 2 || iterations > kMaxIterations)
    throw InputError("--iterations: expected 2 (the first iteration and one steady one) to " + std::to_string(kMaxIterations) + ", got " +
                     std::to_string(iterations));
  if (!(max_events > 0)) throw InputError("--max-events: expected a positive number, got " + printf_number("%g", max_events));

  // Everything is read and checked before anything runs.
  WhatifBase base;
  base.workload = load_workload(workload);
  for (std::size_t i = 0; i < clusters.size(); ++i) {
    WhatifCluster wc;
    wc.cluster = load_cluster(clusters[i]);
    wc.label = wc.cluster.name;
    const std::string cal = calibrations.empty() ? "" : calibrations.size() == 1 ? calibrations[0] : calibrations[i];
    wc.calibration = cal.empty() || cal == "datasheet" ? datasheet_calibration(wc.cluster, base.workload.precision)
                                                       : load_calibration(cal, wc.cluster, base.workload.precision);
    for (const auto& o : base.clusters)
      if (o.label == wc.label) wc.label += " (" + clusters[i] + ")";
    base.clusters.push_back(std::move(wc));
  }
  base.options.iterations = iterations;
  base.max_events = max_events;
  base.options.scaling = scaling_of(scaling);
  base.options.seed = vm.count("seed") ? parse_seed(seed) : base.workload.seed;
  if (vm.count("gpus-per-node")) {
    if (gpus_per_node < 1) throw InputError("--gpus-per-node: must be at least 1, got " + std::to_string(gpus_per_node));
    base.options.gpus_per_node = gpus_per_node;
  }
  if (!json.empty()) {
    check_output_path(json, "--json");
    std::vector<std::string> inputs = clusters;
    inputs.push_back(workload);
    inputs.insert(inputs.end(), calibrations.begin(), calibrations.end());
    check_outputs_spare_inputs(inputs, {{json, "--json"}});
  }

  WhatifAnswer a;
  if (query == "gpus") {
    if (budget_text.empty()) throw InputError("whatif gpus: missing required option --budget (e.g. --budget 2h)");
    GpusQuery q;
    q.epochs = vm.count("epochs") ? epochs : base.workload.epochs;
    q.budget_s = time_option(budget_text, "--budget");
    if (vm.count("min-efficiency")) q.min_efficiency = min_eff;
    if (!gpus_text.empty()) q.gpus = parse_int_list(gpus_text, "--gpus");
    a = whatif_gpus(base, q);
  } else if (query == "model") {
    ModelQuery q;
    q.vary = vary;
    q.gpus = gpus;
    q.limit = limit;
    a = whatif_model(base, q);
  } else if (query == "bucket-cap") {
    BucketQuery q;
    q.gpus = gpus;
    if (views != "both" && views != "current") throw InputError("--views: expected both or current, got '" + views + "'");
    q.both_views = views == "both";
    std::string item;
    std::stringstream ss(caps_text);
    while (std::getline(ss, item, ',')) {
      try {
        q.caps.push_back(parse_quantity(item, Quantity::size));
      } catch (const std::exception& e) {
        throw InputError("--caps " + item + ": " + e.what());
      }
    }
    a = whatif_bucket_cap(base, q);
  } else if (query == "cluster") {
    ClusterQuery q;
    q.epochs = vm.count("epochs") ? epochs : base.workload.epochs;
    if (!budget_text.empty()) q.budget_s = time_option(budget_text, "--budget");
    if (vm.count("min-efficiency")) q.min_efficiency = min_eff;
    if (!gpus_text.empty()) q.gpus = parse_int_list(gpus_text, "--gpus");
    a = whatif_cluster(base, q);
  } else {
    std::vector<Change> changes;
    for (const auto& s : sets) {
      const auto eq = s.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == s.size())
        throw InputError("--set " + s + ": expected KEY=VALUE or KEY=FACTORx, e.g. --set network.latency=2x");
      changes.push_back(Change{s.substr(0, eq), s.substr(eq + 1)});
    }
    a = whatif_change(base, gpus, changes);
  }
  std::cout << a.text();
  if (!json.empty()) write_files_atomic({{json, a.to_json().dump(2) + "\n"}});
  if (a.nothing_fits) {
    std::cerr << "kanscale whatif: " << a.answer << "\n";
    return 1;
  }
  return 0;
}

}  // namespace ks::cli
