// kanscale model allreduce|layer: query a (fitted or datasheet) cost model
// point by point.
#include <boost/program_options.hpp>

#include <iomanip>
#include <iostream>

#include "commands.hpp"
#include "model/collectives.hpp"
#include "model/cost.hpp"
#include "model/kan_model.hpp"
#include "model/units.hpp"
#include "formats/yaml_reader.hpp"
#include "options.hpp"
#include "model/limits.hpp"
#include "sim/point.hpp"
#include "sim/report.hpp"
#include "formats/config_files.hpp"
#include "formats/corpus.hpp"
#include "base/data_dir.hpp"
#include "model/priors.hpp"

#include <cmath>
#include <filesystem>

namespace po = boost::program_options;

namespace ks::cli {

namespace {

struct ModelArgs {
  CommonOptions c;
  std::string bytes = "1MiB", impl = "kanscale";
  long long batch = 1024, in = 64, out = 64;
  int grid = 5, order = 3, gpus = 2;
};

po::options_description model_options(const std::string& what, ModelArgs& a) {
  po::options_description desc("model " + what + " options");
  desc.add_options()
      ("help,h", "show this help")
      ("cluster", po::value(&a.c.cluster)->value_name("FILE"), "cluster YAML")
      ("calibration", po::value(&a.c.calibration)->value_name("FILE"), "calibration YAML (default: the cluster's datasheet values)")
      ("bytes", po::value(&a.bytes)->default_value(a.bytes), "allreduce: message size")
      ("gpus", po::value(&a.gpus)->default_value(a.gpus), "allreduce: ranks")
      ("gpus-per-node", po::value(&a.c.gpus_per_node), "allreduce: ranks per node")
      ("batch", po::value(&a.batch)->default_value(a.batch), "layer: batch")
      ("in", po::value(&a.in)->default_value(a.in), "layer: input width")
      ("out", po::value(&a.out)->default_value(a.out), "layer: output width")
      ("grid", po::value(&a.grid)->default_value(a.grid), "layer: grid size G")
      ("order", po::value(&a.order)->default_value(a.order), "layer: spline order k")
      ("implementation", po::value(&a.impl)->default_value(a.impl), "layer: kanscale (needs a fitted --calibration) | pytorch (efficient-kan, its former name)");
  return desc;
}

// A datasheet NCCL answer's 90% interval from the shipped priors
// (configs/priors/gpu.yaml, fitted from the corpus of public measurements):
// centred on the datasheet, as validate --corpus found better at both ends,
// the latency and bandwidth parts widened by their classes' spreads. The
// class follows the cluster's hardware (NVLink among more than two GPUs:
// nvswitch). Where the class's machines hold no GPU of this generation, or
// the message lies in the middle regime (64 KiB to 64 MiB, which no prior
// covers and where the datasheet model erred most), the datasheet model's
// own error over every machine sets a floor on the width.
void print_prior_interval(const NcclModel& n, const Cluster& cl, const Layout& l, double bytes, const CollectiveEstimate& e) {
  const std::string path = data_dir().path + "/configs/priors/gpu.yaml";
  if (!std::filesystem::exists(path)) {
    std::cout << "  no interval: the priors file (" << path << ") is missing\n";
    return;
  }
  const NcclPriors pr = load_nccl_priors(path);
  const std::string cls = nccl_prior_class(cl.intra.kind == LinkKind::nvlink, cl.gpus_per_node, l.nodes, cl.net.kind);
  const auto bw = pr.bandwidth.find(cls), lat = pr.latency.find(cls);
  if (cls.empty() || bw == pr.bandwidth.end() || lat == pr.latency.end() || !bw->second.usable() || !lat->second.usable()) {
    std::cout << "  no interval: no prior for this link class (" << (cls.empty() ? "network.kind " + cl.net.kind : cls)
              << "); the datasheet answer alone has no honest width\n";
    return;
  }
  const double lat_s = n.allreduce_latency_s(bytes, l);
  const ScaledTime t = scale_time(lat_s, e.time_s - lat_s, 1.0, lat->second.log_half_width_at_one(0.90), 1.0,
                                  bw->second.log_half_width_at_one(0.90));
  double h = t.log_half_width;
  std::string floor_why;
  const bool generation = bw->second.ccs.count(cl.gpu.compute_capability) && lat->second.ccs.count(cl.gpu.compute_capability);
  const bool middle = bytes > 64.0 * 1024 && bytes < 64.0 * 1024 * 1024;
  const char* regime = middle ? "middle" : "all";
  if (const auto d = pr.datasheet_rms.find(regime); (middle || !generation) && d != pr.datasheet_rms.end() && d->second.machines >= 2) {
    const double hd = student_t_quantile(0.95, d->second.machines) * d->second.rms;
    if (hd > h) h = hd;
    floor_why = std::string("; at least the datasheet model's error ") + (middle ? "in the middle regime" : "over every regime") + " on " +
                std::to_string(d->second.machines) + " machines (" +
                (middle ? "64 KiB to 64 MiB: no prior of its own, and the model's worst regime" : "") +
                (!generation ? std::string(middle ? "; " : "") + "no machine of compute capability " + gnum(cl.gpu.compute_capability) +
                                   " in class " + cls
                             : "") +
                ")";
  }
  std::cout << "  90% interval " << t.time_s * std::exp(-h) * 1e6 << "-" << t.time_s * std::exp(h) * 1e6 << " us: priors (" << cls
            << ": latency from " << lat->second.systems << " machine(s), " << lat->second.scope << "; bandwidth from "
            << bw->second.systems << ", " << bw->second.scope << "), centred on the datasheet" << floor_why << "; configs/priors/gpu.yaml\n";
}

// kanscale model allreduce: one all-reduce priced by the collective model in use (NCCL's candidates listed).
int model_allreduce(const ModelArgs& a, const po::variables_map& vm, const Cluster& cl, const Calibration& cal) {
  double b = 0;
  try {
    b = parse_size_bytes(a.bytes);
  } catch (const UnitError& e) {
    throw InputError(std::string("--bytes: ") + e.what());
  }
  if (!(b > 0)) throw InputError("--bytes: must be positive");
  const Layout l = layout_for(cl, a.gpus, vm.count("gpus-per-node") ? std::optional<int>(a.c.gpus_per_node) : std::nullopt);
  const auto m = make_collective_model(cl, cal);
  const auto e = m->allreduce(b, l);
  const double algbw = e.time_s > 0 ? b / e.time_s / 1e9 : 0;
  std::cout << "allreduce of " << format_bytes(b) << " on " << l.ranks << " ranks (" << l.nodes << " node(s)), " << m->family()
            << ", calibration " << cal.name << " (" << cal.source << (cal.machine.empty() ? "" : ", measured on " + describe(cal.machine))
            << "):\n  " << std::setprecision(2) << e.time_s * 1e6 << " us, algbw " << algbw << " GB/s, busbw "
            << algbw * 2.0 * (l.ranks - 1) / l.ranks << " GB/s, " << e.label() << "\n";
  if (l.ranks <= 1) {
    std::cout << "  one rank: nothing to reduce\n";
    return 0;
  }
  if (const auto* n = dynamic_cast<const NcclModel*>(m.get())) {
    if (cal.source == "datasheet") print_prior_interval(*n, cl, l, b, e);
    std::cout << "  candidates (NCCL's order):\n";
    for (const auto& cd : n->allreduce_candidates(b, l))
      std::cout << "    " << std::setw(5) << to_string(cd.algo) << "/" << std::left << std::setw(7) << to_string(cd.proto) << std::right
                << (cd.enabled ? "" : " disabled") << (cd.enabled ? "  latency " : "") << (cd.enabled ? std::to_string(cd.latency_us) : "")
                << (cd.enabled ? " us, bw " + std::to_string(cd.bandwidth_GBps) + " GB/s, time " + std::to_string(cd.time_us) + " us" : "")
                << "\n";
  }
  return 0;
}

// kanscale model layer: one KAN layer's forward and backward by the op model.
int model_layer(const ModelArgs& a, const Cluster& cl, const Calibration& cal) {
  if (a.batch < 1 || a.in < 1 || a.out < 1 || a.grid < 1 || a.order < 1 || a.order > 16)
    throw InputError("layer: sizes must be positive (order <= 16)");
  if (a.in > YamlMap::kIntMax || a.out > YamlMap::kIntMax) throw InputError("--in, --out: at most " + std::to_string(YamlMap::kIntMax));
  if (a.batch > kMaxBatch) throw InputError("--batch: at most " + std::to_string(kMaxBatch) + ", got " + std::to_string(a.batch));
  const KanShape s{{a.in, a.out}, a.grid, a.order};
  if (const std::string why = kan_size_problem(s); !why.empty()) throw InputError("--in, --out, --grid: " + why);
  const std::string impl = a.impl == "efficient-kan" ? "pytorch" : a.impl;  // its former name
  if (impl != "kanscale" && impl != "pytorch") throw InputError("--implementation: kanscale or pytorch");
  const auto ops = impl == "kanscale" ? kanscale_iteration(s, a.batch, false) : efficient_kan_iteration(s, a.batch, false);
  double fwd = 0, bwd = 0, fl = 0;
  for (const auto& o : ops) {
    if (o.phase == Phase::forward) {
      fwd += op_time_s(o, cal, 0.0);  // caches warm, as the layer is measured
      fl += o.flops;
    }
    if (o.phase == Phase::backward) bwd += op_time_s(o, cal, 0.0);
  }
  std::cout << impl << " layer " << a.in << " -> " << a.out << ", G=" << a.grid << ", k=" << a.order << ", batch " << a.batch
            << ", calibration " << cal.name << " (" << cal.source << (cal.machine.empty() ? "" : ", measured on " + describe(cal.machine))
            << "):\n  forward " << std::setprecision(2) << fwd * 1e6 << " us (" << fl / fwd / 1e9
            << " GFLOP/s), backward (no input gradient: first layer) " << bwd * 1e6 << " us\n";
  // the 90% interval: the calibration's own model error, else what an
  // unwatched answer borrows (formats' with_shipped_defaults), lognormal
  Workload w;
  w.implementation = impl == "kanscale" ? Implementation::kanscale : Implementation::pytorch;
  const Calibration k = with_shipped_defaults(cal, cl, w);
  if (k.model_error_sigma > 0) {
    const auto [f_lo, f_hi] = lognormal_band(fwd, k.model_error_sigma, 0.90);
    const auto [b_lo, b_hi] = lognormal_band(bwd, k.model_error_sigma, 0.90);
    std::cout << "  90% interval: forward " << f_lo * 1e6 << "-" << f_hi * 1e6 << " us, backward " << b_lo * 1e6 << "-" << b_hi * 1e6
              << " us (lognormal sigma " << std::setprecision(4)
              << k.model_error_sigma << ": "
              << (k.unwatched_sigma_applied > 0 ? "UNWATCHED, " + k.unwatched_source : "the calibration's live runs, leave one shape out") << ")\n";
    if (k.unwatched_sigma_applied > 0 && cl.collectives.family == CollFamily::nccl)
      std::cout << "  on a GPU this band is too narrow: the corpus's one KAN timing that can be predicted (RTX A5000, efficient-kan) "
                   "ran 3.4-4.9x slower than the datasheet replay (validate --corpus, \"KAN timings\")\n";
  } else {
    std::cout << "  no interval: calibration " << cal.name << " records no model error, and no shipped one is lent\n";
  }
  return 0;
}

}  // namespace

int model(const std::vector<std::string>& args, const std::string& cmdline) {
  (void)cmdline;
  if (args.empty() || (args[0] != "allreduce" && args[0] != "layer"))
    throw InputError("model: expected kanscale model allreduce|layer [options]");
  const std::string what = args[0];
  ModelArgs a;
  const po::options_description desc = model_options(what, a);
  po::variables_map vm;
  if (!parse_args({args.begin() + 1, args.end()}, desc, "usage: kanscale model allreduce|layer --cluster C [--calibration K] ...", vm)) return 0;
  if (a.c.cluster.empty()) throw InputError("missing required option --cluster");
  const Cluster cl = load_cluster(a.c.cluster);
  const Calibration cal =
      a.c.calibration.empty() ? datasheet_calibration(cl, Precision::fp32) : load_calibration(a.c.calibration, cl, Precision::fp32);
  if (const std::string m = collective_family_mismatch(cl, cal); !m.empty() && what == "allreduce") std::cerr << "WARNING: " << m << "\n";
  std::cout << std::fixed;
  return what == "allreduce" ? model_allreduce(a, vm, cl, cal) : model_layer(a, cl, cal);
}

}  // namespace ks::cli
