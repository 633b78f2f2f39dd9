// calibrate --from-trace (validation/trace_calibration): the fit of PyTorch's
// op classes to torch.profiler traces, on traces whose costs are known.
//
// The hand-made traces keep the structure of a real one (the parity
// fixture's 2-layer step: every event, its thread and its parent) and lay
// its times out anew: each of the model's ops takes the time a known
// calibration gives it (the shipped configs/calibrations/pytorch-cpu.yaml),
// the k-th event of a class being the class's k-th op (the mapping of
// compare_torch_profile); every other event does no work. The profiler's own
// cost is added as torch's is: kIn inside every event's stamps, kOut between
// consecutive events of one parent. The fit must then give back each class's
// fixed and per_element terms, and the step nothing outside them.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>

#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "formats/calibration_file.hpp"
#include "formats/config_files.hpp"
#include "formats/measurement_records.hpp"
#include "model/calibration_fit.hpp"
#include "formats/torch_trace.hpp"
#include "sim/point.hpp"
#include "temp_dir.hpp"
#include "validation/trace_calibration.hpp"
#include "validation/torch_profile.hpp"
#include "validation/plan.hpp"
#include "validation/schedule.hpp"

using namespace ks;

namespace {

const std::string kSrc = KANSCALE_SOURCE_DIR;
constexpr double kIn = 2.0, kOut = 3.0;  // us: the profiler's own cost inside and outside an event

nlohmann::json fixture_trace() {
  std::ifstream in(kSrc + "/tests/fixtures/torch/parity-2-layers.trace.json");
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

std::string workload_text(const std::vector<int>& widths, int batch) {
  std::string w = "[";
  for (std::size_t i = 0; i < widths.size(); ++i) w += (i ? ", " : "") + std::to_string(widths[i]);
  return "name: hand\nkan: {widths: " + w + "], grid_size: 5, spline_order: 3}\nbatch_per_gpu: " + std::to_string(batch) +
         "\ndataset_size: 512\nseed: 3\nimplementation: pytorch\nddp: {bucket_cap: \"1MiB\"}\n";
}

// `steps` copies of the fixture's step, each event's own work the known
// cost of its op (us), laid out with the profiler's cost, inside
// ProfilerStep#1..steps, back to back.
// (ranks 1: the op times of one rank alone on the machine, as the calibration has them)
// A GPU job's (`device`: per unit, its kernels' known cost on the device):
// under the event of each op that carries a unit, one more event, a
// cudaLaunchKernel (no work of its own) whose kernel on stream 7 takes the
// unit's device time; under each comm:all_reduce event, a launch of an NCCL
// kernel of `nccl_us`; the host's waits for the device, a
// cudaStreamSynchronize of 300 us under the first such op's event and one of
// 500 us after the step's last op (no host work: the fit must see neither);
// and each step marked again on the GPU's stream, as Kineto does.
struct HandDevice {
  std::map<std::string, TorchOpCost> units;
  double nccl_us = 0;
};

nlohmann::json hand_trace(const Workload& w, const Cluster& c, const Calibration& known, int ranks, int steps, const HandDevice* device = nullptr) {
  std::vector<TorchTraceEvent> ev = read_torch_trace(fixture_trace(), "parity-2-layers.trace.json");
  // a GPU job's backward runs on autograd's device thread (tid kAutograd),
  // after the forward on the caller's and before its Adam (laid out below)
  constexpr long long kAutograd = 9;
  const long long main_tid = ev.empty() ? 0 : ev.front().tid;
  if (device)
    for (TorchTraceEvent& e : ev)  // (parents precede their children)
      if (e.parent >= 0) e.tid = ev[static_cast<std::size_t>(e.parent)].tid;
      else if (e.tid == main_tid && e.cls.rfind("backward:", 0) == 0) e.tid = kAutograd;
  const ReplayInput in = make_replay_input(c, w, known, layout_for(c, ranks, std::nullopt), w.batch_per_gpu, 0);
  std::map<std::string, std::vector<std::size_t>> ops_of;
  for (std::size_t i = 0; i < in.ops.size(); ++i)
    if (!in.ops[i].torch_class.empty()) ops_of[in.ops[i].torch_class].push_back(i);
  // each event's own work: its op's time, the k-th event of a class in time order the k-th op
  std::vector<double> work(ev.size(), 0.0);
  std::vector<std::size_t> order(ev.size());
  for (std::size_t i = 0; i < ev.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return ev[a].ts_us < ev[b].ts_us; });
  std::map<std::string, std::size_t> seen;
  std::vector<double> kernel_us;  // per event: the kernel its launch runs (a launch's), else 0
  const std::size_t n_host = ev.size();
  std::vector<std::pair<std::size_t, double>> launches;  // (the launching event, its kernel's us)
  for (std::size_t i : order) {
    const auto it = ops_of.find(ev[i].cls);
    if (device && ev[i].cls == "comm:all_reduce") launches.emplace_back(i, device->nccl_us);
    if (it == ops_of.end()) continue;
    const Op& op = in.ops[it->second[seen[ev[i].cls]++ % it->second.size()]];
    work[i] = in.op_time_s[static_cast<std::size_t>(&op - in.ops.data())] * 1e6;
    if (!device || op.unit_calls <= 0) continue;
    const auto d = device->units.find(op.torch_unit);
    if (d != device->units.end()) launches.emplace_back(i, d->second.time_s(op.unit_calls, op.unit_elements) * 1e6);
  }
  // the launches, each a child of its op's event; the waits
  kernel_us.assign(ev.size(), 0.0);
  auto add = [&](const char* name, int parent, long long tid, double own_us, double kernel) {
    TorchTraceEvent l;
    l.name = name;
    l.cat = "cuda_runtime";
    l.tid = tid;
    l.parent = parent;
    ev.push_back(l);
    work.push_back(own_us);
    kernel_us.push_back(kernel);
  };
  for (const auto& [parent, us] : launches) add("cudaLaunchKernel", static_cast<int>(parent), ev[parent].tid, 0.0, us);
  if (device && !launches.empty()) {
    const std::size_t first = launches.front().first;
    add("cudaStreamSynchronize", static_cast<int>(first), ev[first].tid, 300.0, 0.0);
    add("cudaStreamSynchronize", -1, ev[first].tid, 500.0, 0.0);
  }
  std::vector<std::vector<std::size_t>> children(ev.size());
  std::map<long long, std::vector<std::size_t>> roots;  // per thread
  for (std::size_t i = 0; i < ev.size(); ++i) (ev[i].parent < 0 ? roots[ev[i].tid] : children[static_cast<std::size_t>(ev[i].parent)]).push_back(i);
  std::vector<double> ts(ev.size()), dur(ev.size());
  // an event: kIn, then each child after kOut, then its own work
  std::function<double(std::size_t, double)> lay = [&](std::size_t e, double t) {
    ts[e] = t;
    double cur = t + kIn;
    for (std::size_t ch : children[e]) cur = lay(ch, cur + kOut);
    dur[e] = cur + work[e] - t;
    return t + dur[e];
  };
  if (device && roots.count(kAutograd)) {  // the two threads' roots one after another, in the step's order
    auto& main = roots[main_tid];
    main.insert(main.end(), roots[kAutograd].begin(), roots[kAutograd].end());
    std::stable_sort(main.begin(), main.end(), [&](std::size_t a, std::size_t b) { return ev[a].ts_us < ev[b].ts_us; });
    roots.erase(kAutograd);
  }
  double span = 0;
  for (const auto& [tid, rs] : roots) {
    double cur = 0;
    for (std::size_t k = 0; k < rs.size(); ++k) cur = lay(rs[k], k == 0 ? cur : cur + kOut);
    span = std::max(span, cur);
  }
  nlohmann::json out = nlohmann::json::array();
  const long long per_step = static_cast<long long>(ev.size()) + 1;
  for (int s = 0; s < steps; ++s) {
    const double shift = s * span;
    out.push_back({{"name", "ProfilerStep#" + std::to_string(s + 1)}, {"ph", "X"}, {"ts", shift}, {"dur", span}, {"tid", 1}});
    if (device)
      out.push_back({{"name", "ProfilerStep#" + std::to_string(s + 1)}, {"ph", "X"}, {"cat", "gpu_user_annotation"}, {"pid", 0}, {"tid", 7},
                     {"ts", shift + 1}, {"dur", span / 2}});
    for (std::size_t i = 0; i < ev.size(); ++i) {
      const long long id = s * per_step + static_cast<long long>(i) + 1;
      const long long parent = ev[i].parent < 0 ? 0 : s * per_step + ev[i].parent + 1;
      if (i < n_host) {
        out.push_back({{"name", ev[i].name}, {"ph", "X"}, {"ts", ts[i] + shift}, {"dur", dur[i]}, {"tid", ev[i].tid}, {"args", {{"id", id}, {"parent", parent}}}});
        continue;
      }
      // a launch and its kernel (an NCCL one under a collective), by correlation id; a wait
      out.push_back({{"name", ev[i].name}, {"ph", "X"}, {"cat", "cuda_runtime"}, {"ts", ts[i] + shift}, {"dur", dur[i]}, {"tid", ev[i].tid},
                     {"args", {{"correlation", id}, {"id", id}, {"parent", parent}}}});
      if (kernel_us[i] <= 0) continue;
      const bool nccl = ev[static_cast<std::size_t>(ev[i].parent)].cls == "comm:all_reduce";
      out.push_back({{"name", nccl ? "ncclKernel_AllReduce_RING_LL_Sum_float" : "hand_kernel"}, {"ph", "X"}, {"cat", "kernel"}, {"pid", 0}, {"tid", 7},
                     {"ts", ts[i] + shift + 1}, {"dur", kernel_us[i]}, {"args", {{"correlation", id}, {"stream", 7}, {"device", 0}}}});
    }
  }
  return out;
}

// The shipped PyTorch calibration's op classes alone (its live runs' factor
// left out: a trace is a live run, its times already the job's).
Calibration known_calibration(const Cluster& c) {
  Calibration k = load_calibration(kSrc + "/configs/calibrations/pytorch-cpu.yaml", c, Precision::fp32);
  REQUIRE(!k.torch_ops.empty());
  k.live_terms.clear();
  return k;
}

// Four shapes of the fixture's 2-layer structure (the op list does not
// depend on the widths or the batch), each a workload and its hand-made
// trace in `dir` (t0.json, ...; a GPU job's, g0.json, ...).
std::vector<TraceJob> four_hand_jobs(const TempDir& dir, const Cluster& c, const Calibration& known, const HandDevice* device = nullptr) {
  const std::vector<std::pair<std::vector<int>, int>> shapes = {{{8, 16, 1}, 8}, {{4, 32, 2}, 16}, {{16, 8, 4}, 32}, {{12, 24, 3}, 64}};
  std::vector<TraceJob> jobs;
  for (std::size_t k = 0; k < shapes.size(); ++k) {
    const std::string wf = dir.write("w" + std::to_string(k) + ".yaml", workload_text(shapes[k].first, shapes[k].second));
    const std::string tf = (device ? "g" : "t") + std::to_string(k) + ".json";
    jobs.push_back({dir.write(tf, hand_trace(load_workload(wf), c, known, 1, 3, device).dump()), wf});
  }
  return jobs;
}

}  // namespace

