// kanscale bench progress: how far a non-blocking all-reduce gets while its ranks compute (measure/mpi_progress).
#include <boost/program_options.hpp>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <iostream>
#include <tuple>

#include <unistd.h>

#include "commands.hpp"
#include "formats/provenance.hpp"
#include "formats/measurement_records.hpp"
#include "measure/comm.hpp"
#include "measure/interference.hpp"
#include "measure/mpi_progress.hpp"
#include "measure/machine_info.hpp"
#include "measure/kan.hpp"
#include "measure/kan_cpu.hpp"
#include "model/cost.hpp"
#include "model/kan_model.hpp"
#include "model/units.hpp"
#include "sim/report.hpp"
#include "formats/config_files.hpp"
#include <iomanip>
#include <nlohmann/json.hpp>
#include "measure/cuda_plugin.hpp"
#include "measure/checkpoint.hpp"
#include "measure/eval.hpp"
#include "measure/trainer.hpp"
#include "measure/torch_run.hpp"
#include "formats/yaml_reader.hpp"
#include "options.hpp"

namespace po = boost::program_options;

namespace ks::cli {

namespace {

// Rank 0's table of bench progress, and its file for kanscale fit.
void report_progress(const std::vector<ProgressPoint>& points, const Comm& comm, double compute, int repeats, const std::string& json,
                     const std::string& cmdline) {
  std::cout << "kanscale bench progress: a non-blocking all-reduce launched before " << compute
            << " x its own time of compute, MPI_Test every poll interval, then waited for; " << comm.size() << " rank(s) ("
            << comm.backend() << "), medians of " << repeats << ", the largest rank's\n"
            << "  (done during compute = 1 - wait / alone: 1 moves on its own, 0 only inside the wait)\n";
  std::cout << std::left << std::setw(12) << "  bytes" << std::right << std::setw(12) << "alone" << std::setw(14) << "poll every"
            << std::setw(12) << "compute" << std::setw(12) << "wait" << std::setw(16) << "done in compute" << "\n";
  for (const auto& p : points) {
    std::cout << "  " << std::left << std::setw(10) << format_bytes(p.bytes) << std::right << std::setw(12) << format_time(p.alone_s)
              << std::setw(14) << (p.poll_interval_s > 0 ? format_time(p.poll_interval_s) : std::string("never")) << std::setw(12)
              << format_time(p.compute_s) << std::setw(12) << format_time(p.wait_s) << std::setw(15) << std::fixed
              << std::setprecision(2) << (p.alone_s > 0 ? 1 - p.wait_s / p.alone_s : 0.0) << "\n";
    std::cout.unsetf(std::ios::floatfield);
  }
  if (comm.size() == 1) std::cout << "  (one rank: the all-reduce is a no-op; run under mpirun for a measurement)\n";
  if (json.empty()) return;
  ProgressFile f;
  f.command_line = cmdline;
  f.ranks = comm.size();
  f.mpi_library = comm.library_version();
  f.cpu_model = this_machine("", f.mpi_library).cpu_model;
  char date[32];
  const std::time_t t = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  f.date_utc = date;
  f.points = points;
  write_files_atomic({{json, to_json(f).dump(2) + "\n"}});
}

}  // namespace

int bench_progress(const std::vector<std::string>& args, const std::string& cmdline) {
  std::string sizes_text = "64KiB,256KiB,1MiB,4MiB", polls_text = "0,0.5,0.2,0.05", json;
  double compute = 1.5;
  int repeats = 7;
  po::options_description desc("bench progress options");
  desc.add_options()
      ("help,h", "show this help")
      ("sizes", po::value(&sizes_text)->default_value(sizes_text), "all-reduce sizes, comma-separated")
      ("polls", po::value(&polls_text)->default_value(polls_text),
       "poll intervals as fractions of the all-reduce's own time, comma-separated (0: no poll)")
      ("compute", po::value(&compute)->default_value(compute, "1.5"), "compute per point, in all-reduce times")
      ("repeat", po::value(&repeats)->default_value(repeats), "repetitions per point (medians)")
      ("json", po::value(&json)->value_name("FILE"), "results as JSON");
  po::variables_map vm;
  if (!parse_args(args, desc, "usage: mpirun -np P kanscale bench progress [--sizes 64KiB,1MiB] [--polls 0,0.2] [--json F]", vm)) return 0;
  if (repeats < 3 || repeats > 1000) throw InputError("--repeat: expected 3 to 1000");
  if (!(compute >= 0.1 && compute <= 100)) throw InputError("--compute: expected 0.1 to 100 all-reduce times");
  std::vector<double> sizes, polls;
  try {
    sizes = parse_size_list(sizes_text, kProgressMinBytes, kProgressMaxBytes);
  } catch (const UnitError& e) {
    throw InputError(std::string("--sizes: ") + e.what());
  }
  for (const auto& w : split_list(polls_text, "--polls")) {
    double f = -1;
    try {
      std::size_t used = 0;
      f = std::stod(w, &used);
      if (used != w.size()) f = -1;
    } catch (const std::exception&) {
    }
    if (!(f >= 0 && f <= 100)) throw InputError("--polls: expected fractions from 0 to 100, got '" + w + "'");
    polls.push_back(f);
  }
  if (sizes.empty() || polls.empty()) throw InputError("--sizes and --polls: expected at least one value each");
  // the fit's reader takes at most 200 points a file (each costs the fit's whole grid)
  if (sizes.size() * polls.size() > 200) throw InputError("--sizes x --polls: at most 200 points, got " + std::to_string(sizes.size() * polls.size()));
  check_output_paths({{json, "--json"}});
  auto comm = launched_by_mpirun() ? make_mpi_comm() : make_self_comm();
  const auto points = measure_progress(*comm, sizes, polls, compute, repeats);
  if (comm->rank() != 0) return 0;
  report_progress(points, *comm, compute, repeats, json, cmdline);
  return 0;
}

// kanscale bench overlap: under mpirun, two non-blocking all-reduces in
// flight at once, against one after another (what the replay assumes).

}  // namespace ks::cli
