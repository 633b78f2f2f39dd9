#include "calibration_fit.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "collectives.hpp"
#include "cost.hpp"
#include "kan_model.hpp"
#include "statistics.hpp"
#include "units.hpp"
#include "common/error.hpp"

namespace ks {

namespace {

// The top fraction of points (by `key`) are held out: extrapolation is
// what users ask of a fit. With frequency weights (fit_relative_nonneg) a
// point counts as its weight: the cut is where the largest keys' weight
// reaches the fraction of the total (all 1: the fraction of the points).
std::vector<bool> hold_out_largest(const std::vector<double>& key, double fraction, const std::vector<double>& weights = {}) {
  std::vector<std::size_t> order(key.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return key[a] < key[b]; });
  double total = 0;
  for (std::size_t i = 0; i < key.size(); ++i) total += weights.empty() ? 1.0 : weights[i];
  const double n_hold = std::floor(fraction * total);
  std::vector<bool> h(key.size(), false);
  if (n_hold == 0 || total - n_hold < 4) return h;
  double acc = 0, cut = 0;
  for (std::size_t j = order.size(); j-- > 0 && acc < n_hold;) {
    acc += weights.empty() ? 1.0 : weights[order[j]];
    cut = key[order[j]];
  }
  for (std::size_t i = 0; i < key.size(); ++i) h[i] = key[i] >= cut;
  return h;
}

// Frequency weights that count a kernel class's every shape as if every
// round had timed it: a row's weight is proportional to the rounds (files)
// that timed the class over those that timed its shape. Rounds that time a
// class at every other shape (skip_shapes_under) leave the others with
// fewer rows: unweighted, the fit and its held-out cut leant on the shapes
// timed in every round (issue 60). Scaled to a mean of 1, so that the
// weights add up to the rows measured (the degrees of freedom, hence the
// covariance, are the data's); all 1 when every round timed every shape, or
// each file other shapes.
std::vector<double> as_if_every_round(const std::vector<std::string>& shape, const std::vector<std::size_t>& file) {
  std::set<std::size_t> rounds(file.begin(), file.end());
  std::map<std::string, std::set<std::size_t>> timed;
  for (std::size_t i = 0; i < shape.size(); ++i) timed[shape[i]].insert(file[i]);
  std::vector<double> w;
  w.reserve(shape.size());
  double sum = 0;
  for (const auto& k : shape) {
    w.push_back(static_cast<double>(rounds.size()) / static_cast<double>(timed[k].size()));
    sum += w.back();
  }
  if (std::all_of(w.begin(), w.end(), [&](double x) { return x == w.front(); })) return std::vector<double>(w.size(), 1.0);
  const double scale = static_cast<double>(w.size()) / sum;
  for (double& x : w) x *= scale;
  return w;
}

void report_row(std::ostream& os, const std::string& name, const LinearFit& f, const std::vector<std::string>& units,
                const std::vector<double>& scales) {
  os << "  " << std::left << std::setw(20) << name << (name.size() >= 20 ? " " : "");
  for (std::size_t j = 0; j < 5; ++j) {
    std::ostringstream c;
    if (j >= f.coef.size()) c << "";
    else if (f.active[j]) c << std::setprecision(3) << f.coef[j] * scales[j] << "+-" << std::setprecision(2) << f.std_err[j] * scales[j] << " " << units[j];
    else c << "(dropped)";
    os << std::setw(24) << c.str();
  }
  os << "R2 " << std::fixed << std::setprecision(4) << f.r2 << std::defaultfloat;
  if (f.n_holdout > 0) os << "  held-out " << f.n_holdout << ": mean " << std::setprecision(3) << 100 * f.holdout_mean_abs_rel << "%, max " << 100 * f.holdout_max_abs_rel << "%";
  os << "  (n=" << f.n_fit << ")\n";
}

// The fit on every point, with its held-out error from leaving one group
// out at a time (refit without the group's points, predict them): a shape
// of a torch op class, a size of a sweep.
LinearFit fit_leave_one_group_out(const std::vector<std::string>& features, const std::vector<std::vector<double>>& X,
                                  const std::vector<double>& y, const std::vector<std::string>& group,
                                  const std::vector<double>& weights = {}) {
  LinearFit all = fit_relative_nonneg(features, X, y, std::vector<bool>(y.size(), false), weights);
  double sum = 0, worst = 0, held = 0;
  int n = 0;
  for (const std::string& g : std::set<std::string>(group.begin(), group.end())) {
    std::vector<bool> h(y.size());
    for (std::size_t i = 0; i < h.size(); ++i) h[i] = group[i] == g;
    const LinearFit without = fit_relative_nonneg(features, X, y, h, weights);
    for (std::size_t i = 0; i < h.size(); ++i) {
      if (!h[i]) continue;
      const double e = std::fabs(predict(without, X[i]) - y[i]) / y[i];
      const double w = weights.empty() ? 1.0 : weights[i];
      sum += w * e;
      held += w;
      worst = std::max(worst, e);
      ++n;
    }
  }
  all.n_holdout = n;
  all.holdout_mean_abs_rel = n ? sum / held : -1;
  all.holdout_max_abs_rel = n ? worst : -1;
  return all;
}

// A rate from a fitted time per unit: set when the term was kept.
double rate_of(const LinearFit& f, std::size_t j) { return f.active[j] && f.coef[j] > 0 ? 1.0 / f.coef[j] : 0.0; }

// What a point of a sweep must have for the fit.
template <typename T>
T need(const std::optional<T>& v, const char* key, const CollectiveSweepFile& f, std::size_t i) {
  if (!v) throw InputError(f.path + ": row " + std::to_string(i) + " lacks '" + key + "'");
  return *v;
}

void append(std::ostringstream& from, const std::string& what) { from << (from.tellp() > 0 ? "; " : "") << what; }

// Collectives, mpi family: alpha-beta per regime from all-reduce sweeps at
// any rank counts, and the broadcast from broadcast sweeps.
void fit_mpi_collectives(const std::vector<const CollectiveSweepFile*>& sweeps, std::ostringstream& from, CalibrationFile& out,
                         std::ostream& report) {
  // Regimes: OpenMPI's switch at 10000 B (recursive doubling below, ring
  // above), and the ring again above 4 MiB, where the buffers leave the
  // caches (measured here: the time per byte grows there).
  struct Regime {
    MpiAlgo algo;
    double below;
    std::vector<std::vector<double>> x;
    std::vector<double> y, k;
    std::vector<int> n;
    std::vector<std::vector<double>> lx;  // launch: [1, bytes]
    std::vector<double> ly, lk;
  };
  std::vector<Regime> regimes = {{MpiAlgo::recursive_doubling, 10000.0, {}, {}, {}, {}, {}, {}, {}},
                                 {MpiAlgo::ring, 4.0 * 1048576, {}, {}, {}, {}, {}, {}, {}},
                                 {MpiAlgo::ring, 0.0, {}, {}, {}, {}, {}, {}, {}}};
  // broadcast sweeps (kanscale measure broadcast): the binomial tree's
  // ceil(log2 n) x (latency + bytes/bw), one fit over every size
  std::vector<std::vector<double>> bx;
  std::vector<double> by, bk;
  for (const CollectiveSweepFile* sp : sweeps) {
    const CollectiveSweepFile& s = *sp;
    const std::string& path = s.path;
    const SweptCollective op = s.has_metadata ? s.collective : SweptCollective::none;
    if (!s.has_points || op == SweptCollective::none) throw InputError(path + ": not a kanscale measure allreduce or broadcast file");
    const int n = s.ranks.value_or(1);
    if (n < 2) throw InputError(path + ": measured on one rank: no communication to fit");
    if (op == SweptCollective::broadcast) {
      append(from, path + " (broadcast, " + std::to_string(n) + " ranks)");
      for (std::size_t i = 0; i < s.points.size(); ++i) {
        const CollectivePoint& p = s.points[i];
        if (!p.in_place) throw InputError(path + ": point " + std::to_string(i) + " lacks 'in_place'");
        if (need(p.in_place->wrong, "wrong", s, i) != 0) throw InputError(path + ": point " + std::to_string(i) + " has wrong results");
        const AlphaBetaTerms terms = mpi_broadcast_terms(n, p.size_bytes);
        bx.push_back({terms.latency_steps, terms.byte_steps});
        by.push_back(need(p.in_place->time_us, "time_us", s, i) * 1e-6);  // in place: as the trainer broadcasts its buffers
        if (!(by.back() > 0)) throw InputError(path + ": point " + std::to_string(i) + ": 'in_place.time_us' must be greater than zero");
        bk.push_back(p.size_bytes);
      }
      continue;
    }
    append(from, path + " (" + std::to_string(n) + " ranks, " + s.library + ", " + s.date_utc + ")");
    for (std::size_t i = 0; i < s.points.size(); ++i) {
      const CollectivePoint& p = s.points[i];
      const double bytes = p.size_bytes;
      if (!p.out_of_place || !p.in_place) throw InputError(path + ": point " + std::to_string(i) + " lacks timings");
      const double t = need(p.out_of_place->time_us, "time_us", s, i) * 1e-6;
      if (!(t > 0)) throw InputError(path + ": point " + std::to_string(i) + ": 'out_of_place.time_us' must be greater than zero");
      if (need(p.out_of_place->wrong, "wrong", s, i) != 0) throw InputError(path + ": point " + std::to_string(i) + " has wrong results");
      Regime& r = bytes < regimes[0].below ? regimes[0] : bytes < regimes[1].below ? regimes[1] : regimes[2];
      const AlphaBetaTerms terms = mpi_allreduce_terms(r.algo, n, bytes);
      r.x.push_back({terms.latency_steps, terms.byte_steps});
      r.y.push_back(t);
      r.k.push_back(bytes);
      r.n.push_back(n);
      if (s.nonblocking && p.in_place->launch_us) {
        const double lt = *p.in_place->launch_us * 1e-6;  // in place: as the trainer issues it
        if (lt > 0) {
          r.lx.push_back({1.0, bytes});
          r.ly.push_back(lt);
          r.lk.push_back(bytes);
        }
      }
    }
  }
  auto holdout = [](const std::vector<double>& k, const std::vector<int>& ns) {
    const int nmax = *std::max_element(ns.begin(), ns.end()), nmin = *std::min_element(ns.begin(), ns.end());
    if (nmax != nmin) {  // hold out the largest rank count
      std::vector<bool> h(ns.size());
      for (std::size_t i = 0; i < ns.size(); ++i) h[i] = ns[i] == nmax;
      return h;
    }
    return hold_out_largest(k, 0.2);
  };
  report << "collectives (mpi: recursive doubling ceil(log2 n) x (latency + bytes/bw) below 10000 B (OpenMPI's\n"
            "switch), ring 2(n-1) x latency + 2(n-1)/n x bytes/bw below and above 4 MiB; held out: the largest\n"
            "rank count, or the largest 20% of sizes):\n";
  for (std::size_t ri = 0; ri < regimes.size(); ++ri) {
    Regime& r = regimes[ri];
    FittedMpiRegime fr;
    fr.regime.algorithm = r.algo;
    fr.regime.max_bytes = r.below > 0 ? r.below : std::numeric_limits<double>::infinity();
    const std::string label = std::string(to_string(r.algo)) + (ri == 2 ? " (large)" : "");
    if (r.x.size() < 3) {
      report << "  " << label << ": too few points (" << r.x.size() << "); left at the link defaults\n";
      out.mpi_regimes.push_back(fr);
      continue;
    }
    const LinearFit f = fit_relative_nonneg({"latency_s", "s_per_byte"}, r.x, r.y, holdout(r.k, r.n));
    fr.fit = f;
    set_alpha_beta(fr.regime.latency_s, fr.regime.bandwidth_Bps, f.coef);
    fr.regime.cov = f.cov;
    if (r.lx.size() >= 3) {
      const LinearFit lf = fit_relative_nonneg({"launch_s", "launch_s_per_byte"}, r.lx, r.ly, hold_out_largest(r.lk, 0.2));
      fr.launch_fit = lf;
      fr.regime.launch_s = lf.coef[0];
      if (const double bw = rate_of(lf, 1); bw > 0) fr.regime.launch_Bps = bw;
      report_row(report, label + " launch", lf, {"us", "ns/kB"}, {1e6, 1e12});
    }
    report_row(report, label, f, {"us", "ns/kB"}, {1e6, 1e12});
    out.mpi_regimes.push_back(fr);
  }
  if (by.size() >= 3) {
    const LinearFit f = fit_relative_nonneg({"latency_s", "s_per_byte"}, bx, by, hold_out_largest(bk, 0.2));
    MpiBroadcast b;
    std::optional<double> latency;
    set_alpha_beta(latency, b.bandwidth_Bps, f.coef);
    b.latency_s = *latency;
    b.cov = f.cov;
    out.mpi_broadcast = b;
    out.mpi_broadcast_fit = f;
    report << "broadcast (mpi: binomial tree, ceil(log2 n) x (latency + bytes/bw); held out: the largest 20% of sizes):\n";
    report_row(report, "binomial", f, {"us", "ns/kB"}, {1e6, 1e12});
  } else if (!by.empty()) {
    report << "broadcast: too few points (" << by.size() << "); left to the all-reduce regimes\n";
  }
}

// Collectives, gloo family: torch.distributed sweeps (kanscale measure
// allreduce|broadcast --backend gloo). gloo's ring all-reduce and binomial
// broadcast (model/collectives.hpp, GlooModel), one alpha-beta each over
// every size; torch's collectives work in place, so the in-place times.
void fit_gloo_collectives(const std::vector<const CollectiveSweepFile*>& sweeps, std::ostringstream& from, CalibrationFile& out,
                          std::ostream& report) {
  std::vector<std::vector<double>> x[2];
  std::vector<double> y[2];
  std::vector<std::string> k[2];  // the size: its points are held out together
  for (const CollectiveSweepFile* sp : sweeps) {
    const CollectiveSweepFile& s = *sp;
    if (!s.has_points || s.collective == SweptCollective::none) throw InputError(s.path + ": not a kanscale measure allreduce or broadcast file");
    const int n = s.ranks.value_or(1);
    if (n < 2) throw InputError(s.path + ": measured on one rank: no communication to fit");
    const bool bcast = s.collective == SweptCollective::broadcast;
    append(from, s.path + " (gloo " + (bcast ? "broadcast" : "all-reduce") + ", " + std::to_string(n) + " ranks, " + s.library + ", " + s.date_utc + ")");
    for (std::size_t i = 0; i < s.points.size(); ++i) {
      const CollectivePoint& p = s.points[i];
      if (!p.in_place) throw InputError(s.path + ": point " + std::to_string(i) + " lacks 'in_place'");
      if (need(p.in_place->wrong, "wrong", s, i) != 0) throw InputError(s.path + ": point " + std::to_string(i) + " has wrong results");
      const double t = need(p.in_place->time_us, "time_us", s, i) * 1e-6;
      if (!(t > 0)) throw InputError(s.path + ": point " + std::to_string(i) + ": 'in_place.time_us' must be greater than zero");
      const AlphaBetaTerms terms = bcast ? mpi_broadcast_terms(n, p.size_bytes) : mpi_allreduce_terms(MpiAlgo::ring, n, p.size_bytes);
      x[bcast].push_back({terms.latency_steps, terms.byte_steps});
      y[bcast].push_back(t);
      k[bcast].push_back(std::to_string(static_cast<long long>(p.size_bytes)));
    }
  }
  report << "collectives (gloo, as torch 1.13 runs it: ring all-reduce 2(n-1) x latency + 2(n-1)/n x bytes/bw, binomial\n"
            "broadcast ceil(log2 n) x (latency + bytes/bw); in-place times; fitted on every point, held out: each size left\n"
            "out in turn):\n";
  for (int b = 0; b < 2; ++b) {
    const char* label = b ? "broadcast" : "all-reduce";
    if (y[b].empty()) continue;
    if (y[b].size() < 3) {
      report << "  " << label << ": too few points (" << y[b].size() << "); left at the link defaults\n";
      continue;
    }
    const LinearFit f = fit_leave_one_group_out({"latency_s", "s_per_byte"}, x[b], y[b], k[b]);
    GlooTerm g;
    std::optional<double> latency;
    set_alpha_beta(latency, g.bandwidth_Bps, f.coef);
    g.latency_s = latency.value_or(0.0);
    g.cov = f.cov;
    (b ? out.gloo_broadcast : out.gloo_allreduce) = g;
    (b ? out.gloo_broadcast_fit : out.gloo_allreduce_fit) = f;
    report_row(report, b ? "binomial" : "ring", f, {"us", "ns/kB"}, {1e6, 1e12});
  }
}

// A GPU job's op class: its kernels' time on the device, calls x fixed +
// elements x per_element as the host's (relative least squares, a shape
// held out at a time); a class whose events launched no kernel costs the
// device nothing.
void fit_torch_device(const std::string& cls, const std::vector<std::vector<double>>& x, const std::vector<double>& device,
                      const std::vector<std::string>& shape, FittedTorchOp& o, std::ostream& report) {
  o.device = TorchOpCost{};
  if (*std::max_element(device.begin(), device.end()) <= 0) {
    o.device_note = "no kernel in the traces";
    report << "  " << cls << " (device): launched no kernel\n";
    return;
  }
  if (*std::min_element(device.begin(), device.end()) <= 0) {
    // some shapes launched none: the fit would divide by 0; the mean time per element instead
    double t = 0, e = 0;
    for (std::size_t i = 0; i < device.size(); ++i) t += device[i], e += x[i][1];
    o.device->element_s = e > 0 ? t / e : 0.0;
    o.device_note = "no kernel at some shapes: per_element the mean time per element, fixed 0";
    report << "  " << cls << " (device): " << o.device_note << "\n";
    return;
  }
  o.device_fit = fit_leave_one_group_out({"fixed_s", "s_per_element"}, x, device, shape);
  o.device->fixed_s = o.device_fit->coef[0];
  o.device->element_s = o.device_fit->coef[1];
  o.device->cov = o.device_fit->cov;
  report_row(report, cls + " (device)", *o.device_fit, {"us", "ns/elem"}, {1e6, 1e9});
}

// PyTorch's op classes (kanscale measure torch-ops): per class, time of a
// repetition = calls x fixed + elements x per_element, relative least
// squares over every shape; its held-out error leaves one shape out at a
// time (refit without the shape's records, predict them).
void fit_torch_ops(const std::vector<TorchOpsFile>& files, std::ostringstream& from, CalibrationFile& out, std::ostream& report) {
  struct Rows {
    std::vector<std::vector<double>> x;
    std::vector<double> y, device;  // device: a GPU job's traces' kernel time (one per record, or none)
    std::vector<std::string> shape;
  };
  std::map<std::string, Rows> by_class;
  std::vector<std::string> order;  // first seen
  for (const TorchOpsFile& f : files) {
    append(from, f.path + " (torch ops, " + f.fingerprint() + ", " + (f.machine.cpu_model.empty() ? "?" : f.machine.cpu_model) + ", " + f.date_utc + ")");
    if (out.torch_fingerprint.empty()) out.torch_fingerprint = f.fingerprint();
    else if (out.torch_fingerprint != f.fingerprint())
      throw InputError(f.path + ": measured with " + f.fingerprint() + ", another file with " + out.torch_fingerprint +
                       ": one calibration is of one torch, BLAS and thread count");
    if (out.machine.empty()) {
      out.machine.cpu_model = f.machine.cpu_model;
      out.machine.cores = f.machine.cores;
    }
    for (const TorchOpRecord& r : f.records) {
      if (!by_class.count(r.cls)) order.push_back(r.cls);
      Rows& rows = by_class[r.cls];
      rows.x.push_back({r.calls, r.elements});
      rows.y.push_back(r.time_median_s);
      if (r.device_median_s) rows.device.push_back(*r.device_median_s);
      rows.shape.push_back(r.shape_key());
    }
  }
  report << "torch ops (" << out.torch_fingerprint << "): per class, a repetition = calls x fixed + elements x per_element;\n"
            "relative least squares; held out: each shape left out in turn (its records predicted by the fit without them):\n";
  for (const std::string& cls : order) {
    const Rows& r = by_class[cls];
    const std::set<std::string> shapes(r.shape.begin(), r.shape.end());
    if (shapes.size() < 3) {
      report << "  " << cls << ": " << shapes.size() << " shape(s), too few to fit (3 or more); left out\n";
      continue;
    }
    FittedTorchOp o;
    o.cls = cls;
    o.shapes = static_cast<int>(shapes.size());
    o.fit = fit_leave_one_group_out({"fixed_s", "s_per_element"}, r.x, r.y, r.shape);
    o.cost.fixed_s = o.fit.coef[0];
    o.cost.element_s = o.fit.coef[1];
    o.cost.cov = o.fit.cov;
    report_row(report, cls, o.fit, {"us", "ns/elem"}, {1e6, 1e9});
    if (r.device.size() == r.y.size()) fit_torch_device(cls, r.x, r.device, r.shape, o, report);
    out.torch_ops.push_back(std::move(o));
  }
}

// One NCCL all-reduce sweep: nccl-tests' log or kanscale's own (--backend nccl).
struct NcclSweep {
  int nodes = 1, ranks = 0;
  std::vector<std::pair<double, double>> bytes_busbw;  // per size: the better of in and out of place, GB/s
  std::vector<double> time_s;                          // per size: the faster of in and out of place
};

// The faster of a size's out-of-place and in-place times (us), in seconds;
// one missing (0): the other.
double faster_s(double a_us, double b_us) { return 1e-6 * (a_us > 0 && b_us > 0 ? std::min(a_us, b_us) : std::max(a_us, b_us)); }

// Every fourth size of a sweep (the 4th, 8th, ...) is held out of the fit,
// never the largest (a sweep's largest size is its best bus bandwidth) and
// none of a sweep of fewer than four sizes.
bool held_out_size(std::size_t i, std::size_t sizes) { return sizes >= 4 && i % 4 == 3 && i + 1 < sizes; }
constexpr double kLargeBytes = 32.0 * 1048576;

// The held-out sizes against the fit: with the cluster, each held-out
// size's time as the NCCL model predicts it there with the fitted bus
// bandwidths; without, each held-out size >= 32 MiB's busbw against the
// fitted bus bandwidth of its level (what the fit claims there).
std::string nccl_held_out(const std::vector<NcclSweep>& sweeps, const CalibrationFile& out, const Cluster* cluster) {
  std::vector<double> errs;
  int timed = 0, bandwidth = 0;  // sizes checked each way
  std::string skipped;
  for (const auto& sw : sweeps) {
    const std::optional<double>& fitted = sw.nodes <= 1 ? out.nccl_bus_bw_intra_Bps : out.nccl_bus_bw_inter_Bps;
    if (!fitted) continue;
    std::unique_ptr<NcclModel> model;
    // the cluster predicts a sweep only where its layout fits it
    const bool fits = cluster && sw.ranks > 1 && sw.nodes >= 1 && sw.ranks % sw.nodes == 0 && sw.nodes <= cluster->nodes &&
                      sw.ranks / sw.nodes <= cluster->gpus_per_node;
    if (cluster && !fits)
      skipped += (skipped.empty() ? "" : ", ") + std::to_string(sw.ranks) + " ranks on " + std::to_string(sw.nodes) + " node(s)";
    if (fits) {
      Calibration cal = datasheet_calibration(*cluster, Precision::fp32);
      cal.nccl_bus_bw_intra_Bps = out.nccl_bus_bw_intra_Bps;
      cal.nccl_bus_bw_inter_Bps = out.nccl_bus_bw_inter_Bps;
      model = std::make_unique<NcclModel>(*cluster, cal);
    }
    for (std::size_t i = 0; i < sw.bytes_busbw.size(); ++i) {
      if (!held_out_size(i, sw.bytes_busbw.size())) continue;
      const double bytes = sw.bytes_busbw[i].first;
      if (model && i < sw.time_s.size() && sw.time_s[i] > 0) {
        const double predicted = model->allreduce(bytes, Layout{sw.ranks, sw.nodes}).time_s;
        errs.push_back(std::fabs(predicted / sw.time_s[i] - 1));
        ++timed;
      } else if (!model && bytes >= kLargeBytes && sw.bytes_busbw[i].second > 0) {
        errs.push_back(std::fabs(*fitted * 1e-9 / sw.bytes_busbw[i].second - 1));
        ++bandwidth;
      }
    }
  }
  if (errs.empty()) return "";
  double sum = 0, most = 0;
  for (double e : errs) {
    sum += e;
    most = std::max(most, e);
  }
  std::ostringstream o;
  std::string name = cluster ? cluster->name : "";
  for (char& ch : name)
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) ch = ' ';  // it goes into a YAML comment
  o << std::setprecision(3) << errs.size() << " size(s)";
  if (timed) o << (bandwidth ? " (" + std::to_string(timed) + " every fourth" : " (every fourth)") << ", times predicted by NCCL's model on " << name
               << (bandwidth ? ")" : "");
  if (bandwidth)
    o << (timed ? " and " + std::to_string(bandwidth) + " >= 32 MiB" : " >= 32 MiB (every fourth size)") << ", busbw against the fitted bus bandwidth";
  o << ": mean |error| " << 100 * sum / errs.size() << "%, max " << 100 * most << "%";
  if (!skipped.empty()) o << "; not on " << name << "'s layout: " << skipped;
  return o.str();
}

