// kanscale bench study: how long a study's intervals take, and how many
// ranks their samples replay (sim/replay's reduced replays against replaying
// every rank).
#include <boost/program_options.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <iostream>

#include "commands.hpp"
#include "sim/report.hpp"
#include "measure/machine_info.hpp"
#include "model/statistics.hpp"
#include "formats/yaml_reader.hpp"
#include "options.hpp"
#include "study/scenario.hpp"
#include "measure/workbench.hpp"

namespace po = boost::program_options;

namespace ks::cli {

namespace {
struct StudyRun {
  double wall_s = 0;
  std::uint64_t reduced = 0, full = 0, ranks = 0, points = 0;
  std::uint64_t unknown_runs = 0;  // the scenario bands' samples: each a point prediction per GPU count
  std::vector<StudyResult> results;
};

StudyRun run_all(const StudySpec& spec) {
  StudyRun r;
  const Stopwatch watch;
  r.results = run_scenarios(spec, 0, spec.scenarios.size());
  r.wall_s = watch.seconds();
  for (const auto& sr : r.results) {
    r.reduced += sr.interval_replays_reduced;
    r.full += sr.interval_replays_full;
    r.ranks += sr.interval_ranks_replayed;
    r.points += sr.points.size();
    std::uint64_t counts = 1;  // the baseline
    for (const auto& p : sr.points) counts += p.gpus > 1;
    r.unknown_runs += static_cast<std::uint64_t>(sr.unknown_samples + sr.unknown_skipped) * counts;
  }
  return r;
}
// The largest relative difference between the reduced replays' bands and
// the full replays' over every band edge (iteration time, speedup).
double largest_band_difference(const StudyRun& fast, const StudyRun& slow) {
  double worst = 0;
  for (std::size_t s = 0; s < fast.results.size(); ++s) {
    for (std::size_t p = 0; p < fast.results[s].points.size(); ++p) {
      const auto& a = fast.results[s].points[p];
      const auto& b = slow.results[s].points[p];
      if (!a.iteration_band || !b.iteration_band) continue;
      for (auto [x, y] : {std::pair{a.iteration_band->lo, b.iteration_band->lo}, {a.iteration_band->hi, b.iteration_band->hi},
                          {a.speedup_band->lo, b.speedup_band->lo}, {a.speedup_band->hi, b.speedup_band->hi}})
        worst = std::max(worst, std::abs(x - y) / std::abs(y));
    }
  }
  return worst;
}

// What replaying every rank of every sample would replay, and the point
// predictions' full replays; every scenario set to `samples` interval samples.
std::pair<std::uint64_t, std::uint64_t> count_replays(StudySpec& spec, int samples) {
  std::uint64_t all_ranks = 0;  // what replaying every rank of every sample replays
  std::uint64_t point_replays = 0;  // the point predictions: every rank, once per point and baseline
  for (auto& sc : spec.scenario_bases) sc.options.interval_samples = samples;  // the unknowns' samples draw too
  for (auto& sc : spec.scenarios) {
    point_replays += 1 + static_cast<std::uint64_t>(std::count_if(sc.options.gpus.begin(), sc.options.gpus.end(), [](int n) { return n > 1; }));
    sc.options.interval_samples = samples;
    int ranks = 1;  // the baseline
    for (int n : sc.options.gpus) ranks += n;
    // the scenario's samples, and as many again for each of the unknowns' samples
    if (has_measured_uncertainty(sc.calibration))
      all_ranks += static_cast<std::uint64_t>(ranks) * samples * (1 + spec.unknown_points.size());
  }
  return {all_ranks, point_replays};
}

void print_row(const char* path, const StudyRun& r, std::uint64_t all_ranks) {
  std::cout << std::left << std::setw(26) << path << std::right << std::setw(10) << std::fixed << std::setprecision(2) << r.wall_s
            << std::setw(14) << r.full << std::setw(14) << r.reduced << std::setw(16) << r.ranks << std::setw(16) << all_ranks << "\n";
}

// What the table's counts leave out.
void print_footnote(std::uint64_t point_replays, std::uint64_t unknown_runs) {
  std::cout << "\nThe point predictions are " << point_replays
            << " more full replays in both rows (one per scenario and GPU count, N = 1 being the baseline)";
  if (unknown_runs > 0)
    std::cout << ", and the scenario bands' samples over the unknowns about " << unknown_runs
              << " more (point predictions; their intervals' samples are in the counts above)";
  std::cout << ".\nA sample replays a point in full only where the reduction's condition fails "
               "(sim/replay.hpp).\n";
}

}  // namespace

int bench_study(const std::vector<std::string>& args) {
  std::string file = "configs/studies/default.yaml", calibration = "configs/calibrations/local-cpu.yaml";
  int samples = 200, repeat = 3;
  bool full = false;
  double max_events = 1e10;
  po::options_description desc("bench study options");
  desc.add_options()
      ("help,h", "show this help")
      ("study", po::value(&file)->default_value(file), "the study file")
      ("calibration", po::value(&calibration)->default_value(calibration),
       "calibration for every cluster (a fitted one, so that every sample draws)")
      ("samples", po::value(&samples)->default_value(samples), "interval samples per scenario")
      ("repeat", po::value(&repeat)->default_value(repeat), "timed runs (median reported)")
      ("full", po::bool_switch(&full), "also run every sample as a full replay of every rank, and compare the bands")
      ("max-events", po::value(&max_events)->default_value(max_events, "1e10"),
       "refuse a benchmark whose samples, were every rank replayed, would pop more events than this, all runs together");
  po::variables_map vm;
  if (!parse_args(args, desc,
                  "usage: kanscale bench study [--study FILE] [--calibration FILE] [--samples N] [--repeat R] [--full]\n"
                  "Times a whole study, intervals included, on one core; counts the replays its samples ran.",
                  vm))
    return 0;
  if (samples < 1 || samples > 100000) throw InputError("--samples: expected 1 to 100000, got " + std::to_string(samples));
  if (repeat < 1 || repeat > 100) throw InputError("--repeat: expected 1 to 100, got " + std::to_string(repeat));
  // the shipped fitted calibration costs kanscale's own kernels: the study's
  // workload is timed as kanscale's trainer runs it (a PyTorch workload
  // needs a PyTorch calibration)
  StudySpec spec = load_study(file, 1e12, calibration, Implementation::kanscale);
  const auto [all_ranks, point_replays] = count_replays(spec, samples);
  if (all_ranks == 0)
    throw InputError("--calibration " + calibration + ": records no measured uncertainty, so the study has no intervals to time");
  // an upper bound before anything runs: every rank of every sample replayed (bench sim: 14 events a rank and iteration)
  if (!(max_events > 0)) throw InputError("--max-events: expected a positive number, got " + printf_number("%g", max_events));
  check_work(WorkEstimate{static_cast<double>(all_ranks) * spec.iterations * 14 * repeat * (full ? 2 : 1), 0}, max_events,
             "bench study: --samples and --repeat (every rank of every sample)");
  std::cout << "kanscale bench study: " << spec.name << " (" << file << "), " << spec.scenarios.size() << " scenarios, "
            << samples << " interval samples each, calibration " << calibration << ", workload as implementation kanscale\n"
            << "machine: " << describe(this_machine("", "")) << "; one core; median of " << repeat << " runs\n\n";
  std::vector<double> walls;
  StudyRun fast;
  for (int i = 0; i < repeat; ++i) {
    fast = run_all(spec);
    walls.push_back(fast.wall_s);
  }
  fast.wall_s = median(walls);
  std::cout << std::left << std::setw(26) << "samples replayed as" << std::right << std::setw(10) << "wall s" << std::setw(14)
            << "full replays" << std::setw(14) << "reduced" << std::setw(16) << "ranks replayed" << std::setw(16) << "every rank" << "\n";
  print_row("reduced where exact", fast, all_ranks);
  if (full) {
    for (auto& sc : spec.scenarios) sc.options.interval_full_replays = true;
    for (auto& sc : spec.scenario_bases) sc.options.interval_full_replays = true;
    const StudyRun slow = run_all(spec);
    print_row("every rank (reference)", slow, all_ranks);
    const double worst = largest_band_difference(fast, slow);
    std::cout << "\nspeed-up " << std::setprecision(1) << slow.wall_s / fast.wall_s << "x; largest relative difference "
              << std::scientific << std::setprecision(1) << worst << " over every band edge (iteration time, speedup)\n";
  }
  print_footnote(point_replays, fast.unknown_runs);
  return 0;
}

}  // namespace ks::cli
