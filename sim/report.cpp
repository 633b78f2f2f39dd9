#include "sim/report.hpp"

#include "model/uncertainty.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <map>
#include <sstream>
#include <stdexcept>

#include "formats/provenance.hpp"
#include "formats/trace.hpp"
#include "model/units.hpp"

namespace ks {

std::string printf_number(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string fixed(double v, int prec) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(prec) << v;
  return os.str();
}

std::string csv_escape(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
  return o + "\"";
}

std::pair<double, double> lognormal_band(double point, double sigma, double level) {
  // the standard normal's (1 + level) / 2 quantile, by bisection on erfc
  const double p = 0.5 + level / 2;
  double lo = 0, hi = 10;
  for (int i = 0; i < 100; ++i) {
    const double mid = (lo + hi) / 2;
    (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p ? lo : hi) = mid;
  }
  const double z = (lo + hi) / 2;
  return {point * std::exp(-z * sigma), point * std::exp(z * sigma)};
}

namespace {

// "1.0MiB ring/LL, 2.0MiB tree/Simple": distinct (size, choice) pairs in bucket order.
std::string bucket_choices(const std::vector<BucketRow>& rows) {
  std::string s;
  for (const auto& b : rows) {
    if (!s.empty()) s += ", ";
    s += format_bytes(b.bytes) + " " + b.label;
  }
  return s;
}

}  // namespace

nlohmann::json run_provenance(const RunInfo& info) {
  nlohmann::json j = to_json(provenance(info.command_line, Dated::no));
  j["seed"] = info.options.seed;
  j["cluster"] = {{"name", info.cluster->name}, {"file", info.cluster->file}};
  j["workload"] = {{"name", info.workload->name}, {"file", info.workload->file}};
  j["calibration"] = {{"name", info.calibration->name},
                      {"source", info.calibration->source},
                      {"derived_from", info.calibration->derived_from},
                      {"file", info.calibration_file},
                      {"concurrency_ranks_per_node", info.calibration->concurrency}};
  if (!info.calibration->machine.empty()) j["calibration"]["machine"] = describe(info.calibration->machine);
  j["scaling"] = to_string(info.options.scaling);
  j["iterations_simulated"] = std::max(2, info.options.iterations);
  if (info.options.gpus_per_node) j["gpus_per_node_override"] = *info.options.gpus_per_node;
  return j;
}

namespace {

nlohmann::json stat_json(const Stat& s) { return {{"median", s.median}, {"p95", s.p95}}; }

nlohmann::json buckets_json(const std::vector<BucketRow>& rows) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& b : rows) {
    a.push_back({{"index", b.index},
                 {"parameters", b.params},
                 {"bytes", b.bytes},
                 {"algorithm_protocol", b.label},
                 {"start_s", b.start_s},
                 {"end_s", b.end_s}});
  }
  return a;
}

nlohmann::json band_json(const std::optional<Band>& b) {
  if (!b) return nullptr;
  return {{"lo", b->lo}, {"hi", b->hi}};
}

std::string band_text(const Band& b, bool time) {
  return "[" + (time ? format_time(b.lo) : fixed(b.lo, 2)) + ", " + (time ? format_time(b.hi) : fixed(b.hi, 2)) + "]";
}

