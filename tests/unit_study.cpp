#include <algorithm>
#include <doctest/doctest.h>

#include "model/statistics.hpp"
#include "formats/yaml_reader.hpp"
#include "sim/report.hpp"
#include "study/result_codec.hpp"
#include "study/scenario.hpp"
#include "study/settings.hpp"
#include "study/posterior.hpp"
#include "study/study_published.hpp"
#include "sim/point.hpp"
#include "formats/config_files.hpp"

using namespace ks;

namespace {
// A cluster whose network is effectively free, so every iteration costs the
// same compute T at any N and speedups come from the epoch arithmetic alone.
const char* kFreeNet = R"(
name: freenet
nodes: 4
gpus_per_node: 2
gpu: {model: test, compute_capability: 8.0, fp32: "10TFLOP/s", memory_bandwidth: "1000GB/s",
      memory: "16GiB", kernel_launch: "5us", runtime_memory: "0B"}
intra_node: {kind: shm, bandwidth: "1000000PB/s", latency: "0s"}
network: {nics_per_node: 1, nic_bandwidth: "1000000PB/s", latency: "0s"}
collectives: {family: mpi, version: "test"}
)";
const char* kWork = R"(
name: tiny
kan: {widths: [4, 8, 1]}
batch_per_gpu: 100
global_batch: 400
dataset_size: 1000
epochs: 2
seed: 3
)";
}  // namespace

TEST_CASE("strong scaling: speedup and efficiency on a hand-checked case") {
  const Cluster c = parse_cluster(kFreeNet, "freenet.yaml");
  const Workload w = parse_workload(kWork, "tiny.yaml");
  const Calibration k = datasheet_calibration(c, w.precision);
  StudyOptions o;
  o.gpus = {1, 2, 4};
  const auto r = run_study(c, w, k, o);
  // iterations per epoch: ceil(ceil(1000/N)/100) = 10, 5, 3 (N=4 pads 250 -> 3 batches)
  CHECK(r.points[0].iterations_per_epoch == 10);
  CHECK(r.points[1].iterations_per_epoch == 5);
  CHECK(r.points[2].iterations_per_epoch == 3);
  const double T = r.points[0].iteration_s.median;
  CHECK(r.points[2].iteration_s.median == doctest::Approx(T).epsilon(1e-9).scale(0));  // (T ~ 1e-5 s: relative)
  // speedup = epoch(1) / epoch(N) = 10T / 3T; efficiency = speedup / 4
  CHECK(r.points[2].speedup == doctest::Approx(10.0 / 3.0));
  CHECK(r.points[2].efficiency == doctest::Approx(10.0 / 12.0));
  CHECK(r.points[1].speedup == doctest::Approx(2.0));
  // time to train 2 epochs at N=2: the job's fixed costs (no job: keys, so
  // the mpi family's documented default: 0.31 s start-up, no communicator
  // cost; docs/models.md) + first iteration + (2*5 - 1) steady ones
  CHECK(r.points[1].job_fixed_s == doctest::Approx(0.31));
  CHECK(r.points[1].time_to_train_s == doctest::Approx(0.31 + r.points[1].first_iteration_s.median + 9 * T).scale(0));
  CHECK(r.points[1].gpu_hours == doctest::Approx(2 * r.points[1].time_to_train_s / 3600));
  CHECK(r.points[1].samples_per_s == doctest::Approx(200 / T));
  CHECK(r.points[0].overhead_exposed == doctest::Approx(0.0).epsilon(1e-9));
}

TEST_CASE("a job's fixed costs: the cluster's own start-up and communicator set-up, once per job") {
  // job: startup 2 s, communicator 1 s + 0.5 s per rank: at N=1 2 s (no
  // communicator), at N=4 2 + 1 + 4 x 0.5 = 5 s, added to the time to train
  // and to no iteration or epoch
  const std::string text = std::string(kFreeNet) +
                           "job: {startup: \"2s\", communicator_init: \"1s\", communicator_init_per_rank: \"0.5s\", source: \"test\"}\n";
  const Cluster c = parse_cluster(text, "freenet.yaml");
  const Workload w = parse_workload(kWork, "tiny.yaml");
  const Calibration k = datasheet_calibration(c, w.precision);
  StudyOptions o;
  o.gpus = {1, 4};
  const auto r = run_study(c, w, k, o);
  CHECK(r.points[0].job_fixed_s == doctest::Approx(2.0));
  CHECK(r.points[1].job_fixed_s == doctest::Approx(5.0));
  const double T = r.points[1].iteration_s.median;  // 2 epochs of 3 iterations at N=4
  CHECK(r.points[1].time_to_train_s == doctest::Approx(5.0 + r.points[1].first_iteration_s.median + 5 * T).scale(0));
  CHECK(r.points[1].epoch_s == doctest::Approx(3 * T).epsilon(1e-9).scale(0));
  // the defaults by family when the file has no job: keys (docs/models.md)
  CHECK(job_costs_default(CollFamily::nccl).total(8) == doctest::Approx(0.78 + 1.3625 + 8 * 0.084375));
  CHECK(job_costs_default(CollFamily::gloo).total(1) == doctest::Approx(0.78));
  // a bad value: one line naming the key
  CHECK_THROWS_WITH_AS(parse_cluster(std::string(kFreeNet) + "job: {startup: \"25h\", source: \"x\"}\n", "c.yaml"),
                       doctest::Contains("job.startup"), InputError);
  CHECK_THROWS_WITH_AS(parse_cluster(std::string(kFreeNet) + "job: {startup: \"2s\"}\n", "c.yaml"), doctest::Contains("source"),
                       InputError);
}

