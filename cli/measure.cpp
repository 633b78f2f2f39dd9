// kanscale measure allreduce|broadcast: nccl-tests-style collective sweeps.
#include <boost/program_options.hpp>

#include <cmath>
#include <iostream>
#include <set>
#include <tuple>

#include "commands.hpp"
#include "measure/collective_sweep.hpp"
#include "measure/comm.hpp"
#include "measure/cuda_plugin.hpp"
#include "measure/kernel_bench.hpp"
#include <algorithm>
#include <cstdio>
#include <sstream>
#include "model/units.hpp"
#include "model/yaml_reader.hpp"
#include "options.hpp"

namespace po = boost::program_options;

namespace ks::cli {

namespace {
// nccl-tests' size arguments: a number with an optional K, M or G (binary),
// or a kanscale size ("256MiB").
double parse_sweep_size(const std::string& s, const char* option) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  const std::string rest = end ? std::string(end) : "";
  double f = 0;
  if (end != s.c_str() && (rest.empty() || rest == "K" || rest == "M" || rest == "G")) {
    f = rest.empty() ? 1 : rest == "K" ? 1024.0 : rest == "M" ? 1048576.0 : 1073741824.0;
    if (std::isfinite(v) && v > 0) return v * f;
  }
  try {
    const double b = parse_size_bytes(s);
    if (b > 0) return b;
  } catch (const UnitError& e) {
    throw InputError(std::string(option) + ": " + e.what() + " (or nccl-tests' form: 8, 64K, 256M, 1G)");
  }
  throw InputError(std::string(option) + ": expected a positive size such as 8, 64K, 256M or 1GiB, got \"" + s + "\"");
}
}  // namespace

int measure_kernels(const std::vector<std::string>& args, const std::string& cmdline) {
  std::string plan_file = "configs/measure/cpu-default.yaml", shapes, json, csv, backend = "cpu", resume;
  int repeats = 0, threads = 0;
  KernelPlan plan;
  std::string flush;
  po::options_description desc("measure kernels options");
  desc.add_options()
      ("help,h", "show this help")
      ("plan", po::value(&plan_file)->default_value(plan_file), "measurement plan YAML (configs/measure/)")
      ("shapes", po::value(&shapes)->value_name("B:IN:OUT:G:K,..."), "shapes instead of the plan's")
      ("repeat", po::value(&repeats), "repetitions (default: the plan's)")
      ("threads", po::value(&threads), "CPU threads per rank (default: the plan's)")
      ("backend", po::value(&backend), "cpu | cuda (default: the plan's, else cpu)")
      ("json", po::value(&json)->value_name("FILE"), "rows and metadata as JSON")
      ("csv", po::value(&csv)->value_name("FILE"), "rows as CSV (units in the column names)")
      ("resume", po::value(&resume)->value_name("FILE"), "continue an interrupted run of the same plan (its JSON file)")
      ("max-shapes", po::value(&plan.max_shapes), "stop after this many new shapes (tests of --resume)")
      ("flush", po::value(&flush), "evict the caches before every repetition by touching this much memory (e.g. 64MiB)");
  po::variables_map vm;
  if (!parse_args(args, desc, "usage: [mpirun -np P] kanscale measure kernels [--plan F | --shapes ...] --json F [--csv F]", vm))
    return 0;
  if (vm.count("backend") && backend != "cpu" && backend != "cuda")
    throw InputError("--backend: expected cpu or cuda, got \"" + backend + "\"");
  if (!resume.empty() && json.empty()) json = resume;  // continue writing the same file
  if (json.empty() && csv.empty()) throw InputError("give --json and/or --csv: the measurements are for kanscale fit");
  const int max_shapes = plan.max_shapes;
  plan = shapes.empty() ? load_kernel_plan(plan_file) : KernelPlan{};
  plan.max_shapes = max_shapes;
  if (!shapes.empty()) {
    std::stringstream ss(shapes);
    std::string item;
    while (std::getline(ss, item, ',')) {
      long long v[5];
      char tail = 0;
      if (std::sscanf(item.c_str(), "%lld:%lld:%lld:%lld:%lld%c", &v[0], &v[1], &v[2], &v[3], &v[4], &tail) != 5 ||
          *std::min_element(v, v + 5) < 1 || v[4] > 16)
        throw InputError("--shapes: expected B:IN:OUT:G:K entries (positive integers, K <= 16), got \"" + item + "\"");
      plan.shapes.push_back({v[0], v[1], v[2], static_cast<int>(v[3]), static_cast<int>(v[4])});
    }
  }
  if (vm.count("repeat")) plan.repeats = repeats;
  if (vm.count("threads")) plan.threads = threads;
  if (vm.count("backend")) plan.backend = backend;
  if (vm.count("flush")) {
    try {
      plan.flush_bytes = parse_size_bytes(flush);
    } catch (const UnitError& e) {
      throw InputError(std::string("--flush: ") + e.what());
    }
  }
  if (plan.repeats < 3) throw InputError("--repeat: at least 3 (median and spread)");
  if (plan.threads < 1) throw InputError("--threads: at least 1");
  auto comm = launched_by_mpirun() ? make_mpi_comm() : make_self_comm();
  try {
    std::vector<KernelRow> rows;
    if (plan.backend == "cuda") {
      std::string why;
      const CudaPlugin* cuda = cuda_plugin(&why);
      if (!cuda) throw InputError("backend cuda: " + why);
      rows = cuda->kernel_plan(*comm, plan, json, csv, cmdline, resume);
    } else {
      rows = run_kernel_plan(*comm, plan, json, csv, cmdline, resume);
    }
    if (comm->rank() == 0) {
      int unstable = 0;
      std::set<std::tuple<std::int64_t, std::int64_t, std::int64_t, int, int>> shapes;
      for (const auto& r : rows) {
        unstable += r.unstable;
        shapes.insert({r.shape.batch, r.shape.in, r.shape.out, r.shape.G, r.shape.k});
      }
      std::cout << "kanscale measure kernels: " << rows.size() << " measurements (" << shapes.size() << " of the plan's "
                << plan.shapes.size() << " shapes x ops, " << comm->size() << " rank(s)); " << unstable << " unstable (CV > 5%)\n";
    }
  } catch (const InputError& ex) {
    if (comm->rank() == 0) std::cerr << "kanscale: " << ex.what() << "\n";
    return 2;
  } catch (const std::exception& ex) {
    std::cerr << "kanscale measure kernels: error: " << ex.what() << " (rank " << comm->rank() << ")\n";
    comm->abort(1);
    return 1;
  }
  return 0;
}

