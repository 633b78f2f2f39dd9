// The fit (model/calibration_fit) on typed measurements made from known
// parameters, and the calibration writer's round trip through the reader.
#include <doctest/doctest.h>

#include <cmath>
#include <initializer_list>

#include "model/calibration_fit.hpp"
#include "formats/calibration_file.hpp"
#include "formats/measurement_records.hpp"
#include "model/collectives.hpp"
#include "model/config.hpp"
#include "model/cost.hpp"
#include "formats/config_files.hpp"
#include "model/kan_model.hpp"
#include "validation/calibration_live.hpp"
#include "formats/yaml_reader.hpp"

using namespace ks;

namespace {

Cluster local_cpu() { return load_cluster(KANSCALE_SOURCE_DIR "/configs/clusters/local-cpu.yaml"); }
Cluster ft3() { return load_cluster(KANSCALE_SOURCE_DIR "/configs/clusters/finisterrae3.yaml"); }

Calibration round_trip(const CalibrationFile& f, const Cluster& c) {
  return parse_calibration(write_calibration(f, "# a test\n"), "test.yaml", c, Precision::fp32);
}

CollectivePoint point(double bytes, double time_us, double busbw = 0) {
  CollectivePoint p;
  p.size_bytes = bytes;
  CollectiveTiming t;
  t.time_us = time_us;
  t.busbw_GBps = busbw;
  t.wrong = 0;
  p.out_of_place = t;
  p.in_place = t;
  return p;
}

// An MPI all-reduce sweep on `ranks` ranks whose times follow the model
// exactly: per regime latency_steps x a + byte_steps / bw (mpi_allreduce_terms).
CollectiveSweepFile allreduce_sweep(int ranks, double a_small, double bw_small, double a_ring, double bw_ring) {
  CollectiveSweepFile s;
  s.path = "ar.json";
  s.has_metadata = s.has_points = true;
  s.op = "allreduce";
  s.collective = SweptCollective::allreduce;
  s.ranks = ranks;
  for (double b = 8; b <= 4.0 * 1048576 / 2; b *= 2) {
    const bool rd = b < 10000;
    const AlphaBetaTerms t = mpi_allreduce_terms(rd ? MpiAlgo::recursive_doubling : MpiAlgo::ring, ranks, b);
    s.points.push_back(point(b, (t.latency_steps * (rd ? a_small : a_ring) + t.byte_steps / (rd ? bw_small : bw_ring)) * 1e6));
  }
  return s;
}

// Layer shapes spread so that every feature varies independently: batch
// 16-256, in 4 or 32, out as given, G 3 or 10 (k = 3).
template <class F>
void for_each_layer_shape(std::initializer_list<double> outs, F&& f) {
  for (double batch : {16.0, 64.0, 256.0})
    for (double in : {4.0, 32.0})
      for (double out : outs)
        for (double g : {3.0, 10.0}) f(batch, in, out, g);
}

KernelRecord layer_row(const char* op, double batch, double in, double out, double g) {
  KernelRecord r;
  r.op = op;
  r.batch = static_cast<std::int64_t>(batch), r.in = static_cast<std::int64_t>(in), r.out = static_cast<std::int64_t>(out);
  r.grid_size = static_cast<int>(g), r.spline_order = 3;
  return r;
}

// fit_calibration over one kernels file holding `rows`
CalibrationFit fit_kernel_rows(std::vector<KernelRecord> rows) {
  KernelsFile f;
  f.path = "k.json";
  f.rows = std::move(rows);
  FitInputs inputs;
  inputs.kernels = {f};
  return fit_calibration(inputs, "t");
}

}  // namespace

TEST_CASE("fit: MPI all-reduce regimes recover the latency and bandwidth that made exact data") {
  // 4 ranks; below 10000 B recursive doubling at 3 us and 1 GB/s, up to
  // 4 MiB the ring at 8 us and 4 GB/s; nothing above 4 MiB (left at the
  // link's defaults).
  FitInputs in;
  in.collectives.push_back(allreduce_sweep(4, 3e-6, 1e9, 8e-6, 4e9));
  const CalibrationFit fit = fit_calibration(in, "t");
  REQUIRE(fit.file.mpi_regimes.size() == 3);
  const MpiRegime& rd = fit.file.mpi_regimes[0].regime;
  CHECK(rd.algorithm == MpiAlgo::recursive_doubling);
  CHECK(*rd.latency_s == doctest::Approx(3e-6).epsilon(1e-6).scale(0));
  CHECK(*rd.bandwidth_Bps == doctest::Approx(1e9).epsilon(1e-6));
  const MpiRegime& ring = fit.file.mpi_regimes[1].regime;
  CHECK(*ring.latency_s == doctest::Approx(8e-6).epsilon(1e-6).scale(0));
  CHECK(*ring.bandwidth_Bps == doctest::Approx(4e9).epsilon(1e-6));
  CHECK_FALSE(fit.file.mpi_regimes[2].regime.latency_s.has_value());
  CHECK(fit.report.find("too few points (0)") != std::string::npos);
  // through the file: the model predicts the sweep's own points
  const Cluster c = local_cpu();
  const Calibration k = round_trip(fit.file, c);
  CHECK(k.has_mpi_terms);
  const MpiModel m(c, k);
  Layout l;
  l.ranks = 4;
  l.nodes = 1;
  for (const auto& p : in.collectives[0].points)
    CHECK(m.allreduce(p.size_bytes, l).time_s == doctest::Approx(*p.out_of_place->time_us * 1e-6).epsilon(1e-4).scale(0));
  // one rank: nothing to fit
  in.collectives[0].ranks = 1;
  CHECK_THROWS_WITH_AS(fit_calibration(in, "t"), "ar.json: measured on one rank: no communication to fit", InputError);
}

TEST_CASE("fit: a broadcast sweep gives the binomial tree's latency and bandwidth (exact data, by hand)") {
  // 4 ranks: ceil(log2 4) = 2 steps, each 5 us + bytes / 2 GB/s; sizes 8 B .. 1 MiB.
  CollectiveSweepFile s;
  s.path = "b.json";
  s.has_metadata = s.has_points = true;
  s.op = "broadcast";
  s.collective = SweptCollective::broadcast;
  s.ranks = 4;
  for (double b = 8; b <= 1048576; b *= 2) s.points.push_back(point(b, 2 * (5e-6 + b / 2e9) * 1e6));
  FitInputs in;
  in.collectives.push_back(s);
  const CalibrationFit fit = fit_calibration(in, "t");
  REQUIRE(fit.file.mpi_broadcast.has_value());
  CHECK(fit.file.mpi_broadcast->latency_s == doctest::Approx(5e-6).epsilon(1e-6).scale(0));
  CHECK(*fit.file.mpi_broadcast->bandwidth_Bps == doctest::Approx(2e9).epsilon(1e-6));
  // through the file (written to 6 significant digits)
  const Calibration k = round_trip(fit.file, local_cpu());
  REQUIRE(k.mpi_broadcast.has_value());
  CHECK(k.mpi_broadcast->latency_s == doctest::Approx(5e-6).epsilon(1e-5).scale(0));
  CHECK(*k.mpi_broadcast->bandwidth_Bps == doctest::Approx(2e9).epsilon(1e-5));
  // a point with wrong results is refused
  in.collectives[0].points[3].in_place->wrong = 1;
  CHECK_THROWS_WITH_AS(fit_calibration(in, "t"), "b.json: point 3 has wrong results", InputError);
}

