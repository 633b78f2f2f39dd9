// kanscale bench: the benchmarks' dispatcher, and bench sim (the simulator's events per second).
#include "commands.hpp"
#include "model/limits.hpp"
#include "formats/provenance.hpp"
#include "formats/config_files.hpp"
#include "base/output_files.hpp"
#include <nlohmann/json.hpp>

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

// One row of bench sim: N GPUs (the cluster's node count raised to fit N),
// one steady iteration every rank simulated, the median of at least
// `repeat` runs and of as many as fill `min_time` seconds; printed once
// every row is in (the rate's ratio to the 64-rank row's).
struct BenchSimRow {
  int n = 0, nodes = 0, runs = 0;
  std::uint64_t events = 0;
  double wall_s = 0, rss_bytes = 0, iteration_s = 0;
  double rate() const { return static_cast<double>(events) / wall_s; }
};

BenchSimRow bench_sim_row(const Cluster& cluster, const Workload& workload, const Calibration& calib, int n, int repeat, double min_time) {
  Cluster cl = cluster;
  cl.nodes = std::max(cl.nodes, (n + cl.gpus_per_node - 1) / cl.gpus_per_node);
  const Layout layout = layout_for(cl, n, std::nullopt);
  ReplayInput in = make_replay_input(cl, workload, calib, layout, workload.batch_per_gpu, workload.seed);
  in.first = in.steady;  // steady-state iterations only
  in.iterations = 1;
  in.include_first = false;
  std::vector<double> walls;
  ReplayResult last;
  // (a 64-rank replay lasts under 0.1 ms: seven of them had moved its
  // median by a third between runs of the benchmark; issue 60)
  double timed = 0;
  // (at most a million runs: the walls are kept for their median)
  for (int rep = 0; rep < repeat || (timed < min_time && rep < 1000000); ++rep) {
    last = ReplayResult{};  // one replay's memory at a time: the last one's result is freed first
    const Stopwatch watch;
    last = replay(in);
    walls.push_back(watch.seconds());
    timed += walls.back();
  }
  const double wall = median(walls);
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  std::vector<double> iters;
  for (const auto& ri : last.iterations[0]) iters.push_back(ri.iteration_s());
  return {n, layout.nodes, static_cast<int>(walls.size()), static_cast<std::uint64_t>(last.events), wall, static_cast<double>(ru.ru_maxrss) * 1024.0, summarize(iters).median};
}

// kanscale bench sim: the simulator's own speed and memory.
// The table, each row's rate against the 64-rank row's (issue 29's
// yardstick), else the smallest N's.
void print_bench_sim_table(const std::vector<BenchSimRow>& rows) {
  const BenchSimRow* ref = &rows.front();
  for (const auto& r : rows)
    if (r.n == 64 || (ref->n != 64 && r.n < ref->n)) ref = &r;
  const std::string vs = "vs N=" + std::to_string(ref->n);
  std::cout << std::left << std::setw(9) << "N" << std::setw(9) << "nodes" << std::setw(11) << "events" << std::setw(8) << "runs" << std::setw(14) << "wall (ms)"
            << std::setw(14) << "events/s" << std::setw(12) << vs << std::setw(14) << "peak RSS" << "predicted iter\n";
  for (const auto& r : rows) {
    std::ostringstream ev;
    ev << std::scientific << std::setprecision(2) << r.rate();
    std::cout << std::setw(9) << r.n << std::setw(9) << r.nodes << std::setw(11) << r.events << std::setw(8) << r.runs << std::setw(14) << std::fixed
              << std::setprecision(3) << r.wall_s * 1e3 << std::setw(14) << ev.str() << std::setw(12) << std::setprecision(2)
              << r.rate() / ref->rate() << std::setw(14) << format_bytes(r.rss_bytes) << format_time(r.iteration_s) << "\n";
  }
  std::cout << "\n" << vs << ": events/s against that row's (issue 29's goal: within 1.5x of the 64-rank rate at 65,536)\n"
            << "peak RSS is the process's high-water mark so far (grows with the largest N run)\n";
}

// --json: the rows (peak RSS: the process's high-water mark after that row, as the table says)
void write_bench_sim_json(const std::string& path, const std::vector<BenchSimRow>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : rows)
    out.push_back({{"gpus", r.n}, {"nodes", r.nodes}, {"runs", r.runs}, {"events", r.events}, {"events_per_s", r.rate()}, {"wall_s", r.wall_s},
                   {"peak_rss_bytes", r.rss_bytes}, {"predicted_iteration_s", r.iteration_s}});
  write_files_atomic({{path, out.dump(2) + "\n"}});
}

