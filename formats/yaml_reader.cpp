#include "yaml_reader.hpp"

#include "base/data_dir.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <fstream>
#include <sstream>

namespace ks {

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string closest_match(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_d = std::max<std::size_t>(2, word.size() / 3) + 1;
  for (const auto& c : candidates) {
    const std::size_t d = edit_distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

YamlMap::YamlMap(std::shared_ptr<const std::string> file, YAML::Node node, std::string path)
    : file_(std::move(file)), node_(std::move(node)), path_(std::move(path)) {
  // every key a plain name: yaml-cpp would throw "bad conversion" at the
  // first look at a list or a map used as a key
  if (!node_.IsMap()) return;
  for (auto it = node_.begin(); it != node_.end(); ++it)
    if (!it->first.IsScalar())
      fail_at(it->first.Mark(), "?", std::string("a key that is ") + (it->first.IsSequence() ? "a list" : it->first.IsMap() ? "a map" : "empty") +
                                         "; expected a plain name");
}


YamlMap YamlMap::load_file(const std::string& given) {
  const std::string path = resolve_given_path(given);
  return load_string(read_input_file(path, "a YAML file"), path);
}

namespace {
// Flow collections nested deeper than kanscale's files ever are (a few
// levels) are refused before yaml-cpp, which fails on deep ones with only
// "bad file": the line where the nesting passes the limit.
void check_flow_depth(const std::string& text, const std::string& name) {
  constexpr int kMaxDepth = 64;
  int depth = 0, line = 1;
  char quote = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      if (quote != '"' && quote != '\'') quote = 0;
      continue;
    }
    if (quote) {
      if (c == quote && !(quote == '"' && i > 0 && text[i - 1] == '\\')) quote = 0;
      continue;
    }
    if (c == '#' && (i == 0 || text[i - 1] == ' ' || text[i - 1] == '\n')) quote = '#';  // a comment, to the line's end
    else if (c == '"' || c == '\'') quote = c;
    else if (c == '[' || c == '{') {
      if (++depth > kMaxDepth)
        throw InputError(name + ":" + std::to_string(line) + ": YAML nested more than " + std::to_string(kMaxDepth) +
                         " levels deep; expected kanscale's few levels of keys and lists");
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
}
}  // namespace

YamlMap YamlMap::load_string(const std::string& text, const std::string& name) {
  auto file = std::make_shared<const std::string>(name);
  check_flow_depth(text, name);
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    // (yaml-cpp says only "bad file" where a structure nests too deep for it)
    throw InputError(name + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) + ": YAML syntax error: " +
                     (e.msg == "bad file" ? std::string("nested deeper than the YAML reader takes (yaml-cpp: bad file); expected kanscale's few levels")
                                          : e.msg));
  }
  if (!root.IsMap()) throw InputError(name + ":1:1: expected a YAML mapping at the top level");
  return YamlMap(file, root, "");
}

std::string YamlMap::key_path(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

static std::string where_at(const std::string& file, const YAML::Mark& mark, const std::string& key_path) {
  std::ostringstream os;
  os << file;
  if (!mark.is_null()) os << ":" << mark.line + 1 << ":" << mark.column + 1;
  os << ": key '" << key_path << "'";
  return os.str();
}

void YamlMap::fail_at(const YAML::Mark& mark, const std::string& key, const std::string& what) const {
  throw InputError(where_at(*file_, mark, key_path(key)) + ": " + what);
}

std::string YamlMap::where(const std::string& key) const {
  const YAML::Node n = node_[key];
  return where_at(*file_, n.IsDefined() ? n.Mark() : node_.Mark(), key_path(key));
}

void YamlMap::fail(const std::string& key, const std::string& what) const {
  YAML::Node n = node_[key];
  fail_at(n.IsDefined() ? n.Mark() : node_.Mark(), key, what);
}

void YamlMap::fail_item(const std::string& key, std::size_t index, const std::string& what) const {
  const YAML::Node n = node_[key];
  const std::string k = key + "[" + std::to_string(index) + "]";
  if (n.IsSequence() && index < n.size()) fail_at(n[index].Mark(), k, what);
  fail_at(n.IsDefined() ? n.Mark() : node_.Mark(), k, what);
}

YAML::Node YamlMap::value(const std::string& key) {
  known_.insert(key);
  YAML::Node n = node_[key];
  if (n.IsDefined() && n.IsNull()) fail_at(n.Mark(), key, "has no value");
  return n;
}

YAML::Node YamlMap::required(const std::string& key) {
  YAML::Node n = value(key);
  if (!n.IsDefined()) {
    // A misspelt key is the likelier story: report it as unknown, where it is.
    for (auto it = node_.begin(); it != node_.end(); ++it) {
      const std::string k = it->first.as<std::string>();
      if (known_.count(k) == 0 && closest_match(k, {key}) == key) {
        fail_at(it->first.Mark(), k, "unknown key (did you mean '" + key + "'?)");
      }
    }
    fail_at(node_.Mark(), key, "missing required key");
  }
  return n;
}

bool YamlMap::has(const std::string& key) {
  known_.insert(key);
  return node_[key].IsDefined();
}

bool YamlMap::is_null(const std::string& key) {
  known_.insert(key);
  const YAML::Node n = node_[key];
  return n.IsDefined() && n.IsNull();
}

bool YamlMap::has_map(const std::string& key) {
  known_.insert(key);
  return node_[key].IsDefined() && node_[key].IsMap();
}

bool YamlMap::has_list(const std::string& key) {
  known_.insert(key);
  return node_[key].IsDefined() && node_[key].IsSequence();
}

std::string YamlMap::scalar_of(const YAML::Node& n, const std::string& key, const char* expected) const {
  if (!n.IsScalar()) fail_at(n.Mark(), key, std::string("wrong type: expected ") + expected);
  // Names and paths end up in messages, reports and job scripts: a newline
  // or another control character would split a line there.
  for (unsigned char ch : n.Scalar())
    if (ch < 0x20 || ch == 0x7f) fail_at(n.Mark(), key, "holds a control character (a newline?); expected one line of text");
  return n.Scalar();
}

// Numbers and booleans must be plain scalars: "1024" in quotes is a string.
static bool quoted(const YAML::Node& n) { return n.Tag() == "!"; }

std::string YamlMap::string(const std::string& key) { return scalar_of(required(key), key, "a string"); }

std::string YamlMap::path(const std::string& key) {
  const std::string given = string(key);
  try {
    return resolve_named_path(given, file());
  } catch (const InputError& e) {
    fail(key, e.what());
  }
}

std::optional<std::string> YamlMap::string_opt(const std::string& key) {
  YAML::Node n = value(key);
  if (!n.IsDefined()) return std::nullopt;
  return scalar_of(n, key, "a string");
}

static std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
  return s;
}

std::optional<std::string> YamlMap::choice_opt(const std::string& key, const std::vector<std::string>& choices) {
  YAML::Node n = value(key);
  if (!n.IsDefined()) return std::nullopt;
  const std::string s = scalar_of(n, key, "a string");
  if (std::find(choices.begin(), choices.end(), s) == choices.end()) {
    std::string msg = "unknown value \"" + s + "\"; expected one of: " + join(choices);
    const std::string near = closest_match(s, choices);
    if (!near.empty()) msg += " (did you mean \"" + near + "\"?)";
    fail_at(n.Mark(), key, msg);
  }
  return s;
}

std::string YamlMap::choice(const std::string& key, const std::vector<std::string>& choices) {
  required(key);
  return *choice_opt(key, choices);
}

enum class IntParse { ok, not_integer, out_of_range };

static IntParse parse_int(const std::string& s, std::int64_t* out) {
  if (s.empty()) return IntParse::not_integer;
  std::size_t i = (s[0] == '-' || s[0] == '+') ? 1 : 0;
  if (i == s.size()) return IntParse::not_integer;
  std::string digits = s.substr(0, i);
  for (std::size_t j = i; j < s.size(); ++j) {
    if (s[j] == '_') continue;
    if (!std::isdigit(static_cast<unsigned char>(s[j]))) return IntParse::not_integer;
    digits += s[j];
  }
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(digits.c_str(), &end, 10);
  if (errno == ERANGE) return IntParse::out_of_range;
  if (end == digits.c_str() || *end != '\0') return IntParse::not_integer;
  *out = v;
  return IntParse::ok;
}

// One integer scalar checked against [min_value, max_value]; `fail` throws
// the located error.
static std::int64_t checked_int(const std::string& s, bool is_quoted, std::int64_t min_value, std::int64_t max_value,
                                const std::function<void(const std::string&)>& fail) {
  std::int64_t v = 0;
  const IntParse r = is_quoted ? IntParse::not_integer : parse_int(s, &v);
  if (r == IntParse::not_integer) fail("wrong type: expected an integer, got \"" + s + "\"");
  const bool negative = !s.empty() && s[0] == '-';
  if ((r == IntParse::out_of_range && !negative) || v > max_value)
    fail("must be at most " + std::to_string(max_value) + ", got " + s);
  if (r == IntParse::out_of_range || v < min_value) fail("must be at least " + std::to_string(min_value) + ", got " + s);
  return v;
}

std::optional<std::int64_t> YamlMap::integer_opt(const std::string& key, std::int64_t min_value, std::int64_t max_value) {
  YAML::Node n = value(key);
  if (!n.IsDefined()) return std::nullopt;
  const std::string s = scalar_of(n, key, "an integer");
  return checked_int(s, quoted(n), min_value, max_value, [&](const std::string& what) { fail_at(n.Mark(), key, what); });
}

std::int64_t YamlMap::integer(const std::string& key, std::int64_t min_value, std::int64_t max_value) {
  required(key);
  return *integer_opt(key, min_value, max_value);
}

double YamlMap::list_number(const YAML::Node& e, const std::string& key) const {
  char* end = nullptr;
  const std::string s = e.IsScalar() ? e.Scalar() : "";
  const double v = std::strtod(s.c_str(), &end);
  if (!e.IsScalar() || end == s.c_str() || *end != '\0' || !std::isfinite(v)) fail_at(e.Mark(), key, "wrong type: expected a finite number");
  return v;
}

std::optional<double> YamlMap::number_opt(const std::string& key, Bound bound) {
  YAML::Node n = value(key);
  if (!n.IsDefined()) return std::nullopt;
  const std::string s = scalar_of(n, key, "a number");
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (quoted(n) || end == s.c_str() || *end != '\0') fail_at(n.Mark(), key, "wrong type: expected a number, got \"" + s + "\"");
  if (!std::isfinite(v)) fail_at(n.Mark(), key, "must be a finite number, got \"" + s + "\"");
  if (bound == Bound::positive && !(v > 0)) fail_at(n.Mark(), key, "must be greater than zero, got " + s);
  if (bound == Bound::non_negative && v < 0) fail_at(n.Mark(), key, "must not be negative, got " + s);
  return v;
}

double YamlMap::number(const std::string& key, Bound bound) {
  required(key);
  return *number_opt(key, bound);
}

std::optional<bool> YamlMap::boolean_opt(const std::string& key) {
  YAML::Node n = value(key);
  if (!n.IsDefined()) return std::nullopt;
  const std::string s = scalar_of(n, key, "true or false");
  if (!quoted(n) && s == "true") return true;
  if (!quoted(n) && s == "false") return false;
  fail_at(n.Mark(), key, "wrong type: expected true or false, got \"" + s + "\"");
}

std::optional<double> YamlMap::quantity_opt(const std::string& key, Quantity q, Bound bound) {
  YAML::Node n = value(key);
  if (!n.IsDefined()) return std::nullopt;
  const std::string s = scalar_of(n, key, quantity_name(q));
  double v = 0;
  try {
    v = parse_quantity(s, q);
  } catch (const UnitError& e) {
    fail_at(n.Mark(), key, e.what());
  }
  if (bound == Bound::positive && !(v > 0)) fail_at(n.Mark(), key, "must be greater than zero, got \"" + s + "\"");
  if (bound == Bound::non_negative && v < 0) fail_at(n.Mark(), key, "must not be negative, got \"" + s + "\"");
  return v;
}

double YamlMap::quantity(const std::string& key, Quantity q, Bound bound) {
  required(key);
  return *quantity_opt(key, q, bound);
}

std::vector<std::int64_t> YamlMap::integer_list(const std::string& key, std::int64_t min_value, std::size_t min_length,
                                                std::int64_t max_value) {
  YAML::Node n = required(key);
  if (!n.IsSequence()) fail_at(n.Mark(), key, "wrong type: expected a list of integers such as [2, 5, 1]");
  if (n.size() < min_length) {
    fail_at(n.Mark(), key, "expected at least " + std::to_string(min_length) + " entries, got " + std::to_string(n.size()));
  }
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < n.size(); ++i) {
    const YAML::Node e = n[i];
    const std::string k = key + "[" + std::to_string(i) + "]";
    if (!e.IsScalar()) fail_at(e.Mark(), k, "wrong type: expected an integer");
    out.push_back(checked_int(e.Scalar(), quoted(e), min_value, max_value,
                              [&](const std::string& what) { fail_at(e.Mark(), k, what); }));
  }
  return out;
}