nlohmann::json point_json(const ScalingPoint& p) {
  const MemoryEstimate& m = p.memory;
  return {{"gpus", p.gpus},
          {"nodes", p.nodes},
          {"batch_per_gpu", p.batch_per_gpu},
          {"dataset_samples", p.dataset_size},
          {"iterations_per_epoch", p.iterations_per_epoch},
          {"iteration_time_s", stat_json(p.iteration_s)},
          {"first_iteration_time_s", stat_json(p.first_iteration_s)},
          {"compute_time_s", stat_json(p.compute_s)},
          {"communication_time_s", stat_json(p.comm_s)},
          {"exposed_communication_s", stat_json(p.exposed_s)},
          {"communication_overhead_exposed", p.overhead_exposed},
          {"communication_overhead_total", p.overhead_total},
          {"samples_per_s", p.samples_per_s},
          {"epoch_time_s", p.epoch_s},
          {"time_to_train_s", p.time_to_train_s},
          {"job_fixed_s", p.job_fixed_s},
          {"gpu_hours", p.gpu_hours},
          {"speedup", p.speedup},
          {"efficiency", p.efficiency},
          {"events", p.events},
          {"broadcast_buffers", p.broadcast_label},
          {"memory",
           {{"parameters_bytes", m.parameters_bytes},
            {"gradients_bytes", m.gradients_bytes},
            {"buckets_bytes", m.buckets_bytes},
            {"optimizer_bytes", m.optimizer_bytes},
            {"activations_bytes", m.activations_bytes},
            {"transient_bytes", m.transient_bytes},
            {"batch_bytes", m.batch_bytes},
            {"buffers_bytes", m.buffers_bytes},
            {"collective_bytes", m.collective_bytes},
            {"runtime_bytes", m.runtime_bytes},
            {"peak_bytes", m.peak_bytes},
            {"capacity_bytes", m.capacity_bytes},
            {"parameter_to_memory_ratio", m.parameter_to_memory_ratio()},
            {"exceeds_capacity", m.exceeds_capacity()}}},
          {"iteration_time_interval_s", band_json(p.iteration_band)},
          {"extrapolation_sigma", p.extrapolation_sigma},
          {"speedup_interval", band_json(p.speedup_band)},
          {"buckets_first_iteration", buckets_json(p.first_plan)},
          {"buckets_steady", buckets_json(p.steady_plan)}};
}


}  // namespace

