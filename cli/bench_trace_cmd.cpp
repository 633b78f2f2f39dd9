// kanscale bench trace: how reading a torch.profiler trace scales with how
// deep its events nest (issue 55: the walk up every event's parents was
// quadratic; 100,000 deep took 13 s). A chain of N events each inside the
// one before, nested by the profiler's ids and by time, at 10,000 and
// 100,000 (or --depths), the fastest of --repeat readings each.
#include <boost/program_options.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "formats/torch_trace.hpp"
#include "options.hpp"

namespace po = boost::program_options;

namespace ks::cli {

namespace {
nlohmann::json chain(int n, bool by_ids) {
  nlohmann::json ev = nlohmann::json::array();
  for (int i = 0; i < n; ++i) {
    nlohmann::json e = {{"name", "aten::op"}, {"ph", "X"}, {"ts", static_cast<double>(i)}, {"dur", static_cast<double>(2 * (n - i))}, {"tid", 1}};
    if (by_ids) e["args"] = {{"id", i + 1}, {"parent", i}};
    ev.push_back(std::move(e));
  }
  return ev;
}

double fastest_read_s(const nlohmann::json& trace, int repeat) {
  double best = 1e300;
  for (int r = 0; r < repeat; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto events = read_torch_trace(trace, "chain");
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (events.empty()) throw std::runtime_error("bench trace: no events read");
  }
  return best;
}
}  // namespace

int bench_trace(const std::vector<std::string>& args) {
  std::string depths = "10000,100000";
  int repeat = 5;
  po::options_description desc("bench trace options");
  desc.add_options()("help,h", "show this help")("depths", po::value(&depths)->default_value(depths), "chain depths, the first the reference")(
      "repeat", po::value(&repeat)->default_value(repeat), "readings per depth (the fastest is reported)");
  po::variables_map vm;
  if (!parse_args(args, desc, "usage: kanscale bench trace [--depths 10000,100000] [--repeat 5]", vm)) return 0;
  const auto ns = parse_int_list(depths, "--depths");
  for (int n : ns)
    if (n < 1 || n > 1000000) throw InputError("--depths: each from 1 to 1000000, got " + std::to_string(n));
  if (repeat < 1 || repeat > 100) throw InputError("--repeat: expected 1 to 100, got " + std::to_string(repeat));
  std::printf("kanscale bench trace: a chain of events each inside the one before; the fastest of %d readings\n\n", repeat);
  std::printf("%-10s %-8s %12s %12s %14s\n", "depth", "nesting", "read (ms)", "us / event", "vs first depth");
  for (bool by_ids : {true, false}) {
    double first = 0;
    for (std::size_t k = 0; k < ns.size(); ++k) {
      const double s = fastest_read_s(chain(ns[k], by_ids), repeat);
      if (k == 0) first = s;
      std::printf("%-10d %-8s %12.3f %12.3f %13.1fx\n", ns[k], by_ids ? "ids" : "time", s * 1e3, s * 1e6 / ns[k], s / first);
    }
  }
  std::printf("\nlinear in depth: the ratio follows the depths' (10x from 10,000 to 100,000; issue 55 asks at most 15x); quadratic: their square\n");
  return 0;
}

}  // namespace ks::cli
