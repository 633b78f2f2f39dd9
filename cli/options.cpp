#include "base/data_dir.hpp"
#include "measure/comm.hpp"
#include "measure/machine_info.hpp"
#include "options.hpp"
#include "model/limits.hpp"

#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <stdexcept>

#include <algorithm>
#include <iostream>
#include <set>
#include <cctype>
#include <sstream>

#include "model/units.hpp"
#include "formats/yaml_reader.hpp"

namespace po = boost::program_options;

namespace ks::cli {

po::options_description common_options(CommonOptions& o) {
  po::options_description d("common options");
  d.add_options()
      ("help,h", "show this help")
      ("cluster", po::value(&o.cluster)->value_name("FILE"), "cluster YAML (configs/clusters/)")
      ("workload", po::value(&o.workload)->value_name("FILE"), "workload YAML (configs/workloads/)")
      ("calibration", po::value(&o.calibration)->value_name("FILE"),
       "calibration YAML (configs/calibrations/); default: derived from the cluster's datasheet values")
      ("gpus", po::value(&o.gpus)->value_name("N[,N...]")->default_value(o.gpus), "GPU counts")
      ("gpus-per-node", po::value(&o.gpus_per_node)->value_name("M"),
       "place M GPUs per node (default: the cluster's GPUs per node)")
      ("seed", po::value(&o.seed)->value_name("S"), "random seed (default: the workload's)")
      ("json", po::value(&o.json)->value_name("FILE"), "write results as JSON")
      ("csv", po::value(&o.csv)->value_name("FILE"), "write results as CSV")
      ("trace", po::value(&o.trace)->value_name("FILE"), "write a Chrome trace-event JSON (Perfetto)");
  return d;
}

void check_threads(long long threads, const std::string& option) {
  if (threads < 1 || threads > kMaxThreads)
    throw InputError(option + ": expected 1 to " + std::to_string(kMaxThreads) + " threads, got " + std::to_string(threads));
}

double parse_size_option(const std::string& text, const std::string& option) {
  double v = 0;
  try {
    v = parse_size_bytes(text);
  } catch (const UnitError& e) {
    throw InputError(option + ": " + e.what());
  }
  if (!(v > 0)) throw InputError(option + ": expected a positive size such as 64GiB, got \"" + text + "\"");
  return v;
}

std::uint64_t parse_seed(const std::string& text) {
  // every 64-bit seed is a seed: 0 to 2^64 - 1
  const std::string expected = "--seed: expected an integer from 0 to 18446744073709551615, got \"" + text + "\"";
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos || text.size() > 20) throw InputError(expected);
  try {
    return std::stoull(text);
  } catch (const std::out_of_range&) {
    throw InputError(expected);
  }
}

std::vector<std::string> split_list(const std::string& text, const std::string& option) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(item);
  if (text.empty() || text.back() == ',' || std::any_of(out.begin(), out.end(), [](const std::string& i) { return i.empty(); }))
    throw InputError(option + ": expected a comma-separated list without empty items, got \"" + text + "\"");
  return out;
}

std::vector<int> parse_int_list(const std::string& text, const std::string& option) {
  // GPU counts and ranks: kanscale's limit on GPUs (model/limits.hpp) keeps
  // every product of them with other counts in range.
  constexpr long kMaxEntry = kMaxGpus;
  std::vector<int> out;
  std::set<int> seen;
  if (text.empty() || text.back() == ',' || text.front() == ',') {
    throw InputError(option + ": expected a comma-separated list of integers such as 1,2,4,8, got \"" + text + "\"");
  }
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const bool digits = !item.empty() && item.find_first_not_of("0123456789") == std::string::npos;
    if (!digits) {
      throw InputError(option + ": expected a comma-separated list of non-negative integers such as 1,2,4,8, got \"" +
                       text + "\"");
    }
    if (item.size() > 18 || std::stoll(item) > kMaxEntry) {
      throw InputError(option + ": " + item + " is above the largest count kanscale accepts; expected 1 to " + std::to_string(kMaxEntry));
    }
    const int v = static_cast<int>(std::stol(item));
    if (!seen.insert(v).second) throw InputError(option + ": " + std::to_string(v) + " is listed twice in \"" + text + "\"");
    out.push_back(v);
  }
  if (out.empty()) throw InputError(option + ": expected at least one integer");
  return out;
}

bool parse_args(const std::vector<std::string>& args, const po::options_description& desc, const std::string& usage_line,
                po::variables_map& vm, const po::positional_options_description* positional) {
  const po::positional_options_description none;  // extra words are errors, not ignored
  const po::positional_options_description& pos = positional ? *positional : none;
  try {
    po::store(po::command_line_parser(args).options(desc).positional(pos).run(), vm);
  } catch (const po::too_many_positional_options_error&) {
    // the command as its usage line names it ("kanscale validate"), for the pointer to its help
    std::string cmd = "kanscale";
    if (const auto k = usage_line.find("kanscale "); k != std::string::npos) {
      std::istringstream words(usage_line.substr(k + 9));
      std::string w;
      while (words >> w && !w.empty() && std::islower(static_cast<unsigned char>(w[0]))) cmd += " " + w;
    }
    // name the stray word: the first that is not an option, does not follow
    // one (as its value) and is not one of the words the command takes
    unsigned taken = 0;
    for (std::size_t i = 0; i < args.size(); ++i) {
      const bool after_option = i > 0 && args[i - 1].size() > 1 && args[i - 1][0] == '-' && args[i - 1].find('=') == std::string::npos;
      if (!args[i].empty() && args[i][0] != '-' && !after_option && taken++ >= pos.max_total_count())
        throw InputError("unexpected word '" + args[i] + "' on the command line (see " + cmd + " --help)");
    }
    throw InputError("unexpected words on the command line (see " + cmd + " --help)");
  }
  if (vm.count("help")) {
    std::cout << usage_line << "\n\n" << desc << "\n";
    return false;
  }
  po::notify(vm);
  return true;
}

std::string self_executable() { return executable_path(); }

void use_python_for_jobs(const std::string& python) {
  if (python.empty()) throw InputError("--python: expected the path of an interpreter");
  ::setenv("KANSCALE_PYTHON", python.c_str(), 1);
}

// Two buffers of `nbytes` on every rank of this machine must fit in half its
// memory (`what`: the option and value named in the error).
void check_two_buffers_fit(const std::string& what, double nbytes) {
  const double memory = physical_memory_bytes();
  const double ranks = static_cast<double>(launched_by_mpirun() ? std::max(1, local_ranks()) : 1);
  if (memory > 0 && 2 * nbytes * ranks > memory / 2)
    throw InputError(what + ": " + std::to_string(static_cast<int>(ranks)) + " rank(s) x 2 buffers would need " +
                     format_bytes(2 * nbytes * ranks) + ", above half this machine's " + format_bytes(memory));
}

}  // namespace ks::cli