TEST_CASE("calibrate --from-trace: hand-made traces of known costs give the costs back, the profiler's own taken off") {
  const Cluster c = load_cluster(kSrc + "/configs/clusters/local-cpu-gloo.yaml");
  const Calibration known = known_calibration(c);
  TempDir dir;
  const std::vector<TraceJob> jobs = four_hand_jobs(dir, c, known);
  // one trace's records: the profiler's parts read back exactly
  const TraceRecords r = trace_records(jobs[0].trace, load_workload(jobs[0].workload), c, 2);
  CHECK(r.profiler_gap_s == doctest::Approx(kOut * 1e-6));
  CHECK(r.profiler_inside_s == doctest::Approx(kIn * 1e-6));
  REQUIRE(r.glue_s.size() == 3);
  for (double g : r.glue_s) CHECK(g == doctest::Approx(0.0).epsilon(1e-12));  // nothing but the model's ops does work
  // at 2 ranks the collectives become gloo sweeps: the fixture's one bucket
  // and its buffers' broadcast, each event kIn long (no work of its own)
  REQUIRE(r.sweeps.size() == 2);
  CHECK(r.sweeps[0].collective == SweptCollective::allreduce);
  REQUIRE(r.sweeps[0].points.size() == 1);
  CHECK(r.sweeps[0].points[0].size_bytes > 0);
  CHECK(*r.sweeps[0].points[0].in_place->time_us == doctest::Approx(kIn));
  CHECK(r.sweeps[1].collective == SweptCollective::broadcast);
  CHECK(r.collective_spread == doctest::Approx(1.0));

  const TraceCalibration t = calibrate_from_traces(jobs, c, 2, "hand");
  CHECK(!t.file.host_overhead_s.has_value());  // 2 ranks: a step's glue holds the wait for the all-reduce
  int checked = 0;
  for (const FittedTorchOp& o : t.file.torch_ops) {
    CAPTURE(o.cls);
    const auto it = known.torch_ops.find(o.cls);
    REQUIRE(it != known.torch_ops.end());
    CHECK(o.note.empty());  // four shapes: fitted, not borrowed
    CHECK(o.cost.fixed_s == doctest::Approx(it->second.fixed_s).epsilon(1e-6));
    CHECK(o.cost.element_s == doctest::Approx(it->second.element_s).epsilon(1e-6));
    // what it came from: each trace's steps x the unit's events in a step
    REQUIRE(r.unit_events.count(o.cls) == 1);
    const std::string first = std::filesystem::path(jobs[0].trace).filename().string() + " 3 x " + std::to_string(r.unit_events.at(o.cls));
    CHECK(o.source.rfind("steps x events: " + first, 0) == 0);
    CHECK(std::count(o.source.begin(), o.source.end(), ',') == 3);  // four traces
    ++checked;
  }
  CHECK(checked >= 15);  // every unit of the 2-layer step
  CHECK(write_calibration(t.file, "# test\n").find("; from steps x events: ") != std::string::npos);
}

