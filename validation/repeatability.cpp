#include "repeatability.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "formats/measurement_records.hpp"
#include "model/limits.hpp"
#include "base/output_files.hpp"
#include "base/plot.hpp"
#include "model/statistics.hpp"
#include "formats/yaml_reader.hpp"
#include "validation/compare.hpp"

namespace ks {

namespace {

constexpr std::size_t kMaxCases = 100000;  // far above any plan's (validate runs each case in every round)

const nlohmann::json& member(const nlohmann::json& o, const char* key, const std::string& where) {
  if (!o.is_object() || !o.contains(key)) throw InputError(where + ": lacks '" + key + "'");
  return o[key];
}

std::string string_at(const nlohmann::json& o, const char* key, const std::string& where) {
  const auto& v = member(o, key, where);
  if (!v.is_string()) throw InputError(where + ": key '" + key + "': expected a string, got " + v.dump());
  return v.get<std::string>();
}

double number_or(const nlohmann::json& o, const char* key, double fallback, const std::string& where) {
  if (!o.is_object() || !o.contains(key)) return fallback;
  const auto& v = o[key];
  if (!v.is_number() || !std::isfinite(v.get<double>()))
    throw InputError(where + ": key '" + key + "': expected a number, got " + v.dump());
  return v.get<double>();
}

ErrorSummary summarize_errors(const std::vector<double>& log_errors, const std::vector<std::string>& cases) {
  ErrorSummary s;
  std::vector<double> abs_pct;
  for (std::size_t c = 0; c < log_errors.size(); ++c) {
    const double e = std::abs(100.0 * std::expm1(log_errors[c]));
    abs_pct.push_back(e);
    s.mean_abs_pct += e / static_cast<double>(log_errors.size());
    if (c == 0 || e > s.max_abs_pct) {
      s.max_abs_pct = e;
      s.worst_case = cases[c];
    }
  }
  s.p90_abs_pct = quantile(abs_pct, 0.9);
  return s;
}

std::string pct(double x) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(1) << x << "%";
  return o.str();
}

std::string signed_pct(double x) { return (x >= 0 ? "+" : "") + pct(x); }

std::string row(const ErrorSummary& s) { return pct(s.mean_abs_pct) + " / " + pct(s.max_abs_pct) + " / " + pct(s.p90_abs_pct); }

nlohmann::json to_json(const ErrorSummary& s) {
  return {{"mean_abs_pct", s.mean_abs_pct}, {"max_abs_pct", s.max_abs_pct}, {"p90_abs_pct", s.p90_abs_pct}, {"worst_case", s.worst_case}};
}

}  // namespace