TEST_CASE("a batch per GPU the dataset shrinks is named, in the warnings and nowhere silently") {
  // tiny: batch 100, 1000 samples. N=8: ceil(1000/8) = 125 per rank, still
  // batches of 100 (no note); the cluster's 8 GPUs are its most, so N=8 with
  // batch 200: 125 < 200, one batch of 125 per epoch.
  const Cluster c = parse_cluster(kFreeNet, "freenet.yaml");
  Workload w = parse_workload(kWork, "tiny.yaml");
  const Calibration k = datasheet_calibration(c, w.precision);
  StudyOptions o;
  o.gpus = {1, 8};
  auto r = run_study(c, w, k, o);
  CHECK(r.points[1].batch_per_gpu == 100);
  CHECK(r.warnings.empty());
  w.batch_per_gpu = 200;
  r = run_study(c, w, k, o);
  CHECK(r.points[1].batch_per_gpu == 125);
  REQUIRE(r.warnings.size() == 1);
  CHECK(r.warnings[0] == "N=8: batch per GPU 125, not the workload's 200: the dataset's 1000 samples over 8 GPUs leave each "
                         "ceil(1000/8) = 125 per epoch, one iteration of 125");
  // strong-global-batch asks for global / N: 400 / 8 = 50, which 125 samples hold: no note
  o.scaling = Scaling::strong_global_batch;
  CHECK(batch_change_note(w, o.scaling, run_study(c, w, k, o).points[1]).empty());
}

TEST_CASE("a per-epoch fixed cost does not scale: Amdahl's law on the hand-checked case") {
  // The case above with epoch_overhead E = 10 T (T: the iteration, the same
  // at any N): epochs of 10T + E = 20T at 1 GPU, 3T + E = 13T at 4, so the
  // speedup falls from 10/3 to 20/13; 2 epochs at N=2 add 2E to the time
  // to train.
  const Cluster c = parse_cluster(kFreeNet, "freenet.yaml");
  Workload w = parse_workload(kWork, "tiny.yaml");
  const Calibration k = datasheet_calibration(c, w.precision);
  StudyOptions o;
  o.gpus = {1, 2, 4};
  const double T = run_study(c, w, k, o).points[0].iteration_s.median;
  w.epoch_overhead_s = 10 * T;
  const auto r = run_study(c, w, k, o);
  auto rel = [](double x) { return doctest::Approx(x).epsilon(1e-9).scale(0); };
  CHECK(r.points[0].epoch_s == rel(20 * T));
  CHECK(r.points[2].epoch_s == rel(13 * T));
  CHECK(r.points[2].speedup == rel(20.0 / 13.0));
  CHECK(r.points[2].efficiency == rel(20.0 / 52.0));
  CHECK(r.points[1].time_to_train_s == rel(0.31 + r.points[1].first_iteration_s.median + 9 * T + 2 * 10 * T));  // 0.31 s: as above
  // the iteration itself is unchanged
  CHECK(r.points[2].iteration_s.median == rel(T));
  // and the workload key reads as a time
  const Workload w2 = parse_workload(std::string(kWork) + "epoch_overhead: \"2.5s\"\n", "w2.yaml");
  CHECK(w2.epoch_overhead_s == 2.5);
}

TEST_CASE("weak scaling grows the dataset; strong-global-batch splits the batch") {
  const Cluster c = parse_cluster(kFreeNet, "freenet.yaml");
  const Workload w = parse_workload(kWork, "tiny.yaml");
  const Calibration k = datasheet_calibration(c, w.precision);
  StudyOptions o;
  o.gpus = {4};
  o.scaling = Scaling::weak;
  const auto weak = run_study(c, w, k, o);
  CHECK(weak.points[0].dataset_size == 4000);
  CHECK(weak.points[0].iterations_per_epoch == 10);
  CHECK(weak.points[0].speedup == doctest::Approx(4.0));  // N * epoch(1)/epoch(N), equal epochs
  CHECK(weak.points[0].efficiency == doctest::Approx(1.0));
  o.scaling = Scaling::strong_global_batch;
  const auto gb = run_study(c, w, k, o);
  CHECK(gb.points[0].batch_per_gpu == 100);  // 400 / 4
  o.gpus = {3};
  o.gpus_per_node = 1;  // 3 nodes of 1 fit, but 400 samples do not split over 3
  CHECK_THROWS_WITH_AS(run_study(c, w, k, o), doctest::Contains("cannot be split evenly over 3 GPUs"), InputError);
  o.gpus = {8};  // 8 nodes of 1 > the cluster's 4
  CHECK_THROWS_WITH_AS(run_study(c, w, k, o), doctest::Contains("needs 8 nodes"), InputError);
}

