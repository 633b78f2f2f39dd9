// validate's comparison statistics on hand-made cases, and plan errors.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <tuple>

#include "formats/yaml_reader.hpp"
#include "measure/kernel_bench.hpp"
#include "measure/torch_run.hpp"
#include "temp_dir.hpp"
#include "validation/calibration_live.hpp"
#include "validation/compare.hpp"
#include "validation/report.hpp"
#include "validation/validate.hpp"

using namespace ks;

namespace {
CaseResult hand(int ranks, double pred_ms, std::vector<double> rounds_ms, bool over = false) {
  CaseResult r;
  r.c.ranks = ranks;
  r.c.widths = {4, 1};
  r.c.oversubscribed = over;
  r.predicted.iteration_s = pred_ms * 1e-3;
  r.predicted.compute_s = pred_ms * 1e-3;
  for (double m : rounds_ms) {
    Metrics x;
    x.iteration_s = m * 1e-3;
    x.compute_s = m * 1e-3;
    r.rounds.push_back(x);
  }
  r.live = median_of(r.rounds);
  r.noise_pct = 100 * round_spread(r.rounds, &Metrics::iteration_s) / r.live.iteration_s;
  return r;
}
}  // namespace

TEST_CASE("each rank's own median compute of a live run, its first iteration left out (by hand)") {
  // rank 0: first 9 ms (out), then 1, 3, 2 ms: median 2 ms; rank 1: first
  // 9 ms (out), then 4, 7, 5, 6 ms: median (5 + 6) / 2 = 5.5 ms; the
  // records come in any order
  TempDir d;
  auto rec = [](int rank, bool first, double ms) {
    return "{\"rank\": " + std::to_string(rank) + ", \"first_iteration\": " + (first ? "true" : "false") +
           ", \"compute_time_s\": " + std::to_string(ms * 1e-3) + "}";
  };
  const std::string f = d.write("live.json", "{\"iterations\": [" + rec(1, true, 9) + ", " + rec(0, true, 9) + ", " + rec(0, false, 1) + ", " +
                                                  rec(1, false, 4) + ", " + rec(0, false, 3) + ", " + rec(1, false, 7) + ", " +
                                                  rec(1, false, 5) + ", " + rec(0, false, 2) + ", " + rec(1, false, 6) + "], \"summary\": {}}");
  const auto m = rank_compute_medians(f);
  REQUIRE(m.size() == 2);
  CHECK(m[0] == doctest::Approx(2e-3).epsilon(1e-9));
  CHECK(m[1] == doctest::Approx(5.5e-3).epsilon(1e-9));
  // a run that records no per-step compute (PyTorch's) gives none
  CHECK(rank_compute_medians(d.write("torch.json", "{\"iterations\": [{\"rank\": 0, \"first_iteration\": false}], \"summary\": {}}")).empty());
}

TEST_CASE("the noise floor: a robust standard deviation of the rounds (hand calculation)") {
  std::vector<Metrics> rounds(3);
  rounds[0].iteration_s = 10;
  rounds[1].iteration_s = 10.5;
  rounds[2].iteration_s = 14;  // one odd round
  // median 10.5; absolute deviations 0.5, 0, 3.5; their median 0.5; x 1.4826
  CHECK(round_spread(rounds, &Metrics::iteration_s) == doctest::Approx(0.7413));
  CHECK(round_spread({rounds[0]}, &Metrics::iteration_s) == 0);
}