std::vector<std::vector<std::int64_t>> YamlMap::integer_lists(const std::string& key, std::int64_t min_value,
                                                             std::size_t min_length, std::int64_t max_value) {
  YAML::Node n = required(key);
  if (!n.IsSequence() || n.size() == 0)
    fail_at(n.Mark(), key, "wrong type: expected a non-empty list of integer lists such as [[16, 32, 1]]");
  std::vector<std::vector<std::int64_t>> out;
  for (std::size_t i = 0; i < n.size(); ++i) {
    const YAML::Node l = n[i];
    const std::string k = key + "[" + std::to_string(i) + "]";
    if (!l.IsSequence()) fail_at(l.Mark(), k, "wrong type: expected a list of integers such as [16, 32, 1]");
    if (l.size() < min_length)
      fail_at(l.Mark(), k, "expected at least " + std::to_string(min_length) + " entries, got " + std::to_string(l.size()));
    std::vector<std::int64_t> row;
    for (std::size_t j = 0; j < l.size(); ++j) {
      const YAML::Node e = l[j];
      const std::string kj = k + "[" + std::to_string(j) + "]";
      if (!e.IsScalar()) fail_at(e.Mark(), kj, "wrong type: expected an integer");
      row.push_back(checked_int(e.Scalar(), quoted(e), min_value, max_value, [&](const std::string& what) { fail_at(e.Mark(), kj, what); }));
    }
    out.push_back(std::move(row));
  }
  return out;
}

