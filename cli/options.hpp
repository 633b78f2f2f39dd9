#pragma once
// The option vocabulary shared by every subcommand.
#include <boost/program_options.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ks::cli {

struct CommonOptions {
  std::string cluster, workload, calibration;
  std::string gpus = "1,2,4,8";
  int gpus_per_node = 0;  // 0: the cluster's
  std::string seed;  // parsed by parse_seed
  std::string json, csv, trace;
};

boost::program_options::options_description common_options(CommonOptions& o);
// "1,2,4,8" -> {1,2,4,8}; throws InputError on anything else.
std::vector<int> parse_int_list(const std::string& text, const std::string& option);
// "a,b,c" -> {"a","b","c"}; an empty item throws InputError naming `option`.
std::vector<std::string> split_list(const std::string& text, const std::string& option);
// CPU threads per rank: 1 to kMaxThreads; throws InputError naming `option`.
constexpr int kMaxThreads = 1024;
void check_threads(long long threads, const std::string& option);
// A size such as "64GiB" for a flag; throws InputError naming `option`.
double parse_size_option(const std::string& text, const std::string& option);
// A non-negative integer seed; throws InputError otherwise.
std::uint64_t parse_seed(const std::string& text);
// The running kanscale executable (/proc/self/exe), for the jobs a schedule
// starts (validate, calibrate).
std::string self_executable();
// --python for the commands whose jobs start Python (calibrate, validate):
// every job kanscale starts (train, measure, bench) inherits it as
// $KANSCALE_PYTHON. InputError for an empty path.
void use_python_for_jobs(const std::string& python);

// Every subcommand's parse: args against desc (and `positional`, the words
// that name a file, e.g. a study or a plan); a stray word is an error naming
// it. Prints usage_line and desc and returns false when --help was given.
bool parse_args(const std::vector<std::string>& args, const boost::program_options::options_description& desc,
                const std::string& usage_line, boost::program_options::variables_map& vm,
                const boost::program_options::positional_options_description* positional = nullptr);

// Two buffers of `nbytes` on every rank of this machine must fit in half its
// memory; else InputError naming `what` (the option and its value).
void check_two_buffers_fit(const std::string& what, double nbytes);

}  // namespace ks::cli
