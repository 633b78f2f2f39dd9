#include "provenance.hpp"

#include <ctime>
#include <filesystem>

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

std::string csv_meta_path(const std::string& csv_path) {
  if (csv_path.empty()) return "";
  std::error_code ec;
  const auto st = std::filesystem::status(csv_path, ec);  // follows a link to its target
  if (!ec && std::filesystem::exists(st) && !std::filesystem::is_regular_file(st)) return "";
  // /dev/stdout and /proc/self/fd/N lead to whatever the shell redirected
  // to: a sidecar beside them would land in /dev or /proc
  const std::string abs = std::filesystem::absolute(csv_path, ec).lexically_normal().string();
  if (abs.rfind("/dev/", 0) == 0 || abs.rfind("/proc/", 0) == 0) return "";
  const std::string ext = ".csv";
  const bool has_ext = csv_path.size() > ext.size() && csv_path.compare(csv_path.size() - ext.size(), ext.size(), ext) == 0;
  return (has_ext ? csv_path.substr(0, csv_path.size() - ext.size()) : csv_path) + ".meta.json";
}

std::string csv_meta_text(const std::string& csv_file_name, const nlohmann::json& provenance, const nlohmann::json& more) {
  nlohmann::json j = {{kProvenanceKey, provenance}, {"csv", csv_file_name}};
  if (more.is_object()) j.update(more);
  return j.dump(2) + "\n";
}

void add_csv_output(std::vector<std::pair<std::string, std::string>>& files, const std::string& csv_path,
                    const std::string& csv_text, const nlohmann::json& provenance, const nlohmann::json& more) {
  files.emplace_back(csv_path, csv_text);
  const std::string meta = csv_meta_path(csv_path);
  if (meta.empty()) return;
  files.emplace_back(meta, csv_meta_text(std::filesystem::path(csv_path).filename().string(), provenance, more));
}

}  // namespace ks