TEST_CASE("calibrate --from-trace: the interval of a one-trace calibration against a many-trace one") {
  // At 1 rank, 4 traces of exact costs: each step predicted by the classes
  // fitted without its trace is exact, so the model error the file carries is
  // 0 (to rounding); one trace cannot say, and the intervals borrow the
  // unwatched stand-in's error (what microbenchmarks alone missed on live runs)
  const Cluster c = load_cluster(kSrc + "/configs/clusters/local-cpu-gloo.yaml");
  const Calibration known = known_calibration(c);
  TempDir dir;
  const std::vector<TraceJob> jobs = four_hand_jobs(dir, c, known);
  const TraceCalibration many = calibrate_from_traces(jobs, c, 1, "many");
  const TraceCalibration one = calibrate_from_traces({jobs[0]}, c, 1, "one");
  CHECK(many.file.trace_loo_steps == 4);
  CHECK(many.file.model_error_sigma < 1e-6);
  CHECK(one.file.trace_loo_steps == 0);
  CHECK(one.report.find("model_error_sigma not measured") != std::string::npos);
  // as simulate reads them
  const Workload w = load_workload(jobs[0].workload);
  auto loaded = [&](const TraceCalibration& t, const std::string& f) {
    return with_shipped_defaults(load_calibration(dir.write(f, write_calibration(t.file, "# test\n")), c, Precision::fp32), c, w);
  };
  const Calibration m = loaded(many, "many.yaml"), o = loaded(one, "one.yaml");
  CHECK(m.unwatched_sigma_applied == 0.0);
  CHECK(o.unwatched_sigma_applied > 0.1);
  CHECK(o.model_error_sigma > m.model_error_sigma + 0.1);
  CHECK(!many.file.gloo_allreduce.has_value());  // a 1-rank trace holds no communication

  // one rank to two: the 1-rank traces with a gloo sweep of 2 ranks (the
  // shipped calibration's own) fit its all-reduce as fit --collectives does
  const std::string sweep = kSrc + "/configs/calibrations/pytorch-cpu/allreduce-gloo-r0.json";
  const TraceCalibration with = calibrate_from_traces(jobs, c, 1, "with", {sweep});
  REQUIRE(with.file.gloo_allreduce.has_value());
  FitInputs alone;
  alone.collectives.push_back(read_collective_sweep_file(sweep));
  const CalibrationFit ref = fit_calibration(alone, "alone");
  REQUIRE(ref.file.gloo_allreduce.has_value());
  CHECK(with.file.gloo_allreduce->latency_s == doctest::Approx(ref.file.gloo_allreduce->latency_s).epsilon(1e-12));
  REQUIRE(with.file.gloo_allreduce->bandwidth_Bps.has_value());
  CHECK(*with.file.gloo_allreduce->bandwidth_Bps == doctest::Approx(*ref.file.gloo_allreduce->bandwidth_Bps).epsilon(1e-12));
  CHECK(with.file.fitted_from.find("allreduce-gloo-r0.json") != std::string::npos);
}

