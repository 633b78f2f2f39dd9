#pragma once
// What made an output: this build (version and commit), the moment and the
// command. Every file kanscale writes records it through this one function:
// JSON under the one key "provenance" (kProvenanceKey), text as one line.
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace ks {

inline constexpr const char* kProvenanceKey = "provenance";

struct Provenance {
  std::string version;       // the project's version
  std::string git_hash;      // the commit built from (12 hex digits, +dirty)
  std::string date_utc;      // ISO 8601, when provenance() was called
  std::string command_line;  // as the user typed it (may be empty)
};

// Measurements and calibrations are dated (Dated::yes); predictions are a
// function of their inputs and seed alone (Dated::no: no date), so that two
// runs of the same command write the same bytes.
enum class Dated { yes, no };
Provenance provenance(const std::string& command_line = "", Dated dated = Dated::yes);

// "kanscale VERSION (COMMIT)": the short form text outputs carry.
std::string describe(const Provenance& p);

// {"kanscale_version", "git_hash", "date_utc" (when dated), "command_line"}; callers add
// what else made the output (a seed, the input files).
nlohmann::json to_json(const Provenance& p);

// The provenance object of a file kanscale wrote, or the object itself for
// files from before the key existed (the same fields at its top level).
const nlohmann::json& provenance_of(const nlohmann::json& object);

// CSV outputs start with their header row, as every CSV reader expects
// (Python's csv module, pandas' defaults); what made the file goes to a
// sidecar beside it, F.csv -> F.meta.json (another name: NAME.meta.json):
// {"provenance": ..., "csv": F's file name} plus what the command adds
// (`more`'s keys). A CSV written to a pipe or a device (/dev/stdout) has no
// sidecar: csv_meta_path gives "" for a path that exists and is not a
// regular file.
std::string csv_meta_path(const std::string& csv_path);
// The sidecar's text for the CSV file named csv_file_name.
std::string csv_meta_text(const std::string& csv_file_name, const nlohmann::json& provenance,
                          const nlohmann::json& more = nlohmann::json::object());
// Appends (csv_path, csv_text) and, where it has one, its sidecar to
// `files` (the list write_files_atomic writes as one set).
void add_csv_output(std::vector<std::pair<std::string, std::string>>& files, const std::string& csv_path,
                    const std::string& csv_text, const nlohmann::json& provenance, const nlohmann::json& more = nlohmann::json::object());

}  // namespace ks