std::vector<double> YamlMap::quantity_list(const std::string& key, Quantity q, Bound bound) {
  YAML::Node n = required(key);
  if (!n.IsSequence() || n.size() == 0)
    fail_at(n.Mark(), key, std::string("wrong type: expected a non-empty list, each ") + quantity_name(q) + " such as " + quantity_example(q));
  std::vector<double> out;
  for (std::size_t i = 0; i < n.size(); ++i) {
    const YAML::Node e = n[i];
    const std::string k = key + "[" + std::to_string(i) + "]";
    const std::string s = scalar_of(e, k, quantity_name(q));
    double v = 0;
    try {
      v = parse_quantity(s, q);
    } catch (const UnitError& err) {
      fail_at(e.Mark(), k, err.what());
    }
    if (bound == Bound::positive && !(v > 0)) fail_at(e.Mark(), k, "must be greater than zero, got \"" + s + "\"");
    if (bound == Bound::non_negative && v < 0) fail_at(e.Mark(), k, "must not be negative, got \"" + s + "\"");
    out.push_back(v);
  }
  return out;
}

std::vector<std::string> YamlMap::choice_list(const std::string& key, const std::vector<std::string>& choices) {
  YAML::Node n = required(key);
  if (!n.IsSequence() || n.size() == 0) fail_at(n.Mark(), key, "wrong type: expected a non-empty list of: " + join(choices));
  std::vector<std::string> out;
  for (std::size_t i = 0; i < n.size(); ++i) {
    const YAML::Node e = n[i];
    const std::string k = key + "[" + std::to_string(i) + "]";
    if (!e.IsScalar()) fail_at(e.Mark(), k, "wrong type: expected one of: " + join(choices));
    if (std::find(choices.begin(), choices.end(), e.Scalar()) == choices.end()) {
      std::string msg = "unknown value \"" + e.Scalar() + "\"; expected one of: " + join(choices);
      const std::string near = closest_match(e.Scalar(), choices);
      if (!near.empty()) msg += " (did you mean \"" + near + "\"?)";
      fail_at(e.Mark(), k, msg);
    }
    out.push_back(e.Scalar());
  }
  return out;
}