TEST_CASE("calibrate --from-trace: one shape borrows per_element and says so") {
  const Cluster c = load_cluster(kSrc + "/configs/clusters/local-cpu-gloo.yaml");
  const Calibration known = known_calibration(c);
  TempDir dir;
  const std::string wf = dir.write("w.yaml", workload_text({8, 16, 1}, 8));
  const Workload w = load_workload(wf);
  const std::string tf = dir.write("t.json", hand_trace(w, c, known, 1, 3).dump());
  const TraceCalibration t = calibrate_from_traces({{tf, wf}}, c, 2, "one");
  REQUIRE(!t.file.torch_ops.empty());
  for (const FittedTorchOp& o : t.file.torch_ops) {
    CAPTURE(o.cls);
    CHECK(o.note.find("per_element from") != std::string::npos);
    // per_element is the shipped calibration's (the known one here), so the least-squares fixed is the known one
    CHECK(o.cost.fixed_s == doctest::Approx(known.torch_ops.at(o.cls).fixed_s).epsilon(1e-6));
  }
  CHECK(t.report.find("fewer than 3 shapes") != std::string::npos);
}

TEST_CASE("calibrate --from-trace: refusals name the file") {
  const Cluster c = load_cluster(kSrc + "/configs/clusters/local-cpu-gloo.yaml");
  const Calibration known = known_calibration(c);
  TempDir dir;
  const std::string wf = dir.write("w.yaml", workload_text({8, 16, 1}, 8));
  const Workload w = load_workload(wf);
  const nlohmann::json good = hand_trace(w, c, known, 1, 3);
  // no ProfilerStep#N
  nlohmann::json bare = nlohmann::json::array();
  for (const auto& e : good)
    if (e["name"].get<std::string>().rfind("ProfilerStep#", 0) != 0) bare.push_back(e);
  const std::string f1 = dir.write("bare.json", bare.dump());
  CHECK_THROWS_WITH_AS(trace_records(f1, w, c, 2), doctest::Contains("bare.json: no ProfilerStep#N"), InputError);
  // cut mid-step: the last step's final 10 events missing
  nlohmann::json cut = good;
  cut.erase(cut.end() - 10, cut.end());
  const std::string f2 = dir.write("cut.json", cut.dump());
  CHECK_THROWS_WITH_AS(trace_records(f2, w, c, 2), doctest::Contains("cut.json (ProfilerStep 3): the trace ends mid-step"), InputError);
  // another model: the 3-layer fixture against the 2-layer workload, named by its first class that differs
  std::ifstream in3(kSrc + "/tests/fixtures/torch/parity-3-layers.trace.json");
  nlohmann::json three = nlohmann::json::parse(in3);
  nlohmann::json stepped = nlohmann::json::array({{{"name", "ProfilerStep#1"}, {"ph", "X"}, {"ts", -1}, {"dur", 1e9}, {"tid", 1}}});
  for (const auto& e : three) stepped.push_back(e);
  const std::string f3 = dir.write("three.json", stepped.dump());
  CHECK_THROWS_WITH_AS(trace_records(f3, w, c, 2), doctest::Contains("three.json: not a trace of"), InputError);
  CHECK_THROWS_WITH_AS(trace_records(f3, w, c, 2), doctest::Contains("(backward:AccumulateGrad: 9 events where the model has 6 ops per iteration)"), InputError);
  // a real GPU job's trace of another model (HolisticTraceAnalysis's), on a GPU cluster
  std::ifstream inh(kSrc + "/tests/fixtures/hta/event-sync.json");
  REQUIRE(inh.good());
  const std::string f4 = dir.write("gpu.json", nlohmann::json::parse(inh).dump());
  const Cluster h200 = load_cluster(kSrc + "/configs/clusters/single-h200.yaml");
  CHECK_THROWS_WITH_AS(trace_records(f4, w, h200, 1), doctest::Contains("gpu.json: not a trace of"), InputError);
}

