// The PyTorch calibration: the fit of PyTorch's op classes and of gloo's
// collectives, what the calibration file keeps of them, the gloo model, the
// op list's units, and the refusal of a kernel-only calibration for a
// PyTorch workload.
#include <doctest/doctest.h>

#include <cmath>
#include <set>
#include <string>

#include "common/error.hpp"
#include "formats/calibration_file.hpp"
#include "formats/config_files.hpp"
#include "model/calibration_fit.hpp"
#include "model/collectives.hpp"
#include "model/config.hpp"
#include "model/cost.hpp"
#include "model/kan_model.hpp"
#include "model/records.hpp"
#include "hand_replay.hpp"
#include "sim/replay.hpp"
#include "sim/point.hpp"

using namespace ks;

namespace {

const char* kGlooCluster = R"Y(name: gloo-test
nodes: 1
gpus_per_node: 4
gpu: {model: core, fp32: "100GFLOP/s", memory_bandwidth: "10GB/s", memory: "8GiB", kernel_launch: "0s", runtime_memory: "0B"}
intra_node: {kind: shm, bandwidth: "1GB/s", latency: "10us"}
network: {nics_per_node: 1, nic_bandwidth: "10Gbps", latency: "20us"}
collectives: {family: gloo, version: "gloo (test)"}
)Y";

// Records whose times are exactly calls x fixed + elements x per_element.
TorchOpsFile exact_records(double fixed_s, double element_s) {
  TorchOpsFile f;
  f.path = "ops.json";
  f.torch = "1.13.0a0";
  f.blas = "/usr/lib/libopenblasp-r0.3.21.so";
  f.python = "3.11.2";
  f.machine.cpu_model = "test CPU";
  f.machine.cores = 2;
  int shape = 0;
  for (double elements : {100.0, 1e3, 1e4, 1e5, 1e6}) {
    for (double calls : {1.0, 6.0}) {
      TorchOpRecord r;
      r.cls = "forward:bases";
      r.calls = calls;
      r.elements = elements;
      r.in = 4 + shape++;  // one shape per record
      r.out = 8;
      r.batch = 2;
      r.grid_size = 5;
      r.spline_order = 3;
      r.time_median_s = calls * fixed_s + elements * element_s;
      f.records.push_back(r);
    }
  }
  return f;
}

// A PyTorch workload of a [4, 8, 1] KAN (G5, k3) at batch 2.
Workload tiny_pytorch_workload() {
  Workload w;
  w.widths = {4, 8, 1};
  w.batch_per_gpu = 2;
  w.implementation = Implementation::pytorch;
  return w;
}

// Every op class the workload's iteration uses, at fixed_s per call and
// nothing per element.
void cost_every_class(Calibration& cal, const Workload& w, double fixed_s) {
  for (const Op& op : efficient_kan_iteration(KanShape{w.widths, w.grid_size, w.spline_order}, w.batch_per_gpu, false, true))
    if (!op.torch_unit.empty()) cal.torch_ops[op.torch_unit] = TorchOpCost{fixed_s, 0};
}

}  // namespace

TEST_CASE("torch op classes: exact records give back their fixed and per-element costs, held out error 0") {
  FitInputs in;
  in.torch_ops.push_back(exact_records(5e-6, 2e-9));
  const CalibrationFit fit = fit_calibration(in, "t");
  REQUIRE(fit.file.torch_ops.size() == 1);
  const FittedTorchOp& o = fit.file.torch_ops[0];
  CHECK(o.cls == "forward:bases");
  CHECK(o.shapes == 10);
  CHECK(o.cost.fixed_s == doctest::Approx(5e-6).epsilon(1e-9));
  CHECK(o.cost.element_s == doctest::Approx(2e-9).epsilon(1e-9));
  CHECK(o.fit.n_holdout == 10);  // every record, its shape left out
  CHECK(o.fit.holdout_max_abs_rel < 1e-9);
  CHECK(fit.file.torch_fingerprint == "torch 1.13.0a0, libopenblasp-r0.3.21.so, Python 3.11.2, 1 thread");
  CHECK(fit.report.find("forward:bases") != std::string::npos);

  // a second file of another torch is refused: one calibration, one fingerprint
  TorchOpsFile other = exact_records(5e-6, 2e-9);
  other.path = "other.json";
  other.torch = "2.1.0";
  in.torch_ops.push_back(other);
  CHECK_THROWS_AS(fit_calibration(in, "t"), InputError);
}

