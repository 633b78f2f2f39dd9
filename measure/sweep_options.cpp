#include "sweep_options.hpp"

#include <boost/program_options.hpp>

#include <cmath>
#include <cstdlib>
#include <sstream>

#include "model/units.hpp"
#include "formats/yaml_reader.hpp"

namespace po = boost::program_options;

namespace ks {

namespace {

// nccl-tests' size arguments: a number with an optional K, M or G (binary),
// or a kanscale size ("256MiB").
double parse_sweep_size(const std::string& s, const char* option) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  const std::string rest = end ? std::string(end) : "";
  if (end != s.c_str() && (rest.empty() || rest == "K" || rest == "M" || rest == "G")) {
    const double f = rest.empty() ? 1 : rest == "K" ? 1024.0 : rest == "M" ? 1048576.0 : 1073741824.0;
    if (std::isfinite(v) && v > 0 && std::isfinite(v * f)) {
      if (v * f > 1152921504606846976.0)  // sizes are at most 2^60 B (model/units), and 64-bit integers hold them
        throw InputError(std::string(option) + ": \"" + s + "\" is too large; expected a size of at most 1 EiB (2^60 B)");
      return v * f;
    }
  }
  try {
    const double b = parse_size_bytes(s);
    if (b > 0) return b;
  } catch (const UnitError& e) {
    throw InputError(std::string(option) + ": " + e.what() + " (or nccl-tests' form: 8, 64K, 256M, 1G)");
  }
  throw InputError(std::string(option) + ": expected a positive size such as 8, 64K, 256M or 1GiB, got \"" + s + "\"");
}

// Limits on what one sweep may ask for, checked before any buffer exists.
// The buffers hold the largest size twice (send and receive) on every
// rank; --memory-limit raises the bound.
constexpr double kDefaultMemoryLimitBytes = 16.0 * 1073741824.0;
// Sizes visited between -b and -e (each rounded to 4 bytes): a factor so
// close to 1 that the sweep would not end in a working day is refused.
constexpr double kMaxSweepSteps = 100000;

}  // namespace

std::vector<std::string> split_words(const std::string& text) {
  std::vector<std::string> words;
  std::istringstream in(text);
  std::string w;
  while (in >> w) words.push_back(w);
  return words;
}

