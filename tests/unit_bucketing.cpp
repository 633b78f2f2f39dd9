#include <doctest/doctest.h>

#include "model/buckets.hpp"
#include "model/kan_model.hpp"

using namespace ks;

namespace {
std::vector<double> bytes_of(const KanShape& s) {
  std::vector<double> b;
  for (const auto& p : kan_parameters(s)) b.push_back(p.bytes());
  return b;
}
std::vector<std::string> names(const KanShape& s, const Bucket& b) {
  const auto ps = kan_parameters(s);
  std::vector<std::string> n;
  for (int i : b.params) n.push_back(ps[i].name);
  return n;
}
// shared/reference/ddp-nccl-hardware.md: torch 1.13, widths [64, 256, 256, 1], G=5, k=3, bucket_cap_mb=1.
const KanShape kRef{{64, 256, 256, 1}, 5, 3};
DdpSettings cap_1mib() {
  DdpSettings d;
  d.bucket_cap_bytes = 1048576;
  return d;
}
}  // namespace

TEST_CASE("parameter count: out*in*(G+k+2) per layer") {
  // 64*256*10 + 256*256*10 + 256*1*10 = 821,760
  CHECK(kan_parameter_count(kRef) == 821760);
}

TEST_CASE("default flags: one first-iteration bucket, then torch's rebuilt ready-order buckets") {
  const auto plans = ddp_bucket_plans(bytes_of(kRef), kan_ready_order(kRef), cap_1mib());
  REQUIRE(plans.first_iteration.size() == 1);
  CHECK(plans.first_iteration[0].bytes == 3287040);  // observed: 3,287,040 B
  REQUIRE(plans.steady.size() == 3);
  CHECK(plans.steady[0].bytes == 2107392);  // observed
  CHECK(plans.steady[1].bytes == 1048576);
  CHECK(plans.steady[2].bytes == 131072);
  CHECK(names(kRef, plans.steady[0]) == std::vector<std::string>{"layers.2.spline_weight", "layers.2.spline_scaler",
                                                                 "layers.2.base_weight", "layers.1.spline_weight"});
  CHECK(names(kRef, plans.steady[1]) ==
        std::vector<std::string>{"layers.1.spline_scaler", "layers.1.base_weight", "layers.0.spline_weight"});
  CHECK(names(kRef, plans.steady[2]) == std::vector<std::string>{"layers.0.spline_scaler", "layers.0.base_weight"});
  CHECK(plans.rebuilt);
}

TEST_CASE("find_unused_parameters: reversed definition-order buckets, never rebuilt") {
  DdpSettings d = cap_1mib();
  d.find_unused_parameters = true;
  const auto plans = ddp_bucket_plans(bytes_of(kRef), kan_ready_order(kRef), d);
  REQUIRE(plans.steady.size() == 2);
  CHECK(plans.steady[0].bytes == 272384);  // observed: 272,384 then 3,014,656 B
  CHECK(plans.steady[1].bytes == 3014656);
  CHECK(plans.first_iteration.size() == 2);
  CHECK(plans.first_iteration[0].bytes == 272384);
  CHECK_FALSE(plans.rebuilt);
}

TEST_CASE("a parameter larger than the cap gets a bucket of its own that exceeds the cap") {
  // sizes 10, 100, 5, 5 (bytes), limits [8, 20]: 10 >= 8 closes bucket 0;
  // 100 >= 20 closes bucket 1 alone; 5+5 = 10 < 20 is the remainder.
  const auto b = assign_buckets_by_size({10, 100, 5, 5}, {0, 1, 2, 3}, {8, 20}, false);
  REQUIRE(b.size() == 3);
  CHECK(b[0].params == std::vector<int>{0});
  CHECK(b[1].params == std::vector<int>{1});
  CHECK(b[1].bytes == 100);
  CHECK(b[2].params == std::vector<int>{2, 3});
}

TEST_CASE("the default 25 MiB cap with a 1 MiB first bucket on the default workload shape") {
  // ready order: 8192 + 1024 + 1024 + 2,097,152 = 2,107,392 >= 1 MiB closes
  // bucket 0; the remaining 1,179,648 B stay under 25 MiB.
  const auto plans = ddp_bucket_plans(bytes_of(kRef), kan_ready_order(kRef), DdpSettings{});
  REQUIRE(plans.steady.size() == 2);
  CHECK(plans.steady[0].bytes == 2107392);
  CHECK(plans.steady[1].bytes == 1179648);
}