TEST_CASE("gloo sweeps: the ring's and the binomial tree's latency and bandwidth come back from exact points") {
  // 2 ranks: the ring all-reduce is 2 steps of latency + 2(n-1)/n x bytes = bytes / bw;
  // the broadcast ceil(log2 2) = 1 step of latency + bytes / bw
  const double lat = 400e-6, bw = 0.8e9, blat = 150e-6, bbw = 2e9;
  FitInputs in;
  for (bool bcast : {false, true}) {
    CollectiveSweepFile s;
    s.path = bcast ? "b.json" : "a.json";
    s.has_metadata = s.has_points = true;
    s.backend = "gloo";
    s.collective = bcast ? SweptCollective::broadcast : SweptCollective::allreduce;
    s.ranks = 2;
    for (double bytes = 8; bytes <= 64e6; bytes *= 4) {
      CollectivePoint p;
      p.size_bytes = bytes;
      CollectiveTiming t;
      t.time_us = 1e6 * (bcast ? blat + bytes / bbw : 2 * lat + bytes / bw);
      t.wrong = 0;
      p.in_place = t;
      s.points.push_back(p);
    }
    in.collectives.push_back(s);
  }
  const CalibrationFit fit = fit_calibration(in, "g");
  REQUIRE(fit.file.gloo_allreduce);
  REQUIRE(fit.file.gloo_broadcast);
  CHECK(fit.file.gloo_allreduce->latency_s == doctest::Approx(lat).epsilon(1e-9));
  CHECK(*fit.file.gloo_allreduce->bandwidth_Bps == doctest::Approx(bw).epsilon(1e-9));
  CHECK(fit.file.gloo_broadcast->latency_s == doctest::Approx(blat).epsilon(1e-9));
  CHECK(*fit.file.gloo_broadcast->bandwidth_Bps == doctest::Approx(bbw).epsilon(1e-9));
  CHECK(fit.file.mpi_regimes.empty());  // gloo's sweeps are not MPI's

  // the file keeps them, and a gloo cluster reads them back as its family's terms
  const Cluster c = parse_cluster(kGlooCluster, "c.yaml");
  const Calibration cal = parse_calibration(write_calibration(fit.file, "# test\n"), "g.yaml", c, Precision::fp32);
  CHECK(cal.has_gloo_terms);
  CHECK_FALSE(cal.has_mpi_terms);
  CHECK(cal.gloo_allreduce->latency_s == doctest::Approx(lat).epsilon(1e-5));  // 6 significant digits written
  CHECK(*cal.gloo_broadcast->bandwidth_Bps == doctest::Approx(bbw).epsilon(1e-5));
  CHECK(collective_family_mismatch(c, cal).empty());
  const Cluster mpi = parse_cluster(std::string(kGlooCluster).replace(std::string(kGlooCluster).find("family: gloo"), 12, "family: mpi"), "m.yaml");
  CHECK(collective_family_mismatch(mpi, cal).find("gloo collective terms only") != std::string::npos);
}

