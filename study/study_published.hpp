#pragma once
// A study's published figures (its `published:` section) against the
// scenario bands: whether each figure falls inside the band of every
// scenario it concerns, how wide that band is at the published GPU count
// (so that a band wide enough to cover anything shows as such), and, per
// unknown, the narrowest range around the point prediction's value that
// reaches the figure with every other unknown at its point value.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "scenario.hpp"

namespace ks {

struct UnknownNeed {
  std::string key;
  bool reached = false;
  double lo = 0, hi = 0;  // the narrowest range (reached), in the unknown's values
  std::string text;       // "[1x, 1.42x]", or what the unknown alone gives
};

struct FigureCheck {
  std::string figure;    // "speedup at 8 GPUs", ...
  std::string scenario;  // the scenario's label
  std::string published;  // as published: "5.97x", "1.3-6.1%", "drop, then plateau"
  std::string predicted;  // the point prediction
  std::string band;       // the scenario band
  bool inside = false;
  // the same as numbers (fractions for percentages; 1 and 0 for yes and no)
  double published_value = 0, prediction_value = 0, band_lo = 0, band_hi = 0;
  double half_width = 0;  // the band's half-width at the published GPU count, relative to the point prediction
  std::vector<UnknownNeed> needs;
};

// Runs the one-at-a-time sweeps (point predictions, GPU counts up to the
// published one). Empty when the study publishes nothing.
std::vector<FigureCheck> check_published(const StudySpec& s, const std::vector<StudyResult>& results);

std::string published_markdown(const StudySpec& s, const std::vector<FigureCheck>& checks);
nlohmann::json published_json(const std::vector<FigureCheck>& checks);

}  // namespace ks