void print_table(std::ostream& os, const StudyResult& r, const RunInfo& info) {
  const auto& w = *info.workload;
  os << "kanscale simulate: " << info.workload->name << " on " << info.cluster->name << " ("
     << info.cluster->gpu.model << ", " << r.collective_family << " " << info.cluster->collectives.version << ")\n";
  os << "  KAN widths [";
  for (std::size_t i = 0; i < w.widths.size(); ++i) os << (i ? ", " : "") << w.widths[i];
  os << "], G=" << w.grid_size << ", k=" << w.spline_order << ", " << r.parameters << " parameters ("
     << format_bytes(4.0 * r.parameters) << "), " << to_string(w.implementation) << ", " << to_string(w.precision)
     << "\n";
  const bool posterior = !info.calibration->posterior.empty();
  os << "  calibration: " << info.calibration->name << " (" << (posterior ? "posterior" : info.calibration->source)
     << (posterior
             ? ": CONDITIONED ON " + info.calibration->posterior.conditioned_on + "; not measured: " + info.calibration->derived_from
             : info.calibration->source == "datasheet" ? ": derived from datasheet peaks; host overhead, jitter and interference unknown, set to 0" : "")
     << (info.calibration->machine.empty() ? "" : "; measured on " + describe(info.calibration->machine)) << ")\n";
  os << "  scaling: " << to_string(info.options.scaling) << "; seed " << info.options.seed
     << "; times are steady-state medians over ranks\n\n";
  os << std::left;
  os << std::setw(6) << "N" << std::setw(6) << "nodes" << std::setw(12) << "iter" << std::setw(12) << "samples/s"
     << std::setw(12) << "epoch" << std::setw(9) << "speedup" << std::setw(7) << "eff" << std::setw(12) << "compute"
     << std::setw(12) << "comm" << std::setw(12) << "exposed" << std::setw(14) << "overhead" << std::setw(12)
     << "memory"
     << "buckets (size algorithm/protocol)\n";
  for (const auto& p : r.points) {
    os << std::setw(6) << p.gpus << std::setw(6) << p.nodes << std::setw(12) << format_time(p.iteration_s.median)
       << std::setw(12) << fixed(p.samples_per_s, 0) << std::setw(12) << format_time(p.epoch_s) << std::setw(9)
       << fixed(p.speedup, 2) << std::setw(7) << (fixed(100 * p.efficiency, 1) + "%") << std::setw(12)
       << format_time(p.compute_s.median) << std::setw(12) << format_time(p.comm_s.median) << std::setw(12)
       << format_time(p.exposed_s.median) << std::setw(14)
       << (fixed(100 * p.overhead_exposed, 1) + "% / " + fixed(100 * p.overhead_total, 0) + "%") << std::setw(12)
       << format_bytes(p.memory.peak_bytes) << bucket_choices(p.steady_plan) << "\n";
  }
  os << "\n  overhead = exposed / iteration (and total communication / iteration)\n";
  if (info.calibration) {
    const Calibration& cal = *info.calibration;
    const double level = info.options.interval_level;
    if (cal.memory_error_sigma > 0) {
      os << "  peak memory, " << fixed(100 * level, 0) << "% interval (lognormal sigma " << fixed(cal.memory_error_sigma, 4) << ", "
         << cal.memory_source << "):";
      for (const auto& p : r.points) {
        const auto [lo, hi] = lognormal_band(p.memory.peak_bytes, cal.memory_error_sigma, level);
        os << " N=" << p.gpus << " [" << format_bytes(lo) << ", " << format_bytes(hi) << "];";
      }
      os << "\n";
    } else if (!cal.memory_source.empty()) {
      os << "  peak memory: " << cal.memory_source << "\n";
    }
  }
  const auto bands = [&] {
    os << "   ";
    for (const auto& p : r.points)
      if (p.iteration_band && p.speedup_band)
        os << " N=" << p.gpus << " iter " << band_text(*p.iteration_band, true) << " speedup " << band_text(*p.speedup_band, false) << ";";
    os << "\n";
  };
  if (r.interval_samples > 0 && !r.band_source.empty()) {
    os << "  " << fixed(100 * info.options.interval_level, 0) << "% intervals: " << r.band_source << "\n";
    bands();
  } else if (r.interval_samples > 0) {
    os << "  " << fixed(100 * info.options.interval_level, 0) << "% intervals (" << r.interval_samples << " samples), drawn from:\n";
    if (info.calibration) {
      const Calibration& cal = *info.calibration;
      auto sig = [](double s) { return s > 0 ? "lognormal sigma " + fixed(s, 4) : std::string("none (not measured)"); };
      os << "    (a) the fits' covariances: " << (has_parameter_uncertainty(cal) ? "drawn per sample" : "none recorded") << "\n";
      if (cal.unwatched_sigma_applied > 0)
        os << "    (b) the model's error, UNWATCHED (no live run of this calibration measured it): " << sig(cal.model_error_sigma) << ", "
           << cal.unwatched_source << (cal.host_prior_sigma > 0 ? "; on the device's time only" : "") << "\n";
      else
        os << "    (b) the model's out-of-sample error (leave one shape out over the calibration's live runs): " << sig(cal.model_error_sigma)
           << "\n";
      if (cal.priors_sigma_applied > 0)
        os << "        on the gradient all-reduces, the PRIORS' (one draw for every bucket): " << sig(cal.comm_error_sigma) << ", "
           << cal.priors_source << "\n";
      else
        os << "        on the gradient all-reduces (leave one shape out over their measured times): " << sig(cal.comm_error_sigma) << "\n";
      if (cal.host_prior_sigma > 0 && cal.default_host_terms)
        os << "        on the host's PyTorch dispatches, the PRIORS' (one draw for every op, median one): " << sig(cal.host_prior_sigma) << ", "
           << cal.default_host_terms->from << ", x t(0.95) for one more CPU / z(0.95)\n";
      os
         << "    (c) run-to-run drift (the live runs' rounds, a random effect per run): " << sig(cal.drift_sigma) << "\n"
         << "    (d) jitter (per rank and iteration): " << sig(cal.jitter_sigma) << "\n"
         << "        and a rank's speed that persists through a run (each sample draws the ranks'; the point takes their expected order): "
         << sig(cal.rank_sigma) << "\n";
      std::string reach;
      for (const auto& p : r.points)
        if (p.extrapolation_sigma > 0) reach += (reach.empty() ? "" : ", ") + ("N=" + std::to_string(p.gpus) + " " + fixed(p.extrapolation_sigma, 3));
      if (!reach.empty())
        os << "    (e) ranks beyond the live runs' (their terms carried unmeasured; one draw a sample): lognormal sigma " << reach << "\n";
    }
    bands();
  } else if (!r.interval_note.empty()) {
    os << "  intervals: " << r.interval_note << "\n";
  }
  if (!r.points.empty()) {
    const auto& last = *std::max_element(r.points.begin(), r.points.end(),
                                         [](const ScalingPoint& a, const ScalingPoint& b) { return a.gpus < b.gpus; });
    os << "  N=" << last.gpus << ": first iteration " << format_time(last.first_iteration_s.median) << " (buckets "
       << bucket_choices(last.first_plan) << "); time to train " << w.epochs << " epoch(s) "
       << format_time(last.time_to_train_s) << " (of it the job's start-up and communicator set-up " << format_time(last.job_fixed_s)
       << ": " << info.cluster->job.source << "), " << fixed(last.gpu_hours, 3) << " GPU-hours; parameter-to-memory "
       << fixed(100 * last.memory.parameter_to_memory_ratio(), 2) << "%\n";
  }
  for (const auto& wmsg : r.warnings) os << "  WARNING: " << wmsg << "\n";
}

