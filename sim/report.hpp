#pragma once
// What a study writes: the scaling table, JSON, CSV and Chrome traces.
// Every file records the version, inputs and seed that made it.
#include <nlohmann/json.hpp>

#include <ostream>
#include <string>

#include "study.hpp"

namespace ks {

struct RunInfo {
  std::string command_line;
  const Cluster* cluster = nullptr;
  const Workload* workload = nullptr;
  const Calibration* calibration = nullptr;
  StudyOptions options;
};

void print_table(std::ostream& os, const StudyResult& r, const RunInfo& info);
nlohmann::json study_json(const StudyResult& r, const RunInfo& info);
std::string study_csv(const StudyResult& r, const RunInfo& info);
std::string buckets_csv(const StudyResult& r, const RunInfo& info);
nlohmann::json trace_json(const StudyResult& r, const RunInfo& info);

// Writes to PATH.tmp then renames: a reader never sees half a file.
// Throws std::runtime_error when the file cannot be written.
void write_file_atomic(const std::string& path, const std::string& content);

}  // namespace ks
