// nccl-tests log parsing: real published logs (tests/fixtures/nccl-tests/,
// each with its source beside it), and made-up logs in the older layouts
// and broken ones (their numbers invented, laid out as all_reduce_perf
// prints them).
#include <doctest/doctest.h>

#include "formats/nccl_tests_log.hpp"
#include "formats/yaml_reader.hpp"

using namespace ks;

TEST_CASE("current layout: root and #wrong columns, multi-node Rank lines, NCCL_DEBUG noise") {
  const std::string log = R"(# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid  11111 on     nodeA device  0 [0x07] NVIDIA A100-PCIE-40GB
#  Rank  1 Group  0 Pid  11112 on     nodeA device  1 [0x47] NVIDIA A100-PCIE-40GB
#  Rank  2 Group  0 Pid  22221 on     nodeB device  0 [0x07] NVIDIA A100-PCIE-40GB
#  Rank  3 Group  0 Pid  22222 on     nodeB device  1 [0x47] NVIDIA A100-PCIE-40GB
nodeA:11111:11111 [0] NCCL INFO Bootstrap : Using ib0:10.0.0.1<0>
NCCL version 2.14.3+cuda11.7
nodeA:11111:11130 [0] NCCL INFO Channel 00/10 :    0   1   2   3
#
#                                                              out-of-place                       in-place          
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       
           8             2     float     sum      -1    40.00    0.00    0.00      0    39.50    0.00    0.00      0
     1048576        262144     float     sum      -1   400.00    2.62    3.93      0   398.00    2.63    3.95      0
   134217728      33554432     float     sum      -1  20000.0    6.71   10.07      0  19900.0    6.74   10.12      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 4.66
)";
  const auto p = parse_nccl_tests_log(log, "ft3.log");
  CHECK(p.ranks == 4);
  CHECK(p.nodes == 2);
  CHECK(p.nccl_version == "2.14.3+cuda11.7");
  REQUIRE(p.rows.size() == 3);
  CHECK(p.rows[1].bytes == 1048576);
  CHECK(p.rows[1].count == 262144);
  CHECK(p.rows[1].time_us[0] == 400.0);
  CHECK(p.rows[1].busbw_GBps[1] == 3.95);  // in-place column
  CHECK(p.rows[2].line == 17);  // the 17th line of the text above
}

TEST_CASE("older layout: no root column, an error column, no '#' before Rank lines, launcher prefixes") {
  const std::string log = R"( nThread 1 nGpus 1 minBytes 32 maxBytes 64 step: 2(factor) warmup iters: 5 iters: 20 validation: 1
 Using devices
   Rank  0 Pid 1000 on hostX device  0 [0x00] NVIDIA A100-SXM4-40GB
   Rank  1 Pid 1001 on hostX device  1 [0x00] NVIDIA A100-SXM4-40GB
                                                     out-of-place                       in-place
       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error
        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
[0]           32             8   float     sum    20.00    0.00    0.00  0e+00    19.00    0.00    0.00  0e+00
[0]           64            16   float     sum    21.00    0.00    0.00  5e-07    20.50    0.00    0.00  5e-07
)";
  // nccl-tests before 2.11 printed it without '#'; the parser takes both.
  const auto p = parse_nccl_tests_log(log, "old.log");
  CHECK(p.ranks == 2);
  CHECK(p.nodes == 1);
  REQUIRE(p.rows.size() == 2);
  CHECK(p.rows[1].time_us[1] == 20.5);
}

TEST_CASE("malformed logs: the file and line of the bad row, or no table at all") {
  const std::string bad = "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
                          "           8             2     float     sum      -1    40.00    0.00\n";
  CHECK_THROWS_WITH_AS(parse_nccl_tests_log(bad, "x.log"), doctest::Contains("x.log:2: expected 13 columns"), InputError);
  CHECK_THROWS_WITH_AS(parse_nccl_tests_log("hello\nworld\n", "y.log"), doctest::Contains("y.log: no nccl-tests table found"), InputError);
  const std::string nan_time = "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
                               "           8             2     float     sum      -1    abc    0.00    0.00      0    39.50    0.00    0.00      0\n";
  CHECK_THROWS_WITH_AS(parse_nccl_tests_log(nan_time, "z.log"), doctest::Contains("z.log:2: column 6"), InputError);
}

namespace {
const std::string kFixtures = std::string(KANSCALE_SOURCE_DIR) + "/tests/fixtures/nccl-tests/";
}

// Expected values below are read off the fixture files by eye.
TEST_CASE("real log: 16 H100s on 2 nodes (A3 Mega), older layout, in-place columns") {
  const auto p = read_nccl_tests_log(kFixtures + "h100_2node_16rank_allreduce.log");
  CHECK(p.ranks == 16);
  CHECK(p.nodes == 2);
  CHECK(p.hosts.front() == "ztan-mig-235z");
  CHECK(p.hosts.back() == "ztan-mig-gq73");
  CHECK(p.nccl_version.empty());  // not printed in this log
  REQUIRE(p.rows.size() == 31);   // 8 B .. 8 GiB by 2
  CHECK(p.rows.front().bytes == 8);
  CHECK(p.rows.front().time_us[0] == 135.8);
  CHECK(p.rows.front().time_us[1] == 123.5);
  CHECK(p.rows.back().bytes == 8589934592.0);
  CHECK(p.rows.back().count == 2147483648LL);
  CHECK(p.rows.back().time_us[0] == 47535);
  CHECK(p.rows.back().busbw_GBps[0] == 338.82);
  CHECK(p.rows.back().busbw_GBps[1] == 337.35);
  // busbw = algbw x 2(n-1)/n (nccl-tests' PERFORMANCE.md): 180.71 x 30/16 = 338.83
  CHECK(p.rows.back().algbw_GBps[0] * 2 * 15 / 16 == doctest::Approx(p.rows.back().busbw_GBps[0]).epsilon(1e-4));
}

TEST_CASE("real log: 8 GH200s on 2 nodes (CSCS Alps), nccl-tests 2.17 with start/concluded lines") {
  const auto p = read_nccl_tests_log(kFixtures + "gh200_2node_8rank_allreduce_nccltests2.17.1.log");
  CHECK(p.ranks == 8);
  CHECK(p.nodes == 2);
  REQUIRE(p.rows.size() == 25);  // 8 B .. 128 MiB
  CHECK(p.rows[17].bytes == 1048576);
  CHECK(p.rows[17].time_us[0] == 164.3);
  CHECK(p.rows[17].time_us[1] == 187.7);
  CHECK(p.rows.back().busbw_GBps[1] == 123.11);
  CHECK(p.rows.back().line == 41);  // the file's 41st line
}

TEST_CASE("real log: 2 GH200s on 2 nodes, nccl-tests 2.18 layout (version line, wider #wrong)") {
  const auto p = read_nccl_tests_log(kFixtures + "gh200_2node_2rank_allreduce_nccltests2.18.2.log");
  CHECK(p.ranks == 2);
  CHECK(p.nodes == 2);
  CHECK(p.nccl_version == "2.30.7");  // nccl-library=23007
  REQUIRE(p.rows.size() == 8);       // 1 MiB .. 128 MiB
  CHECK(p.rows.front().time_us[0] == 339.61);
  CHECK(p.rows.back().busbw_GBps[0] == 22.86);
  CHECK(p.rows.back().busbw_GBps[1] == 22.88);
}
