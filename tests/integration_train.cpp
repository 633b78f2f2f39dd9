// kanscale train and eval as a user runs them: training reduces the loss,
// checkpoints round-trip, resume is bit-identical, bad files fail cleanly,
// mpirun -np 2 equals one process with twice the batch, and the measured
// exposed communication under an injected delay is what the simulator's
// replay predicts for the same timeline.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>

#include "measure/kan.hpp"
#include "measure/kan_ref.hpp"
#include "measure/safetensors.hpp"
#include "model/buckets.hpp"
#include "model/config.hpp"
#include "formats/config_files.hpp"
#include "model/kan_model.hpp"
#include "temp_dir.hpp"
#include "sim/replay.hpp"
#include "paths.hpp"

using namespace ks;

namespace {

using Dir = TempDir;

int sh(const std::string& cmd, std::string* err = nullptr, const Dir* d = nullptr) {
  std::string full = cmd;
  if (err && d) full += " 2>" + (*d / "stderr");
  else full += " 2>/dev/null";
  const int status = std::system((full + " >/dev/null").c_str());
  if (err && d) *err = slurp(*d / "stderr");
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// "timeout N " for a command run by a test, N scaled by the environment's
// KANSCALE_TEST_SLOWDOWN (the asan-ubsan preset sets 4: the sanitizers make
// the live runs several times slower, and a timeout is a hang guard, not a
// speed check).
std::string timeout(int seconds) {
  double factor = 1;
  if (const char* f = std::getenv("KANSCALE_TEST_SLOWDOWN")) factor = std::max(1.0, std::atof(f));
  return "timeout " + std::to_string(static_cast<int>(seconds * factor)) + " ";
}

std::string mpirun(int np) {
  // CI runs as root; two ranks may exceed the cores.
  return "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 mpirun -np " +
         std::to_string(np) + " --oversubscribe ";
}

std::string workload(const Dir& d, const std::string& name, const std::string& body) {
  std::ofstream(d / name) << body;
  return d / name;
}

const char* kSmall = R"(name: small
kan: {widths: [3, 8, 2], grid_size: 5, spline_order: 3}
task: teacher
batch_per_gpu: BATCH
dataset_size: 512
epochs: 1
learning_rate: 1e-3
seed: 4
implementation: kanscale
ddp: {bucket_cap: "1KiB", first_bucket: "512B"}
)";

std::string small(const Dir& d, const std::string& name, int batch) {
  std::string s = kSmall;
  s.replace(s.find("BATCH"), 5, std::to_string(batch));
  return workload(d, name, s);
}

}  // namespace

TEST_CASE("training reduces the loss on a pykan task by at least 10x") {
  Dir d;
  std::string err;
  REQUIRE(sh(kExe + " train --workload " + kSrc + "/configs/workloads/pykan-exp-sin.yaml --steps 400 --quiet --json " +
                 (d / "t.json"),
             &err, &d) == 0);
  const auto j = nlohmann::json::parse(slurp(d / "t.json"));
  const auto& it = j["iterations"];
  const double first = it[0]["loss"];
  double last = 0;
  for (std::size_t i = it.size() - 20; i < it.size(); ++i) last += it[i]["loss"].get<double>() / 20;
  CAPTURE(first);
  CAPTURE(last);
  CHECK(first / last > 10.0);
  // the per-epoch fixed cost (the sampler's shuffle) is measured: positive,
  // and far below an epoch's iterations
  const auto& s = j["summary"];
  REQUIRE(s["epoch_fixed_s"].is_number());
  CHECK(s["epoch_fixed_s"].get<double>() > 0);
  CHECK(s["epoch_fixed_s"].get<double>() < 400 * s["iteration_time_s"]["median"].get<double>());
}

TEST_CASE("checkpoint round trip: eval reproduces the fp64 reference of the saved model; resume is bit-identical") {
  Dir d;
  const std::string w = small(d, "w.yaml", 32);
  std::string err;
  // uninterrupted: 12 steps
  REQUIRE(sh(kExe + " train --quiet --workload " + w + " --steps 12 --checkpoint " + (d / "a.safetensors"), &err, &d) == 0);
  // 5 steps, then resumed to 12
  REQUIRE(sh(kExe + " train --quiet --workload " + w + " --steps 5 --checkpoint " + (d / "b.safetensors"), &err, &d) == 0);
  REQUIRE(sh(kExe + " train --quiet --workload " + w + " --steps 12 --resume " + (d / "b.safetensors") + " --checkpoint " +
                 (d / "c.safetensors"),
             &err, &d) == 0);
  CHECK(slurp(d / "a.safetensors") == slurp(d / "c.safetensors"));
  CHECK(slurp(d / "a.optim.safetensors") == slurp(d / "c.optim.safetensors"));
  CHECK(slurp(d / "a.safetensors") != slurp(d / "b.safetensors"));

  // efficient-kan's state-dict keys and shapes
  const StFile f = read_safetensors(d / "a.safetensors");
  CHECK(f.tensors.at("layers.0.base_weight").shape == std::vector<std::int64_t>{8, 3});
  CHECK(f.tensors.at("layers.0.spline_weight").shape == std::vector<std::int64_t>{8, 3, 8});
  CHECK(f.tensors.at("layers.1.spline_scaler").shape == std::vector<std::int64_t>{2, 8});
  CHECK(f.tensors.at("layers.1.grid").shape == std::vector<std::int64_t>{8, 12});
  CHECK(f.tensors.size() == 8);

  // eval against the fp64 reference of the loaded tensors
  std::ofstream(d / "x.csv") << "x0,x1,x2\n0.1,-0.5,0.9\n-1.2,0.3,0.0\n";
  REQUIRE(std::system((kExe + " eval --checkpoint " + (d / "a.safetensors") + " --input " + (d / "x.csv") + " >" +
                       (d / "y.csv"))
                          .c_str()) == 0);
  KanNet net = init_kan({3, 8, 2}, 5, 3, 0);
  for (auto& t : kan_state_refs(net)) {
    const auto& src = f.tensors.at(t.name).data;
    std::copy(src.begin(), src.end(), t.data);
  }
  std::vector<double> x = {0.1, -0.5, 0.9, -1.2, 0.3, 0.0}, h, y;
  ref::layer_forward(net.layers[0], x, 2, h);
  ref::layer_forward(net.layers[1], h, 2, y);
  std::stringstream out(slurp(d / "y.csv"));
  std::string line;
  std::getline(out, line);
  CHECK(line == "y0,y1");
  for (int s = 0; s < 2; ++s) {
    std::getline(out, line);
    const auto comma = line.find(',');
    CHECK(std::stod(line.substr(0, comma)) == doctest::Approx(y[2 * s]).epsilon(1e-5));
    CHECK(std::stod(line.substr(comma + 1)) == doctest::Approx(y[2 * s + 1]).epsilon(1e-5));
  }
}

