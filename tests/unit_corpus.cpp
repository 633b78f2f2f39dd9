// The corpus of public GPU measurements (issue 57): its reader's refusals,
// the priors' fit and leave-one-out by hand, and the interval's composition
// on a hand case. The entries below are made up, laid out as
// validation/corpus/README.md says.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <map>

#include "common/error.hpp"
#include "formats/config_files.hpp"
#include "formats/corpus.hpp"
#include "model/live_fit.hpp"
#include "model/priors.hpp"
#include "sim/point.hpp"
#include "temp_dir.hpp"
#include "validation/corpus_score.hpp"

using namespace ks;

namespace {

// A GPU sheet: NVLink 600 GB/s both ways (300 one way), PCIe gen4 x16.
const char* kSheet = R"(model: G1
compute_capability: 8.0
fp32: "19.5TFLOP/s"
tf32: ""
memory_bandwidth: "1555GB/s"
memory: "40GB"
nvlink_bandwidth: "600GB/s"
pcie: "gen4 x16"
)";

// One node of 8 GPUs on NVSwitch; ROWS replaced by the test's rows.
std::string entry(const std::string& id, const std::string& gpu, const std::string& rows) {
  return "id: " + id +
         "\nkind: nccl_allreduce\nsource:\n  address: \"https://example.org/log\"\n  date: \"2025-01-01\"\n  where: \"the log\"\n"
         "health: healthy\nhealth_pointer: \"https://example.org/log\"\nhealth_note: \"made up\"\nscored: true\nclass: nvswitch\n"
         "system:\n  gpu: " + gpu +
         "\n  gpus_per_node: 8\n  nodes: 1\n  intra_node: nvswitch\n  network: none\n  nics_per_node: 0\n  nic_speed: \"\"\n"
         "  nccl: \"\"\n  cuda: \"\"\n  torch: \"\"\n  cpu: \"\"\n  nccl_env: {}\nmeasurements:\n" + rows;
}

// 1 GiB in 6,000 us on 8 ranks: algbw 178.96 GB/s, busbw x 2(8-1)/8 = 313.17 GB/s.
const char* kGoodRow = "  - {size_bytes: 1073741824, time_us: 6000, busbw_GBps: 313.17}\n";

