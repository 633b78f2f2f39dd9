#include "options.hpp"

#include <algorithm>
#include <iostream>
#include <sstream>

#include "model/yaml_reader.hpp"

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

std::uint64_t parse_seed(const std::string& text) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos || text.size() > 19) {
    throw InputError("--seed: expected a non-negative integer, got \"" + text + "\"");
  }
  return std::stoull(text);
}

std::vector<int> parse_int_list(const std::string& text, const std::string& option) {
  std::vector<int> out;
  if (text.empty() || text.back() == ',' || text.front() == ',') {
    throw InputError(option + ": expected a comma-separated list of integers such as 1,2,4,8, got \"" + text + "\"");
  }
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    std::size_t pos = 0;
    long v = 0;
    try {
      v = std::stol(item, &pos);
    } catch (...) {
      pos = 0;
    }
    if (pos == 0 || pos != item.size() || v < 0 || v > 10000000) {
      throw InputError(option + ": expected a comma-separated list of non-negative integers such as 1,2,4,8, got \"" +
                       text + "\"");
    }
    if (std::find(out.begin(), out.end(), static_cast<int>(v)) != out.end()) {
      throw InputError(option + ": " + std::to_string(v) + " is listed twice in \"" + text + "\"");
    }
    out.push_back(static_cast<int>(v));
  }
  if (out.empty()) throw InputError(option + ": expected at least one integer");
  return out;
}

bool parse_args(const std::vector<std::string>& args, const po::options_description& desc, const std::string& usage_line,
                po::variables_map& vm) {
  po::positional_options_description none;  // extra words are errors, not ignored
  po::store(po::command_line_parser(args).options(desc).positional(none).run(), vm);
  if (vm.count("help")) {
    std::cout << usage_line << "\n\n" << desc << "\n";
    return false;
  }
  po::notify(vm);
  return true;
}

}  // namespace ks::cli
