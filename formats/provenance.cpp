#include "provenance.hpp"

#include <ctime>

#include "kanscale/build_info.hpp"

namespace ks {

Provenance provenance(const std::string& command_line, Dated dated) {
  if (dated == Dated::no) return {build::version, build::git_hash, "", command_line};
  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return {build::version, build::git_hash, date, command_line};
}

std::string describe(const Provenance& p) { return "kanscale " + p.version + " (" + p.git_hash + ")"; }

nlohmann::json to_json(const Provenance& p) {
  nlohmann::json j = {{"kanscale_version", p.version}, {"git_hash", p.git_hash}};
  if (!p.date_utc.empty()) j["date_utc"] = p.date_utc;
  j["command_line"] = p.command_line;
  return j;
}

const nlohmann::json& provenance_of(const nlohmann::json& object) {
  if (object.is_object()) {
    const auto it = object.find(kProvenanceKey);
    if (it != object.end() && it->is_object()) return *it;
  }
  return object;
}

}  // namespace ks
