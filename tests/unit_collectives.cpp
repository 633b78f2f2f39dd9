// Expected times are computed by hand from NCCL 2.14.3's tuning model
// (src/graph/tuning.cc) for FinisTerrae III: intra-node bus bandwidth 9 GB/s
// (SHM across sockets), NIC 12.5 GB/s, sm_80, Intel CPUs, 10 channels.
#include <doctest/doctest.h>

#include <limits>
#include <stdexcept>

#include "model/collectives.hpp"
#include "formats/config_files.hpp"

using namespace ks;

namespace {
struct Fixture {
  Cluster c = load_cluster(KANSCALE_SOURCE_DIR "/configs/clusters/finisterrae3.yaml");
  Calibration k = datasheet_calibration(c, Precision::fp32);
  NcclModel m{c, k};
};
const NcclCandidate& find(const std::vector<NcclCandidate>& v, Algo a, Proto p) {
  for (const auto& c : v)
    if (c.algo == a && c.proto == p) return c;
  throw std::logic_error("no candidate");
}
}  // namespace

TEST_CASE("one node, 2 ranks, 64 MiB: ring/Simple by hand") {
  Fixture f;
  const double bytes = 67108864;
  const auto c = f.m.allreduce_candidates(bytes, Layout{2, 1});
  // busBw = 9 GB/s; ring ratio nRanks/nsteps = 2/2 -> 9 GB/s
  // lat = 8.4 + (2 - 0) * 5.7 (PCI ring Simple) = 19.8 us
  const auto& rs = find(c, Algo::ring, Proto::simple);
  CHECK(rs.latency_us == doctest::Approx(19.8));
  CHECK(rs.bandwidth_GBps == doctest::Approx(9.0));
  CHECK(rs.time_us == doctest::Approx(19.8 + 67108864 / 9000.0));
  // tree/Simple: min(9*.92, 10*24) * .5 * corr[Simple][log2i(2^20)=20]=.8
  //   = 3.312 GB/s; lat = 2 * ((2-1)*28 + 0) = 56 us
  const auto& ts = find(c, Algo::tree, Proto::simple);
  CHECK(ts.bandwidth_GBps == doctest::Approx(8.28 * 0.5 * 0.8));
  CHECK(ts.time_us == doctest::Approx(56 + 67108864 / 3312.0));
  // ring/LL: min(87.7, 9/4) = 2.25 GB/s; lat = 3.6 + 2*1.0 = 5.6 us
  CHECK(find(c, Algo::ring, Proto::ll).time_us == doctest::Approx(5.6 + 67108864 / 2250.0));
  // LL128 is off without NVLink
  CHECK_FALSE(find(c, Algo::ring, Proto::ll128).enabled);
  const auto e = f.m.allreduce(bytes, Layout{2, 1});
  CHECK(e.label() == "ring/Simple");
  CHECK(e.time_s == doctest::Approx((19.8 + 67108864 / 9000.0) * 1e-6).scale(0));
}

TEST_CASE("one node, 2 ranks: ring/LL switches to ring/Simple at 42,600 B") {
  // 5.6 + x/2250 = 19.8 + x/9000  ->  x = 14.2 * 9000 / 3 = 42,600 B
  Fixture f;
  CHECK(f.m.allreduce(42000, Layout{2, 1}).label() == "ring/LL");
  CHECK(f.m.allreduce(43200, Layout{2, 1}).label() == "ring/Simple");
  CHECK(f.m.allreduce(8, Layout{2, 1}).label() == "ring/LL");
}