TEST_CASE("fit --nccl-tests: every fourth size held out of the bus bandwidth and checked against it") {
  // 16 ranks on 2 nodes, 9 sizes of 32 MiB .. 8 GiB (all >= 32 MiB): busbw
  // 100 GB/s at the training sizes (0, 1, 2, 4, 5, 6 and the largest, 8),
  // 80 and 125 at the held-out 4th and 8th. Fitted: the best training busbw,
  // 100 (125 is held out); the held-out errors |100/80 - 1| = 25% and
  // |100/125 - 1| = 20%: mean 22.5%, max 25%.
  NcclTestsLog log;
  log.file = "h.log";
  log.ranks = 16;
  log.nodes = 2;
  for (int i = 0; i < 9; ++i) {
    NcclTestsRow r;
    r.bytes = 33554432.0 * std::pow(2.0, i);
    const double bw = i == 3 ? 80 : i == 7 ? 125 : 100;
    r.busbw_GBps[0] = r.busbw_GBps[1] = bw;
    r.time_us[0] = r.time_us[1] = 1e6 * r.bytes / (bw * 1e9);
    log.rows.push_back(r);
  }
  FitInputs in;
  in.nccl_tests.push_back(log);
  const CalibrationFit f = fit_calibration(in, "h");
  REQUIRE(f.file.nccl_bus_bw_inter_Bps.has_value());
  CHECK(*f.file.nccl_bus_bw_inter_Bps == doctest::Approx(100e9));
  CHECK(f.file.nccl_held_out_note.find("2 size(s) >= 32 MiB") == 0);
  CHECK(f.file.nccl_held_out_note.find("mean |error| 22.5%, max 25%") != std::string::npos);
  CHECK(f.report.find("held out: 2 size(s)") != std::string::npos);
  CHECK(write_calibration(f.file, "").find("    # held out: 2 size(s)") != std::string::npos);
}

TEST_CASE("fit: kanscale's own NCCL all-reduce sweeps give the nccl family's bus bandwidth, not MPI terms") {
  // one host: intra-node; the best busbw at >= 32 MiB (in or out of place): 150 GB/s
  CollectiveSweepFile s;
  s.path = "n.json";
  s.has_metadata = s.has_points = true;
  s.op = "allreduce";
  s.collective = SweptCollective::allreduce;
  s.backend = "nccl";
  s.ranks = 2;
  s.hosts = {"n1", "n1"};
  const double sizes[] = {1048576.0, 33554432.0, 67108864.0}, busbw[] = {40, 120, 150};
  for (int i = 0; i < 3; ++i) {
    s.points.push_back(point(sizes[i], 1.0, busbw[i]));
    s.points.back().in_place->busbw_GBps = busbw[i] - 1;
  }
  FitInputs in;
  in.collectives.push_back(s);
  const Calibration k = round_trip(fit_calibration(in, "t").file, ft3());
  REQUIRE(k.nccl_bus_bw_intra_Bps.has_value());
  CHECK(*k.nccl_bus_bw_intra_Bps == doctest::Approx(150e9));
  CHECK_FALSE(k.nccl_bus_bw_inter_Bps.has_value());
  CHECK_FALSE(k.has_mpi_terms);
  // an NCCL broadcast sweep is refused
  in.collectives[0].op = "broadcast";
  in.collectives[0].collective = SweptCollective::broadcast;
  CHECK_THROWS_WITH_AS(fit_calibration(in, "t"),
                       "n.json: an NCCL broadcast sweep: only NCCL all-reduce sweeps are fitted (the NCCL model derives its "
                       "broadcast from the ring)",
                       InputError);
}

TEST_CASE("fit: the in-flight memory factor is the median over interference files; files without it give none") {
  auto file = [](double inflight) {
    InterferenceFile f;
    f.path = "i.json";
    f.ranks = 2;
    f.allreduce_bytes = 4e6;
    f.per_collective_second = 0.5;
    if (inflight >= 0) f.inflight_memory_bytes_max = inflight;
    return f;
  };
  FitInputs in;
  in.interference = {file(4.4e6), file(4.0e6), file(4.8e6)};  // 1.1, 1.0, 1.2 x: median 1.1
  CalibrationFit fit = fit_calibration(in, "t");
  REQUIRE(fit.file.collective_in_flight.has_value());
  CHECK(*fit.file.collective_in_flight == doctest::Approx(1.1));
  CHECK(round_trip(fit.file, local_cpu()).memory_collective_in_flight == doctest::Approx(1.1));
  in.interference = {file(-1)};
  CHECK_FALSE(fit_calibration(in, "t").file.collective_in_flight.has_value());
}

TEST_CASE("fit: the runtime's memory per other rank of the node, from runs at 1, 2 and 4 ranks per node (by hand)") {
  // 7 MiB at one rank per node and 7 MiB more per other rank: 7, 14, 28 MiB
  // at 1, 2, 4 ranks per node lie on runtime = 7 MiB + 7 MiB x (ranks - 1).
  auto kernels = [](int rpn, double mib) {
    KernelsFile f;
    f.path = "k" + std::to_string(rpn) + ".json";
    f.ranks = rpn;
    f.ranks_per_node = rpn;
    f.runtime_memory_bytes = mib * 1048576;
    f.runtime_memory_what = "resident set size before any shape";
    return f;
  };
  const double MiB = 1048576.0;
  FitInputs in;
  in.kernels = {kernels(2, 14)};
  in.runtime_memory = {kernels(1, 7), kernels(4, 28)};
  Calibration k = round_trip(fit_calibration(in, "t").file, local_cpu());
  CHECK(k.runtime_memory_bytes == doctest::Approx(7 * MiB).epsilon(1e-5));
  CHECK(k.runtime_memory_per_local_peer_bytes == doctest::Approx(7 * MiB).epsilon(1e-5));
  // without the other counts: the measured runtime as it is, no per-peer term
  in.runtime_memory.clear();
  const CalibrationFit alone = fit_calibration(in, "t");
  CHECK_FALSE(alone.file.runtime_per_local_peer_bytes.has_value());
  CHECK(round_trip(alone.file, local_cpu()).runtime_memory_bytes == doctest::Approx(14 * MiB).epsilon(1e-5));
  // points whose least-squares line would start below zero: 1, 10, 40 MiB at
  // 1, 2, 4 ranks per node (x = 0, 1, 3) give slope 186/14 and intercept
  // (51 - 4 x 186/14)/3 < 0; the line through the origin instead: slope
  // sum(x y)/sum(x^2) = 130/10 = 13 MiB, runtime 0
  in.kernels = {kernels(2, 10)};
  in.runtime_memory = {kernels(1, 1), kernels(4, 40)};
  k = round_trip(fit_calibration(in, "t").file, local_cpu());
  CHECK(k.runtime_memory_bytes == 0);
  CHECK(k.runtime_memory_per_local_peer_bytes == doctest::Approx(13 * MiB).epsilon(1e-5));
}

