#include "report.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "kanscale/build_info.hpp"
#include "model/output_files.hpp"
#include "model/plot.hpp"
#include "model/units.hpp"
#include "validation/schedule.hpp"

namespace ks {

PlotSpec scatter_plot(const std::vector<CaseResult>& rs) {
  PlotSpec p{"predicted_vs_measured", "Predicted against measured iteration time", "measured iteration (ms)",
             "predicted iteration (ms), with its interval", Axis::log10, Axis::log10, false, true, "predicted = measured",
             "Error bars: the prediction's interval (where the calibration has measured uncertainty).", {}};
  const char* names[] = {"1 rank", "several ranks", "oversubscribed (not judged)"};
  std::vector<PlotSeries> groups(3);
  for (int g = 0; g < 3; ++g) groups[static_cast<std::size_t>(g)] = {names[g], {}, false, 0};
  const double nan = std::nan("");
  for (const auto& r : rs) {
    const std::size_t g = r.c.oversubscribed ? 2 : r.c.ranks > 1 ? 1 : 0;
    groups[g].points.push_back({r.live.iteration_s * 1e3, r.predicted.iteration_s * 1e3, r.interval ? r.interval->lo * 1e3 : nan,
                                r.interval ? r.interval->hi * 1e3 : nan});
  }
  for (auto& g : groups)
    if (!g.points.empty()) p.series.push_back(std::move(g));
  return p;
}

std::string svg_errors(const std::vector<CaseResult>& rs) {
  const int W = 40 + 22 * static_cast<int>(rs.size()), H = 260, M = 40;
  double mx = 10;
  for (const auto& r : rs) mx = std::max({mx, std::fabs(pct_error(r.predicted.iteration_s, r.live.iteration_s)), r.noise_pct});
  auto Y = [&](double pct) { return H / 2 - (H / 2 - M) * pct / mx; };
  std::ostringstream o;
  o << std::fixed << std::setprecision(1);
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H << "\" font-family=\"sans-serif\" font-size=\"10\">\n"
    << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    << "<line x1=\"30\" y1=\"" << Y(0) << "\" x2=\"" << W << "\" y2=\"" << Y(0) << "\" stroke=\"black\"/>\n"
    << "<text x=\"2\" y=\"" << Y(mx) + 4 << "\">+" << mx << "%</text><text x=\"2\" y=\"" << Y(-mx) << "\">-" << mx << "%</text>\n";
  for (std::size_t i = 0; i < rs.size(); ++i) {
    const double e = pct_error(rs[i].predicted.iteration_s, rs[i].live.iteration_s);
    const double x = 36 + 22.0 * static_cast<double>(i);
    o << "<rect x=\"" << x << "\" y=\"" << std::min(Y(e), Y(0)) << "\" width=\"14\" height=\"" << std::fabs(Y(e) - Y(0))
      << "\" fill=\"" << (rs[i].c.oversubscribed ? "#d62728" : "#1f77b4") << "\"><title>" << rs[i].c.label() << ": " << e
      << "%</title></rect>\n"
      << "<line x1=\"" << x - 2 << "\" x2=\"" << x + 16 << "\" y1=\"" << Y(rs[i].noise_pct) << "\" y2=\"" << Y(rs[i].noise_pct)
      << "\" stroke=\"#ff7f0e\"/><line x1=\"" << x - 2 << "\" x2=\"" << x + 16 << "\" y1=\"" << Y(-rs[i].noise_pct) << "\" y2=\""
      << Y(-rs[i].noise_pct) << "\" stroke=\"#ff7f0e\"/>\n";
  }
  o << "</svg>\n";
  return o.str();
}


// One iteration of rank 0 from the live trace (the last steady one) and
// from the replay, on one time axis each starting at 0.
std::string svg_timelines(const std::vector<TraceSlice>& sim, const std::vector<TraceSlice>& live, const std::string& title) {
  double span = 1e-9;
  for (const auto* v : {&sim, &live})
    for (const auto& s : *v) span = std::max(span, s.t1_s);
  const int W = 900, lane = 18, M = 110;
  const int H = 40 + 4 * (lane + 6) + 50;
  auto X = [&](double t) { return M + (W - M - 20) * t / span; };
  auto color = [](const std::string& cat) {
    if (cat == "forward") return "#2ca02c";
    if (cat == "backward") return "#1f77b4";
    if (cat == "comm") return "#d62728";
    if (cat == "wait" || cat == "comm_wait") return "#bbbbbb";
    if (cat == "optimizer") return "#9467bd";
    if (cat == "grad_copy" || cat == "copy_back") return "#ff7f0e";
    return "#8c564b";
  };
  std::ostringstream o;
  o << std::fixed << std::setprecision(1);
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\" font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    << "<text x=\"10\" y=\"18\">" << title << "</text>\n";
  const char* lanes[4] = {"simulated compute", "simulated comm", "live compute", "live comm"};
  for (int l = 0; l < 4; ++l) {
    const double y = 34 + l * (lane + 6);
    o << "<text x=\"6\" y=\"" << y + 13 << "\">" << lanes[l] << "</text>\n";
    const auto& v = l < 2 ? sim : live;
    for (const auto& s : v) {
      if (s.track != l % 2) continue;
      o << "<rect x=\"" << X(s.t0_s) << "\" y=\"" << y << "\" width=\"" << std::max(0.5, X(s.t1_s) - X(s.t0_s)) << "\" height=\"" << lane
        << "\" fill=\"" << color(s.category) << "\"><title>" << s.name << ": " << (s.t1_s - s.t0_s) * 1e3 << " ms</title></rect>\n";
    }
  }
  const double ya = 34 + 4 * (lane + 6) + 8;
  o << "<line x1=\"" << X(0) << "\" y1=\"" << ya << "\" x2=\"" << X(span) << "\" y2=\"" << ya << "\" stroke=\"black\"/>\n"
    << "<text x=\"" << X(0) << "\" y=\"" << ya + 14 << "\">0</text><text x=\"" << X(span) << "\" y=\"" << ya + 14
    << "\" text-anchor=\"end\">" << std::setprecision(3) << span * 1e3 << " ms</text>\n";
  const char* legend[][2] = {{"forward", "#2ca02c"}, {"backward", "#1f77b4"}, {"gradient copies", "#ff7f0e"},
                             {"all-reduce", "#d62728"}, {"waiting", "#bbbbbb"}, {"Adam", "#9467bd"}, {"other", "#8c564b"}};
  for (int i = 0; i < 7; ++i) {
    const double x = M + 112.0 * i;
    o << "<rect x=\"" << x << "\" y=\"" << ya + 22 << "\" width=\"10\" height=\"10\" fill=\"" << legend[i][1] << "\"/><text x=\"" << x + 14
      << "\" y=\"" << ya + 31 << "\">" << legend[i][0] << "</text>\n";
  }
  o << "</svg>\n";
  return o.str();
}

namespace {
// Rank 0's slices of one iteration, on a time axis starting at 0.
std::vector<TraceSlice> rank0_iteration(const std::vector<TraceSlice>& all, std::int64_t iteration) {
  std::vector<TraceSlice> v;
  double t0 = 1e300;
  for (const auto& s : all) {
    if (s.rank != 0 || s.iteration != iteration) continue;
    v.push_back(s);
    t0 = std::min(t0, s.t0_s);
  }
  for (auto& s : v) {
    s.t0_s -= t0;
    s.t1_s -= t0;
  }
  return v;
}
}  // namespace

std::vector<TraceSlice> live_iteration(const nlohmann::json& trace, int steps) {
  return rank0_iteration(read_trace_slices(trace), steps - 1);  // the last steady iteration
}

std::vector<TraceSlice> simulated_iteration(const ScalingPoint& pt) {
  std::int64_t last = 0;
  for (const auto& s : pt.trace)
    if (s.rank == 0) last = std::max(last, s.iteration);
  return rank0_iteration(pt.trace, last);
}

namespace {
std::string coverage_text(const Coverage& c, const ValidationPlan& plan) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(1);
  if (c.cases == 0) {
    o << "90% intervals: none (" << (plan.interval_samples == 0 ? "interval_samples: 0" : "the calibration records no measured uncertainty")
      << ")";
  } else {
    o << "90% intervals (" << plan.interval_samples << " samples: the fits' covariances and the jitter): " << c.inside << " of " << c.cases
      << " judged cases inside, coverage " << c.pct() << "%; median half-width " << c.median_half_width_pct << "% of the prediction";
  }
  return o.str();
}
}  // namespace