TEST_CASE("4 nodes x 2 ranks, 1 MiB: every pair by hand") {
  Fixture f;
  const double bytes = 1048576;
  const auto c = f.m.allreduce_candidates(bytes, Layout{8, 4});
  // ring/Simple: busBw = min(9, 12.5) = 9; ratio 8/14; lat = 8.4 + (14-8)*5.7
  //   + 8*9.6 = 119.4, times the plateau factor 1.9 (bytes >= 8/16*65536)
  const auto& rs = find(c, Algo::ring, Proto::simple);
  CHECK(rs.latency_us == doctest::Approx(119.4 * 1.9));
  CHECK(rs.time_us == doctest::Approx(226.86 + 1048576 / (9000.0 * 8 / 14)));
  // tree/Simple: min(8.28, 10*17.8) * .5 * corr[Simple][14]=.5 = 2.07;
  //   lat = 2 * ((2-1)*28 + log2i(4)=2 * 28) = 168
  CHECK(find(c, Algo::tree, Proto::simple).time_us == doctest::Approx(168 + 1048576 / 2070.0));
  // ring/LL: min(llMaxBw[intel][3+ nodes]=20.4, 9/4) * 8/14; intraLat 1.0*1.8;
  //   lat = 3.6 + 6*1.8 + 8*2.7 = 36
  CHECK(find(c, Algo::ring, Proto::ll).time_us == doctest::Approx(36 + 1048576 / (2250.0 * 8 / 14)));
  // tree/LL: min(8.28/3.8, 20.4) * .5 * corr[LL][14]=.5; lat = 4.4 + 2*(1.8 + 2*5) = 28
  CHECK(find(c, Algo::tree, Proto::ll).time_us == doctest::Approx(28 + 1048576 / (8.28 / 3.8 * 0.25 * 1000)));
  CHECK(f.m.allreduce(bytes, Layout{8, 4}).label() == "ring/Simple");
}

TEST_CASE("the chosen pair switches from ring to tree as nodes grow (64 KiB)") {
  Fixture f;
  // 2 nodes x 2: ring/LL = 18 + 65536/1500 = 61.7 us beats tree/LL = 18 + 65536/653.7 = 118.3
  const auto two = f.m.allreduce_candidates(65536, Layout{4, 2});
  CHECK(find(two, Algo::ring, Proto::ll).time_us == doctest::Approx(18 + 65536 / 1500.0));
  CHECK(f.m.allreduce(65536, Layout{4, 2}).label() == "ring/LL");
  // 64 nodes x 2: ring/LL lat = 3.6 + 126*1.8 + 128*2.7 = 576 us; tree/LL lat =
  // 4.4 + 2*(1.8 + 6*5) = 68 us: tree/LL wins
  const auto many = f.m.allreduce_candidates(65536, Layout{128, 64});
  CHECK(find(many, Algo::ring, Proto::ll).latency_us == doctest::Approx(576.0));
  CHECK(find(many, Algo::tree, Proto::ll).latency_us == doctest::Approx(68.0));
  CHECK(f.m.allreduce(65536, Layout{128, 64}).label() == "tree/LL");
}

TEST_CASE("a node-count factor scales the chosen pair's time at its node class, not NCCL's choice") {
  Fixture f;
  // node classes: 1 -> 0, 2 -> 1, 3 and 4 -> 2, 5..8 -> 3
  CHECK(node_class(1) == 0);
  CHECK(node_class(2) == 1);
  CHECK(node_class(3) == 2);
  CHECK(node_class(4) == 2);
  CHECK(node_class(5) == 3);
  const auto base2 = f.m.allreduce(65536, Layout{4, 2}), base4 = f.m.allreduce(65536, Layout{8, 4}), base1 = f.m.allreduce(65536, Layout{2, 1});
  Cluster c = f.c;
  c.collectives.node_factor = {1.0, 3.0, 0.5};  // 1 node x1, 2 nodes x3, 3-4 nodes x0.5
  const NcclModel m(c, f.k);
  // 2 nodes x 2 at 64 KiB: ring/LL (61.7 us by hand above), x3 = 185.2 us; the choice stays ring/LL
  // although tree/LL (118.3 us) would now be faster: NCCL picks by its own model
  const auto two = m.allreduce(65536, Layout{4, 2});
  CHECK(two.label() == "ring/LL");
  CHECK(two.time_s == doctest::Approx(3 * (18 + 65536 / 1500.0) * 1e-6));
  CHECK(two.time_s == doctest::Approx(3 * base2.time_s));
  CHECK(m.allreduce(65536, Layout{8, 4}).time_s == doctest::Approx(0.5 * base4.time_s));
  CHECK(m.allreduce(65536, Layout{8, 4}).label() == base4.label());
  CHECK(m.allreduce(65536, Layout{2, 1}).time_s == doctest::Approx(base1.time_s));
  // past the list's end: 1 (5..8 nodes)
  CHECK(m.allreduce(65536, Layout{16, 8}).time_s == doctest::Approx(f.m.allreduce(65536, Layout{16, 8}).time_s));
  // the broadcast at 2 nodes is scaled too
  CHECK(m.broadcast(65536, Layout{4, 2}).time_s == doctest::Approx(3 * f.m.broadcast(65536, Layout{4, 2}).time_s));
}