namespace {
// A known device cost per unit, unlike from unit to unit: fixed 4 or 8 us,
// per_element 2, 4 or 6 ps; an NCCL all-reduce of 50 us.
HandDevice hand_device(const Calibration& known) {
  HandDevice d;
  int k = 0;
  for (const auto& [unit, cost] : known.torch_ops) {
    d.units[unit] = TorchOpCost{4e-6 * (1 + k % 2), 2e-12 * (1 + k % 3)};
    ++k;
  }
  d.nccl_us = 50;
  return d;
}

// The host's known costs (on the CPU cluster the hand-made traces are laid
// out on), the device's, and a directory for the files.
struct GpuHand {
  Cluster cpu = load_cluster(kSrc + "/configs/clusters/local-cpu-gloo.yaml");
  Calibration known = known_calibration(cpu);
  HandDevice dev = hand_device(known);
  TempDir dir;
};
}  // namespace

TEST_CASE("calibrate --from-trace: a GPU job's kernels give each class its device time, its launches stay the host's") {
  GpuHand h;
  const auto& [cpu, known, dev, dir] = h;
  const Cluster gpu = load_cluster(kSrc + "/configs/clusters/single-h200.yaml");
  // each step launching its units' kernels
  const std::vector<TraceJob> jobs = four_hand_jobs(dir, cpu, known, &dev);
  const Workload w0 = load_workload(jobs[0].workload);
  // one trace's records: the host's time per unit as on a CPU (each launch
  // is one more event, whose profiler cost is taken off), the device's the
  // known kernels'
  const TraceRecords r = trace_records(jobs[0].trace, w0, gpu, 1);
  CHECK(r.cuda);
  REQUIRE(!r.ops.records.empty());
  for (const TorchOpRecord& rec : r.ops.records) {
    CAPTURE(rec.cls);
    CHECK(rec.time_median_s == doctest::Approx(known.torch_ops.at(rec.cls).time_s(rec.calls, rec.elements)).epsilon(1e-6));
    REQUIRE(rec.device_median_s.has_value());
    CHECK(*rec.device_median_s == doctest::Approx(dev.units.at(rec.cls).time_s(rec.calls, rec.elements)).epsilon(1e-6));
  }
  for (double g : r.glue_s) CHECK(g == doctest::Approx(0.0).epsilon(1e-12));
  // import torch-profile's view: each unit's kernels beside the replay's device track
  {
    std::ifstream in(jobs[0].trace);
    const ProfileComparison pc = compare_torch_profile(nlohmann::json::parse(in), "g0.json", gpu, w0,
                                                       with_default_host_terms(datasheet_calibration(gpu, w0.precision), gpu, w0), 1);
    CHECK(pc.cuda);
    CHECK(profile_report(pc).find("dev. pred.") != std::string::npos);
    int units = 0;
    for (const ProfileUnit& u : pc.units)
      if (u.iteration == 0 && dev.units.count(u.unit) && u.calls > 0) {
        CHECK(u.device_s == doctest::Approx(dev.units.at(u.unit).time_s(u.calls, u.elements)).epsilon(1e-6));
        ++units;
      }
    CHECK(units >= 15);
    CHECK(profile_json(pc)["units"][0].contains("device_s"));
  }
  // each kind of trace on its kind of cluster
  CHECK_THROWS_WITH_AS(trace_records(jobs[0].trace, w0, cpu, 1), doctest::Contains("g0.json: CUDA activity"), InputError);
  const std::string cpu_trace = dir.write("c0.json", hand_trace(w0, cpu, known, 1, 3).dump());
  CHECK_THROWS_WITH_AS(trace_records(cpu_trace, w0, gpu, 1), doctest::Contains("c0.json: no CUDA activity"), InputError);
  CHECK_THROWS_WITH_AS(calibrate_from_traces({jobs[0], {cpu_trace, jobs[0].workload}}, gpu, 1, "mixed"), doctest::Contains("c0.json"), InputError);

  // the fit: every class's host and device terms given back
  const TraceCalibration t = calibrate_from_traces(jobs, gpu, 1, "gpu");
  CHECK(t.file.torch_host_has_launch);
  int checked = 0;
  for (const FittedTorchOp& o : t.file.torch_ops) {
    CAPTURE(o.cls);
    CHECK(o.cost.fixed_s == doctest::Approx(known.torch_ops.at(o.cls).fixed_s).epsilon(1e-6));
    REQUIRE(o.device.has_value());
    CHECK(o.device->fixed_s == doctest::Approx(dev.units.at(o.cls).fixed_s).epsilon(1e-6));
    CHECK(o.device->element_s == doctest::Approx(dev.units.at(o.cls).element_s).epsilon(1e-6));
    ++checked;
  }
  CHECK(checked >= 15);
  // as simulate reads it: each unit's kernels on the device track (on the op
  // that carries the unit), its host cost without the cluster's kernel_launch
  const Calibration cal = load_calibration(dir.write("gpu.yaml", write_calibration(t.file, "# test\n")), gpu, Precision::fp32);
  CHECK(cal.torch_host_has_launch);
  CHECK(cal.torch_device_ops.size() == t.file.torch_ops.size());
  const ReplayInput in = make_replay_input(gpu, w0, cal, layout_for(gpu, 1, std::nullopt), w0.batch_per_gpu, 0);
  REQUIRE(in.op_host_s.size() == in.ops.size());
  double device = 0, known_device = 0;
  std::set<std::string> launching;  // units with an op that launches a kernel
  for (const Op& o : in.ops)
    if (!o.host_only) launching.insert(o.torch_unit);
  for (std::size_t i = 0; i < in.ops.size(); ++i) {
    const Op& o = in.ops[i];
    device += in.op_time_s[i];
    if (o.torch_unit.empty()) continue;
    CAPTURE(o.name);
    const double host = o.unit_calls * cal.torch_ops.at(o.torch_unit).fixed_s;  // no launch added
    CHECK(in.op_host_s[i] == doctest::Approx(host).epsilon(1e-9));
    if (o.unit_calls > 0) known_device += dev.units.at(o.torch_unit).time_s(o.unit_calls, o.unit_elements);
    // a unit's kernels run on its ops that launch them (the rest only dispatch)
    if (o.host_only && launching.count(o.torch_unit)) CHECK(in.op_time_s[i] == 0.0);
  }
  CHECK(device == doctest::Approx(known_device).epsilon(1e-6));
  // its host costs hold the launches: not a CPU's arithmetic
  CHECK_THROWS_WITH_AS(make_replay_input(cpu, w0, cal, layout_for(cpu, 1, std::nullopt), w0.batch_per_gpu, 0),
                       doctest::Contains("host_has_launch"), InputError);
}

