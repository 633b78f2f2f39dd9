#include "settings.hpp"

#include <cmath>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

#include "common/error.hpp"
#include "model/collectives.hpp"
#include "model/limits.hpp"
#include "model/units.hpp"
#include "sim/report.hpp"

namespace ks {

std::string widths_text(const std::vector<std::int64_t>& w) {
  std::string s;
  for (auto v : w) s += (s.empty() ? "" : "-") + std::to_string(v);
  return s;
}

void apply_network_factor(Cluster& c, Calibration& cal, const std::string& what, double f) {
  auto scale_hw = [&](int level) {
    for (auto& algo : cal.nccl.hw_latency_us[level])
      for (double& v : algo) v *= f;
  };
  if (what == "intra_bandwidth") {
    c.intra.bandwidth_Bps *= f;
    if (cal.nccl_bus_bw_intra_Bps) *cal.nccl_bus_bw_intra_Bps *= f;
    for (auto& r : cal.mpi_regimes)
      if (r.bandwidth_Bps) *r.bandwidth_Bps *= f;
    if (cal.mpi_broadcast && cal.mpi_broadcast->bandwidth_Bps) *cal.mpi_broadcast->bandwidth_Bps *= f;
  } else if (what == "inter_bandwidth") {
    c.net.nic_bandwidth_Bps *= f;
    if (cal.nccl_bus_bw_inter_Bps) *cal.nccl_bus_bw_inter_Bps *= f;
  } else if (what == "intra_latency") {
    c.intra.latency_s *= f;
    scale_hw(0);  // NVLink
    scale_hw(1);  // PCI
    for (auto& r : cal.mpi_regimes)
      if (r.latency_s) *r.latency_s *= f;
    if (cal.mpi_broadcast) cal.mpi_broadcast->latency_s *= f;
  } else if (what == "inter_latency") {
    c.net.latency_s *= f;
    scale_hw(2);  // network
  } else {
    throw std::invalid_argument("apply_network_factor: unknown network value " + what);
  }
}

bool network_factor_moves(const Cluster& c, const Calibration& cal, const Layout& layout, const std::string& what, double factor) {
  Cluster c2 = c;
  Calibration cal2 = cal;
  apply_network_factor(c2, cal2, what, factor);
  const auto a = make_collective_model(c, cal), b = make_collective_model(c2, cal2);
  for (double bytes = 4096; bytes <= 268435456; bytes *= 4)
    if (a->allreduce(bytes, layout).time_s != b->allreduce(bytes, layout).time_s ||
        a->broadcast(bytes, layout).time_s != b->broadcast(bytes, layout).time_s)
      return true;
  return false;
}

// "2x", "0.5x" or a plain number: a positive finite factor, 1e-6 to 1e6
// (a millionth of a cost already turns a microsecond into a picosecond).
double parse_factor(const std::string& text) {
  std::string t = text;
  if (!t.empty() && (t.back() == 'x' || t.back() == 'X')) t.pop_back();
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (t.empty() || end != t.c_str() + t.size() || !std::isfinite(v) || v < 1e-6 || v > 1e6) return -1;
  return v;
}

namespace {

// ---------------------------------------------------------------- the network keys
std::string gbps(double Bps) { return printf_number("%.3g GB/s", Bps / 1e9); }

// Why a factor on a network value moves nothing: the level it scales is not
// used, or another term holds the cost (the link that bounds NCCL's bus
// bandwidth; the calibration's fitted MPI regime). whatif change answers
// with this; a study refuses such a sweep value with it.
std::string network_idle(const CaseRef& c, const SettingValue& v, const Layout& l, const char* what) {
  if (network_factor_moves(c.cluster, c.cal, l, what, v.number)) return "";
  const std::string w = what;
  const bool inter = w.rfind("inter", 0) == 0, bandwidth = w.find("bandwidth") != std::string::npos;
  const Cluster& cl = c.cluster;
  const bool nccl = cl.collectives.family == CollFamily::nccl;
  const std::string intra_link = std::string("the intra-node link (") + to_string(cl.intra.kind) + ") at " + gbps(cl.intra.bandwidth_Bps);
  const std::string nics = "the node's NICs at " + std::to_string(cl.net.nics_per_node) + " x " + gbps(cl.net.nic_bandwidth_Bps);
  if (inter && l.nodes == 1)
    return std::string(nccl ? "NCCL" : "MPI") + " stays within one node at " + std::to_string(l.ranks) +
           " rank(s): the inter-node network carries nothing; " + (nccl ? "bounded by " + intra_link : "the intra-node costs hold it");
  if (nccl) {
    if (bandwidth && l.nodes > 1 && !c.cal.nccl_bus_bw_inter_Bps) {
      const bool link_bounds = cl.intra.bandwidth_Bps <= cl.net.nics_per_node * cl.net.nic_bandwidth_Bps;
      return "bounded by " + (link_bounds ? intra_link : nics) + ", the slower of it and " + (link_bounds ? nics : intra_link) +
             " (NCCL's bus bandwidth across nodes)";
    }
    return "NCCL's chosen algorithms and protocols at these sizes take their " + std::string(bandwidth ? "bandwidth" : "latency") +
           " from another level";
  }
  if (!c.cal.mpi_regimes.empty()) {
    const double bytes = c.workload.ddp.bucket_cap_bytes;
    const MpiRegime* r = &mpi_regime_for(c.cal.mpi_regimes, bytes);
    std::string t = "bounded by the calibration's fitted MPI regime for a bucket of " + format_bytes(bytes) + " (" + to_string(r->algorithm);
    if (r->latency_s) t += ", " + format_time(*r->latency_s) + " per step";
    if (r->bandwidth_Bps) t += ", " + gbps(*r->bandwidth_Bps);
    return t + ", measured over " + c.cal.name + "'s transport); the cluster's " + (inter ? "inter-node" : "intra-node") +
           " value is not in it";
  }
  return "the MPI model's terms at these sizes do not use it";
}

void network_apply(CaseRef& c, const SettingValue& v, const char* what) {
  if (v.number != 1) apply_network_factor(c.cluster, c.cal, what, v.number);
}

std::string nccl_idle(const CaseRef& c, const char* key) {
  if (c.cluster.collectives.family == CollFamily::nccl) return "";
  return "cluster " + c.cluster.file + " uses MPI collectives, and " + key + " restricts NCCL's choice only";
}

std::string same_flag(bool current, const SettingValue& v, const char* key) {
  return (v.number != 0) == current ? std::string("the workload already has ") + key + " " + v.text : "";
}

// nccl_at_<2^C>nodes: a factor on the time of the collectives NCCL runs
// on a layout of node class C (CollectiveLibrary::node_factor)
template <int C>
void node_factor_apply(CaseRef& c, const SettingValue& v) {
  auto& f = c.cluster.collectives.node_factor;
  if (f.size() <= static_cast<std::size_t>(C)) f.resize(static_cast<std::size_t>(C) + 1, 1.0);
  f[static_cast<std::size_t>(C)] *= v.number;
}
template <int C>
std::string node_factor_idle(const CaseRef& c, const SettingValue&, const Layout& l) {
  if (c.cluster.collectives.family != CollFamily::nccl)
    return "cluster " + c.cluster.file + " uses " + (c.cluster.collectives.family == CollFamily::mpi ? "MPI" : "gloo") +
           " collectives; this factor scales NCCL's collectives only";
  if (node_class(l.nodes) == C) return "";
  const int lo = C == 0 ? 1 : (1 << (C - 1)) + 1, hi = 1 << C;
  return "the layout has " + std::to_string(l.nodes) + " node(s); this factor acts on layouts of " + std::to_string(lo) +
         (lo == hi ? "" : "-" + std::to_string(hi)) + " node(s) only";
}
template <int C>
void add_node_factor(std::vector<Setting>& t, const char* key) {
  t.push_back({key, SettingKind::factor, kUnknown | kSet, 1e-6, 1e6, {}, nullptr, node_factor_apply<C>, node_factor_idle<C>, nullptr});
}

void add_node_factors(std::vector<Setting>& t) {
  add_node_factor<0>(t, "nccl_at_1node");
  add_node_factor<1>(t, "nccl_at_2nodes");
  add_node_factor<2>(t, "nccl_at_4nodes");
  add_node_factor<3>(t, "nccl_at_8nodes");
  add_node_factor<4>(t, "nccl_at_16nodes");
  add_node_factor<5>(t, "nccl_at_32nodes");
  add_node_factor<6>(t, "nccl_at_64nodes");
  add_node_factor<7>(t, "nccl_at_128nodes");
  add_node_factor<8>(t, "nccl_at_256nodes");
  add_node_factor<9>(t, "nccl_at_512nodes");
  add_node_factor<10>(t, "nccl_at_1024nodes");
}

const std::vector<std::string> kFlag = {"false", "true"};
constexpr double kSizeMax = 1152921504606846976.0;  // 2^60 B, as units.cpp reads sizes
constexpr double kTimeMax = 1e9;                    // s

std::vector<Setting> make_settings() {
  using K = SettingKind;
  std::vector<Setting> t;
  t.push_back({"widths", K::widths, kSweep | kSet, 0, 0, {}, nullptr,
               [](CaseRef& c, const SettingValue& v) { c.workload.widths = v.widths; }, nullptr, nullptr});
  t.push_back({"grid_size", K::whole, kSweep | kUnknown | kSet, 1, static_cast<double>(kMaxGridSize), {},
               [](const CaseRef& c) { return static_cast<double>(c.workload.grid_size); },
               [](CaseRef& c, const SettingValue& v) { c.workload.grid_size = static_cast<int>(v.number); }, nullptr, nullptr});
  // every hidden layer's width (a KAN's size when its widths are unknown)
  t.push_back({"hidden_width", K::whole, kUnknown | kSet, 1, 2147483647.0, {},
               [](const CaseRef& c) { return c.workload.widths.size() > 2 ? static_cast<double>(c.workload.widths[1]) : 0.0; },
               [](CaseRef& c, const SettingValue& v) {
                 for (std::size_t i = 1; i + 1 < c.workload.widths.size(); ++i) c.workload.widths[i] = static_cast<std::int64_t>(v.number);
               },
               [](const CaseRef& c, const SettingValue&, const Layout&) {
                 return c.workload.widths.size() > 2 ? std::string() : "the workload's KAN has no hidden layer";
               },
               nullptr});
  t.push_back({"batch_per_gpu", K::whole, kSweep | kUnknown | kSet, 1, static_cast<double>(kMaxBatch), {},
               [](const CaseRef& c) { return static_cast<double>(c.workload.batch_per_gpu); },
               [](CaseRef& c, const SettingValue& v) { c.workload.batch_per_gpu = static_cast<std::int64_t>(v.number); }, nullptr, nullptr});
  t.push_back({"global_batch", K::whole, kUnknown, 1, static_cast<double>(kMaxBatch), {},
               [](const CaseRef& c) { return static_cast<double>(c.workload.global_batch.value_or(c.workload.batch_per_gpu)); },
               [](CaseRef& c, const SettingValue& v) { c.workload.global_batch = static_cast<std::int64_t>(v.number); }, nullptr, nullptr});
  // the batch was per GPU (strong) or global (strong-global-batch); weak
  // scaling keeps its per-GPU batch either way
  t.push_back({"batch_mode", K::choice, kUnknown, 0, 0, {"per_gpu", "global"}, nullptr,
               [](CaseRef& c, const SettingValue& v) {
                 if (c.options.scaling != Scaling::weak) c.options.scaling = v.number == 1 ? Scaling::strong_global_batch : Scaling::strong;
               },
               nullptr, nullptr});
  // (whatif explains an unchanged bucket plan itself: it needs the predictions)
  t.push_back({"bucket_cap", K::size, kSweep | kSet, 1, kSizeMax, {}, [](const CaseRef& c) { return c.workload.ddp.bucket_cap_bytes; },
               [](CaseRef& c, const SettingValue& v) {
                 c.workload.ddp.bucket_cap_bytes = v.number;
                 c.workload.ddp.bucket_cap_given = true;  // (as bucket_cap_mb passed: torch 2's first bucket too)
               },
               nullptr, nullptr});
  t.push_back({"gradient_as_bucket_view", K::choice, kSweep | kSet, 0, 0, kFlag, nullptr,
               [](CaseRef& c, const SettingValue& v) { c.workload.ddp.gradient_as_bucket_view = v.number != 0; }, nullptr,
               [](const CaseRef& b, const SettingValue& v) { return same_flag(b.workload.ddp.gradient_as_bucket_view, v, "gradient_as_bucket_view"); }});
  t.push_back({"gpus_per_node", K::whole, kSweep | kSet, 1, static_cast<double>(kMaxGpusPerNode), {}, nullptr,
               [](CaseRef& c, const SettingValue& v) { c.options.gpus_per_node = static_cast<int>(v.number); }, nullptr, nullptr});
  // NCCL_ALGO / NCCL_PROTO restrictions ("all": the cluster's own list)
  t.push_back({"nccl_algo", K::choice, kSweep | kUnknown | kSet, 0, 0, {"all", "ring", "tree"}, nullptr,
               [](CaseRef& c, const SettingValue& v) {
                 if (v.number != 0) c.cluster.collectives.algorithms = {v.number == 1 ? Algo::ring : Algo::tree};
               },
               [](const CaseRef& c, const SettingValue&, const Layout&) { return nccl_idle(c, "nccl_algo"); }, nullptr});
  t.push_back({"nccl_proto", K::choice, kSweep | kSet, 0, 0, {"all", "LL", "LL128", "Simple"}, nullptr,
               [](CaseRef& c, const SettingValue& v) {
                 static const Proto kProtos[] = {Proto::ll, Proto::ll128, Proto::simple};
                 if (v.number != 0) c.cluster.collectives.protocols = {kProtos[static_cast<int>(v.number) - 1]};
               },
               [](const CaseRef& c, const SettingValue&, const Layout&) { return nccl_idle(c, "nccl_proto"); }, nullptr});
  t.push_back({"network.intra_bandwidth", K::factor, kSweep | kUnknown | kSet, 1e-6, 1e6, {}, nullptr,
               [](CaseRef& c, const SettingValue& v) { network_apply(c, v, "intra_bandwidth"); },
               [](const CaseRef& c, const SettingValue& v, const Layout& l) { return network_idle(c, v, l, "intra_bandwidth"); }, nullptr});
  t.push_back({"network.inter_bandwidth", K::factor, kSweep | kUnknown | kSet, 1e-6, 1e6, {}, nullptr,
               [](CaseRef& c, const SettingValue& v) { network_apply(c, v, "inter_bandwidth"); },
               [](const CaseRef& c, const SettingValue& v, const Layout& l) { return network_idle(c, v, l, "inter_bandwidth"); }, nullptr});
  t.push_back({"network.intra_latency", K::factor, kSweep | kUnknown | kSet, 1e-6, 1e6, {}, nullptr,
               [](CaseRef& c, const SettingValue& v) { network_apply(c, v, "intra_latency"); },
               [](const CaseRef& c, const SettingValue& v, const Layout& l) { return network_idle(c, v, l, "intra_latency"); }, nullptr});
  t.push_back({"network.inter_latency", K::factor, kSweep | kUnknown | kSet, 1e-6, 1e6, {}, nullptr,
               [](CaseRef& c, const SettingValue& v) { network_apply(c, v, "inter_latency"); },
               [](const CaseRef& c, const SettingValue& v, const Layout& l) { return network_idle(c, v, l, "inter_latency"); }, nullptr});
  t.push_back({"compute_time", K::factor, kUnknown | kSet, 1e-6, 1e6, {}, nullptr,
               [](CaseRef& c, const SettingValue& v) { c.cal.compute_scale *= v.number; }, nullptr, nullptr});
  // the host time per iteration beyond the ops (the calibration's host_overhead)
  t.push_back({"host_overhead", K::time, kUnknown | kSet, 0, kTimeMax, {}, [](const CaseRef& c) { return c.cal.host_overhead_s; },
               [](CaseRef& c, const SettingValue& v) { c.cal.host_overhead_s = v.number; }, nullptr,
               [](const CaseRef& b, const SettingValue& v) {
                 const bool factor = !v.text.empty() && (v.text.back() == 'x' || v.text.back() == 'X');
                 return factor && b.cal.host_overhead_s == 0
                            ? std::string("the calibration's host overhead is 0 s, and a factor leaves it at 0; give a time, e.g. host_overhead=50us")
                            : std::string();
               }});
  // the GPU's launch cost per kernel (the cluster's kernel_launch), paid on
  // the host track by a PyTorch workload; a datasheet calibration's fixed
  // cost per op, which was derived from it, follows
  t.push_back({"kernel_launch", K::time, kUnknown | kSet, 0, kTimeMax, {}, [](const CaseRef& c) { return c.cluster.gpu.kernel_launch_s; },
               [](CaseRef& c, const SettingValue& v) {
                 c.cluster.gpu.kernel_launch_s = v.number;
                 if (c.cal.source == "datasheet") c.cal.gemm.fixed_s = c.cal.elementwise.fixed_s = v.number;
               },
               nullptr, nullptr});
  // the host's cost of each PyTorch dispatch (every op, view and autograd
  // node) where no PyTorch calibration measured it: the dispatch prior's
  // per-dispatch time
  t.push_back({"host_dispatch", K::time, kUnknown | kSet, 0, kTimeMax, {},
               [](const CaseRef& c) { return c.cal.default_host_terms ? c.cal.default_host_terms->per_dispatch_s : 0.0; },
               [](CaseRef& c, const SettingValue& v) {
                 if (c.cal.default_host_terms && c.cal.default_host_terms->per_dispatch_s > 0) c.cal.default_host_terms->per_dispatch_s = v.number;
               },
               [](const CaseRef& c, const SettingValue&, const Layout&) {
                 return c.cal.default_host_terms && c.cal.default_host_terms->per_dispatch_s > 0
                            ? std::string()
                            : "calibration '" + c.cal.name + "' prices PyTorch's host work with op classes of its own (or the workload has no host track), not the dispatch prior";
               },
               nullptr});
  // what NCCL's chosen algorithm and protocol achieve of its own model, per
  // node count (docs/models.md, "NCCL per node count"): 1 node, 2, 3-4, 5-8...
  add_node_factors(t);
  t.push_back({"epoch_overhead", K::time, kUnknown, 0, kTimeMax, {}, [](const CaseRef& c) { return c.workload.epoch_overhead_s; },
               [](CaseRef& c, const SettingValue& v) { c.workload.epoch_overhead_s = v.number; }, nullptr, nullptr});
  t.push_back({"scaling", K::choice, kSweep, 0, 0, {"strong", "strong-global-batch", "weak"}, nullptr,
               [](CaseRef& c, const SettingValue& v) {
                 c.options.scaling = v.number == 0 ? Scaling::strong : v.number == 1 ? Scaling::strong_global_batch : Scaling::weak;
               },
               nullptr, nullptr});
  t.push_back({"gpus", K::whole, kSet, 1, static_cast<double>(kMaxGpus), {}, [](const CaseRef& c) { return static_cast<double>(*c.gpus); },
               [](CaseRef& c, const SettingValue& v) { *c.gpus = static_cast<int>(v.number); }, nullptr, nullptr});
  t.push_back({"gpu.memory", K::size, kSet, 1, kSizeMax, {}, [](const CaseRef& c) { return c.cluster.gpu.memory_bytes; },
               [](CaseRef& c, const SettingValue& v) { c.cluster.gpu.memory_bytes = v.number; }, nullptr, nullptr});
  t.push_back({"broadcast_buffers", K::choice, kSet, 0, 0, kFlag, nullptr,
               [](CaseRef& c, const SettingValue& v) { c.workload.ddp.broadcast_buffers = v.number != 0; }, nullptr,
               [](const CaseRef& b, const SettingValue& v) { return same_flag(b.workload.ddp.broadcast_buffers, v, "broadcast_buffers"); }});
  return t;
}

// --set's names for the network keys (the cluster file's words)
const std::vector<std::pair<std::string, std::string>> kAliases = {{"network.latency", "network.inter_latency"},
                                                                   {"network.nic_bandwidth", "network.inter_bandwidth"},
                                                                   {"intra_node.latency", "network.intra_latency"},
                                                                   {"intra_node.bandwidth", "network.intra_bandwidth"}};

double parse_number(const std::string& t) {
  char* end = nullptr;
  const double x = std::strtod(t.c_str(), &end);
  if (t.empty() || end != t.c_str() + t.size() || !std::isfinite(x)) throw InputError("expected a number or a factor such as 2x");
  return x;
}

std::string choices_text(const std::vector<std::string>& c) {
  std::string s;
  for (std::size_t i = 0; i < c.size(); ++i) s += (i == 0 ? "" : i + 1 == c.size() ? " or " : ", ") + c[i];
  return s;
}

std::vector<std::int64_t> parse_widths(const std::string& v) {
  // 64-512-512-1 (or with commas, in brackets): whole numbers in decimal digits, one separator between each
  std::vector<std::int64_t> ws;
  std::string t = v;
  if (t.size() >= 2 && t.front() == '[' && t.back() == ']') t = t.substr(1, t.size() - 2);
  std::size_t from = 0;
  for (;;) {
    const std::size_t sep = t.find_first_of("-,", from);
    const std::string item = t.substr(from, sep == std::string::npos ? std::string::npos : sep - from);
    if (item.empty() || item.size() > 10 || item.find_first_not_of("0123456789") != std::string::npos)
      throw InputError("\"" + item + "\" is not a width; expected whole numbers such as 64-512-512-1");
    const double w = parse_number(item);
    if (!(w >= 1 && w <= 2147483647)) throw InputError("\"" + item + "\" is not a width; expected a whole number from 1 to 2147483647");
    ws.push_back(static_cast<std::int64_t>(w));
    if (sep == std::string::npos) break;
    from = sep + 1;
  }
  if (ws.size() < 2) throw InputError("expected at least two widths, e.g. 64-512-512-1");
  return ws;
}

}  // namespace

const std::vector<Setting>& settings() {
  static const std::vector<Setting> table = make_settings();
  return table;
}

const Setting* find_setting(const std::string& key, unsigned use) {
  std::string k = key;
  if (use & kSet)
    for (const auto& [alias, name] : kAliases)
      if (key == alias) k = name;
  for (const auto& s : settings())
    if (k == s.key && (s.uses & use)) return &s;
  return nullptr;
}

std::string setting_keys(unsigned use) {
  std::string s;
  for (const auto& x : settings())
    if (x.uses & use) s += (s.empty() ? "" : ", ") + std::string(x.key);
  return s;
}

SettingValue parse_setting(const Setting& s, const std::string& text, const CaseRef* base, bool factor_needs_x) {
  SettingValue v;
  v.text = text;
  const bool times = !text.empty() && (text.back() == 'x' || text.back() == 'X');
  if (s.kind == SettingKind::choice) {
    for (std::size_t i = 0; i < s.choices.size(); ++i)
      if (text == s.choices[i]) {
        v.number = static_cast<double>(i);
        return v;
      }
    throw InputError("expected " + choices_text(s.choices));
  }
  if (s.kind == SettingKind::widths) {
    v.widths = parse_widths(text);
    return v;
  }
  if (s.kind == SettingKind::factor) {
    v.number = parse_factor(text);
    if (v.number < 0 || (factor_needs_x && !times)) throw InputError("expected a positive factor such as 2x or 0.5x");
    return v;
  }
  if (times && base && s.current) {  // a factor on the case's current value
    const double f = parse_factor(text);
    if (f < 0) throw InputError("expected a positive factor such as 2x or 0.5x");
    v.number = s.current(*base) * f;
  } else if (s.kind == SettingKind::whole) {
    v.number = parse_number(text);
  } else {
    try {
      v.number = parse_quantity(text, s.kind == SettingKind::size ? Quantity::size : Quantity::time);
    } catch (const std::exception& e) {
      throw InputError(e.what());
    }
  }
  if (s.kind == SettingKind::whole && !(v.number >= s.lo && v.number <= s.hi && v.number == std::floor(v.number)))
    throw InputError(printf_number("expected a whole number from %.0f", s.lo) + printf_number(" to %.0f", s.hi) +
                     (v.number == std::floor(v.number) && v.number > s.hi ? " (kanscale's limit)" : ""));
  if (s.kind == SettingKind::size && !(v.number >= s.lo && v.number <= s.hi)) throw InputError("expected a positive size");
  if (s.kind == SettingKind::time && !(v.number >= s.lo && v.number <= s.hi)) throw InputError("expected a time from 0 to 1e9 s");
  return v;
}

std::string setting_label(const Setting& s, const SettingValue& v) {
  switch (s.kind) {
    case SettingKind::whole: return printf_number("%.0f", v.number);
    case SettingKind::size: return format_bytes(v.number);
    case SettingKind::time: return format_time(v.number);
    case SettingKind::factor: {
      std::ostringstream os;
      os << v.number << "x";
      return os.str();
    }
    case SettingKind::choice: return s.choices.at(static_cast<std::size_t>(v.number));
    case SettingKind::widths: return widths_text(v.widths);
  }
  return v.text;
}

bool setting_is_neutral(const Setting& s, const SettingValue& v) {
  if (s.kind == SettingKind::factor) return v.number == 1;
  return s.kind == SettingKind::choice && s.choices.front() == "all" && v.number == 0;
}

}  // namespace ks