ValidationRun read_validation_run(const std::string& given) {
  std::string path = given;
  std::error_code ec;
  if (std::filesystem::is_directory(given, ec)) path = given + "/results.json";
  const nlohmann::json j = read_json_file(path, "a kanscale validate results.json");
  ValidationRun r;
  r.path = path;
  r.plan = string_at(j, "plan", path);
  r.machine = j.is_object() && j.contains("machine") ? string_at(j, "machine", path) : "";
  r.mean_noise_pct = number_or(j, "mean_noise_pct", 0.0, path);
  const auto& summary = member(j, "summary", path);
  if (!summary.is_array()) throw InputError(path + ": key 'summary': expected a list, got " + summary.dump());
  for (std::size_t i = 0; i < summary.size(); ++i) {
    const std::string where = path + ": summary[" + std::to_string(i) + "]";
    if (string_at(summary[i], "metric", where) != "iteration time") continue;
    r.model_mean_abs_pct = number_or(summary[i], "mean_abs_pct", 0.0, where);
    r.model_max_abs_pct = number_or(summary[i], "max_abs_pct", 0.0, where);
  }
  const auto& cases = member(j, "cases", path);
  if (!cases.is_array()) throw InputError(path + ": key 'cases': expected a list, got " + cases.dump());
  if (cases.size() > kMaxCases)
    throw InputError(path + ": key 'cases': at most " + std::to_string(kMaxCases) + ", got " + std::to_string(cases.size()));
  std::map<std::string, std::size_t> seen;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const std::string where = path + ": cases[" + std::to_string(i) + "]";
    const std::string label = string_at(cases[i], "case", where);
    const auto& over = member(cases[i], "oversubscribed", where);
    if (!over.is_boolean()) throw InputError(where + ": key 'oversubscribed': expected true or false, got " + over.dump());
    if (over.get<bool>()) continue;
    const auto& m = member(cases[i], "measured_median", where);
    if (!m.is_object()) throw InputError(where + ": key 'measured_median': expected an object, got " + m.dump());
    const double t = number_or(m, "iteration_time_s", -1.0, where + ".measured_median");
    if (!(t > 0 && t <= kMaxMeasuredS))
      throw InputError(where + ".measured_median: key 'iteration_time_s': expected a positive time in seconds below a year, got " +
                       (m.contains("iteration_time_s") ? m["iteration_time_s"].dump() : std::string("nothing")));
    const double noise = number_or(cases[i], "noise_pct", 0.0, where);
    if (noise < 0) throw InputError(where + ": key 'noise_pct': expected a non-negative percentage, got " + std::to_string(noise));
    if (!seen.emplace(label, i).second) throw InputError(where + ": case \"" + label + "\" appears twice");
    r.cases.push_back(label);
    r.measured_s.push_back(t);
    r.noise_pct.push_back(noise);
    // the prediction, its interval and its groups (older files: what they hold)
    double pred = 0;
    if (cases[i].contains("predicted") && cases[i]["predicted"].is_object())
      pred = number_or(cases[i]["predicted"], "iteration_time_s", 0.0, where + ".predicted");
    r.predicted_s.push_back(pred);
    double lo = std::nan(""), hi = std::nan("");
    if (cases[i].contains("iteration_interval_s") && cases[i]["iteration_interval_s"].is_object()) {
      lo = number_or(cases[i]["iteration_interval_s"], "lo", lo, where + ".iteration_interval_s");
      hi = number_or(cases[i]["iteration_interval_s"], "hi", hi, where + ".iteration_interval_s");
      if (!(lo <= hi)) throw InputError(where + ": key 'iteration_interval_s': expected lo <= hi");
    }
    r.interval_lo_s.push_back(lo);
    r.interval_hi_s.push_back(hi);
    // the iteration's parts (older files: NaN)
    auto part = [&](const char* side, const char* key) {
      if (!cases[i].contains(side) || !cases[i][side].is_object() || !cases[i][side].contains(key)) return std::nan("");
      const double v = number_or(cases[i][side], key, -1.0, where + "." + side);
      if (!(v >= 0 && v <= kMaxMeasuredS))
        throw InputError(where + "." + side + ": key '" + key + "': expected a non-negative time in seconds below a year, got " + cases[i][side][key].dump());
      return v;
    };
    r.measured_compute_s.push_back(part("measured_median", "compute_time_s"));
    r.measured_exposed_s.push_back(part("measured_median", "exposed_communication_s"));
    r.predicted_compute_s.push_back(part("predicted", "compute_time_s"));
    r.predicted_exposed_s.push_back(part("predicted", "exposed_communication_s"));
    r.ranks.push_back(static_cast<int>(number_or(cases[i], "ranks", 1.0, where)));
    r.transport.push_back(cases[i].contains("transport") && cases[i]["transport"].is_string() ? cases[i]["transport"].get<std::string>() : "");
    const auto open = label.find('['), close = label.find(']');
    r.model.push_back(open != std::string::npos && close != std::string::npos && close > open ? label.substr(open, close - open + 1) : label);
  }
  if (r.cases.empty()) throw InputError(path + ": no judged case (every case oversubscribed, or none)");
  return r;
}

