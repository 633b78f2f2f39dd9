#pragma once
// A thin reader over yaml-cpp that turns a YAML file into typed values once,
// at the edge, and reports every problem as one line:
//   FILE:LINE:COL: key 'a.b': what was wrong; expected what
// Unknown keys are errors too (with a "did you mean" suggestion).
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "formats/input_file.hpp"
#include "common/error.hpp"
#include "model/units.hpp"

namespace ks {

enum class Bound { any, non_negative, positive };


// Edit distance, for "did you mean".
std::size_t edit_distance(const std::string& a, const std::string& b);
// The closest candidate within a small distance, or "".
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);

class YamlMap {
 public:
  // Loads a file; throws InputError for a missing file or a YAML syntax error.
  static YamlMap load_file(const std::string& path);
  // Parses text (tests, embedded defaults); `name` stands for the file name.
  static YamlMap load_string(const std::string& text, const std::string& name);

  bool has(const std::string& key);  // registers the key as known
  bool has_map(const std::string& key);  // present and a map (registers the key)
  bool has_list(const std::string& key);  // present and a list (registers the key)
  // Present with no value (`key: null` or `key:`), which some files use for
  // "not stated"; registers the key. Every other getter refuses a null.
  bool is_null(const std::string& key);
  // Accepts the key with any value (informational entries such as fit quality).
  void ignore(const std::string& key) { known_.insert(key); }

  std::string string(const std::string& key);
  std::optional<std::string> string_opt(const std::string& key);
  // A file named in this file: resolved against this file's directory, then
  // kanscale's data directory (base/data_dir); the error names both places.
  // Returns the path to open.
  std::string path(const std::string& key);
  // One of `choices`; the error lists them.
  std::string choice(const std::string& key, const std::vector<std::string>& choices);
  std::optional<std::string> choice_opt(const std::string& key, const std::vector<std::string>& choices);

  // Integers are range-checked before anyone narrows them: the default upper
  // bound is INT_MAX, so a caller that keeps the value in an int is safe;
  // one that keeps 64 bits passes its own bound.
  static constexpr std::int64_t kIntMax = 2147483647;
  std::int64_t integer(const std::string& key, std::int64_t min_value, std::int64_t max_value = kIntMax);
  std::optional<std::int64_t> integer_opt(const std::string& key, std::int64_t min_value, std::int64_t max_value = kIntMax);
  double number(const std::string& key, Bound bound);
  std::optional<double> number_opt(const std::string& key, Bound bound);
  std::optional<bool> boolean_opt(const std::string& key);

  double quantity(const std::string& key, Quantity q, Bound bound);
  std::optional<double> quantity_opt(const std::string& key, Quantity q, Bound bound);

  std::vector<std::int64_t> integer_list(const std::string& key, std::int64_t min_value, std::size_t min_length,
                                         std::int64_t max_value = kIntMax);
  // A non-empty list of integer lists, each of at least `min_length`
  // entries (e.g. KAN widths [[16, 32, 1], [8, 8, 1]]).
  std::vector<std::vector<std::int64_t>> integer_lists(const std::string& key, std::int64_t min_value, std::size_t min_length,
                                                       std::int64_t max_value = kIntMax);
  // A non-empty list of quantities with units (e.g. ["1MiB", "64KiB"]).
  std::vector<double> quantity_list(const std::string& key, Quantity q, Bound bound);
  std::vector<std::string> choice_list(const std::string& key, const std::vector<std::string>& choices);
  std::optional<std::vector<double>> number_list_opt(const std::string& key, Bound bound);
  // A non-empty list of strings.
  std::vector<std::string> string_list(const std::string& key);
  // A square matrix of finite numbers, [[a, b], [c, d]], of `size` rows
  // (a fit's covariance); absent: nullopt.
  std::optional<std::vector<std::vector<double>>> matrix_opt(const std::string& key, std::size_t size);
  // A list of [a, b] number pairs (e.g. a measured curve).
  std::vector<std::pair<double, double>> number_pairs(const std::string& key);

  YamlMap map(const std::string& key);
  std::optional<YamlMap> map_opt(const std::string& key);
  // A map given in place, or a file named in its place (resolved as path()
  // does; `loaded`, when given, receives the path opened): a section that
  // several files share.
  std::optional<YamlMap> map_or_file_opt(const std::string& key, std::string* loaded = nullptr);
  // A list of maps.
  std::vector<YamlMap> map_list_opt(const std::string& key);
  // The map's own keys, in the file's order (a map keyed by names, e.g. op classes).
  std::vector<std::string> keys() const;

  // Errors for every key that no getter asked about. Call once all getters ran.
  void finish();

  // An error located at this map's key (or at the map when the key is absent).
  [[noreturn]] void fail(const std::string& key, const std::string& what) const;
  // An error located at entry `index` of the list under `key` ("key[index]").
  [[noreturn]] void fail_item(const std::string& key, std::size_t index, const std::string& what) const;
  const std::string& file() const { return *file_; }
  std::string key_path(const std::string& key) const;
  // "FILE:LINE:COL: key 'PATH'": where a later check of the key's value
  // names it (the prefix fail() writes)
  std::string where(const std::string& key) const;

 private:
  YamlMap(std::shared_ptr<const std::string> file, YAML::Node node, std::string path);
  YAML::Node value(const std::string& key);  // registers; null node when absent
  YAML::Node required(const std::string& key);
  [[noreturn]] void fail_at(const YAML::Mark& mark, const std::string& key, const std::string& what) const;
  // A list entry that must be a finite number (`key` names it in the error).
  double list_number(const YAML::Node& e, const std::string& key) const;
  std::string scalar_of(const YAML::Node& n, const std::string& key, const char* expected) const;

  std::shared_ptr<const std::string> file_;
  YAML::Node node_;
  std::string path_;
  std::set<std::string> known_;
};

}  // namespace ks