namespace {
// The sweep on this rank's GPU over NCCL (the CUDA plugin).
int run_nccl_sweep(Comm& host, const SweepOptions& o) {
  std::string why;
  const CudaPlugin* cuda = cuda_plugin(&why);
  if (!cuda) throw InputError("--backend nccl: " + why);
  return cuda->nccl_sweep(host, o, std::cout) == 0 ? 0 : 1;
}
}  // namespace

int measure(const std::vector<std::string>& args, const std::string& cmdline) {
  if (!args.empty() && args[0] == "kernels") return measure_kernels({args.begin() + 1, args.end()}, cmdline);
  if (args.empty() || (args[0] != "allreduce" && args[0] != "broadcast")) {
    throw InputError("measure: expected what to measure: kanscale measure kernels|allreduce|broadcast [options]");
  }
  SweepOptions o;
  o.op = args[0];
  o.command_line = cmdline;
  std::string b = "8", e = "256M", backend = "mpi";
  int check = 1;
  bool check_only = false;
  po::options_description desc("measure " + o.op + " options (nccl-tests' letters)");
  desc.add_options()
      ("help,h", "show this help")
      ("minbytes,b", po::value(&b)->default_value(b), "smallest size")
      ("maxbytes,e", po::value(&e)->default_value(e), "largest size")
      ("stepfactor,f", po::value(&o.factor)->default_value(o.factor), "size factor between points")
      ("iters,n", po::value(&o.iters)->default_value(o.iters), "timed iterations per point")
      ("warmup_iters,w", po::value(&o.warmup)->default_value(o.warmup), "warm-up iterations per point")
      ("check,c", po::value(&check)->default_value(check), "verify every result (1) or not (0)")
      ("root,r", po::value(&o.root)->default_value(o.root), "broadcast root")
      ("backend", po::value(&backend)->default_value(backend), "mpi (host memory; one process: no communication) | nccl (GPU memory)")
      ("nonblocking", po::bool_switch(&o.nonblocking), "mpi: MPI_Iallreduce completed by MPI_Test polling, as the trainer does")
      ("json", po::value(&o.json)->value_name("FILE"), "results as JSON (rewritten after every point)")
      ("csv", po::value(&o.csv)->value_name("FILE"), "results as CSV (rewritten after every point)")
      ("resume", po::value(&o.resume)->value_name("FILE"), "continue the sweep in this JSON file")
      ("max-points", po::value(&o.max_points), "stop after this many new points (tests of --resume)")
      ("check-options", po::bool_switch(&check_only), "check these options and exit (validate checks a plan's sweeps so)");
  po::variables_map vm;
  if (!parse_args({args.begin() + 1, args.end()}, desc,
                  "usage: mpirun -np P kanscale measure " + o.op + " [-b 8] [-e 256M] [-f 2] [-n 20] [-w 5] [-c 1] [--json F] [--csv F] [--resume F]",
                  vm))
    return 0;
  o.min_bytes = parse_sweep_size(b, "-b");
  o.max_bytes = parse_sweep_size(e, "-e");
  if (o.max_bytes < o.min_bytes) throw InputError("-e: the largest size is below the smallest (-b)");
  if (!(o.factor >= 1)) throw InputError("-f: the size factor must be at least 1");
  if (o.iters < 1) throw InputError("-n: at least 1 iteration");
  if (o.warmup < 0) throw InputError("-w: must not be negative");
  if (check != 0 && check != 1) throw InputError("-c: 0 or 1");
  o.check = check == 1;
  if (o.max_points < 0) throw InputError("--max-points: must not be negative");
  if (!o.resume.empty() && o.json.empty()) o.json = o.resume;  // continue writing the same file
  if (backend != "mpi" && backend != "nccl") throw InputError("--backend: expected mpi or nccl, got \"" + backend + "\"");
  if (o.nonblocking && o.op != "allreduce") throw InputError("--nonblocking: all-reduce sweeps only");
  if (check_only) return 0;
  auto comm = launched_by_mpirun() ? make_mpi_comm() : make_self_comm();
  if (o.root < 0 || o.root >= comm->size()) throw InputError("-r: the root must be a rank, 0.." + std::to_string(comm->size() - 1));
  try {
    if (backend == "nccl") return run_nccl_sweep(*comm, o);
    const auto wrong = run_sweep(*comm, o, std::cout);
    return wrong == 0 ? 0 : 1;
  } catch (const InputError& ex) {
    if (comm->rank() == 0) std::cerr << "kanscale: " << ex.what() << "\n";
    return 2;
  } catch (const std::exception& ex) {
    std::cerr << "kanscale measure: error: " << ex.what() << " (rank " << comm->rank() << ")\n";
    comm->abort(1);
    return 1;
  }
}

}  // namespace ks::cli