bool write_validation_report(const ValidationPlan& plan, const std::string& dir, const std::string& out_dir, const std::string& cmdline,
                             const ValidationOutcome& o) {
  std::ostringstream table;
  table << std::fixed << std::setprecision(3);
  table << "| case | predicted iter (ms) | measured iter (ms) | error | noise | compute err | comm pred/meas (ms) | comm share "
           "| exposed pred/meas (ms) | buckets pred/meas (ms) | speedup pred/meas | peak memory pred/meas |\n"
           "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  int heavy = 0, judged = 0;
  for (const auto& r : o.results) {
    std::ostringstream bk;
    bk << std::fixed << std::setprecision(3);
    for (std::size_t b = 0; b < std::max(r.predicted.bucket_s.size(), r.live.bucket_s.size()) && r.c.ranks > 1; ++b)
      bk << (b ? ", " : "") << (b < r.predicted.bucket_s.size() ? r.predicted.bucket_s[b] * 1e3 : 0.0) << "/"
         << (b < r.live.bucket_s.size() ? r.live.bucket_s[b] * 1e3 : 0.0);
    table << "| " << r.c.label() << " | " << r.predicted.iteration_s * 1e3 << " | " << r.live.iteration_s * 1e3 << " | "
          << std::setprecision(1) << pct_error(r.predicted.iteration_s, r.live.iteration_s) << "% | " << r.noise_pct << "% | "
          << pct_error(r.predicted.compute_s, r.live.compute_s) << "% | " << std::setprecision(3) << r.predicted.comm_s * 1e3
          << " / " << r.live.comm_s * 1e3 << " | " << std::setprecision(0)
          << (r.live.iteration_s > 0 ? 100 * r.live.comm_s / r.live.iteration_s : 0.0) << "% | " << std::setprecision(3)
          << r.predicted.exposed_s * 1e3 << " / " << r.live.exposed_s * 1e3 << " | "
          << (r.c.ranks > 1 ? bk.str() : "-") << " | " << std::setprecision(2)
          << (r.speedup_live > 0 ? std::to_string(r.speedup_predicted).substr(0, 4) + " / " + std::to_string(r.speedup_live).substr(0, 4)
                                 : std::string("-"))
          << " | " << format_bytes(r.predicted.peak_memory_bytes) << " / " << format_bytes(r.live.peak_memory_bytes) << " |\n";
  }
  for (const auto& r : o.results) {
    if (r.c.oversubscribed) continue;
    ++judged;
    heavy += r.live.iteration_s > 0 && r.live.comm_s >= 0.3 * r.live.iteration_s;
  }
  std::ostringstream sum;
  sum << std::fixed << std::setprecision(1) << "| metric | cases | mean abs error | max abs error | worst case |\n|---|---|---|---|---|\n";
  for (const auto& s : o.summary)
    sum << "| " << s.metric << " | " << s.cases << " | " << s.mean_abs_pct << "% | " << s.max_abs_pct << "% | " << s.worst_case << " |\n";
  const double mean_noise = mean_noise_pct(o.results);
  std::ostringstream bound;
  bound << std::fixed << std::setprecision(1);
  if (plan.noise_factor > 0) {
    bound << "every case within max(" << plan.noise_floor_pct << "%, " << plan.noise_factor << " x the mean noise floor "
          << mean_noise << "%) = " << std::max(plan.noise_floor_pct, plan.noise_factor * mean_noise) << "%";
    if (plan.exposed_floor_pct > 0)
      bound << "; every multi-rank case's exposed communication within max(" << plan.exposed_floor_pct << "%, " << plan.noise_factor
            << " x its spread over the rounds) of the iteration";
  }
  else
    bound << "mean " << plan.bound_mean_pct << "%, every case " << plan.bound_max_pct << "% or its noise floor";
  std::string cal_text = plan.datasheet ? "the datasheet calibration of `" + plan.cluster_file + "`"
                         : plan.measure.enabled ? "fitted from microbenchmarks measured in every round, interleaved with the live runs (`" +
                                                      dir + "/results/calibration-*.yaml`, fit reports beside them)"
                                                : "`" + plan.calibration_file + "` (from microbenchmarks only)";
  std::ostringstream md;
  md << "# kanscale validate: " << plan.name << "\n\n"
     << "Plan `" << plan.file << "`; cluster `" << plan.cluster_file << "`; backend " << plan.backend << "; calibration " << cal_text
     << "; " << plan.rounds << " rounds of " << plan.steps << " steps per case, cases interleaved within each round"
     << (plan.measure.enabled ? " after that round's microbenchmarks" : "") << ". kanscale " << build::version << " ("
     << build::git_hash << ").\n\n"
     << (o.machine.empty() ? std::string("The calibration records no machine.")
                           : "Machine: " + o.machine + (plan.measure.enabled ? " (the fingerprint the rounds' kernel measurements recorded; the live runs ran beside them)"
                                                                               : " (where the calibration was measured)"))
     << "\n\n"
     << "Errors are (predicted - measured) / measured; communication errors are stated as a share of the measured iteration. "
     << "The noise floor of a case is the robust standard deviation (1.4826 x the median absolute deviation) of its rounds' "
        "median iteration times, over their median. "
     << "Speedups are throughputs over the same model and batch on one rank. Peak memory: the largest rank's resident set (CPU) or device "
     << "allocations (CUDA) against the calibrated memory model. Oversubscribed cases (more ranks than cores) are shown but not "
     << "judged.\n\n"
     << "## Summary\n\n" << sum.str() << "\nCommunication-heavy cases (measured communication at least 30% of the iteration): "
     << heavy << " of " << judged << " judged.\n\nBound on the iteration time: " << bound.str() << ": **"
     << (o.ok ? "met" : "exceeded: " + o.why) << "**\n\n" << coverage_text(o.coverage, plan) << "\n\n"
     << "## Cases\n\n" << table.str() << "\n![predicted vs measured](predicted_vs_measured.svg)\n\n"
     << "Predicted against measured iteration time, log axes (dotted: equal; error bars: the prediction's interval). "
     << "gnuplot renders it from predicted_vs_measured.gp and .dat beside it.\n\n"
     << "![error per case, noise floor in orange](error_per_case.svg)\n\n"
     << "Iteration-time error per case, in the order of the table (orange: +- the case's noise floor).\n\n";
  std::vector<std::pair<std::string, std::string>> files;
  const std::string tf = dir + "/" + trace_file(o.shown);
  if (!plan.cases.empty() && std::ifstream(tf)) {
    std::ifstream in(tf);
    const auto live = live_iteration(nlohmann::json::parse(in), plan.steps);
    files.emplace_back(out_dir + "/timeline.svg",
                       svg_timelines(o.sim_slices, live, "rank 0, one steady iteration: " + plan.cases[o.shown].label()));
    md << "![simulated and live timelines](timeline.svg)\n\nOne steady iteration of rank 0 of " << plan.cases[o.shown].label()
       << ", simulated (top) and live (bottom, round 1's last iteration), each from its own start.\n\n";
  }
  md << "`" << cmdline << "`\n";
  nlohmann::json j = nlohmann::json::array();
  for (const auto& r : o.results) {
    auto mj = [](const Metrics& m) {
      return nlohmann::json{{"iteration_time_s", m.iteration_s}, {"compute_time_s", m.compute_s}, {"communication_time_s", m.comm_s},
                            {"exposed_communication_s", m.exposed_s}, {"samples_per_s", m.samples_per_s},
                            {"peak_memory_bytes", m.peak_memory_bytes}, {"bucket_communication_s", m.bucket_s}};
    };
    nlohmann::json rounds = nlohmann::json::array();
    for (const auto& m : r.rounds) rounds.push_back(mj(m));
    j.push_back({{"case", r.c.label()}, {"ranks", r.c.ranks}, {"transport", r.c.transport}, {"oversubscribed", r.c.oversubscribed},
                 {"predicted", mj(r.predicted)}, {"measured_median", mj(r.live)}, {"rounds", rounds}, {"noise_pct", r.noise_pct},
                 {"iteration_error_pct", pct_error(r.predicted.iteration_s, r.live.iteration_s)},
                 {"speedup_predicted", r.speedup_predicted}, {"speedup_measured", r.speedup_live},
                 {"iteration_interval_s", r.interval ? nlohmann::json{{"lo", r.interval->lo}, {"hi", r.interval->hi}} : nlohmann::json(nullptr)}});
  }
  nlohmann::json sj = nlohmann::json::array();
  for (const auto& s : o.summary)
    sj.push_back({{"metric", s.metric}, {"cases", s.cases}, {"mean_abs_pct", s.mean_abs_pct}, {"max_abs_pct", s.max_abs_pct},
                  {"worst_case", s.worst_case}});
  files.emplace_back(out_dir + "/report.md", md.str());
  files.emplace_back(out_dir + "/results.json",
                     nlohmann::json{{"plan", plan.file}, {"bound_met", o.ok}, {"why", o.why}, {"mean_noise_pct", mean_noise},
                                    {"communication_heavy_cases", heavy}, {"judged_cases", judged}, {"machine", o.machine},
                                    {"intervals", {{"samples", plan.interval_samples}, {"level", 0.9}, {"cases", o.coverage.cases},
                                                   {"inside", o.coverage.inside}, {"coverage_pct", o.coverage.pct()},
                                                   {"median_half_width_pct", o.coverage.median_half_width_pct}}},
                                    {"summary", sj}, {"cases", j}}
                             .dump(2) +
                         "\n");
  const PlotSpec scatter = scatter_plot(o.results);
  files.emplace_back(out_dir + "/" + scatter.name + ".gp", gnuplot_script(scatter));
  files.emplace_back(out_dir + "/" + scatter.name + ".dat", gnuplot_data(scatter));
  files.emplace_back(out_dir + "/error_per_case.svg", svg_errors(o.results));
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  write_files_atomic(files);
  // the plot is rendered last: a failure costs the picture, never the run's results
  if (!in_path("gnuplot")) {
    std::cerr << "validate: gnuplot is not in PATH (Debian: gnuplot-nox): " << out_dir << "/" << scatter.name
              << ".gp is written but not rendered\n";
  } else {
    try {
      render_plots(out_dir, {scatter.name});
    } catch (const std::exception& e) {
      std::cerr << "validate: " << e.what() << " (the results are written)\n";
    }
  }
  std::cout << "kanscale validate: " << plan.name << " (" << o.results.size() << " cases x " << plan.rounds << " rounds)\n\n"
            << sum.str() << "\n" << table.str() << "\nbound " << (o.ok ? "met" : "EXCEEDED: " + o.why) << "; "
            << coverage_text(o.coverage, plan) << "; report: " << out_dir << "/report.md\n";
  return o.ok;
}

}  // namespace ks
