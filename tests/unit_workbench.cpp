// The measurement workbench (measure/workbench.hpp) on a clock whose time is
// the number of calls made (1 us each), and the collective table
// (measure/collective_sweep): what nccl-tests' testColl entries hold.
#include <doctest/doctest.h>

#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "measure/collective_sweep.hpp"
#include "measure/workbench.hpp"
#include "measure/kernel_bench.hpp"
#include "common/error.hpp"
#include "model/units.hpp"
#include "temp_dir.hpp"

using namespace ks;

namespace {
// Each call of the timed function advances this clock by 1 us.
struct CallClock final : BenchClock {
  const long* calls;
  long at = 0;
  explicit CallClock(const long* c) : calls(c) {}
  void start() override { at = *calls; }
  double stop() override { return static_cast<double>(*calls - at) * 1e-6; }
};
}  // namespace

TEST_CASE("the timer: warm-up, the barrier once, samples of scaled calls, the time per call") {
  long calls = 0;
  CallClock clock(&calls);
  std::vector<std::string> log;
  const TimerHooks hooks{[&] { log.push_back("barrier@" + std::to_string(calls)); }, [&] { log.push_back("drain"); },
                         [&] { log.push_back("sample"); }};
  // one call per sample: 2 warm-up calls, then 5 samples of 1 call
  Stat s = time_calls(Repeats{2, 5}, [&] { ++calls; }, clock, hooks);
  CHECK(calls == 7);
  CHECK(s.n == 5);
  CHECK(s.median == doctest::Approx(1e-6));
  REQUIRE(log.size() == 7);
  CHECK(log[0] == "drain");
  CHECK(log[1] == "barrier@2");  // after the warm-up, before the first sample
  CHECK(log[2] == "sample");
  // scaled: a sample of at least 100 us needs 128 calls of 1 us (the
  // doubling tries 1, 2, ..., 128: 255 calls), then 3 samples of 128
  calls = 0;
  s = time_calls(Repeats{0, 3, 1, 1e-4}, [&] { ++calls; }, clock);
  CHECK(calls == 255 + 3 * 128);
  CHECK(s.median == doctest::Approx(1e-6));
  // a fixed count per sample (nccl-tests' -n), capped scaling
  calls = 0;
  s = time_calls(Repeats{1, 1, 20}, [&] { ++calls; }, clock);
  CHECK(calls == 21);
  CHECK(s.median == doctest::Approx(1e-6));
  calls = 0;
  // 1 s is out of reach: the trials of 1, 2 and 4 calls, then samples at the cap of 8
  time_calls(Repeats{0, 1, 1, 1.0, 8}, [&] { ++calls; }, clock);
  CHECK(calls == 1 + 2 + 4 + 8);
}

TEST_CASE("the median's interval from order statistics, and the stopping rule that reads it") {
  std::vector<double> v;
  double lo = 0, hi = 0;
  // 5 values: even the smallest and largest hold the median with 1 - 2/2^5 = 93.75% < 95%: no interval
  for (int i = 1; i <= 5; ++i) v.push_back(i);
  CHECK_FALSE(median_ci(v, 0.95, lo, hi));
  CHECK(median_rel_halfwidth(v) == std::numeric_limits<double>::infinity());
  // 6 values: min and max, 1 - 2/64 = 96.9%
  v.push_back(6);
  REQUIRE(median_ci(v, 0.95, lo, hi));
  CHECK(lo == 1);
  CHECK(hi == 6);
  // 20 values (shuffled): P(Bin(20, 1/2) <= 5) = 21700/2^20 = 0.0207 <= 0.025 and
  // P(<= 6) = 60460/2^20 = 0.0577 > 0.025, so the 6th smallest and 6th largest (the 15th)
  v.clear();
  for (int i = 20; i >= 1; --i) v.push_back(i * 10.0);
  REQUIRE(median_ci(v, 0.95, lo, hi));
  CHECK(lo == 60);
  CHECK(hi == 150);
  // half of (150 - 60) over the median 105
  CHECK(median_rel_halfwidth(v) == doctest::Approx(45.0 / 105.0));
  // 100 values: the normal approximation's j = 50 - 1.96 x 5 = 40.2 -> 40 (tables: 40th and 61st)
  v.clear();
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  REQUIRE(median_ci(v, 0.95, lo, hi));
  CHECK(lo == 40);
  CHECK(hi == 61);

  // the rule: a clock that alternates 1 and 1.04 us a call (the median is known
  // to +-2% from the sixth sample on) stops there with a 5% target, takes
  // every sample without one, and stops only when every rank agrees
  long calls = 0;
  struct Alternating final : BenchClock {
    long* calls;
    long at = 0;
    explicit Alternating(long* c) : calls(c) {}
    void start() override { at = *calls; }
    double stop() override { return (*calls - at) * (*calls % 2 ? 1.04e-6 : 1e-6); }
  } clock(&calls);
  Repeats r{0, 30};
  r.target_rel_halfwidth = 0.05;
  CHECK(time_calls(r, [&] { ++calls; }, clock).n == 6);
  r.target_rel_halfwidth = 0;
  CHECK(time_calls(r, [&] { ++calls; }, clock).n == 30);
  r.target_rel_halfwidth = 0.05;
  int asked = 0;
  TimerHooks other_rank_unsure;
  other_rank_unsure.agree = [&](bool known) { return known && ++asked > 3; };  // another rank knows 3 samples later
  CHECK(time_calls(r, [&] { ++calls; }, clock, other_rank_unsure).n == 9);
}