TEST_CASE("errors and their summary, by hand") {
  CHECK(pct_error(11, 10) == doctest::Approx(10.0));
  CHECK(pct_error(9, 10) == doctest::Approx(-10.0));
  CHECK(pct_of_iteration(0.002, 0.001, 0.010) == doctest::Approx(10.0));
  // medians of rounds: 10 (of 9, 10, 11) and 20 (of 20, 20, 21)
  const std::vector<CaseResult> rs = {hand(1, 11, {9, 10, 11}), hand(2, 18, {20, 20, 21}), hand(4, 100, {10, 10, 10}, true)};
  CHECK(rs[0].live.iteration_s == doctest::Approx(0.010));
  CHECK(rs[0].noise_pct == doctest::Approx(14.826));  // 1.4826 x median(|9-10|, 0, |11-10|) = 1.4826, over 10
  const auto s = summarize(rs);
  // iteration: |+10%| and |-10%|: mean 10, max 10 (the oversubscribed case is left out)
  CHECK(s[0].metric == "iteration time");
  CHECK(s[0].mean_abs_pct == doctest::Approx(10.0));
  CHECK(s[0].max_abs_pct == doctest::Approx(10.0));
}

TEST_CASE("speedups: every bucket cap of a 2-rank case is measured against the one one-rank run of its model and batch") {
  // one rank ran once (cap 1 MiB): 100 samples/s live, 110 predicted; two
  // ranks at caps 1 MiB and 16 KiB: 180 and 150 live, 200 and 190 predicted
  auto with = [](int ranks, double cap, double live, double pred) {
    CaseResult r = hand(ranks, 1, {1});
    r.c.bucket_cap_bytes = cap;
    r.live.samples_per_s = live;
    r.predicted.samples_per_s = pred;
    return r;
  };
  std::vector<CaseResult> rs = {with(1, 1048576, 100, 110), with(2, 1048576, 180, 200), with(2, 16384, 150, 190)};
  attach_speedups(rs);
  CHECK(rs[0].speedup_live == 0);  // the baseline itself
  CHECK(rs[1].speedup_live == doctest::Approx(1.8));
  CHECK(rs[1].speedup_predicted == doctest::Approx(200.0 / 110));
  CHECK(rs[2].speedup_live == doctest::Approx(1.5));
  CHECK(rs[2].speedup_predicted == doctest::Approx(190.0 / 110));
  // another batch has no baseline: no speedup
  rs[2].c.batch = 7;
  attach_speedups(rs);
  CHECK(rs[2].speedup_live == 0);
}

TEST_CASE("the bound: the mean, each case, and each case's noise floor") {
  ValidationPlan p;
  p.bound_mean_pct = 5;
  p.bound_max_pct = 10;
  std::string why;
  // errors 2% and -4%: mean 3% <= 5, each <= 10
  CHECK(judge({hand(1, 10.2, {10, 10, 10}), hand(2, 19.2, {20, 20, 20})}, p, &why));
  // mean 3.75%... one case at 12% > 10% and its noise (0%): exceeded
  CHECK_FALSE(judge({hand(1, 11.2, {10, 10, 10}), hand(2, 20, {20, 20, 20}), hand(2, 20, {20, 20, 20}), hand(2, 20, {20, 20, 20})}, p, &why));
  CHECK(why.find("exceeds the bound 10.0%") != std::string::npos);
  // the same 12% error within a 30% noise floor (rounds 8.5, 10, 11.5): accepted
  CHECK(judge({hand(1, 11.2, {8.5, 10, 11.5}), hand(2, 20, {20, 20, 20}), hand(2, 20, {20, 20, 20}), hand(2, 20, {20, 20, 20})}, p, &why));
  // a large error only in an oversubscribed case is not judged
  CHECK(judge({hand(1, 10, {10, 10, 10}), hand(4, 30, {10, 10, 10}, true)}, p, &why));
  // mean 8% > 5% with no noise: exceeded
  CHECK_FALSE(judge({hand(1, 10.8, {10, 10, 10}), hand(2, 21.6, {20, 20, 20})}, p, &why));
  CHECK(why.find("mean |error|") != std::string::npos);
}