// Collectives, nccl family: the bus bandwidth per level from NCCL sweeps
// (every fourth size held out and checked).
void fit_nccl_sweeps(const std::vector<NcclSweep>& sweeps, const Cluster* cluster, CalibrationFile& out, std::ostream& report) {
  double intra = 0, inter = 0;
  int n_intra = 0, n_inter = 0;
  for (const auto& sw : sweeps) {
    // NCCL's busbw at large sizes is its model's bus bandwidth (latency
    // amortised): take the best of the sizes >= 32 MiB, or of all sizes.
    double best_large = 0, best = 0;
    for (std::size_t i = 0; i < sw.bytes_busbw.size(); ++i) {
      if (held_out_size(i, sw.bytes_busbw.size())) continue;
      const auto& [bytes, b] = sw.bytes_busbw[i];
      best = std::max(best, b);
      if (bytes >= kLargeBytes) best_large = std::max(best_large, b);
    }
    const double v = best_large > 0 ? best_large : best;
    if (sw.nodes <= 1) {
      intra = std::max(intra, v);
      ++n_intra;
    } else {
      inter = std::max(inter, v);
      ++n_inter;
    }
  }
  out.nccl = true;
  report << "collectives (nccl): bus bandwidth per level = the best busbw at >= 32 MiB (NCCL's busbw there is its\n"
            "model's bus bandwidth); latencies stay at NCCL's constants (small-message times mix several protocols'\n"
            "base and per-hop latencies, which one sweep cannot separate)\n";
  if (n_intra) {
    out.nccl_bus_bw_intra_Bps = intra * 1e9;
    out.nccl_intra_sweeps = n_intra;
    report << "  intra-node bus bandwidth " << intra << " GB/s (" << n_intra << " log(s))\n";
  } else {
    report << "  intra-node bus bandwidth: no single-node log; stays at the cluster's value\n";
  }
  if (n_inter) {
    out.nccl_bus_bw_inter_Bps = inter * 1e9;
    out.nccl_inter_sweeps = n_inter;
    report << "  inter-node bus bandwidth " << inter << " GB/s (" << n_inter << " log(s))\n";
  } else {
    report << "  inter-node bus bandwidth: no multi-node log; stays at the cluster's value\n";
  }
  out.nccl_held_out_note = nccl_held_out(sweeps, out, cluster);
  report << "  held out: " << (out.nccl_held_out_note.empty() ? "none (no held-out size to check; fewer than 4 sizes, or none >= 32 MiB without --cluster)"
                                                               : out.nccl_held_out_note)
         << "\n";
}

}  // namespace