ParsedSweep parse_sweep_options(const std::string& op, const std::vector<std::string>& args) {
  ParsedSweep r;
  SweepOptions& o = r.options;
  o.op = op;
  std::string b = "8", e = "256M", memory_limit, large_from;
  int check = 1;
  po::options_description desc("measure " + op + " options (nccl-tests' letters)");
  desc.add_options()
      ("help,h", "show this help")
      ("minbytes,b", po::value(&b)->default_value(b), "smallest size")
      ("maxbytes,e", po::value(&e)->default_value(e), "largest size")
      ("stepfactor,f", po::value(&o.factor)->default_value(o.factor), "size factor between points")
      ("iters,n", po::value(&o.iters)->default_value(o.iters), "timed iterations per point")
      ("warmup_iters,w", po::value(&o.warmup)->default_value(o.warmup), "warm-up iterations per point")
      ("large-from", po::value(&large_from)->value_name("SIZE"),
       "from this size up, --large-iters and --large-warmup instead of -n and -w (OSU's iterations for large messages)")
      ("large-iters", po::value(&o.large_iters), "timed iterations per point from --large-from up")
      ("large-warmup", po::value(&o.large_warmup), "warm-up iterations per point from --large-from up")
      ("check,c", po::value(&check)->default_value(check), "verify every result (1) or not (0)")
      ("root,r", po::value(&o.root)->default_value(o.root), "broadcast root")
      ("backend", po::value(&r.backend)->default_value(r.backend),
       "mpi (host memory; one process: no communication) | nccl (GPU memory) | gloo (PyTorch's torch.distributed, ranks started by kanscale) | "
       "torch-nccl (NCCL through torch.distributed, one rank per GPU, started by kanscale)")
      ("ranks", po::value(&r.ranks), "gloo, torch-nccl: processes to start (default 2)")
      ("python", po::value(&r.python)->value_name("PATH"), "gloo, torch-nccl: the interpreter with torch (default: $KANSCALE_PYTHON, else /usr/bin/python3)")
      ("port-range", po::value(&r.port_range)->default_value(r.port_range), "gloo, torch-nccl: where to look for a free rendezvous port")
      ("nonblocking", po::bool_switch(&o.nonblocking), "mpi: MPI_Iallreduce completed by MPI_Test polling, as the trainer does")
      ("json", po::value(&o.json)->value_name("FILE"), "results as JSON (rewritten after every point)")
      ("csv", po::value(&o.csv)->value_name("FILE"), "results as CSV (rewritten after every point)")
      ("resume", po::value(&o.resume)->value_name("FILE"), "continue the sweep in this JSON file")
      ("max-points", po::value(&o.max_points), "stop after this many new points (tests of --resume)")
      ("memory-limit", po::value(&memory_limit)->value_name("SIZE"), "refuse sweeps whose buffers need more per rank (default 16GiB)")
      ("check-options", po::bool_switch(&r.check_only), "check these options and exit (validate checks a plan's sweeps so)");
  po::variables_map vm;
  try {
    po::positional_options_description none;  // extra words are errors, not ignored
    po::store(po::command_line_parser(args).options(desc).positional(none).run(), vm);
    if (vm.count("help")) {
      std::ostringstream u;
      u << "usage: mpirun -np P kanscale measure " << op
        << " [-b 8] [-e 256M] [-f 2] [-n 20] [-w 5] [-c 1] [--json F] [--csv F] [--resume F]\n\n"
        << desc << "\n";
      r.help = true;
      r.usage = u.str();
      return r;
    }
    po::notify(vm);
  } catch (const po::error& ex) {
    throw InputError("measure " + op + ": " + std::string(ex.what()) + " (see kanscale measure " + op + " --help)");
  }
  o.min_bytes = parse_sweep_size(b, "-b");
  o.max_bytes = parse_sweep_size(e, "-e");
  if (o.max_bytes < o.min_bytes) throw InputError("-e: the largest size is below the smallest (-b)");
  if (!(o.factor >= 1) || !std::isfinite(o.factor)) throw InputError("-f: the size factor must be at least 1");
  // a sweep from -b to -e must step and must get past -b: a factor of 1
  // would measure -b alone, and so would one above -e / -b
  if (o.max_bytes > o.min_bytes && o.factor == 1)
    throw InputError("-f 1: a factor of 1 never leaves -b " + b + " for -e " + e + "; expected a factor above 1, such as 2");
  if (o.max_bytes > o.min_bytes && o.factor > o.max_bytes / o.min_bytes) {
    std::ostringstream m;
    m << "-f " << o.factor << ": the first step from -b " << b << " already passes -e " << e << ", so only -b would be measured; expected at most "
      << o.max_bytes / o.min_bytes;
    throw InputError(m.str());
  }
  if (o.factor > 1 && o.max_bytes > o.min_bytes) {
    const double steps = std::log(o.max_bytes / o.min_bytes) / std::log(o.factor);
    if (!(steps <= kMaxSweepSteps)) {
      std::ostringstream m;
      m << "-f: a factor of " << o.factor << " from -b to -e takes " << std::llround(std::min(steps, 1e18))
        << " steps; at most " << kMaxSweepSteps << " (use a larger factor)";
      throw InputError(m.str());
    }
  }
  // timed and warm-up iterations per point (nccl-tests' defaults: 20 and 5): a million is hours at every point already
  if (o.iters < 1 || o.iters > 1000000) throw InputError("-n: expected 1 to 1000000 iterations, got " + std::to_string(o.iters));
  if (o.warmup < 0 || o.warmup > 1000000) throw InputError("-w: expected 0 to 1000000 iterations, got " + std::to_string(o.warmup));
  if (!large_from.empty()) {
    o.large_from = parse_sweep_size(large_from, "--large-from");
    if (!vm.count("large-iters") || !vm.count("large-warmup"))
      throw InputError("--large-from " + large_from + ": also give --large-iters and --large-warmup (the iterations from that size up)");
    if (o.large_iters < 1 || o.large_iters > o.iters)
      throw InputError("--large-iters: expected 1 to -n's " + std::to_string(o.iters) + " iterations, got " + std::to_string(o.large_iters));
    if (o.large_warmup < 0 || o.large_warmup > o.warmup)
      throw InputError("--large-warmup: expected 0 to -w's " + std::to_string(o.warmup) + " iterations, got " + std::to_string(o.large_warmup));
  } else if (vm.count("large-iters") || vm.count("large-warmup")) {
    throw InputError(std::string(vm.count("large-iters") ? "--large-iters" : "--large-warmup") + ": only with --large-from SIZE");
  }
  if (check != 0 && check != 1) throw InputError("-c: 0 or 1");
  o.check = check == 1;
  if (o.max_points < 0) throw InputError("--max-points: must not be negative");
  if (!o.resume.empty() && o.json.empty()) o.json = o.resume;  // continue writing the same file
  if (r.backend != "mpi" && r.backend != "nccl" && r.backend != "gloo" && r.backend != "torch-nccl")
    throw InputError("--backend: expected mpi, nccl, gloo or torch-nccl, got \"" + r.backend + "\"");
  const bool torch = r.backend == "gloo" || r.backend == "torch-nccl";  // torch.distributed's: kanscale starts the ranks
  for (const char* torch_only : {"ranks", "python", "port-range"})
    if (!torch && vm.count(torch_only) && !vm[torch_only].defaulted())
      throw InputError(std::string("--") + torch_only + ": for --backend gloo or torch-nccl only (mpi and nccl sweeps take their ranks from mpirun)");
  if (torch) {
    if (r.ranks < 2 || r.ranks > 4096) throw InputError("--ranks: expected 2 to 4096 processes, got " + std::to_string(r.ranks));
    if (!o.resume.empty() || !o.csv.empty() || o.nonblocking || o.max_points > 0 || !o.check)
      throw InputError("--backend " + r.backend + ": --resume, --csv, --nonblocking, --max-points and -c 0 are for kanscale's own sweeps; a "
                       "torch.distributed sweep writes --json, checking every result");
    if (o.json.empty()) throw InputError("--backend " + r.backend + ": give --json FILE (the sweep's points are for kanscale fit)");
  }
  const CollectiveSpec* spec = find_collective(op);
  if (!spec) throw InputError("measure " + op + ": expected one of " + collective_names());
  if (o.nonblocking && !spec->nonblocking) throw InputError("--nonblocking: all-reduce sweeps only");
  double limit = kDefaultMemoryLimitBytes;
  if (vm.count("memory-limit")) {
    try {
      limit = parse_size_bytes(memory_limit);
    } catch (const UnitError& ex) {
      throw InputError(std::string("--memory-limit: ") + ex.what());
    }
    if (!(limit > 0)) throw InputError("--memory-limit: expected a positive size such as 64GiB");
  }
  const double need = 2 * std::floor(o.max_bytes / 4) * 4;  // send and receive buffers of the largest size
  if (need > limit)
    throw InputError("-e: the largest size needs " + format_bytes(need) + " of buffers per rank, above the limit of " +
                     format_bytes(limit) + " (raise it with --memory-limit)");
  return r;
}

}  // namespace ks