int bench_sim(const std::vector<std::string>& rest) {
  CommonOptions c;
  c.cluster = "configs/clusters/dgx-a100.yaml";
  c.workload = "configs/workloads/bench-4layer.yaml";
  c.gpus = "8,64,1024,8192,65536";
  int repeat = 5;
  double min_time = 0.2;
  std::string json;
  double jitter = 0.05, interference = 0.05, max_events = kDefaultMaxEvents;
  po::options_description desc("bench sim options");
  desc.add_options()
      ("help,h", "show this help")
      ("cluster", po::value(&c.cluster)->default_value(c.cluster), "cluster YAML (its node type; nodes are added to fit N)")
      ("workload", po::value(&c.workload)->default_value(c.workload), "workload YAML")
      ("gpus", po::value(&c.gpus)->default_value(c.gpus), "GPU counts")
      ("repeat", po::value(&repeat)->default_value(repeat), "timed repetitions per GPU count, at least (median reported)")
      ("min-time", po::value(&min_time)->default_value(min_time, "0.2"), "and as many more as fill this many seconds of replays per GPU count")
      ("json", po::value(&json), "also write the rows here: gpus, nodes, runs, events, events_per_s, wall_s, peak_rss_bytes, predicted_iteration_s")
      ("jitter", po::value(&jitter)->default_value(jitter, "0.05"), "lognormal sigma of compute jitter (on for the benchmark)")
      ("interference", po::value(&interference)->default_value(interference, "0.05"), "compute slowdown while communicating")
      ("max-events", po::value(&max_events)->default_value(max_events, "5e7"),
       "refuse a benchmark estimated to replay more events than this (time and memory grow with them)");
  po::variables_map vm;
  if (!parse_args(rest, desc,
                  "usage: kanscale bench sim [--cluster C] [--workload W] [--gpus N,...] [--repeat R]\n"
                  "Times one steady-state iteration, every rank simulated, on one core. The cluster's node\n"
                  "count is raised to fit each N (same node type).",
                  vm))
    return 0;
  if (repeat < 1) throw InputError("--repeat: must be at least 1, got " + std::to_string(repeat));
  if (!(min_time >= 0 && min_time <= 3600)) throw InputError("--min-time: expected seconds between 0 and 3600");
  if (!(jitter >= 0 && jitter <= 1)) throw InputError("--jitter: expected a sigma between 0 and 1");
  if (!(interference >= 0 && interference < 1e6)) throw InputError("--interference: expected a non-negative fraction");
  if (!json.empty()) check_outputs_spare_inputs({c.cluster, c.workload}, {{json, "--json"}});
  const Cluster cluster = load_cluster(c.cluster);
  const Workload workload = load_workload(c.workload);
  Calibration calib = with_default_host_terms(datasheet_calibration(cluster, workload.precision), cluster, workload);
  calib.jitter_sigma = jitter;
  calib.interference = interference;
  const auto gpus = parse_int_list(c.gpus, "--gpus");
  const std::size_t steady_buckets =
      make_replay_input(cluster, workload, calib, Layout{1, 1}, workload.batch_per_gpu, workload.seed).steady.buckets.size();
  if (!(max_events > 0)) throw InputError("--max-events: expected a positive number, got " + printf_number("%g", max_events));
  WorkEstimate all;  // every N, `repeat` times, one steady iteration each
  for (int n : gpus) {
    const WorkEstimate e = replay_work(n, 1, static_cast<double>(steady_buckets));
    all.events += e.events * repeat;
    all.bytes = std::max(all.bytes, e.bytes);
  }
  check_work(all, max_events, "--gpus and --repeat");
  std::cout << "kanscale bench sim: " << workload.name << " (" << workload.widths.size() - 1 << " layers, " << steady_buckets
            << " steady buckets), cluster " << cluster.name << " node type, jitter sigma " << jitter << ", interference " << interference
            << "\n"
            << "one steady-state iteration per run, every rank simulated; median of at least " << repeat << " runs and "
            << min_time << " s of them\n\n";
  std::vector<BenchSimRow> rows;
  for (int n : gpus) rows.push_back(bench_sim_row(cluster, workload, calib, n, repeat, min_time));
  print_bench_sim_table(rows);
  if (!json.empty()) write_bench_sim_json(json, rows);
  return 0;
}

}  // namespace

int bench(const std::vector<std::string>& args, const std::string& cmdline) {
  if (!args.empty() && args[0] == "kernels") return bench_kernels({args.begin() + 1, args.end()});
  if (!args.empty() && args[0] == "interference") return bench_interference({args.begin() + 1, args.end()}, cmdline);
  if (!args.empty() && args[0] == "progress") return bench_progress({args.begin() + 1, args.end()}, cmdline);
  if (!args.empty() && args[0] == "overlap") return bench_overlap({args.begin() + 1, args.end()}, cmdline);
  if (!args.empty() && args[0] == "study") return bench_study({args.begin() + 1, args.end()});
  if (!args.empty() && args[0] == "trace") return bench_trace({args.begin() + 1, args.end()});
  if (args.empty() || (args[0] != "sim" && args[0] != "--help" && args[0] != "-h"))
    throw InputError("bench: expected a benchmark name: kanscale bench sim|kernels|interference|progress|overlap|study|trace [options]");
  return bench_sim({args.begin() + (args[0] == "sim" ? 1 : 0), args.end()});
}

}  // namespace ks::cli
