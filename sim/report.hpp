#pragma once
// What a study writes: the scaling table, JSON, CSV and Chrome traces.
// Every file records the version, inputs and seed that made it.
#include <nlohmann/json.hpp>

#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "base/output_files.hpp"
#include "sim/point.hpp"

namespace ks {

struct RunInfo {
  std::string command_line;
  const Cluster* cluster = nullptr;
  const Workload* workload = nullptr;
  const Calibration* calibration = nullptr;
  StudyOptions options;
  std::string calibration_file;  // empty: derived from the cluster
};

// A number with `prec` decimals; a CSV field, quoted when it holds a comma,
// a quote or a newline (quotes doubled).
std::string fixed(double v, int prec);
// One number through a printf format ("%.4g", "%+.1f%%").
std::string printf_number(const char* format, double v);
std::string csv_escape(const std::string& s);
// The central `level` band of `point` x exp(sigma z), z standard normal (the
// model's point as its median): (point e^-zq sigma, point e^zq sigma).
std::pair<double, double> lognormal_band(double point, double sigma, double level);

void print_table(std::ostream& os, const StudyResult& r, const RunInfo& info);
nlohmann::json study_json(const StudyResult& r, const RunInfo& info);
// What made a run's outputs (its JSON's provenance, its CSVs' sidecar):
// this build, the command, the seed, the cluster, workload and calibration.
nlohmann::json run_provenance(const RunInfo& info);
// The CSVs start with their header row (provenance: run_provenance, in the
// sidecar add_csv_output writes).
std::string study_csv(const StudyResult& r);
std::string buckets_csv(const StudyResult& r);
nlohmann::json trace_json(const StudyResult& r, const RunInfo& info);

}  // namespace ks