TEST_CASE("NVLink nodes enable LL128 on sm_80; the 235 GB/s cap applies") {
  const Cluster c = load_cluster(KANSCALE_SOURCE_DIR "/configs/clusters/dgx-a100.yaml");
  const NcclModel m(c, datasheet_calibration(c, Precision::fp32));
  CHECK(m.bus_bandwidth_GBps(Layout{8, 1}) == doctest::Approx(264.0));
  const auto cands = m.allreduce_candidates(1 << 26, Layout{8, 1});
  // ring/Simple: min(264, 235) * 8/14
  CHECK(find(cands, Algo::ring, Proto::simple).bandwidth_GBps == doctest::Approx(235.0 * 8 / 14));
  // ring/LL128: min(235*.92, 20*16) * 8/14
  CHECK(find(cands, Algo::ring, Proto::ll128).enabled);
  CHECK(find(cands, Algo::ring, Proto::ll128).bandwidth_GBps == doctest::Approx(235 * .92 * 8 / 14));
}

TEST_CASE("a single rank needs no communication; disallowed algorithms are never chosen") {
  Fixture f;
  CHECK(f.m.allreduce(1 << 20, Layout{1, 1}).time_s == 0.0);
  Cluster c = f.c;
  c.collectives.algorithms = {Algo::tree};
  const NcclModel tree_only(c, f.k);
  CHECK(tree_only.allreduce(67108864, Layout{2, 1}).algorithm == "tree");
}

TEST_CASE("mpi family: recursive doubling below 10 kB, ring above, alpha-beta by hand") {
  Fixture f;
  Cluster c = f.c;
  c.collectives.family = CollFamily::mpi;
  const MpiModel m(c, datasheet_calibration(c, Precision::fp32));
  // 4 ranks on one node: latency 1 us, bandwidth 9 GB/s.
  // 4096 B: log2(4) = 2 steps of (1us + 4096/9e9)
  const auto small = m.allreduce(4096, Layout{4, 1});
  CHECK(small.algorithm == "recursive_doubling");
  CHECK(small.time_s == doctest::Approx(2 * (1e-6 + 4096 / 9e9)).scale(0));
  // 1 MiB ring: 2*3 steps of 1 us + 2*3/4 * 1 MiB / 9 GB/s
  const auto big = m.allreduce(1048576, Layout{4, 1});
  CHECK(big.algorithm == "ring");
  CHECK(big.time_s == doctest::Approx(6e-6 + 1.5 * 1048576 / 9e9).scale(0));
  // 2 nodes x 2 ranks: the NIC (12.5 GB/s) is shared by 2 ranks -> 6.25 GB/s, 2 us
  CHECK(m.allreduce(1048576, Layout{4, 2}).time_s == doctest::Approx(6 * 2e-6 + 1.5 * 1048576 / 6.25e9).scale(0));
}

TEST_CASE("mpi family: the broadcast is a binomial tree, with its own measured terms where fitted") {
  Fixture f;
  Cluster c = f.c;
  c.collectives.family = CollFamily::mpi;
  Calibration k = datasheet_calibration(c, Precision::fp32);
  // Without a broadcast fit: the all-reduce regime's link terms. 8 ranks on
  // one node, 2304 B: ceil(log2 8) = 3 steps of (1 us + 2304 / 9 GB/s).
  CHECK(MpiModel(c, k).broadcast(2304, Layout{8, 1}).time_s == doctest::Approx(3 * (1e-6 + 2304 / 9e9)).scale(0));
  // Fitted (4 us, 2 GB/s): 3 x (4 us + 2304 / 2e9) = 15.456 us
  k.mpi_broadcast = MpiBroadcast{4e-6, 2e9};
  const auto b = MpiModel(c, k).broadcast(2304, Layout{8, 1});
  CHECK(b.algorithm == "binomial");
  CHECK(b.time_s == doctest::Approx(3 * (4e-6 + 2304 / 2e9)).scale(0));
  // a latency-only fit keeps the link's bandwidth: 2 ranks, 1 step
  k.mpi_broadcast = MpiBroadcast{4e-6, std::nullopt};
  CHECK(MpiModel(c, k).broadcast(9e6, Layout{2, 1}).time_s == doctest::Approx(4e-6 + 9e6 / 9e9).scale(0));
  CHECK(MpiModel(c, k).broadcast(9e6, Layout{1, 1}).time_s == 0.0);
}