namespace {
// The model's outcome for a bench progress point (a point that did not time
// its work alone takes its compute time for it).
ProgressRun predict_point(const ProgressPoint& p, const MpiProgress& m, double interference) {
  return progress_run(p.alone_s, mpi_progress_steps(m, p.bytes), p.compute_alone_s > 0 ? p.compute_alone_s : p.compute_s,
                      p.poll_interval_s, interference);
}
}  // namespace

ProgressFit fit_mpi_progress(const std::vector<ProgressPoint>& points) {
  if (points.empty()) throw InputError("bench progress: no points to fit");
  // points whose work alone was timed can tell the interference
  const bool timed = std::all_of(points.begin(), points.end(), [](const ProgressPoint& p) { return p.compute_alone_s > 0; });
  auto rms_of = [&](const MpiProgress& m, double interference, bool waits, bool computes) {
    double ss = 0;
    int n = 0;
    for (const ProgressPoint& p : points) {
      if (!(p.alone_s > 0)) continue;
      const ProgressRun r = predict_point(p, m, interference);
      if (waits) ss += std::pow((r.wait_s - p.wait_s) / p.alone_s, 2), ++n;
      if (computes) ss += std::pow((r.compute_s - p.compute_s) / p.alone_s, 2), ++n;
    }
    return n > 0 ? std::sqrt(ss / n) : 0.0;
  };
  double largest = 0;
  for (const ProgressPoint& p : points) largest = std::max(largest, p.bytes);
  auto best_steps = [&](double interference, bool computes, double* rms) {
    MpiProgress best{1, 0};
    *rms = rms_of(best, interference, true, computes);
    for (int k = 1; k <= 64; ++k)
      for (int c = -1; c <= 80; ++c) {  // chunk: none, then 1 KiB x 2^(c/4)
        const MpiProgress m{k, c < 0 ? 0.0 : 1024.0 * std::pow(2.0, c / 4.0)};
        if (mpi_progress_steps(m, largest) > 4096) continue;  // finer than any measured library moves
        const double r = rms_of(m, interference, true, computes);
        if (r < *rms - 1e-12) {
          *rms = r;
          best = m;
        }
      }
    return best;
  };
  ProgressFit out;
  out.points = static_cast<int>(points.size());
  out.rms_none = rms_of(MpiProgress{1, 0}, 0.0, true, false);
  out.progress = best_steps(0.0, false, &out.rms);
  if (timed) {
    // the interference on the compute with those steps, the steps again
    // with it (waits and computes together), then the interference again
    auto best_interference = [&](const MpiProgress& m) {
      double best_i = 0, best_r = rms_of(m, 0.0, false, true);
      for (int i = 1; i <= 200; ++i) {
        const double r = rms_of(m, 0.05 * i, false, true);
        if (r < best_r - 1e-12) {
          best_r = r;
          best_i = 0.05 * i;
        }
      }
      return best_i;
    };
    double both = 0;
    out.progress = best_steps(best_interference(out.progress), true, &both);
    const double best_i = best_interference(out.progress);
    out.progress.interference = best_i;
    out.rms = rms_of(out.progress, best_i, true, false);
    out.rms_compute = rms_of(out.progress, best_i, false, true);
  }
  return out;
}