TEST_CASE("fit: compute terms from layer timings made by a known cost, and their round trip") {
  // kan_forward rows timed exactly as fixed 4 us + flops / 20 GFLOP/s +
  // bytes / 5 GB/s + 2 ns per basis evaluation (batch x in) + 0.5 ns per
  // spline weight (in x out x (G + k)); every feature varies independently
  // over the shapes, so the least-squares fit must give them back.
  std::vector<KernelRecord> rows;
  int shape = 0;
  for_each_layer_shape({8.0, 64.0}, [&](double batch, double in, double out, double g) {
    KernelRecord r = layer_row("kan_forward", batch, in, out, g);
    r.flops = 2 * batch * in * out * (g + 4) + 37 * shape;  // the FLOPs and bytes
    r.bytes = 4 * (batch * (in + out) + in * out * (g + 3)) + 101 * (shape % 5);  // not collinear with the rest
    r.time_median_s = 4e-6 + r.flops / 20e9 + r.bytes / 5e9 + 2e-9 * batch * in + 0.5e-9 * in * out * (g + 3);
    r.time_cv = 0.01 * (1 + shape % 3);  // median 0.02
    rows.push_back(r);
    ++shape;
  });
  const CalibrationFit fit = fit_kernel_rows(rows);
  REQUIRE(fit.file.ops.size() == 1);
  const OpCost& c = fit.file.ops[0].cost;
  CHECK(c.fixed_s == doctest::Approx(4e-6).epsilon(1e-4).scale(0));
  CHECK(c.flop_rate == doctest::Approx(20e9).epsilon(1e-4));
  CHECK(c.byte_rate == doctest::Approx(5e9).epsilon(1e-4));
  CHECK(c.element_s == doctest::Approx(2e-9).epsilon(1e-4).scale(0));
  CHECK(c.weight_s == doctest::Approx(0.5e-9).epsilon(1e-4).scale(0));
  // jitter: the lognormal sigma with the median CV, sqrt(log(1 + 0.02^2))
  CHECK(fit.file.jitter_sigma == doctest::Approx(std::sqrt(std::log(1 + 0.02 * 0.02))));
  const Calibration k = round_trip(fit.file, local_cpu());
  REQUIRE(k.ops.count("kan_forward") == 1);
  const OpCost& back = k.ops.at("kan_forward");
  CHECK_FALSE(back.roofline);  // combine: sum
  CHECK(back.fixed_s == doctest::Approx(c.fixed_s).epsilon(1e-5).scale(0));
  CHECK(back.flop_rate == doctest::Approx(c.flop_rate).epsilon(1e-5));
  CHECK(back.byte_rate == doctest::Approx(c.byte_rate).epsilon(1e-5));
  CHECK(back.element_s == doctest::Approx(c.element_s).epsilon(1e-5).scale(0));
  CHECK(back.weight_s == doctest::Approx(c.weight_s).epsilon(1e-5).scale(0));
  CHECK(k.jitter_sigma == doctest::Approx(fit.file.jitter_sigma).epsilon(1e-5).scale(0));
  CHECK(k.source == "fitted");
  CHECK(k.name == "t");
}

TEST_CASE("the cache probe's bandwidth at a size, and how much slower than its fastest that is (by hand)") {
  const std::vector<std::pair<double, double>> p = {{1e6, 50e9}, {4e6, 25e9}};
  // log-linear in size: 2e6 is half way from 1e6 to 4e6 in log, so 50 - 0.5 x 25 = 37.5 GB/s
  CHECK(probe_bandwidth(p, 2e6) == doctest::Approx(37.5e9));
  CHECK(cache_probe_scale(p, 2e6) == doctest::Approx(50.0 / 37.5));
  // beyond the ends: the end values (in the fastest level: no slowdown)
  CHECK(probe_bandwidth(p, 1e5) == doctest::Approx(50e9));
  CHECK(cache_probe_scale(p, 1e5) == doctest::Approx(1.0));
  CHECK(cache_probe_scale(p, 1e9) == doctest::Approx(2.0));
  // no probe (or one point): no scaling
  CHECK(cache_probe_scale({}, 2e6) == 1.0);
  CHECK(cache_probe_scale({{1e6, 50e9}}, 2e6) == 1.0);
}

TEST_CASE("fit: a warm layer's bytes at the bandwidth of their size on the kernels file's cache probe") {
  // The probe reads 40 GB/s up to 4 KiB and 20 GB/s from 64 KiB (log-linear
  // between), so a layer's bytes cost x1 to x2 as their size grows. Rows timed
  // as fixed 4 us + flops / 20 GFLOP/s + bytes x scale(bytes) / 5 GB/s + 2 ns
  // per basis evaluation + 0.5 ns per spline weight must give those terms
  // back, flagged, and the simulator's op time must be that formula again.
  const std::vector<std::pair<double, double>> probe = {{4096, 40}, {65536, 20}};  // [bytes, GB/s] as a kernels file has it
  auto scale = [&](double bytes) {
    if (bytes <= 4096) return 1.0;
    if (bytes >= 65536) return 2.0;
    return 40.0 / (40.0 - 20.0 * std::log(bytes / 4096) / std::log(16.0));
  };
  auto time = [&](double flops, double bytes, double batch, double in, double out, double g) {
    return 4e-6 + flops / 20e9 + bytes * scale(bytes) / 5e9 + 2e-9 * batch * in + 0.5e-9 * in * out * (g + 3);
  };
  std::vector<KernelRecord> rows;
  int shape = 0;
  for_each_layer_shape({8.0, 64.0}, [&](double batch, double in, double out, double g) {
    KernelRecord r = layer_row("kan_forward", batch, in, out, g);
    r.flops = 2 * batch * in * out * (g + 4) + 37 * shape;
    r.bytes = 4 * (batch * (in + out) + in * out * (g + 3)) + 101 * (shape % 5);  // 1.5 KB to 200 KB: across the probe's knee
    r.time_median_s = time(r.flops, r.bytes, batch, in, out, g);
    r.time_cv = 0.02;
    rows.push_back(r);
    ++shape;
  });
  KernelsFile f;
  f.path = "k.json";
  f.rows = rows;
  f.cache_probe = probe;
  FitInputs inputs;
  inputs.kernels = {f};
  const CalibrationFit fit = fit_calibration(inputs, "t");
  REQUIRE(fit.file.ops.size() == 1);
  const OpCost& c = fit.file.ops[0].cost;
  CHECK(c.bytes_at_working_set);
  CHECK(c.byte_rate == doctest::Approx(5e9).epsilon(1e-4));
  CHECK(c.flop_rate == doctest::Approx(20e9).epsilon(1e-4));
  CHECK(c.element_s == doctest::Approx(2e-9).epsilon(1e-4).scale(0));
  CHECK(fit.report.find("the cache probe's fastest bandwidth") != std::string::npos);
  // through the file: the flag and the probe (in B/s) come back, and a layer
  // of 30 KB (scale 40 / (40 - 20 log(30000/4096) / log 16) = 1.5603) costs the formula
  const Calibration k = round_trip(fit.file, local_cpu());
  REQUIRE(k.ops.count("kan_forward") == 1);
  CHECK(k.ops.at("kan_forward").bytes_at_working_set);
  REQUIRE(k.cache_probe.size() == 2);
  CHECK(k.cache_probe[1].second == doctest::Approx(20e9));
  Op o;
  o.cost_class = "kan_forward";
  o.flops = 3e6, o.bytes = 30000, o.elements = 128 * 16, o.weights = 16 * 32 * 8;
  CHECK(scale(30000) == doctest::Approx(1.5603).epsilon(1e-4).scale(0));
  CHECK(op_time_s(o, k, 0.0) == doctest::Approx(time(3e6, 30000, 128, 16, 32, 5)).epsilon(1e-4));
  // the same rows without a probe: no flag, and the bytes at one rate (the fit is then inexact)
  const CalibrationFit plain = fit_kernel_rows(rows);
  CHECK_FALSE(plain.file.ops[0].cost.bytes_at_working_set);
}

