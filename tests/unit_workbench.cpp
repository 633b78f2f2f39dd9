// The measurement workbench (measure/workbench.hpp) on a clock whose time is
// the number of calls made (1 us each), and the collective table
// (measure/collective_sweep): what nccl-tests' testColl entries hold.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "measure/collective_sweep.hpp"
#include "measure/workbench.hpp"

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