TEST_CASE("plans with a missing file, an unknown backend or zero ranks fail before anything runs") {
  const std::string dir = "/tmp/kanscale-unit-plans";
  std::system(("mkdir -p " + dir).c_str());
  const std::string good = std::string("name: t\ncluster: ") + KANSCALE_SOURCE_DIR "/configs/clusters/local-cpu.yaml\ncalibration: " +
                           KANSCALE_SOURCE_DIR "/configs/calibrations/local-cpu.yaml\n"
                           "cases:\n  ranks: [1, 2]\n  widths: [[4, 8, 1]]\n  grid_sizes: [5]\n  batch_per_gpu: [16]\n  bucket_caps: [\"1MiB\"]\n";
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir + "/" + name) << text;
    return dir + "/" + name;
  };
  const ValidationPlan p = load_validation_plan(write("good.yaml", good));
  CHECK(p.cases.size() == 2);
  std::string missing = good;
  missing.replace(missing.find("local-cpu.yaml\ncalibration"), 14, "nonexistent.yaml");
  CHECK_THROWS_WITH_AS(load_validation_plan(write("m.yaml", missing)), doctest::Contains("key 'cluster': file"), InputError);
  CHECK_THROWS_WITH_AS(load_validation_plan(write("b.yaml", good + "backend: tpu\n")), doctest::Contains("key 'backend': unknown value \"tpu\""),
                       InputError);
  // Transports multiply the multi-rank cases; one rank runs once (no
  // communication: neither the transport nor the bucket cap changes it).
  std::string many = good;
  many.replace(many.find("bucket_caps: [\"1MiB\"]"), 21, "bucket_caps: [\"1MiB\", \"16KiB\"]\n  transports: [shm, tcp, tcp-slow]");
  const ValidationPlan pm = load_validation_plan(write("many.yaml", many));
  REQUIRE(pm.cases.size() == 1 + 2 * 3);
  CHECK(pm.cases[0].ranks == 1);
  CHECK(pm.cases[0].transport.empty());
  CHECK(pm.cases[0].bucket_cap_bytes == 1048576);  // the first cap
  CHECK(pm.cases.back().transport == "tcp-slow");
  CHECK(pm.cases.back().bucket_cap_bytes == 16384);
  std::string bad_t = good;
  bad_t.replace(bad_t.find("bucket_caps: [\"1MiB\"]"), 21, "bucket_caps: [\"1MiB\"]\n  transports: [infiniband]");
  CHECK_THROWS_WITH_AS(load_validation_plan(write("t.yaml", bad_t)), doctest::Contains("expected shm, tcp or tcp-slow, got \"infiniband\""),
                       InputError);
  // a broadcast sweep needs two ranks or more, and options
  const std::string meas = std::string("name: t\ncluster: ") + KANSCALE_SOURCE_DIR "/configs/clusters/local-cpu.yaml\n" +
                           "calibration:\n  measure:\n    ranks: 1\n    kernels: " + KANSCALE_SOURCE_DIR "/configs/measure/cpu-ci.yaml\n" +
                           "    broadcast: \"-b 8\"\ncases:\n  ranks: [1]\n  widths: [[4, 8, 1]]\n  grid_sizes: [5]\n" +
                           "  batch_per_gpu: [16]\n  bucket_caps: [\"1MiB\"]\n";
  CHECK_THROWS_WITH_AS(load_validation_plan(write("bc.yaml", meas)), doctest::Contains("key 'calibration.measure.broadcast': a broadcast sweep needs ranks of 2"),
                       InputError);
  std::string zero = good;
  zero.replace(zero.find("ranks: [1, 2]"), 13, "ranks: [0, 2]");
  CHECK_THROWS_WITH_AS(load_validation_plan(write("z.yaml", zero)), doctest::Contains("key 'cases.ranks[0]': must be at least 1"), InputError);
  std::system(("rm -rf " + dir).c_str());
}

