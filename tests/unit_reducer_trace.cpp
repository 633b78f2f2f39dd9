// The reducer both trainer loops share (measure/reducer) and the one trace
// type and writer of the simulator and the trainer (formats/trace).
#include <doctest/doctest.h>

#include <vector>

#include "measure/reducer.hpp"
#include "formats/trace.hpp"

using namespace ks;

namespace {
// Four parameters of 3, 5, 2 and 4 elements. First plan: bucket 0 = {0, 1},
// bucket 1 = {2, 3}; steady plan (ready order reversed): bucket 0 = {3},
// bucket 1 = {2, 1, 0}.
DdpBucketPlans plans() {
  DdpBucketPlans p;
  p.first_iteration = {Bucket{{0, 1}, 32}, Bucket{{2, 3}, 24}};
  p.steady = {Bucket{{3}, 16}, Bucket{{2, 1, 0}, 40}};
  return p;
}
const std::vector<std::size_t> kSizes = {3, 5, 2, 4};
}  // namespace

TEST_CASE("reducer: slots are the parameters' offsets in bucket order") {
  Reducer r(plans(), kSizes);
  // first plan: bucket 0 holds 3 + 5 = 8 elements, bucket 1 2 + 4 = 6
  CHECK(r.elements(Reducer::kFirst, 0) == 8);
  CHECK(r.elements(Reducer::kFirst, 1) == 6);
  r.begin(Reducer::kFirst);
  CHECK(r.slot(1).bucket == 0);
  CHECK(r.slot(1).offset == 3);
  CHECK(r.slot(3).bucket == 1);
  CHECK(r.slot(3).offset == 2);
  // steady plan: bucket 1 = {2, 1, 0}: offsets 0, 2, 2 + 5 = 7
  r.begin(Reducer::kSteady);
  CHECK(r.elements(Reducer::kSteady, 1) == 10);
  CHECK(r.slot(2).offset == 0);
  CHECK(r.slot(1).offset == 2);
  CHECK(r.slot(0).offset == 7);
}

TEST_CASE("reducer: a bucket launches once complete and after every earlier one, each once") {
  Reducer r(plans(), kSizes);
  r.begin(Reducer::kFirst);
  std::vector<std::size_t> launched;
  auto launch = [&](std::size_t b) { launched.push_back(b); };
  // bucket 1 completes first but must wait for bucket 0
  CHECK(r.mark_ready(3, launch) == 0);
  CHECK(r.mark_ready(2, launch) == 0);
  CHECK(launched.empty());
  CHECK(r.mark_ready(1, launch) == 0);
  CHECK(launched.empty());
  CHECK(r.mark_ready(0, launch) == 2);  // bucket 0 complete: 0 then 1 go, in order
  CHECK(launched == std::vector<std::size_t>{0, 1});
  CHECK(r.all_launched());
  // a new iteration starts from nothing
  r.begin(Reducer::kSteady);
  launched.clear();
  CHECK_FALSE(r.all_launched());
  r.mark_ready(3, launch);
  CHECK(launched == std::vector<std::size_t>{0});
  r.mark_ready(2, launch);
  r.mark_ready(1, launch);
  CHECK(launched.size() == 1);
  r.mark_ready(0, launch);
  CHECK(launched == std::vector<std::size_t>{0, 1});
}

TEST_CASE("reducer: reduced gradients are views into the buckets or copies") {
  Reducer r(plans(), kSizes);
  r.begin(Reducer::kSteady);
  std::vector<float> b0(4), b1(10);
  for (std::size_t i = 0; i < b0.size(); ++i) b0[i] = 100.0f + static_cast<float>(i);
  for (std::size_t i = 0; i < b1.size(); ++i) b1[i] = 200.0f + static_cast<float>(i);
  std::vector<std::vector<float>> g = {std::vector<float>(3), std::vector<float>(5), std::vector<float>(2), std::vector<float>(4)};
  std::vector<float*> grads;
  for (auto& v : g) grads.push_back(v.data());
  const std::vector<float*> bufs = {b0.data(), b1.data()};
  auto copy = [](float* dst, const float* src, std::size_t n) { std::copy(src, src + n, dst); };
  const auto views = r.reduced_gradients(bufs, true, grads, copy);
  CHECK(views[3] == b0.data());
  CHECK(views[0] == b1.data() + 7);  // parameter 0 sits after 2 (2 elements) and 1 (5)
  CHECK(g[0][0] == 0.0f);           // views copy nothing
  const auto copies = r.reduced_gradients(bufs, false, grads, copy);
  CHECK(copies[1] == g[1].data());
  CHECK(g[1] == std::vector<float>{202, 203, 204, 205, 206});
  CHECK(g[0] == std::vector<float>{207, 208, 209});
  CHECK(g[3] == std::vector<float>{100, 101, 102, 103});
}

TEST_CASE("reducer: a parameter in no bucket or in two is refused") {
  DdpBucketPlans p = plans();
  p.steady = {Bucket{{3}, 16}, Bucket{{2, 1}, 28}};
  CHECK_THROWS_AS(Reducer(p, kSizes), std::logic_error);
  p.steady = {Bucket{{3, 0}, 28}, Bucket{{2, 1, 0}, 40}};
  CHECK_THROWS_AS(Reducer(p, kSizes), std::logic_error);
}

TEST_CASE("trace: a slice survives the trainer's gather and the Chrome trace file") {
  const TraceSlice c{1, 1, 7, "allreduce bucket 0 (mpi)", "comm", 0.25, 0.2505, 4096};
  const TraceSlice k{1, 0, 7, "forward layer 0", "forward", 0.125, 0.1875, 0};
  const TraceSlice back = trace_slice_from_json(to_json(c));
  CHECK(back.rank == 1);
  CHECK(back.iteration == 7);
  CHECK(back.name == c.name);
  CHECK(back.t1_s == c.t1_s);
  CHECK(back.bytes == 4096);
  ChromeTrace t;
  t.add_process(1, "rank 1");
  t.add(1, k);
  t.add(1, c);
  const nlohmann::json j = t.json(nlohmann::json{{"who", "test"}});
  CHECK(j["otherData"]["who"] == "test");
  CHECK(j["displayTimeUnit"] == "ms");
  // 4 metadata events (process name, sort index, two thread names), 2 slices
  CHECK(j["traceEvents"].size() == 6);
  const auto slices = read_trace_slices(j);
  REQUIRE(slices.size() == 2);
  CHECK(slices[0].category == "forward");
  CHECK(slices[0].t0_s == doctest::Approx(0.125).epsilon(1e-12));  // written in microseconds, read back in seconds
  CHECK(slices[0].t1_s == doctest::Approx(0.1875).epsilon(1e-12));
  CHECK(slices[1].bytes == 4096);  // bytes travel on the communication track only
  CHECK_FALSE(j["traceEvents"][4]["args"].contains("bytes"));
  CHECK(j["traceEvents"][5]["args"]["bytes"] == 4096);
  CHECK(j["traceEvents"][5]["ts"] == 250000.0);
  CHECK(j["traceEvents"][5]["dur"].get<double>() == doctest::Approx(500.0).epsilon(1e-9));
}