TEST_CASE("strong scaling past the data: a rank never runs a batch larger than its shard") {
  const Cluster c = parse_cluster(kFreeNet, "freenet.yaml");
  Workload w = parse_workload(kWork, "tiny.yaml");
  w.dataset_size = 300;  // at N=8: ceil(300/8) = 38 samples per rank < batch 100
  StudyOptions o;
  o.gpus = {8};
  const auto r = run_study(c, w, datasheet_calibration(c, w.precision), o);
  CHECK(r.points[0].batch_per_gpu == 38);
  CHECK(r.points[0].iterations_per_epoch == 1);
  CHECK(r.points[0].samples_per_s == doctest::Approx(8 * 38 / r.points[0].iteration_s.median));
}

TEST_CASE("layouts: up to a node's GPUs on one node, above that whole nodes") {
  const Cluster c = parse_cluster(kFreeNet, "freenet.yaml");
  CHECK(layout_for(c, 1, std::nullopt).nodes == 1);
  CHECK(layout_for(c, 2, std::nullopt).nodes == 1);
  CHECK(layout_for(c, 8, std::nullopt).nodes == 4);
  CHECK_THROWS_WITH_AS(layout_for(c, 3, std::nullopt), doctest::Contains("fill whole nodes"), InputError);
  CHECK(layout_for(c, 3, 1).nodes == 3);
  CHECK_THROWS_WITH_AS(layout_for(c, 10, std::nullopt), doctest::Contains("has 4"), InputError);
  CHECK_THROWS_AS(layout_for(c, 0, std::nullopt), InputError);
  CHECK_THROWS_WITH_AS(layout_for(c, 2, 3), doctest::Contains("GPUs per node"), InputError);
}

TEST_CASE("same seed: byte-identical JSON; the seed is in the output") {
  const Cluster c = load_cluster(KANSCALE_SOURCE_DIR "/configs/clusters/finisterrae3.yaml");
  const Workload w = load_workload(KANSCALE_SOURCE_DIR "/configs/workloads/default.yaml");
  // (a pytorch workload on an NCCL cluster: the shipped host terms, passed in as the CLI does)
  Calibration k = with_default_host_terms(datasheet_calibration(c, w.precision), c, w);
  k.jitter_sigma = 0.05;
  k.interference = 0.1;
  StudyOptions o;
  o.gpus = {2, 8};
  o.seed = 11;
  RunInfo info{"test", &c, &w, &k, o, ""};
  const std::string a = study_json(run_study(c, w, k, o), info).dump(2);
  const std::string b = study_json(run_study(c, w, k, o), info).dump(2);
  CHECK(a == b);
  CHECK(a.find("\"seed\": 11") != std::string::npos);
  o.seed = 12;
  RunInfo info2{"test", &c, &w, &k, o, ""};
  CHECK(study_json(run_study(c, w, k, o), info2).dump(2) != a);
}

TEST_CASE("a model too large for the GPU gets a clear warning") {
  const Cluster c = parse_cluster(kFreeNet, "freenet.yaml");
  Workload w = parse_workload(kWork, "tiny.yaml");
  w.widths = {4096, 4096, 4096, 1};  // 2 * 4096^2 * 10 floats ~ 1.25 GiB of params, x4 with grads/Adam...
  w.batch_per_gpu = 4096;            // ... and ~16 GiB of activations
  w.dataset_size = 1000000;
  StudyOptions o;
  o.gpus = {2};
  const auto r = run_study(c, w, datasheet_calibration(c, w.precision), o);
  REQUIRE(r.warnings.size() == 1);
  CHECK(r.warnings[0].find("exceeds") != std::string::npos);
}

TEST_CASE("the runtime's memory grows per other rank of the node, not per rank elsewhere (hand calculation)") {
  const Cluster c = parse_cluster(kFreeNet, "freenet.yaml");  // 2 GPUs per node
  const Workload w = parse_workload(kWork, "tiny.yaml");
  Calibration k = datasheet_calibration(c, w.precision);
  k.runtime_memory_bytes = 7e6;
  k.runtime_memory_per_local_peer_bytes = 5e6;
  StudyOptions o;
  o.gpus = {1, 2, 4};
  o.scaling = Scaling::weak;  // the same batch per rank: only the runtime term differs
  const auto r = run_study(c, w, k, o);
  // 1 rank: 7 MB; 2 and 4 ranks, 2 per node: 7 + 5 x (2 - 1) = 12 MB
  CHECK(r.points[0].memory.runtime_bytes == doctest::Approx(7e6));
  CHECK(r.points[1].memory.runtime_bytes == doctest::Approx(12e6));
  CHECK(r.points[2].memory.runtime_bytes == doctest::Approx(12e6));
  CHECK(r.points[1].memory.peak_bytes - r.points[0].memory.peak_bytes == doctest::Approx(5e6));
  // with the library's copy of every bucket in flight (1.5 x the gradients):
  // none on one rank; 1.5 x 4 B x the parameters on more
  k.memory_collective_in_flight = 1.5;
  const auto f = run_study(c, w, k, o);
  CHECK(f.points[0].memory.collective_bytes == 0);
  CHECK(f.points[1].memory.collective_bytes == doctest::Approx(1.5 * 4.0 * static_cast<double>(f.parameters)));
  CHECK(f.points[1].memory.peak_bytes - r.points[1].memory.peak_bytes == doctest::Approx(f.points[1].memory.collective_bytes));
}

