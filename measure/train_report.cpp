// The trainer's report: every rank's records gathered at rank 0, the
// summary printed, --json/--csv/--trace written (atomically).
#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "formats/provenance.hpp"
#include "formats/measurement_records.hpp"
#include "base/output_files.hpp"
#include "model/statistics.hpp"
#include "formats/trace.hpp"
#include "model/units.hpp"
#include "trainer_detail.hpp"

namespace ks {

// The high-water mark since the last reset_peak_rss (VmHWM; without
// /proc, the process's whole life from getrusage).
double peak_rss_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::strtod(line.c_str() + 6, nullptr) * 1024.0;  // "VmHWM:  25400 kB"
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) * 1024.0;
}

bool reset_peak_rss() {
  malloc_trim(0);  // the last run's freed heap back to the system first
  std::ofstream f("/proc/self/clear_refs");
  f << "5";  // resets VmHWM to the resident set now (proc(5))
  f.flush();
  return static_cast<bool>(f);
}

namespace train_detail {

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

// Gathers every rank's records at rank 0, which prints the summary and
// writes the JSON, CSV and trace files.
namespace {

// Each compute op's time per steady iteration (summed over its slices in
// the iteration), this rank's median: in the order the ops first ran.
nlohmann::json op_medians(const std::vector<IterRecord>& records, const std::vector<TraceSlice>& slices) {
  nlohmann::json my_ops = nlohmann::json::array();
  {
    std::set<std::int64_t> timed, steady;  // steps with slices (a long run without --trace keeps a recent window)
    for (const auto& e : slices) timed.insert(e.iteration);
    for (const auto& r : records)
      if (!r.first && timed.count(r.step)) steady.insert(r.step);
    std::vector<std::string> order;
    std::map<std::string, std::map<std::int64_t, double>> per;  // op -> step -> seconds
    for (const auto& e : slices) {
      if (e.track != 0 || e.category == "wait" || !steady.count(e.iteration)) continue;
      auto it = per.find(e.name);
      if (it == per.end()) {
        order.push_back(e.name);
        it = per.emplace(e.name, std::map<std::int64_t, double>{}).first;
      }
      it->second[e.iteration] += e.t1_s - e.t0_s;
    }
    for (const auto& name : order) {
      std::vector<double> v;
      for (std::int64_t st : steady) v.push_back(per[name].count(st) ? per[name][st] : 0.0);
      my_ops.push_back({name, summarize(v).median});
    }
  }
  return my_ops;
}

struct SteadyFigures {
  Stat iter, compute, comm, exposed;
  double samples_per_s, epoch_fixed;
  std::size_t epoch_starts;
  double max_rss, max_device;
  bool steady;
};

void print_summary(std::ostream& out, const TrainOptions& o, const KanNet& net, const ReportContext& c, int world, std::int64_t batch,
                   bool interrupted, const SteadyFigures& st) {
  const Workload& w = o.workload;
  out << "kanscale train: " << w.name << ", KAN [";
  for (std::size_t i = 0; i < w.widths.size(); ++i) out << (i ? ", " : "") << w.widths[i];
  out << "] G=" << w.grid_size << " k=" << w.spline_order << ", " << net.parameter_count() << " parameters; "
            << world << " rank(s) (" << c.backend << "), " << o.threads << " thread(s) each, batch " << batch
            << " per rank; steps " << c.start_step << ".." << c.step << (interrupted ? " (interrupted)" : "") << "\n";
  out << "  final loss " << c.last_loss << "\n";
  if (st.steady) {
    out << "  steady state (median over ranks of each rank's median; p95 over ranks):\n"
              << "    iteration   " << format_time(st.iter.median) << " (p95 " << format_time(st.iter.p95) << ")\n"
              << "    samples/s   " << std::fixed << std::setprecision(0) << st.samples_per_s << std::defaultfloat << "\n"
              << "    compute     " << format_time(st.compute.median) << "\n"
              << "    comm        " << format_time(st.comm.median) << "\n"
              << "    exposed     " << format_time(st.exposed.median) << "\n";
  }
  if (st.epoch_fixed >= 0)
    out << "    per epoch   " << format_time(st.epoch_fixed) << " fixed, outside the iterations (the sampler's shuffle; slowest rank's median of "
        << st.epoch_starts << " epoch start(s)): a workload's epoch_overhead\n";
  out << "    peak memory " << format_bytes(st.max_rss) << " (largest rank RSS)\n";
  if (st.max_device >= 0) out << "    peak device " << format_bytes(st.max_device) << " (largest rank's device allocations)\n";
}

}  // namespace

TrainResult report(const TrainOptions& o, Comm& comm, const KanNet& net, const std::vector<IterRecord>& records,
                   const std::vector<TraceSlice>& slices, const ReportContext& c) {
  const Workload& w = o.workload;
  const int rank = comm.rank(), world = comm.size();
  const std::int64_t start_step = c.start_step, step = c.step, batch = c.batch;
  const double last_loss = c.last_loss;
  const bool interrupted = step < c.total_steps;
  nlohmann::json mine = nlohmann::json::array();
  for (const auto& r : records) mine.push_back(to_json(r));
  nlohmann::json evs = nlohmann::json::array();
  if (!o.trace.empty())
    for (const auto& e : slices) evs.push_back(to_json(e));
  // Each compute op's time per steady iteration (summed over its slices in
  // the iteration), this rank's median: in the order the ops first ran.
  const nlohmann::json my_ops = op_medians(records, slices);
  const double rss = peak_rss_bytes();
  const auto all = comm.gather(nlohmann::json{{"records", mine}, {"events", evs}, {"ops", my_ops}, {"rss", rss}, {"device", c.device_peak_bytes},
                                              {"epoch_start_s", c.epoch_start_s}}.dump());
  const auto hosts = comm.hosts();
  if (rank != 0) return TrainResult{interrupted ? 1 : 0, std::nullopt};

  std::vector<double> it_med, cp_med, cm_med, ex_med;
  std::vector<std::vector<double>> bucket_meds;  // [bucket][rank]: each rank's median over steady iterations
  double max_rss = 0, max_device = -1;
  double epoch_fixed = -1;  // the slowest rank's median epoch start
  std::size_t epoch_starts = 0;
  nlohmann::json per_iter = nlohmann::json::array();
  std::ostringstream csv;
  csv << std::setprecision(9);
  csv << "step,rank,batch,first_iteration,iteration_time_s,compute_time_s,communication_time_s,exposed_communication_s,loss\n";
  ChromeTrace trace;
  std::vector<std::string> op_order;
  std::map<std::string, std::vector<double>> op_meds;  // op -> each rank's median
  for (int r = 0; r < world; ++r) {
    const auto j = nlohmann::json::parse(all[static_cast<std::size_t>(r)]);
    for (const auto& op : j["ops"]) {
      const std::string name = op[0].get<std::string>();
      if (!op_meds.count(name)) op_order.push_back(name);
      op_meds[name].push_back(op[1].get<double>());
    }
    max_rss = std::max(max_rss, j["rss"].get<double>());
    max_device = std::max(max_device, j["device"].get<double>());
    const auto starts = j["epoch_start_s"].get<std::vector<double>>();
    if (!starts.empty()) {
      epoch_fixed = std::max(epoch_fixed, summarize(starts).median);
      epoch_starts = std::max(epoch_starts, starts.size());
    }
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
      trace.add_process(r, "rank " + std::to_string(r));
      for (const auto& ej : j["events"]) trace.add(r, trace_slice_from_json(ej));
    }
  }
  const Stat iter = summarize(it_med), compute = summarize(cp_med), comm_t = summarize(cm_med), exp_t = summarize(ex_med);
  const double samples_per_s = iter.median > 0 ? static_cast<double>(world * batch) / iter.median : 0;
  std::ostringstream summary_sink;
  print_summary(o.print_summary ? std::cout : summary_sink, o, net, c, world, batch, interrupted,
                {iter, compute, comm_t, exp_t, samples_per_s, epoch_fixed, epoch_starts, max_rss, max_device, !it_med.empty()});
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
  if (epoch_fixed >= 0) summary.epoch_fixed_s = epoch_fixed;
  // per bucket (steady plan): median over ranks of each rank's median
  for (const auto& v : bucket_meds) summary.bucket_communication_s.push_back(summarize(v).median);
  for (const auto& name : op_order) summary.op_s.emplace_back(name, summarize(op_meds[name]).median);
  std::vector<std::pair<std::string, std::string>> files;
  nlohmann::json prov = to_json(provenance(o.command_line));
  prov.update({{"seed", o.seed}, {"workload", {{"name", w.name}, {"file", w.file}}}, {"ranks", world},
               {"backend", c.backend}, {"threads_per_rank", o.threads}, {"hosts", hosts}});
  if (!o.json.empty()) {
    nlohmann::json j;
    j[kProvenanceKey] = prov;
    j["summary"] = to_json(summary);
    j["iterations"] = per_iter;
    files.emplace_back(o.json, j.dump(2) + "\n");
  }
  if (!o.csv.empty()) add_csv_output(files, o.csv, csv.str(), prov);
  if (!o.trace.empty())
    files.emplace_back(o.trace, trace.json().dump() + "\n");
  write_files_atomic(files);
  return TrainResult{interrupted ? 1 : 0, summary};
}

}  // namespace train_detail
}  // namespace ks
