#include "trainer.hpp"
#include "model/sampler.hpp"
#include "trainer_detail.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <atomic>
#include <chrono>
#include <climits>
#include <cmath>
#include <csignal>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "adam.hpp"
#include "data.hpp"
#include "kan.hpp"
#include "kan_cpu.hpp"
#include "kanscale/build_info.hpp"
#include "model/buckets.hpp"
#include "model/kan_model.hpp"
#include "model/units.hpp"
#include "model/yaml_reader.hpp"
#include "safetensors.hpp"
#include "model/output_files.hpp"
#include "model/statistics.hpp"
#include "model/units.hpp"

namespace ks {

double peak_rss_bytes() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) * 1024.0;
}

namespace train_detail {

nlohmann::json to_json(const Event& e) {
  return {{"name", e.name}, {"cat", e.cat}, {"track", e.track}, {"t0", e.t0}, {"t1", e.t1}, {"step", e.step}};
}
Event event_from_json(const nlohmann::json& j) {
  return {j.at("name").get<std::string>(), j.at("cat").get<std::string>(), j.at("track").get<int>(), j.at("t0").get<double>(),
          j.at("t1").get<double>(), j.at("step").get<std::int64_t>()};
}
nlohmann::json to_json(const IterRecord& r) {
  return {{"step", r.step}, {"batch", r.batch}, {"first", r.first}, {"start_s", r.start_s}, {"end_s", r.end_s},
          {"compute_s", r.compute_s}, {"comm_s", r.comm_s}, {"exposed_s", r.exposed_s}, {"loss", r.loss}, {"bucket_s", r.bucket_s}};
}
IterRecord iter_record_from_json(const nlohmann::json& j) {
  IterRecord r;
  r.step = j.at("step").get<std::int64_t>();
  r.batch = j.at("batch").get<int>();
  r.first = j.at("first").get<bool>();
  r.start_s = j.at("start_s").get<double>();
  r.end_s = j.at("end_s").get<double>();
  r.compute_s = j.at("compute_s").get<double>();
  r.comm_s = j.at("comm_s").get<double>();
  r.exposed_s = j.at("exposed_s").get<double>();
  r.loss = j.at("loss").is_null() ? std::numeric_limits<double>::quiet_NaN() : j.at("loss").get<double>();
  r.bucket_s = j.at("bucket_s").get<std::vector<double>>();
  return r;
}

std::atomic<int> g_stop{0};
extern "C" void on_signal(int) { g_stop = 1; }

using Clock = std::chrono::steady_clock;

std::int64_t meta_int(const std::string& file, const std::string& key, const std::string& value) {
  std::size_t pos = 0;
  long long v = 0;
  try {
    v = std::stoll(value, &pos);
  } catch (...) {
    pos = 0;
  }
  if (pos == 0 || pos != value.size()) throw InputError(file + ": metadata '" + key + "' is not an integer: \"" + value + "\"");
  return v;
}

namespace {
// Bucket state for one iteration.
struct BucketRun {
  std::vector<float> buf;
  int ready = 0;        // gradients copied in
  int handle = -1;
  bool launched = false, done = false, mpi_done = false;
  double launch_s = 0, start_s = 0, end_s = 0;
};

}  // namespace

std::string model_metadata_key(const KanNet& net) {
  std::string s;
  for (auto w : net.widths()) s += (s.empty() ? "" : ",") + std::to_string(w);
  return s;
}

void save_checkpoint(const std::string& path, KanNet& net, const Adam& adam, const TrainOptions& o, int world,
                     std::int64_t step) {
  StFile model;
  for (auto& t : kan_state_refs(net)) model.tensors[t.name] = StTensor{t.shape, std::vector<float>(t.data, t.data + t.size())};
  model.metadata = {{"format", "pt"},
                    {"producer", std::string("kanscale ") + build::version + " (" + build::git_hash + ")"},
                    {"kan_widths", model_metadata_key(net)},
                    {"kan_grid_size", std::to_string(net.layers[0].G)},
                    {"kan_spline_order", std::to_string(net.layers[0].k)},
                    {"step", std::to_string(step)}};
  StFile state;
  const auto params = kan_parameter_refs(net);
  for (std::size_t p = 0; p < params.size(); ++p) {
    state.tensors["exp_avg." + params[p].name] = StTensor{params[p].shape, adam.exp_avg[p]};
    state.tensors["exp_avg_sq." + params[p].name] = StTensor{params[p].shape, adam.exp_avg_sq[p]};
  }
  state.metadata = {{"step", std::to_string(step)},
                    {"seed", std::to_string(o.seed)},
                    {"world_size", std::to_string(world)},
                    {"batch_per_gpu", std::to_string(o.workload.batch_per_gpu)},
                    {"dataset_size", std::to_string(o.workload.dataset_size)},
                    {"task", o.workload.task},
                    {"lr", std::to_string(adam.lr)},
                    {"threads", std::to_string(o.threads)},
                    {"rng", "counter-based: every draw is a function of (seed, stream, index); the step is the state"},
                    {"kan_widths", model_metadata_key(net)}};
  write_files_atomic({{optimizer_state_path(path), safetensors_bytes(state)}, {path, safetensors_bytes(model)}});
}

// Loads a checkpoint's model into a net of the same shape.
KanNet load_model(const std::string& path, const Workload* expect, int* G_out, int* k_out) {
  const StFile f = read_safetensors(path);
  auto meta = [&](const std::string& k) {
    auto it = f.metadata.find(k);
    if (it == f.metadata.end()) throw InputError(path + ": checkpoint metadata lacks '" + k + "' (not written by kanscale?)");
    return it->second;
  };
  std::vector<std::int64_t> widths;
  std::stringstream ss(meta("kan_widths"));
  std::string item;
  while (std::getline(ss, item, ',')) {
    widths.push_back(meta_int(path, "kan_widths", item));
    if (widths.back() < 1 || widths.back() > YamlMap::kIntMax)
      throw InputError(path + ": metadata 'kan_widths': " + item + " is not a width from 1 to " + std::to_string(YamlMap::kIntMax));
  }
  const std::int64_t G64 = meta_int(path, "kan_grid_size", meta("kan_grid_size"));
  const std::int64_t k64 = meta_int(path, "kan_spline_order", meta("kan_spline_order"));
  if (G64 < 1 || G64 > YamlMap::kIntMax)
    throw InputError(path + ": metadata 'kan_grid_size': expected 1 to " + std::to_string(YamlMap::kIntMax) + ", got " + meta("kan_grid_size"));
  if (k64 < 1 || k64 > 16) throw InputError(path + ": metadata 'kan_spline_order': expected 1 to 16, got " + meta("kan_spline_order"));
  const int G = static_cast<int>(G64), k = static_cast<int>(k64);
  if (widths.size() < 2) throw InputError(path + ": metadata 'kan_widths': checkpoint metadata describes no valid KAN");
  // The metadata must agree with the tensors the file holds before the net
  // is allocated: a small file claiming wide layers is refused at once.
  const KanShape shape{widths, G, k};
  if (const std::string why = kan_size_problem(shape); !why.empty()) throw InputError(path + ": metadata 'kan_widths': " + why);
  for (const auto& p : kan_parameters(shape)) {
    auto it = f.tensors.find(p.name);
    if (it == f.tensors.end()) throw InputError(path + ": checkpoint lacks tensor '" + p.name + "'");
    if (static_cast<std::int64_t>(it->second.data.size()) != p.numel)
      throw InputError(path + ": tensor '" + p.name + "' holds " + std::to_string(it->second.data.size()) +
                       " values; metadata 'kan_widths', 'kan_grid_size' and 'kan_spline_order' describe " + std::to_string(p.numel));
  }
  if (expect && (expect->widths != widths || expect->grid_size != G || expect->spline_order != k)) {
    throw InputError(path + ": checkpoint holds a KAN of widths [" + meta("kan_widths") + "], G=" + std::to_string(G) +
                     ", k=" + std::to_string(k) + "; the workload asks for another");
  }
  KanNet net = init_kan(widths, G, k, 0);
  for (auto& t : kan_state_refs(net)) {
    auto it = f.tensors.find(t.name);
    if (it == f.tensors.end()) throw InputError(path + ": checkpoint lacks tensor '" + t.name + "'");
    if (it->second.shape != t.shape) throw InputError(path + ": tensor '" + t.name + "' has the wrong shape");
    std::copy(it->second.data.begin(), it->second.data.end(), t.data);
  }
  if (G_out) *G_out = G;
  if (k_out) *k_out = k;
  return net;
}


Setup prepare(const TrainOptions& o, Comm& comm) {
  const Workload& w = o.workload;
  const int world = comm.size();
  Setup setup{Dataset(w.task, static_cast<int>(w.widths.front()), static_cast<int>(w.widths.back()), w.dataset_size, o.seed),
              init_kan(w.widths, w.grid_size, w.spline_order, o.seed)};
  Dataset& data = setup.data;
  data.materialize(512.0 * 1024 * 1024);  // in memory when it fits in 512 MiB, like a TensorDataset
  KanNet& net = setup.net;
  Adam& adam = setup.adam;
  adam.lr = w.learning_rate;
  auto prefs = kan_parameter_refs(net);
  std::vector<std::size_t> sizes;
  for (const auto& p : prefs) sizes.push_back(p.size());
  adam.init(sizes);
  std::int64_t start_step = 0;
  if (!o.resume.empty()) {
    net = load_model(o.resume, &w, nullptr, nullptr);
    prefs = kan_parameter_refs(net);
    const StFile st = read_safetensors(optimizer_state_path(o.resume));
    auto meta = [&](const std::string& k) {
      auto it = st.metadata.find(k);
      if (it == st.metadata.end()) throw InputError(optimizer_state_path(o.resume) + ": lacks metadata '" + k + "'");
      return it->second;
    };
    const std::string sp = optimizer_state_path(o.resume);
    // Everything that decides the arithmetic or the data order must match
    // for the continuation to be bit-identical.
    auto same = [&](const std::string& key, const std::string& now_value, const char* why) {
      if (meta(key) != now_value)
        throw InputError(sp + ": saved with " + key + " " + meta(key) + ", resumed with " + now_value + " (" + why + ")");
    };
    same("world_size", std::to_string(world), "the data shards would differ");
    same("seed", std::to_string(o.seed), "the data order would differ");
    same("batch_per_gpu", std::to_string(w.batch_per_gpu), "the batches would differ");
    same("dataset_size", std::to_string(w.dataset_size), "the data would differ");
    same("task", w.task, "the data would differ");
    same("lr", std::to_string(w.learning_rate), "the updates would differ");
    same("threads", std::to_string(o.threads), "sums split over threads round differently");
    start_step = meta_int(sp, "step", meta("step"));
    const StFile model_file = read_safetensors(o.resume);
    if (model_file.metadata.count("step") == 0 || model_file.metadata.at("step") != meta("step"))
      throw InputError(o.resume + ": the model and " + sp + " are from different steps");
    adam.step = start_step;
    for (std::size_t p = 0; p < prefs.size(); ++p) {
      for (const char* which : {"exp_avg.", "exp_avg_sq."}) {
        auto it = st.tensors.find(which + prefs[p].name);
        if (it == st.tensors.end() || it->second.data.size() != prefs[p].size())
          throw InputError(optimizer_state_path(o.resume) + ": missing or mismatched '" + which + prefs[p].name + "'");
        (std::string(which) == "exp_avg." ? adam.exp_avg[p] : adam.exp_avg_sq[p]) = it->second.data;
      }
    }
  }
  // DDP construction: parameters (and buffers) broadcast from rank 0.
  for (auto& t : kan_state_refs(net)) comm.broadcast(t.data, t.size(), 0);

  std::vector<double> pbytes;
  for (const auto& p : prefs) pbytes.push_back(4.0 * static_cast<double>(p.size()));
  const KanShape shape{w.widths, w.grid_size, w.spline_order};
  setup.plans = ddp_bucket_plans(pbytes, kan_ready_order(shape), w.ddp);

  const EpochSplit split = distributed_sampler_split(w.dataset_size, world, w.batch_per_gpu);
  setup.batch = split.batch;
  setup.ipe = split.iterations;
  const int epochs = o.epochs > 0 ? o.epochs : w.epochs;
  setup.total_steps = o.steps > 0 ? o.steps : setup.ipe * epochs;
  if (setup.total_steps <= start_step) {
    throw InputError(o.resume + ": the checkpoint is at step " + std::to_string(start_step) +
                     "; ask for more steps (--steps or --epochs) than that");
  }
  setup.start_step = start_step;
  return setup;
}

// Gathers every rank's records at rank 0, which prints the summary and
// writes the JSON, CSV and trace files.
TrainResult report(const TrainOptions& o, Comm& comm, const KanNet& net, const std::vector<IterRecord>& records,
                   const std::vector<Event>& events, const ReportContext& c) {
  const Workload& w = o.workload;
  const int rank = comm.rank(), world = comm.size();
  const std::int64_t start_step = c.start_step, step = c.step, batch = c.batch;
  const double last_loss = c.last_loss;
  const bool interrupted = step < c.total_steps;
  nlohmann::json mine = nlohmann::json::array();
  for (const auto& r : records) mine.push_back(to_json(r));
  nlohmann::json evs = nlohmann::json::array();
  if (!o.trace.empty())
    for (const auto& e : events) evs.push_back(to_json(e));
  const double rss = peak_rss_bytes();
  const auto all = comm.gather(nlohmann::json{{"records", mine}, {"events", evs}, {"rss", rss}, {"device", c.device_peak_bytes}}.dump());
  const auto hosts = comm.hosts();
  if (rank != 0) return TrainResult{interrupted ? 1 : 0, std::nullopt};

  std::vector<double> it_med, cp_med, cm_med, ex_med;
  std::vector<std::vector<double>> bucket_meds;  // [bucket][rank]: each rank's median over steady iterations
  double max_rss = 0, max_device = -1;
  nlohmann::json per_iter = nlohmann::json::array();
  std::ostringstream csv;
  csv << std::setprecision(9);
  csv << "# kanscale train " << build::version << " (" << build::git_hash << "); " << o.command_line << "\n";
  csv << "step,rank,batch,first_iteration,iteration_time_s,compute_time_s,communication_time_s,exposed_communication_s,loss\n";
  nlohmann::json trace_events = nlohmann::json::array();
  for (int r = 0; r < world; ++r) {
    const auto j = nlohmann::json::parse(all[static_cast<std::size_t>(r)]);
    max_rss = std::max(max_rss, j["rss"].get<double>());
    max_device = std::max(max_device, j["device"].get<double>());
    std::vector<double> it, cp, cm, ex;
    std::vector<std::vector<double>> bucket_s;
    for (const auto& row : j["records"]) {
      const IterRecord rec = iter_record_from_json(row);
      const double iter = rec.end_s - rec.start_s;
      // the numbers as JSON writes them (shortest round trip; a NaN loss as null)
      using J = nlohmann::json;
      csv << rec.step << "," << r << "," << rec.batch << "," << (rec.first ? 1 : 0) << "," << iter << "," << J(rec.compute_s) << ","
          << J(rec.comm_s) << "," << J(rec.exposed_s) << "," << J(rec.loss) << "\n";
      per_iter.push_back({{"step", rec.step}, {"rank", r}, {"batch", rec.batch}, {"first_iteration", rec.first},
                          {"iteration_time_s", iter}, {"compute_time_s", rec.compute_s}, {"communication_time_s", rec.comm_s},
                          {"exposed_communication_s", rec.exposed_s}, {"loss", rec.loss}});
      if (rec.first) continue;  // steady state only
      if (bucket_s.size() < rec.bucket_s.size()) bucket_s.resize(rec.bucket_s.size());
      for (std::size_t b = 0; b < rec.bucket_s.size(); ++b) bucket_s[b].push_back(rec.bucket_s[b]);
      it.push_back(iter);
      cp.push_back(rec.compute_s);
      cm.push_back(rec.comm_s);
      ex.push_back(rec.exposed_s);
    }
    if (!it.empty()) {
      // per rank: the median over its steady iterations
      it_med.push_back(summarize(it).median);
      cp_med.push_back(summarize(cp).median);
      cm_med.push_back(summarize(cm).median);
      ex_med.push_back(summarize(ex).median);
    }
    if (bucket_meds.size() < bucket_s.size()) bucket_meds.resize(bucket_s.size());
    for (std::size_t b = 0; b < bucket_s.size(); ++b) bucket_meds[b].push_back(summarize(bucket_s[b]).median);
    if (!o.trace.empty()) {
      trace_events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", r}, {"args", {{"name", "rank " + std::to_string(r)}}}});
      trace_events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", r}, {"tid", 0}, {"args", {{"name", "compute"}}}});
      trace_events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", r}, {"tid", 1}, {"args", {{"name", "communication"}}}});
      for (const auto& ej : j["events"]) {
        const Event e = event_from_json(ej);
        trace_events.push_back({{"ph", "X"}, {"name", e.name}, {"cat", e.cat}, {"pid", r}, {"tid", e.track},
                                {"ts", e.t0 * 1e6}, {"dur", (e.t1 - e.t0) * 1e6}, {"args", {{"iteration", e.step}}}});
      }
    }
  }
  const Stat iter = summarize(it_med), compute = summarize(cp_med), comm_t = summarize(cm_med), exp_t = summarize(ex_med);
  const double samples_per_s = iter.median > 0 ? static_cast<double>(world * batch) / iter.median : 0;
  std::ostringstream summary_sink;
  std::ostream& out = o.print_summary ? std::cout : summary_sink;
  out << "kanscale train: " << w.name << ", KAN [";
  for (std::size_t i = 0; i < w.widths.size(); ++i) out << (i ? ", " : "") << w.widths[i];
  out << "] G=" << w.grid_size << " k=" << w.spline_order << ", " << net.parameter_count() << " parameters; "
            << world << " rank(s) (" << c.backend << "), " << o.threads << " thread(s) each, batch " << batch
            << " per rank; steps " << start_step << ".." << step << (interrupted ? " (interrupted)" : "") << "\n";
  out << "  final loss " << last_loss << "\n";
  if (!it_med.empty()) {
    out << "  steady state (median over ranks of each rank's median; p95 over ranks):\n"
              << "    iteration   " << format_time(iter.median) << " (p95 " << format_time(iter.p95) << ")\n"
              << "    samples/s   " << std::fixed << std::setprecision(0) << samples_per_s << std::defaultfloat << "\n"
              << "    compute     " << format_time(compute.median) << "\n"
              << "    comm        " << format_time(comm_t.median) << "\n"
              << "    exposed     " << format_time(exp_t.median) << "\n";
  }
  out << "    peak memory " << format_bytes(max_rss) << " (largest rank RSS)\n";
  if (max_device >= 0) out << "    peak device " << format_bytes(max_device) << " (largest rank's device allocations)\n";

  TrainSummary summary;
  summary.iteration_s = {iter.median, iter.p95};
  summary.compute_s = {compute.median, compute.p95};
  summary.communication_s = {comm_t.median, comm_t.p95};
  summary.exposed_communication_s = {exp_t.median, exp_t.p95};
  summary.samples_per_s = samples_per_s;
  summary.peak_rss_bytes = max_rss;
  if (max_device >= 0) summary.peak_device_bytes = max_device;
  summary.final_loss = last_loss;
  summary.steps = step - start_step;
  summary.interrupted = interrupted;
  // per bucket (steady plan): median over ranks of each rank's median
  for (const auto& v : bucket_meds) summary.bucket_communication_s.push_back(summarize(v).median);
  std::vector<std::pair<std::string, std::string>> files;
  if (!o.json.empty()) {
    nlohmann::json j;
    j["provenance"] = {{"kanscale_version", build::version}, {"git_hash", build::git_hash}, {"command_line", o.command_line},
                       {"seed", o.seed}, {"workload", {{"name", w.name}, {"file", w.file}}}, {"ranks", world},
                       {"backend", c.backend}, {"threads_per_rank", o.threads}, {"hosts", hosts}};
    j["summary"] = to_json(summary);
    j["iterations"] = per_iter;
    files.emplace_back(o.json, j.dump(2) + "\n");
  }
  if (!o.csv.empty()) files.emplace_back(o.csv, csv.str());
  if (!o.trace.empty())
    files.emplace_back(o.trace, nlohmann::json{{"traceEvents", trace_events}, {"displayTimeUnit", "ms"}}.dump() + "\n");
  write_files_atomic(files);
  return TrainResult{interrupted ? 1 : 0, summary};
}

void save_on_rank0(const TrainOptions& o, Comm& host, KanNet& net, const Adam& adam, std::int64_t step) {
  std::string error;
  if (host.rank() == 0) {
    try {
      save_checkpoint(o.checkpoint, net, adam, o, host.size(), step);
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  if (host.allreduce_max(error.empty() ? 0.0 : 1.0) > 0)
    throw std::runtime_error(host.rank() == 0 ? error : "rank 0 could not write the checkpoint");
}

bool stop_requested() { return g_stop.load() != 0; }

StopOnSignal::StopOnSignal(bool on) : active(on) {
  g_stop = 0;
  if (!active) return;
  old_int = std::signal(SIGINT, on_signal);
  old_term = std::signal(SIGTERM, on_signal);
}

StopOnSignal::~StopOnSignal() {
  if (!active) return;
  std::signal(SIGINT, old_int);
  std::signal(SIGTERM, old_term);
}

}  // namespace train_detail

std::string optimizer_state_path(const std::string& checkpoint) {
  const std::string ext = ".safetensors";
  if (checkpoint.size() > ext.size() && checkpoint.compare(checkpoint.size() - ext.size(), ext.size(), ext) == 0)
    return checkpoint.substr(0, checkpoint.size() - ext.size()) + ".optim.safetensors";
  return checkpoint + ".optim.safetensors";
}

TrainResult run_train(const TrainOptions& o, Comm& comm) {
  using namespace train_detail;
  const Workload& w = o.workload;
  const int rank = comm.rank(), world = comm.size();
  set_cpu_threads(o.threads);
  const StopOnSignal stop_guard(!o.checkpoint.empty());
  Setup setup = prepare(o, comm);
  Dataset& data = setup.data;
  KanNet& net = setup.net;
  Adam& adam = setup.adam;
  auto prefs = kan_parameter_refs(net);
  const std::int64_t start_step = setup.start_step, batch = setup.batch, ipe = setup.ipe, total_steps = setup.total_steps;
  const DdpBucketPlans& plans = setup.plans;
  KanCpuNet cpu(net);
  const float inv_world = 1.0f / static_cast<float>(world);
  std::vector<float> grids_flat;
  for (const auto& L : net.layers) grids_flat.insert(grids_flat.end(), L.grid.begin(), L.grid.end());

  auto save_everywhere = [&](std::int64_t at_step) { save_on_rank0(o, comm, net, adam, at_step); };
  std::vector<Event> events;
  const bool keep_events = !o.trace.empty();
  auto record_event = [&](Event e) {
    if (keep_events) events.push_back(std::move(e));
  };
  std::vector<IterRecord> records;
  const auto t_origin = Clock::now();
  auto now = [&] { return std::chrono::duration<double>(Clock::now() - t_origin).count(); };
  StepBatches batches(w.dataset_size, world, rank, o.seed, batch, ipe);
  std::vector<float> X, T;
  double last_loss = 0;
  std::int64_t step = start_step;
  bool first_iteration = true;  // of this DDP instance
  std::vector<BucketRun> first_runs, steady_runs;
  for (; step < total_steps; ++step) {
    if (!o.checkpoint.empty() && comm.allreduce_max(stop_requested() ? 1.0 : 0.0) > 0) break;
    const StepBatches::Slice slice = batches.at(step);
    const int B = slice.size;
    const auto& buckets = first_iteration ? plans.first_iteration : plans.steady;
    IterRecord rec;
    rec.step = step;
    rec.rank = rank;
    rec.batch = B;
    rec.first = first_iteration;
    rec.start_s = now();
    double comm_busy = 0, exposed = 0;

    // grids broadcast before forward (broadcast_buffers)
    if (w.ddp.broadcast_buffers && world > 1) {
      const double t0 = now();
      // DDP broadcasts the module's buffers (coalesced): copy in, broadcast, copy back
      std::size_t off = 0;
      for (const auto& L : net.layers) {
        std::copy(L.grid.begin(), L.grid.end(), grids_flat.begin() + static_cast<std::ptrdiff_t>(off));
        off += L.grid.size();
      }
      comm.broadcast(grids_flat.data(), grids_flat.size(), 0);
      off = 0;
      for (auto& L : net.layers) {
        std::copy(grids_flat.begin() + static_cast<std::ptrdiff_t>(off), grids_flat.begin() + static_cast<std::ptrdiff_t>(off + L.grid.size()), L.grid.begin());
        off += L.grid.size();
      }
      const double t1 = now();
      record_event({"broadcast buffers (" + comm.backend() + ")", "comm", 1, t0, t1, step});
      record_event({"wait for broadcast", "wait", 0, t0, t1, step});
      comm_busy += t1 - t0;
      exposed += t1 - t0;
    }
    // the batch
    double t0 = now();
    X.resize(static_cast<std::size_t>(B) * data.in());
    T.resize(static_cast<std::size_t>(B) * data.out());
    for (int s = 0; s < B; ++s) data.sample(slice.index[s], &X[static_cast<std::size_t>(s) * data.in()], &T[static_cast<std::size_t>(s) * data.out()]);
    record_event({"load batch", "host", 0, t0, now(), step});
    // forward
    t0 = now();
    last_loss = cpu.forward(X.data(), T.data(), B, [&](int l) {
      const double t1 = now();
      record_event({"forward layer " + std::to_string(l), "forward", 0, t0, t1, step});
      t0 = t1;
    });
    rec.loss = last_loss;
    // backward with DDP's hooks
    // The buckets persist across iterations, as DDP's flat bucket tensors do
    // (fresh buffers every iteration cost page faults and the MPI library's
    // memory registration: measured here, ~240 us in the call that starts a
    // 1 MB all-reduce).
    std::vector<BucketRun>& runs = first_iteration ? first_runs : steady_runs;
    runs.resize(buckets.size());
    std::vector<std::pair<int, std::size_t>> where(prefs.size());  // param -> (bucket, offset)
    for (std::size_t b = 0; b < buckets.size(); ++b) {
      std::size_t off = 0;
      for (int p : buckets[b].params) {
        where[static_cast<std::size_t>(p)] = {static_cast<int>(b), off};
        off += prefs[static_cast<std::size_t>(p)].size();
      }
      BucketRun& r = runs[b];
      r.buf.resize(off);  // allocated once per plan
      r.ready = 0;
      r.handle = -1;
      r.launched = r.done = r.mpi_done = false;
      r.launch_s = r.start_s = r.end_s = 0;
    }
    std::size_t next_launch = 0;
    double prev_end = 0;  // end of the previous collective (FIFO)
    auto finish_if_done = [&](std::size_t b) {
      BucketRun& r = runs[b];
      if (r.done || !r.launched) return;
      if (!r.mpi_done && comm.test(r.handle)) r.mpi_done = true;
      if (!r.mpi_done) return;
      if (b > 0 && !runs[b - 1].done) return;  // collectives complete in order
      const double start = std::max(r.launch_s, b > 0 ? runs[b - 1].end_s : prev_end);
      const double t = now();
      if (o.inject_delay_s > 0 && t < start + o.inject_delay_s) return;
      r.start_s = start;
      // with an injected delay the collective lasts exactly that long (if MPI finished sooner)
      r.end_s = o.inject_delay_s > 0 ? start + o.inject_delay_s : t;
      r.done = true;
    };
    auto progress = [&] {
      for (std::size_t b = 0; b < runs.size(); ++b) finish_if_done(b);
    };
    auto launch_ready = [&] {
      while (next_launch < runs.size() && runs[next_launch].ready == static_cast<int>(buckets[next_launch].params.size())) {
        BucketRun& r = runs[next_launch];
        r.launch_s = now();
        r.handle = comm.iallreduce_sum(r.buf.data(), r.buf.size());
        r.launched = true;
        ++next_launch;
      }
    };
    t0 = now();
    cpu.backward(
        [&](int p) {
          const double c0 = now();
          const auto [b, off] = where[static_cast<std::size_t>(p)];
          const auto& g = cpu.grads()[static_cast<std::size_t>(p)];
          float* dst = runs[static_cast<std::size_t>(b)].buf.data() + off;
          for (std::size_t i = 0; i < g.size(); ++i) dst[i] = g[i] * inv_world;
          ++runs[static_cast<std::size_t>(b)].ready;
          launch_ready();
          record_event({"bucket_copy " + prefs[static_cast<std::size_t>(p)].name, "grad_copy", 0, c0, now(), step});
        },
        [&](int l) {
          progress();
          const double t1 = now();
          record_event({"backward layer " + std::to_string(l), "backward", 0, t0, t1, step});
          t0 = t1;
        });
    // wait for every bucket
    const double wait0 = now();
    for (;;) {
      progress();
      if (std::all_of(runs.begin(), runs.end(), [](const BucketRun& r) { return r.done; })) break;
      if (o.inject_delay_s > 0) std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    for (const auto& r : runs) comm.wait(r.handle);
    comm.release();
    const double wait1 = std::max(now(), runs.back().end_s);
    record_event({"wait for all-reduce", "wait", 0, wait0, wait1, step});
    exposed += wait1 - wait0;
    for (std::size_t b = 0; b < runs.size(); ++b) {
      const BucketRun& r = runs[b];
      record_event({"allreduce bucket " + std::to_string(b) + " (" + comm.backend() + ")", "comm", 1, r.start_s, r.end_s, step});
      comm_busy += r.end_s - std::max(r.launch_s, b > 0 ? runs[b - 1].end_s : 0.0);
      rec.bucket_s.push_back(r.end_s - r.start_s);
    }
    // copy back, Adam
    t0 = now();
    std::vector<const float*> gptr(prefs.size());
    for (std::size_t p = 0; p < prefs.size(); ++p) {
      const auto [b, off] = where[p];
      const float* src = runs[static_cast<std::size_t>(b)].buf.data() + off;
      if (w.ddp.gradient_as_bucket_view) {
        gptr[p] = src;  // the gradient is a view of its bucket
      } else {
        auto& g = cpu.grads()[p];
        std::copy(src, src + g.size(), g.begin());
        gptr[p] = g.data();
      }
    }
    if (!w.ddp.gradient_as_bucket_view) record_event({"copy_back", "copy_back", 0, t0, now(), step});
    t0 = now();
    std::vector<float*> pptr;
    for (auto& p : prefs) pptr.push_back(p.data);
    adam.update(pptr, gptr);
    rec.end_s = now();
    record_event({"adam", "optimizer", 0, t0, rec.end_s, step});
    rec.comm_s = comm_busy;
    rec.exposed_s = exposed;
    rec.compute_s = (rec.end_s - rec.start_s) - exposed;
    records.push_back(rec);
    // Without --json/--csv only a recent window feeds the summary: a long run
    // must not grow without bound.
    if (o.json.empty() && o.csv.empty() && records.size() > 20000) records.erase(records.begin(), records.begin() + 10000);
    if (first_iteration) {
      // DDP rebuilds its buckets after the first iteration and frees the
      // first ones: only one set of bucket buffers is held from then on
      std::vector<BucketRun>().swap(first_runs);
    }
    first_iteration = false;
    if (!o.quiet && rank == 0 && (step % 50 == 0 || step + 1 == total_steps))
      std::cerr << "step " << step << "/" << total_steps << " loss " << last_loss << "\n";
    if (!o.checkpoint.empty() && o.checkpoint_every > 0 && (step + 1) % o.checkpoint_every == 0)
      save_everywhere(step + 1);
  }
  if (!o.checkpoint.empty()) save_everywhere(step);

  return report(o, comm, net, records, events, ReportContext{start_step, step, total_steps, batch, last_loss, -1.0, comm.backend()});
}

int run_eval(const std::string& checkpoint, const std::string& input_csv, int threads) {
  using train_detail::load_model;
  set_cpu_threads(threads);
  KanNet net = load_model(checkpoint, nullptr, nullptr, nullptr);
  const int in = net.layers.front().in, out = net.layers.back().out;
  // One row of `in` numbers per line; an optional header line of `in` column
  // names first. Empty lines and '#' comments are skipped; an empty cell (a
  // trailing comma) or a row of another width is an error, with its line.
  const std::string text = read_input_file(input_csv, "a CSV file of inputs");
  std::vector<float> X;
  std::stringstream lines(text);
  std::string line;
  int lineno = 0;
  bool seen_row = false;
  const std::string want = std::to_string(in) + " comma-separated value" + (in == 1 ? "" : "s");
  while (std::getline(lines, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    const std::string where = input_csv + ":" + std::to_string(lineno) + ": ";
    std::vector<std::string> cells;
    std::size_t from = 0;
    for (;;) {
      const std::size_t comma = line.find(',', from);
      cells.push_back(line.substr(from, comma == std::string::npos ? std::string::npos : comma - from));
      if (comma == std::string::npos) break;
      from = comma + 1;
    }
    for (std::size_t c = 0; c < cells.size(); ++c)
      if (cells[c].find_first_not_of(" \t") == std::string::npos)
        throw InputError(where + "column " + std::to_string(c + 1) + " is empty" +
                         (c + 1 == cells.size() ? " (a trailing comma?)" : "") + "; expected " + want);
    std::vector<float> row;
    bool numeric = true;
    for (const auto& cell : cells) {
      char* end = nullptr;
      errno = 0;
      const float v = std::strtof(cell.c_str(), &end);
      while (end && (*end == ' ' || *end == '\t')) ++end;
      if (end == cell.c_str() || *end != '\0') {
        numeric = false;
        break;
      }
      if (!std::isfinite(v) || errno == ERANGE)
        throw InputError(where + "\"" + cell + "\" is not a finite number within float range");
      row.push_back(v);
    }
    if (!numeric && !seen_row && X.empty() && lineno == 1) {
      if (static_cast<int>(cells.size()) != in)
        throw InputError(where + "the header names " + std::to_string(cells.size()) + " column(s); the checkpoint's KAN takes " + want);
      seen_row = true;  // the header; rows follow
      continue;
    }
    if (!numeric) throw InputError(where + "expected " + want + " (numbers), got \"" + line + "\"");
    if (static_cast<int>(row.size()) != in)
      throw InputError(where + "expected " + std::to_string(in) + " values, got " + std::to_string(row.size()));
    seen_row = true;
    X.insert(X.end(), row.begin(), row.end());
  }
  const int B = static_cast<int>(X.size() / static_cast<std::size_t>(in));
  KanCpuNet cpu(net);
  std::vector<float> T(static_cast<std::size_t>(B) * out, 0.0f);
  if (B > 0) cpu.forward(X.data(), T.data(), B);
  std::cout << std::setprecision(9);
  for (int o = 0; o < out; ++o) std::cout << (o ? "," : "") << "y" << o;
  std::cout << "\n";
  for (int s = 0; s < B; ++s) {
    for (int o = 0; o < out; ++o) std::cout << (o ? "," : "") << cpu.output()[static_cast<std::size_t>(s) * out + o];
    std::cout << "\n";
  }
  return 0;
}

}  // namespace ks
