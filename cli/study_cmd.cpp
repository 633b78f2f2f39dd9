// kanscale study STUDY.yaml: a YAML topology study, its four dimensions
// written as tables, plots and a report into one directory that lands
// whole (study/scenario.hpp, study/study_report.hpp).
#include <boost/program_options.hpp>

#include <chrono>
#include <iostream>
#include <optional>

#include "commands.hpp"
#include "sim/report.hpp"
#include "base/output_files.hpp"
#include "options.hpp"
#include "base/plot.hpp"
#include "base/progress_line.hpp"
#include "formats/yaml_reader.hpp"
#include "measure/comm.hpp"
#include "study/result_codec.hpp"
#include "study/infer.hpp"
#include "study/scenario.hpp"
#include "study/study_report.hpp"

namespace po = boost::program_options;

namespace ks::cli {

namespace {

struct StudyArgs {
  std::string file, out;
  bool no_plots = false;
  bool infer = false;
  double max_events = 1e9;
};

// Everything is read and checked before anything runs; rank 0 alone checks
// the output directory and gnuplot.
StudySpec read_and_check(StudyArgs& a, int rank) {
  StudySpec spec = load_study(a.file, a.max_events);
  if (a.out.empty()) a.out = "study-" + spec.name;
  if (rank == 0) {
    std::vector<std::string> inputs = spec.input_paths;
    inputs.push_back(a.file);
    check_outputs_spare_inputs(inputs, {{a.out, "--out", true}});
    check_owned_dir(a.out, "--out");
    if (a.infer && !spec.infer.given)
      throw InputError("study: " + a.file + " has no infer: section (samples, predict); the inference needs one");
    if (!a.infer && !a.no_plots && !in_path("gnuplot"))
      throw InputError("study: gnuplot is not in PATH (Debian: apt-get install gnuplot-nox); or pass --no-plots to write the scripts only");
  }
  return spec;
}

// Under mpirun every rank has read the study: rank 0 reports a failure of its
// own, or says another rank could not read it (whose message is printed
// there). -1: every rank may go on; otherwise the exit code.
int ranks_verdict(Comm& comm, const std::exception_ptr& error) {
  const int rank = comm.rank();
  if (comm.size() == 1) {
    if (error) std::rethrow_exception(error);
    return -1;
  }
  const bool any_failed = comm.allreduce_max(error ? 1.0 : 0.0) > 0;
  const bool zero_failed = comm.allreduce_max(rank == 0 && error ? 1.0 : 0.0) > 0;
  if (error) {
    if (rank == 0) std::rethrow_exception(error);
    if (!zero_failed) {  // rank 0 cannot say why: this rank does
      try {
        std::rethrow_exception(error);
      } catch (const std::exception& e) {
        std::cerr << "kanscale: rank " << rank << ": " << e.what() << "\n";
      }
    }
    return 2;
  }
  if (any_failed) {
    if (rank == 0) throw InputError("study: another rank could not read the study (its message is above)");
    return 2;
  }
  return -1;
}

// This rank's contiguous block of scenarios, run; on rank 0 every rank's
// results gathered as their exact bytes (study/result_codec), so the output
// equals one process's. Other ranks get nothing back.
std::optional<std::vector<StudyResult>> run_block(const StudySpec& spec, Comm& comm) {
  const int rank = comm.rank(), ranks = comm.size();
  const std::size_t S = spec.scenarios.size();
  const std::size_t begin = S * static_cast<std::size_t>(rank) / static_cast<std::size_t>(ranks);
  const std::size_t end = S * static_cast<std::size_t>(rank + 1) / static_cast<std::size_t>(ranks);
  std::vector<StudyResult> results;
  try {
    if (ranks > 1 && rank == 0)
      std::cerr << "mpirun: " << ranks << " ranks share the " << S << " scenarios in blocks; rank 0 runs scenarios " << begin + 1
                << "-" << end << " and shows its progress\n";
    std::optional<Progress> progress;  // the other ranks work silently: one progress display
    if (rank == 0) progress.emplace(end - begin, "scenario");
    for (std::size_t i = begin; i < end; ++i) {
      if (progress) progress->starting(spec.scenarios[i].label);
      auto r = run_scenarios(spec, i, i + 1);
      results.push_back(std::move(r.front()));
      if (progress) progress->finished(spec.scenarios[i].label, "simulate");
    }
    if (progress) progress->close();
  } catch (const std::exception& e) {
    if (ranks == 1) throw;
    std::cerr << "kanscale: rank " << rank << ": " << e.what() << "\n";
    comm.abort(2);  // the others wait in the gather below
    throw;
  }
  if (ranks == 1) return results;
  const std::vector<std::string> parts = comm.gather(encode_results(results));
  if (rank != 0) return std::nullopt;
  results.clear();
  for (const std::string& p : parts)
    for (StudyResult& r : decode_results(p)) results.push_back(std::move(r));
  return results;
}

// The tables, plots, study.json and report into a fresh directory beside
// --out, marked as kanscale's and swapped in whole.
void write_study(const StudySpec& spec, const std::vector<StudyResult>& results, const StudyArgs& a, const std::string& cmdline) {
  const StudyOutputs outputs = study_outputs(spec, results, cmdline);
  const std::string staging = make_staging_dir(a.out);
  try {
    std::vector<std::pair<std::string, std::string>> files;
    for (auto& [name, content] : study_files(spec, outputs)) files.emplace_back(staging + "/" + name, std::move(content));
    write_files_atomic(files);
    if (!a.no_plots) {
      std::vector<std::string> names;
      for (const auto& p : outputs.plots) names.push_back(p.name);
      std::cerr << "rendering " << names.size() << " plot(s) with gnuplot\n";
      render_plots(staging, names);
    }
    mark_all_outputs(staging);
    commit_staging_dir(staging, a.out);
  } catch (...) {
    discard_staging_dir(staging);
    throw;
  }
  std::cout << tables_text(spec, outputs) << "\nwrote " << a.out << "/ (report.md, " << outputs.tables.size() * 2 << " tables, "
            << outputs.plots.size() << " plots" << (a.no_plots ? " as scripts" : "") << ", study.json)\n";
}

// --infer: every rank runs the same inference, simulating its share of each
// batch (study/infer); rank 0 writes the files.
void run_infer(const StudySpec& spec, const StudyArgs& a, Comm& comm, const std::string& cmdline) {
  const int rank = comm.rank(), ranks = comm.size();
  const SumAll sum_all = [&comm](const std::vector<double>& v) {
    std::vector<double> out = v;
    comm.allreduce_sum(out);
    return out;
  };
  const auto started = std::chrono::steady_clock::now();
  std::vector<InferRun> runs;
  for (double scale : {1.0, 2.0}) {
    const auto progress = [&](const std::string& what) {
      if (rank == 0) std::cerr << "infer (ranges x" << scale << "): " << what << "\n";
    };
    runs.push_back(run_inference(spec, scale, rank, ranks, sum_all, progress));
  }
  if (rank != 0) return;
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const std::string staging = make_staging_dir(a.out);
  std::string written;
  try {
    std::vector<std::pair<std::string, std::string>> files;
    for (auto& [name, content] : infer_files(spec, runs[0], runs[1], wall_s, ranks, cmdline)) {
      written += (written.empty() ? "" : ", ") + name;
      files.emplace_back(staging + "/" + name, std::move(content));
    }
    write_files_atomic(files);
    if (!a.no_plots) render_plots(staging, {"posterior_speedup"});
    mark_all_outputs(staging);
    commit_staging_dir(staging, a.out);
  } catch (...) {
    discard_staging_dir(staging);
    throw;
  }
  std::cout << "wrote " << a.out << "/ (" << written << (a.no_plots ? "" : ", posterior_speedup.png") << ") in "
            << printf_number("%.1f", wall_s) << " s on " << ranks << " rank(s)\n";
}

}  // namespace

int study(const std::vector<std::string>& args, const std::string& cmdline) {
  StudyArgs a;
  po::options_description desc("study options");
  desc.add_options()
      ("help,h", "show this help")
      ("study", po::value(&a.file)->value_name("FILE"), "the study file (configs/studies/)")
      ("out", po::value(&a.out)->value_name("DIR"), "output directory (default: study-NAME); replaced whole when it holds only an earlier output of kanscale")
      ("infer", po::bool_switch(&a.infer), "approximate Bayesian computation over the study's unknowns, conditioned on its published findings (the study's infer: section); writes posterior.yaml, findings.csv, loo.csv, predictive.csv, sensitivity.csv, calibration.yaml (the machine's settings as a posterior calibration for simulate), the posterior_speedup plot and report.md")
      ("no-plots", po::bool_switch(&a.no_plots), "write the plots' .gp scripts and data but do not run gnuplot")
      ("max-events", po::value(&a.max_events)->default_value(a.max_events, "1e9"),
       "refuse a study estimated to replay more events than this, all scenarios and interval samples together");
  po::positional_options_description pos;
  pos.add("study", 1);
  po::variables_map vm;
  if (!parse_args(args, desc,
                  "usage: kanscale study STUDY.yaml [--out DIR] [--no-plots] [--infer]\n"
                  "  runs every scenario of the study (clusters x sweep values, each over the GPU counts) and writes\n"
                  "  strong_scaling, weak_scaling, communication and model_size as CSV and JSON, gnuplot plots\n"
                  "  (.gp, .dat, .svg, .png), study.json and report.md into DIR",
                  vm, &pos))
    return 0;
  if (a.file.empty()) throw InputError("study: give a study file: kanscale study configs/studies/default.yaml");
  if (!(a.max_events > 0)) throw InputError("--max-events: expected a positive number, got " + printf_number("%g", a.max_events));
  // Under mpirun the scenarios are split over the ranks in contiguous blocks
  // and gathered on rank 0, which writes everything.
  std::unique_ptr<Comm> comm = launched_by_mpirun() ? make_mpi_comm() : make_self_comm();
  StudySpec spec;
  std::exception_ptr error;
  try {
    spec = read_and_check(a, comm->rank());
  } catch (...) {
    error = std::current_exception();
  }
  if (const int rc = ranks_verdict(*comm, error); rc >= 0) return rc;
  if (a.infer) {
    run_infer(spec, a, *comm, cmdline);
    return 0;
  }
  const auto results = run_block(spec, *comm);
  if (results) write_study(spec, *results, a, cmdline);
  return 0;
}

}  // namespace ks::cli
