#pragma once
// Every key a study's sweep, a study's unknowns or `whatif change --set` can
// change, in one table: how its value is parsed, its range, how it changes a
// case, and when it moves nothing in the model in use. The three front doors
// (read_study's sweep axes, its unknowns, whatif's --set) look keys up here
// and keep no private copy of any of it.
#include <cstdint>
#include <string>
#include <vector>

#include "model/config.hpp"
#include "sim/point.hpp"

namespace ks {

// One case of the model, as a setting sees it: a study's scenario, or a
// what-if's case before or after a change.
struct CaseRef {
  Cluster& cluster;
  Calibration& cal;
  Workload& workload;
  StudyOptions& options;  // scaling, gpus_per_node
  int* gpus = nullptr;    // a what-if's GPU count; null in a study (it sweeps GPU counts itself)
};

enum class SettingKind { whole, size, time, factor, choice, widths };
enum SettingUse : unsigned { kSweep = 1u, kUnknown = 2u, kSet = 4u };

struct SettingValue {
  double number = 0;                 // whole, size, time, factor; a choice's index
  std::vector<std::int64_t> widths;  // widths
  std::string text;                  // as the user wrote it
};

struct Setting {
  const char* key;
  SettingKind kind;
  unsigned uses;  // SettingUse bits: where the key may appear
  double lo, hi;  // the range of a whole number, size, time or factor
  std::vector<std::string> choices;
  // --set's "2x": a factor on the case's current value (null: not allowed)
  double (*current)(const CaseRef&);
  void (*apply)(CaseRef&, const SettingValue&);
  // Why the value cannot move the model in use on this case at `layout` (the
  // level it acts on is not used, NCCL's choice on an MPI cluster); "" when
  // it may move something.
  std::string (*idle)(const CaseRef&, const SettingValue&, const Layout&);
  // Why a change to this value left a what-if's prediction as it was, from
  // the case before it ("" when the key has nothing particular to say).
  std::string (*why_same)(const CaseRef& before, const SettingValue&);
};

// Every setting, in the order sweep axes and unknowns are expanded (the
// scenarios' order and labels follow it).
const std::vector<Setting>& settings();
// The setting a key names (with --set's aliases such as network.latency), or
// null; `use` restricts it to the keys allowed there.
const Setting* find_setting(const std::string& key, unsigned use);
// The keys allowed at `use`, comma-separated, for error messages.
std::string setting_keys(unsigned use);

// Parses `text` as a value of `s`; throws InputError with the message alone
// (the front door adds where it came from). `base`, when given, resolves a
// factor such as "2x" against the case's current value; a factor setting
// takes "2x" or a plain number, unless `factor_needs_x`.
SettingValue parse_setting(const Setting& s, const std::string& text, const CaseRef* base = nullptr, bool factor_needs_x = false);
// How tables and labels show a value: "64-256-1", "1.00 MiB", "2x", "true".
std::string setting_label(const Setting& s, const SettingValue& v);

// The value that changes nothing: a factor of 1, "all" NCCL algorithms or
// protocols (no restriction).
bool setting_is_neutral(const Setting& s, const SettingValue& v);

// KAN widths as a label: "64-256-256-1".
std::string widths_text(const std::vector<std::int64_t>& widths);

// A network what-if: `factor` times the intra- or inter-node bandwidth or
// latency (`what`: intra_bandwidth, inter_bandwidth, intra_latency,
// inter_latency), on the values the collective model in use reads: for
// NCCL the bus bandwidths and NCCL's per-hop latencies (hw_latency_us of
// the NVLink/PCI or network level), for MPI the link values and, within a
// node, the fitted regimes (measured there).
void apply_network_factor(Cluster& c, Calibration& cal, const std::string& what, double factor);

// Whether `factor` on `what` changes any all-reduce or the broadcast the
// collective model prices on `layout` (sizes from 4 KiB to 256 MiB).
bool network_factor_moves(const Cluster& c, const Calibration& cal, const Layout& layout, const std::string& what, double factor);
// "2x", "0.5x" or a plain number: a positive finite factor up to 1e6; -1
// for anything else.
double parse_factor(const std::string& text);

}  // namespace ks
