#include "units.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace ks {
namespace {

struct Prefix {
  const char* text;
  double factor;
};
// Longest first so "Ki" wins over "k"-less matching.
constexpr Prefix kPrefixes[] = {
    {"Ki", 1024.0},         {"Mi", 1048576.0},        {"Gi", 1073741824.0},
    {"Ti", 1099511627776.0}, {"Pi", 1125899906842624.0}, {"k", 1e3},
    {"M", 1e6},             {"G", 1e9},               {"T", 1e12},
    {"P", 1e15},            {"", 1.0}};

struct Base {
  const char* text;
  double factor;  // to SI
};
constexpr Base kSizeBases[] = {{"B", 1.0}, {"b", 0.125}};
constexpr Base kRateBases[] = {{"B/s", 1.0}, {"Bps", 1.0}, {"b/s", 0.125}, {"bps", 0.125}};
constexpr Base kFlopBases[] = {{"FLOP/s", 1.0}};

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

template <std::size_t N>
bool match_prefixed(std::string_view unit, const Base (&bases)[N], double* factor) {
  for (const Prefix& p : kPrefixes) {
    if (!starts_with(unit, p.text)) continue;
    std::string_view rest = unit.substr(std::char_traits<char>::length(p.text));
    for (const Base& b : bases) {
      if (rest == b.text) {
        *factor = p.factor * b.factor;
        return true;
      }
    }
  }
  return false;
}

bool match_time(std::string_view unit, double* factor) {
  static constexpr Base kTime[] = {{"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3},
                                   {"s", 1.0},   {"min", 60.0}, {"h", 3600.0}};
  for (const Base& b : kTime) {
    if (unit == b.text) {
      *factor = b.factor;
      return true;
    }
  }
  return false;
}

std::string trim(std::string_view s) {
  std::size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return std::string(s.substr(a, b - a));
}

}  // namespace

const char* quantity_name(Quantity q) {
  switch (q) {
    case Quantity::size: return "a size";
    case Quantity::rate: return "a bandwidth";
    case Quantity::time: return "a time";
    case Quantity::flop_rate: return "a FLOP rate";
  }
  return "?";
}

const char* quantity_example(Quantity q) {
  switch (q) {
    case Quantity::size: return "\"25MiB\" or \"1.5GB\"";
    case Quantity::rate: return "\"12.5GB/s\" or \"100Gbps\"";
    case Quantity::time: return "\"5us\" or \"1.5ms\"";
    case Quantity::flop_rate: return "\"19.5TFLOP/s\"";
  }
  return "?";
}

double parse_quantity(std::string_view text, Quantity q) {
  const std::string s = trim(text);
  if (s.empty()) throw UnitError(std::string("empty value, expected ") + quantity_name(q) + " such as " + quantity_example(q));
  const char* begin = s.c_str();
  char* end = nullptr;
  const double value = std::strtod(begin, &end);
  if (end == begin) {
    throw UnitError("\"" + s + "\" does not start with a number; expected " + quantity_name(q) + " such as " +
                    quantity_example(q));
  }
  if (std::isnan(value) || std::isinf(value)) {
    throw UnitError("\"" + s + "\" is not a finite number; expected " + quantity_name(q) + " such as " + quantity_example(q));
  }
  // strtod accepts hex and "inf"/"nan" spellings; reject hex to keep configs plain.
  if (s.find_first_of("xX") != std::string::npos && s.find_first_of("xX") < static_cast<std::size_t>(end - begin)) {
    throw UnitError("\"" + s + "\": hexadecimal numbers are not accepted");
  }
  const std::string unit = trim(std::string_view(end));
  if (unit.empty()) {
    throw UnitError("missing unit in \"" + s + "\"; expected " + quantity_name(q) + " such as " + quantity_example(q));
  }
  double factor = 0.0;
  bool ok = false;
  switch (q) {
    case Quantity::size: ok = match_prefixed(unit, kSizeBases, &factor); break;
    case Quantity::rate: ok = match_prefixed(unit, kRateBases, &factor); break;
    case Quantity::time: ok = match_time(unit, &factor); break;
    case Quantity::flop_rate: ok = match_prefixed(unit, kFlopBases, &factor); break;
  }
  if (!ok) {
    std::string hint;
    switch (q) {
      case Quantity::size: hint = "B (bytes) or b (bits) with an optional prefix k M G T P Ki Mi Gi Ti Pi"; break;
      case Quantity::rate: hint = "B/s, Bps, b/s or bps with an optional prefix k M G T P Ki Mi Gi Ti Pi"; break;
      case Quantity::time: hint = "ns, us, ms, s, min or h"; break;
      case Quantity::flop_rate: hint = "FLOP/s with an optional prefix k M G T P"; break;
    }
    throw UnitError("unknown unit \"" + unit + "\" in \"" + s + "\" for " + quantity_name(q) +
                    " (units are case-sensitive; expected " + hint + ")");
  }
  const double si = value * factor;
  // "1e306h" is a finite number but not a finite time once in seconds.
  if (!std::isfinite(si)) {
    throw UnitError("\"" + s + "\" is too large: it does not fit in a number once in " +
                    (q == Quantity::time ? std::string("seconds") : q == Quantity::size ? std::string("bytes") : std::string("SI units")));
  }
  // a size is a count of bytes: at most 2^60 (an exbibyte; every size kanscale meets is far below, and
  // 64-bit integers hold it), and never a fraction of one byte
  if (q == Quantity::size && std::fabs(si) > 1152921504606846976.0)
    throw UnitError("\"" + s + "\" is too large; expected a size of at most 1 EiB (2^60 B)");
  if (q == Quantity::size && si != 0 && std::fabs(si) < 1)
    throw UnitError("\"" + s + "\" is less than one byte; expected a size of at least 1B");
  return si;
}

std::string format_bytes(double bytes) {
  static constexpr const char* kNames[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int i = 0;
  double v = bytes;
  while (std::fabs(v) >= 1024.0 && i < 5) {
    v /= 1024.0;
    ++i;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, i == 0 ? "%.0f %s" : "%.2f %s", v, kNames[i]);
  return buf;
}

std::string format_rate(double Bps) {
  char buf[64];
  if (Bps >= 1e9) std::snprintf(buf, sizeof buf, "%.2f GB/s", Bps / 1e9);
  else if (Bps >= 1e6) std::snprintf(buf, sizeof buf, "%.2f MB/s", Bps / 1e6);
  else std::snprintf(buf, sizeof buf, "%.2f kB/s", Bps / 1e3);
  return buf;
}

std::string format_time(double s) {
  char buf[64];
  const double a = std::fabs(s);
  if (!std::isfinite(s)) std::snprintf(buf, sizeof buf, "%s", std::isnan(s) ? "nan" : s > 0 ? "inf" : "-inf");
  else if (a >= 3600.0e6) std::snprintf(buf, sizeof buf, "%.3g h", s / 3600.0);  // the digits of 1e300 h would overflow the line
  else if (a >= 3600.0) std::snprintf(buf, sizeof buf, "%.2f h", s / 3600.0);
  else if (a >= 60.0) std::snprintf(buf, sizeof buf, "%.2f min", s / 60.0);
  else if (a >= 1.0) std::snprintf(buf, sizeof buf, "%.3f s", s);
  else if (a >= 1e-3) std::snprintf(buf, sizeof buf, "%.3f ms", s * 1e3);
  else std::snprintf(buf, sizeof buf, "%.2f us", s * 1e6);
  return buf;
}

std::vector<double> parse_size_list(std::string_view text, double min_bytes, double max_bytes) {
  std::vector<double> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::string item(text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (item.empty()) throw UnitError("an empty item in \"" + std::string(text) + "\"");
    double b = 0;
    try {
      b = parse_size_bytes(item);
    } catch (const UnitError& e) {
      throw UnitError("\"" + item + "\": " + e.what());
    }
    if (!(b >= min_bytes && b <= max_bytes))
      throw UnitError("\"" + item + "\": expected a size from " + format_bytes(min_bytes) + " to " + format_bytes(max_bytes));
    out.push_back(b);
    if (comma == std::string_view::npos) return out;
    start = comma + 1;
  }
}

}  // namespace ks