namespace {

// What fit_calibration gathers from its inputs and its parts share.
struct FitData {
  std::ostringstream report, from, progress_report;
  int concurrency = 1;
  // compute: one fit per cost class over [1, flops, bytes]
  std::map<std::string, std::vector<std::vector<double>>> X;
  std::map<std::string, std::vector<double>> Y, key, weight;  // weight: as_if_every_round
  std::vector<double> cvs;
  // memory: per shape, the peak of a one-layer training step
  std::vector<std::vector<double>> mem_x;
  std::vector<double> mem_y;
  double runtime_bytes = -1;
  std::string runtime_what;
  std::map<int, double> runtime_at;  // ranks per node -> the largest rank's runtime memory
  double interf = 0, inflight = -1;
};

// A kernels row's class: its op, cold rows (caches evicted before each
// repetition) fitted apart as "op@cold".
std::string kernel_class(const KernelRecord& r) { return r.cache == "cold" ? r.op + "@cold" : r.op; }

// A kernels row's shape: "batch,in,out,G,k".
std::string kernel_shape_key(const KernelRecord& r) {
  std::ostringstream k;
  k << r.batch << "," << r.in << "," << r.out << "," << r.grid_size << "," << r.spline_order;
  return k.str();
}

// A kernels row's features. Layers: a fixed term, FLOPs, bytes and the basis
// evaluations (B*in), the basis separately from the contractions, and the
// spline weights; the rest move memory (their FLOPs are proportional to
// their bytes): fixed and bytes. A backward's basis work per (sample, input)
// is the input gradient's (the bases' derivatives): none without it
// (kan_model.cpp's ops).
std::vector<double> kernel_features(const KernelRecord& r, const std::vector<std::pair<double, double>>& cache_probe) {
  if (!r.layer()) return {1.0, r.bytes};
  const bool no_dx = r.op == "kan_backward" && r.detail == "without input gradient";
  // A warm layer's bytes at the bandwidth of their size on the probe:
  // a layer streams its bases matrix, written then read, and runs from
  // L2 or from memory as that matrix fits. (Not the other ops: they are
  // bound by their arithmetic at these sizes; so scaled, Adam's and the
  // loss's held-out errors rose from 3-5% to 40-97% on the Xeon of
  // 3 Dec 2026, while the layers' fell from 9.7/8.7% to 8.2/7.0%.)
  const double bytes = r.cache != "cold" ? r.bytes * cache_probe_scale(cache_probe, r.bytes) : r.bytes;
  return {1.0, r.flops, bytes, no_dx ? 0.0 : static_cast<double>(r.batch) * static_cast<double>(r.in),
          static_cast<double>(r.in) * static_cast<double>(r.out) * (r.grid_size + r.spline_order)};
}

const std::vector<std::string>& kernel_feature_names(bool layer) {
  static const std::vector<std::string> layers = {"fixed_s", "s_per_flop", "s_per_byte", "s_per_element", "s_per_weight"}, other = {"fixed_s", "s_per_byte"};
  return layer ? layers : other;
}

// The kernels files: every op's rows, the memory peaks, the runtime memory,
// the machine and the cache probe.
void gather_kernels(const FitInputs& in, CalibrationFile& out, FitData& d) {
  auto& [report, from, progress_report, concurrency, X, Y, key, weight, cvs, mem_x, mem_y, runtime_bytes, runtime_what, runtime_at, interf, inflight] = d;
  // the first cache probe recorded: the calibration's, and the one every
  // warm layer row's bytes are scaled by where it has two points or more
  // (OpCost::bytes_at_working_set)
  for (const KernelsFile& kf : in.kernels)
    if (!kf.cache_probe.empty() && out.cache_probe.empty()) out.cache_probe = kf.cache_probe;
  std::map<std::string, std::vector<std::string>> shape_of;  // per class, each row's shape and file
  std::map<std::string, std::vector<std::size_t>> file_of;
  for (std::size_t fi = 0; fi < in.kernels.size(); ++fi) {
    const KernelsFile& kf = in.kernels[fi];
    concurrency = std::max(concurrency, static_cast<int>(std::lround(kf.ranks_per_node)));
    append(from, kf.path + " (" + kf.host + ", " + kf.cpu_model + ", " + kf.date_utc + ", kanscale " + kf.git_hash + ", " +
                     std::to_string(kf.ranks) + " rank(s))");
    if (out.machine.empty()) out.machine = kf.machine;
    if (kf.runtime_memory_bytes) {
      runtime_bytes = std::max(runtime_bytes, *kf.runtime_memory_bytes);
      runtime_what = kf.runtime_memory_what.value_or("");
      const int rpn = static_cast<int>(std::lround(kf.ranks_per_node));
      runtime_at[rpn] = std::max(runtime_at[rpn], *kf.runtime_memory_bytes);
    }
    for (const KernelMemoryRecord& r : kf.memory) {
      const KanShape shape{{r.in, r.out}, r.grid_size, r.spline_order};
      const auto est = kanscale_memory(shape, r.batch, DdpSettings{}, 0, 0);
      if (r.peak_bytes > 0) {  // a shape whose state came from freed blocks reads 0: nothing to learn from it
        mem_x.push_back({1.0, static_cast<double>(kan_parameter_count(shape)), est.activations_bytes + est.transient_bytes + est.batch_bytes});
        mem_y.push_back(r.peak_bytes);
      }
    }
    for (const KernelRecord& r : kf.rows) {
      const std::string key_op = kernel_class(r);
      X[key_op].push_back(kernel_features(r, out.cache_probe));
      Y[key_op].push_back(r.time_median_s);
      key[key_op].push_back(r.flops + r.bytes);
      shape_of[key_op].push_back(kernel_shape_key(r));
      file_of[key_op].push_back(fi);
      if (key_op == r.op && r.layer() && !r.unstable) cvs.push_back(r.time_cv);
    }
  }
  for (const auto& [cls, shapes] : shape_of) weight[cls] = as_if_every_round(shapes, file_of[cls]);
  if (!cvs.empty()) {
    const double cv = median(cvs);
    out.jitter_sigma = std::sqrt(std::log(1 + cv * cv));  // lognormal sigma with that CV
  }
}

void fit_interference(const FitInputs& in, CalibrationFile& out, FitData& d) {
  auto& [report, from, progress_report, concurrency, X, Y, key, weight, cvs, mem_x, mem_y, runtime_bytes, runtime_what, runtime_at, interf, inflight] = d;
  if (!in.interference.empty()) {
    // the simulator slows compute only while a collective is in flight:
    // use the compute lost per second of collective (median over files);
    // and the library's memory per byte in flight, where recorded
    std::vector<double> v, mem;
    for (const InterferenceFile& f : in.interference) {
      v.push_back(std::max(0.0, f.per_collective_second));
      if (f.inflight_memory_bytes_max && f.allreduce_bytes > 0 && f.ranks > 1)
        mem.push_back(std::max(0.0, *f.inflight_memory_bytes_max) / f.allreduce_bytes);
      append(from, f.path + " (interference)");
    }
    interf = median(v);
    out.interference = interf;
    if (!mem.empty()) inflight = median(mem);
  }
}

void fit_progress_files(const FitInputs& in, CalibrationFile& out, FitData& d) {
  auto& [report, from, progress_report, concurrency, X, Y, key, weight, cvs, mem_x, mem_y, runtime_bytes, runtime_what, runtime_at, interf, inflight] = d;
  if (!in.progress.empty()) {
    // how a non-blocking collective progresses while its ranks compute
    std::vector<ProgressPoint> pts;
    for (const ProgressFile& f : in.progress) {
      if (f.ranks < 2) throw InputError(f.path + ": measured on one rank; bench progress needs two or more under mpirun");
      pts.insert(pts.end(), f.points.begin(), f.points.end());
      append(from, f.path + " (progress, " + (f.cpu_model.empty() ? std::string() : f.cpu_model + ", ") +
                       (f.date_utc.empty() ? std::string() : f.date_utc + ", ") + std::to_string(f.ranks) + " ranks)");
    }
    const ProgressFit pf = fit_mpi_progress(pts);
    out.mpi_progress = pf.progress;
    std::ostringstream note;
    note << "wait / alone residual rms " << std::setprecision(3) << pf.rms << " over " << pf.points << " points; as one step (progress on its own) "
         << pf.rms_none;
    if (pf.progress.interference) note << "; compute / alone residual rms " << pf.rms_compute << " with the interference";
    out.mpi_progress_note = note.str();
    const double interf = pf.progress.interference.value_or(0.0);
    progress_report << "MPI progress (bench progress: launch, compute calling MPI_Test every interval, then wait):\n"
                    << "  min_steps " << pf.progress.min_steps << ", chunk "
                    << (pf.progress.chunk_bytes > 0 ? format_bytes(pf.progress.chunk_bytes) : std::string("none"))
                    << (pf.progress.interference ? ", interference " + std::to_string(interf) + " (the compute's slowdown while a step runs)" : std::string())
                    << "; " << note.str() << "\n"
                    << "  bytes       alone        poll every   compute alone  compute measured/predicted  wait measured/predicted  steps\n";
    for (const ProgressPoint& p : pts) {
      const int k = mpi_progress_steps(pf.progress, p.bytes);
      const ProgressRun r = predict_point(p, pf.progress, interf);
      progress_report << "  " << std::left << std::setw(12) << format_bytes(p.bytes) << std::setw(13) << format_time(p.alone_s) << std::setw(13)
                      << (p.poll_interval_s > 0 ? format_time(p.poll_interval_s) : std::string("never")) << std::setw(15)
                      << (p.compute_alone_s > 0 ? format_time(p.compute_alone_s) : std::string("-")) << std::setw(28)
                      << (format_time(p.compute_s) + " / " + format_time(r.compute_s)) << std::setw(25)
                      << (format_time(p.wait_s) + " / " + format_time(r.wait_s)) << k << std::right << "\n";
    }
  }
}

// compute (time = fixed + flops/flop_rate + bytes/byte_rate), warm and cold
void fit_compute(CalibrationFile& out, FitData& d) {
  auto& [report, from, progress_report, concurrency, X, Y, key, weight, cvs, mem_x, mem_y, runtime_bytes, runtime_what, runtime_at, interf, inflight] = d;
  if (!X.empty()) {
    report << "compute (time = fixed + flops/flop_rate + bytes/byte_rate; relative least squares, non-negative;\n"
              "largest 20% of each op's points held out):\n";
    if (out.cache_probe.size() >= 2)
      report << "  (warm layers: bytes x (the cache probe's fastest bandwidth / its bandwidth at their size); their\n"
                "  byte rate is the rate at the fastest level)\n";
    bool cold_header = false;
    // warm fits first, then the cold ones (std::map orders "op@cold" after "op"; split by the suffix)
    std::vector<std::string> order;
    for (const auto& kv : X)
      if (kv.first.find("@cold") == std::string::npos) order.push_back(kv.first);
    for (const auto& kv : X)
      if (kv.first.find("@cold") != std::string::npos) order.push_back(kv.first);
    for (const auto& key_name : order) {
      const auto& rows = X[key_name];
      const bool cold = key_name.find("@cold") != std::string::npos;
      FittedOp o;
      o.op = cold ? key_name.substr(0, key_name.find('@')) : key_name;
      if (cold && !cold_header) {
        report << "cold (caches evicted before each repetition):\n";
        cold_header = true;
      }
      o.layer = rows.front().size() == 5;
      const std::vector<double>& w = weight[key_name];
      o.fit = fit_relative_nonneg(kernel_feature_names(o.layer), rows, Y[key_name], hold_out_largest(key[key_name], 0.2, w), w);
      const LinearFit& f = o.fit;
      o.cost = OpCost{0, 0, 0, false};
      set_op_coefficients(o.cost, o.layer, f.coef);  // dropped features have coefficient 0: no term
      o.cost.bytes_at_working_set = o.layer && !cold && out.cache_probe.size() >= 2;
      o.cost.cov = f.cov;
      if (o.layer) {
        report_row(report, o.op, f, {"us", "ns/kFLOP", "ns/kB", "ns/elem", "ns/weight"}, {1e6, 1e12, 1e12, 1e9, 1e9});
      } else {
        report_row(report, o.op, f, {"us", "ns/kB"}, {1e6, 1e12});
      }
      (cold ? out.ops_cold : out.ops).push_back(std::move(o));
    }
  }
}

void fit_collectives(const FitInputs& in, CalibrationFile& out, FitData& d) {
  auto& [report, from, progress_report, concurrency, X, Y, key, weight, cvs, mem_x, mem_y, runtime_bytes, runtime_what, runtime_at, interf, inflight] = d;
  // kanscale's own sweeps: MPI ones fit the mpi family, NCCL ones (--backend
  // nccl) the nccl family's bus bandwidth, as nccl-tests' logs do
  std::vector<const CollectiveSweepFile*> mpi_sweeps, gloo_sweeps;
  std::vector<NcclSweep> nccl;
  for (const CollectiveSweepFile& s : in.collectives) {
    const std::string& path = s.path;
    if (s.has_metadata && s.backend == "gloo") {
      gloo_sweeps.push_back(&s);
      continue;
    }
    if (!s.has_metadata || s.backend != "nccl") {
      mpi_sweeps.push_back(&s);
      continue;
    }
    if (s.collective != SweptCollective::allreduce)
      throw InputError(path + ": an NCCL " + (s.op.empty() ? std::string("?") : s.op) +
                       " sweep: only NCCL all-reduce sweeps are fitted (the NCCL model derives its broadcast from the ring)");
    NcclSweep sw;
    sw.nodes = std::max<int>(1, static_cast<int>(std::set<std::string>(s.hosts.begin(), s.hosts.end()).size()));
    sw.ranks = s.ranks.value_or(0);
    if (!s.has_points) throw InputError(path + ": no points");
    for (std::size_t i = 0; i < s.points.size(); ++i) {
      const CollectivePoint& p = s.points[i];
      // (a torch.distributed sweep times in place only: torch's all_reduce has no out-of-place form)
      if (!p.out_of_place && !p.in_place) throw InputError(path + ": point " + std::to_string(i) + " lacks timings");
      const CollectiveTiming none;
      const CollectiveTiming& o = p.out_of_place ? *p.out_of_place : none;
      const CollectiveTiming& n = p.in_place ? *p.in_place : none;
      sw.bytes_busbw.emplace_back(p.size_bytes, std::max(p.out_of_place ? need(o.busbw_GBps, "busbw_GBps", s, i) : 0.0,
                                                         p.in_place ? need(n.busbw_GBps, "busbw_GBps", s, i) : 0.0));
      sw.time_s.push_back(faster_s(o.time_us.value_or(0), n.time_us.value_or(0)));
    }
    append(from, path + " (NCCL sweep, " + std::to_string(s.ranks.value_or(0)) + " ranks on " + std::to_string(sw.nodes) + " node(s))");
    nccl.push_back(std::move(sw));
  }
  for (const NcclTestsLog& log : in.nccl_tests) {
    append(from, log.file + " (nccl-tests, " + std::to_string(log.ranks) + " ranks on " + std::to_string(log.nodes) + " node(s)" +
                     (log.nccl_version.empty() ? "" : ", NCCL " + log.nccl_version) + ")");
    NcclSweep sw;
    sw.nodes = log.nodes;
    sw.ranks = log.ranks;
    for (const auto& r : log.rows) {
      sw.bytes_busbw.emplace_back(r.bytes, std::max(r.busbw_GBps[0], r.busbw_GBps[1]));
      sw.time_s.push_back(faster_s(r.time_us[0], r.time_us[1]));
    }
    nccl.push_back(std::move(sw));
  }
  if (!mpi_sweeps.empty()) fit_mpi_collectives(mpi_sweeps, from, out, report);
  if (!gloo_sweeps.empty()) fit_gloo_collectives(gloo_sweeps, from, out, report);
  if (!nccl.empty()) fit_nccl_sweeps(nccl, in.cluster, out, report);
}

void fit_memory(const FitInputs& in, CalibrationFile& out, FitData& d) {
  auto& [report, from, progress_report, concurrency, X, Y, key, weight, cvs, mem_x, mem_y, runtime_bytes, runtime_what, runtime_at, interf, inflight] = d;
  // ---- runtime memory at other ranks per node (their op timings are not used)
  for (const KernelsFile& kf : in.runtime_memory) {
    const int rpn = static_cast<int>(std::lround(kf.ranks_per_node));
    runtime_at[rpn] = std::max(runtime_at[rpn], kf.runtime_memory_bytes.value_or(0.0));
    runtime_what = kf.runtime_memory_what.value_or(runtime_what);
    append(from, kf.path + " (runtime memory, " + std::to_string(rpn) + " rank(s) per node)");
  }
  // runtime = at one rank + per_local_peer x (ranks per node - 1), least
  // squares over the measured counts (two counts: the line through them)
  double runtime_one = runtime_bytes, per_peer = -1;
  if (runtime_at.size() >= 2) {
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    const double n = static_cast<double>(runtime_at.size());
    for (const auto& [rpn, b] : runtime_at) {
      const double x = rpn - 1;
      sx += x, sy += b, sxx += x * x, sxy += x * b;
    }
    per_peer = std::max(0.0, (n * sxy - sx * sy) / (n * sxx - sx * sx));
    runtime_one = (sy - per_peer * sx) / n;
    if (runtime_one < 0) {  // a line through the origin instead
      runtime_one = 0;
      per_peer = sxx > 0 ? std::max(0.0, sxy / sxx) : 0.0;
    }
  } else if (!in.runtime_memory.empty()) {
    report << "memory: the --runtime-memory files were measured at the same ranks per node as the kernels: no per-rank term\n";
  }
  // ---- memory: peak = fixed + per_parameter x P + activation_factor x A
  out.runtime_what = runtime_what;
  if (per_peer >= 0) {
    std::ostringstream at;
    for (const auto& [rpn, b] : runtime_at) at << (at.tellp() > 0 ? ", " : "") << format_bytes(b) << " at " << rpn;
    out.runtime_bytes = runtime_one;
    out.runtime_per_local_peer_bytes = per_peer;
    out.runtime_measured = at.str();
    report << "memory: runtime " << format_bytes(runtime_one) << " at one rank per node + " << format_bytes(per_peer)
           << " per other rank of the node (" << runtime_what << "; measured " << at.str() << " rank(s) per node)\n";
  } else if (runtime_bytes >= 0) {
    out.runtime_bytes = runtime_bytes;
    report << "memory: runtime " << format_bytes(runtime_bytes) << " (" << runtime_what << ")\n";
  }
  if (inflight >= 0) {
    out.collective_in_flight = inflight;
    report << "memory: a non-blocking all-reduce in flight holds " << inflight << " x its bytes (median over the interference files)\n";
  }
  if (mem_y.size() >= 4) {
    const LinearFit f =
        fit_relative_nonneg({"fixed_bytes", "bytes_per_parameter", "activation_factor"}, mem_x, mem_y, hold_out_largest(mem_y, 0.2));
    out.memory_fit = f;
    report << "memory (peak of a one-layer training step = fixed + per_parameter x P + factor x the model's activation\n"
              "bytes; relative least squares, largest 20% held out):\n";
    report_row(report, "peak", f, {"KiB", "B/param", "x"}, {1.0 / 1024, 1.0, 1.0});
  } else if (!mem_y.empty() || runtime_bytes >= 0 || per_peer >= 0 || inflight >= 0) {
    report << "memory: " << mem_y.size() << " shape(s) with a peak: too few to fit; the model's own accounting stays\n";
  }
}

}  // namespace