namespace {
// In the repository root (the plans name their files from there) for the
// scope, back to the working directory however the test ends.
struct InSourceDir {
  char cwd[4096] = {};
  InSourceDir() {
    REQUIRE(getcwd(cwd, sizeof cwd) != nullptr);
    REQUIRE(chdir(KANSCALE_SOURCE_DIR) == 0);
  }
  ~InSourceDir() { (void)!chdir(cwd); }
};
}  // namespace

TEST_CASE("the shipped plans load, with the case counts their comments state") {
  const InSourceDir here;
  auto judged = [](const ValidationPlan& p) {
    int n = 0;
    for (const auto& c : p.cases) n += !c.oversubscribed;
    return n;
  };
  // local-cpu: one rank 3 widths x 2 grids x 2 batches = 12; two ranks 12 x 3 caps
  // x 3 transports = 108; four ranks (oversubscribed, shm only) 12 x 3 caps = 36
  const ValidationPlan local = load_validation_plan("validation/plans/local-cpu.yaml");
  CHECK(local.cases.size() == 12 + 108 + 36);
  CHECK(judged(local) == 120);
  CHECK(local.measure.transports == std::vector<std::string>{"shm", "tcp", "tcp-slow"});
  CHECK(!local.measure.broadcast.empty());
  // finisterrae3: one rank 3 x 2 = 6; 2, 4, 8 ranks x 6 x 2 caps = 36; and the published figures
  const ValidationPlan ft3 = load_validation_plan("validation/plans/finisterrae3.yaml");
  CHECK(ft3.cases.size() == 6 + 36);
  CHECK(ft3.published.enabled);
  // single-gpu: one rank, 3 widths x 2 grids x 2 batches, CUDA
  const ValidationPlan gpu = load_validation_plan("validation/plans/single-gpu.yaml");
  CHECK(gpu.cases.size() == 12);
  CHECK(gpu.backend == "cuda");
  const ValidationPlan ci = load_validation_plan("validation/plans/ci-small.yaml");
  CHECK(ci.cases.size() == 2);
  // the PyTorch plan of issue 27: 3 shapes x 3 batches at 1 rank, x 2 bucket
  // caps at 2: 9 + 18 = 27 judged cases (at least 24), batches 4 to 256,
  // judged over 3 runs with a group bias within +-5%
  const ValidationPlan torch = load_validation_plan("validation/plans/pytorch-cpu.yaml");
  CHECK(torch.cases.size() == 27);
  CHECK(torch.implementation == "pytorch");
  CHECK(torch.runs == 3);
  CHECK(torch.verdict.group_bias_pct == 5);
  std::set<std::int64_t> batches;
  std::set<double> caps;
  std::set<int> ranks;
  for (const auto& c : torch.cases) {
    batches.insert(c.batch);
    ranks.insert(c.ranks);
    if (c.ranks > 1) caps.insert(c.bucket_cap_bytes);
  }
  CHECK(*batches.begin() == 4);
  CHECK(*batches.rbegin() == 256);
  CHECK(caps.size() == 2);
  CHECK(ranks == std::set<int>{1, 2});
}