TEST_CASE("study results survive their bytes exactly (the mpirun gather); bad bytes are refused") {
  const Cluster c = load_cluster(KANSCALE_SOURCE_DIR "/configs/clusters/finisterrae3.yaml");
  const Workload w = load_workload(KANSCALE_SOURCE_DIR "/configs/workloads/default.yaml");
  // (a pytorch workload on an NCCL cluster: the shipped host terms, passed in as the CLI does)
  Calibration k = with_default_host_terms(datasheet_calibration(c, w.precision), c, w);
  k.jitter_sigma = 0.05;  // measured uncertainty: bands
  StudyOptions o;
  o.gpus = {1, 2, 8};
  o.trace = true;  // trace slices too
  o.interval_samples = 5;
  const std::vector<StudyResult> rs = {run_study(c, w, k, o), run_study(c, w, with_default_host_terms(datasheet_calibration(c, w.precision), c, w), o)};
  const std::string bytes = encode_results(rs);
  const std::vector<StudyResult> back = decode_results(bytes);
  CHECK(encode_results(back) == bytes);
  // what the outputs print: the same JSON, bands included
  for (std::size_t i = 0; i < rs.size(); ++i) {
    RunInfo info{"test", &c, &w, &k, o, ""};
    CHECK(study_json(back[i], info).dump(2) == study_json(rs[i], info).dump(2));
  }
  REQUIRE(back[0].points[1].iteration_band.has_value());
  CHECK_FALSE(back[1].points[1].iteration_band.has_value());
  CHECK(back[0].points[1].trace.size() == rs[0].points[1].trace.size());
  CHECK_THROWS(decode_results(bytes.substr(0, bytes.size() - 3)));
  CHECK_THROWS(decode_results(bytes + "x"));
  CHECK_THROWS(decode_results("not results at all"));
}

namespace {
// FinisTerrae III, datasheet calibration (no measured noise), strong
// scaling to 8 GPUs, with `unknowns` as given.
StudySpec ft3_study(const std::string& unknowns, const std::string& extra = "") {
  const std::string src = KANSCALE_SOURCE_DIR;
  return parse_study("name: u\nseed: 1\niterations: 3\nworkload: " + src + "/configs/workloads/default.yaml\nclusters:\n  - file: " + src +
                         "/configs/clusters/finisterrae3.yaml\nsweep:\n  gpus: [1, 2, 4, 8]\n  scaling: [strong]\n" + unknowns + extra,
                     "u.yaml", 1e9);
}
const ScalingPoint::ScenarioBands& band_at(const std::vector<StudyResult>& r, std::size_t point) {
  REQUIRE(r.front().points[point].scenario.has_value());
  return *r.front().points[point].scenario;
}
}  // namespace

TEST_CASE("scenario bands widen when an unknown's range widens, and collapse to the point prediction without range or noise") {
  // the per-epoch fixed cost over [0, 1 s] and over [0, 5 s]: the wider range
  // holds the narrower one's band and reaches lower speedups (Amdahl)
  const StudySpec narrow = ft3_study("unknowns: {samples: 4, epoch_overhead: [0s, 1s]}\n");
  const StudySpec wide = ft3_study("unknowns: {samples: 4, epoch_overhead: [0s, 5s]}\n");
  const auto rn = run_scenarios(narrow, 0, 1), rw = run_scenarios(wide, 0, 1);
  const auto& n8 = band_at(rn, 3);
  const auto& w8 = band_at(rw, 3);
  CHECK(w8.speedup.lo < n8.speedup.lo);
  CHECK(w8.speedup.hi >= n8.speedup.hi);
  CHECK(w8.epoch_s.hi > n8.epoch_s.hi);
  CHECK(rn.front().unknown_samples == 2 + 4);  // two corners, four inside
  // the same for a network factor and for the batch (whose band moves the
  // iteration time itself)
  // (from 1,024 samples down the host's dispatch bounds a step on an A100: a
  // batch band starting there reaches lower than one starting at 4,096)
  const auto b1 = run_scenarios(ft3_study("unknowns: {samples: 2, batch_per_gpu: [4096, 8192]}\n"), 0, 1);
  const auto b2 = run_scenarios(ft3_study("unknowns: {samples: 2, batch_per_gpu: [1024, 8192]}\n"), 0, 1);
  CHECK(band_at(b2, 3).iteration_s.lo < band_at(b1, 3).iteration_s.lo);
  // the wider range's overhead band holds the narrower one's (how much of
  // the wait the host's dispatch hides at 1,024 depends on the host costs)
  CHECK(band_at(b2, 3).overhead_exposed.lo <= band_at(b1, 3).overhead_exposed.lo);
  CHECK(band_at(b2, 3).overhead_exposed.hi >= band_at(b1, 3).overhead_exposed.hi);
  // no range (one value) and the datasheet's no noise: every band is the point
  const StudySpec point = ft3_study("unknowns: {samples: 3, epoch_overhead: [0.5s, 0.5s], host_overhead: [20us, 20us]}\n");
  const auto rp = run_scenarios(point, 0, 1);
  for (const auto& p : rp.front().points) {
    REQUIRE(p.scenario.has_value());
    const auto& b = *p.scenario;
    CHECK(b.speedup.lo == p.speedup);
    CHECK(b.speedup.hi == p.speedup);
    CHECK(b.iteration_s.lo == p.iteration_s.median);
    CHECK(b.iteration_s.hi == p.iteration_s.median);
    CHECK(b.epoch_s.lo == p.epoch_s);
    CHECK(b.epoch_s.hi == p.epoch_s);
    CHECK(b.overhead_exposed.lo == p.overhead_exposed);
  }
  // and that point is the prediction at the unknowns' values
  StudySpec plain = ft3_study("");
  plain.scenarios[0].workload.epoch_overhead_s = 0.5;
  plain.scenarios[0].calibration.host_overhead_s += 20e-6;
  const auto rq = run_scenarios(plain, 0, 1);
  // (to rounding: "20us" parses as 20 x 1e-6, one ulp from the literal 20e-6)
  CHECK(rq.front().points[3].speedup == doctest::Approx(rp.front().points[3].speedup).epsilon(1e-12));
  CHECK_FALSE(rq.front().points[3].scenario.has_value());
}