CalibrationFit fit_calibration(const FitInputs& in, const std::string& name) {
  CalibrationFit result;
  CalibrationFile& out = result.file;
  out.name = name;
  FitData d;
  gather_kernels(in, out, d);
  fit_interference(in, out, d);
  fit_progress_files(in, out, d);
  d.report << "kanscale fit: " << name << "\n";
  fit_compute(out, d);
  // the microbenchmarks' run-to-run drift: the kernels files as rounds, each
  // warm op at a shape every file timed an item
  if (in.kernels.size() >= 2) {
    std::map<std::string, std::vector<double>> by_key;
    for (const KernelsFile& kf : in.kernels)
      for (const KernelRecord& r : kf.rows) {
        if (r.cache != "warm" || !(r.time_median_s > 0)) continue;
        std::ostringstream key;
        key << r.op << "|" << r.detail << "|" << r.batch << "|" << r.in << "|" << r.out << "|" << r.grid_size << "|" << r.spline_order << "|" << r.rank;
        by_key[key.str()].push_back(r.time_median_s);
      }
    std::vector<std::vector<double>> items;
    for (auto& [k, v] : by_key)
      if (v.size() == in.kernels.size()) items.push_back(v);
    if (!items.empty()) {
      out.kernel_drift_sigma = round_drift_sigma(items);
      d.report << "microbenchmark drift (the " << in.kernels.size() << " kernels files as rounds, " << items.size()
               << " warm op timings in each: sigma of the rounds' mean log deviation): " << *out.kernel_drift_sigma << "\n";
    }
  }
  if (!in.torch_ops.empty()) fit_torch_ops(in.torch_ops, d.from, out, d.report);
  fit_collectives(in, out, d);
  fit_memory(in, out, d);
  out.fitted_from = d.from.str();
  out.concurrency = d.concurrency;
  d.report << d.progress_report.str();
  d.report << "jitter_sigma " << out.jitter_sigma << ", interference " << d.interf << ", concurrency " << d.concurrency << " rank(s) per node\n";
  result.report = d.report.str();
  return result;
}