TEST_CASE("honest by construction: no validation case's layer is among its calibration's measured shapes") {
  // A layer shape is (batch, in, out, G, k). The calibration of a plan that
  // measures (calibration: measure:) comes from its kernel plan's shapes and
  // its live runs' layers; a case whose layer were among them would be
  // predicted from its own measurement.
  namespace fs = std::filesystem;
  using Shape = std::tuple<std::int64_t, std::int64_t, std::int64_t, int, int>;
  auto layers = [](const ValidationCase& c, int k) {
    std::vector<Shape> v;
    for (std::size_t l = 0; l + 1 < c.widths.size(); ++l) v.emplace_back(c.batch, c.widths[l], c.widths[l + 1], c.grid_size, k);
    return v;
  };
  int plans = 0;
  for (const auto& e : fs::directory_iterator(std::string(KANSCALE_SOURCE_DIR) + "/validation/plans")) {
    if (e.path().extension() != ".yaml") continue;
    const std::string cwd = fs::current_path();
    fs::current_path(KANSCALE_SOURCE_DIR);  // plans name their files from the repository root
    const ValidationPlan p = load_validation_plan(e.path().string());
    std::set<Shape> measured;
    // a PyTorch plan's calibration comes from configs/calibrate/pytorch-cpu.yaml
    // (its own measure: section, or the shipped file that plan made): the
    // op-class plan's every (widths, G, batch)
    std::string torch_ops = p.measure.enabled ? p.measure.torch_ops_plan : "";
    std::vector<ValidationCase> live = p.measure.live;
    if (torch_ops.empty() && p.implementation == "pytorch" && !p.datasheet) {
      const ValidationPlan shipped = load_validation_plan("configs/calibrate/pytorch-cpu.yaml", false);
      torch_ops = shipped.measure.torch_ops_plan;
      live = shipped.measure.live;
    }
    if (!torch_ops.empty()) {
      const TorchOpsPlan t = load_torch_ops_plan(torch_ops);
      for (const auto& w : t.widths)
        for (std::size_t l = 0; l + 1 < w.size(); ++l)
          for (int g : t.grid_sizes)
            for (std::int64_t b : t.batches) measured.emplace(b, w[l], w[l + 1], g, t.spline_order);
    } else if (p.measure.enabled) {
      for (const auto& s : load_kernel_plan(p.measure.kernels_plan).shapes) measured.emplace(s.batch, s.in, s.out, s.G, s.k);
    }
    for (const auto& lc : live)
      for (const auto& s : layers(lc, p.spline_order)) measured.insert(s);
    fs::current_path(cwd);
    if (measured.empty()) continue;
    ++plans;
    CAPTURE(e.path().string());
    for (const auto& c : p.cases) {
      CAPTURE(c.label());
      for (const auto& s : layers(c, p.spline_order)) CHECK(measured.count(s) == 0);
    }
  }
  CHECK(plans >= 4);  // ci-small, local-cpu, local-cpu-heldout, pytorch-cpu (and the GPU plans) measure
}

