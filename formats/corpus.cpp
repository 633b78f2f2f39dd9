#include "corpus.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <strings.h>

#include "common/error.hpp"
#include "formats/yaml_reader.hpp"

namespace ks {

namespace fs = std::filesystem;

double GpuSheet::pcie_Bps() const {
  // GT/s per lane by generation; 128b/130b coding from gen3 on (PCI-SIG)
  const double gts = pcie_gen == 3 ? 8.0 : pcie_gen == 4 ? 16.0 : pcie_gen == 5 ? 32.0 : pcie_gen == 6 ? 64.0 : 0.0;
  return gts * 1e9 / 8.0 * (128.0 / 130.0) * pcie_lanes;
}

// A quantity that may be "" (not stated): 0 then.
static double stated_quantity(YamlMap& m, const std::string& key, Quantity q) {
  const auto s = m.string_opt(key);
  if (!s || s->empty()) return 0.0;
  return m.quantity(key, q, Bound::non_negative);
}

static void read_pcie(YamlMap& m, GpuSheet& g) {
  const auto s = m.string_opt("pcie");
  if (!s || s->empty()) return;
  // "gen4 x16"
  // "gen4 x16"; "gen5" alone: the generation without its lanes (no rate then)
  int gen = 0, lanes = 0, used = 0;
  const int got = std::sscanf(s->c_str(), "gen%d%n x%d%n", &gen, &used, &lanes, &used);
  const bool lanes_ok = got == 1 || lanes == 1 || lanes == 2 || lanes == 4 || lanes == 8 || lanes == 16;
  if (got < 1 || static_cast<std::size_t>(used) != s->size() || gen < 3 || gen > 6 || !lanes_ok)
    m.fail("pcie", "expected a PCIe link such as \"gen4 x16\" (generation 3 to 6, x1 to x16), got \"" + *s + "\"");
  g.pcie_gen = gen;
  g.pcie_lanes = lanes;
}

GpuSheet load_gpu_sheet(const std::string& path) {
  YamlMap m = YamlMap::load_file(path);
  GpuSheet g;
  g.file = path;
  g.name = fs::path(path).stem().string();
  g.model = m.string("model");
  g.compute_capability = m.number_opt("compute_capability", Bound::positive).value_or(0.0);
  if (g.compute_capability > 20) m.fail("compute_capability", "expected a CUDA compute capability such as 8.0");
  g.fp32_flops = stated_quantity(m, "fp32", Quantity::flop_rate);
  g.tf32_flops = stated_quantity(m, "tf32", Quantity::flop_rate);
  g.memory_bandwidth_Bps = stated_quantity(m, "memory_bandwidth", Quantity::rate);
  g.memory_bytes = stated_quantity(m, "memory", Quantity::size);
  g.nvlink_Bps = stated_quantity(m, "nvlink_bandwidth", Quantity::rate);
  read_pcie(m, g);
  m.finish();
  return g;
}

// The site: a repository (github.com/OWNER/REPO), else the address without
// its fragment (an issue thread, a page). One site's entries with one GPU
// model are one machine, whatever their node counts.
static std::string site_of(const std::string& address) {
  std::string a = address.substr(0, address.find('#'));
  const std::string gh = "https://github.com/";
  if (a.rfind(gh, 0) == 0) {
    const auto blob = a.find("/blob/");
    if (blob != std::string::npos) return a.substr(0, blob);
  }
  return a;
}

GpuSpec gpu_spec_of(const GpuSheet& g) {
  GpuSpec s;
  s.model = g.model;
  s.compute_capability = g.compute_capability;
  s.fp32_flops = g.fp32_flops;
  s.tf32_flops = g.tf32_flops > 0 ? g.tf32_flops : g.fp32_flops;
  s.memory_bandwidth_Bps = g.memory_bandwidth_Bps;
  s.memory_bytes = g.memory_bytes;
  return s;
}

std::string CorpusEntry::system_key() const { return site_of(address) + "|" + system.gpu; }

static std::string stated_string(YamlMap& m, const std::string& key) { return m.string_opt(key).value_or(""); }

static CorpusSystem read_system(YamlMap s) {
  CorpusSystem y;
  y.gpu = stated_string(s, "gpu");
  y.gpus_per_node = static_cast<int>(s.integer("gpus_per_node", 0, 1024));
  y.nodes = static_cast<int>(s.integer("nodes", 0, 1 << 20));
  y.intra_node = s.choice("intra_node", {"nvswitch", "nvlink", "pcie"});
  y.network = s.choice("network", {"none", "infiniband", "roce", "ethernet"});
  y.nics_per_node = static_cast<int>(s.integer("nics_per_node", 0, 1024));
  y.nic_Bps = stated_quantity(s, "nic_speed", Quantity::rate);
  y.nccl = stated_string(s, "nccl");
  y.cuda = stated_string(s, "cuda");
  y.torch = stated_string(s, "torch");
  y.cpu = stated_string(s, "cpu");
  if (auto env = s.map_opt("nccl_env")) {
    for (const auto& k : env->keys()) y.nccl_env[k] = env->string(k);
    for (const auto& [var, names] : {std::pair{"NCCL_ALGO", &kNcclAlgos}, std::pair{"NCCL_PROTO", &kNcclProtos}})
      if (const NcclEnvList l = nccl_env_list(y.nccl_env, var, *names); !l.unknown.empty()) {
        std::string known;
        for (const auto& n : *names) known += (known.empty() ? "" : ", ") + n;
        env->fail(var, "unknown " + std::string(var) + " value \"" + l.unknown + "\"; NCCL knows " + known);
      }
    env->finish();
  }
  s.finish();
  return y;
}

NcclEnvList nccl_env_list(const std::map<std::string, std::string>& env, const std::string& var, const std::vector<std::string>& names) {
  NcclEnvList out;
  const auto it = env.find(var);
  if (it == env.end() || it->second.empty()) {
    out.selected = names;
    return out;
  }
  std::string v = it->second;
  out.negated = v[0] == '^';
  if (out.negated) v.erase(0, 1);
  std::vector<bool> named(names.size(), false);
  std::stringstream in(v);
  for (std::string w; std::getline(in, w, ',');) {
    bool known = false;
    for (std::size_t i = 0; i < names.size(); ++i)
      if (strcasecmp(names[i].c_str(), w.c_str()) == 0) named[i] = known = true;
    if (!known && out.unknown.empty()) out.unknown = w;
  }
  for (std::size_t i = 0; i < names.size(); ++i)
    if (named[i] != out.negated) out.selected.push_back(names[i]);
  return out;
}

// The link a busbw cannot exceed twice: the intra-node link on one node; on
// several, the node's NICs where stated (the ring crosses them), else the
// intra-node link. 0: the sheet states neither.
static double link_peak_Bps(const CorpusSystem& s, const GpuSheet& g) {
  const double intra = s.intra_node == "pcie" ? g.pcie_Bps() : g.nvlink_Bps / 2;
  if (s.nodes > 1 && s.nics_per_node > 0 && s.nic_Bps > 0) return s.nics_per_node * s.nic_Bps;
  return intra;
}

static void read_nccl_rows(YamlMap& m, CorpusEntry& e) {
  const int n = e.system.ranks();
  if (n < 2) m.fail("system", "an all-reduce entry needs gpus_per_node x nodes of at least 2, got " + std::to_string(n));
  auto rows = m.map_list_opt("measurements");
  if (rows.empty()) m.fail("measurements", "expected at least one row {size_bytes, time_us, busbw_GBps}");
  const double peak = e.gpu ? link_peak_Bps(e.system, *e.gpu) : 0.0;
  for (auto& r : rows) {
    NcclRow row;
    row.size_bytes = r.number("size_bytes", Bound::positive);
    if (row.size_bytes != std::floor(row.size_bytes) || row.size_bytes > 9.0e18)
      r.fail("size_bytes", "expected a whole number of bytes, got " + gnum(row.size_bytes));
    row.time_us = r.number("time_us", Bound::positive);
    row.busbw_GBps = r.number("busbw_GBps", Bound::non_negative);
    r.ignore("note");
    if (!e.nccl.empty() && !(row.size_bytes > e.nccl.back().size_bytes))
      r.fail("size_bytes", "sizes must increase down the rows; " + gnum(row.size_bytes) + " follows " + gnum(e.nccl.back().size_bytes));
    // nccl-tests: busbw = size / time x 2(n-1)/n, printed to 0.01 GB/s and time to 0.01-1 us
    const double expected = row.size_bytes / (row.time_us * 1e3) * 2.0 * (n - 1) / n;
    if (std::fabs(row.busbw_GBps - expected) > 0.006 + 0.03 * expected)
      r.fail("busbw_GBps", gnum(row.busbw_GBps) + " GB/s does not follow from size and time on " + std::to_string(n) +
                               " ranks (" + gnum(expected) + " GB/s = size/time x 2(n-1)/n)");
    if (peak > 0 && row.busbw_GBps * 1e9 > 2 * peak)
      r.fail("busbw_GBps", gnum(row.busbw_GBps) + " GB/s is above twice the link's datasheet peak (" + gnum(peak / 1e9) +
                               " GB/s one way); expected a figure the hardware can reach");
    r.finish();
    e.nccl.push_back(row);
  }
}

static std::optional<int> int_or_null(YamlMap& r, const std::string& key) {
  if (r.is_null(key)) return std::nullopt;
  return static_cast<int>(r.integer(key, 1, 1 << 30));
}
static std::optional<double> ms_or_null(YamlMap& r, const std::string& key) {
  if (r.is_null(key)) return std::nullopt;
  return r.number_opt(key, Bound::positive);
}

static void read_kan_rows(YamlMap& m, CorpusEntry& e) {
  for (auto& r : m.map_list_opt("measurements")) {
    KanLayerRow k;
    k.impl = r.string("impl");
    if (!r.is_null("widths"))
      for (auto w : r.integer_list("widths", 1, 2, std::int64_t{1} << 30)) k.widths.push_back(w);
    k.grid_size = int_or_null(r, "grid_size");
    k.spline_order = int_or_null(r, "spline_order");
    k.batch = int_or_null(r, "batch");
    k.precision = r.choice("precision", {"fp32", "tf32", "fp16", "bf16"});
    k.forward_ms = ms_or_null(r, "forward_ms");
    k.backward_ms = ms_or_null(r, "backward_ms");
    k.forward_backward_ms = ms_or_null(r, "forward_backward_ms");
    if (!k.forward_ms && !k.backward_ms && !k.forward_backward_ms)
      r.fail("forward_ms", "expected at least one of forward_ms, backward_ms, forward_backward_ms");
    r.ignore("note");
    r.finish();
    e.kan.push_back(k);
  }
  if (e.kan.empty()) m.fail("measurements", "expected at least one KAN timing row");
}

static void read_dispatch_rows(YamlMap& m, CorpusEntry& e) {
  for (auto& r : m.map_list_opt("measurements")) {
    DispatchRow d;
    d.mode = r.choice("mode", {"eager", "compiled", "device"});
    d.op = r.string("op");
    d.overhead_us = r.number("overhead_us", Bound::positive);
    r.ignore("note");
    r.finish();
    e.dispatch.push_back(d);
  }
  if (e.dispatch.empty()) m.fail("measurements", "expected at least one row {op, overhead_us}");
}

CorpusEntry load_corpus_entry(const std::string& path, const std::string& gpus_dir) {
  YamlMap m = YamlMap::load_file(path);
  CorpusEntry e;
  e.file = path;
  e.id = m.string("id");
  if (e.id != fs::path(path).stem().string())
    m.fail("id", "\"" + e.id + "\": expected the file's name without .yaml (\"" + fs::path(path).stem().string() + "\")");
  e.kind = m.choice("kind", {"nccl_allreduce", "kan_layer", "dispatch", "ddp_scaling"});
  YamlMap src = m.map("source");
  e.address = src.string("address");
  if (e.address.rfind("https://", 0) != 0) src.fail("address", "expected the source's https:// address");
  e.date = src.string("date");
  {
    // YYYY-MM-DD, YYYY-MM, or "" (not shown by the source)
    const std::string& d = e.date;
    auto digits = [&](std::size_t a, std::size_t n) {
      for (std::size_t i = a; i < a + n; ++i)
        if (!std::isdigit(static_cast<unsigned char>(d[i]))) return false;
      return true;
    };
    const bool ok = d.empty() || (d.size() == 7 && digits(0, 4) && d[4] == '-' && digits(5, 2)) ||
                    (d.size() == 10 && digits(0, 4) && d[4] == '-' && digits(5, 2) && d[7] == '-' && digits(8, 2));
    if (!ok) src.fail("date", "expected YYYY-MM-DD, YYYY-MM or \"\" (not shown), got \"" + d + "\"");
  }
  e.where = src.string("where");
  src.finish();
  e.health = m.choice("health", {"healthy", "unhealthy", "unknown"});
  e.health_pointer = m.string("health_pointer");
  e.health_note = m.string_opt("health_note").value_or("");
  e.scored = m.boolean_opt("scored").value_or(false);
  e.cls = m.choice("class", {"nvswitch", "nvlink", "pcie", "infiniband", "roce", "unmodelled", "compute", "dispatch", "ddp"});
  const bool nccl_class = e.cls != "compute" && e.cls != "dispatch" && e.cls != "ddp";
  if ((e.kind == "nccl_allreduce") != nccl_class)
    m.fail("class", "class " + e.cls + " does not go with kind " + e.kind);
  if (e.scored && (e.health == "unhealthy" || e.cls == "unmodelled"))
    m.fail("scored", "an " + (e.health == "unhealthy" ? std::string("unhealthy") : std::string("unmodelled")) +
                         " entry stays in the corpus unscored (scored: false)");
  YamlMap sys = m.map("system");
  e.system = read_system(sys);
  // an all-reduce class follows from the system: one node, its link; several, its network
  if (e.kind == "nccl_allreduce" && e.cls != "unmodelled") {
    const auto& s = e.system;
    const bool one = s.nodes == 1;
    const bool fits = one ? (e.cls == "pcie" ? s.intra_node == "pcie" : e.cls == s.intra_node) : e.cls == s.network;
    if (!fits)
      m.fail("class", "class " + e.cls + " contradicts the system (" + std::to_string(s.nodes) + " node(s), intra_node " + s.intra_node +
                          ", network " + s.network + "); expected " + (one ? s.intra_node : s.network) + " or unmodelled");
  }
  if (!e.system.gpu.empty()) {
    const fs::path sheet = fs::path(gpus_dir) / (e.system.gpu + ".yaml");
    if (!fs::is_regular_file(sheet)) sys.fail("gpu", "unknown GPU model \"" + e.system.gpu + "\": expected a file " + sheet.string());
    e.gpu = load_gpu_sheet(sheet.string());
  } else if (e.kind == "nccl_allreduce" || e.kind == "kan_layer") {
    sys.fail("gpu", "expected the GPU model (a file of " + gpus_dir + ")");
  }
  if (e.kind == "nccl_allreduce") read_nccl_rows(m, e);
  else if (e.kind == "kan_layer") read_kan_rows(m, e);
  else if (e.kind == "dispatch") read_dispatch_rows(m, e);
  else e.ddp_rows = m.map_list_opt("measurements").size();  // free-form figures with units in their keys
  m.finish();
  return e;
}

std::vector<CorpusEntry> load_corpus(const std::string& dir, const std::string& gpus_dir) {
  if (!fs::is_directory(dir)) throw InputError(dir + ": expected a corpus directory of entries (*.yaml)");
  std::vector<std::string> files;
  for (const auto& f : fs::directory_iterator(dir))
    if (f.is_regular_file() && f.path().extension() == ".yaml") files.push_back(f.path().string());
    else if (f.is_regular_file() && f.path().extension() == ".yml")
      throw InputError(f.path().string() + ": a corpus entry is named <id>.yaml; rename it (.yml is not read)");
  std::sort(files.begin(), files.end());
  if (files.empty()) throw InputError(dir + ": no corpus entries (*.yaml) in it");
  std::vector<CorpusEntry> out;
  for (const auto& f : files) out.push_back(load_corpus_entry(f, gpus_dir));
  return out;
}

NcclPriors load_nccl_priors(const std::string& path) {
  YamlMap m = YamlMap::load_file(path);
  NcclPriors p;
  p.file = path;
  if (m.string("kind") != "kanscale-priors") m.fail("kind", "expected kanscale-priors (a file kanscale fit --priors wrote)");
  m.ignore("fitted_from");
  if (auto d = m.map_opt("dispatch")) {
    YamlMap u = d->map("per_op_us");
    FactorPrior& f = p.dispatch_us;
    f.scope = u.choice("scope", {"class", "pooled", "none"});
    f.median = u.number("median", Bound::positive);
    f.sigma = u.number("sigma", Bound::non_negative);
    f.df = static_cast<int>(u.integer("df", 0, 1 << 20));
    f.systems = static_cast<int>(u.integer("cpus", 0, 1 << 20));
    if (u.has("from")) f.from = u.string_list("from");
    if (f.usable() && (f.df < 1 || f.systems < 1)) u.fail("df", "a usable prior needs df and cpus of at least 1");
    u.finish();
    d->finish();
  }
  YamlMap n = m.map("nccl");
  for (const char* part : {"bandwidth", "latency"}) {
    YamlMap classes = n.map(part);
    auto& out = std::string(part) == "bandwidth" ? p.bandwidth : p.latency;
    for (const auto& cls : classes.keys()) {
      YamlMap c = classes.map(cls);
      FactorPrior f;
      f.scope = c.choice("scope", {"class", "pooled", "none"});
      f.median = c.number("median", Bound::positive);
      f.sigma = c.number("sigma", Bound::non_negative);
      f.df = static_cast<int>(c.integer("df", 0, 1 << 20));
      f.systems = static_cast<int>(c.integer("systems", 0, 1 << 20));
      f.rms = c.number("rms", Bound::non_negative);
      if (auto ccs = c.number_list_opt("compute_capabilities", Bound::non_negative))
        for (double x : *ccs) f.ccs.insert(x);
      if (f.usable() && (f.df < 1 || f.systems < 1)) c.fail("df", "a usable prior needs df and systems of at least 1");
      c.finish();
      out[cls] = f;
    }
    classes.finish();
  }
  n.finish();
  YamlMap d = m.map("datasheet_error");
  for (const auto& r : d.keys()) {
    YamlMap x = d.map(r);
    NcclPriors::Rms v;
    v.rms = x.number("rms", Bound::non_negative);
    v.machines = static_cast<int>(x.integer("machines", 0, 1 << 20));
    x.finish();
    p.datasheet_rms[r] = v;
  }
  d.finish();
  m.finish();
  return p;
}

}  // namespace ks
