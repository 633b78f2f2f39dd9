#include "validate.hpp"
#include "base/output_files.hpp"
#include "base/data_dir.hpp"
#include "formats/input_file.hpp"
#include "formats/measurement_records.hpp"
#include "formats/config_files.hpp"

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
#include "model/units.hpp"
#include "formats/yaml_reader.hpp"
#include "sim/report.hpp"
#include "sim/point.hpp"
#include "measure/machine_info.hpp"
#include "measure/torch_run.hpp"
#include "validation/report.hpp"
#include "validation/schedule.hpp"
#include "validation/verdict.hpp"

namespace ks {

namespace {
// What a PyTorch run's provenance says it ran on: the machine, torch, its BLAS
// and the backend ("" when the file does not say).
std::string torch_run_environment(const std::string& path) {
  std::ifstream in(path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const std::exception&) {
    return "";
  }
  if (!j.is_object() || !j.contains("provenance") || !j["provenance"].is_object()) return "";
  const auto& p = j["provenance"];
  auto text = [&](const nlohmann::json& o, const char* key) { return o.contains(key) && o[key].is_string() ? o[key].get<std::string>() : std::string("?"); };
  std::string machine = "?";
  if (p.contains("machine") && p["machine"].is_object()) {
    const auto& m = p["machine"];
    machine = text(m, "cpu_model") + (m.contains("cores") && m["cores"].is_number_integer() ? ", " + std::to_string(m["cores"].get<int>()) + " cores" : "");
  }
  return "PyTorch DDP (" + text(p, "backend") + ") on " + machine + "; torch " + text(p, "torch") + ", BLAS " +
         std::filesystem::path(text(p, "blas")).filename().string() + ", Python " + text(p, "python") + " (case 0, round 1)";
}
// The word after `flag` on a recorded command line ("" when absent).
std::string word_after(const std::string& command_line, const std::string& flag) {
  std::istringstream in(command_line);
  std::string w, prev;
  while (in >> w) {
    if (prev == flag) return w;
    prev = w;
  }
  return "";
}

// The directory is the plan's as --emit wrote it: the same plan text, the
// case files unedited. (A directory of an older kanscale has no record: said
// once, then the results' own provenance is all there is to check.)
void check_emitted_record(const ValidationPlan& plan, const std::string& dir) {
  const std::string path = dir + "/" + kEmittedRecord;
  if (!std::ifstream(path)) {
    std::cerr << "kanscale validate: warning: " << dir << " has no " << kEmittedRecord
              << " (emitted by an older kanscale): the plan and the case files are not checked against it\n";
    return;
  }
  const nlohmann::json rec = read_json_file(path, "kanscale validate --emit's record");
  const std::string plan_text = read_input_file(resolve_given_path(plan.file), "a validation plan");
  if (!rec.is_object() || !rec.contains("plan_digest") || !rec["plan_digest"].is_string() || !rec.contains("cases") || !rec["cases"].is_array())
    throw InputError(path + ": not a record kanscale validate --emit wrote (plan_digest, cases)");
  if (rec["plan_digest"].get<std::string>() != content_digest(plan_text))
    throw InputError(dir + " was emitted from another plan than " + plan.file + " (or the plan changed since): its results are not this plan's; "
                     "emit it again into a new directory");
  if (rec["cases"].size() != plan.cases.size())
    throw InputError(dir + ": emitted with " + std::to_string(rec["cases"].size()) + " cases, the plan has " + std::to_string(plan.cases.size()));
  for (std::size_t i = 0; i < plan.cases.size(); ++i) {
    const std::string file = case_file(i);
    const auto& c = rec["cases"][i];
    const std::string digest = c.is_object() && c.contains("digest") && c["digest"].is_string() ? c["digest"].get<std::string>() : "";
    if (!std::ifstream(dir + "/" + file)) continue;  // gone: its case has no results to judge (listed as missing)
    if (digest != content_digest(read_input_file(dir + "/" + file, "an emitted case")))
      throw InputError(dir + "/" + file + " (" + plan.cases[i].label() + ") was edited after --emit: its results are not the plan's case");
  }
}

// A live result (`j`, read from `path`) is case i's: its provenance names the
// case's workload file, its ranks and the plan's steps, where it records them.
void check_case_result(const ValidationPlan& plan, std::size_t i, const nlohmann::json& j, const std::string& path) {
  if (!j.is_object() || !j.contains("provenance") || !j["provenance"].is_object()) return;
  const auto& p = j["provenance"];
  const std::string cmd = p.contains("command_line") && p["command_line"].is_string() ? p["command_line"].get<std::string>() : "";
  std::string workload = word_after(cmd, "--workload");
  if (p.contains("workload") && p["workload"].is_object() && p["workload"].contains("file") && p["workload"]["file"].is_string())
    workload = p["workload"]["file"].get<std::string>();
  long long ranks = -1, steps = -1;
  if (p.contains("ranks") && p["ranks"].is_number_integer()) ranks = p["ranks"].get<long long>();
  else if (const std::string r = word_after(cmd, "--ranks"); !r.empty()) ranks = std::atoll(r.c_str());
  if (j.contains("summary") && j["summary"].is_object() && j["summary"].contains("steps") && j["summary"]["steps"].is_number_integer())
    steps = j["summary"]["steps"].get<long long>();
  else if (const std::string st = word_after(cmd, "--steps"); !st.empty()) steps = std::atoll(st.c_str());
  const std::string want = case_file(i);
  const ValidationCase& vc = plan.cases[i];
  std::string why;
  if (!workload.empty() && workload != want) why = "ran " + workload + ", not " + want;
  else if (ranks >= 0 && ranks != vc.ranks) why = "ran " + std::to_string(ranks) + " rank(s), not " + std::to_string(vc.ranks);
  else if (steps >= 0 && steps != plan.steps) why = "ran " + std::to_string(steps) + " steps, the plan " + std::to_string(plan.steps);
  if (!why.empty()) throw InputError(path + ": not case " + std::to_string(i) + " (" + vc.label() + ") of " + plan.file + ": its provenance says it " + why);
}
}  // namespace

int collect_validation(const ValidationPlan& plan, const std::string& dir, const std::string& out_dir, const std::string& cmdline) {
  const Cluster cluster = load_cluster(plan.cluster_file);
  {
    struct stat st {};
    if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) throw InputError(dir + ": no such directory (written by --emit?)");
  }
  check_emitted_record(plan, dir);
  // What the jobs left. The calibration's own jobs must all have run (no
  // prediction without them); of the cases, those with every round are
  // judged, the rest listed as missing, and the run is then incomplete.
  std::vector<std::string> missing_calibration, missing;
  std::map<std::string, std::size_t> case_of;  // a live output -> its case
  for (std::size_t i = 0; i < plan.cases.size(); ++i)
    for (int r = 0; r < plan.rounds; ++r) case_of[live_file(i, r)] = i;
  std::vector<bool> complete(plan.cases.size(), true);
  for (const auto& round : make_schedule(plan))
    for (const auto& j : round) {
      if (std::ifstream(dir + "/" + j.output)) continue;
      const auto c = case_of.find(j.output);
      if (c != case_of.end()) complete[c->second] = false;
      (c != case_of.end() ? missing : missing_calibration).push_back(j.output + " (" + j.what + ")");
    }
  if (!missing_calibration.empty()) {
    std::string list;
    for (std::size_t i = 0; i < missing_calibration.size() && i < 5; ++i) list += (i ? ", " : "") + missing_calibration[i];
    std::cout << "kanscale validate: incomplete: 0 of " << plan.cases.size() << " cases judged: the calibration's job output(s) "
              << list << (missing_calibration.size() > 5 ? ", ..." : "") << " missing (" << missing_calibration.size() << " in all, "
              << missing.size() << " of the cases'); see " << dir << "/results/steps.tsv\n";
    return 1;
  }
  if (plan.measure.enabled) fit_measured(plan, dir);
  std::vector<CaseResult> results;
  const std::size_t shown = timeline_case(plan);
  std::vector<TraceSlice> sim_slices;
  std::string machine;
  for (std::size_t i = 0; i < plan.cases.size(); ++i) {
    if (!complete[i]) continue;
    const ValidationCase& vc = plan.cases[i];
    CaseResult& res = results.emplace_back();
    res.c = vc;
    const Workload w = load_workload(dir + "/" + case_file(i));
    // predictions: from the calibration only (microbenchmarks or datasheet), never from the live cases
    const Calibration cal = with_shipped_defaults(plan.datasheet ? datasheet_calibration(cluster, w.precision)
                                                                   : load_calibration(calibration_label(plan, dir, vc), cluster, w.precision),
                                                    cluster, w);
    StudyOptions o;
    o.gpus = {vc.ranks};
    o.trace = i == shown;
    o.trace_ranks = {0};
    o.interval_samples = plan.interval_samples;
    if (machine.empty() && !cal.machine.empty()) machine = describe(cal.machine);
    Cluster cl = cluster;
    if (vc.ranks > cluster.gpus_per_node * cluster.nodes) cl.gpus_per_node = vc.ranks;  // oversubscribed
    const ScalingPoint pt = run_study(cl, w, cal, o).points.front();
    res.interval = pt.iteration_band;
    Metrics& m = res.predicted;
    m = {pt.iteration_s.median, pt.compute_s.median, pt.comm_s.median, pt.exposed_s.median, pt.samples_per_s, pt.memory.peak_bytes, {}};
    for (const auto& b : pt.steady_plan) m.bucket_s.push_back(b.end_s - b.start_s);
    if (i == shown) sim_slices = simulated_iteration(pt);
    for (int r = 0; r < plan.rounds; ++r) {
      const std::string path = dir + "/" + live_file(i, r);
      const nlohmann::json run = read_live_run(path);
      check_case_result(plan, i, run, path);
      res.rounds.push_back(live_metrics(run, path, plan.backend));
    }
  }
  for (auto& r : results) {
    r.live = median_of(r.rounds);
    // noise floors: the robust standard deviation of the rounds' medians,
    // over the median iteration (one round: none)
    r.noise_pct = 100.0 * round_spread(r.rounds, &Metrics::iteration_s) / std::max(1e-300, r.live.iteration_s);
    r.exposed_noise_pct = 100.0 * round_spread(r.rounds, &Metrics::exposed_s) / std::max(1e-300, r.live.iteration_s);
  }
  attach_speedups(results);
  const auto summary = summarize(results);
  std::string why;
  const bool ok = judge(results, plan, &why);
  std::size_t first_complete = 0;
  while (first_complete < complete.size() && !complete[first_complete]) ++first_complete;
  const std::string live_runs = plan.implementation == "pytorch" && first_complete < plan.cases.size()
                                    ? torch_run_environment(dir + "/" + live_file(first_complete, 0))
                                    : "";
  ValidationOutcome outcome{results, summary, ok, why, shown, sim_slices, interval_coverage(results), machine, live_runs, missing,
                            plan.cases.size()};
  return write_validation_report(plan, dir, out_dir, cmdline, outcome) ? 0 : 1;
}