bool meets_plan_bound(const std::vector<double>& log_errors, const std::vector<double>& measured_s,
                      const std::vector<double>& noise_pct, const ValidationPlan& plan) {
  std::vector<CaseResult> cases(log_errors.size());
  for (std::size_t c = 0; c < cases.size(); ++c) {
    cases[c].live.iteration_s = measured_s.at(c);
    cases[c].predicted.iteration_s = measured_s[c] * std::exp(log_errors[c]);
    cases[c].noise_pct = noise_pct.at(c);
  }
  return judge(cases, plan, nullptr);
}

Repeatability repeatability(const std::vector<ValidationRun>& runs) {
  if (runs.size() < 2) throw InputError("validate --repeatability: give at least two validation runs of the plan");
  for (std::size_t k = 0; k < runs.size(); ++k)
    for (std::size_t j = 0; j < k; ++j) {
      std::error_code e1, e2;
      if (std::filesystem::weakly_canonical(runs[k].path, e1) == std::filesystem::weakly_canonical(runs[j].path, e2) && !e1 && !e2)
        throw InputError(runs[k].path + ": given twice (a run predicted by itself repeats perfectly)");
    }
  Repeatability out;
  out.cases = runs[0].cases;
  const std::size_t n = runs.size(), nc = out.cases.size();
  for (const auto& run : runs) {
    std::map<std::string, double> by_label, noise_by_label;
    for (std::size_t c = 0; c < run.cases.size(); ++c) {
      by_label[run.cases[c]] = run.measured_s[c];
      noise_by_label[run.cases[c]] = c < run.noise_pct.size() ? run.noise_pct[c] : 0.0;
    }
    if (by_label.size() != nc)
      throw InputError(run.path + ": " + std::to_string(by_label.size()) + " judged cases against " + std::to_string(nc) + " in " +
                       runs[0].path + ": not runs of the same plan");
    std::vector<double> m, noise;
    for (const auto& label : out.cases) {
      const auto it = by_label.find(label);
      if (it == by_label.end())
        throw InputError(run.path + ": lacks the case \"" + label + "\" of " + runs[0].path + ": not runs of the same plan");
      m.push_back(it->second);
      noise.push_back(noise_by_label[label]);
    }
    out.measured.push_back(std::move(m));
    out.noise_pct.push_back(std::move(noise));
  }
  // perfect predictor: var(log error) = sigma^2 against sigma^2 n / (n - 1) for the others' mean
  const double shrink = std::sqrt(static_cast<double>(n - 1) / static_cast<double>(n));
  for (std::size_t k = 0; k < n; ++k) {
    std::vector<double> e(nc);
    double shift = 0;
    for (std::size_t c = 0; c < nc; ++c) {
      double others = 0;
      for (std::size_t j = 0; j < n; ++j)
        if (j != k) others += std::log(out.measured[j][c]) / static_cast<double>(n - 1);
      e[c] = others - std::log(out.measured[k][c]);
      shift += e[c] / static_cast<double>(nc);
    }
    std::vector<double> shifted(nc), perfect(nc), perfect_shifted(nc);
    for (std::size_t c = 0; c < nc; ++c) {
      shifted[c] = e[c] - shift;
      perfect[c] = e[c] * shrink;
      perfect_shifted[c] = shifted[c] * shrink;
    }
    RunRepeatability rr;
    rr.path = runs[k].path;
    rr.shift_pct = 100.0 * std::expm1(shift);
    rr.others = summarize_errors(e, out.cases);
    rr.others_shifted = summarize_errors(shifted, out.cases);
    rr.perfect = summarize_errors(perfect, out.cases);
    rr.perfect_shifted = summarize_errors(perfect_shifted, out.cases);
    rr.others_log = e;
    rr.perfect_log = perfect;
    out.runs.push_back(rr);
  }
  return out;
}