TEST_CASE("validate's two plots go through gnuplot: the scatter and the error per case render") {
  // gnuplot fails on a broken script (render_plots throws), so a script the
  // report would write broken fails here
  std::vector<CaseResult> rs = {hand(1, 10, {10, 10.2, 9.9}), hand(2, 12, {13, 13.5, 12.8}), hand(4, 9, {20, 21, 19}, true)};
  for (auto& r : rs) {
    r.live.iteration_s = r.rounds[1].iteration_s;
    r.noise_pct = 1.5;
  }
  rs[0].interval = Band{0.0095, 0.0105};
  const PlotSpec e = errors_plot(rs);
  REQUIRE(e.series.size() == 3);  // judged, oversubscribed, noise floor
  CHECK(e.series[2].points[1][2] == -1.5);
  CHECK(e.xmax == 3.5);
  const std::string dir = std::filesystem::temp_directory_path() / ("ks-plots-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::vector<std::string> names;
  for (const PlotSpec& p : {scatter_plot(rs), e}) {
    std::ofstream(dir + "/" + p.name + ".gp") << gnuplot_script(p);
    std::ofstream(dir + "/" + p.name + ".dat") << gnuplot_data(p);
    names.push_back(p.name);
  }
  if (!in_path("gnuplot")) {
    MESSAGE("gnuplot is not installed: the scripts are written but not rendered");
  } else {
    render_plots(dir, names);
    for (const auto& n : names) CHECK(std::filesystem::file_size(dir + "/" + n + ".svg") > 1000);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("op by op: live against predicted, per-parameter steps as one op, waits and communication left out") {
  // predicted: forward 1 ms, two Adam steps 0.2 + 0.3 ms, a wait, an all-reduce
  // on the communication track; live: forward 1.5 ms, Adam 0.6 ms, a
  // bucket copy the prediction lacks (left out: nothing to compare with)
  std::vector<TraceSlice> sim = {{0, 0, 1, "forward layer 0", "forward", 0, 1e-3, 0},
                                 {0, 0, 1, "adam layers.0.base_weight", "optimizer", 1e-3, 1.2e-3, 0},
                                 {0, 0, 1, "adam layers.0.spline_weight", "optimizer", 1.2e-3, 1.5e-3, 0},
                                 {0, 0, 1, "wait for all-reduce", "wait", 1.5e-3, 2e-3, 0},
                                 {0, 1, 1, "allreduce bucket 0", "comm", 1e-3, 2e-3, 64}};
  std::vector<TraceSlice> live = {{0, 0, 1, "forward layer 0", "forward", 0, 1.5e-3, 0},
                                  {0, 0, 1, "adam", "optimizer", 1.5e-3, 2.1e-3, 0},
                                  {0, 0, 1, "bucket_copy x", "grad_copy", 2.1e-3, 2.2e-3, 0}};
  const auto ops = op_comparison(sim, live);
  REQUIRE(ops.size() == 2);
  CHECK(ops[0].op == "forward layer 0");  // the largest live first
  CHECK(ops[0].live_s / ops[0].predicted_s == doctest::Approx(1.5));
  CHECK(ops[1].op == "adam");
  CHECK(ops[1].predicted_s / 0.5e-3 == doctest::Approx(1.0));  // 0.2 + 0.3 ms
  CHECK(ops[1].live_s / 0.6e-3 == doctest::Approx(1.0));
}

TEST_CASE("a live term is kept only where (factor, overhead) differs from (1, 0) at 95%, with the fit's covariance") {
  LinearFit f;
  f.features = {"compute_factor", "host_overhead_s"};
  f.active = {true, true};
  auto set = [&](double k, double h, double se_k, double se_h, double rho) {
    f.coef = {k, h};
    f.std_err = {se_k, se_h};
    f.cov = {{se_k * se_k, rho * se_k * se_h}, {rho * se_k * se_h, se_h * se_h}};
  };
  // uncorrelated: W = (0.10 / 0.034)^2 = 8.65 > 5.991
  set(1.10, 0.0, 0.034, 1e-5, 0.0);
  CHECK(live_term_differs_from_none(f));
  // W = (0.075 / 0.055)^2 = 1.86
  set(0.925, 0.0, 0.055, 1e-5, 0.0);
  CHECK_FALSE(live_term_differs_from_none(f));
  // each term alone within 1.96 standard errors (1.5 and 1.5), but strongly
  // anti-correlated while both are up: W = (1.5^2 + 2 x 0.9 x 2.25 + 1.5^2)
  // / (1 - 0.81) = 8.55 / 0.19 = 45 > 5.991
  set(1.15, 15e-6, 0.1, 10e-6, -0.9);
  CHECK(live_term_differs_from_none(f));
  // the same with the correlation positive: W = (4.5 - 4.05) / 0.19 = 2.37
  set(1.15, 15e-6, 0.1, 10e-6, 0.9);
  CHECK_FALSE(live_term_differs_from_none(f));
  // a term the fit dropped: one degree of freedom, (0.10 / 0.04)^2 = 6.25 > 3.841
  set(1.10, 0.0, 0.04, 0.0, 0.0);
  f.active = {true, false};
  CHECK(live_term_differs_from_none(f));
  set(1.07, 0.0, 0.04, 0.0, 0.0);  // (0.07 / 0.04)^2 = 3.06
  CHECK_FALSE(live_term_differs_from_none(f));
}

TEST_CASE("the schedule starts the calibration's live runs as it starts the cases: the plan's threads per rank in both") {
  // local-cpu's plan has live calibration shapes and cases; at 2 threads a
  // rank every train job, calibration run or case, says --threads 2 and
  // counts 2 CPUs a rank
  const InSourceDir here;
  ValidationPlan p = load_validation_plan("validation/plans/local-cpu.yaml");
  p.threads_per_rank = 2;
  int calibration_runs = 0, cases = 0;
  for (const auto& round : make_schedule(p))
    for (const Job& j : round) {
      if (j.args.empty() || j.args[0] != "train") continue;
      CAPTURE(j.what);
      const auto at = std::find(j.args.begin(), j.args.end(), "--threads");
      REQUIRE(at != j.args.end());
      REQUIRE(at + 1 != j.args.end());
      CHECK(*(at + 1) == "2");
      CHECK(j.threads_per_rank == 2);
      (j.what.rfind("calibration run", 0) == 0 ? calibration_runs : cases) += 1;
    }
  CHECK(calibration_runs > 0);
  CHECK(cases > 0);
}

TEST_CASE("the schedule runs kanscale's live calibration runs of a rank count and transport under one mpirun, every run once") {
  // configs/calibrate/local-cpu.yaml: 3 widths x 3 batches at 1 rank (no
  // transport) and at 2 ranks over shm, tcp and tcp-slow: 9 + 27 runs a
  // round, in 1 + 3 jobs of 9
  const InSourceDir here;
  const ValidationPlan p = load_validation_plan("configs/calibrate/local-cpu.yaml", false);
  REQUIRE(p.measure.live.size() == 36);
  const auto rounds = make_schedule(p);
  for (int r = 0; r < p.rounds; ++r) {
    std::map<std::string, int> seen;  // each run's --json: how often a job names it
    int jobs = 0;
    for (const Job& j : rounds[static_cast<std::size_t>(r)]) {
      if (j.what.rfind("calibration run", 0) != 0) continue;
      ++jobs;
      int workloads = 0;
      std::string last_json;
      for (std::size_t k = 0; k + 1 < j.args.size(); ++k) {
        if (j.args[k] == "--workload") ++workloads;
        if (j.args[k] == "--json") ++seen[last_json = j.args[k + 1]];
      }
      CAPTURE(j.what);
      CHECK(workloads == 9);
      // every run of the job has the job's ranks and transport
      for (std::size_t c = 0; c < p.measure.live.size(); ++c)
        if (std::find(j.args.begin(), j.args.end(), live_cal_workload(c)) != j.args.end()) {
          CHECK(p.measure.live[c].ranks == j.ranks);
          CHECK(p.measure.live[c].transport == j.transport);
        }
      CHECK(j.output == last_json);  // the job is done when its last run is
    }
    CHECK(jobs == 4);
    CHECK(seen.size() == 36);
    for (std::size_t c = 0; c < 36; ++c) CHECK(seen[live_cal_file(c, r)] == 1);
  }
}

TEST_CASE("the GPU node's PyTorch plan: profiled 1-GPU runs, NCCL through torch.distributed beyond one GPU, its live runs") {
  // configs/calibrate/pytorch-gpu.yaml: 3 widths x 2 batches profiled (one
  // GPU each, 4 steps: the trace's wait 1, warm-up 2, active 3 come after),
  // 2 widths x 2 batches live at 1 GPU in one job; one H200: no sweep
  const InSourceDir here;
  ValidationPlan p = load_validation_plan("configs/calibrate/pytorch-gpu.yaml", false);
  CHECK(p.backend == "cuda");
  CHECK(p.measure.transports == std::vector<std::string>{"nccl"});
  REQUIRE(p.measure.profile.size() == 6);
  auto count = [](const std::vector<Job>& jobs, const std::string& what) {
    return std::count_if(jobs.begin(), jobs.end(), [&](const Job& j) { return j.what.rfind(what, 0) == 0; });
  };
  auto rounds = make_schedule(p);
  REQUIRE(rounds.size() == 2);
  for (const auto& r : rounds) {
    CHECK(count(r, "profiled run") == 6);
    CHECK(count(r, "calibration runs np1") == 1);
    CHECK(count(r, "all-reduce sweep") == 0);
    for (const Job& j : r) {
      CHECK(j.self_launched);
      CHECK(std::find(j.args.begin(), j.args.end(), "cuda") != j.args.end());
      if (j.what.rfind("profiled run", 0) == 0) CHECK(std::find(j.args.begin(), j.args.end(), "--profile") != j.args.end());
    }
  }
  // a node of 8 GPUs: the all-reduce sweep on all of them, over NCCL through torch.distributed
  p.measure.ranks = 8;
  rounds = make_schedule(p);
  REQUIRE(count(rounds[0], "all-reduce sweep nccl") == 1);
  for (const Job& j : rounds[0])
    if (j.what == "all-reduce sweep nccl") {
      CHECK(j.ranks == 8);
      const auto b = std::find(j.args.begin(), j.args.end(), "--backend");
      REQUIRE(b + 1 < j.args.end());
      CHECK(*(b + 1) == "torch-nccl");
    }
  // a GPU plan's op classes come from its profiled runs, a CPU plan's from torch_ops
  TempDir dir;
  const std::string bad = dir.write("bad.yaml", "name: b\ncluster: " + std::string(KANSCALE_SOURCE_DIR) +
                                                    "/configs/clusters/single-h200.yaml\nbackend: cuda\nimplementation: pytorch\n"
                                                    "calibration:\n  measure:\n    torch_ops: x.yaml\n");
  CHECK_THROWS_WITH_AS(load_validation_plan(bad, false), doctest::Contains("bad.yaml"), InputError);
  CHECK_THROWS_WITH_AS(load_validation_plan(bad, false), doctest::Contains("torch_ops"), InputError);
}

TEST_CASE("validate --calibration DIR: each case judged by its transport's calibration, one-rank cases by the first multi-rank case's") {
  const InSourceDir here;
  ValidationPlan p = load_validation_plan("validation/plans/local-cpu-cases.yaml");
  p.calibration_dir = "cal";
  std::set<std::string> used;
  for (const auto& c : p.cases) {
    const std::string f = calibration_label(p, "", c);
    used.insert(f);
    CAPTURE(c.label());
    CHECK(f == "cal/calibration-" + (c.ranks > 1 ? c.transport : std::string("shm")) + ".yaml");  // shm: the plan's first transport
  }
  CHECK(used.size() == 3);
}

TEST_CASE("the error per rank count: each count's judged cases, the oversubscribed apart") {
  // by hand, error = (predicted - measured) / measured:
  //   1 rank:  10 ms against 8 ms: +25%; 12 ms against 12 ms: 0%  -> mean |e| 12.5%, signed +12.5%
  //   2 ranks: 9 ms against 10 ms: -10%, interval [9.5, 10.5] ms holds 10 ms -> 1 of 1
  //   4 ranks, oversubscribed: 20 ms against 25 ms: -20% (kept apart, not judged)
  std::vector<CaseResult> rs = {hand(1, 10, {8}), hand(1, 12, {12}), hand(2, 9, {10}), hand(4, 20, {25}, true)};
  rs[2].interval = Band{0.0095, 0.0105};
  const auto rows = per_rank_count(rs);
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].ranks == 1);
  CHECK(rows[0].judged == 2);
  CHECK(rows[0].mean_abs_pct == doctest::Approx(12.5));
  CHECK(rows[0].mean_signed_pct == doctest::Approx(12.5));
  CHECK(rows[0].coverage.cases == 0);
  CHECK(rows[1].ranks == 2);
  CHECK(rows[1].mean_signed_pct == doctest::Approx(-10.0));
  CHECK(rows[1].coverage.cases == 1);
  CHECK(rows[1].coverage.inside == 1);
  CHECK(rows[2].ranks == 4);
  CHECK(rows[2].judged == 0);
  CHECK(rows[2].oversubscribed == 1);
  CHECK(rows[2].oversubscribed_mean_abs_pct == doctest::Approx(20.0));
}