std::string refusal(const TempDir& d, const std::string& id, const std::string& gpu, const std::string& rows) {
  const std::string f = d.write(id + ".yaml", entry(id, gpu, rows));
  try {
    load_corpus_entry(f, d / "gpus");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("corpus entry: a good entry reads, its datasheet cluster follows the sheet") {
  TempDir d;
  std::filesystem::create_directory(d / "gpus");
  d.write("gpus/g1.yaml", kSheet);
  const std::string f = d.write("good.yaml", entry("good", "g1", kGoodRow));
  const CorpusEntry e = load_corpus_entry(f, d / "gpus");
  REQUIRE(e.nccl.size() == 1);
  CHECK(e.gpu->nvlink_Bps == doctest::Approx(600e9));
  // gen4: 16 GT/s x 128/130 / 8 bits x 16 lanes = 31.51 GB/s one way
  CHECK(e.gpu->pcie_Bps() == doctest::Approx(16e9 / 8 * 128.0 / 130.0 * 16));
  const CorpusCluster cc = datasheet_cluster(e);
  REQUIRE(cc.cluster);
  CHECK(cc.cluster->intra.bandwidth_Bps == doctest::Approx(300e9));  // the datasheet's 600 both ways, halved
  CHECK(cc.cluster->collectives.channels == 15);                     // ceil(300 / 20 GB/s per channel)
}

TEST_CASE("corpus entry: bad entries refused in one line naming file, line and key") {
  TempDir d;
  std::filesystem::create_directory(d / "gpus");
  d.write("gpus/g1.yaml", kSheet);
  SUBCASE("a negative size") {
    const std::string m = refusal(d, "neg", "g1", "  - {size_bytes: -8, time_us: 10, busbw_GBps: 0}\n");
    CHECK(m.find(d / "neg.yaml") != std::string::npos);
    CHECK(m.find(".yaml:26:") != std::string::npos);  // the row: 24 lines of header, measurements:, then the row
    CHECK(m.find("size_bytes") != std::string::npos);
    CHECK(m.find("greater than zero") != std::string::npos);
  }
  SUBCASE("a busbw above twice the link's peak") {
    // 1 GiB in 2,684.35 us on 8 ranks: busbw 700 GB/s, consistent with size and time, above 2 x 300
    const std::string m = refusal(d, "fast", "g1", "  - {size_bytes: 1073741824, time_us: 2684.35, busbw_GBps: 700}\n");
    CHECK(m.find("fast.yaml:26:") != std::string::npos);
    CHECK(m.find("busbw_GBps") != std::string::npos);
    CHECK(m.find("above twice the link's datasheet peak (300 GB/s") != std::string::npos);
  }
  SUBCASE("an unknown GPU model") {
    const std::string m = refusal(d, "unk", "nosuch", kGoodRow);
    CHECK(m.find("unk.yaml:") != std::string::npos);
    CHECK(m.find("system.gpu") != std::string::npos);
    CHECK(m.find("unknown GPU model \"nosuch\"") != std::string::npos);
  }
  SUBCASE("a busbw that does not follow from size and time") {
    const std::string m = refusal(d, "typo", "g1", "  - {size_bytes: 1073741824, time_us: 6000, busbw_GBps: 31.317}\n");
    CHECK(m.find("does not follow from size and time on 8 ranks") != std::string::npos);
  }
  SUBCASE("an id that is not the file's name") {
    const std::string f = d.write("other.yaml", entry("someid", "g1", kGoodRow));
    CHECK_THROWS_WITH_AS(load_corpus_entry(f, d / "gpus"), doctest::Contains("expected the file's name"), InputError);
  }
  SUBCASE("an unhealthy entry marked scored") {
    std::string t = entry("sick", "g1", kGoodRow);
    t.replace(t.find("health: healthy"), 15, "health: unhealthy");
    const std::string f = d.write("sick.yaml", t);
    CHECK_THROWS_WITH_AS(load_corpus_entry(f, d / "gpus"), doctest::Contains("stays in the corpus unscored"), InputError);
  }
}

namespace {
// Three classes by hand (log factors): a: system s1 from two entries, logs 0.0
// and 0.2 (mean 0.1), s2 0.3; b: s3 -0.2, s4 0.0, s5 0.2; c: s6 0.5.
std::vector<FactorSample> hand_samples() {
  auto f = [](const char* c, const char* s, const char* e, double l) { return FactorSample{c, s, e, std::exp(l)}; };
  return {f("a", "s1", "e1", 0.0), f("a", "s1", "e1b", 0.2), f("a", "s2", "e2", 0.3), f("b", "s3", "e3", -0.2),
          f("b", "s4", "e4", 0.0), f("b", "s5", "e5", 0.2), f("c", "s6", "e6", 0.5)};
}
}  // namespace

TEST_CASE("priors: the fit of a class and its leave-one-out, by hand") {
  const auto s = hand_samples();
  // class a: mean of (0.1, 0.3) = 0.2; within-class sums of squares: a 0.01 + 0.01, b 0.04 + 0 + 0.04 (c has one
  // system: none), 0.10 on 1 + 2 = 3 degrees of freedom: sigma = sqrt(0.1 / 3) = 0.182574; rms about 0 of
  // (0.1, 0.3) = sqrt(0.05) = 0.223607
  const FactorPrior a = fit_factor_prior(s, "a");
  CHECK(a.scope == "class");
  CHECK(a.median == doctest::Approx(std::exp(0.2)));
  CHECK(a.systems == 2);
  CHECK(a.df == 3);
  CHECK(a.sigma == doctest::Approx(0.182574).epsilon(1e-5));
  CHECK(a.rms == doctest::Approx(0.223607).epsilon(1e-5));
  // t(0.95; 3) = 2.3534 (tables) x 0.182574 x sqrt(1 + 1/2) = 0.52623; at 1: t(0.95; 2) = 2.9200 x 0.223607 = 0.65293
  CHECK(a.log_half_width(0.90) == doctest::Approx(0.52623).epsilon(1e-4));
  CHECK(a.log_half_width_at_one(0.90) == doctest::Approx(0.65293).epsilon(1e-4));
  CHECK(a.from.size() == 3);  // e1, e1b, e2

  // s2 left out: class a keeps one system, so every class's remaining systems pool: logs 0.1, -0.2, 0.0, 0.2,
  // 0.5, mean 0.12; squares about it 0.0004 + 0.1024 + 0.0144 + 0.0064 + 0.1444 = 0.268 on 4 df: sigma 0.258844;
  // half-width t(0.95; 4) = 2.1318 x 0.258844 x sqrt(1 + 1/5) = 0.60447
  const FactorPrior loo = fit_factor_prior(s, "a", "s2");
  CHECK(loo.scope == "pooled");
  CHECK(loo.median == doctest::Approx(std::exp(0.12)));
  CHECK(loo.systems == 5);
  CHECK(loo.df == 4);
  CHECK(loo.sigma == doctest::Approx(0.258844).epsilon(1e-5));
  CHECK(loo.log_half_width(0.90) == doctest::Approx(0.60447).epsilon(1e-4));

  // class b keeps its own three when s6 (class c) is left out: mean 0, the pooled spread of a and b: as above
  const FactorPrior b = fit_factor_prior(s, "b", "s6");
  CHECK(b.scope == "class");
  CHECK(b.median == doctest::Approx(1.0));
  CHECK(b.df == 3);

  // one system in all: no prior
  CHECK_FALSE(fit_factor_prior({FactorSample{"a", "s1", "e1", 2.0}}, "a").usable());
}

TEST_CASE("priors: an interval's composition on a hand case") {
  // latency 10 us x lambda 2 = 20 us, bandwidth 30 us / eta 0.5 = 60 us: T = 80 us; shares 0.25 and 0.75;
  // h = sqrt((0.25 x 0.5)^2 + (0.75 x 0.2)^2) = sqrt(0.015625 + 0.0225) = 0.195256
  const ScaledTime t = scale_time(10e-6, 30e-6, 2.0, 0.5, 0.5, 0.2);
  CHECK(t.time_s == doctest::Approx(80e-6));
  CHECK(t.log_half_width == doctest::Approx(0.195256).epsilon(1e-5));
  // all latency: the latency prior's width alone
  CHECK(scale_time(10e-6, 0, 2.0, 0.5, 0.5, 0.2).log_half_width == doctest::Approx(0.5));
}

TEST_CASE("corpus scoring: each point's priors leave its own machine out") {
  // three machines of one class, bandwidth-bound, model 1 ms each; measured 1.0, 1.25 and 2.0 ms
  std::vector<RegimePoint> pts;
  const double measured[] = {1.0e-3, 1.25e-3, 2.0e-3};
  for (int i = 0; i < 3; ++i) {
    RegimePoint p;
    p.entry = "e" + std::to_string(i);
    p.cls = "roce";
    p.regime = "bandwidth";
    p.system = "m" + std::to_string(i);
    p.size_bytes = 1 << 30;
    p.measured_s = measured[i];
    p.model_bandwidth_s = 1e-3;
    pts.push_back(p);
  }
  const auto sp = score_points(pts);
  REQUIRE(sp.size() == 3);
  // point 0: eta from machines 1 and 2, eta = model / measured = 0.8 and 0.5: median exp(mean(log 0.8, log 0.5))
  // = sqrt(0.4) = 0.63246, so 1 ms / 0.63246 = 1.5811 ms
  CHECK(sp[0].eta.systems == 2);
  CHECK(sp[0].predicted_s == doctest::Approx(1e-3 / std::sqrt(0.4)));
  CHECK(sp[0].error_pct() == doctest::Approx((1 / std::sqrt(0.4) - 1) * 100));
  CHECK(sp[0].datasheet_s == doctest::Approx(1e-3));
  // no latency part: the interval is the bandwidth prior's alone
  const double h = sp[0].eta.log_half_width(0.90);
  CHECK(sp[0].hi_s / sp[0].predicted_s == doctest::Approx(std::exp(h)));
  CHECK(sp[0].has_interval);
}

TEST_CASE("unwatched: the compute's error with no live term, by hand") {
  // run 1: target 1.2 ms (measured compute) against 1.0 predicted: log 1.2; run 2: 2.0 - 0.5 rest = 1.5 against 1.5:
  // log 1 = 0; run 3 (no compute predicted) skipped. RMS = sqrt((ln(1.2)^2 + 0) / 2) = 0.128919
  LiveRun a;
  a.compute_s = 1e-3;
  a.measured_compute_s = 1.2e-3;
  LiveRun b;
  b.compute_s = 1.5e-3;
  b.measured_s = 2.0e-3;
  b.rest_s = 0.5e-3;
  LiveRun c;
  int n = 0;
  CHECK(unwatched_compute_sigma({a, b, c}, &n) == doctest::Approx(0.128919).epsilon(1e-5));
  CHECK(n == 2);
}

TEST_CASE("priors: the datasheet model's RMS over machines, by hand") {
  // machine m1: logs 0.1 and 0.3 (mean 0.2, mean square 0.05); m2: log -0.4
  // mean first: sqrt((0.2^2 + 0.4^2) / 2) = 0.316228; squares: sqrt((0.05 + 0.16) / 2) = 0.324037
  const std::vector<FactorSample> s = {{"a", "m1", "e1", std::exp(0.1)}, {"b", "m1", "e2", std::exp(0.3)}, {"a", "m2", "e3", std::exp(-0.4)}};
  CHECK(rms_over_machines(s).rms == doctest::Approx(0.316228).epsilon(1e-5));
  CHECK(rms_over_machines(s, true).rms == doctest::Approx(0.324037).epsilon(1e-5));
  CHECK(rms_over_machines(s).machines == 2);
}

TEST_CASE("a cluster names its GPU from configs/gpus/: the sheet's figures, the file's own where it gives one") {
  auto cluster = [](const std::string& gpu) {
    return "name: x\nnodes: 1\ngpus_per_node: 8\ngpu: {" + gpu +
           ", kernel_launch: \"5us\", runtime_memory: \"0B\"}\n"
           "intra_node: {kind: nvlink, bandwidth: \"264GB/s\", latency: \"1us\"}\n"
           "network: {nics_per_node: 1, nic_bandwidth: \"200Gbps\", latency: \"2us\"}\n"
           "collectives: {family: nccl, version: \"2.14.3\", algorithms: [ring], protocols: [Simple], channels: 2}\n";
  };
  // the shipped configs/gpus/a100-sxm4-40gb.yaml: 19.5 TFLOP/s FP32, 156 TF32, 1555 GB/s, 40 GB, compute capability 8.0
  const Cluster a = parse_cluster(cluster("sheet: a100-sxm4-40gb"), "c.yaml");
  CHECK(a.gpu.model == "A100-SXM4-40GB");
  CHECK(a.gpu.compute_capability == doctest::Approx(8.0));
  CHECK(a.gpu.fp32_flops == doctest::Approx(19.5e12));
  CHECK(a.gpu.tf32_flops == doctest::Approx(156e12));
  CHECK(a.gpu.memory_bandwidth_Bps == doctest::Approx(1555e9));
  CHECK(a.gpu.memory_bytes == doctest::Approx(40e9));
  const Cluster b = parse_cluster(cluster("sheet: a100-sxm4-40gb, memory: \"40GiB\""), "c.yaml");
  CHECK(b.gpu.memory_bytes == doctest::Approx(40.0 * 1024 * 1024 * 1024));
  CHECK_THROWS_WITH_AS(parse_cluster(cluster("sheet: a100-sxm9"), "c.yaml"), doctest::Contains("key 'gpu.sheet': unknown GPU model \"a100-sxm9\""),
                       InputError);
}

TEST_CASE("corpus entry: a class that contradicts its system, a malformed date, a fractional size, an unknown NCCL_ALGO") {
  TempDir d;
  std::filesystem::create_directory(d / "gpus");
  d.write("gpus/g1.yaml", kSheet);
  auto refused = [&](const std::string& id, std::string text, const std::string& from, const std::string& to) {
    text.replace(text.find(from), from.size(), to);
    const std::string f = d.write(id + ".yaml", text);
    try {
      load_corpus_entry(f, d / "gpus");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(refused("c", entry("c", "g1", kGoodRow), "class: nvswitch", "class: roce").find("class roce contradicts the system") !=
        std::string::npos);
  CHECK(refused("dt", entry("dt", "g1", kGoodRow), "date: \"2025-01-01\"", "date: \"June 2021\"").find("expected YYYY-MM-DD") !=
        std::string::npos);
  CHECK(refused("fr", entry("fr", "g1", kGoodRow), "size_bytes: 1073741824", "size_bytes: 512.5").find("a whole number of bytes") !=
        std::string::npos);
  CHECK(refused("al", entry("al", "g1", kGoodRow), "nccl_env: {}", "nccl_env: {NCCL_ALGO: \"Foo\"}").find("unknown NCCL_ALGO value \"Foo\"") !=
        std::string::npos);
  // NCCL's own spellings, a negated list included, are accepted
  const std::string ok = d.write("ok.yaml", [] {
    std::string t = entry("ok", "g1", kGoodRow);
    t.replace(t.find("nccl_env: {}"), 12, "nccl_env: {NCCL_ALGO: \"^NVLS,CollNet\", NCCL_PROTO: \"LL128,Simple\"}");
    return t;
  }());
  CHECK_NOTHROW(load_corpus_entry(ok, d / "gpus"));
}

TEST_CASE("priors: a machine in two classes counts in each class and once among all") {
  // m1 in class a (log 0.2) and class b (log 0.4); m2 in a (log 0.0); m3 in b (log 0.1)
  // class a: m1 0.2, m2 0.0 -> mean 0.1; pooled for class c (none of its own): machines m1 (mean of 0.2, 0.4 = 0.3), m2 0,
  // m3 0.1: three machines, mean 0.4/3
  const std::vector<FactorSample> s = {{"a", "m1", "e1", std::exp(0.2)}, {"b", "m1", "e2", std::exp(0.4)}, {"a", "m2", "e3", 1.0},
                                       {"b", "m3", "e4", std::exp(0.1)}};
  CHECK(fit_factor_prior(s, "a").median == doctest::Approx(std::exp(0.1)));
  const FactorPrior c = fit_factor_prior(s, "c");
  CHECK(c.scope == "pooled");
  CHECK(c.systems == 3);
  CHECK(c.median == doctest::Approx(std::exp(0.4 / 3)));
}

TEST_CASE("dispatch: each CPU's eager rows' median, from the shipped corpus") {
  // the entries' own figures: i9-11900K eager x+1 4.5 us (its torch.compile rows left out); M1 Pro's four CPU ops
  // 0.9, 0.9, 1.1, 0.9 us: median 0.9 (its MPS row left out); pytorch#41383's 6.8, 5 and 2 us: median 5
  const auto entries = load_corpus(KANSCALE_SOURCE_DIR "/validation/corpus", KANSCALE_SOURCE_DIR "/configs/gpus");
  std::map<std::string, double> got;
  for (const auto& s : dispatch_samples(entries)) got[s.entry] = s.ratio;
  REQUIRE(got.size() >= 3);
  CHECK(got["dispatch-devdiscuss-i9-11900k-add1"] == doctest::Approx(4.5));
  CHECK(got["dispatch-pytorch-issue-148219-m1-pro"] == doctest::Approx(0.9));
  CHECK(got["dispatch-pytorch-issue-41383-scalar-mul"] == doctest::Approx(5.0));
}

TEST_CASE("host costs on a GPU node from the dispatch prior: per dispatch, plus a launch per kernel; its error on the host alone") {
  const Cluster c = load_cluster(KANSCALE_SOURCE_DIR "/configs/clusters/dgx-a100.yaml");
  Workload w = load_workload(KANSCALE_SOURCE_DIR "/configs/workloads/default.yaml");
  REQUIRE(host_track_applies(c, w));
  Calibration cal = datasheet_calibration(c, w.precision);
  HostTerms h;
  h.per_dispatch_s = 3e-6;  // a hand figure, not the shipped prior's
  h.sigma = 0.5;
  h.from = "a hand prior";
  cal.default_host_terms = h;
  const Layout one{1, 1};
  const ReplayInput in = make_replay_input(c, w, cal, one, w.batch_per_gpu, 1);
  // by hand over the op list: an op torch dispatches (a torch_class) costs
  // 3 us on the host, a kernel 5 us more (the cluster's kernel_launch); a
  // kernel inside an autograd node (no class of its own) the launch alone
  double expected = 0;
  int dispatches = 0, kernels = 0;
  for (const Op& o : in.ops) {
    dispatches += !o.torch_class.empty();
    kernels += !o.host_only;
  }
  expected = dispatches * 3e-6 + kernels * c.gpu.kernel_launch_s;
  double host = 0;
  for (std::size_t i = 0; i < in.ops.size(); ++i) {
    const Op& o = in.ops[i];
    CAPTURE(o.name);
    CHECK(in.op_host_s[i] == doctest::Approx((o.torch_class.empty() ? 0.0 : 3e-6) + (o.host_only ? 0.0 : c.gpu.kernel_launch_s)));
    host += in.op_host_s[i];
  }
  CHECK(dispatches > kernels / 2);  // views and autograd nodes are dispatches too
  CHECK(host == doctest::Approx(expected));
  // a drawn model error of 2 scales the device's time and leaves the host's
  // (the dispatch prior's own draw, host_scale 1.5, scales the host's)
  Calibration drawn = cal;
  drawn.compute_scale = 2;
  drawn.host_scale = 1.5;
  const ReplayInput d = make_replay_input(c, w, drawn, one, w.batch_per_gpu, 1);
  for (std::size_t i = 0; i < in.ops.size(); ++i) {
    CHECK(d.op_time_s[i] == doctest::Approx(2 * in.op_time_s[i]));
    CHECK(d.op_host_s[i] == doctest::Approx(1.5 * in.op_host_s[i]));
  }
  // the CLI's edge gives the shipped prior, its spread on the host part
  const Calibration shipped = with_shipped_defaults(datasheet_calibration(c, w.precision), c, w);
  REQUIRE(shipped.default_host_terms);
  CHECK(shipped.default_host_terms->per_dispatch_s > 0);
  CHECK(shipped.host_prior_sigma == shipped.default_host_terms->sigma);
  CHECK(shipped.host_prior_sigma > 0);
}

TEST_CASE("priors: the dispatch prior's file section and its interval for one more CPU, by hand") {
  TempDir d;
  std::string path = d.write("priors.yaml",
             "kind: kanscale-priors\nfitted_from: []\nnccl:\n  bandwidth: {}\n  latency: {}\n"
             "dispatch:\n  per_op_us: {scope: class, median: 2.0, sigma: 0.5, df: 2, cpus: 3, from: [a, b, c]}\ndatasheet_error: {}\n");
  const NcclPriors p = load_nccl_priors(path);
  CHECK(p.dispatch_us.median == 2.0);
  CHECK(p.dispatch_us.systems == 3);
  CHECK(p.dispatch_us.from.size() == 3);
  // t(0.95; 2) = 2.919986 (tables) x 0.5 x sqrt(1 + 1/3) = 1.685739
  CHECK(p.dispatch_us.log_half_width(0.90) == doctest::Approx(2.919986 * 0.5 * std::sqrt(4.0 / 3.0)).epsilon(1e-5));
  path = d.write("bad.yaml",
             "kind: kanscale-priors\nfitted_from: []\nnccl:\n  bandwidth: {}\n  latency: {}\n"
             "dispatch:\n  per_op_us: {scope: class, median: 2.0, sigma: 0.5, df: 0, cpus: 3}\ndatasheet_error: {}\n");
  CHECK_THROWS_WITH_AS(load_nccl_priors(path), doctest::Contains("df"), InputError);
}

TEST_CASE("memory: the bytes live runs hold beyond the model, the error left (leave one shape out) and with none, by hand") {
  // shape A: 12 and 13 measured against 10 predicted; B: 25 against 20; C: 31 against 30.
  // measured - predicted: 2, 3, 5, 1: median 2.5 (the extra)
  // with none: RMS of ln 1.2, ln 1.3, ln 1.25, ln(31/30) = 0.195541
  // leave one shape out: A against the median of B's and C's (5, 1) = 3: ln(12/13), ln(13/13);
  // B against A's and C's (2, 3, 1) = 2: ln(25/22); C against A's and B's (2, 3, 5) = 3: ln(31/33); RMS 0.081635
  const std::vector<MemoryRun> runs = {{"A", 12, 10}, {"A", 13, 10}, {"B", 25, 20}, {"C", 31, 30}, {"D", 0, 5}};
  const MemoryLive m = fit_memory_live(runs);
  CHECK(m.runs == 4);  // D measured nothing
  CHECK(m.shapes == 3);
  CHECK(m.extra_bytes == doctest::Approx(2.5));
  CHECK(m.unwatched_sigma == doctest::Approx(0.195541).epsilon(1e-5));
  CHECK(m.loo_sigma == doctest::Approx(0.081635).epsilon(1e-5));
  // a model above every run: no extra (none is negative)
  CHECK(fit_memory_live({{"A", 8, 10}, {"B", 9, 10}}).extra_bytes == 0);
}

TEST_CASE("memory: an unwatched CPU answer borrows the shipped calibration's error with none; a GPU answer says it has no interval") {
  const Cluster cpu = load_cluster(KANSCALE_SOURCE_DIR "/configs/clusters/local-cpu.yaml");
  const Workload wk = load_workload(KANSCALE_SOURCE_DIR "/configs/workloads/local-kanscale.yaml");
  Calibration cal = load_calibration(KANSCALE_SOURCE_DIR "/configs/calibrations/local-cpu.yaml", cpu, wk.precision);
  // the shipped file's own live runs: its extra and its error with it
  CHECK(cal.memory_live_extra_bytes == 5504411.0);
  CHECK(with_shipped_defaults(cal, cpu, wk).memory_error_sigma == doctest::Approx(0.04692));
  // the same calibration as one that watched no job (microbenchmarks only)
  cal.live_terms.clear();
  cal.model_error_sigma = cal.memory_error_sigma = cal.memory_live_extra_bytes = 0;
  const Calibration u = with_shipped_defaults(cal, cpu, wk);
  CHECK(u.memory_error_sigma == doctest::Approx(0.2207));  // local-cpu.yaml's unwatched_memory_sigma
  CHECK(u.memory_source.find("UNWATCHED") != std::string::npos);
  // a datasheet GPU cluster: no GPU memory measured, no interval, and the reason
  const Cluster gpu = load_cluster(KANSCALE_SOURCE_DIR "/configs/clusters/dgx-a100.yaml");
  const Workload w = load_workload(KANSCALE_SOURCE_DIR "/configs/workloads/default.yaml");
  const Calibration g = with_shipped_defaults(datasheet_calibration(gpu, w.precision), gpu, w);
  CHECK(g.memory_error_sigma == 0);
  CHECK(g.memory_source.find("no interval") != std::string::npos);
}