TEST_CASE("truncated, corrupted or mismatched checkpoints fail with one clear line and exit 2") {
  Dir d;
  const std::string w = small(d, "w.yaml", 32);
  REQUIRE(sh(kExe + " train --quiet --workload " + w + " --steps 2 --checkpoint " + (d / "a.safetensors")) == 0);
  const std::string bytes = slurp(d / "a.safetensors");
  std::ofstream(d / "cut.safetensors", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  std::ofstream(d / "x.csv") << "0,0,0\n";
  std::string err;
  CHECK(sh(kExe + " eval --checkpoint " + (d / "cut.safetensors") + " --input " + (d / "x.csv"), &err, &d) == 2);
  CHECK(err.find("cut.safetensors: not a valid safetensors file") != std::string::npos);
  // a checkpoint of another shape
  std::string other = slurp(w);
  other.replace(other.find("[3, 8, 2]"), 9, "[3, 9, 2]");
  std::ofstream(d / "w9.yaml") << other;
  CHECK(sh(kExe + " train --quiet --workload " + (d / "w9.yaml") + " --steps 4 --resume " + (d / "a.safetensors"), &err,
           &d) == 2);
  CHECK(err.find("checkpoint holds a KAN of widths [3,8,2]") != std::string::npos);
  // eval input with the wrong number of columns
  std::ofstream(d / "bad.csv") << "1,2\n";
  CHECK(sh(kExe + " eval --checkpoint " + (d / "a.safetensors") + " --input " + (d / "bad.csv"), &err, &d) == 2);
  CHECK(err.find("bad.csv:1: expected 3 values, got 2") != std::string::npos);
}

TEST_CASE("DDP equivalence: mpirun -np 2 with batch b equals one process with batch 2b") {
  // Same samples per step (DistributedSampler puts even positions on rank 0,
  // odd on rank 1), gradients averaged: only the order of fp32 sums differs.
  // A sum of n fp32 terms differs by ~n*eps*|terms|; Adam divides by
  // sqrt(v) so relative gradient differences of ~1e-6 move parameters by
  // ~1e-6 * lr per step. Tolerance: 1e-6 absolute on O(0.1-1) parameters
  // after 6 steps of lr 1e-3 (a sign flip of a vanishing gradient would move
  // a parameter by 2e-3 and fail it).
  Dir d;
  const std::string w1 = small(d, "one.yaml", 64), w2 = small(d, "two.yaml", 32);
  std::string err;
  REQUIRE(sh(kExe + " train --quiet --workload " + w1 + " --steps 6 --checkpoint " + (d / "one.safetensors"), &err, &d) == 0);
  REQUIRE(sh(mpirun(2) + kExe + " train --quiet --workload " + w2 + " --steps 6 --checkpoint " + (d / "two.safetensors"),
             &err, &d) == 0);
  const StFile a = read_safetensors(d / "one.safetensors"), b = read_safetensors(d / "two.safetensors");
  double max_diff = 0;
  int moved = 0;
  const StFile init = [&] {
    REQUIRE(sh(kExe + " train --quiet --workload " + w1 + " --steps 1 --checkpoint " + (d / "s1.safetensors")) == 0);
    return read_safetensors(d / "s1.safetensors");
  }();
  for (const auto& [name, t] : a.tensors) {
    const auto& u = b.tensors.at(name).data;
    for (std::size_t i = 0; i < t.data.size(); ++i) {
      max_diff = std::max(max_diff, static_cast<double>(std::fabs(t.data[i] - u[i])));
      moved += t.data[i] != init.tensors.at(name).data[i];
    }
  }
  CAPTURE(max_diff);
  CHECK(max_diff < 1e-6);
  CHECK(moved > 100);  // training did change the parameters
}

namespace {
// Turns one measured iteration of rank 0 (from the trainer's trace) into the
// replay's input: every compute piece in order, with the gaps between them,
// each bucket copy marking its gradient ready; collectives last `delay_s`.
ReplayInput replay_of_trace(const nlohmann::json& trace, std::int64_t step, const std::vector<Param>& params,
                            const std::vector<Bucket>& buckets, double delay_s, std::vector<Op>& ops, int rank = 0) {
  std::vector<TraceSlice> ev;
  for (const auto& e : read_trace_slices(trace))
    if (e.rank == rank && e.track == 0 && e.iteration == step && e.category != "wait") ev.push_back(e);
  std::sort(ev.begin(), ev.end(), [](const TraceSlice& a, const TraceSlice& b) {
    return a.t0_s < b.t0_s || (a.t0_s == b.t0_s && a.t1_s > b.t1_s);
  });
  std::map<std::string, int> index;
  for (std::size_t p = 0; p < params.size(); ++p) index[params[p].name] = static_cast<int>(p);
  std::vector<double> times;
  double cursor = ev.front().t0_s;
  auto add = [&](const std::string& name, Phase ph, double dur, int ready) {
    Op o;
    o.name = name;
    o.phase = ph;
    o.ready_param = ready;
    ops.push_back(o);
    times.push_back(std::max(0.0, dur));
  };
  double span_end = -1;  // end of the enclosing backward-layer slice
  Phase span_phase = Phase::backward;
  for (const auto& e : ev) {
    Phase ph = e.category == "host" ? Phase::zero_grad : e.category == "forward" ? Phase::forward
             : e.category == "grad_copy" ? Phase::grad_copy : e.category == "backward" || e.category == "launch" ? Phase::backward
             : Phase::optimizer;
    if (span_end >= 0 && e.t0_s >= span_end) {  // leave the enclosing slice
      add("rest", span_phase, span_end - cursor, -1);
      cursor = span_end;
      span_end = -1;
    }
    if (e.category == "backward") {  // bucket copies nest inside it
      add("gap", Phase::backward, e.t0_s - cursor, -1);
      cursor = e.t0_s;
      span_end = e.t1_s;
      span_phase = Phase::backward;
      continue;
    }
    add("gap", ph == Phase::grad_copy ? Phase::backward : ph, e.t0_s - cursor, -1);
    const int ready = ph == Phase::grad_copy ? index.at(e.name.substr(std::string("bucket_copy ").size())) : -1;
    add(e.name, ph, e.t1_s - e.t0_s, ready);
    cursor = e.t1_s;
  }
  if (span_end >= 0) add("rest", span_phase, span_end - cursor, -1);
  ReplayInput in;
  in.ranks = 1;
  in.ops = ops;
  in.op_time_s = times;
  PlannedBuckets pb;
  pb.buckets = buckets;
  for (std::size_t b = 0; b < buckets.size(); ++b) pb.allreduce.push_back(CollectiveEstimate{delay_s, "delay", ""});
  in.first = pb;
  in.steady = pb;
  in.broadcast_buffers = false;
  in.iterations = 1;
  in.include_first = false;
  return in;
}

// Trains a small model with every all-reduce lasting exactly D = 2 ms and
// checks every rank's exposed communication in steady iterations against
// the replay of that rank's own timeline (one rank, the same D).
void check_overlap(int ranks, double tol_abs_s, double tol_rel) {
  Dir d;
  const std::string w = workload(d, "w.yaml", R"(name: overlap
kan: {widths: [16, 64, 64, 1], grid_size: 5, spline_order: 3}
task: teacher
batch_per_gpu: 256
dataset_size: 4096
seed: 2
implementation: kanscale
ddp: {bucket_cap: "32KiB", first_bucket: "16KiB", broadcast_buffers: false}
)");
  const double D = 2e-3;
  std::string err;
  const std::string launch = ranks > 1 ? timeout(120) + "env " + mpirun(ranks) : std::string();
  REQUIRE(sh(launch + kExe + " train --quiet --workload " + w + " --steps 6 --inject-delay-us 2000 --json " + (d / "t.json") +
                 " --trace " + (d / "tr.json"),
             &err, &d) == 0);
  const auto j = nlohmann::json::parse(slurp(d / "t.json"));
  const auto tr = nlohmann::json::parse(slurp(d / "tr.json"));
  // summary.ops: every compute op by name; they do not overlap, so their
  // medians sum to about the compute (the medians of parts need not add up
  // exactly: within 10%)
  {
    double sum = 0;
    std::set<std::string> names;
    for (const auto& op : j["summary"]["ops"]) {
      names.insert(op["op"].get<std::string>());
      sum += op["median_s"].get<double>();
    }
    for (const char* n : {"load batch", "forward layer 0", "forward layer 2", "mse", "backward layer 2", "backward layer 0", "progress",
                          "bucket_copy layers.0.spline_weight", "launch", "copy_back", "adam"})
      CHECK(names.count(n) == 1);
    const double compute = j["summary"]["compute_time_s"]["median"].get<double>();
    CAPTURE(sum);
    CAPTURE(compute);
    CHECK(sum <= 1.1 * compute);
    CHECK(sum >= 0.8 * compute);
  }
  const Workload wl = load_workload(w);
  const KanShape shape{wl.widths, wl.grid_size, wl.spline_order};
  const auto params = kan_parameters(shape);
  std::vector<double> pbytes;
  for (const auto& p : params) pbytes.push_back(p.bytes());
  const auto plans = ddp_bucket_plans(pbytes, kan_ready_order(shape), wl.ddp);
  REQUIRE(plans.steady.size() >= 4);
  int compared = 0;
  for (int rank = 0; rank < ranks; ++rank) {
    // A step whose rank lost the core for a few milliseconds (two ranks on
    // two shared virtual cores: once in 40 runs here, +5 ms on one step) is
    // the machine, not the overlap: at least 3 of a rank's 4 steps must
    // match, and every step must show exposed communication.
    int matched = 0;
    for (std::int64_t step = 2; step < 6; ++step) {
      std::vector<Op> ops;
      const auto r = replay(replay_of_trace(tr, step, params, plans.steady, D, ops, rank));
      const double predicted = r.iterations[0][0].exposed_s;
      // The trainer notices a finished bucket when it polls, between
      // layers: a completion can be seen up to one backward layer late.
      // Measured from this step's own trace, so the tolerance follows the
      // machine's speed (a sanitizer build runs the layers 5-20x slower).
      // The longest stretch between two polls (a layer's backward, its
      // copies and launches, up to the 'progress' slice after it).
      double poll_s = 0;
      std::vector<TraceSlice> mine;
      for (const auto& e : read_trace_slices(tr))
        if (e.rank == rank && e.track == 0 && e.iteration == step) mine.push_back(e);
      std::sort(mine.begin(), mine.end(), [](const TraceSlice& a, const TraceSlice& b) { return a.t0_s < b.t0_s; });
      double since = -1;
      for (std::size_t i = 0; i < mine.size(); ++i) {
        if (i > 0) CHECK(mine[i].t0_s >= mine[i - 1].t1_s - 1e-9);  // never overlap (the trace holds microseconds as doubles)
        if (mine[i].category == "backward" && since < 0) since = mine[i].t0_s;
        if (mine[i].name == "progress" && since >= 0) {
          poll_s = std::max(poll_s, mine[i].t1_s - since);
          since = mine[i].t1_s;
        }
      }
      CHECK(poll_s > 0);
      double measured = -1;
      for (const auto& row : j["iterations"])
        if (row["step"] == step && row["rank"] == rank) measured = row["exposed_communication_s"];
      CAPTURE(rank);
      CAPTURE(step);
      CAPTURE(predicted);
      CAPTURE(measured);
      CAPTURE(poll_s);
      CHECK(predicted > D);  // the communication really is exposed
      const bool match = std::fabs(measured - predicted) <= tol_abs_s + tol_rel * predicted + poll_s;
      if (!match) MESSAGE("step off by more than the tolerance: rank ", rank, " step ", step, " predicted ", predicted, " measured ", measured);
      matched += match;
      ++compared;
    }
    CAPTURE(rank);
    CHECK(matched >= 3);
  }
  CHECK(compared == 4 * ranks);
}
}  // namespace

TEST_CASE("overlap: with a known delay per all-reduce, measured exposed communication matches the simulator") {
  // Collectives that last exactly D (the trainer holds each bucket until
  // start + D, start = max(launch, previous end)) on one rank, so the
  // backward's real timing decides the overlap. The replay gets the same
  // compute timeline and buckets. Tolerance 0.3 ms + 3%: the trainer notices
  // a finished bucket only when it polls between layers or every ~20 us in
  // the final wait (plus scheduler wake-up on a shared VM).
  check_overlap(1, 3e-4, 0.03);
}

TEST_CASE("overlap under mpirun -np 2: each rank's exposed communication matches the replay of its own timeline") {
  // As above, with two ranks and the real MPI all-reduce underneath: a
  // bucket ends at max(start + D, when MPI finished it), and MPI (32 KiB
  // buckets, tens of microseconds here) finishes well inside D unless the
  // other rank launched later by more than D - its duration. The launch
  // skew between the two ranks is part of the tolerance (0.5 ms + 5%: two
  // ranks on two shared virtual cores).
  check_overlap(2, 5e-4, 0.05);
}

TEST_CASE("bench interference runs to the end under mpirun (ranks that started different numbers of all-reduces)") {
  Dir d;
  const std::string w = small(d, "w.yaml", 256);
  std::string err;
  for (const char* bytes : {"4KiB", "1MiB"}) {
    CAPTURE(bytes);
    REQUIRE(sh(timeout(120) + "env " + mpirun(2) + kExe + " bench interference --repeat 3 --workload " + w + " --bytes " + bytes +
                   " --json " + (d / "i.json"),
               &err, &d) == 0);
    const auto j = nlohmann::json::parse(slurp(d / "i.json"));
    CHECK(j["ranks"] == 2);
    CHECK(j["alone_s"].get<double>() > 0);
    CHECK(std::isfinite(j["interference_mean"].get<double>()));
  }
  // Open MPI's non-blocking all-reduce keeps a copy of the message while in
  // flight (measured here: 1.03-1.2 x for 1-8 MiB over shm and tcp); a
  // 1 MiB message must show at least half of it on the largest rank
  const auto j = nlohmann::json::parse(slurp(d / "i.json"));
  CHECK(j["inflight_memory_bytes_max"].get<double>() >= 0.5 * 1048576);
}

TEST_CASE("bench progress under mpirun writes every point, and kanscale fit turns them into an mpi_progress term") {
  Dir d;
  std::string err;
  REQUIRE(sh(timeout(120) + "env " + mpirun(2) + kExe + " bench progress --repeat 3 --sizes 64KiB,1MiB --polls 0,0.1 --json " +
                 (d / "p.json"),
             &err, &d) == 0);
  const auto j = nlohmann::json::parse(slurp(d / "p.json"));
  CHECK(j["ranks"] == 2);
  REQUIRE(j["points"].size() == 4);  // 2 sizes x 2 poll intervals
  for (const auto& p : j["points"]) {
    CHECK(p["alone_s"].get<double>() > 0);
    CHECK(p["compute_s"].get<double>() > 0);
    CHECK(p["wait_s"].get<double>() >= 0);
    CHECK(p["compute_alone_s"].get<double>() > 0);  // the same work timed alone
  }
  // no poll in the first point of a size; in the second, polls within the work
  CHECK(j["points"][0]["poll_interval_s"].get<double>() == 0.0);
  CHECK(j["points"][1]["poll_interval_s"].get<double>() > 0);
  CHECK(j["points"][1]["poll_interval_s"].get<double>() < j["points"][1]["compute_alone_s"].get<double>());
  REQUIRE(sh(kExe + " fit --progress " + (d / "p.json") + " --out " + (d / "c.yaml"), &err, &d) == 0);
  CHECK(slurp(d / "c.yaml").find("mpi_progress: {min_steps: ") != std::string::npos);
}

TEST_CASE("bench overlap under mpirun times one all-reduce, a pair at once and a staggered pair, per size") {
  Dir d;
  std::string err;
  REQUIRE(sh(timeout(120) + "env " + mpirun(2) + kExe + " bench overlap --repeat 3 --sizes 4KiB,256KiB --gap 0.5 --json " + (d / "o.json"),
             &err, &d) == 0);
  const auto j = nlohmann::json::parse(slurp(d / "o.json"));
  CHECK(j["ranks"] == 2);
  REQUIRE(j["points"].size() == 2);
  CHECK(j["points"][0]["bytes"].get<double>() == 4096);
  CHECK(j["points"][1]["bytes"].get<double>() == 262144);
  for (const auto& p : j["points"]) {
    const double alone = p["alone_s"].get<double>(), pair = p["pair_s"].get<double>();
    CHECK(alone > 0);
    CHECK(pair > 0);
    CHECK(p["gap_s"].get<double>() > 0);
    // the staggered pair includes the gap's compute, which runs before the
    // second launch (its median against the gap's own, timed apart: within
    // the VM's noise, generously)
    CHECK(p["staggered_s"].get<double>() > 0.5 * p["gap_s"].get<double>());
    // the hidden share as the file defines it, (2 alone - pair) / alone
    CHECK(p["hidden_pair"].get<double>() == doctest::Approx((2 * alone - pair) / alone));
  }
}

TEST_CASE("resume refuses what would break bit-identity; a failed checkpoint write ends every rank") {
  Dir d;
  const std::string w = small(d, "w.yaml", 32);
  std::string err;
  REQUIRE(sh(kExe + " train --quiet --workload " + w + " --steps 4 --checkpoint " + (d / "a.safetensors"), &err, &d) == 0);
  // another batch size
  const std::string w64 = small(d, "w64.yaml", 64);
  CHECK(sh(kExe + " train --quiet --workload " + w64 + " --steps 8 --resume " + (d / "a.safetensors"), &err, &d) == 2);
  CHECK(err.find("saved with batch_per_gpu 32, resumed with 64") != std::string::npos);
  // another grid size
  std::string g8 = slurp(w);
  g8.replace(g8.find("grid_size: 5"), 12, "grid_size: 8");
  std::ofstream(d / "g8.yaml") << g8;
  CHECK(sh(kExe + " train --quiet --workload " + (d / "g8.yaml") + " --steps 8 --resume " + (d / "a.safetensors"), &err, &d) == 2);
  CHECK(err.find("G=5, k=3; the workload asks for another") != std::string::npos);
  // another thread count
  CHECK(sh(kExe + " train --quiet --threads 2 --workload " + w + " --steps 8 --resume " + (d / "a.safetensors"), &err, &d) == 2);
  // nothing left to do
  CHECK(sh(kExe + " train --quiet --workload " + w + " --steps 4 --resume " + (d / "a.safetensors"), &err, &d) == 2);
  CHECK(err.find("checkpoint is at step 4") != std::string::npos);
  // a model file and an optimizer file of different steps
  REQUIRE(sh(kExe + " train --quiet --workload " + w + " --steps 6 --checkpoint " + (d / "b.safetensors"), &err, &d) == 0);
  std::system(("cp " + (d / "a.optim.safetensors") + " " + (d / "b.optim.safetensors")).c_str());
  CHECK(sh(kExe + " train --quiet --workload " + w + " --steps 8 --resume " + (d / "b.safetensors"), &err, &d) == 2);
  CHECK(err.find("are from different steps") != std::string::npos);
  // a checkpoint path that cannot be written is refused before training
  int rc = sh(timeout(60) + "env " + mpirun(2) + kExe + " train --quiet --workload " + w +
                  " --steps 10 --checkpoint-every 3 --checkpoint /nonexistent-dir/x.safetensors",
              &err, &d);
  CHECK(rc == 2);
  CHECK(err.find("--checkpoint /nonexistent-dir/x.safetensors: the directory '/nonexistent-dir' does not exist") != std::string::npos);
  // rank 0's write fails mid-run (the model file is a link to /dev/full,
  // a device that answers every write with ENOSPC): both ranks end (no
  // hang), with rank 0's reason
  REQUIRE(symlink("/dev/full", (d / "full.safetensors").c_str()) == 0);
  rc = sh(timeout(60) + "env " + mpirun(2) + kExe + " train --quiet --workload " + w + " --steps 10 --checkpoint-every 3 --checkpoint " +
              (d / "full.safetensors"),
          &err, &d);
  CHECK(rc != 0);
  CHECK(rc != 124);  // not the timeout
  CHECK(err.find("/dev/full: write failed: No space left on device") != std::string::npos);
}

TEST_CASE("every task trains; pykan-bessel included") {
  Dir d;
  const std::string w = workload(d, "b.yaml", R"(name: bessel
kan: {widths: [2, 5, 1]}
task: pykan-bessel
batch_per_gpu: 64
dataset_size: 256
seed: 1
implementation: kanscale
)");
  std::string err;
  CHECK(sh(kExe + " train --quiet --workload " + w + " --steps 3", &err, &d) == 0);
  CAPTURE(err);
}

TEST_CASE("train with several workloads under one mpirun: each run's --json, its own peak memory, as run alone") {
  Dir d;
  // a: [256, 1024, 1] G5 k3: 256 x 1024 x (5 + 3 + 2) = 2.6M parameters, 10 MiB, held at least 4 times
  // (parameters, gradients, Adam's two moments): 40 MiB beyond b, a [4, 8, 1] layer of 96 parameters
  const std::string a = workload(d, "a.yaml", "name: big\nkan: {widths: [256, 1024, 1], grid_size: 5}\nbatch_per_gpu: 16\ndataset_size: 64\nimplementation: kanscale\n");
  const std::string b = workload(d, "b.yaml", "name: small\nkan: {widths: [4, 8, 1], grid_size: 5}\nbatch_per_gpu: 4\ndataset_size: 64\nimplementation: kanscale\n");
  std::string err;
  const std::string base = timeout(120) + "env " + mpirun(2) + kExe + " train --quiet --steps 4";
  REQUIRE(sh(base + " --workload " + a + " --json " + (d / "a.json") + " --workload " + b + " --json " + (d / "b.json"), &err, &d) == 0);
  REQUIRE(sh(base + " --workload " + b + " --json " + (d / "alone.json"), &err, &d) == 0);
  const auto ja = nlohmann::json::parse(slurp(d / "a.json")), jb = nlohmann::json::parse(slurp(d / "b.json")),
             alone = nlohmann::json::parse(slurp(d / "alone.json"));
  CHECK(ja["summary"]["steps"] == 4);
  CHECK(jb["summary"]["steps"] == 4);
  const double pa = ja["summary"]["peak_rss_bytes"].get<double>(), pb = jb["summary"]["peak_rss_bytes"].get<double>(),
               p1 = alone["summary"]["peak_rss_bytes"].get<double>();
  CAPTURE(pa);
  CAPTURE(pb);
  CAPTURE(p1);
  // without the reset between runs, b would report a's peak (the process's)
  CHECK(pb < pa - 20.0 * 1048576);
  // and most of what a held is not carried into b's figure
  CHECK(std::abs(pb - p1) < 0.25 * (pa - p1));
}

TEST_CASE("measure allreduce --large-from: fewer iterations from that size up, recorded, every result verified; resume keeps them") {
  Dir d;
  std::string err;
  const std::string base = timeout(120) + "env " + mpirun(2) + kExe + " measure allreduce -b 8 -e 1M -f 4 -n 3 -w 1";
  const std::string large = " --large-from 64K --large-iters 1 --large-warmup 0";
  REQUIRE(sh(base + large + " --json " + (d / "a.json"), &err, &d) == 0);
  const auto a = nlohmann::json::parse(slurp(d / "a.json"));
  CHECK(a["metadata"]["large_from_bytes"] == 65536.0);
  CHECK(a["metadata"]["large_iters"] == 1);
  CHECK(a["metadata"]["large_warmup_iters"] == 0);
  REQUIRE(a["points"].size() == 9);  // 8 * 4^j up to 512 KiB, as without --large-from
  for (const auto& p : a["points"]) {
    CHECK(p["out_of_place"]["wrong"] == 0);
    CHECK(p["in_place"]["wrong"] == 0);
  }
  // a file written without --large-from resumes without it (every size at -n and -w) ...
  REQUIRE(sh(base + " --json " + (d / "b.json") + " --max-points 3", &err, &d) == 0);
  auto older = nlohmann::json::parse(slurp(d / "b.json"));
  CHECK(older["metadata"]["large_iters"] == 3);  // -n, every size
  for (const char* k : {"large_from_bytes", "large_iters", "large_warmup_iters"}) older["metadata"].erase(k);  // as files before the option
  std::ofstream(d / "b.json") << older.dump(2);
  REQUIRE(sh(base + " --resume " + (d / "b.json"), &err, &d) == 0);
  CHECK(nlohmann::json::parse(slurp(d / "b.json"))["points"].size() == 9);
  // ... and one measured with it is not resumed with other iterations
  CHECK(sh(base + " --resume " + (d / "a.json"), &err, &d) == 2);
  CHECK(err.find("was measured with another large_from_bytes") != std::string::npos);
}

TEST_CASE("measure allreduce under mpirun: every result verified, nccl-tests' busbw, and resume equals an uninterrupted sweep") {
  Dir d;
  std::string err;
  const std::string base = timeout(120) + "env " + mpirun(3) + kExe + " measure allreduce -b 8 -e 1M -f 4 -n 3 -w 1";
  REQUIRE(sh(base + " --json " + (d / "a.json"), &err, &d) == 0);
  const auto a = nlohmann::json::parse(slurp(d / "a.json"));
  CHECK(a["metadata"]["ranks"] == 3);
  // sizes 8 * 4^j up to 1 MiB: 8, 32, ..., 8 * 4^8 = 512 KiB: 9 points
  REQUIRE(a["points"].size() == 9);
  for (const auto& p : a["points"]) {
    CHECK(p["out_of_place"]["wrong"] == 0);
    CHECK(p["in_place"]["wrong"] == 0);
    CHECK(p["count"].get<double>() * 4 == p["size_bytes"].get<double>());
    // busbw = algbw * 2(n-1)/n = algbw * 4/3
    CHECK(p["out_of_place"]["busbw_GBps"].get<double>() ==
          doctest::Approx(p["out_of_place"]["algbw_GBps"].get<double>() * 4.0 / 3.0));
    CHECK(p["out_of_place"]["algbw_GBps"].get<double>() ==
          doctest::Approx(p["size_bytes"].get<double>() / p["out_of_place"]["time_us"].get<double>() / 1e3));
  }
  // interrupted after 4 points, then resumed
  REQUIRE(sh(base + " --json " + (d / "b.json") + " --max-points 4", &err, &d) == 0);
  auto interrupted = nlohmann::json::parse(slurp(d / "b.json"));
  CHECK(interrupted["points"].size() == 4);
  interrupted["metadata"]["provenance"]["date_utc"] = "2000-01-01T00:00:00Z";  // marked: a new date cannot pass for the kept one
  std::ofstream(d / "b.json") << interrupted.dump(2);
  REQUIRE(sh(base + " --resume " + (d / "b.json"), &err, &d) == 0);
  const auto c = nlohmann::json::parse(slurp(d / "b.json"));
  CHECK(c["metadata"]["provenance"]["date_utc"] == "2000-01-01T00:00:00Z");  // when the sweep started
  REQUIRE(c["metadata"]["resumed"].size() == 1);
  CHECK(c["metadata"]["resumed"][0]["points_done_before"] == 4);
  REQUIRE(c["points"].size() == a["points"].size());
  for (std::size_t i = 0; i < a["points"].size(); ++i) {
    CHECK(c["points"][i]["size_bytes"] == a["points"][i]["size_bytes"]);
    CHECK(c["points"][i]["count"] == a["points"][i]["count"]);
    CHECK(c["points"][i]["in_place"]["wrong"] == a["points"][i]["in_place"]["wrong"]);
  }
  for (const char* k : {"op", "ranks", "min_bytes", "max_bytes", "factor", "iters", "warmup_iters", "hosts"})
    CHECK(c["metadata"][k] == a["metadata"][k]);
  // a resume file of another sweep is refused before anything runs
  CHECK(sh(timeout(120) + "env " + mpirun(3) + kExe + " measure allreduce -b 8 -e 4M -f 4 -n 3 -w 1 --resume " + (d / "a.json"),
           &err, &d) == 2);
  CHECK(err.find("was measured with another max_bytes") != std::string::npos);
  std::ofstream(d / "junk.json") << "{not json";
  CHECK(sh(kExe + " measure allreduce --resume " + (d / "junk.json"), &err, &d) == 2);
  CHECK(err.find("junk.json: not JSON") != std::string::npos);
  CHECK(err.find("expected a kanscale sweep file") != std::string::npos);
  CHECK(sh(kExe + " measure allreduce -b 8x", &err, &d) == 2);
}

TEST_CASE("measure kernels under mpirun -np 2: interrupted and resumed equals an uninterrupted run (timings apart)") {
  Dir d;
  std::string err;
  const std::string base = timeout(120) + "env " + mpirun(2) + kExe +
                           " measure kernels --shapes 64:8:8:5:3,128:16:8:5:3,64:32:16:8:3,32:8:32:5:2 --repeat 3";
  REQUIRE(sh(base + " --json " + (d / "a.json"), &err, &d) == 0);
  REQUIRE(sh(base + " --json " + (d / "b.json") + " --max-shapes 2", &err, &d) == 0);
  const auto half = nlohmann::json::parse(slurp(d / "b.json"));
  CHECK(half["metadata"]["shapes_done"] == 2);
  CHECK(half["memory"].size() == 4);  // 2 shapes x 2 ranks
  // the first run's date and machine ceilings, marked so that a re-measured
  // value cannot pass for a kept one
  auto marked = half;
  marked["metadata"]["provenance"]["date_utc"] = "2000-01-01T00:00:00Z";
  marked["metadata"]["gemm_flops_per_s"] = 12345.0;
  marked["metadata"]["memcpy_bytes_per_s"] = 678.0;
  marked["metadata"]["runtime_memory_bytes"] = 91011.0;
  marked["metadata"]["effective_cache_bytes"] = 1213.0;
  std::ofstream(d / "b.json") << marked.dump(2);
  REQUIRE(sh(base + " --resume " + (d / "b.json"), &err, &d) == 0);
  const auto a = nlohmann::json::parse(slurp(d / "a.json")), b = nlohmann::json::parse(slurp(d / "b.json"));
  CHECK(b["metadata"]["shapes_done"] == 4);
  // a resumed file keeps its first measurements and records the resume
  CHECK(b["metadata"]["provenance"]["date_utc"] == "2000-01-01T00:00:00Z");
  CHECK(b["metadata"]["gemm_flops_per_s"] == 12345.0);
  CHECK(b["metadata"]["memcpy_bytes_per_s"] == 678.0);
  CHECK(b["metadata"]["runtime_memory_bytes"] == 91011.0);
  CHECK(b["metadata"]["effective_cache_bytes"] == 1213.0);
  REQUIRE(b["metadata"]["resumed"].size() == 1);
  CHECK(b["metadata"]["resumed"][0]["shapes_done_before"] == 2);
  CHECK(b["metadata"]["resumed"][0]["date_utc"] != "2000-01-01T00:00:00Z");
  REQUIRE(b["rows"].size() == a["rows"].size());
  for (std::size_t i = 0; i < a["rows"].size(); ++i)
    for (const char* k : {"op", "batch", "in", "out", "grid_size", "spline_order", "detail", "flops", "bytes", "rank"})
      CHECK(b["rows"][i][k] == a["rows"][i][k]);
  // without a stopping rule every op, warm or cold, takes --repeat's 3 samples
  for (const auto& r : a["rows"]) CHECK(r["samples"] == 3);
  REQUIRE(b["memory"].size() == a["memory"].size());
  for (std::size_t i = 0; i < a["memory"].size(); ++i) CHECK(b["memory"][i]["in"] == a["memory"][i]["in"]);
  // another plan's file is refused before anything runs
  CHECK(sh(kExe + " measure kernels --shapes 64:8:8:5:3 --repeat 3 --resume " + (d / "a.json"), &err, &d) == 2);
  CHECK(err.find("was measured with another") != std::string::npos);
}

TEST_CASE("measure broadcast from a non-zero root is verified on every rank") {
  Dir d;
  std::string err;
  REQUIRE(sh(timeout(120) + "env " + mpirun(3) + kExe + " measure broadcast -r 1 -b 4 -e 64K -f 8 -n 2 -w 1 --json " + (d / "b.json") +
                 " --csv " + (d / "b.csv"),
             &err, &d) == 0);
  const auto j = nlohmann::json::parse(slurp(d / "b.json"));
  for (const auto& p : j["points"]) {
    CHECK(p["root"] == 1);
    CHECK(p["out_of_place"]["wrong"] == 0);
    CHECK(p["in_place"]["wrong"] == 0);
    CHECK(p["out_of_place"]["busbw_GBps"] == p["out_of_place"]["algbw_GBps"]);  // broadcast: factor 1
  }
  CHECK(slurp(d / "b.csv").find("size_bytes,count,type,redop,root,oop_time_us") != std::string::npos);
}

TEST_CASE("measure kernels -> fit -> simulate with implementation kanscale, and model queries") {
  Dir d;
  std::string err;
  REQUIRE(sh(kExe + " measure kernels --repeat 3 --shapes 64:8:8:5:3,128:16:16:5:3,128:32:8:8:2,256:16:32:5:3,256:32:32:5:3,"
                    "512:16:16:10:3 --json " + (d / "k.json") + " --csv " + (d / "k.csv"),
             &err, &d) == 0);
  const auto k = nlohmann::json::parse(slurp(d / "k.json"));
  CHECK(k["metadata"]["repeats"] == 3);
  CHECK(k["metadata"]["gemm_flops_per_s"].get<double>() > 0);
  for (const auto& r : k["rows"]) CHECK(r["time_median_s"].get<double>() > 0);
  CHECK(slurp(d / "k.csv").find("op,batch,in,out,grid_size,spline_order,detail,flops,bytes,time_median_s") != std::string::npos);
  REQUIRE(sh(kExe + " fit --kernels " + (d / "k.json") + " --out " + (d / "cal.yaml"), &err, &d) == 0);
  const std::string cal = slurp(d / "cal.yaml");
  CHECK(cal.find("source: fitted") != std::string::npos);
  CHECK(cal.find("kan_forward:") != std::string::npos);
  CHECK(cal.find("k.json") != std::string::npos);  // what it was fitted from
  // and on which machine: the kernels file's fingerprint, this machine's cores
  CHECK(k["metadata"]["machine"]["cores"].get<long>() == sysconf(_SC_NPROCESSORS_ONLN));
  CHECK(cal.find("machine: {cpu_model: ") != std::string::npos);
  // the simulator reads it and predicts kanscale's own iteration
  const std::string w = workload(d, "w.yaml", R"(name: t
kan: {widths: [16, 32, 1]}
batch_per_gpu: 256
dataset_size: 4096
implementation: kanscale
)");
  REQUIRE(sh(kExe + " simulate --cluster " + kSrc + "/configs/clusters/local-cpu.yaml --workload " + w + " --calibration " +
                 (d / "cal.yaml") + " --gpus 1,2 --json " + (d / "s.json"),
             &err, &d) == 0);
  const auto s = nlohmann::json::parse(slurp(d / "s.json"));
  CHECK(s["points"][0]["iteration_time_s"]["median"].get<double>() > 0);
  CHECK(s["provenance"]["calibration"]["machine"].get<std::string>().find(std::to_string(sysconf(_SC_NPROCESSORS_ONLN)) + " cores") != std::string::npos);
  // without a fitted calibration, kanscale's ops have no cost: one clear line, exit 2
  CHECK(sh(kExe + " simulate --cluster " + kSrc + "/configs/clusters/local-cpu.yaml --gpus 1,2 --workload " + w, &err, &d) == 2);
  CHECK(err.find("has no fitted cost for op") != std::string::npos);
  // model queries print a time
  std::system((kExe + " model allreduce --cluster " + kSrc + "/configs/clusters/finisterrae3.yaml --bytes 1MiB --gpus 8 > " +
               (d / "m.txt")).c_str());
  CHECK(slurp(d / "m.txt").find("430.75 us") != std::string::npos);  // the hand-computed ring/Simple time (unit_collectives)
  // malformed measurement files
  std::ofstream(d / "bad.json") << R"({"metadata": {}, "rows": [{"op": "kan_forward", "flops": 1}]})";
  CHECK(sh(kExe + " fit --kernels " + (d / "bad.json") + " --out " + (d / "x.yaml"), &err, &d) == 2);
  CHECK(err.find("bad.json: key 'rows[0].time_median_s': missing; expected a number") != std::string::npos);
  std::ofstream(d / "bad2.json") << "{";
  CHECK(sh(kExe + " fit --kernels " + (d / "bad2.json") + " --out " + (d / "x.yaml"), &err, &d) == 2);
  CHECK(err.find("bad2.json: not JSON") != std::string::npos);
  CHECK_FALSE(std::ifstream(d / "x.yaml").good());
}

TEST_CASE("validation in the suite: the fitted calibration beats 4x-wrong ones on the same live runs") {
  // validation/plans/ci-small.yaml: a communication-heavy model on 1 and 2
  // ranks, calibrated from microbenchmarks measured in the same rounds. How
  // close the fitted calibration lands depends on the machine and on what
  // else runs on its two cores (here, quiet: iteration -2 to -8.5%; on
  // another 2-core machine the 1-rank case missed by -8 to -30%, and the
  // plan's own bound failed 2 runs of 3; beside two compilers, -73%). So the
  // test asserts what holds on any machine: the same live runs predicted
  // (--collect) from the same calibration with every all-reduce and
  // broadcast bandwidth divided by 4, and multiplied by 4, are both further
  // from the measured exposed communication of the 2-rank case than the
  // fitted calibration. Measured here, quiet: 3-4% of the iteration off with
  // the fitted calibration, 55-60% with the bandwidths divided by 4.
  // One live measurement a few seconds long on a shared 2-core runner can be
  // hit by a neighbour (seen once in about 20 runs: the fitted calibration 11%
  // off, the fast control 6%): a failed comparison measures again, once, and
  // the second measurement decides. Both attempts are in the log.
  struct Errors {
    double ok = 0, slow = 0, fast = 0, comm_share = 0, moved_slow = 0, iter_predicted = 0;
    bool fast_lower = false;
    int two_rank = 0;
  };
  Dir d;
  const std::string in_src = "cd " + kSrc + " && ";
  auto attempt = [&](const std::string& tag) {
    Errors e;
    std::string err;
    const std::string out = d / ("ok" + tag);
    const int rc = sh(in_src + timeout(170) + kExe + " validate validation/plans/ci-small.yaml --out " + out, &err, &d);
    CAPTURE(err);
    REQUIRE((rc == 0 || rc == 1));  // compared; whether the plan's own bound held is the machine's business
    const auto ok = nlohmann::json::parse(slurp(out + "/results.json"));
    REQUIRE(ok["cases"].size() == 2);
    // the two controls
    auto control = [&](double factor, const std::string& name) {
      std::string cal = slurp(out + "/work/results/calibration-shm.yaml");
      int changed = 0;
      for (std::size_t pos = cal.find("bandwidth: \""); pos != std::string::npos; pos = cal.find("bandwidth: \"", pos + 1)) {
        const std::size_t a = pos + 12, b = cal.find("GB/s\"", a);
        REQUIRE(b != std::string::npos);
        const double bw = std::stod(cal.substr(a, b - a));
        cal.replace(a, b - a, std::to_string(bw * factor));
        ++changed;
      }
      REQUIRE(changed >= 1);
      const std::string file = d / (name + tag + ".yaml");
      std::ofstream(file) << cal;
      const int rc_control = sh(in_src + kExe + " validate validation/plans/ci-small.yaml --collect " + out + "/work --calibration " +
                                    file + " --out " + (d / (name + tag)),
                                &err, &d);
      REQUIRE((rc_control == 0 || rc_control == 1));
      return nlohmann::json::parse(slurp(d / (name + tag + "/results.json")));
    };
    const auto slow = control(0.25, "slow"), fast = control(4.0, "fast");
    for (std::size_t i = 0; i < ok["cases"].size(); ++i) {
      if (ok["cases"][i]["ranks"] != 2) continue;
      ++e.two_rank;
      const auto& live = ok["cases"][i]["measured_median"];
      const double iter = live["iteration_time_s"].get<double>();
      e.comm_share = live["communication_time_s"].get<double>() / iter;
      const double exposed = live["exposed_communication_s"].get<double>();
      auto predicted = [&](const nlohmann::json& r) { return r["cases"][i]["predicted"]["exposed_communication_s"].get<double>(); };
      e.ok = std::fabs(predicted(ok) - exposed) / iter;
      e.slow = std::fabs(predicted(slow) - exposed) / iter;
      e.fast = std::fabs(predicted(fast) - exposed) / iter;
      e.iter_predicted = ok["cases"][i]["predicted"]["iteration_time_s"].get<double>();
      e.moved_slow = predicted(slow) - predicted(ok);
      e.fast_lower = predicted(fast) < predicted(ok);
    }
    MESSAGE("attempt" << tag << ": exposed-communication error, fitted " << e.ok << ", bandwidths / 4 " << e.slow << ", x 4 " << e.fast
                      << " (of the iteration)");
    return e;
  };
  Errors e = attempt("1");
  if (!(e.ok < e.slow && e.ok < e.fast)) e = attempt("2");
  CAPTURE(e.comm_share);
  CAPTURE(e.ok);
  CAPTURE(e.slow);
  CAPTURE(e.fast);
  CHECK(e.two_rank == 1);
  CHECK(e.comm_share > 0.05);  // the case communicates (15-30% of the iteration, measured here)
  CHECK(e.ok < e.slow);
  CHECK(e.ok < e.fast);
  // and the controls are real changes: the slow one moves the prediction by
  // more than a tenth of the predicted iteration (4x the bandwidth term of a
  // ~1 MB all-reduce), the fast one lowers it
  CHECK(e.moved_slow > 0.1 * e.iter_predicted);
  CHECK(e.fast_lower);
}

TEST_CASE("validate --emit writes Slurm and mpirun scripts whose jobs --collect then compares") {
  Dir d;
  std::string err;
  const std::string in_src = "cd " + kSrc + " && ";
  REQUIRE(sh(in_src + kExe + " validate validation/plans/ci-small.yaml --rounds 1 --emit " + (d / "run"), &err, &d) == 0);
  const std::string sb = slurp(d / "run/run-slurm.sbatch"), mr = slurp(d / "run/run-mpirun.sh");
  CHECK(sb.find("#SBATCH --nodes=1") != std::string::npos);
  CHECK(sb.find("srun --nodes=1 --ntasks=2") != std::string::npos);
  CHECK(mr.find("measure kernels --plan measure-plan.yaml") != std::string::npos);
  CHECK(mr.find("train --quiet --backend cpu --workload cases/case1.yaml") != std::string::npos);
  // run the plain script as a user would, then collect
  REQUIRE(sh("KANSCALE=" + kExe + " timeout 120 bash " + (d / "run/run-mpirun.sh"), &err, &d) == 0);
  const int rc = sh(in_src + kExe + " validate validation/plans/ci-small.yaml --rounds 1 --collect " + (d / "run") + " --out " + (d / "rep"),
                    &err, &d);
  CHECK((rc == 0 || rc == 1));  // compared (the bound may go either way with one round)
  // --collect refitted inside the run directory that --emit made: its marker lists what it wrote there
  CHECK(slurp(d / "run/.kanscale-output").find("\nresults/calibration-shm.yaml\n") != std::string::npos);
  CHECK(slurp(d / "run/.kanscale-output").find("\nrun-mpirun.sh\n") != std::string::npos);
  // the jobs' results are listed since --emit: emitting again into the same directory (a trailing slash too) is allowed
  CHECK(sh(in_src + kExe + " validate validation/plans/ci-small.yaml --rounds 1 --emit " + (d / "run/"), &err, &d) == 0);
  const auto j = nlohmann::json::parse(slurp(d / "rep/results.json"));
  CHECK(j["cases"].size() == 2);
  CHECK(slurp(d / "rep/report.md").find("## Cases") != std::string::npos);
  // the Slurm script works where it was submitted from (Slurm runs a spooled copy); no path of this machine's in it
  CHECK(sb.find("cd \"${KANSCALE_RUN_DIR:-${SLURM_SUBMIT_DIR:-.}}\" || exit 1") != std::string::npos);
  CHECK(sb.find(d.path) == std::string::npos);
}

TEST_CASE("validate --emit --site: a FinisTerrae III job run through stand-in sbatch and srun, one step failing, then --collect") {
  Dir d;
  std::string err;
  const std::string in_src = "cd " + kSrc + " && ";
  const std::string plan = "validation/plans/ci-small.yaml --rounds 1";
  REQUIRE(sh(in_src + kExe + " validate " + plan + " --emit " + (d / "run") + " --site configs/sites/finisterrae3.yaml", &err, &d) == 0);
  REQUIRE_FALSE(std::ifstream(d / "run/run-mpirun.sh"));  // the site's scheduler's script only
  const std::string sb = slurp(d / "run/run-slurm.sbatch");
  CHECK(sb.find("#SBATCH --partition=short\n") != std::string::npos);
  CHECK(sb.find("srun --mpi=pmix --nodes=1 --ntasks=2 --ntasks-per-node=2 --cpus-per-task=32 \"$KANSCALE\" train") != std::string::npos);
  CHECK(sb.find("# module load cuda/11.7.0\n") != std::string::npos);
  CHECK(sb.find("set -e") == std::string::npos);
  CHECK(sb.find("OMPI_ALLOW_RUN_AS_ROOT") == std::string::npos);  // the site does not run as root
  CHECK(sb.find("--oversubscribe") == std::string::npos);
  CHECK(sb.find(d.path) == std::string::npos);  // paths relative to the run directory
  CHECK(sh("bash -n " + (d / "run/run-slurm.sbatch"), &err, &d) == 0);
  if (std::system("command -v shellcheck >/dev/null 2>&1") == 0) {
    CHECK(sh("shellcheck " + (d / "run/run-slurm.sbatch"), &err, &d) == 0);
    CAPTURE(err);
  } else {
    MESSAGE("shellcheck is not installed (scripts/install-deps.sh installs it): the emitted script was checked with bash -n only");
  }
  // stand-ins: sbatch runs the script here from the submit directory; srun
  // starts its --ntasks ranks with mpirun (one rank: the command itself)
  std::filesystem::create_directories(d / "bin");
  std::ofstream(d / "bin/sbatch") << "#!/bin/sh\nSLURM_SUBMIT_DIR=$PWD SLURM_JOB_ID=1 exec bash \"$1\"\n";
  std::ofstream(d / "bin/srun") << "#!/bin/sh\nn=1\nwhile [ $# -gt 0 ]; do case $1 in --ntasks=*) n=${1#--ntasks=}; shift;; --*) shift;; *) break;; esac; done\n"
                                   "if [ \"$n\" -gt 1 ]; then exec env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun -np \"$n\" "
                                   "--oversubscribe \"$@\"; fi\nexec \"$@\"\n";
  std::filesystem::permissions(d / "bin/sbatch", std::filesystem::perms::owner_all);
  std::filesystem::permissions(d / "bin/srun", std::filesystem::perms::owner_all);
  // one step made to fail: the 2-rank case's workload is gone
  std::filesystem::remove(d / "run/cases/case1.yaml");
  const int job = sh("cd " + (d / "run") + " && PATH=" + (d / "bin") + ":$PATH KANSCALE=" + kExe + " timeout 180 sbatch run-slurm.sbatch", &err, &d);
  CHECK(job == 1);  // a step failed; the others ran
  const std::string steps = slurp(d / "run/results/steps.tsv");
  CHECK(steps.rfind("step\texit_status\tjob\n", 0) == 0);
  CHECK(steps.find("\t0\tkernels\n") != std::string::npos);
  CHECK(steps.find("\t0\tnp1 [32-256-32] G5 b8 cap 1.00 MiB\n") != std::string::npos);  // the step after... and before the failed one ran
  CHECK(steps.find("\t2\tnp2 [32-256-32] G5 b8 cap 1.00 MiB shm\n") != std::string::npos);
  // --collect judges the complete case, names the missing one, exit 1: never met
  const int rc = sh(in_src + kExe + " validate " + plan + " --collect " + (d / "run") + " --out " + (d / "rep"), &err, &d);
  CHECK(rc == 1);
  const auto j = nlohmann::json::parse(slurp(d / "rep/results.json"));
  CHECK(j["incomplete"] == true);
  CHECK(j["bound_met"] == false);
  CHECK(j["cases"].size() == 1);
  CHECK(j["cases_total"] == 2);
  CHECK(j["missing"][0].get<std::string>().find("results/live-c1-r0.json") == 0);
  CHECK(slurp(d / "rep/report.md").find("incomplete: 1 of 2 cases judged") != std::string::npos);
}

TEST_CASE("validate --emit: oversubscribed ranks stay on one node under srun; a plan's bad sweep options fail before anything runs") {
  Dir d;
  std::string err;
  const std::string in_src = "cd " + kSrc + " && ";
  REQUIRE(sh(in_src + kExe + " validate validation/plans/local-cpu.yaml --rounds 1 --emit " + (d / "run"), &err, &d) == 0);
  const std::string sb = slurp(d / "run/run-slurm.sbatch");
  CHECK(sb.find("srun --nodes=1 --ntasks=4 --ntasks-per-node=4 --overcommit") != std::string::npos);
  CHECK(sb.find("--nodes=2 --ntasks=4") == std::string::npos);  // shm cannot span nodes
  CHECK(sb.find("OMPI_MCA_btl_tcp_sndbuf=16384") != std::string::npos);  // tcp-slow
  // the sweep options go through measure's own parser
  std::string plan = slurp(kSrc + "/validation/plans/ci-small.yaml");
  const std::string good = "broadcast: \"-b 8 -e 64K -f 4 -n 20 -w 5\"";
  REQUIRE(plan.find(good) != std::string::npos);
  plan.replace(plan.find(good), good.size(), "broadcast: \"-b 8 -e 1X\"");
  std::ofstream(d / "bad.yaml") << plan;
  CHECK(sh(in_src + kExe + " validate " + (d / "bad.yaml") + " --out " + (d / "never"), &err, &d) == 2);
  CHECK(err.find("key 'calibration.measure.broadcast': \"-b 8 -e 1X\": -e: unknown unit") != std::string::npos);
  CHECK(!std::ifstream(d / "never/report.md"));
  CHECK(sh(kExe + " fit --collectives " + d.path + " --out " + (d / "k.yaml"), &err, &d) == 2);
  CHECK(err.find("is a directory") != std::string::npos);
}


TEST_CASE("calibrate: one command measures this machine and fits a calibration that simulate reads") {
  // configs/calibrate/ci.yaml: kernels, the runtime at 1 rank, all-reduce and
  // broadcast sweeps over shared memory, the interference and progress
  // benchmarks at 2 ranks and 9 live shapes per rank count, three rounds;
  // then the fit, with the intervals' parts.
  Dir d;
  std::string err;
  const std::string in_src = "cd " + kSrc + " && ";
  const int rc = sh(in_src + timeout(170) + kExe + " calibrate configs/calibrate/ci.yaml --out " + (d / "cal"), &err, &d);
  CAPTURE(err);
  REQUIRE(rc == 0);
  const std::string file = d / "cal/results/calibration-shm.yaml";
  const Calibration cal = load_calibration(file, load_cluster(kSrc + "/configs/clusters/local-cpu.yaml"), Precision::fp32);
  CHECK(cal.source == "fitted");
  CHECK_FALSE(cal.machine.empty());  // it knows where it was measured
  // every term it was fitted from is a file it left beside it
  for (const char* m : {"kernels-r0.json", "runtime-1rank-r0.json", "allreduce-shm-r0.json", "broadcast-shm-r0.json", "interference-r0.json",
                        "progress-shm-r0.json"}) {
    CAPTURE(m);
    CHECK(cal.derived_from.find(std::string("results/") + m) != std::string::npos);
    CHECK(std::ifstream(d / (std::string("cal/results/") + m)).good());
  }
  CHECK(slurp(d / "cal/results/fit-report-shm.txt").find("wrote results/calibration-shm.yaml") != std::string::npos);
  CHECK(cal.ops.count("kan_forward") == 1);
  CHECK(cal.mpi_regimes.size() >= 1);
  CHECK(cal.interference >= 0);  // fitted (a quiet machine may measure none)
  REQUIRE(cal.mpi_progress.has_value());  // how the all-reduce progresses (bench progress)
  CHECK(cal.mpi_progress->min_steps >= 1);
  CHECK(slurp(d / "cal/results/fit-report-shm.txt").find("MPI progress") != std::string::npos);
  // the live runs on the plan's own shapes: a term per rank count (an
  // explicit none where it predicts the shapes left out no better than
  // none), the 2-rank all-reduces against the sweep's, and the spread left
  CHECK(cal.live_terms.size() == 2);
  for (const auto& t : cal.live_terms) {
    CHECK((t.compute_factor > 0.2 && t.compute_factor < 5));  // a factor, not a rescue
    CHECK((t.comm_factor > 0.2 && t.comm_factor < 5));
  }
  const std::string fit_report = slurp(d / "cal/results/fit-report-shm.txt");
  CHECK(fit_report.find("1 rank, measured / predicted per shape: 24-48-1-G7 b4 ") != std::string::npos);
  CHECK(fit_report.find("  2 rank(s)") != std::string::npos);  // a term, or none and why
  CHECK(fit_report.find("  2 rank(s): comm_factor ") != std::string::npos);
  CHECK(cal.model_error_sigma >= 0);
  // the intervals' parts, each on its own line: out-of-sample model error
  // (9 shapes, each left out), in sample beside it, the rounds' drift
  CHECK(fit_report.find("model error, leave one shape out (each of 9 shapes") != std::string::npos);
  CHECK(fit_report.find("run-to-run drift") != std::string::npos);
  CHECK(cal.drift_sigma > 0);  // three rounds never time alike to the last bit
  // a rank's persistent speed, from the 2-rank runs' two ranks (27 runs x
  // rounds: two ranks never time alike to the last bit), written and read back
  CHECK(fit_report.find("a rank's persistent speed: each rank's median compute about its run's, over 27 multi-rank run(s)") != std::string::npos);
  CHECK(cal.rank_sigma > 0);
  CHECK(slurp(file).find("rank_spread_sigma: ") != std::string::npos);
  CHECK(std::ifstream(d / "cal/results/livecal-c0-r0.json").good());
  // simulate uses it
  CHECK(sh(in_src + kExe + " simulate --cluster configs/clusters/local-cpu.yaml --workload configs/workloads/local-kanscale.yaml --gpus 1,2 "
                         "--calibration " + file, &err, &d) == 0);
  // a plan that measures nothing is refused in one line, before anything runs
  std::ofstream(d / "file.yaml") << "name: f\ncluster: " << kSrc << "/configs/clusters/local-cpu.yaml\ncalibration: " << kSrc
                                 << "/configs/calibrations/local-cpu.yaml\n";
  CHECK(sh(kExe + " calibrate " + (d / "file.yaml") + " --out " + (d / "none"), &err, &d) == 2);
  CHECK(err.find("file.yaml: key 'calibration': kanscale calibrate measures a plan's calibration: measure: section") != std::string::npos);
  CHECK_FALSE(std::ifstream(d / "none/results").good());
}

TEST_CASE("validate with runs: 3 runs the plan three times and judges them together: each criterion with its number") {
  // four tiny cases, one round each, predicted from a fitted fixture: about
  // 20 s. Whether the criteria hold is this machine's business (exit 0, 1 or
  // 3 for inconclusive); that the verdict is formed from three runs is not.
  Dir d;
  const std::string plan = d / "plan.yaml";
  std::ofstream(plan) << "name: runs-three\ncluster: configs/clusters/local-cpu.yaml\nbackend: cpu\n"
                         "calibration: " + kSrc + "/tests/fixtures/calibration-ci-live.yaml\nsteps: 5\nrounds: 1\nruns: 3\ninterval_samples: 20\n"
                         "cases:\n  ranks: [1, 2]\n  widths: [[8, 16, 1], [12, 16, 1]]\n  grid_sizes: [3]\n  batch_per_gpu: [4]\n"
                         "  bucket_caps: [\"1MiB\"]\n  transports: [shm]\n";
  std::string err;
  const std::string out = d / "verdict";
  const int rc = sh("(cd " + kSrc + " && " + timeout(170) + kExe + " validate " + plan + " --out " + out + " > " + (d / "stdout.txt") + ")", &err, &d);
  CAPTURE(err);
  CHECK((rc == 0 || rc == 1 || rc == 3));
  const std::string printed = slurp(d / "stdout.txt");
  CAPTURE(printed);
  CHECK(printed.find("repeat-run verdict over 3 runs") != std::string::npos);
  for (const char* c : {"(a) mean |error| per run", "(b) signed mean error per group", "(c) case-runs predicted too fast", "(d) coverage"})
    CHECK(printed.find(c) != std::string::npos);
  for (int k = 1; k <= 3; ++k) CHECK(std::filesystem::exists(out + "/run-" + std::to_string(k) + "/results.json"));
  const auto j = nlohmann::json::parse(slurp(out + "/verdict.json"));
  CHECK(j["criteria"].size() == 4);
  CHECK(j["runs"].size() == 3);
  CHECK(j["exit_code"].get<int>() == rc);
}