TEST_CASE("the progress model's wait in bench progress's situation, by hand") {
  // one step: the collective runs on its own, the wait is what outlasts the compute
  CHECK(progress_wait_s(8.0, 1, 6.0, 0.0) == doctest::Approx(2.0));
  CHECK(progress_wait_s(8.0, 1, 10.0, 1.0) == 0.0);
  // 5 steps of 0.2 s, compute 1.5 s, no poll: step 1 0..0.2, the other four
  // in the wait 1.5..2.3
  CHECK(progress_wait_s(1.0, 5, 1.5, 0.0) == doctest::Approx(0.8));
  // polls at 0.5 and 1.0 (none at 1.5: the wait starts there): steps
  // 0..0.2, 0.5..0.7, 1.0..1.2, then 1.5..1.7 and 1.7..1.9 in the wait
  CHECK(progress_wait_s(1.0, 5, 1.5, 0.5) == doctest::Approx(0.4));
  // polls every 0.2 s, each at a step's end: all five done by 1.0
  CHECK(progress_wait_s(1.0, 5, 1.5, 0.2) == 0.0);
  // polls every 0.3 s: steps start at 0, 0.3, 0.6, 0.9, 1.2; the last ends at 1.4
  CHECK(progress_wait_s(1.0, 5, 1.5, 0.3) == 0.0);
  // polls every 0.3 s, compute 1.0: steps start 0, 0.3, 0.6, 0.9, then the
  // fifth in the wait at 1.1 (the fourth ends at 1.1): 1.1..1.3
  CHECK(progress_wait_s(1.0, 5, 1.0, 0.3) == doctest::Approx(0.3));
}

TEST_CASE("MPI progress steps: max(min_steps, bytes / chunk); the MPI model attaches them") {
  CHECK(mpi_progress_steps(MpiProgress{5, 524288}, 1048576) == 5);
  CHECK(mpi_progress_steps(MpiProgress{5, 524288}, 8388608) == 16);
  CHECK(mpi_progress_steps(MpiProgress{5, 524288}, 8388609) == 17);
  CHECK(mpi_progress_steps(MpiProgress{3, 0}, 1e12) == 3);
  const Cluster c = load_cluster(KANSCALE_SOURCE_DIR "/configs/clusters/local-cpu.yaml");
  Calibration cal;
  cal.mpi_regimes = {MpiRegime{std::numeric_limits<double>::infinity(), MpiAlgo::ring, 1e-6, 1e9, std::nullopt, std::nullopt}};
  CHECK(MpiModel(c, cal).allreduce(8388608, Layout{2, 1}).steps == 1);  // unset: progresses on its own
  cal.mpi_progress = MpiProgress{5, 524288};
  const MpiModel m(c, cal);
  CHECK(m.allreduce(8388608, Layout{2, 1}).steps == 16);
  CHECK(m.broadcast(1024, Layout{2, 1}).steps == 5);
  CHECK(m.allreduce(1024, Layout{1, 1}).steps == 1);  // one rank: no collective
}

TEST_CASE("the progress model with interference: the compute slows while a step runs (by hand)") {
  // all-reduce 1 s in 2 steps, work 1 s, interference 1 (half speed while a
  // step runs). No poll: step 1 runs 0..0.5 (0.25 of work), the rest of the
  // work 0.5..1.25, step 2 in the wait 1.25..1.75.
  ProgressRun r = progress_run(1.0, 2, 1.0, 0.0, 1.0);
  CHECK(r.compute_s == doctest::Approx(1.25));
  CHECK(r.wait_s == doctest::Approx(0.5));
  // polls every 0.25 of work: the first comes at 0.5, as step 1 ends, and
  // starts step 2 (0.5..1.0, another 0.25 of work); the other 0.5 of work
  // runs 1.0..1.5 at full speed, nothing left to wait for
  r = progress_run(1.0, 2, 1.0, 0.25, 1.0);
  CHECK(r.compute_s == doctest::Approx(1.5));
  CHECK(r.wait_s == 0.0);
  // without interference the same as progress_wait_s
  r = progress_run(1.0, 5, 1.5, 0.5, 0.0);
  CHECK(r.compute_s == doctest::Approx(1.5));
  CHECK(r.wait_s == doctest::Approx(progress_wait_s(1.0, 5, 1.5, 0.5)));
}