int run_validation(const ValidationPlan& plan, const std::string& out_dir, const std::string& exe, const std::string& cmdline) {
  if (plan.cases.empty()) return published_comparison(plan, out_dir, cmdline);
  // live runs: say when the machine is busy, or is not the calibration's
  if (!plan.calibration_file.empty()) {
    const Calibration cal = load_calibration(plan.calibration_file, load_cluster(plan.cluster_file), Precision::fp32);
    if (plan.implementation == "pytorch") {  // before any case runs
      Workload w;
      w.name = "the plan's cases";
      w.file = plan.file + " (implementation: pytorch)";
      check_calibration_covers(w, cal, plan.calibration_file);
    }
    if (const std::string m = machine_mismatch(cal.machine, this_machine("none", "")); plan.backend == "cpu" && !m.empty())
      std::cerr << "kanscale: warning: " << plan.calibration_file << ": " << m << "\n";
  }
  const auto rounds = make_schedule(plan);
  check_local_ranks(plan, rounds);
  if (plan.implementation == "pytorch") {
    // the interpreter every case's kanscale train will find, probed once before any job starts
    const TorchEnv env = probe_torch(resolve_python(""));
    if (plan.backend == "cuda" && !env.cuda)
      throw InputError(plan.file + ": key 'backend': cuda runs PyTorch over nccl, but " + env.python + "'s torch " + env.torch +
                       " sees no CUDA device (Debian's python3-torch is CPU-only; use backend: cpu for gloo)");
    std::cerr << "kanscale validate: PyTorch cases on " << env.python << " (" << env.fingerprint() << ")\n";
  }
  if (const std::string w = busy_warning("validation starts"); !w.empty()) std::cerr << w << "\n";
  const std::string dir = out_dir + "/work";
  record_outputs(out_dir, {});  // before work/ exists: an interrupted run leaves a directory kanscale knows as its own
  prepare_dir(plan, dir);
  run_schedule(rounds, dir, exe);
  const int rc = collect_validation(plan, dir, out_dir, cmdline);
  if (plan.published.enabled) published_comparison(plan, out_dir + "/published", cmdline);
  return rc;
}

