// kanscale bench overlap: the trainer's all-reduce overlapped with its backward.
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

int bench_overlap(const std::vector<std::string>& args, const std::string& cmdline) {
  std::string sizes_text = "4KiB,16KiB,64KiB,256KiB,1MiB", json;
  double gap = 0.5;
  int repeats = 15;
  po::options_description desc("bench overlap options");
  desc.add_options()
      ("help,h", "show this help")
      ("sizes", po::value(&sizes_text)->default_value(sizes_text), "all-reduce sizes, comma-separated")
      ("gap", po::value(&gap)->default_value(gap, "0.5"), "compute before the staggered pair's second launch, in all-reduce times")
      ("repeat", po::value(&repeats)->default_value(repeats), "repetitions per size (medians)")
      ("json", po::value(&json)->value_name("FILE"), "results as JSON");
  po::variables_map vm;
  if (!parse_args(args, desc, "usage: mpirun -np P kanscale bench overlap [--sizes 4KiB,64KiB] [--gap 0.5] [--json F]", vm)) return 0;
  if (repeats < 3 || repeats > 1000) throw InputError("--repeat: expected 3 to 1000");
  if (!(gap >= 0 && gap <= 100)) throw InputError("--gap: expected 0 to 100 all-reduce times");
  std::vector<double> sizes;
  try {
    sizes = parse_size_list(sizes_text, kProgressMinBytes, kProgressMaxBytes);
  } catch (const UnitError& e) {
    throw InputError(std::string("--sizes: ") + e.what());
  }
  if (sizes.empty() || sizes.size() > 200) throw InputError("--sizes: expected 1 to 200 sizes");
  const double largest = *std::max_element(sizes.begin(), sizes.end());
  check_two_buffers_fit("--sizes " + format_bytes(largest), largest);
  check_output_paths({{json, "--json"}});
  auto comm = launched_by_mpirun() ? make_mpi_comm() : make_self_comm();
  const auto points = measure_overlap(*comm, sizes, gap, repeats);
  if (comm->rank() != 0) return 0;
  std::cout << "kanscale bench overlap: two non-blocking all-reduces of one size in flight at once; " << comm->size() << " rank(s) ("
            << comm->backend() << "), medians of " << repeats << ", the largest rank's, from the first launch to both done\n"
            << "  pair: launched back to back; staggered: the second after " << gap
            << " x alone of compute polling every 0.1 x alone; hidden: the share of the second's time\n"
            << "  that one after another (2 x alone, or gap + alone) would add and the measurement does not\n";
  std::cout << std::left << std::setw(12) << "  bytes" << std::right << std::setw(12) << "alone" << std::setw(12) << "pair" << std::setw(10)
            << "hidden" << std::setw(14) << "staggered" << std::setw(12) << "gap" << std::setw(10) << "hidden" << "\n";
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& p : points) {
    std::cout << "  " << std::left << std::setw(10) << format_bytes(p.bytes) << std::right << std::setw(12) << format_time(p.alone_s)
              << std::setw(12) << format_time(p.pair_s) << std::setw(10) << std::fixed << std::setprecision(2) << p.hidden_pair();
    std::cout.unsetf(std::ios::floatfield);
    std::cout << std::setw(14) << format_time(p.staggered_s) << std::setw(12) << format_time(p.gap_s) << std::setw(10) << std::fixed
              << std::setprecision(2) << p.hidden_staggered() << "\n";
    std::cout.unsetf(std::ios::floatfield);
    rows.push_back({{"bytes", p.bytes}, {"alone_s", p.alone_s}, {"pair_s", p.pair_s}, {"staggered_s", p.staggered_s}, {"gap_s", p.gap_s},
                    {"hidden_pair", p.hidden_pair()}, {"hidden_staggered", p.hidden_staggered()}});
  }
  if (comm->size() == 1) std::cout << "  (one rank: the all-reduces are no-ops; run under mpirun for a measurement)\n";
  if (json.empty()) return 0;
  const std::string library = comm->library_version();
  char date[32];
  const std::time_t t = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  const nlohmann::json doc = {{"command_line", cmdline}, {"ranks", comm->size()},       {"mpi_library", library},
                              {"cpu_model", this_machine("", library).cpu_model}, {"date_utc", date}, {"gap", gap},
                              {"points", rows}};
  write_files_atomic({{json, doc.dump(2) + "\n"}});
  return 0;
}

}  // namespace ks::cli