std::optional<std::vector<double>> YamlMap::number_list_opt(const std::string& key, Bound bound) {
  YAML::Node n = value(key);
  if (!n.IsDefined()) return std::nullopt;
  if (!n.IsSequence()) fail_at(n.Mark(), key, "wrong type: expected a list of numbers");
  std::vector<double> out;
  for (std::size_t i = 0; i < n.size(); ++i) {
    const YAML::Node e = n[i];
    const std::string k = key + "[" + std::to_string(i) + "]";
    const double v = list_number(e, k);
    const std::string s = e.Scalar();
    if (bound == Bound::positive && !(v > 0)) fail_at(e.Mark(), k, "must be greater than zero, got " + s);
    if (bound == Bound::non_negative && v < 0) fail_at(e.Mark(), k, "must not be negative, got " + s);
    out.push_back(v);
  }
  return out;
}

std::vector<std::string> YamlMap::string_list(const std::string& key) {
  YAML::Node n = required(key);
  if (!n.IsSequence() || n.size() == 0) fail_at(n.Mark(), key, "wrong type: expected a non-empty list of strings");
  std::vector<std::string> out;
  for (std::size_t i = 0; i < n.size(); ++i) {
    if (!n[i].IsScalar()) fail_at(n[i].Mark(), key + "[" + std::to_string(i) + "]", "wrong type: expected a string");
    out.push_back(n[i].Scalar());
  }
  return out;
}

