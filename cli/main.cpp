// kanscale: one executable, thin subcommands that parse options and call
// the libraries. Exit codes: 0 success, 2 bad input (usage, configs, data
// files), 1 a failure while running.
#include <boost/program_options.hpp>

#include <cstdlib>
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include "base/data_dir.hpp"
#include "commands.hpp"
#include "formats/provenance.hpp"
#include "kanscale/build_info.hpp"
#include "formats/yaml_reader.hpp"

namespace po = boost::program_options;

static void usage(std::ostream& os) {
  os << "usage: kanscale <command> [options]\n\n"
        "commands:\n"
        "  simulate   predict DDP training of a KAN on 1..N GPUs of a cluster (discrete-event replay)\n"
        "  train      train a KAN for real (CPU, or CUDA with NCCL); data-parallel under mpirun, like PyTorch DDP\n"
        "  measure    microbenchmarks: kernels (CPU, CUDA), PyTorch's op classes (torch-ops), all-reduce/broadcast sweeps in nccl-tests' format (MPI, NCCL, gloo)\n"
        "  calibrate  measure this machine and fit a calibration in one command (calibrate PLAN --out DIR)\n"
        "  study      a YAML topology study: scenarios x GPU counts, the four scaling dimensions as tables, plots, report\n"
        "  whatif     capacity-planning answers: whatif gpus|model|bucket-cap|cluster|change\n"
        "  fit        a calibration fitted from measurement files\n"
        "  model      query a cost model point by point (model allreduce, model layer)\n"
        "  validate   live runs beside predictions, with the error stated (validate PLAN [--emit|--collect|--published])\n"
        "  eval       predictions of a trained checkpoint for the rows of a CSV file\n"
        "  bench      benchmarks of kanscale itself (bench sim, bench kernels, bench interference, bench study)\n"
        "  import     a user's own job checked against the model (import torch-profile TRACE.json --workload W)\n\n"
        "kanscale <command> --help shows a command's options. kanscale --version prints the build.\n";
}

// The build (its provenance and switches) and the data directory it finds.
static int print_version() {
  std::cout << ks::describe(ks::provenance()) << "; MPI " << (ks::build::have_mpi ? "yes" : "no") << ", CUDA "
            << (ks::build::have_cuda ? "yes" : "no") << ", NCCL " << (ks::build::have_nccl ? "yes" : "no") << "\n";
  try {
    const ks::DataDir& d = ks::data_dir();
    std::cout << "data: " << d.path << " (from " << d.from << ")\n";
  } catch (const ks::InputError& e) {
    std::cout << "data: none (" << e.what() << ")\n";
  }
  return 0;
}

// A rank other than 0 of a job that mpirun or srun started: every rank reads
// the same command line, so a bad input is said once, by rank 0, and the
// others exit with the same code in silence.
static bool other_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"})
    if (const char* v = std::getenv(name); v && *v) return std::string(v) != "0";
  return false;
}

// A command: its options parsed and run, or one error line.
static int run_command(const std::string& cmd, const std::vector<std::string>& rest, const std::string& cmdline) {
  try {
    if (cmd == "--help" || cmd == "-h" || cmd == "help") {
      usage(std::cout);
      return 0;
    }
    if (cmd == "--version") return print_version();
    if (cmd == "simulate") return ks::cli::simulate(rest, cmdline);
    if (cmd == "bench") return ks::cli::bench(rest, cmdline);
    if (cmd == "train") return ks::cli::train(rest, cmdline);
    if (cmd == "eval") return ks::cli::eval(rest, cmdline);
    if (cmd == "measure") return ks::cli::measure(rest, cmdline);
    if (cmd == "fit") return ks::cli::fit(rest, cmdline);
    if (cmd == "model") return ks::cli::model(rest, cmdline);
    if (cmd == "validate") return ks::cli::validate(rest, cmdline);
    if (cmd == "calibrate") return ks::cli::calibrate(rest, cmdline);
    if (cmd == "study") return ks::cli::study(rest, cmdline);
    if (cmd == "whatif") return ks::cli::whatif(rest);
    if (cmd == "import") return ks::cli::import_cmd(rest, cmdline);
    std::cerr << "kanscale: unknown command '" << cmd << "'\n";
    usage(std::cerr);
    return 2;
  } catch (const ks::InputError& e) {
    if (!other_rank()) std::cerr << "kanscale: " << e.what() << "\n";
    return 2;
  } catch (const po::error& e) {
    if (!other_rank()) std::cerr << "kanscale " << cmd << ": " << e.what() << " (see kanscale " << cmd << " --help)\n";
    return 2;
  } catch (const std::bad_alloc&) {
    // the last resort: every request is estimated before it runs, so this is a bug to report
    std::cerr << "kanscale " << cmd << ": error: out of memory (a request kanscale did not estimate beforehand: please report it)\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "kanscale " << cmd << ": error: " << e.what() << "\n";
    return 1;
  } catch (...) {
    std::cerr << "kanscale " << cmd << ": error: an unexpected failure (please report it)\n";
    return 1;
  }
}

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string cmdline = "kanscale";
  for (const auto& a : args) cmdline += " " + a;
  if (args.empty()) {
    usage(std::cerr);
    return 2;
  }
  // Every argument is one line of text: a newline or another control
  // character would split an error line, a report or a job script.
  for (std::size_t i = 0; i < args.size(); ++i)
    for (unsigned char ch : args[i])
      if (ch < 0x20 || ch == 0x7f) {
        std::cerr << "kanscale: argument " << i + 1 << " holds a control character (a newline?); expected one line of text\n";
        return 2;
      }
  const std::string cmd = args[0];
  std::vector<std::string> rest(args.begin() + 1, args.end());
  return run_command(cmd, rest, cmdline);
}