TEST_CASE("the gloo model: ring all-reduce and binomial broadcast from the link's terms, by hand") {
  const Cluster c = parse_cluster(kGlooCluster, "c.yaml");
  const Calibration cal = datasheet_calibration(c, Precision::fp32);
  const auto m = make_collective_model(c, cal);
  CHECK(m->family() == "gloo");
  const Layout four{4, 1};
  // 4 ranks, 1 MB: 2(4-1) = 6 steps of 10 us, 2(4-1)/4 x 1e6 B at 1 GB/s = 1.5 ms
  CHECK(m->allreduce(1e6, four).time_s == doctest::Approx(60e-6 + 1.5e-3));
  CHECK(m->allreduce(1e6, four).algorithm == "ring");
  // binomial: ceil(log2 4) = 2 steps of (10 us + 1 ms)
  CHECK(m->broadcast(1e6, four).time_s == doctest::Approx(2 * (10e-6 + 1e-3)));
  CHECK(m->allreduce(1e6, Layout{1, 1}).time_s == 0);
  // fitted terms replace the link's
  Calibration fitted = cal;
  fitted.gloo_allreduce = GlooTerm{1e-3, 0.5e9, {}};
  CHECK(make_collective_model(c, fitted)->allreduce(1e6, four).time_s == doctest::Approx(6e-3 + 1.5e6 / 0.5e9));
}

TEST_CASE("efficient-kan's op list: every op belongs to a measured unit, each unit costed once") {
  // [4, 8, 1], 2 layers, 6 parameters, buffers broadcast. Units with fixed
  // 1 s and nothing per element sum to the calls: zero_grad 6 (one per
  // parameter), ddp:forward 1, forward 6 classes x 2 layers = 12, loss:mse 1,
  // backward:mse 1, the hidden layer's backward 5 classes, the first layer's
  // 3 (no bases, no SiLU: its input is data), reducer 6, adam 6: 41.
  const KanShape s{{4, 8, 1}, 5, 3};
  const auto ops = efficient_kan_iteration(s, 2, false, true);
  Calibration cal;
  cal.name = "unit";
  std::set<std::string> classes;
  for (const auto& o : ops) {
    CAPTURE(o.name);
    CHECK_FALSE(o.torch_unit.empty());
    classes.insert(o.torch_unit);
  }
  // 6 forward, 5 backward of a hidden layer + 2 of the first (@first), loss:mse,
  // backward:mse, zero_grad, adam, reducer, ddp:forward: op_bench.py's 19
  CHECK(classes.size() == 19);
  for (const auto& c : classes) cal.torch_ops[c] = TorchOpCost{1.0, 0.0, {}};
  double total = 0;
  for (double t : op_times_s(ops, cal, 0)) total += t;
  CHECK(total == doctest::Approx(41));
  // elements instead: forward:bases counts B x in x (G + 2k) per layer: 2 x 4 x 11 + 2 x 8 x 11 = 264
  for (auto& [name, cost] : cal.torch_ops) cost = TorchOpCost{0.0, name == "forward:bases" ? 1.0 : 0.0, {}};
  total = 0;
  for (double t : op_times_s(ops, cal, 0)) total += t;
  CHECK(total == doctest::Approx(264));
  // a class the calibration lacks is named
  cal.torch_ops.erase("adam");
  CHECK_THROWS_WITH_AS(op_times_s(ops, cal, 0), doctest::Contains("'adam'"), InputError);
}

TEST_CASE("a PyTorch workload refuses a calibration of kanscale's kernels only, and names the calibration to make") {
  Workload w;
  w.name = "w";
  w.file = "w.yaml";
  w.implementation = Implementation::pytorch;
  Calibration kernels;
  kernels.name = "local-cpu";
  kernels.ops["kan_forward"] = OpCost{};
  CHECK_THROWS_WITH_AS(check_calibration_covers(w, kernels, "configs/calibrations/local-cpu.yaml"),
                       doctest::Contains("kanscale calibrate configs/calibrate/pytorch-cpu.yaml"), InputError);
  // a kanscale workload takes it; a calibration with PyTorch's classes, or with no compute terms, is taken
  Workload k = w;
  k.implementation = Implementation::kanscale;
  CHECK_NOTHROW(check_calibration_covers(k, kernels, ""));
  Calibration torch = kernels;
  torch.torch_ops["adam"] = TorchOpCost{};
  CHECK_NOTHROW(check_calibration_covers(w, torch, ""));
  CHECK_NOTHROW(check_calibration_covers(w, Calibration{}, ""));
}

