#include "validate.hpp"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kanscale/build_info.hpp"
#include "model/units.hpp"
#include "model/yaml_reader.hpp"
#include "sim/report.hpp"
#include "sim/study.hpp"

namespace ks {

std::string ValidationCase::label() const {
  std::string w;
  for (auto x : widths) w += (w.empty() ? "" : "-") + std::to_string(x);
  return "np" + std::to_string(ranks) + " [" + w + "] G" + std::to_string(grid_size) + " b" + std::to_string(batch) +
         " cap " + format_bytes(bucket_cap_bytes) + (oversubscribed ? " (oversubscribed)" : "");
}

ValidationPlan load_validation_plan(const std::string& path) {
  YamlMap m = YamlMap::load_file(path);
  ValidationPlan p;
  p.file = path;
  p.name = m.string("name");
  p.cluster_file = m.string("cluster");
  p.calibration_file = m.string("calibration");
  p.backend = m.choice_opt("backend", {"cpu", "cuda"}).value_or("cpu");
  p.steps = static_cast<int>(m.integer_opt("steps", 3).value_or(30));
  p.rounds = static_cast<int>(m.integer_opt("rounds", 1).value_or(3));
  p.spline_order = static_cast<int>(m.integer_opt("spline_order", 1).value_or(3));
  if (auto b = m.map_opt("bound")) {
    p.bound_mean_pct = b->number("mean_abs_pct", Bound::positive);
    p.bound_max_pct = b->number("max_abs_pct", Bound::positive);
    b->finish();
  }
  YamlMap c = m.map("cases");
  const auto ranks = c.integer_list("ranks", 1, 1);
  std::vector<std::int64_t> over;
  if (c.has("oversubscribed_ranks")) over = c.integer_list("oversubscribed_ranks", 1, 1);
  const auto grids = c.integer_list("grid_sizes", 1, 1);
  const auto batches = c.integer_list("batch_per_gpu", 1, 1);
  // widths: a list of lists
  if (!c.has("widths")) c.fail("widths", "missing required key");
  std::vector<std::vector<std::int64_t>> widths;
  {
    YAML::Node root = YAML::LoadFile(path);
    const YAML::Node ws = root["cases"]["widths"];
    if (!ws.IsSequence() || ws.size() == 0) c.fail("widths", "expected a list of widths lists such as [[16, 32, 1]]");
    for (std::size_t i = 0; i < ws.size(); ++i) {
      std::vector<std::int64_t> w;
      if (!ws[i].IsSequence() || ws[i].size() < 2)
        throw InputError(path + ":" + std::to_string(ws[i].Mark().line + 1) + ":" + std::to_string(ws[i].Mark().column + 1) +
                         ": key 'cases.widths[" + std::to_string(i) + "]': expected at least 2 entries");
      for (std::size_t j = 0; j < ws[i].size(); ++j) {
        std::int64_t v = 0;
        try {
          v = ws[i][j].as<std::int64_t>();
        } catch (...) {
          v = 0;
        }
        if (v < 1)
          throw InputError(path + ":" + std::to_string(ws[i][j].Mark().line + 1) + ":" + std::to_string(ws[i][j].Mark().column + 1) +
                           ": key 'cases.widths[" + std::to_string(i) + "]': expected positive integers");
        w.push_back(v);
      }
      widths.push_back(w);
    }
  }
  std::vector<double> caps;
  {
    YAML::Node root = YAML::LoadFile(path);
    const YAML::Node cs = root["cases"]["bucket_caps"];
    c.ignore("bucket_caps");
    if (!cs || !cs.IsSequence() || cs.size() == 0) c.fail("bucket_caps", "expected a list of sizes such as [\"1MiB\", \"64KiB\"]");
    for (std::size_t i = 0; i < cs.size(); ++i) {
      try {
        const double v = parse_size_bytes(cs[i].as<std::string>());
        if (!(v > 0)) throw UnitError("must be greater than zero");
        caps.push_back(v);
      } catch (const std::exception& e) {
        throw InputError(path + ":" + std::to_string(cs[i].Mark().line + 1) + ":" + std::to_string(cs[i].Mark().column + 1) +
                         ": key 'cases.bucket_caps[" + std::to_string(i) + "]': " + e.what());
      }
    }
  }
  c.finish();
  m.finish();
  auto add_all = [&](const std::vector<std::int64_t>& rs, bool oversub) {
    for (auto r : rs)
      for (const auto& w : widths)
        for (auto g : grids)
          for (auto b : batches)
            for (double cap : caps) {
              ValidationCase vc;
              vc.ranks = static_cast<int>(r);
              vc.widths = w;
              vc.grid_size = static_cast<int>(g);
              vc.batch = b;
              vc.bucket_cap_bytes = cap;
              vc.oversubscribed = oversub;
              p.cases.push_back(vc);
            }
  };
  add_all(ranks, false);
  add_all(over, true);
  // The files it names must exist before anything runs.
  for (const auto& [key, f] : {std::pair<const char*, std::string>{"cluster", p.cluster_file}, {"calibration", p.calibration_file}}) {
    if (!std::ifstream(f)) m.fail(key, "file \"" + f + "\" does not exist");
  }
  if (p.backend == "cuda") m.fail("backend", "the trainer has no CUDA backend yet; use cpu");
  return p;
}

double pct_error(double predicted, double measured) { return measured != 0 ? 100.0 * (predicted - measured) / measured : 0.0; }
double pct_of_iteration(double predicted, double measured, double iteration) {
  return iteration > 0 ? 100.0 * (predicted - measured) / iteration : 0.0;
}

Metrics median_of(const std::vector<Metrics>& rounds) {
  auto med = [&](auto get) {
    std::vector<double> v;
    for (const auto& m : rounds) v.push_back(get(m));
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n == 0 ? 0.0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  };
  Metrics m;
  m.iteration_s = med([](const Metrics& x) { return x.iteration_s; });
  m.compute_s = med([](const Metrics& x) { return x.compute_s; });
  m.comm_s = med([](const Metrics& x) { return x.comm_s; });
  m.exposed_s = med([](const Metrics& x) { return x.exposed_s; });
  m.samples_per_s = med([](const Metrics& x) { return x.samples_per_s; });
  return m;
}

std::vector<MetricSummary> summarize(const std::vector<CaseResult>& results) {
  struct Def {
    const char* name;
    double (*err)(const CaseResult&);
  };
  static const Def defs[] = {
      {"iteration time", [](const CaseResult& r) { return pct_error(r.predicted.iteration_s, r.live.iteration_s); }},
      {"compute time", [](const CaseResult& r) { return pct_error(r.predicted.compute_s, r.live.compute_s); }},
      {"communication time (% of iteration)",
       [](const CaseResult& r) { return pct_of_iteration(r.predicted.comm_s, r.live.comm_s, r.live.iteration_s); }},
      {"exposed communication (% of iteration)",
       [](const CaseResult& r) { return pct_of_iteration(r.predicted.exposed_s, r.live.exposed_s, r.live.iteration_s); }},
      {"samples/s", [](const CaseResult& r) { return pct_error(r.predicted.samples_per_s, r.live.samples_per_s); }}};
  std::vector<MetricSummary> out;
  for (const auto& d : defs) {
    MetricSummary s;
    s.metric = d.name;
    int n = 0;
    for (const auto& r : results) {
      if (r.c.oversubscribed) continue;
      const double e = std::fabs(d.err(r));
      s.mean_abs_pct += e;
      ++n;
      if (e >= s.max_abs_pct) {
        s.max_abs_pct = e;
        s.worst_case = r.c.label();
      }
    }
    if (n) s.mean_abs_pct /= n;
    out.push_back(s);
  }
  return out;
}

bool judge(const std::vector<CaseResult>& results, const ValidationPlan& plan, std::string* why) {
  const auto s = summarize(results);
  if (s[0].mean_abs_pct > plan.bound_mean_pct) {
    // the mean may still be inside the noise of the cases
    double mean_noise = 0;
    int n = 0;
    for (const auto& r : results)
      if (!r.c.oversubscribed) {
        mean_noise += r.noise_pct;
        ++n;
      }
    mean_noise = n ? mean_noise / n : 0;
    if (s[0].mean_abs_pct > mean_noise) {
      if (why) {
        std::ostringstream o;
        o << std::fixed << std::setprecision(1) << "mean |error| of the iteration time " << s[0].mean_abs_pct
          << "% exceeds the bound " << plan.bound_mean_pct << "% (mean noise floor " << mean_noise << "%)";
        *why = o.str();
      }
      return false;
    }
  }
  for (const auto& r : results) {
    if (r.c.oversubscribed) continue;
    const double e = std::fabs(pct_error(r.predicted.iteration_s, r.live.iteration_s));
    if (e > std::max(plan.bound_max_pct, r.noise_pct)) {
      if (why) {
        std::ostringstream o;
        o << std::fixed << std::setprecision(1) << r.c.label() << ": |error| " << e << "% exceeds the bound "
          << plan.bound_max_pct << "% and its noise floor " << r.noise_pct << "%";
        *why = o.str();
      }
      return false;
    }
  }
  return true;
}

namespace {

std::string write_case_workload(const ValidationCase& c, const ValidationPlan& p, const std::string& dir, int index) {
  std::ostringstream w;
  w << "name: case" << index << "\nkan:\n  widths: [";
  for (std::size_t i = 0; i < c.widths.size(); ++i) w << (i ? ", " : "") << c.widths[i];
  w << "]\n  grid_size: " << c.grid_size << "\n  spline_order: " << p.spline_order << "\ntask: teacher\nbatch_per_gpu: " << c.batch
    << "\ndataset_size: " << c.batch * c.ranks * (p.steps + 2) << "\nseed: 11\nimplementation: kanscale\nddp:\n  bucket_cap: \""
    << static_cast<long long>(c.bucket_cap_bytes) << "B\"\n  first_bucket: \"" << static_cast<long long>(std::min(c.bucket_cap_bytes, 1048576.0))
    << "B\"\n";
  const std::string path = dir + "/case" + std::to_string(index) + ".yaml";
  write_files_atomic({{path, w.str()}});
  return path;
}

Metrics run_live(const ValidationCase& c, const std::string& workload, const ValidationPlan& p, const std::string& exe,
                 const std::string& json) {
  std::ostringstream cmd;
  if (c.ranks > 1)
    cmd << "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun -np " << c.ranks << " --oversubscribe ";
  cmd << exe << " train --quiet --workload " << workload << " --steps " << p.steps << " --json " << json << " > /dev/null 2>&1";
  const int status = std::system(cmd.str().c_str());
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error("live run failed (" + cmd.str() + "), exit status " + std::to_string(status));
  std::ifstream in(json);
  const auto j = nlohmann::json::parse(in);
  const auto& s = j["summary"];
  Metrics m;
  m.iteration_s = s["iteration_time_s"]["median"];
  m.compute_s = s["compute_time_s"]["median"];
  m.comm_s = s["communication_time_s"]["median"];
  m.exposed_s = s["exposed_communication_s"]["median"];
  m.samples_per_s = s["samples_per_s"];
  return m;
}

std::string svg_scatter(const std::vector<CaseResult>& rs) {
  double mx = 0;
  for (const auto& r : rs) mx = std::max({mx, r.live.iteration_s, r.predicted.iteration_s});
  mx *= 1.1e3;  // ms
  const int W = 420, H = 420, M = 50;
  auto X = [&](double ms) { return M + (W - 2 * M) * ms / mx; };
  auto Y = [&](double ms) { return H - M - (H - 2 * M) * ms / mx; };
  std::ostringstream o;
  o << std::fixed << std::setprecision(1);
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H << "\" font-family=\"sans-serif\" font-size=\"11\">\n"
    << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    << "<line x1=\"" << X(0) << "\" y1=\"" << Y(0) << "\" x2=\"" << X(mx) << "\" y2=\"" << Y(mx) << "\" stroke=\"#999\" stroke-dasharray=\"4\"/>\n"
    << "<line x1=\"" << X(0) << "\" y1=\"" << Y(0) << "\" x2=\"" << X(mx) << "\" y2=\"" << Y(0) << "\" stroke=\"black\"/>\n"
    << "<line x1=\"" << X(0) << "\" y1=\"" << Y(0) << "\" x2=\"" << X(0) << "\" y2=\"" << Y(mx) << "\" stroke=\"black\"/>\n"
    << "<text x=\"" << W / 2 << "\" y=\"" << H - 12 << "\" text-anchor=\"middle\">measured iteration (ms)</text>\n"
    << "<text x=\"14\" y=\"" << H / 2 << "\" transform=\"rotate(-90 14," << H / 2 << ")\" text-anchor=\"middle\">predicted iteration (ms)</text>\n"
    << "<text x=\"" << X(mx) << "\" y=\"" << Y(0) + 14 << "\" text-anchor=\"end\">" << mx << "</text>\n";
  for (const auto& r : rs) {
    o << "<circle cx=\"" << X(r.live.iteration_s * 1e3) << "\" cy=\"" << Y(r.predicted.iteration_s * 1e3) << "\" r=\"4\" fill=\""
      << (r.c.oversubscribed ? "#d62728" : r.c.ranks > 1 ? "#1f77b4" : "#2ca02c") << "\"><title>" << r.c.label() << "</title></circle>\n";
  }
  o << "</svg>\n";
  return o.str();
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

}  // namespace

int run_validation(const ValidationPlan& plan, const std::string& out_dir, const std::string& exe, const std::string& cmdline) {
  const std::string work = out_dir + "/work";
  std::error_code ec;
  std::filesystem::create_directories(work, ec);
  if (ec) throw std::runtime_error(work + ": cannot create directory: " + ec.message());
  const Cluster cluster = load_cluster(plan.cluster_file);
  std::vector<CaseResult> results(plan.cases.size());
  std::vector<std::string> workloads;
  for (std::size_t i = 0; i < plan.cases.size(); ++i) {
    results[i].c = plan.cases[i];
    workloads.push_back(write_case_workload(plan.cases[i], plan, work, static_cast<int>(i)));
    // predictions: from the calibration only (microbenchmarks), never from the live cases
    const Workload w = load_workload(workloads.back());
    const Calibration k = load_calibration(plan.calibration_file, cluster, w.precision);
    StudyOptions o;
    o.gpus = {plan.cases[i].ranks};
    if (plan.cases[i].ranks > cluster.gpus_per_node * cluster.nodes) {
      Cluster big = cluster;  // oversubscribed: more ranks than the node has cores
      big.gpus_per_node = plan.cases[i].ranks;
      const ScalingPoint pt = simulate_point(big, w, k, o, plan.cases[i].ranks);
      results[i].predicted = {pt.iteration_s.median, pt.compute_s.median, pt.comm_s.median, pt.exposed_s.median, pt.samples_per_s};
    } else {
      const ScalingPoint pt = simulate_point(cluster, w, k, o, plan.cases[i].ranks);
      results[i].predicted = {pt.iteration_s.median, pt.compute_s.median, pt.comm_s.median, pt.exposed_s.median, pt.samples_per_s};
    }
  }
  // live: every case once per round, rounds one after another, so a slow
  // minute of the machine lands on all cases alike and shows up as noise
  for (int round = 0; round < plan.rounds; ++round) {
    for (std::size_t i = 0; i < plan.cases.size(); ++i) {
      results[i].rounds.push_back(run_live(plan.cases[i], workloads[i], plan, exe, work + "/live" + std::to_string(i) + ".json"));
      std::cerr << "\rround " << round + 1 << "/" << plan.rounds << ", case " << i + 1 << "/" << plan.cases.size() << "   " << std::flush;
    }
  }
  std::cerr << "\n";
  for (auto& r : results) {
    r.live = median_of(r.rounds);
    double lo = 1e300, hi = 0;
    for (const auto& m : r.rounds) {
      lo = std::min(lo, m.iteration_s);
      hi = std::max(hi, m.iteration_s);
    }
    r.noise_pct = r.live.iteration_s > 0 ? 100.0 * (hi - lo) / r.live.iteration_s : 0;
  }
  const auto summary = summarize(results);
  std::string why;
  const bool ok = judge(results, plan, &why);

  std::ostringstream table;
  table << std::fixed << std::setprecision(3);
  table << "| case | predicted iter (ms) | measured iter (ms) | error | noise | compute err | comm pred/meas (ms) | exposed pred/meas (ms) |\n"
        << "|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : results) {
    table << "| " << r.c.label() << " | " << r.predicted.iteration_s * 1e3 << " | " << r.live.iteration_s * 1e3 << " | "
          << std::setprecision(1) << pct_error(r.predicted.iteration_s, r.live.iteration_s) << "% | " << r.noise_pct << "% | "
          << pct_error(r.predicted.compute_s, r.live.compute_s) << "% | " << std::setprecision(3) << r.predicted.comm_s * 1e3 << " / "
          << r.live.comm_s * 1e3 << " | " << r.predicted.exposed_s * 1e3 << " / " << r.live.exposed_s * 1e3 << " |\n";
  }
  std::ostringstream sum;
  sum << std::fixed << std::setprecision(1) << "| metric | mean abs error | max abs error | worst case |\n|---|---|---|---|\n";
  for (const auto& s : summary) sum << "| " << s.metric << " | " << s.mean_abs_pct << "% | " << s.max_abs_pct << "% | " << s.worst_case << " |\n";
  std::ostringstream md;
  md << "# kanscale validate: " << plan.name << "\n\n"
     << "Plan `" << plan.file << "`; cluster `" << plan.cluster_file << "`; calibration `" << plan.calibration_file
     << "` (from microbenchmarks only); " << plan.rounds << " rounds of " << plan.steps
     << " steps per case, cases interleaved within each round. kanscale " << build::version << " (" << build::git_hash << ").\n\n"
     << "Errors are (predicted - measured) / measured; communication errors are stated as a share of the measured iteration. "
     << "The noise floor of a case is the spread (max - min) of its rounds' median iteration times over their median. "
     << "Oversubscribed cases (more ranks than cores) are shown but not judged.\n\n"
     << "## Summary\n\n" << sum.str() << "\nBound on the iteration time: mean " << plan.bound_mean_pct << "%, every case "
     << plan.bound_max_pct << "% or its noise floor: **" << (ok ? "met" : "exceeded: " + why) << "**\n\n"
     << "## Cases\n\n" << table.str() << "\n![predicted vs measured](predicted_vs_measured.svg)\n\n"
     << "Predicted against measured iteration time (green: 1 rank, blue: several, red: oversubscribed; dashed: equal).\n\n"
     << "![error per case, noise floor in orange](error_per_case.svg)\n\n"
     << "Iteration-time error per case, in the order of the table (orange: +- the case's noise floor).\n\n`" << cmdline << "`\n";
  nlohmann::json j = nlohmann::json::array();
  for (const auto& r : results) {
    auto mj = [](const Metrics& m) {
      return nlohmann::json{{"iteration_time_s", m.iteration_s}, {"compute_time_s", m.compute_s}, {"communication_time_s", m.comm_s},
                            {"exposed_communication_s", m.exposed_s}, {"samples_per_s", m.samples_per_s}};
    };
    nlohmann::json rounds = nlohmann::json::array();
    for (const auto& m : r.rounds) rounds.push_back(mj(m));
    j.push_back({{"case", r.c.label()}, {"ranks", r.c.ranks}, {"oversubscribed", r.c.oversubscribed}, {"predicted", mj(r.predicted)},
                 {"measured_median", mj(r.live)}, {"rounds", rounds}, {"noise_pct", r.noise_pct},
                 {"iteration_error_pct", pct_error(r.predicted.iteration_s, r.live.iteration_s)}});
  }
  write_files_atomic({{out_dir + "/report.md", md.str()},
                      {out_dir + "/results.json", nlohmann::json{{"plan", plan.file}, {"bound_met", ok}, {"why", why}, {"cases", j}}.dump(2) + "\n"},
                      {out_dir + "/predicted_vs_measured.svg", svg_scatter(results)},
                      {out_dir + "/error_per_case.svg", svg_errors(results)}});
  std::cout << "kanscale validate: " << plan.name << " (" << results.size() << " cases x " << plan.rounds << " rounds)\n\n"
            << sum.str() << "\n" << table.str() << "\nbound " << (ok ? "met" : "EXCEEDED: " + why) << "; report: " << out_dir
            << "/report.md\n";
  return ok ? 0 : 1;
}

}  // namespace ks