TEST_CASE("calibrate --from-trace: a GPU job's all-reduces are their NCCL kernels' time, an NCCL sweep") {
  GpuHand h;
  const auto& [cpu, known, dev, dir] = h;
  const Cluster dgx = load_cluster(kSrc + "/configs/clusters/dgx-h100.yaml");
  const std::string wf = dir.write("w.yaml", workload_text({8, 16, 1}, 8));
  const Workload w = load_workload(wf);
  const std::string tf = dir.write("g.json", hand_trace(w, cpu, known, 2, 3, &dev).dump());
  const TraceRecords r = trace_records(tf, w, dgx, 2);
  // the fixture's one bucket: its host event only launches; the kernel took 50 us
  REQUIRE(r.sweeps.size() == 1);  // (no broadcast: NCCL's is derived from its ring)
  const CollectiveSweepFile& s = r.sweeps[0];
  CHECK(s.backend == "nccl");
  CHECK(s.collective == SweptCollective::allreduce);
  REQUIRE(s.points.size() == 1);
  CHECK(*s.points[0].in_place->time_us == doctest::Approx(dev.nccl_us));
  // nccl-tests' busbw at 2 ranks: bytes / time x 2(2-1)/2
  CHECK(*s.points[0].in_place->busbw_GBps == doctest::Approx(s.points[0].size_bytes / 50e-6 * 1e-9));
  const TraceCalibration t = calibrate_from_traces({{tf, wf}}, dgx, 2, "dgx");
  CHECK(t.file.nccl);
  REQUIRE(t.file.nccl_bus_bw_intra_Bps.has_value());
  CHECK(*t.file.nccl_bus_bw_intra_Bps == doctest::Approx(s.points[0].size_bytes / 50e-6));
  // one shape: per_element on the host 0, the device's from the datasheet, and said so
  for (const FittedTorchOp& o : t.file.torch_ops) {
    CAPTURE(o.cls);
    CHECK(o.cost.element_s == 0.0);
    REQUIRE(o.device.has_value());
    CHECK(o.device_note.find("dgx-h100.yaml's datasheet roofline") != std::string::npos);
  }
}

