// kanscale simulate: predictions per GPU count (sim/point, sim/report).
#include "commands.hpp"
#include "study/posterior.hpp"
#include "model/limits.hpp"
#include "formats/provenance.hpp"
#include "formats/config_files.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "model/units.hpp"
#include "formats/yaml_reader.hpp"
#include "options.hpp"
#include "sim/report.hpp"
#include "sim/point.hpp"
#include "measure/workbench.hpp"

namespace po = boost::program_options;

namespace ks::cli {

namespace {

void require(const std::string& value, const char* option) {
  if (value.empty()) throw InputError(std::string("missing required option --") + option);
}

Scaling parse_scaling(const std::string& s) {
  if (s == "strong") return Scaling::strong;
  if (s == "strong-global-batch") return Scaling::strong_global_batch;
  if (s == "weak") return Scaling::weak;
  throw InputError("--scaling: unknown value \"" + s + "\"; expected strong, strong-global-batch or weak");
}

}  // namespace

namespace {

struct SimulateArgs {
  CommonOptions c;
  int iterations = kDefaultIterations, interval_samples = 100;
  double max_events = kDefaultMaxEvents, interval_level = 0.9;
  std::string scaling = "strong", trace_ranks;
};

po::options_description simulate_options(SimulateArgs& a) {
  po::options_description desc = common_options(a.c);
  po::options_description own("simulate options");
  own.add_options()
      ("iterations", po::value(&a.iterations)->default_value(a.iterations),
       "iterations to replay: the first (one bucket) and steady ones (at least 2)")
      ("scaling", po::value(&a.scaling)->default_value(a.scaling), "strong | strong-global-batch | weak")
      ("trace-ranks", po::value(&a.trace_ranks)->value_name("R[,R...]"),
       "ranks to put in --trace (default: all up to 16 ranks, else 0, 1, N/2, N-1)")
      ("max-events", po::value(&a.max_events)->default_value(a.max_events, "5e7"),
       "refuse a study estimated to replay more events than this (time and memory grow with them)")
      ("interval-samples", po::value(&a.interval_samples)->default_value(a.interval_samples),
       "Monte Carlo samples behind the prediction intervals (the calibration's fits and errors, or an unwatched one's borrowed errors); 0: none")
      ("interval-level", po::value(&a.interval_level)->default_value(a.interval_level, "0.9"), "the intervals' coverage, e.g. 0.9");
  desc.add(own);
  return desc;
}

// The replay's options from the flags, every GPU count laid out and the work
// (intervals included) estimated before anything runs.
StudyOptions checked_study_options(const SimulateArgs& a, const po::variables_map& vm, const Cluster& cluster, const Workload& workload,
                                   const Calibration& calib) {
  StudyOptions o;
  o.gpus = parse_int_list(a.c.gpus, "--gpus");
  if (vm.count("gpus-per-node")) {
    if (a.c.gpus_per_node < 1) throw InputError("--gpus-per-node: must be at least 1, got " + std::to_string(a.c.gpus_per_node));
    o.gpus_per_node = a.c.gpus_per_node;
  }
  o.scaling = parse_scaling(a.scaling);
  o.iterations = a.iterations;
  o.seed = vm.count("seed") ? parse_seed(a.c.seed) : workload.seed;
  o.trace = !a.c.trace.empty();
  if (!a.trace_ranks.empty()) o.trace_ranks = parse_int_list(a.trace_ranks, "--trace-ranks");
  for (int n : o.gpus) layout_for(cluster, n, o.gpus_per_node);
  if (!(a.max_events > 0)) throw InputError("--max-events: expected a positive number, got " + printf_number("%g", a.max_events));
  const WorkEstimate work = estimate_study_work(workload, o);
  check_work(work, a.max_events, "--gpus and --iterations");
  if (a.interval_samples < 0 || a.interval_samples > 100000)
    throw InputError("--interval-samples: expected 0 to 100000, got " + std::to_string(a.interval_samples));
  if (!(a.interval_level > 0 && a.interval_level < 1))
    throw InputError("--interval-level: expected a number between 0 and 1, e.g. 0.9, got " + printf_number("%g", a.interval_level));
  o.interval_samples = a.interval_samples;
  o.interval_level = a.interval_level;
  if (a.interval_samples > 0 && has_measured_uncertainty(calib)) {
    // every sample replays the study again, with its baseline
    WorkEstimate e = work;  // the records are not kept across samples: the same bytes
    e.events *= a.interval_samples + 1;
    check_work(e, a.max_events, "--interval-samples (each sample replays the study again; 0 turns them off)");
  }
  for (int r : o.trace_ranks)
    if (r >= *std::max_element(o.gpus.begin(), o.gpus.end()))
      throw InputError("--trace-ranks: rank " + std::to_string(r) + " does not exist at any of the --gpus counts");
  return o;
}

// --csv's bucket plans go beside it: F.csv -> F.buckets.csv
std::string buckets_path_of(const std::string& csv) {
  if (csv.empty()) return "";
  const auto dot = csv.rfind(".csv");
  return (dot != std::string::npos && dot + 4 == csv.size()) ? csv.substr(0, dot) + ".buckets.csv" : csv + ".buckets.csv";
}

}  // namespace

int simulate(const std::vector<std::string>& args, const std::string& cmdline) {
  SimulateArgs a;
  const po::options_description desc = simulate_options(a);
  po::variables_map vm;
  if (!parse_args(args, desc,
                  "usage: kanscale simulate --cluster C --workload W [--gpus 1,2,4,8] [--calibration K] "
                  "[--iterations I] [--scaling strong|strong-global-batch|weak] [--json F] [--csv F] [--trace F]",
                  vm))
    return 0;
  const CommonOptions& c = a.c;
  require(c.cluster, "cluster");
  require(c.workload, "workload");
  if (a.iterations < 2 || a.iterations > kMaxIterations)
    throw InputError("--iterations: expected 2 (the first iteration and one steady one) to " + std::to_string(kMaxIterations) + ", got " +
                     std::to_string(a.iterations));
  // Everything is read and checked before anything runs or is written.
  const Cluster base_cluster = load_cluster(c.cluster);
  const Workload workload = load_workload(c.workload);
  const Calibration base_calib = with_shipped_defaults(c.calibration.empty() ? datasheet_calibration(base_cluster, workload.precision)
                                                                               : load_calibration(c.calibration, base_cluster, workload.precision, true),
                                                       base_cluster, workload);
  check_calibration_covers(workload, base_calib, c.calibration);
  // a posterior calibration: the prediction at its point (the table names it), bands over its draws
  Cluster cluster = base_cluster;
  Calibration calib = base_calib;
  Workload point_workload = workload;
  StudyOptions point_options;
  const bool posterior = !base_calib.posterior.empty();
  if (posterior) apply_posterior_settings(cluster, calib, point_workload, point_options, base_calib.posterior.point);
  const StudyOptions o = checked_study_options(a, vm, cluster, workload, calib);
  if (posterior) check_posterior(base_cluster, base_calib, workload, o);
  const std::string buckets_path = buckets_path_of(c.csv);
  const std::vector<std::pair<std::string, std::string>> outputs = {{c.json, "--json"},
                                                                     {c.csv, "--csv"},
                                                                     {csv_meta_path(c.csv), "--csv (its .meta.json)"},
                                                                     {buckets_path, "--csv (its bucket plans)"},
                                                                     {csv_meta_path(buckets_path), "--csv (its bucket plans' .meta.json)"},
                                                                     {c.trace, "--trace"}};
  check_output_paths(outputs);
  std::vector<OutputPath> spare;
  for (const auto& [path, what] : outputs) spare.push_back({path, what});
  check_outputs_spare_inputs({c.cluster, c.workload, c.calibration}, spare);
  const StudyResult result = posterior ? run_posterior_study(base_cluster, workload, base_calib, o) : run_study(cluster, workload, calib, o);
  RunInfo info{cmdline, &cluster, &point_workload, &calib, o, c.calibration};
  // All outputs are built first and land together, or none does.
  std::vector<std::pair<std::string, std::string>> files;
  if (!c.json.empty()) files.emplace_back(c.json, study_json(result, info).dump(2) + "\n");
  if (!c.csv.empty()) {
    add_csv_output(files, c.csv, study_csv(result), run_provenance(info));
    add_csv_output(files, buckets_path, buckets_csv(result), run_provenance(info));
  }
  if (!c.trace.empty()) files.emplace_back(c.trace, trace_json(result, info).dump() + "\n");
  write_files_atomic(files);
  print_table(std::cout, result, info);
  return 0;
}

}  // namespace ks::cli