TEST_CASE("published figures: inside or outside the band, the band's half-width, what each unknown alone needs") {
  // Speedup at 8 GPUs with a per-epoch fixed cost E in [0, 30 s] (the point
  // prediction at E = 0): the speedup falls as E grows, so a published
  // speedup below the point prediction and above the band's low end is
  // inside, and E alone reaches it at some E* in (0, 30 s]: the narrowest
  // range is [0, E*]. At E*, (epoch_1 + E*) / (epoch_8 + E*) = published.
  const StudySpec s = ft3_study("unknowns: {samples: 2, epoch_overhead: [0s, 30s]}\n",
                                "published: {source: test, gpus: 8, speedup: 5.0, efficiency_pct: 62.5}\n");
  const auto r = run_scenarios(s, 0, 1);
  const auto checks = check_published(s, r);
  REQUIRE(checks.size() == 2);
  const FigureCheck& sp = checks[0];
  CHECK(sp.inside);
  REQUIRE(sp.needs.size() == 1);
  REQUIRE(sp.needs[0].reached);
  CHECK(sp.needs[0].lo == 0);
  const double e1 = r.front().points[0].epoch_s, e8 = r.front().points[3].epoch_s;  // at E = 0
  const double e_star = (e1 - 5.0 * e8) / (5.0 - 1.0);  // solves (e1 + E) / (e8 + E) = 5
  CHECK(sp.needs[0].hi == doctest::Approx(e_star).epsilon(2e-3).scale(0));  // bisected to 1/4096 of a 1.875 s grid step
  // efficiency 62.5% is the same figure over 8 GPUs
  CHECK(checks[1].needs[0].hi == doctest::Approx(e_star).epsilon(2e-3).scale(0));
  // half-width: the band at 8 GPUs against the point prediction
  const auto& b = *r.front().points[3].scenario;
  CHECK(sp.half_width == doctest::Approx((b.speedup.hi - b.speedup.lo) / 2 / r.front().points[3].speedup).scale(0));
  // within half a unit of the last published digit counts as inside: the
  // point prediction (the band's top) plus 0.004, published as x.xx
  const double top = std::floor(b.speedup.hi * 100 + 0.4) / 100;  // two decimals, at most 0.004 above the band
  if (top > b.speedup.hi) {
    const StudySpec edge = ft3_study("unknowns: {samples: 2, epoch_overhead: [0s, 30s]}\n",
                                     "published: {source: test, gpus: 8, speedup: " + std::to_string(top).substr(0, std::to_string(top).find('.') + 3) + "}\n");
    CHECK(check_published(edge, run_scenarios(edge, 0, 1))[0].inside);
  }
  // the unknowns' batch nominal lands on a sampled power of two: 300 is not
  // one, the workload's 1024 clamps into [128, 256] as 256
  CHECK(ft3_study("unknowns: {batch_per_gpu: [100, 300]}\n").unknowns[0].nominal == 256);
  // a speedup above the point prediction: outside, and E cannot reach it
  const StudySpec high = ft3_study("unknowns: {samples: 2, epoch_overhead: [0s, 30s]}\n", "published: {source: test, gpus: 8, speedup: 7.99}\n");
  const auto hc = check_published(high, run_scenarios(high, 0, 1));
  REQUIRE(hc.size() == 1);
  CHECK_FALSE(hc[0].inside);
  CHECK_FALSE(hc[0].needs[0].reached);
}

TEST_CASE("the replay takes the progress benchmark's interference for MPI collectives in steps, else the calibration's") {
  const Cluster local = load_cluster(KANSCALE_SOURCE_DIR "/configs/clusters/local-cpu.yaml");
  const Workload w = load_workload(KANSCALE_SOURCE_DIR "/configs/workloads/local-kanscale.yaml");
  Calibration cal = load_calibration(KANSCALE_SOURCE_DIR "/configs/calibrations/local-cpu.yaml", local, Precision::fp32);
  cal.interference = 0.2;
  cal.mpi_progress = MpiProgress{4, 0, 0.7};
  const Layout two{2, 1};
  CHECK(make_replay_input(local, w, cal, two, 32, 1).interference == doctest::Approx(0.7));
  CHECK(make_replay_input(local, w, cal, two, 32, 1).steady.allreduce.front().steps >= 4);
  // PyTorch's process group runs MPI on a thread of its own: no steps, the calibration's interference
  Workload torch = w;
  torch.implementation = Implementation::pytorch;
  Calibration comm_only = cal;  // a PyTorch workload is not costed by kanscale's kernel terms: they go
  comm_only.ops.clear();
  comm_only.ops_cold.clear();
  const ReplayInput t = make_replay_input(local, torch, comm_only, two, 32, 1);
  CHECK(t.steady.allreduce.front().steps == 1);
  CHECK(t.broadcast.steps == 1);
  CHECK(t.interference == doctest::Approx(0.2));
  cal.mpi_progress->interference.reset();  // measured without the work alone: the calibration's own
  CHECK(make_replay_input(local, w, cal, two, 32, 1).interference == doctest::Approx(0.2));
}