TEST_CASE("calibrate a GPU node's PyTorch plan: its profiled runs' traces fit each class's host and device terms") {
  // the plan's profiled runs as train --profile writes them: hand-made GPU
  // traces of the plan's own workloads (2-layer shapes: the fixture's step)
  GpuHand h;
  const auto& [cpu, known, dev, dir] = h;
  const std::string plan = dir.write("gpu-plan.yaml", "name: hand-gpu\ncluster: " + kSrc +
                                                          "/configs/clusters/single-h200.yaml\nbackend: cuda\nimplementation: pytorch\n"
                                                          "calibration:\n  measure:\n    ranks: 1\n    profile:\n"
                                                          "      widths: [[8, 16, 1], [4, 32, 2], [16, 8, 4]]\n      grid_sizes: [5]\n"
                                                          "      batch_per_gpu: [8, 64]\nrounds: 1\n");
  const ValidationPlan p = load_validation_plan(plan, false);
  REQUIRE(p.measure.profile.size() == 6);
  const std::string out = dir.path + "/out";
  prepare_dir(p, out);
  for (std::size_t c = 0; c < p.measure.profile.size(); ++c) {
    const Workload w = load_workload(out + "/cases/profile" + std::to_string(c) + ".yaml");
    std::ofstream(out + "/results/profile-c" + std::to_string(c) + "-r0.json") << hand_trace(w, cpu, known, 1, 3, &dev).dump();
  }
  fit_measured(p, out);
  const Cluster gpu = load_cluster(kSrc + "/configs/clusters/single-h200.yaml");
  const Calibration cal = load_calibration(out + "/results/calibration-nccl.yaml", gpu, Precision::fp32);
  CHECK(cal.torch_host_has_launch);
  REQUIRE(cal.torch_device_ops.size() == dev.units.size());
  for (const auto& [cls, d] : dev.units) {
    CAPTURE(cls);
    // (the file holds 6 significant digits)
    CHECK(cal.torch_device_ops.at(cls).fixed_s == doctest::Approx(d.fixed_s).epsilon(1e-5));
    CHECK(cal.torch_device_ops.at(cls).element_s == doctest::Approx(d.element_s).epsilon(1e-5));
    CHECK(cal.torch_ops.at(cls).fixed_s == doctest::Approx(known.torch_ops.at(cls).fixed_s).epsilon(1e-5));
  }
}