nlohmann::json study_json(const StudyResult& r, const RunInfo& info) {
  nlohmann::json j;
  j[kProvenanceKey] = run_provenance(info);
  const auto& w = *info.workload;
  j["model"] = {{"widths", w.widths},
                {"grid_size", w.grid_size},
                {"spline_order", w.spline_order},
                {"parameters", r.parameters},
                {"implementation", to_string(w.implementation)},
                {"precision", to_string(w.precision)}};
  j["collective_family"] = r.collective_family;
  const JobCosts& job = info.cluster->job;
  j["job_fixed_costs"] = {{"startup_s", job.startup_s},
                          {"communicator_init_s", job.communicator_init_s},
                          {"communicator_init_per_rank_s", job.communicator_init_per_rank_s},
                          {"source", job.source}};
  j["baseline_1gpu"] = point_json(r.baseline);
  nlohmann::json pts = nlohmann::json::array();
  for (const auto& p : r.points) {
    nlohmann::json pj = point_json(p);
    if (info.calibration && info.calibration->memory_error_sigma > 0) {
      const auto [lo, hi] = lognormal_band(p.memory.peak_bytes, info.calibration->memory_error_sigma, info.options.interval_level);
      pj["memory"]["peak_interval_bytes"] = {{"lo", lo}, {"hi", hi}};
    }
    pts.push_back(pj);
  }
  j["points"] = pts;
  j["intervals"] = {{"samples", r.interval_samples}, {"level", info.options.interval_level}, {"note", r.interval_note}};
  if (!r.band_source.empty()) j["intervals"]["from"] = r.band_source;
  if (info.calibration) {
    // the lognormal sigmas behind the bands, by where they come from (issue 57)
    const Calibration& cal = *info.calibration;
    j["interval_parts"] = {{"calibration", {{"fits_covariance", has_parameter_uncertainty(cal)},
                                            {"model_error_sigma", cal.model_error_sigma - cal.unwatched_sigma_applied},
                                            {"comm_error_sigma", cal.comm_error_sigma - cal.priors_sigma_applied},
                                            {"drift_sigma", cal.drift_sigma},
                                            {"jitter_sigma", cal.jitter_sigma},
                                            {"rank_sigma", cal.rank_sigma}}},
                           {"priors", {{"comm_error_sigma", cal.priors_sigma_applied},
                                       {"source", cal.priors_source},
                                       {"host_dispatch_sigma", cal.host_prior_sigma},
                                       {"host_source", cal.host_prior_sigma > 0 && cal.default_host_terms ? cal.default_host_terms->from : ""}}},
                           {"unwatched", {{"model_error_sigma", cal.unwatched_sigma_applied}, {"source", cal.unwatched_source}}},
                           {"memory", {{"memory_error_sigma", cal.memory_error_sigma}, {"source", cal.memory_source}}}};
  }
  j["warnings"] = r.warnings;
  return j;
}