TEST_CASE("a rank's persistent speed: the point's ranks get the spread's factors, one rank none") {
  const Cluster local = load_cluster(KANSCALE_SOURCE_DIR "/configs/clusters/local-cpu.yaml");
  const Workload w = load_workload(KANSCALE_SOURCE_DIR "/configs/workloads/local-kanscale.yaml");
  Calibration cal = load_calibration(KANSCALE_SOURCE_DIR "/configs/calibrations/local-cpu.yaml", local, Precision::fp32);
  cal.rank_sigma = 0.2;
  const ReplayInput two = make_replay_input(local, w, cal, Layout{2, 1}, 32, 1);
  REQUIRE(two.rank_factor.size() == 2);
  CHECK(two.rank_factor == rank_spread_factors(0.2, 2));
  CHECK(make_replay_input(local, w, cal, Layout{1, 1}, 32, 1).rank_factor.empty());
  // the slower rank gates the iteration: with the spread the same point is slower
  cal.jitter_sigma = 0;
  StudyOptions o;
  o.gpus = {2};
  const double spread = simulate_point(local, w, cal, o, Layout{2, 1}).iteration_s.median;
  cal.rank_sigma = 0;
  const double none = simulate_point(local, w, cal, o, Layout{2, 1}).iteration_s.median;
  CHECK(spread > none);
}

TEST_CASE("a live term's communication factor scales each gradient all-reduce, its launch within it, and nothing else") {
  const Cluster local = load_cluster(KANSCALE_SOURCE_DIR "/configs/clusters/local-cpu.yaml");
  const Workload w = load_workload(KANSCALE_SOURCE_DIR "/configs/workloads/local-kanscale.yaml");
  Calibration cal = load_calibration(KANSCALE_SOURCE_DIR "/configs/calibrations/local-cpu.yaml", local, Precision::fp32);
  cal.live_terms.clear();
  const Layout two{2, 1};
  const ReplayInput base = make_replay_input(local, w, cal, two, 32, 1);
  cal.live_terms.push_back(Calibration::LiveTerm{2, 1.0, 0.0, 0.0, 1.5});
  const ReplayInput scaled = make_replay_input(local, w, cal, two, 32, 1);
  REQUIRE(scaled.steady.allreduce.size() == base.steady.allreduce.size());
  REQUIRE_FALSE(base.steady.allreduce.empty());
  for (std::size_t i = 0; i < base.steady.allreduce.size(); ++i) {
    CHECK(scaled.steady.allreduce[i].time_s == doctest::Approx(1.5 * base.steady.allreduce[i].time_s).epsilon(1e-12));
    CHECK(scaled.steady.allreduce[i].steps == base.steady.allreduce[i].steps);
    CHECK(scaled.steady.allreduce[i].launch_s == doctest::Approx(1.5 * base.steady.allreduce[i].launch_s).epsilon(1e-12));
  }
  CHECK(scaled.first.allreduce.front().time_s == doctest::Approx(1.5 * base.first.allreduce.front().time_s).epsilon(1e-12));
  CHECK(scaled.broadcast.time_s == base.broadcast.time_s);
  CHECK(scaled.op_time_s == base.op_time_s);
  CHECK(scaled.host_overhead_s == base.host_overhead_s);
}

TEST_CASE("nccl_at_<N>nodes: a factor on one node class, idle at the others and on MPI clusters") {
  Cluster cl = load_cluster(std::string(KANSCALE_SOURCE_DIR) + "/configs/clusters/finisterrae3.yaml");
  Calibration cal = datasheet_calibration(cl, Precision::fp32);
  Workload w = load_workload(std::string(KANSCALE_SOURCE_DIR) + "/configs/workloads/default.yaml");
  StudyOptions o;
  CaseRef c{cl, cal, w, o};
  const Setting* four = find_setting("nccl_at_4nodes", kUnknown);
  REQUIRE(four != nullptr);
  const SettingValue v = parse_setting(*four, "1.5x");
  // acts on 3-4 nodes (class 2): 8 GPUs at 2 per node; idle at 2 nodes
  CHECK(four->idle(c, v, Layout{8, 4}).empty());
  CHECK(four->idle(c, v, Layout{6, 3}).empty());
  CHECK(four->idle(c, v, Layout{4, 2}).find("3-4 node(s) only") != std::string::npos);
  four->apply(c, v);
  four->apply(c, v);  // a factor on the current value: 1.5 x 1.5
  CHECK(cl.collectives.node_factor_at(4) == doctest::Approx(2.25));
  CHECK(cl.collectives.node_factor_at(2) == 1.0);
  CHECK(cl.collectives.node_factor_at(8) == 1.0);
  CHECK(find_setting("nccl_at_1024nodes", kSet) != nullptr);
  CHECK(find_setting("nccl_at_3nodes", kSet) == nullptr);  // classes are powers of two
  Cluster mpi = load_cluster(std::string(KANSCALE_SOURCE_DIR) + "/configs/clusters/local-cpu.yaml");
  Calibration mcal = datasheet_calibration(mpi, Precision::fp32);
  CaseRef m{mpi, mcal, w, o};
  CHECK(four->idle(m, v, Layout{4, 4}).find("MPI") != std::string::npos);
}