int run_repeated_validation(const ValidationPlan& plan, const std::string& out_dir, const std::string& exe, const std::string& cmdline) {
  record_outputs(out_dir, {});
  std::vector<ValidationRun> runs;
  for (int k = 1; k <= plan.runs; ++k) {
    const std::string run_dir = out_dir + "/run-" + std::to_string(k);
    check_owned_dir(run_dir, "--out's run-" + std::to_string(k));
    std::cerr << "kanscale validate: run " << k << " of " << plan.runs << " (" << run_dir << ")\n";
    run_validation(plan, run_dir, exe, cmdline);  // each run's own bound is reported there; the verdict judges them together
    runs.push_back(read_validation_run(run_dir));
  }
  return write_repeat_verdict(plan, runs, out_dir,
                              std::to_string(plan.runs) + " runs of the whole plan, calibration included (run-1 ... run-" +
                                  std::to_string(plan.runs) + ")");
}

int write_repeat_verdict(const ValidationPlan& plan, const std::vector<ValidationRun>& runs, const std::string& out_dir,
                         const std::string& what) {
  const RepeatVerdict v = judge_repeat_runs(runs, plan);
  nlohmann::json crit = nlohmann::json::array();
  for (const auto& c : v.criteria) crit.push_back({{"criterion", c.name}, {"pass", c.pass}, {"detail", c.detail}});
  nlohmann::json run_paths = nlohmann::json::array();
  for (const auto& r : runs) run_paths.push_back(r.path);
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& g : v.groups) {
    nlohmann::json e = {{"group", g.group}, {"bias_pct", g.bias_pct}, {"case_runs", g.case_runs}, {"with_interval", g.with_interval}, {"inside", g.inside}};
    if (g.has_parts) {
      e["compute_pts"] = g.compute_pts;
      e["exposed_communication_pts"] = g.exposed_pts;
    }
    groups.push_back(e);
  }
  const nlohmann::json j = {{"plan", plan.file}, {"runs", run_paths}, {"criteria", crit}, {"groups", groups}, {"others_mean_pct", v.others_mean_pct},
                            {"others_p90_pct", v.others_p90_pct}, {"inconclusive", v.inconclusive}, {"passed", v.passed()},
                            {"exit_code", v.exit_code()}};
  const std::string md = "# Repeat-run verdict: " + plan.name + " (" + plan.file + ")\n\n" + what +
                         ", judged against how far this machine's own runs repeat (docs/validating.md).\n\n```\n" + v.text() + "```\n";
  write_owned_files(out_dir, {{out_dir + "/verdict.json", j.dump(2) + "\n"}, {out_dir + "/verdict.md", md}});
  std::cout << "kanscale validate: repeat-run verdict over " << runs.size() << " runs of " << plan.file << "\n" << v.text();
  return v.exit_code();
}

}  // namespace ks