std::optional<std::vector<std::vector<double>>> YamlMap::matrix_opt(const std::string& key, std::size_t size) {
  YAML::Node n = value(key);
  if (!n.IsDefined()) return std::nullopt;
  const std::string shape = std::to_string(size) + " x " + std::to_string(size);
  if (!n.IsSequence() || n.size() != size) fail_at(n.Mark(), key, "expected a " + shape + " matrix: a list of " + std::to_string(size) + " rows");
  std::vector<std::vector<double>> out;
  for (std::size_t i = 0; i < size; ++i) {
    const YAML::Node row = n[i];
    const std::string k = key + "[" + std::to_string(i) + "]";
    if (!row.IsSequence() || row.size() != size) fail_at(row.Mark(), k, "expected a row of " + std::to_string(size) + " numbers (a " + shape + " matrix)");
    std::vector<double> r;
    for (std::size_t j = 0; j < size; ++j) r.push_back(list_number(row[j], k + "[" + std::to_string(j) + "]"));
    out.push_back(std::move(r));
  }
  // a covariance: symmetric (within the rounding of the 6 significant digits a fit writes), no negative variance, and no
  // correlation beyond 1 (|c_ij| <= sqrt(c_ii c_jj)); else its draws are not draws of anything
  auto bad = [&](std::size_t i, std::size_t j, const std::string& what) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%g", out[i][j]);
    fail_at(n[i][j].Mark(), key + "[" + std::to_string(i) + "][" + std::to_string(j) + "]", std::string(buf) + ": " + what);
  };
  for (std::size_t i = 0; i < size; ++i) {
    if (out[i][i] < 0) bad(i, i, "a negative variance; expected a covariance matrix (its diagonal at least 0)");
    for (std::size_t j = 0; j < i; ++j) {
      if (std::fabs(out[i][j] - out[j][i]) > 1e-4 * std::max(std::fabs(out[i][j]), std::fabs(out[j][i])))
        bad(i, j, "differs from entry [" + std::to_string(j) + "][" + std::to_string(i) + "]; expected a symmetric covariance matrix");
      if (std::fabs(out[i][j]) > (1 + 1e-4) * std::sqrt(out[i][i] * out[j][j]))
        bad(i, j, "a correlation beyond 1 with the diagonal; expected a covariance matrix");
    }
  }
  return out;
}