TEST_CASE("a posterior calibration: the prediction at its point, its bands the spread over its draws") {
  const Cluster cl = load_cluster(std::string(KANSCALE_SOURCE_DIR) + "/configs/clusters/finisterrae3.yaml");
  const Workload w = load_workload(std::string(KANSCALE_SOURCE_DIR) + "/configs/workloads/default.yaml");
  const std::string text =
      "name: p\nsource: posterior\nconcurrency: 1\nfitted_from: \"hand-made\"\nposterior:\n  conditioned_on: \"a test\"\n"
      "  point: {compute_time: \"2x\"}\n  band_without: speedup\n  draws:\n"
      "    - {compute_time: \"1x\"}\n    - {compute_time: \"4x\"}\n    - {compute_time: \"2x\", nccl_at_2nodes: \"3x\"}\n";
  CHECK_THROWS_WITH_AS(parse_calibration(text, "p.yaml", cl, Precision::fp32), doctest::Contains("simulate` only"), InputError);
  const Calibration cal = with_shipped_defaults(parse_calibration(text, "p.yaml", cl, Precision::fp32, true), cl, w);
  REQUIRE(cal.posterior.draws.size() == 3);
  StudyOptions o;
  o.gpus = {1, 2, 4};
  o.iterations = 3;
  o.interval_samples = 100;
  const StudyResult r = run_posterior_study(cl, w, cal, o);
  // the references: the same case with each draw (or the point) applied by hand
  StudyOptions plain = o;
  plain.interval_samples = 0;
  auto at = [&](double compute, double at_2nodes) {
    Cluster c2 = cl;
    Calibration k2 = cal;
    k2.compute_scale *= compute;
    c2.collectives.node_factor = {1.0, at_2nodes};
    return run_study(c2, w, k2, plain);
  };
  const StudyResult point = at(2, 1), d1 = at(1, 1), d4 = at(4, 1), d2n = at(2, 3);
  REQUIRE(r.points.size() == 3);
  CHECK(r.interval_samples == 3);
  CHECK(r.band_source.find("3 posterior draws") != std::string::npos);
  CHECK(r.band_source.find("'speedup'") != std::string::npos);
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(r.points[i].iteration_s.median == point.points[i].iteration_s.median);
    REQUIRE(r.points[i].iteration_band);
    // nearest-rank 5% and 95% of 3 values: the smallest and the largest
    const std::vector<double> it = {d1.points[i].iteration_s.median, d4.points[i].iteration_s.median, d2n.points[i].iteration_s.median};
    const std::vector<double> sp = {d1.points[i].speedup, d4.points[i].speedup, d2n.points[i].speedup};
    CHECK(r.points[i].iteration_band->lo == *std::min_element(it.begin(), it.end()));
    CHECK(r.points[i].iteration_band->hi == *std::max_element(it.begin(), it.end()));
    CHECK(r.points[i].speedup_band->lo == *std::min_element(sp.begin(), sp.end()));
    CHECK(r.points[i].speedup_band->hi == *std::max_element(sp.begin(), sp.end()));
  }
  // the 2-node factor moved the 4-GPU point only (2 nodes), not 2 GPUs (1 node)
  CHECK(d2n.points[1].iteration_s.median == point.points[1].iteration_s.median);
  CHECK(d2n.points[2].iteration_s.median > point.points[2].iteration_s.median);
}