std::map<std::string, double> kernel_class_shape_errors(const std::vector<KernelsFile>& files) {
  struct Rows {
    std::vector<std::vector<double>> x;
    std::vector<double> y;
    std::vector<std::string> shape;
    std::vector<std::size_t> file;
  };
  std::map<std::string, Rows> by_class;
  std::vector<std::pair<double, double>> probe;  // the first file's, as the calibration's fit takes it
  for (const KernelsFile& f : files)
    if (probe.empty()) probe = f.cache_probe;
  for (std::size_t fi = 0; fi < files.size(); ++fi)
    for (const KernelRecord& r : files[fi].rows) {
      if (!(r.time_median_s > 0)) continue;
      Rows& c = by_class[kernel_class(r)];
      c.x.push_back(kernel_features(r, probe));
      c.y.push_back(r.time_median_s);
      c.shape.push_back(kernel_shape_key(r));
      c.file.push_back(fi);
    }
  std::map<std::string, double> errors;
  for (const auto& [cls, c] : by_class) {
    // to leave a shape out: 3 shapes or more, and as many points as terms without any one of them
    std::map<std::string, std::size_t> per_shape;
    for (const auto& k : c.shape) ++per_shape[k];
    const auto& names = kernel_feature_names(c.x.front().size() == 5);
    if (per_shape.size() < 3 ||
        std::any_of(per_shape.begin(), per_shape.end(), [&](const auto& kv) { return c.y.size() - kv.second < names.size(); }))
      continue;
    const LinearFit f = fit_leave_one_group_out(names, c.x, c.y, c.shape, as_if_every_round(c.shape, c.file));
    errors[cls] = f.holdout_mean_abs_rel;
  }
  return errors;
}

}  // namespace ks