TEST_CASE("fit: a backward pays per basis derivative only with the input gradient") {
  // kan_backward rows in both variants, timed as fixed 3 us + flops / 25
  // GFLOP/s + bytes / 8 GB/s + 1 ns per spline weight, and 12 ns per (sample,
  // input) only 'with input gradient' (the bases' derivatives). The fit gives
  // the 12 ns back because the rows without carry no elements; a fit that
  // gave both variants the elements would need a different per-element cost
  // for each and could not reproduce the times.
  std::vector<KernelRecord> rows;
  int shape = 0;
  for_each_layer_shape({1.0, 64.0}, [&](double batch, double in, double out, double g) {
    for (bool dx : {true, false}) {
      KernelRecord r = layer_row("kan_backward", batch, in, out, g);
      r.detail = dx ? "with input gradient" : "without input gradient";
      r.flops = (dx ? 4 : 2) * batch * in * out * (g + 4) + 37 * shape;
      r.bytes = 4 * (batch * (in + out) + 3 * in * out * (g + 3)) + (dx ? 4 * batch * in * 7 : 0) + 101 * (shape % 5);
      r.time_median_s = 3e-6 + r.flops / 25e9 + r.bytes / 8e9 + 1e-9 * in * out * (g + 3) + (dx ? 12e-9 * batch * in : 0.0);
      r.time_cv = 0.01;
      rows.push_back(r);
      ++shape;
    }
  });
  const CalibrationFit fit = fit_kernel_rows(rows);
  REQUIRE(fit.file.ops.size() == 1);
  const OpCost& c = fit.file.ops[0].cost;
  CHECK(c.element_s == doctest::Approx(12e-9).epsilon(1e-4).scale(0));
  CHECK(c.fixed_s == doctest::Approx(3e-6).epsilon(1e-4).scale(0));
  CHECK(c.flop_rate == doctest::Approx(25e9).epsilon(1e-4));
  CHECK(fit.file.ops[0].fit.rms_rel_residual < 1e-6);
  // and the model's ops agree: the first layer's backward has no elements,
  // a later one batch x in
  const auto ops = kanscale_iteration(KanShape{{4, 8, 1}, 5, 3}, 10, false);
  int backward = 0;
  for (const auto& o : ops)
    if (o.cost_class == "kan_backward") {
      CHECK(o.elements == (o.layer == 0 ? 0.0 : 10.0 * 8));
      ++backward;
    }
  CHECK(backward == 2);
}

TEST_CASE("a calibration knows its machine: the first kernels file's fingerprint goes through the file and back") {
  KernelsFile f;
  f.path = "k.json";
  f.machine.cpu_model = "Intel(R) Xeon(R) \"Gold\" 6338";  // a quote, as a model name may hold
  f.machine.cores = 64;
  f.machine.isa = "avx2 fma avx512f";
  f.machine.memory_bytes = 256.0 * 1073741824;
  f.machine.gpu = "none";
  f.machine.collective_library = "Open MPI v4.1.4, package: Debian OpenMPI";
  f.runtime_memory_bytes = 1e8;  // something to fit
  KernelsFile second = f;
  second.machine.cpu_model = "AMD EPYC";
  FitInputs in;
  in.kernels = {f, second};
  const CalibrationFit fit = fit_calibration(in, "t");
  CHECK(fit.file.machine.cpu_model == f.machine.cpu_model);
  const Calibration k = round_trip(fit.file, local_cpu());
  CHECK(k.machine.cpu_model == f.machine.cpu_model);
  CHECK(k.machine.cores == 64);
  CHECK(k.machine.isa == "avx2 fma avx512f");
  CHECK(k.machine.memory_bytes == doctest::Approx(256.0 * 1073741824).epsilon(1e-5));
  CHECK(k.machine.collective_library == f.machine.collective_library);
  CHECK(describe(k.machine) == "Intel(R) Xeon(R) \"Gold\" 6338, 64 cores, avx2 fma avx512f, 256.00 GiB");
  // the same machine: no warning; another CPU or core count: one line naming both
  CHECK(machine_mismatch(k.machine, f.machine).empty());
  Machine other = f.machine;
  other.cores = 2;
  other.isa = "avx2 fma";
  const std::string why = machine_mismatch(k.machine, other);
  CHECK(why.find("cores 64 there, 2 here") != std::string::npos);
  CHECK(why.find("vector extensions avx2 fma avx512f there, avx2 fma here") != std::string::npos);
  // a GPU not known here is not compared; a known other one is
  other = f.machine;
  other.gpu = "";
  CHECK(machine_mismatch(k.machine, other).empty());
  other.gpu = "NVIDIA H200";
  CHECK(machine_mismatch(k.machine, other).find("GPU none there, NVIDIA H200 here") != std::string::npos);
  // a calibration without a recorded machine warns about nothing
  CHECK(machine_mismatch(Machine{}, other).empty());
}

TEST_CASE("the trainer summary record: written and read back field for field; a bad field names its key") {
  TrainSummary s;
  s.iteration_s = {0.25, 0.5};
  s.compute_s = {0.125, 0.2};
  s.communication_s = {0.0625, 0.07};
  s.exposed_communication_s = {0.03125, 0.04};
  s.samples_per_s = 4096;
  s.peak_rss_bytes = 1e8;
  s.final_loss = 0.5;
  s.steps = 30;
  s.interrupted = true;
  s.bucket_communication_s = {0.01, 0.02};
  s.op_s = {{"load batch", 1e-6}, {"forward layer 0", 0.0625}};
  TrainSummary back = train_summary_from_json(nlohmann::json::parse(to_json(s).dump()), "t.json");
  CHECK(back.iteration_s.median == 0.25);
  CHECK(back.iteration_s.p95 == 0.5);
  CHECK(back.exposed_communication_s.median == 0.03125);
  CHECK(back.samples_per_s == 4096);
  CHECK_FALSE(back.peak_device_bytes.has_value());  // written as null
  CHECK(back.steps == 30);
  CHECK(back.interrupted);
  CHECK(back.bucket_communication_s == std::vector<double>{0.01, 0.02});
  CHECK(back.op_s == s.op_s);  // in order
  s.peak_device_bytes = 2e9;
  back = train_summary_from_json(to_json(s), "t.json");
  CHECK(*back.peak_device_bytes == 2e9);
  nlohmann::json bad = to_json(s);
  bad["compute_time_s"]["median"] = "fast";
  CHECK_THROWS_WITH_AS(train_summary_from_json(bad, "t.json"), "t.json: key 'summary.compute_time_s.median': expected a number, got \"fast\"",
                       InputError);
  bad = to_json(s);
  bad.erase("samples_per_s");
  CHECK_THROWS_WITH_AS(train_summary_from_json(bad, "t.json"), "t.json: key 'summary.samples_per_s': missing", InputError);
  bad = to_json(s);
  bad["ops"][1]["median_s"] = -1.0;
  CHECK_THROWS_WITH_AS(train_summary_from_json(bad, "t.json"), "t.json: key 'summary.ops[1].median_s': a measured time of -1 s; expected a time of 0 or from a picosecond to a year", InputError);
  bad = to_json(s);
  bad.erase("ops");  // files from before ops were recorded still read
  CHECK(train_summary_from_json(bad, "t.json").op_s.empty());
}