std::vector<std::pair<double, double>> YamlMap::number_pairs(const std::string& key) {
  YAML::Node n = required(key);
  if (!n.IsSequence()) fail_at(n.Mark(), key, "wrong type: expected a list of [number, number] pairs");
  std::vector<std::pair<double, double>> out;
  for (std::size_t i = 0; i < n.size(); ++i) {
    const YAML::Node e = n[i];
    const std::string k = key + "[" + std::to_string(i) + "]";
    if (!e.IsSequence() || e.size() != 2) fail_at(e.Mark(), k, "expected a pair [number, number]");
    double v[2];
    for (int j = 0; j < 2; ++j) v[j] = list_number(e[j], k);
    out.emplace_back(v[0], v[1]);
  }
  return out;
}

std::optional<YamlMap> YamlMap::map_opt(const std::string& key) {
  YAML::Node n = value(key);
  if (!n.IsDefined()) return std::nullopt;
  if (!n.IsMap()) fail_at(n.Mark(), key, "wrong type: expected a mapping of keys to values");
  return YamlMap(file_, n, key_path(key));
}

std::optional<YamlMap> YamlMap::map_or_file_opt(const std::string& key, std::string* loaded) {
  YAML::Node n = value(key);
  if (!n.IsDefined()) return std::nullopt;
  if (n.IsMap()) return YamlMap(file_, n, key_path(key));
  const std::string p = path(key);
  if (loaded) *loaded = p;
  return load_file(p);
}

YamlMap YamlMap::map(const std::string& key) {
  required(key);
  return *map_opt(key);
}

std::vector<std::string> YamlMap::keys() const {
  std::vector<std::string> out;
  for (const auto& kv : node_) out.push_back(scalar_of(kv.first, "", "a key"));
  return out;
}

std::vector<YamlMap> YamlMap::map_list_opt(const std::string& key) {
  YAML::Node n = value(key);
  std::vector<YamlMap> out;
  if (!n.IsDefined()) return out;
  if (!n.IsSequence()) fail_at(n.Mark(), key, "wrong type: expected a list of mappings");
  for (std::size_t i = 0; i < n.size(); ++i) {
    if (!n[i].IsMap()) fail_at(n[i].Mark(), key + "[" + std::to_string(i) + "]", "wrong type: expected a mapping");
    out.push_back(YamlMap(file_, n[i], key_path(key) + "[" + std::to_string(i) + "]"));
  }
  return out;
}

void YamlMap::finish() {
  std::vector<std::string> known(known_.begin(), known_.end());
  std::set<std::string> seen;
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    const std::string k = it->first.as<std::string>();
    if (!seen.insert(k).second) fail_at(it->first.Mark(), k, "duplicate key (it is already set above)");
    if (known_.count(k)) continue;
    std::string msg = "unknown key";
    const std::string near = closest_match(k, known);
    if (!near.empty()) msg += " (did you mean '" + near + "'?)";
    else msg += "; known keys here: " + join(known);
    fail_at(it->first.Mark(), k, msg);
  }
}

}  // namespace ks
