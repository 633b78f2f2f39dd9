#pragma once
// What made an output: this build (version and commit), the moment and the
// command. Every file kanscale writes records it through this one function:
// JSON under the one key "provenance" (kProvenanceKey), text as one line.
#include <nlohmann/json.hpp>
#include <string>

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

}  // namespace ks
