#pragma once
// Reads kanscale's CSV outputs as a user's Python script would
// (tests/read_csv.py: the csv module's defaults, and pandas' when it is
// installed) and checks what comes back: the header row first, every row
// as long as it, and the sidecar F.meta.json with the provenance.
#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "paths.hpp"
#include "process.hpp"

// Each file's columns as Python's csv module reads them (REQUIREs that the
// reader accepted every file).
inline std::map<std::string, std::vector<std::string>> python_csv_columns(const std::vector<std::string>& files) {
  std::vector<std::string> argv = {"/usr/bin/python3", kSrc + "/tests/read_csv.py"};
  argv.insert(argv.end(), files.begin(), files.end());
  const ProcessResult r = run_process(argv, "", 60);
  CAPTURE(r.err);
  REQUIRE(r.exit_code == 0);
  std::map<std::string, std::vector<std::string>> cols;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    const auto j = nlohmann::json::parse(line);
    cols[j["file"].get<std::string>()] = j["columns"].get<std::vector<std::string>>();
    if (!j["pandas_columns"].is_null()) CHECK(j["pandas_columns"] == j["columns"]);
  }
  REQUIRE(cols.size() == files.size());
  return cols;
}

// F.csv's sidecar F.meta.json: names F and carries the provenance.
inline nlohmann::json csv_sidecar(const std::string& csv_file) {
  const std::string meta = csv_file.substr(0, csv_file.size() - 4) + ".meta.json";
  std::ifstream in(meta);
  REQUIRE_MESSAGE(in.good(), "no sidecar " << meta);
  std::stringstream ss;
  ss << in.rdbuf();
  const auto j = nlohmann::json::parse(ss.str());
  CHECK(j["csv"] == csv_file.substr(csv_file.find_last_of('/') + 1));
  CHECK(j["provenance"]["kanscale_version"].is_string());
  return j;
}
