#pragma once
// Physical quantities written with units, parsed once at the edge.
//
// Units are case-sensitive. Prefixes: k M G T P (decimal, 1e3..1e15) and
// Ki Mi Gi Ti Pi (binary, 2^10..2^50). Base units:
//   size       B (bytes), b (bits)                      "25MiB", "1.5GB", "800Mb"
//   rate       B/s, Bps (bytes/s), b/s, bps (bits/s)    "12.5GB/s", "100Gbps"
//   time       ns, us, ms, s, min, h                    "5us", "1.5ms"
//   FLOP rate  FLOP/s                                   "19.5TFLOP/s"
// Inside kanscale everything is SI: bytes, bytes/s, seconds, FLOP/s.
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ks {

enum class Quantity { size, rate, time, flop_rate };

// Thrown with a message that says what was wrong and what was expected;
// the config layer prefixes file, line and key.
struct UnitError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Parses "<number><unit>" (whitespace between allowed) into SI units.
// Rejects: no unit, an unknown unit, NaN or infinite numbers.
double parse_quantity(std::string_view text, Quantity q);

inline double parse_size_bytes(std::string_view t) { return parse_quantity(t, Quantity::size); }
inline double parse_rate_Bps(std::string_view t) { return parse_quantity(t, Quantity::rate); }
inline double parse_time_s(std::string_view t) { return parse_quantity(t, Quantity::time); }
inline double parse_flop_rate(std::string_view t) { return parse_quantity(t, Quantity::flop_rate); }

// "64KiB,1MiB" -> sizes in bytes, each from min_bytes to max_bytes; an
// empty item, a bad size or one out of range throws UnitError naming it.
std::vector<double> parse_size_list(std::string_view text, double min_bytes, double max_bytes);

const char* quantity_name(Quantity q);
const char* quantity_example(Quantity q);

// Human-readable forms for tables: "25.0 MiB", "12.5 GB/s", "3.21 ms".
std::string format_bytes(double bytes);
std::string format_rate(double Bps);
std::string format_time(double seconds);

}  // namespace ks