TEST_CASE("one settings table: its keys, aliases, factors and ranges, and the same refusal at every front door") {
  // --set's names for the network keys resolve to the table's own
  REQUIRE(find_setting("network.latency", kSet) != nullptr);
  CHECK(find_setting("network.latency", kSet) == find_setting("network.inter_latency", kSet));
  CHECK(find_setting("intra_node.bandwidth", kSet) == find_setting("network.intra_bandwidth", kSet));
  CHECK(find_setting("network.latency", kSweep) == nullptr);  // an alias of --set only
  CHECK(find_setting("scaling", kSet) == nullptr);            // a sweep's axis only
  CHECK(find_setting("gpus", kSweep) == nullptr);             // a study sweeps GPU counts itself
  // every key a door accepts is one entry, in the order the scenarios expand
  const std::string sweep = setting_keys(kSweep);
  CHECK(sweep.find("widths") < sweep.find("bucket_cap"));
  CHECK(sweep.find("network.inter_latency") < sweep.find("scaling"));
  // a factor on the case's current value: 25 MiB x 2 = 50 MiB; grid 5 x 3 = 15
  Cluster cl = load_cluster(std::string(KANSCALE_SOURCE_DIR) + "/configs/clusters/local-cpu.yaml");
  Calibration cal = datasheet_calibration(cl, Precision::fp32);
  Workload w = load_workload(std::string(KANSCALE_SOURCE_DIR) + "/configs/workloads/default.yaml");
  StudyOptions o;
  int gpus = 2;
  const CaseRef c{cl, cal, w, o, &gpus};
  const Setting& cap = *find_setting("bucket_cap", kSet);
  const SettingValue doubled = parse_setting(cap, "2x", &c);
  CHECK(doubled.number == w.ddp.bucket_cap_bytes * 2);
  CHECK(setting_label(cap, doubled) == "50.00 MiB");
  CHECK(parse_setting(*find_setting("grid_size", kSet), "3x", &c).number == w.grid_size * 3);
  // ranges are the table's: kMaxGridSize = 1000, kMaxGpusPerNode = 1024
  CHECK_THROWS_WITH_AS(parse_setting(*find_setting("grid_size", kSweep), "1001"), doctest::Contains("kanscale's limit"), InputError);
  CHECK_THROWS_WITH_AS(parse_setting(*find_setting("gpus_per_node", kSweep), "1025"), doctest::Contains("to 1024"), InputError);
  CHECK_THROWS_WITH_AS(parse_setting(*find_setting("nccl_algo", kSweep), "rings"), doctest::Contains("all, ring or tree"), InputError);
  // --set wants a factor written as one; a sweep takes a plain number too
  CHECK_THROWS_AS(parse_setting(*find_setting("compute_time", kSet), "2", &c, true), InputError);
  CHECK(parse_setting(*find_setting("network.inter_bandwidth", kSweep), "2").number == 2);
  // NCCL's restrictions on an MPI cluster move nothing: the table says so,
  // and a study sweeping them on MPI clusters alone is refused with that
  const Setting& algo = *find_setting("nccl_algo", kSweep);
  CHECK(algo.idle(c, parse_setting(algo, "ring"), Layout{}).find("uses MPI collectives") != std::string::npos);
  CHECK(algo.idle(c, parse_setting(algo, "ring"), Layout{}) == algo.idle(c, parse_setting(algo, "tree"), Layout{}));
  const std::string src = KANSCALE_SOURCE_DIR;
  CHECK_THROWS_WITH_AS(parse_study("name: u\nworkload: " + src + "/configs/workloads/default.yaml\nclusters:\n  - file: " + src +
                                       "/configs/clusters/local-cpu.yaml\nsweep:\n  gpus: [1, 2]\n  nccl_algo: [all, ring]\n",
                                   "u.yaml", 1e9),
                       doctest::Contains("uses MPI collectives"), InputError);
}

TEST_CASE("an op between warm and cold: the cold fit's data terms blended, the warm fit's fixed term kept") {
  // hand calculation, one fitted op of 2e6 FLOPs and 1e5 bytes (sum, no roofline):
  // warm: 1 us + 2e6 / 1e12 s + 1e5 / 1e11 s = 1 + 2 + 1 = 4 us
  // cold: 20 us fixed + 2e6 / 5e11 + 1e5 / 2e10 = 20 + 4 + 5 us; with the warm
  //       fixed: 1 + 4 + 5 = 10 us
  // at cold fraction 0.5: 4 + 0.5 x (10 - 4) = 7 us; at 1: 10 us; at 0: 4 us
  Calibration cal;
  cal.name = "hand";
  cal.ops["kan_forward"] = OpCost{1e-6, 1e12, 1e11, false};
  cal.ops_cold["kan_forward"] = OpCost{20e-6, 5e11, 2e10, false};
  Op op;
  op.cost_class = "kan_forward";
  op.flops = 2e6;
  op.bytes = 1e5;
  CHECK(op_time_s(op, cal, 0.0) == doctest::Approx(4e-6).epsilon(1e-12));
  CHECK(op_time_s(op, cal, 0.5) == doctest::Approx(7e-6).epsilon(1e-12));
  CHECK(op_time_s(op, cal, 1.0) == doctest::Approx(10e-6).epsilon(1e-12));
}

TEST_CASE("the cold fraction interpolates the cache probe's time per byte, not its bandwidth") {
  // probe: 50 GB/s at 1 MB, 10 GB/s at 100 MB. At 10 MB (halfway in log
  // bytes) the bandwidth is 30 GB/s; the time per byte is 1/30 against 1/50
  // best and 1/10 worst: (1/30 - 1/50) / (1/10 - 1/50) = (2/150) / (8/100)
  // = 1/6 (halfway in bandwidth would say 1/2). Past either end: 0 and 1.
  Calibration cal;
  cal.cache_probe = {{1e6, 50e9}, {1e8, 10e9}};
  CHECK(cold_fraction_for(cal, 1e7) == doctest::Approx(1.0 / 6.0).epsilon(1e-12));
  CHECK(cold_fraction_for(cal, 1e5) == 0.0);
  CHECK(cold_fraction_for(cal, 1e9) == doctest::Approx(1.0).epsilon(1e-12));
  cal.cache_probe.clear();
  CHECK(cold_fraction_for(cal, 1e7) == 0.0);
}