TEST_CASE("gloo's threads slow the compute while a bucket's all-reduce runs: measured, fitted, replayed (hand case)") {
  // three rounds of kanscale bench interference --backend gloo: compute lost
  // per second of collective in flight 0.4, 0.5, 0.7; the fit keeps the median
  FitInputs in;
  in.torch_ops = {exact_records(10e-6, 2e-9)};
  for (double v : {0.4, 0.7, 0.5}) {
    InterferenceFile f;
    f.path = "interference-" + std::to_string(v) + ".json";
    f.ranks = 2;
    f.allreduce_bytes = 1048576;
    f.per_collective_second = v;
    in.interference.push_back(f);
  }
  const CalibrationFit fit = fit_calibration(in, "gloo-hand");
  CHECK(fit.file.interference == 0.5);
  const Cluster c = parse_cluster(kGlooCluster, "gloo-test.yaml");
  Calibration cal = parse_calibration(write_calibration(fit.file, ""), "gloo-hand", c, Precision::fp32);
  CHECK(cal.interference == 0.5);
  // it reaches the replay of a PyTorch job on the gloo cluster (one track:
  // the ops run on the host, so no host track), every op class costed 1 us
  const Workload w = tiny_pytorch_workload();
  cost_every_class(cal, w, 1e-6);
  const ReplayInput ri = make_replay_input(c, w, cal, layout_for(c, 2, std::nullopt), 2, 1);
  CHECK(ri.interference == 0.5);
  CHECK(ri.op_host_s.empty());
  // By hand, a rank's iteration of zero_grad 1, forward 10, backward A 5
  // (bucket 0 ready), B 5 (bucket 1), Adam 2 with 3 s all-reduces: bucket 0
  // runs 16..19 on gloo's thread, while B computes at 1 / 1.5 the speed (2 s
  // of its work by 19), the rest 19..22; bucket 1 runs 22..25; Adam 25..27:
  // 27 s. Without the contention B ends at 21, bucket 1 runs 21..24, Adam
  // 24..26: 26 s. Both wait 3 s for bucket 1.
  test::Hand hand(2, 3.0);
  ReplayInput& h = hand.in;
  h.iterations = 2;
  h.interference = cal.interference;
  const ReplayResult r = replay(h);
  CHECK(r.iterations[1][0].iteration_s() == doctest::Approx(27.0));
  CHECK(r.iterations[1][0].exposed_s == doctest::Approx(3.0));
  h.interference = 0;
  CHECK(replay(h).iterations[1][0].iteration_s() == doctest::Approx(26.0));
}

TEST_CASE("the host track on a CUDA cluster takes a PyTorch calibration's own live factor once") {
  // FinisTerrae III (NCCL): a calibration with every op class at 10 us fixed
  // and a one-rank live factor of 2: each op's host time is (its unit's
  // calls x 10 us + the cluster's 5 us launch when it runs a kernel) x 2,
  // the factor applied once (the calibration's own classes are taken as
  // they are; the live term of the rank count scales them)
  const Cluster ft3 = load_cluster(KANSCALE_SOURCE_DIR "/configs/clusters/finisterrae3.yaml");
  Calibration cal = datasheet_calibration(ft3, Precision::fp32);
  const Workload w = tiny_pytorch_workload();
  cost_every_class(cal, w, 10e-6);
  cal.live_terms.push_back(Calibration::LiveTerm{1, 2.0, 0.0, 0.0});
  const ReplayInput in = make_replay_input(ft3, w, cal, layout_for(ft3, 1, std::nullopt), 2, 1);
  REQUIRE(in.op_host_s.size() == in.ops.size());
  for (std::size_t i = 0; i < in.ops.size(); ++i) {
    const Op& op = in.ops[i];
    const double expected = ((op.unit_calls > 0 ? op.unit_calls * 10e-6 : 0.0) + (op.host_only ? 0.0 : ft3.gpu.kernel_launch_s)) * 2.0;
    CAPTURE(op.name);
    CHECK(in.op_host_s[i] == doctest::Approx(expected).epsilon(1e-12));
  }
}