TEST_CASE("fit: the MPI progress model is recovered from bench progress points it generated, and round-trips") {
  // points as bench progress takes them (compute 1.5 x the alone time,
  // polls never / every 0.5, 0.2, 0.05 of it), their waits from the model
  // with 6 steps at least and 64 KiB per step: 6, 6, 16 and 64 steps
  const MpiProgress truth{6, 65536, 1.5};
  ProgressFile f;
  f.path = "p.json";
  f.ranks = 2;
  for (const double bytes : {65536.0, 262144.0, 1048576.0, 4194304.0}) {
    const double alone = 20e-6 + bytes / 1e9;
    for (const double poll : {0.0, 0.5, 0.2, 0.05}) {
      ProgressPoint p;
      p.bytes = bytes;
      p.alone_s = alone;
      p.poll_interval_s = poll * alone;
      p.compute_alone_s = 1.5 * alone;
      const ProgressRun r = progress_run(alone, mpi_progress_steps(truth, bytes), p.compute_alone_s, p.poll_interval_s, 1.5);
      p.compute_s = r.compute_s;
      p.wait_s = r.wait_s;
      f.points.push_back(p);
    }
  }
  const ProgressFit pf = fit_mpi_progress(f.points);
  CHECK(pf.points == 16);
  CHECK(pf.rms == doctest::Approx(0.0).scale(1e-9));
  CHECK(pf.rms_none > 0.3);  // one step leaves every wait at 0
  REQUIRE(pf.progress.interference.has_value());
  CHECK(*pf.progress.interference == doctest::Approx(1.5));  // on the grid
  CHECK(pf.rms_compute == doctest::Approx(0.0).scale(1e-9));
  // the fitted model predicts every point's wait and compute (any model with the same steps would)
  for (const ProgressPoint& p : f.points) {
    const ProgressRun r = progress_run(p.alone_s, mpi_progress_steps(pf.progress, p.bytes), p.compute_alone_s, p.poll_interval_s, 1.5);
    CHECK(r.wait_s == doctest::Approx(p.wait_s).epsilon(1e-9).scale(1e-6));
    CHECK(r.compute_s == doctest::Approx(p.compute_s).epsilon(1e-9));
  }
  FitInputs in;
  in.progress = {f};
  const CalibrationFit fit = fit_calibration(in, "t");
  REQUIRE(fit.file.mpi_progress.has_value());
  const Calibration k = round_trip(fit.file, local_cpu());
  REQUIRE(k.mpi_progress.has_value());
  CHECK(k.mpi_progress->min_steps == pf.progress.min_steps);
  CHECK(k.mpi_progress->chunk_bytes == doctest::Approx(pf.progress.chunk_bytes).epsilon(1e-6));
  REQUIRE(k.mpi_progress->interference.has_value());
  CHECK(*k.mpi_progress->interference == doctest::Approx(1.5));
  // points that did not time the work alone leave the interference out
  for (auto& p : in.progress[0].points) p.compute_alone_s = 0;
  CHECK_FALSE(fit_mpi_progress(in.progress[0].points).progress.interference.has_value());
  CHECK(fit.report.find("MPI progress") != std::string::npos);
  // one rank cannot measure progress
  in.progress[0].ranks = 1;
  CHECK_THROWS_AS(fit_calibration(in, "t"), InputError);
}

TEST_CASE("run-to-run drift: the rounds' random effect from live runs with a known spread") {
  // three rounds whose whole machine runs at exp(+a), 1 and exp(-a) on every
  // run: the rounds' effects are +a, 0, -a, their standard deviation (n - 1)
  // sqrt((a^2 + 0 + a^2) / 2) = a; each run's own speed does not enter
  const double a = 0.05;
  std::vector<std::vector<double>> runs;
  for (double base : {1e-3, 4e-3, 2.5e-2})
    runs.push_back({base * std::exp(a), base, base * std::exp(-a)});
  CHECK(round_drift_sigma(runs) == doctest::Approx(a).epsilon(1e-12));
  // noise that is not shared averages out of the effects: two runs moving in
  // opposite directions (logs 0, L, 0 and L, 0, L with L = ln 1.1: deviations
  // -L/3, 2L/3, -L/3 and L/3, -2L/3, L/3) sum to 0 in every round: no drift
  CHECK(round_drift_sigma({{1.0, 1.1, 1.0}, {1.1, 1.0, 1.1}}) < 1e-12);
  // one round: not measured
  CHECK(round_drift_sigma({{1e-3}, {2e-3}}) == 0);
}

TEST_CASE("a rank's persistent speed: the ranks' spread about their run's, pooled with R - 1 per run (by hand)") {
  // run 1: two ranks at 1 ms and exp(0.2) ms: logs 0 and 0.2 about their
  // mean 0.1, squares 0.01 + 0.01, 1 degree of freedom; run 2: three ranks
  // alike, squares 0, 2 degrees of freedom. Pooled: sqrt(0.02 / 3). The
  // run's own speed does not enter (run 2 is 50 x slower than run 1).
  CHECK(rank_spread_sigma({{1e-3, 1e-3 * std::exp(0.2)}}) == doctest::Approx(std::sqrt(0.02)).epsilon(1e-12));
  CHECK(rank_spread_sigma({{1e-3, 1e-3 * std::exp(0.2)}, {0.05, 0.05, 0.05}}) == doctest::Approx(std::sqrt(0.02 / 3)).epsilon(1e-12));
  // one rank, or a time that is not positive, counts nothing
  CHECK(rank_spread_sigma({{1e-3, 1e-3 * std::exp(0.2)}, {2e-3}, {1e-3, 0.0}}) == doctest::Approx(std::sqrt(0.02)).epsilon(1e-12));
  CHECK(rank_spread_sigma({{2e-3}}) == 0);
  CHECK(rank_spread_sigma({}) == 0);
}

TEST_CASE("a rank's persistent speed: the point's ranks at Blom's expected normal order statistics") {
  // Phi^-1((2 - 0.375) / 2.25) = Phi^-1(0.72222) = 0.5894558 (Python's
  // statistics.NormalDist().inv_cdf, an independent implementation), and
  // for N = 4 the largest is Phi^-1(3.625 / 4.25) = 1.0491314
  const auto two = rank_spread_factors(0.2, 2);
  REQUIRE(two.size() == 2);
  CHECK(two[0] == doctest::Approx(std::exp(-0.2 * 0.5894558)).epsilon(1e-6));
  CHECK(two[1] == doctest::Approx(std::exp(0.2 * 0.5894558)).epsilon(1e-6));
  const auto four = rank_spread_factors(0.1, 4);
  REQUIRE(four.size() == 4);
  CHECK(four[3] == doctest::Approx(std::exp(0.1 * 1.0491314)).epsilon(1e-6));
  // symmetric in the log: the ranks' geometric mean is 1, so their median is too
  CHECK(four[0] * four[1] * four[2] * four[3] == doctest::Approx(1.0).epsilon(1e-12));
  CHECK(four[0] < four[1]);
  // nothing to spread
  CHECK(rank_spread_factors(0.2, 1).empty());
  CHECK(rank_spread_factors(0.0, 8).empty());
}

TEST_CASE("the live terms' out-of-sample error: one shape off the line, by hand") {
  // Five 1-rank shapes with nothing but compute (rest 0): four measure
  // exactly 2 x their predicted compute, the fifth 3 x. The prediction with
  // a term is the linear model the fit assumes, compute x factor + host.
  // Leaving the fifth out, the four fit factor 2 and host 0 exactly (and the
  // fit differs from none), so the fifth is predicted at 2 c against 3 c
  // measured: its error is log(3/2). In sample every shape's error is smaller
  // in RMS than out of sample.
  std::vector<LiveRun> runs;
  const double c[] = {1e-3, 2e-3, 4e-3, 8e-3, 3e-3};
  for (int i = 0; i < 5; ++i) runs.push_back({"s" + std::to_string(i), 1, c[i], 0.0, (i == 4 ? 3.0 : 2.0) * c[i]});
  auto predict = [&](std::size_t i, const std::vector<CalibrationFile::FittedLive>& terms) {
    for (const auto& t : terms)
      if (t.term.ranks == runs[i].ranks) return runs[i].rest_s + t.term.compute_factor * runs[i].compute_s + t.term.host_overhead_s;
    return runs[i].rest_s + runs[i].compute_s;
  };
  const LiveModelErrors e = live_model_errors(runs, fit_live_term_set(runs, nullptr), predict);
  CHECK(e.shapes == 5);
  CHECK(e.loo_runs == 5);
  CHECK(e.loo_rms_by_shape.at("s4") == doctest::Approx(std::log(1.5)).epsilon(1e-9));
  CHECK(e.loo_sigma > e.in_sample_sigma);
  // all five on the line: every fit is exact, in and out of sample
  runs[4].measured_s = 2.0 * c[4];
  const LiveModelErrors exact = live_model_errors(runs, fit_live_term_set(runs, nullptr), predict);
  CHECK(exact.in_sample_sigma < 1e-9);
  CHECK(exact.loo_sigma < 1e-9);
}

