// kanscale measure allreduce|broadcast: nccl-tests-style collective sweeps.
#include <boost/program_options.hpp>

#include <cmath>
#include <iostream>
#include <set>
#include <tuple>

#include "commands.hpp"
#include "measure/machine_info.hpp"
#include "measure/collective_sweep.hpp"
#include "measure/comm.hpp"
#include "measure/cuda_plugin.hpp"
#include "measure/kernel_bench.hpp"
#include "measure/sweep_options.hpp"
#include "measure/torch_run.hpp"
#include <algorithm>
#include <cstdio>
#include <sstream>
#include "base/output_files.hpp"
#include "formats/measurement_records.hpp"
#include "model/calibration_fit.hpp"
#include "model/cost.hpp"
#include "model/kan_model.hpp"
#include "model/limits.hpp"
#include "model/units.hpp"
#include "formats/provenance.hpp"
#include "formats/yaml_reader.hpp"
#include "options.hpp"

namespace po = boost::program_options;

namespace ks::cli {


namespace {

// --shapes B:IN:OUT:G:K,...: each within the workload's ranges.
std::vector<KernelShape> parse_shapes(const std::string& shapes) {
  std::vector<KernelShape> out;
  std::stringstream ss(shapes);
  std::string item;
  while (std::getline(ss, item, ',')) {
    long long v[5];
    char tail = 0;
    if (std::sscanf(item.c_str(), "%lld:%lld:%lld:%lld:%lld%c", &v[0], &v[1], &v[2], &v[3], &v[4], &tail) != 5 ||
        *std::min_element(v, v + 5) < 1 || *std::max_element(v, v + 5) > YamlMap::kIntMax || v[4] > 16 || v[0] > kMaxBatch)
      throw InputError("--shapes: expected B:IN:OUT:G:K entries (integers from 1 to " + std::to_string(YamlMap::kIntMax) + ", B <= " +
                       std::to_string(kMaxBatch) + ", K <= 16), got \"" + item + "\"");
    if (const std::string why = kan_size_problem(KanShape{{v[1], v[2]}, static_cast<int>(v[3]), static_cast<int>(v[4])}); !why.empty())
      throw InputError("--shapes: \"" + item + "\": " + why);
    out.push_back({v[0], v[1], v[2], static_cast<int>(v[3]), static_cast<int>(v[4])});
  }
  return out;
}

// Before any buffer exists: a training step of each shape's layer (the
// model's own accounting), twice over for fresh inputs, plus the flush.
void check_plan_memory(const KernelPlan& plan, double limit, const std::string& where) {
  for (const auto& sh : plan.shapes) {
    // (an "Nx_llc" eviction at its largest: one rank on the node)
    const double flush = plan.flush_llc_multiple > 0 ? llc_flush_bytes(plan.flush_llc_multiple, 1, last_level_cache()) : plan.flush_bytes;
    const double need = 2 * kanscale_memory(KanShape{{sh.in, sh.out}, sh.G, sh.k}, sh.batch, DdpSettings{}, 0, 0).peak_bytes + flush;
    if (need > limit)
      throw InputError(where + ": shape [" + std::to_string(sh.batch) + ", " + std::to_string(sh.in) + ", " + std::to_string(sh.out) + ", " +
                       std::to_string(sh.G) + ", " + std::to_string(sh.k) + "] needs about " + format_bytes(need) +
                       " per rank, above the limit of " + format_bytes(limit) + " (raise it with --memory-limit)");
  }
}

// The plan measured on every rank (the CPU path or the CUDA plugin), rank 0 summing up.
int run_plan(Comm& comm, const KernelPlan& plan, const std::string& json, const std::string& csv, const std::string& cmdline,
             const std::string& resume) {
  try {
    std::vector<KernelRecord> rows;
    if (plan.backend == "cuda") {
      std::string why;
      const CudaPlugin* cuda = cuda_plugin(&why);
      if (!cuda) throw InputError("backend cuda: " + why);
      rows = cuda->kernel_plan(comm, plan, json, csv, cmdline, resume);
    } else {
      rows = run_kernel_plan(comm, plan, json, csv, cmdline, resume);
    }
    if (comm.rank() == 0) {
      int unstable = 0;
      std::set<std::tuple<std::int64_t, std::int64_t, std::int64_t, int, int>> shapes;
      for (const auto& r : rows) {
        unstable += r.unstable;
        shapes.insert({r.batch, r.in, r.out, r.grid_size, r.spline_order});
      }
      std::cout << "kanscale measure kernels: " << rows.size() << " measurements (" << shapes.size() << " of the plan's "
                << plan.shapes.size() << " shapes x ops, " << comm.size() << " rank(s)); " << unstable << " unstable (CV > 5%)\n";
    }
  } catch (const InputError& ex) {
    if (comm.rank() == 0) std::cerr << "kanscale: " << ex.what() << "\n";
    return 2;
  } catch (const std::exception& ex) {
    std::cerr << "kanscale measure kernels: error: " << ex.what() << " (rank " << comm.rank() << ")\n";
    comm.abort(1);
    return 1;
  }
  return 0;
}

}  // namespace

int measure_kernels(const std::vector<std::string>& args, const std::string& cmdline) {
  std::string plan_file = "configs/measure/cpu-default.yaml", shapes, json, csv, backend = "cpu", resume;
  int repeats = 0, threads = 0;
  KernelPlan plan;
  std::string flush, memory_limit = "64GiB", skip_from;
  double skip_under = 0;
  po::options_description desc("measure kernels options");
  desc.add_options()
      ("help,h", "show this help")
      ("plan", po::value(&plan_file)->default_value(plan_file), "measurement plan YAML (configs/measure/)")
      ("shapes", po::value(&shapes)->value_name("B:IN:OUT:G:K,..."), "shapes instead of the plan's")
      ("repeat", po::value(&repeats), "repetitions (at most, with --target-rel-halfwidth; default: the plan's)")
      ("target-rel-halfwidth", po::value(&plan.target_rel_halfwidth)->value_name("F"),
       "stop an op's repetitions once its median is known to F (95% interval, order statistics; every rank agreeing)")
      ("threads", po::value(&threads), "CPU threads per rank (default: the plan's)")
      ("backend", po::value(&backend), "cpu | cuda (default: the plan's, else cpu)")
      ("json", po::value(&json)->value_name("FILE"), "rows and metadata as JSON")
      ("csv", po::value(&csv)->value_name("FILE"), "rows as CSV (units in the column names)")
      ("resume", po::value(&resume)->value_name("FILE"), "continue an interrupted run of the same plan (its JSON file)")
      ("max-shapes", po::value(&plan.max_shapes), "stop after this many new shapes (tests of --resume)")
      ("flush", po::value(&flush), "evict the caches before every repetition by touching this much memory (e.g. 64MiB), or a multiple of the last-level cache shared among the node's ranks (e.g. 2x_llc)")
      ("skip-from", po::value(&skip_from)->value_name("FILE,..."),
       "earlier rounds of this plan (measure kernels files): a class whose fit over them predicts each left-out shape within "
       "--skip-under on average is timed at every other shape (the first, third, ...) only")
      ("skip-under", po::value(&skip_under)->value_name("F"), "with --skip-from: the mean held-out error (a fraction) below which a class is skipped so")
      ("memory-limit", po::value(&memory_limit)->default_value(memory_limit),
       "refuse a shape whose estimated memory per rank (a training step of the layer, its inputs, the flush buffer) is above this");
  po::variables_map vm;
  if (!parse_args(args, desc, "usage: [mpirun -np P] kanscale measure kernels [--plan F | --shapes ...] --json F [--csv F]", vm))
    return 0;
  if (vm.count("backend") && backend != "cpu" && backend != "cuda")
    throw InputError("--backend: expected cpu or cuda, got \"" + backend + "\"");
  if (!(plan.target_rel_halfwidth >= 0 && plan.target_rel_halfwidth < 1)) throw InputError("--target-rel-halfwidth: expected a fraction from 0 to below 1");
  if (!resume.empty() && json.empty()) json = resume;  // continue writing the same file
  if (vm.count("shapes") && shapes.empty()) throw InputError("--shapes: an empty list; expected B:IN:OUT:G:K items, e.g. 8:16:128:5:3");
  if (json.empty() && csv.empty()) throw InputError("give --json and/or --csv: the measurements are for kanscale fit");
  check_output_paths({{json, resume.empty() ? "--json" : "--resume"}, {csv, "--csv"}, {csv_meta_path(csv), "--csv (its .meta.json)"}});
  const auto [max_shapes, target] = std::pair(plan.max_shapes, plan.target_rel_halfwidth);
  const std::vector<std::string> earlier = skip_from.empty() ? std::vector<std::string>{} : split_list(skip_from, "--skip-from");
  if (vm.count("skip-from") != vm.count("skip-under")) throw InputError("--skip-from and --skip-under go together");
  if (vm.count("skip-under") && !(skip_under > 0 && skip_under < 1)) throw InputError("--skip-under: expected a fraction above 0 and below 1");
  std::vector<std::string> inputs = {plan_file};
  inputs.insert(inputs.end(), earlier.begin(), earlier.end());
  check_outputs_spare_inputs(inputs, {{json, resume.empty() ? "--json" : "--resume"}, {csv, "--csv"}, {csv_meta_path(csv), "--csv (its .meta.json)"}});
  plan = shapes.empty() ? load_kernel_plan(plan_file) : KernelPlan{};
  std::tie(plan.max_shapes, plan.target_rel_halfwidth) = std::pair(max_shapes, target);
  if (!shapes.empty()) plan.shapes = parse_shapes(shapes);
  if (vm.count("repeat")) {
    if (repeats < 3 || repeats > 1000) throw InputError("--repeat: expected 3 to 1000, got " + std::to_string(repeats));
    plan.repeats = repeats;
  }
  if (vm.count("threads")) plan.threads = threads;
  if (vm.count("backend")) plan.backend = backend;
  if (vm.count("flush")) {
    try {
      std::tie(plan.flush_bytes, plan.flush_llc_multiple) = parse_flush(flush);
    } catch (const UnitError& e) {
      throw InputError(std::string("--flush: ") + e.what() + " (a size such as 64MiB, or a multiple of the last-level cache such as 2x_llc)");
    }
    // the flush buffer is the flag's own: blamed on it, not on the shapes
    if (const double memory = physical_memory_bytes(); memory > 0 && plan.flush_bytes > memory / 2)
      throw InputError("--flush " + flush + ": a buffer of " + format_bytes(plan.flush_bytes) + " per rank, above half this machine's " +
                       format_bytes(memory));
  }
  if (plan.repeats < 3) throw InputError("--repeat: at least 3 (median and spread)");
  if (!earlier.empty()) {
    if (plan.backend != "cpu") throw InputError("--skip-from: the CPU path's option (backend " + plan.backend + ")");
    std::vector<KernelsFile> files;
    for (const auto& f : earlier) {
      files.push_back(read_kernels_file(f));
      for (const KernelRecord& r : files.back().rows)
        if (std::none_of(plan.shapes.begin(), plan.shapes.end(), [&](const KernelShape& k) {
              return k.batch == r.batch && k.in == r.in && k.out == r.out && k.G == r.grid_size && k.k == r.spline_order;
            }))
          throw InputError("--skip-from " + f + ": timed shape [" + std::to_string(r.batch) + ", " + std::to_string(r.in) + ", " +
                           std::to_string(r.out) + ", " + std::to_string(r.grid_size) + ", " + std::to_string(r.spline_order) +
                           "], not in this plan: give this plan's earlier rounds");
    }
    plan.skip_from = earlier;
    plan.skip_under = skip_under;
    for (const auto& [cls, error] : kernel_class_shape_errors(files))
      if (error >= 0 && error < skip_under) plan.skip_classes[cls] = error;
  }
  check_threads(plan.threads, vm.count("threads") ? "--threads" : plan_file + ": key 'threads'");
  check_plan_memory(plan, parse_size_option(memory_limit, "--memory-limit"),
                    shapes.empty() ? plan_file + ": key 'shapes'" : std::string("--shapes"));
  auto comm = launched_by_mpirun() ? make_mpi_comm() : make_self_comm();
  return run_plan(*comm, plan, json, csv, cmdline, resume);
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

// kanscale measure torch-ops: efficient-kan's op classes in PyTorch.
int measure_torch_ops(const std::vector<std::string>& args, const std::string& cmdline) {
  std::string plan_file = "configs/measure/pytorch-cpu.yaml", json, python, port_range = "29500-29999";
  int reps = 0;
  double target = 0;
  po::options_description desc("measure torch-ops options");
  desc.add_options()
      ("help,h", "show this help")
      ("plan", po::value(&plan_file)->default_value(plan_file), "the shapes to time (configs/measure/)")
      ("json", po::value(&json)->value_name("FILE"), "the records, for kanscale fit --torch-ops")
      ("reps", po::value(&reps), "timed repetitions per class and shape (at most, with --target-rel-halfwidth; default: the plan's)")
      ("target-rel-halfwidth", po::value(&target)->value_name("F"),
       "stop a class's repetitions once its median is known to F (95% interval, order statistics)")
      ("python", po::value(&python)->value_name("PATH"), "the interpreter with torch (default: $KANSCALE_PYTHON, else /usr/bin/python3)")
      ("port-range", po::value(&port_range)->default_value(port_range), "where to look for a free port (DDP's reducer is timed in a gloo group of one)");
  po::variables_map vm;
  if (!parse_args(args, desc,
                  "usage: kanscale measure torch-ops [--plan F] --json F\n"
                  "  times efficient-kan's op classes under PyTorch (forward, backward, loss, zero_grad, Adam, DDP's reducer)\n"
                  "  at every shape of the plan, for kanscale fit --torch-ops",
                  vm))
    return 0;
  if (json.empty()) throw InputError("give --json FILE: the records are for kanscale fit --torch-ops");
  check_output_paths({{json, "--json"}});
  check_outputs_spare_inputs({plan_file}, {{json, "--json"}});
  TorchOpsPlan plan = load_torch_ops_plan(plan_file);
  if (vm.count("reps")) {
    if (reps < 3 || reps > 10000) throw InputError("--reps: expected 3 to 10000, got " + std::to_string(reps));
    plan.reps = reps;
  }
  if (!(target >= 0 && target < 1)) throw InputError("--target-rel-halfwidth: expected a fraction from 0 to below 1");
  plan.target_rel_halfwidth = target;
  free_port(port_range);  // a malformed range is refused before the probe
  return run_torch_ops(plan, json, resolve_python(python), port_range, cmdline);
}

int measure(const std::vector<std::string>& args, const std::string& cmdline) {
  if (!args.empty() && args[0] == "kernels") return measure_kernels({args.begin() + 1, args.end()}, cmdline);
  if (!args.empty() && args[0] == "torch-ops") return measure_torch_ops({args.begin() + 1, args.end()}, cmdline);
  if (args.empty() || !find_collective(args[0])) {
    throw InputError(std::string("measure: ") + (args.empty() ? "expected what to measure" : "unknown measurement '" + args[0] + "'") +
                     ": kanscale measure kernels|torch-ops|" + collective_names() + " [options]");
  }
  ParsedSweep parsed = parse_sweep_options(args[0], {args.begin() + 1, args.end()});
  if (parsed.help) {
    std::cout << parsed.usage;
    return 0;
  }
  SweepOptions& o = parsed.options;
  o.command_line = cmdline;
  const std::string& backend = parsed.backend;
  check_output_paths({{o.json, o.resume.empty() ? "--json" : "--resume"}, {o.csv, "--csv"}, {csv_meta_path(o.csv), "--csv (its .meta.json)"}});
  if (parsed.check_only) return 0;
  if (backend == "gloo" || backend == "torch-nccl") {
    if (o.root >= parsed.ranks) throw InputError("-r: the root must be a rank, 0.." + std::to_string(parsed.ranks - 1));
    return run_torch_sweep(o, parsed.ranks, resolve_python(parsed.python), parsed.port_range, cmdline, backend == "gloo" ? "gloo" : "nccl");
  }
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