std::string study_csv(const StudyResult& r) {
  std::ostringstream os;
  os << std::setprecision(9);
  os << "gpus,nodes,batch_per_gpu,iterations_per_epoch,iteration_time_s,iteration_time_p95_s,first_iteration_time_s,"
        "compute_time_s,communication_time_s,exposed_communication_s,overhead_exposed,overhead_total,samples_per_s,"
        "epoch_time_s,time_to_train_s,gpu_hours,speedup,efficiency,peak_memory_bytes,parameter_to_memory_ratio,"
        "buckets_steady,iteration_time_lo_s,iteration_time_hi_s,speedup_lo,speedup_hi,job_fixed_s\n";
  for (const auto& p : r.points) {
    os << p.gpus << "," << p.nodes << "," << p.batch_per_gpu << "," << p.iterations_per_epoch << ","
       << p.iteration_s.median << "," << p.iteration_s.p95 << "," << p.first_iteration_s.median << ","
       << p.compute_s.median << "," << p.comm_s.median << "," << p.exposed_s.median << "," << p.overhead_exposed << ","
       << p.overhead_total << "," << p.samples_per_s << "," << p.epoch_s << "," << p.time_to_train_s << ","
       << p.gpu_hours << "," << p.speedup << "," << p.efficiency << "," << p.memory.peak_bytes << ","
       << p.memory.parameter_to_memory_ratio() << "," << csv_escape(bucket_choices(p.steady_plan));
    if (p.iteration_band && p.speedup_band)
      os << "," << p.iteration_band->lo << "," << p.iteration_band->hi << "," << p.speedup_band->lo << "," << p.speedup_band->hi;
    else
      os << ",,,,";
    os << "," << p.job_fixed_s << "\n";
  }
  return os.str();
}

std::string buckets_csv(const StudyResult& r) {
  std::ostringstream os;
  os << std::setprecision(9);
  os << "gpus,plan,bucket,bytes,algorithm_protocol,start_s,end_s,parameters\n";
  for (const auto& p : r.points) {
    for (int plan = 0; plan < 2; ++plan) {
      const auto& rows = plan == 0 ? p.first_plan : p.steady_plan;
      for (const auto& b : rows) {
        std::string names;
        for (const auto& n : b.params) names += (names.empty() ? "" : " ") + n;
        os << p.gpus << "," << (plan == 0 ? "first_iteration" : "steady") << "," << b.index << "," << b.bytes << ","
           << b.label << "," << b.start_s << "," << b.end_s << "," << csv_escape(names) << "\n";
      }
    }
  }
  return os.str();
}

nlohmann::json trace_json(const StudyResult& r, const RunInfo& info) {
  ChromeTrace trace;
  int pid_base = 0;  // each scaling point's ranks after the previous point's
  for (const auto& p : r.points) {
    std::map<int, bool> ranks;
    for (const auto& s : p.trace) ranks[s.rank] = true;
    for (const auto& [rank, _] : ranks)
      trace.add_process(pid_base + rank, "N=" + std::to_string(p.gpus) + " rank " + std::to_string(rank));
    for (const auto& s : p.trace) trace.add(pid_base + s.rank, s);
    pid_base += p.gpus;
  }
  return trace.json(run_provenance(info));
}

}  // namespace ks