TEST_CASE("the microbenchmarks' drift: two kernels files whose second round ran exp(a) slower throughout") {
  // per timing the deviations from its two-round mean are -a/2 and +a/2; the
  // rounds' effects are the same, and their standard deviation over 2
  // rounds (n - 1) is sqrt((a/2)^2 + (a/2)^2) = a / sqrt(2)
  const double a = 0.1;
  std::vector<KernelRecord> rows;
  for_each_layer_shape({8.0, 64.0}, [&](double batch, double in, double out, double g) {
    KernelRecord r = layer_row("kan_forward", batch, in, out, g);
    r.flops = 2 * batch * in * out * (g + 3);
    r.bytes = 4 * (batch * in + in * out * (g + 3) + batch * out);
    r.time_median_s = 1e-6 + r.flops / 5e10 + r.bytes / 1e10;
    rows.push_back(r);
  });
  KernelsFile f1, f2;
  f1.path = "k0.json";
  f1.rows = rows;
  f2.path = "k1.json";
  f2.rows = rows;
  for (auto& r : f2.rows) r.time_median_s *= std::exp(a);
  FitInputs in;
  in.kernels = {f1, f2};
  const CalibrationFit fit = fit_calibration(in, "t");
  REQUIRE(fit.file.kernel_drift_sigma.has_value());
  CHECK(*fit.file.kernel_drift_sigma == doctest::Approx(a / std::sqrt(2.0)).epsilon(1e-9));
  CHECK(fit.report.find("microbenchmark drift") != std::string::npos);
  // one file: nothing to compare
  in.kernels = {f1};
  CHECK_FALSE(fit_calibration(in, "t").file.kernel_drift_sigma.has_value());
}

TEST_CASE("the live terms with a cost per bucket: exact runs give back the terms that made them, and the Wald test sees each") {
  // 2-rank PyTorch-like runs made from compute_factor 1.5, host 0.2 ms and
  // 0.6 ms per bucket: measured = rest + 1.5 c + 0.2 ms + 0.6 ms x buckets,
  // over 6 runs with 1, 2 or 4 buckets (two bucket counts or more: the fit
  // adds the per-bucket column)
  std::vector<LiveRun> runs;
  const double c[] = {1e-3, 2e-3, 4e-3, 8e-3, 3e-3, 6e-3};
  const int b[] = {1, 2, 4, 1, 4, 2};
  for (int i = 0; i < 6; ++i) {
    LiveRun r{"s" + std::to_string(i), 2, c[i], 1e-4, 0.0, b[i]};
    r.measured_s = r.rest_s + 1.5 * c[i] + 0.2e-3 + 0.6e-3 * b[i];
    runs.push_back(r);
  }
  const auto terms = fit_live_term_set(runs, nullptr);
  REQUIRE(terms.size() == 1);
  CHECK(terms[0].none_because.empty());
  CHECK(terms[0].term.compute_factor == doctest::Approx(1.5).epsilon(1e-9));
  CHECK(terms[0].term.host_overhead_s == doctest::Approx(0.2e-3).epsilon(1e-9));
  CHECK(terms[0].term.per_bucket_s == doctest::Approx(0.6e-3).epsilon(1e-9));
  // one bucket count: no per-bucket column (it would be the overhead's twin)
  for (auto& r : runs) r.buckets = 1;
  CHECK(fit_live_term_set(runs, nullptr)[0].fit.features.size() == 2);
  // the Wald test over three terms: a fit at none (factor 1, the rest 0)
  // with a small covariance does not differ; one 5 standard errors off the
  // factor (chi-square 25 > 7.815) does; so does one off only in the
  // per-bucket term, through the covariance
  LinearFit f;
  f.features = {"compute_factor", "host_overhead_s", "per_bucket_s"};
  f.coef = {1.0, 0.0, 0.0};
  f.active = {true, true, true};
  f.std_err = {0.01, 1e-5, 1e-5};
  f.cov = {{1e-4, 0, 0}, {0, 1e-10, 0}, {0, 0, 1e-10}};
  CHECK_FALSE(live_term_differs_from_none(f));
  f.coef[0] = 1.05;
  CHECK(live_term_differs_from_none(f));
  f.coef[0] = 1.0;
  f.coef[2] = 3e-5;  // (3e-5)^2 / 1e-10 = 9 > 7.815
  CHECK(live_term_differs_from_none(f));
  f.coef[2] = 2e-5;  // 4 < 7.815
  CHECK_FALSE(live_term_differs_from_none(f));
  // the overhead and the per-bucket cost perfectly correlated (runs of one
  // bucket count: the pseudo-inverse's covariance is singular): the terms are
  // judged one by one, and a fit at none stays none
  f.coef = {1.0, 0.0, 0.0};
  f.cov = {{1e-4, 0, 0}, {0, 1e-10, 1e-10}, {0, 1e-10, 1e-10}};
  CHECK_FALSE(live_term_differs_from_none(f));
  f.coef[1] = 1e-4;  // 10 standard errors on its own
  CHECK(live_term_differs_from_none(f));
}

TEST_CASE("the communication factor by hand: all-reduces at 0.8 x their prediction, a spread around it, too few runs") {
  // predicted / measured r = 1.25 in every run: f = sum r / sum r^2 = 1 / 1.25
  // = 0.8 with no residual, so it differs from 1
  std::vector<LiveRun> runs(3);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    runs[i].ranks = 2;
    runs[i].comm_s = 1.25e-3 * static_cast<double>(i + 1);
    runs[i].measured_comm_s = 1e-3 * static_cast<double>(i + 1);
  }
  std::vector<const LiveRun*> ptrs{&runs[0], &runs[1], &runs[2]};
  std::string why;
  CHECK(fit_comm_factor(ptrs, why) == doctest::Approx(0.8).epsilon(1e-12));
  // r = 0.9, 1.0, 1.1: f = 3 / 3.02 = 0.99338; residuals 1 - f r = 0.10596,
  // 0.00662, -0.09272, sum of squares 0.019869; se = sqrt(0.019869 / 2 /
  // 3.02) = 0.05735; ((f - 1) / se)^2 = 0.0133 < 3.841: kept all the same
  // (its uncertainty goes into the intervals), and why says it is not told
  // from 1
  const double r[] = {0.9, 1.0, 1.1};
  for (int i = 0; i < 3; ++i) runs[i].comm_s = r[i] * runs[i].measured_comm_s;
  CHECK(fit_comm_factor(ptrs, why) == doctest::Approx(3.0 / 3.02).epsilon(1e-12));
  CHECK(why.find("0.9934") != std::string::npos);
  CHECK(why.find("0.05735") != std::string::npos);
  CHECK(why.find("not told from 1 at 95%") != std::string::npos);
  // a run that recorded no communication does not count: two left, too few
  runs[2].measured_comm_s = 0;
  CHECK(fit_comm_factor(ptrs, why) == 1.0);
  CHECK(why.find("2 run(s)") != std::string::npos);
  // r = 1/200 in every run: f = 200 exactly, beyond the file's range (at most
  // 100): none, and why says so
  for (int i = 0; i < 3; ++i) runs[i].measured_comm_s = 200.0 * runs[i].comm_s;
  CHECK(fit_comm_factor(ptrs, why) == 1.0);
  CHECK(why.find("outside") != std::string::npos);
  // a fitted factor goes into the file and back unchanged, its fit beside it
  CalibrationFile f;
  f.name = "t";
  CalibrationFile::FittedLive fl;
  fl.term = Calibration::LiveTerm{2, 1.0, 0.0, 0.0, 0.7715};
  fl.none_because = "none: test";
  fl.comm_why = "comm_factor 0.7715 +- 0.06 over 9 runs";
  f.live = {fl};
  f.comm_error_sigma = 0.1729;
  const std::string text = write_calibration(f, "");
  CHECK(text.find("comm_factor: 0.7715}   # none: test; comm_factor 0.7715 +- 0.06 over 9 runs") != std::string::npos);
  CHECK(text.find("  comm_error_sigma: 0.1729   # out of sample") != std::string::npos);
  const Calibration back = round_trip(f, local_cpu());
  REQUIRE(back.live_terms.size() == 1);
  CHECK(back.live_terms[0].comm_factor == 0.7715);
  CHECK(back.comm_error_sigma == 0.1729);
}

