#include "nccl_tests_log.hpp"

#include <algorithm>
#include <cstdlib>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "yaml_reader.hpp"

namespace ks {

namespace {
std::vector<std::string> words(const std::string& s) {
  std::vector<std::string> w;
  std::stringstream ss(s);
  std::string x;
  while (ss >> x) w.push_back(x);
  return w;
}
bool is_number(const std::string& s) {
  if (s.empty()) return false;
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return *end == '\0';
}
// strip a "[0] " prefix that some launchers add to every line
std::string strip_rank_prefix(std::string s) {
  for (;;) {
    const auto p = s.find("[0]");
    if (p == std::string::npos) return s;
    s.replace(p, 3, " ");
  }
}
}  // namespace

// Both sides of a row as nccl-tests prints them: no negative time or
// bandwidth, no wrong results, algbw = size / time (two decimals), busbw at
// most twice algbw. `bad` makes the row's error.
namespace {
template <typename Bad>
void check_row_sides(const NcclTestsRow& r, const std::vector<std::string>& w, const std::vector<std::string>& header, std::size_t base,
                     const Bad& bad) {
  for (int side = 0; side < 2; ++side) {
    const std::size_t o = base + 4 * static_cast<std::size_t>(side);
    const char* which = side == 0 ? "out-of-place" : "in-place";
    if (r.time_us[side] < 0 || r.algbw_GBps[side] < 0 || r.busbw_GBps[side] < 0)
      throw bad(std::string("a negative ") + which + " time or bandwidth");
    // the run checked its results: a wrong one is no measurement to fit
    // (nccl-tests before 2.11 printed a column "error", the largest
    // numerical error, in its place: not a count)
    const bool counts_wrong = header.size() > o + 3 && header[o + 3] == "#wrong";
    if (counts_wrong && is_number(w[o + 3]) && std::strtod(w[o + 3].c_str(), nullptr) != 0)
      throw bad(std::string("the ") + which + " #wrong is " + w[o + 3] + " (the collective's results were wrong: kanscale fits no such run)");
    if (r.time_us[side] <= 0) continue;  // (an in-place column nccl-tests left at 0)
    // nccl-tests prints algbw = size / time (GB/s) to two decimals and busbw
    // at most twice it (2 (n - 1) / n): a row that disagrees was not printed by it
    const double algbw = r.bytes / (r.time_us[side] * 1e3);
    if (std::fabs(r.algbw_GBps[side] - algbw) > 0.01 + 0.02 * algbw)
      throw bad(std::string("the ") + which + " algbw " + w[o + 1] + " GB/s disagrees with size / time (" + std::to_string(algbw) + " GB/s)");
    if (r.busbw_GBps[side] > 2 * r.algbw_GBps[side] + 0.01)
      throw bad(std::string("the ") + which + " busbw " + w[o + 2] + " GB/s is more than twice the algbw (2 (n - 1) / n < 2)");
  }
}
}  // namespace

NcclTestsLog parse_nccl_tests_log(const std::string& text, const std::string& file) {
  NcclTestsLog log;
  log.file = file;
  std::stringstream in(text);
  std::string raw;
  int lineno = 0;
  std::vector<std::string> header;  // column names of the table
  std::set<std::string> hosts;
  while (std::getline(in, raw)) {
    ++lineno;
    std::string line = strip_rank_prefix(raw);
    const auto w = words(line);
    if (w.empty()) continue;
    // "#  Rank  0 Group  0 Pid 1234 on host device 0 [0x..] NAME" (any prefix of '#')
    auto it = std::find(w.begin(), w.end(), "Rank");
    if (it != w.end() && it + 1 != w.end() && is_number(*(it + 1)) && std::find(w.begin(), w.end(), "on") != w.end() &&
        (w[0][0] == '#' || std::find(w.begin(), w.end(), "Pid") != w.end())) {
      const auto on = std::find(w.begin(), w.end(), "on");
      if (on + 1 != w.end()) {
        hosts.insert(*(on + 1));
        log.hosts.push_back(*(on + 1));
        ++log.ranks;
      }
      continue;
    }
    // nccl-tests >= 2.18: "# nccl-tests version 2.18.2 nccl-headers=23007 nccl-library=23007"
    // (NCCL_VERSION_CODE: major*10000 + minor*100 + patch)
    if (const auto lib = line.find("nccl-library="); lib != std::string::npos && log.nccl_version.empty()) {
      const long code = std::strtol(line.c_str() + lib + 13, nullptr, 10);
      if (code >= 10000)
        log.nccl_version = std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." + std::to_string(code % 100);
      continue;
    }
    if (line.find("NCCL version") != std::string::npos && log.nccl_version.empty()) {
      // "NCCL version 2.14.3+cuda11.7"; real logs also hold the bare words
      const auto v = words(line.substr(line.find("NCCL version")));
      if (v.size() > 2) log.nccl_version = v[2];
      continue;
    }
    // the column header: "# size count type redop [root] time algbw busbw #wrong|error time ..."
    // (nccl-tests before 2.11 printed it without the '#')
    if (w.size() > 2 && ((w[0] == "#" && w[1] == "size" && w[2] == "count") || (w[0] == "size" && w[1] == "count"))) {
      header.assign(w.begin() + (w[0] == "#" ? 1 : 0), w.end());
      continue;
    }
    if (w[0][0] == '#' || header.empty()) continue;
    if (!is_number(w[0])) continue;  // NCCL_DEBUG lines and the like
    // a table row: size count type redop [root] then 4 numbers twice
    const bool has_root = std::find(header.begin(), header.end(), "root") != header.end();
    const std::size_t base = has_root ? 5 : 4;
    auto bad = [&](const std::string& what) {
      return InputError(file + ":" + std::to_string(lineno) + ": " + what + " in a table row: \"" + raw + "\"");
    };
    if (w.size() < base + 8) throw bad("expected " + std::to_string(base + 8) + " columns (size, count, type, redop" +
                                       (has_root ? ", root" : "") + ", then time, algbw, busbw, #wrong out-of-place and in-place)");
    NcclTestsRow r;
    r.line = lineno;
    if (!is_number(w[1])) throw bad("the count is not a number");
    r.bytes = std::strtod(w[0].c_str(), nullptr);
    // sizes and counts above 2^53 are no sweep's: they would lose digits
    const double count = std::strtod(w[1].c_str(), nullptr);
    if (!(r.bytes <= 9007199254740992.0)) throw bad("the size is out of range");
    if (!(count >= 0 && count <= 9007199254740992.0) || count != std::floor(count)) throw bad("the count is not a whole number in range");
    r.count = static_cast<std::int64_t>(count);
    r.type = w[2];
    r.redop = w[3];
    // the size is count x the element's bytes, for the types nccl-tests names
    static const std::map<std::string, double> element = {{"int8", 1},  {"uint8", 1},  {"half", 2},    {"bfloat16", 2}, {"float", 4},
                                                          {"int32", 4}, {"uint32", 4}, {"double", 8}, {"int64", 8},    {"uint64", 8}};
    if (const auto e = element.find(r.type); e != element.end() && count * e->second != r.bytes)
      throw bad("a size of " + w[0] + " bytes is not its count " + w[1] + " x " + std::to_string(static_cast<int>(e->second)) + " bytes (" + r.type + ")");
    if (!log.rows.empty() && !(r.bytes > log.rows.back().bytes))
      throw bad("the size " + w[0] + " does not follow the row before's " +
                std::to_string(static_cast<long long>(log.rows.back().bytes)) + " (a sweep's sizes increase: two tables run together?)");
    for (int side = 0; side < 2; ++side) {
      const std::size_t o = base + 4 * static_cast<std::size_t>(side);
      for (std::size_t j = 0; j < 3; ++j)
        if (!is_number(w[o + j])) throw bad("column " + std::to_string(o + j + 1) + " (\"" + w[o + j] + "\") is not a number");
      r.time_us[side] = std::strtod(w[o].c_str(), nullptr);
      r.algbw_GBps[side] = std::strtod(w[o + 1].c_str(), nullptr);
      r.busbw_GBps[side] = std::strtod(w[o + 2].c_str(), nullptr);
      if (!std::isfinite(r.time_us[side]) || !std::isfinite(r.algbw_GBps[side]) || !std::isfinite(r.busbw_GBps[side]))
        throw bad("a time or bandwidth is not a finite number");
    }
    if (r.bytes < 0 || r.time_us[0] <= 0) throw bad("negative size or non-positive time");
    check_row_sides(r, w, header, base, bad);
    log.rows.push_back(r);
  }
  if (log.rows.empty()) throw InputError(file + ": no nccl-tests table found (a '#  size  count  type ...' header and its rows)");
  if (std::all_of(log.rows.begin(), log.rows.end(), [](const NcclTestsRow& r) { return r.bytes == 0; }))
    throw InputError(file + ": every row's size is 0: no row moves data to fit a bandwidth to");
  log.nodes = static_cast<int>(hosts.size());
  // an all-reduce's busbw is its algbw x 2 (n - 1) / n (nccl-tests'
  // PERFORMANCE.md): with the ranks known, a row off it was not printed by
  // nccl-tests (two decimals each: 0.02 GB/s of rounding, and 2%)
  if (log.ranks >= 2)
    for (const auto& r : log.rows) {
      if (r.redop == "none") continue;  // not an all-reduce's row
      const double factor = 2.0 * (log.ranks - 1) / log.ranks;
      for (int side = 0; side < 2; ++side) {
        if (r.time_us[side] <= 0) continue;
        const double want = r.algbw_GBps[side] * factor;
        if (std::fabs(r.busbw_GBps[side] - want) > 0.02 + 0.02 * want)
          throw InputError(file + ":" + std::to_string(r.line) + ": the " + (side == 0 ? "out-of-place" : "in-place") + " busbw " +
                           std::to_string(r.busbw_GBps[side]) + " GB/s is not algbw x 2 (n - 1) / n = " + std::to_string(want) + " GB/s for " +
                           std::to_string(log.ranks) + " ranks (an all_reduce_perf row?)");
      }
    }
  return log;
}

NcclTestsLog read_nccl_tests_log(const std::string& path) {
  return parse_nccl_tests_log(read_input_file(path, "an nccl-tests log"), path);
}

}  // namespace ks