TEST_CASE("the collective table: bus factors, results and initial buffers per entry") {
  const CollectiveSpec* ar = find_collective("allreduce");
  const CollectiveSpec* bc = find_collective("broadcast");
  REQUIRE(ar != nullptr);
  REQUIRE(bc != nullptr);
  CHECK(find_collective("alltoall") == nullptr);
  CHECK(collective_names() == "allreduce|broadcast");
  // nccl-tests' PERFORMANCE.md: all-reduce 2(n-1)/n (8 ranks: 1.75), broadcast 1
  CHECK(ar->bus_factor(8) == doctest::Approx(1.75));
  CHECK(bc->bus_factor(8) == 1.0);
  CHECK(ar->nonblocking);
  CHECK_FALSE(bc->nonblocking);
  CHECK(bc->rooted);
  // rank r holds (r + 1)(i % 7 + 1): the sum over 3 ranks of element 2 is
  // (1 + 2 + 3) x 3 = 18; a broadcast from root 1 gives 2 x 3 = 6
  CHECK(ar->expected(3, -1, 2) == 18.0f);
  CHECK(bc->expected(3, 1, 2) == 6.0f);
  // in place the receive buffer starts as the rank's input; a broadcast's
  // non-root ranks start from zeros
  CHECK(ar->initial(2, -1, true, 2) == 9.0f);
  CHECK(ar->initial(2, -1, false, 2) == 0.0f);
  CHECK(bc->initial(0, 1, true, 2) == 0.0f);
  CHECK(bc->initial(1, 1, true, 2) == 6.0f);
}

TEST_CASE("the cold repetitions' eviction sized by the last-level cache: flush_between_repeats Nx_llc") {
  // the two forms (a size, or a multiple of the LLC) and what is refused
  CHECK(parse_flush("64MiB") == std::pair<double, double>{64.0 * 1024 * 1024, 0.0});
  CHECK(parse_flush("2x_llc") == std::pair<double, double>{0.0, 2.0});
  CHECK(parse_flush("1.5x_llc") == std::pair<double, double>{0.0, 1.5});
  for (const char* bad : {"0x_llc", "17x_llc", "x_llc", "twox_llc", "64", "-1MiB"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(parse_flush(bad), UnitError);
  }
  // a sysfs cpu directory as Linux writes it: L1d, L1i, L2 (one CPU), L3 shared by "0-1"
  TempDir d;
  auto index = [&](int i, const std::string& level, const std::string& type, const std::string& size, const std::string& shared) {
    const std::string dir = "cpu0/cache/index" + std::to_string(i) + "/";
    std::filesystem::create_directories(d.path + "/" + dir);
    d.write(dir + "level", level + "\n");
    d.write(dir + "type", type + "\n");
    d.write(dir + "size", size + "\n");
    d.write(dir + "shared_cpu_list", shared + "\n");
  };
  index(0, "1", "Data", "32K", "0");
  index(1, "1", "Instruction", "32K", "0");
  index(2, "2", "Unified", "512K", "0");
  index(3, "3", "Unified", "32768K", "0-1");
  const LastLevelCache llc = last_level_cache(d.path + "/cpu0");
  CHECK(llc.bytes == 32.0 * 1024 * 1024);
  CHECK(llc.sharing_cpus == 2);
  index(3, "3", "Unified", "96M", "0,2,4-7");  // 1 + 1 + 4 CPUs
  CHECK(last_level_cache(d.path + "/cpu0").sharing_cpus == 6);
  CHECK(last_level_cache(d.path + "/none").bytes == 0);
  // per rank: N x LLC / the ranks sharing it (at most its CPUs), at least one LLC
  const double mib = 1024.0 * 1024;
  CHECK(llc_flush_bytes(2, 2, llc) == 32 * mib);  // 2 x 32 / 2: the two ranks touch 64 MiB together
  CHECK(llc_flush_bytes(2, 1, llc) == 64 * mib);  // alone: 2 x 32
  CHECK(llc_flush_bytes(2, 8, llc) == 32 * mib);  // 8 ranks, 2 sharing it: 2 x 32 / 2
  CHECK(llc_flush_bytes(2, 8, {32 * mib, 16}) == 32 * mib);  // 2 x 32 / 8 = 8, but at least one LLC
  std::string why;
  CHECK(llc_flush_bytes(2, 2, {}, &why) == 64 * mib);  // unknown: the fixed 64 MiB
  CHECK(why.find("unknown") != std::string::npos);
  // a plan's key takes either form, and names itself when wrong
  const std::string good = d.write("k.yaml", "name: k\nflush_between_repeats: 2x_llc\nshapes:\n  - [8, 4, 4, 5, 3]\n");
  const KernelPlan p = load_kernel_plan(good);
  CHECK(p.flush_llc_multiple == 2.0);
  CHECK(p.flush_bytes == 0.0);
  const std::string bad = d.write("b.yaml", "name: k\nflush_between_repeats: 3y_llc\nshapes:\n  - [8, 4, 4, 5, 3]\n");
  CHECK_THROWS_WITH_AS(load_kernel_plan(bad), doctest::Contains("flush_between_repeats"), InputError);
}