TEST_CASE("the all-reduce time's error out of sample, by hand: four shapes, each against the factor of the other three") {
  // predicted 1 ms in every run, measured g = 1, 1.25, 0.8, 1 ms (r = 1/g).
  // Leaving out A (or D): f = sum r / sum r^2 over the other three = (0.8 +
  // 1.25 + 1) / (0.64 + 1.5625 + 1) = 0.952381, error log(1 / f) = 0.048790.
  // B: f = 3.25 / 3.5625 = 0.912281, log(1.25 / f) = 0.314951. C: f = 2.8 /
  // 2.64 = 1.060606, log(0.8 / f) = -0.281984. RMS over the four:
  // sqrt((2 x 0.048790^2 + 0.314951^2 + 0.281984^2) / 4) = 0.214167.
  const double g[] = {1.0, 1.25, 0.8, 1.0};
  std::vector<LiveRun> runs(4);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    runs[i].shape = std::string(1, static_cast<char>('A' + i));
    runs[i].ranks = 2;
    runs[i].comm_s = 1e-3;
    runs[i].measured_comm_s = g[i] * 1e-3;
  }
  int n = 0;
  CHECK(comm_error_loo(runs, &n) == doctest::Approx(0.214167).epsilon(1e-5));
  CHECK(n == 4);
  // one-rank runs and runs without communication recorded do not count
  LiveRun one = runs[1];
  one.ranks = 1;
  one.shape = "E";
  one.measured_comm_s = 5e-3;
  runs.push_back(one);
  LiveRun quiet = runs[1];
  quiet.shape = "F";
  quiet.measured_comm_s = 0;
  runs.push_back(quiet);
  CHECK(comm_error_loo(runs, &n) == doctest::Approx(0.214167).epsilon(1e-5));
  CHECK(n == 4);
  // with the measured all-reduces exactly 0.8 x predicted everywhere, every
  // left-out shape is predicted exactly: 0
  for (auto& r : runs) r.measured_comm_s = 0.8 * r.comm_s;
  CHECK(comm_error_loo(runs, &n) == doctest::Approx(0.0).epsilon(1e-12));
  // a rank count with a single shape leaves none out
  std::vector<LiveRun> single(runs.begin(), runs.begin() + 1);
  CHECK(comm_error_loo(single, &n) == 0.0);
  CHECK(n == 0);
}

TEST_CASE("the compute terms take the compute a run measured where it recorded it") {
  // six 2-rank runs whose trainer measured compute 1.2 x the predicted + 10
  // us; their iteration less the predicted rest says 3 x (what the
  // communication's error would push into the compute): the fit takes the
  // measured compute, factor 1.2 and 10 us
  std::vector<LiveRun> runs;
  const double c[] = {1e-3, 2e-3, 4e-3, 8e-3, 3e-3, 6e-3};
  for (int i = 0; i < 6; ++i) {
    LiveRun r{"s" + std::to_string(i), 2, c[i], 1e-4, 1e-4 + 3.0 * c[i], 1};
    r.measured_compute_s = 1.2 * c[i] + 10e-6;
    runs.push_back(r);
  }
  auto terms = fit_live_term_set(runs, nullptr);
  REQUIRE(terms.size() == 1);
  CHECK(terms[0].term.compute_factor == doctest::Approx(1.2).epsilon(1e-9));
  CHECK(terms[0].term.host_overhead_s == doctest::Approx(10e-6).epsilon(1e-9));
  // not recorded (PyTorch's runs): iteration - rest, factor 3
  for (auto& r : runs) r.measured_compute_s = 0;
  terms = fit_live_term_set(runs, nullptr);
  CHECK(terms[0].term.compute_factor == doctest::Approx(3.0).epsilon(1e-9));
}

TEST_CASE("a cost per bucket only for runs that recorded no compute of their own") {
  // the six runs above at 1 or 2 buckets. With their measured compute (1.2 x
  // predicted + 10 us, kanscale's trainer) the buckets' work is not in the
  // target: two columns, factor 1.2 and 10 us. Without it, their iteration
  // less the rest is 1.2 c + 10 us + 50 us x buckets: three columns, and
  // the fit gives 50 us back.
  std::vector<LiveRun> runs;
  const double c[] = {1e-3, 2e-3, 4e-3, 8e-3, 3e-3, 6e-3};
  for (int i = 0; i < 6; ++i) {
    LiveRun r{"s" + std::to_string(i), 2, c[i], 1e-4, 0.0, 1 + i % 2};
    r.measured_compute_s = 1.2 * c[i] + 10e-6;
    r.measured_s = r.rest_s + r.measured_compute_s + 50e-6 * r.buckets;
    runs.push_back(r);
  }
  auto terms = fit_live_term_set(runs, nullptr);
  REQUIRE(terms.size() == 1);
  CHECK(terms[0].fit.features.size() == 2);
  CHECK(terms[0].term.per_bucket_s == 0.0);
  CHECK(terms[0].term.compute_factor == doctest::Approx(1.2).epsilon(1e-9));
  for (auto& r : runs) r.measured_compute_s = 0;
  terms = fit_live_term_set(runs, nullptr);
  REQUIRE(terms[0].fit.features.size() == 3);
  CHECK(terms[0].term.compute_factor == doctest::Approx(1.2).epsilon(1e-9));
  CHECK(terms[0].term.host_overhead_s == doctest::Approx(10e-6).epsilon(1e-9));
  CHECK(terms[0].term.per_bucket_s == doctest::Approx(50e-6).epsilon(1e-9));
}

TEST_CASE("leave one shape out: terms that hold on every shape, against none that misses by log 2") {
  // three shapes of two runs each, every target exactly 2 x its compute:
  // each fold's fit on the other four runs is factor 2, host 0, exact on
  // the shape left out (RMS 0), where none (factor 1) misses by log 2
  std::vector<LiveRun> runs;
  std::vector<std::vector<double>> X;
  std::vector<double> y;
  const double c[] = {1e-3, 2e-3, 3e-3, 5e-3, 7e-3, 11e-3};
  for (int i = 0; i < 6; ++i) {
    runs.push_back({"s" + std::to_string(i / 2), 1, c[i], 0.0, 2.0 * c[i]});
    X.push_back({c[i], 1.0});
    y.push_back(2.0 * c[i]);
  }
  std::vector<const LiveRun*> ptrs;
  for (const auto& r : runs) ptrs.push_back(&r);
  const ShapeCv cv = leave_one_shape_out(ptrs, X, y, {"compute_factor", "host_overhead_s"});
  CHECK(cv.folds == 3);
  CHECK(cv.fitted_rms < 1e-9);
  CHECK(cv.none_rms == doctest::Approx(std::log(2.0)).epsilon(1e-12));
  // the terms are kept by it
  CHECK(fit_live_term_set(runs, nullptr)[0].none_because.empty());
  // every run exactly at none: none predicts every fold exactly, the fit no
  // better: none is kept
  for (auto& r : runs) r.measured_s = r.compute_s;
  const auto none = fit_live_term_set(runs, nullptr);
  CHECK_FALSE(none[0].none_because.empty());
  CHECK(none[0].term.compute_factor == 1.0);
}

