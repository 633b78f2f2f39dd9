#pragma once
// What kanscale study writes: the four dimensions of the KAN scaling study
// (strong scaling, weak scaling, communication overhead, model-size
// scaling) as one table each, in CSV and JSON with the units in the column
// names, gnuplot plots with their data, study.json with every scenario's
// full result, and report.md that embeds the plots and states the inputs,
// calibrations and seed.
#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

#include "base/plot.hpp"
#include "scenario.hpp"
#include "study_published.hpp"

namespace ks {

// One dimension's table: column names (units in them) and rows of values
// (numbers, strings, booleans; null: no value, e.g. no band).
struct DimensionTable {
  std::string name;   // file stem: strong_scaling, weak_scaling, communication, model_size
  std::string title;
  std::vector<std::string> columns;
  std::vector<std::vector<nlohmann::json>> rows;
};

struct StudyOutputs {
  std::vector<DimensionTable> tables;
  std::vector<PlotSpec> plots;
  nlohmann::json study;  // study.json
  std::vector<FigureCheck> published;  // the study's published figures against its bands (published.json)
};

// `results[i]` is scenario i's.
StudyOutputs study_outputs(const StudySpec& s, const std::vector<StudyResult>& results, const std::string& command_line);

std::string table_csv(const DimensionTable& t);
nlohmann::json table_json(const DimensionTable& t, const nlohmann::json& provenance);
// The tables on a terminal: one block per dimension, the main columns only.
std::string tables_text(const StudySpec& s, const StudyOutputs& o);
// report.md: inputs, calibrations, seed, the plots and a table per dimension.
std::string study_markdown(const StudySpec& s, const StudyOutputs& o);

// Every file of the output directory: (name, content) pairs, plots' .gp
// and .dat included (their pictures come from render_plots).
std::vector<std::pair<std::string, std::string>> study_files(const StudySpec& s, const StudyOutputs& o);

}  // namespace ks
