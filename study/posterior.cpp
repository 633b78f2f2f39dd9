#include "posterior.hpp"

#include "common/error.hpp"
#include "model/statistics.hpp"
#include "settings.hpp"

namespace ks {

void apply_posterior_settings(Cluster& c, Calibration& cal, Workload& w, StudyOptions& o,
                              const std::vector<PosteriorSettings::Entry>& entries) {
  CaseRef ref{c, cal, w, o};
  for (const auto& e : entries) {
    const Setting* s = find_setting(e.key, kUnknown);
    if (!s) throw InputError(e.where + ": not a setting a posterior can hold; expected one of: " + setting_keys(kUnknown));
    try {
      s->apply(ref, parse_setting(*s, e.value));
    } catch (const InputError& err) {
      throw InputError(e.where + ": " + err.what());
    }
  }
}

void check_posterior(const Cluster& c, const Calibration& cal, const Workload& w, const StudyOptions& o) {
  for (const auto& d : cal.posterior.draws) {
    Cluster c2 = c;
    Calibration cal2 = cal;
    Workload w2 = w;
    StudyOptions o2 = o;
    apply_posterior_settings(c2, cal2, w2, o2, d);
  }
}

StudyResult run_posterior_study(const Cluster& c, const Workload& w, const Calibration& cal, const StudyOptions& o) {
  StudyOptions one = o;
  one.interval_samples = 0;
  StudyResult r;
  {
    Cluster c2 = c;
    Calibration cal2 = cal;
    Workload w2 = w;
    StudyOptions o2 = one;
    apply_posterior_settings(c2, cal2, w2, o2, cal.posterior.point);
    r = run_study(c2, w2, cal2, o2);
  }
  const auto& draws = cal.posterior.draws;
  if (o.interval_samples <= 0 || draws.empty()) return r;
  std::vector<std::vector<double>> iter(r.points.size()), speedup(r.points.size());
  for (const auto& d : draws) {
    Cluster c2 = c;
    Calibration cal2 = cal;
    Workload w2 = w;
    StudyOptions o2 = one;
    apply_posterior_settings(c2, cal2, w2, o2, d);
    const StudyResult x = run_study(c2, w2, cal2, o2);
    for (std::size_t i = 0; i < x.points.size() && i < r.points.size(); ++i) {
      iter[i].push_back(x.points[i].iteration_s.median);
      speedup[i].push_back(x.points[i].speedup);
    }
  }
  const double a = (1 - o.interval_level) / 2;
  for (std::size_t i = 0; i < r.points.size(); ++i) {
    r.points[i].iteration_band = Band{quantile(iter[i], a), quantile(iter[i], 1 - a)};
    r.points[i].speedup_band = Band{quantile(speedup[i], a), quantile(speedup[i], 1 - a)};
  }
  r.interval_samples = static_cast<int>(draws.size());
  r.band_source = "the spread over " + std::to_string(draws.size()) + " posterior draws of calibration '" + cal.name + "' (" +
                  cal.posterior.conditioned_on +
                  (cal.posterior.band_without.empty() ? std::string() : "; the draws' inference left out the finding '" + cal.posterior.band_without + "'") +
                  "), each replayed on this workload; the point is the calibration's own";
  return r;
}

}  // namespace ks