// The compute fit counts a shape timed in fewer rounds as if every round had
// timed it (skip_shapes_under). Reference: the same times with every shape in
// both rounds. adam at 10 shapes, time = 2 us + 1 ns/B, each shape off by a
// few percent (so that which shapes weigh more moves the fit); the largest
// 20% held out either way.
TEST_CASE("fit: a shape timed in one round of two weighs as one timed in both") {
  std::vector<KernelRecord> once, half;
  for (int i = 0; i < 10; ++i) {
    KernelRecord r = layer_row("adam", 8.0 * (i + 1), 4, 4, 5);
    r.bytes = 1000.0 * (i + 1) * (i + 1);
    r.time_median_s = (2e-6 + 1e-9 * r.bytes) * (1 + 0.08 * std::sin(1.7 * i));
    once.push_back(r);
  }
  for (int i = 0; i < 10; i += 2) half.push_back(once[static_cast<std::size_t>(i)]);
  const auto fit_rounds = [](const std::vector<std::vector<KernelRecord>>& rounds) {
    FitInputs inputs;
    for (std::size_t k = 0; k < rounds.size(); ++k) {
      KernelsFile f;
      f.path = "k" + std::to_string(k) + ".json";
      f.rows = rounds[k];
      inputs.kernels.push_back(f);
    }
    return fit_calibration(inputs, "t").file.ops.at(0);
  };
  const FittedOp both = fit_rounds({once, once}), skipped = fit_rounds({once, half}), one = fit_rounds({once});
  REQUIRE(both.op == "adam");
  CHECK(skipped.fit.coef[0] == doctest::Approx(both.fit.coef[0]).epsilon(1e-9).scale(0));
  CHECK(skipped.fit.coef[1] == doctest::Approx(both.fit.coef[1]).epsilon(1e-9).scale(0));
  CHECK(skipped.fit.holdout_mean_abs_rel == doctest::Approx(both.fit.holdout_mean_abs_rel).epsilon(1e-9).scale(0));
  // every shape in both rounds: the fit of one round
  CHECK(both.fit.coef[1] == doctest::Approx(one.fit.coef[1]).epsilon(1e-9).scale(0));
  CHECK(both.fit.n_holdout == 2 * one.fit.n_holdout);
  // each round timing other shapes (every shape once): no shape is favoured, the weights
  // are 1, the fit is the pooled rows' exactly, standard errors included (weights of 2
  // would count 20 rows where 10 were measured)
  const std::vector<KernelRecord> first(once.begin(), once.begin() + 5), last(once.begin() + 5, once.end());
  const FittedOp split = fit_rounds({first, last});
  CHECK(split.fit.coef == one.fit.coef);
  CHECK(split.fit.std_err == one.fit.std_err);
  CHECK(split.fit.n_holdout == one.fit.n_holdout);
  // the same rows in one file (one round, shapes timed twice or once): not reweighted
  std::vector<KernelRecord> together = once;
  together.insert(together.end(), half.begin(), half.end());
  CHECK(fit_rounds({together}).fit.coef[0] != doctest::Approx(both.fit.coef[0]).epsilon(1e-6).scale(0));
}

TEST_CASE("kernel classes' leave-one-shape-out errors: a hand-solved weighted fit per left-out shape; cold apart; under 3 shapes none") {
  // adam at 4 shapes: time = 2 us + 1 ns/B x bytes, the last shape 20% slow.
  // Reference: for each shape left out, the relative least squares line
  // through the other three (weights 1/y: minimise sum ((a + b x - y) / y)^2,
  // the 2x2 normal equations solved here), its relative error at that shape;
  // the mean over the four. Every such line keeps a, b > 0 (no term dropped).
  const std::vector<double> x = {1000, 2000, 3000, 4000};
  std::vector<double> y;
  for (double b : x) y.push_back(2e-6 + 1e-9 * b);
  y[3] *= 1.2;
  KernelsFile f;
  for (std::size_t i = 0; i < x.size(); ++i) {
    KernelRecord r = layer_row("adam", 8.0 * (i + 1), 4, 4, 5);
    r.bytes = x[i];
    r.time_median_s = y[i];
    f.rows.push_back(r);
    r.cache = "cold";  // the same times cold, but at two shapes only
    if (i < 2) f.rows.push_back(r);
  }
  double expected = 0;
  for (std::size_t out = 0; out < x.size(); ++out) {
    double s00 = 0, s01 = 0, s11 = 0, t0 = 0, t1 = 0;  // rows (1, x)/y, target 1
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (i == out) continue;
      const double u = 1 / y[i], v = x[i] / y[i];
      s00 += u * u, s01 += u * v, s11 += v * v, t0 += u, t1 += v;
    }
    const double det = s00 * s11 - s01 * s01, a = (t0 * s11 - s01 * t1) / det, b = (s00 * t1 - s01 * t0) / det;
    REQUIRE(a > 0);
    REQUIRE(b > 0);
    expected += std::fabs(a + b * x[out] - y[out]) / y[out] / x.size();
  }
  const auto errors = kernel_class_shape_errors({f});
  REQUIRE(errors.count("adam") == 1);
  CHECK(errors.at("adam") == doctest::Approx(expected).epsilon(1e-6));
  CHECK(expected > 0.03);       // the slow shape is felt
  CHECK(errors.count("adam@cold") == 0);  // two shapes: nothing to leave out
  // a layer (5 terms) at 4 shapes, a row each: 3 points once a shape is out, too few
  KernelsFile layers;
  for (int i = 1; i <= 4; ++i) {
    KernelRecord r = layer_row("kan_forward", 8.0 * i, 4, 4, 5);
    r.flops = 1e6 * i, r.bytes = 1e4 * i, r.time_median_s = 1e-5 * i;
    layers.rows.push_back(r);
  }
  CHECK(kernel_class_shape_errors({layers}).empty());
  // split over two files (two rounds), the rows pool: the same errors
  KernelsFile a = f, b = f;
  a.rows.assign(f.rows.begin(), f.rows.begin() + 3);
  b.rows.assign(f.rows.begin() + 3, f.rows.end());
  CHECK(kernel_class_shape_errors({a, b}).at("adam") == doctest::Approx(expected).epsilon(1e-6));
  // a second round timing every other shape (the first and third: skip_shapes_under) counts
  // each shape as if both rounds had timed it. Reference: both rounds timing all four with
  // the same times, where every shape has two rows (the hand-solved error above, each point
  // twice). Unweighted, the first and third shapes would count twice and the slow fourth once.
  KernelsFile half = f;
  half.rows.clear();
  for (const KernelRecord& r : f.rows)
    if (r.cache == "warm" && (r.batch == 8.0 || r.batch == 24.0)) half.rows.push_back(r);
  REQUIRE(half.rows.size() == 2);
  CHECK(kernel_class_shape_errors({f, f}).at("adam") == doctest::Approx(expected).epsilon(1e-6));
  CHECK(kernel_class_shape_errors({f, half}).at("adam") == doctest::Approx(expected).epsilon(1e-6));
}