bool write_repeatability_report(const std::vector<ValidationRun>& runs, const Repeatability& r, const ValidationPlan& plan,
                                const std::string& out_dir, const std::string& cmdline) {
  const std::string& plan_name = plan.name;
  const std::size_t n = runs.size(), nc = r.cases.size();
  // judged as validate judges the plan's bound (the noise floors each run recorded)
  bool within = true, perfect_within = true;
  for (std::size_t k = 0; k < n; ++k) {
    within = within && meets_plan_bound(r.runs[k].others_log, r.measured[k], r.noise_pct[k], plan);
    perfect_within = perfect_within && meets_plan_bound(r.runs[k].perfect_log, r.measured[k], r.noise_pct[k], plan);
  }
  std::ostringstream md, sum;
  md << "# kanscale validate: how the live measurements of " << plan_name << " repeat\n\n"
     << n << " validation runs of the plan, " << nc << " judged cases each (oversubscribed cases left out). Each run's cases are "
     << "predicted by the geometric mean of the other runs' measured median iteration times: a predictor as good as another run of "
     << "the same cases on the same machine. Errors are (prediction - measured) / measured, as in the validation report; p90 is the "
     << "nearest-rank 90th percentile of |error|, the half-width an interval centred on that prediction needs to hold 90% of the "
     << "cases. Shift: how much longer (+) or shorter the other runs took than this one, on the whole (geometric mean over cases); 'shift removed' divides it out, a predictor that "
     << "also knew the run's overall speed. 'Perfect' estimates a predictor that knew each case's expected time: the others' log "
     << "errors times sqrt((n-1)/n) = " << std::setprecision(3) << std::sqrt(static_cast<double>(n - 1) / static_cast<double>(n))
     << ", which assumes the runs scatter independently around it with one spread.\n\n"
     << "| run | machine | within-run noise floor (mean) | shift | the model in that run: mean / max | others as prediction: mean / max / "
        "p90 | shift removed | perfect (estimate) | perfect, shift removed |\n|---|---|---|---|---|---|---|---|---|\n";
  for (std::size_t k = 0; k < n; ++k) {
    const auto& rr = r.runs[k];
    md << "| `" << runs[k].path << "` | " << (runs[k].machine.empty() ? "not recorded" : runs[k].machine) << " | "
       << pct(runs[k].mean_noise_pct) << " | " << signed_pct(rr.shift_pct) << " | " << pct(runs[k].model_mean_abs_pct) << " / "
       << pct(runs[k].model_max_abs_pct) << " | " << row(rr.others) << " | " << row(rr.others_shifted) << " | " << row(rr.perfect) << " | "
       << row(rr.perfect_shifted) << " |\n";
    sum << "  run " << k + 1 << " (" << runs[k].path << "): shift " << signed_pct(rr.shift_pct) << "; others as prediction "
        << row(rr.others) << " (mean / max / p90), shift removed " << row(rr.others_shifted) << "; perfect (estimate) "
        << row(rr.perfect) << "; the model " << pct(runs[k].model_mean_abs_pct) << " / " << pct(runs[k].model_max_abs_pct) << "\n";
  }
  std::ostringstream verdict;
  if (plan.noise_factor > 0)
    verdict << "The plan's bound, judged as validate judges it: every case within max(" << pct(plan.noise_floor_pct) << ", "
            << plan.noise_factor << " x the run's mean noise floor). ";
  else
    verdict << "The plan's bound, judged as validate judges it: mean |error| within max(" << pct(plan.bound_mean_pct)
            << ", the run's mean noise floor), every case within max(" << pct(plan.bound_max_pct) << ", its noise floor). ";
  if (within)
    verdict << "A predictor as good as the other runs meets it in every run.";
  else if (!perfect_within)
    verdict << "A predictor as good as the other runs does not meet it in every run, nor does the estimate for a perfect "
               "predictor: on this machine, at this plan's rounds and steps, the bound is tighter than the measurements repeat.";
  else
    verdict << "A predictor as good as the other runs does not meet it in every run; the estimate for a perfect predictor "
               "does: only a model closer to each case's expected time than another run of it could.";
  md << "\n" << verdict.str() << "\n\nWorst cases (others as prediction): ";
  for (std::size_t k = 0; k < n; ++k) md << (k ? "; " : "") << "run " << k + 1 << ": " << r.runs[k].others.worst_case;
  md << ".\n\n![each run's measured iteration time per case against the runs' geometric mean](repeatability.svg)\n\n"
     << "| case | measured per run (ms) | max / min - 1 |\n|---|---|---|\n";
  nlohmann::json cj = nlohmann::json::array();
  PlotSpec p{"repeatability", "Measured iteration time per case, each run against the geometric mean of the runs",
             "case (in the order of the table in the report)", "measured / geometric mean of the runs - 1 (percent)", Axis::linear,
             Axis::linear, false, false, "", "One point per run and case.", {}};
  const double nan = std::nan("");
  p.series.resize(n);
  for (std::size_t k = 0; k < n; ++k) p.series[k] = {"run " + std::to_string(k + 1), {}, false, 0};
  for (std::size_t c = 0; c < nc; ++c) {
    double lo = r.measured[0][c], hi = lo, gm = 0;
    for (std::size_t k = 0; k < n; ++k) {
      lo = std::min(lo, r.measured[k][c]);
      hi = std::max(hi, r.measured[k][c]);
      gm += std::log(r.measured[k][c]) / static_cast<double>(n);
    }
    gm = std::exp(gm);
    md << "| " << r.cases[c] << " |";
    nlohmann::json ms = nlohmann::json::array();
    for (std::size_t k = 0; k < n; ++k) {
      md << (k ? ", " : " ") << std::fixed << std::setprecision(3) << r.measured[k][c] * 1e3;
      ms.push_back(r.measured[k][c]);
      p.series[k].points.push_back({static_cast<double>(c + 1), 100.0 * (r.measured[k][c] / gm - 1.0), nan, nan});
    }
    md << " | " << pct(100.0 * (hi / lo - 1.0)) << " |\n";
    cj.push_back({{"case", r.cases[c]}, {"measured_s", ms}});
  }
  p.xmin = 0.5;
  p.xmax = static_cast<double>(nc) + 0.5;
  md << "\n`" << cmdline << "`\n";
  nlohmann::json rj = nlohmann::json::array();
  for (std::size_t k = 0; k < n; ++k) {
    const auto& rr = r.runs[k];
    rj.push_back({{"results", runs[k].path}, {"machine", runs[k].machine}, {"mean_noise_pct", runs[k].mean_noise_pct},
                  {"model_mean_abs_pct", runs[k].model_mean_abs_pct}, {"model_max_abs_pct", runs[k].model_max_abs_pct},
                  {"shift_pct", rr.shift_pct}, {"others", to_json(rr.others)}, {"others_shifted", to_json(rr.others_shifted)},
                  {"perfect", to_json(rr.perfect)}, {"perfect_shifted", to_json(rr.perfect_shifted)}});
  }
  std::vector<std::pair<std::string, std::string>> files;
  files.emplace_back(out_dir + "/report.md", md.str());
  files.emplace_back(out_dir + "/repeatability.json",
                     nlohmann::json{{"plan", runs[0].plan}, {"bound_mean_pct", plan.bound_mean_pct}, {"bound_max_pct", plan.bound_max_pct},
                                    {"bound_noise_factor", plan.noise_factor}, {"bound_floor_pct", plan.noise_floor_pct},
                                    {"others_within_bound", within}, {"perfect_within_bound", perfect_within}, {"runs", rj}, {"cases", cj}}
                             .dump(2) +
                         "\n");
  files.emplace_back(out_dir + "/repeatability.gp", gnuplot_script(p));
  files.emplace_back(out_dir + "/repeatability.dat", gnuplot_data(p));
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  write_owned_files(out_dir, files);
  render_plots_or_warn("validate", out_dir, {"repeatability"});
  std::cout << "kanscale validate: how " << plan_name << "'s live measurements repeat over " << n << " runs (" << nc
            << " judged cases)\n"
            << sum.str() << verdict.str() << "\nreport: " << out_dir << "/report.md\n";
  return within;
}

}  // namespace ks
