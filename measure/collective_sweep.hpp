#pragma once
// kanscale measure allreduce: a collective sweep in the manner of
// nccl-tests' all_reduce_perf / broadcast_perf (sizes from -b to -e by a
// factor -f, -w warm-up and -n timed iterations, -c check), on the MPI (or
// one-process) backend. Every finished point is written at once (JSON and
// CSV, atomically); --resume continues an interrupted sweep.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "formats/measurement_records.hpp"

#include "comm.hpp"

namespace ks {

struct SweepOptions {
  std::string op = "allreduce";  // allreduce | broadcast
  double min_bytes = 8, max_bytes = 256.0 * 1024 * 1024, factor = 2;
  int iters = 20, warmup = 5;
  // From this size up (0: never), the timed and warm-up iterations are
  // large_iters and large_warmup instead, as OSU's micro-benchmarks run
  // fewer iterations for large messages (iterations_large, skip_large):
  // there one call lasts long enough that a few average out its noise.
  double large_from = 0;
  int large_iters = 0, large_warmup = 0;
  bool check = true;
  int root = 0;                 // broadcast
  // MPI all-reduce as the trainer issues it (MPI_Iallreduce completed by
  // MPI_Test polling) instead of the blocking MPI_Allreduce; NCCL calls are
  // asynchronous either way.
  bool nonblocking = false;
  std::string json, csv, resume;
  int max_points = 0;           // stop after this many new points (0: all); for tests of --resume
  std::string command_line;
};

struct SweepPoint {
  double bytes = 0;
  std::int64_t count = 0;
  double time_us[2] = {0, 0};  // out-of-place, in-place (max over ranks of the mean per iteration)
  double launch_us[2] = {0, 0};  // --nonblocking: time inside MPI_Iallreduce itself (same statistic)
  double algbw_GBps[2] = {0, 0}, busbw_GBps[2] = {0, 0};
  std::int64_t wrong[2] = {0, 0};  // elements that differ from the expected result, all ranks
};

// The timed and the warm-up iterations at `bytes` (--large-from on).
int sweep_iters_at(const SweepOptions& o, double bytes);
int sweep_warmup_at(const SweepOptions& o, double bytes);

// The sizes of a sweep (bytes, multiples of 4, as nccl-tests rounds them).
std::vector<double> sweep_sizes(const SweepOptions& o);
// One call of a collective, as the sweep makes it (src == dst: in place).
struct CollectiveCall {
  Comm& comm;
  float* dst;
  const float* src;
  std::size_t count;
  int root;          // a rooted collective's root; -1 otherwise
  bool nonblocking;  // MPI_Iallreduce completed by MPI_Test polling (where the collective allows it)
  double* launch_s;  // time inside the non-blocking call itself, summed
};

// A collective the sweep measures, in the manner of nccl-tests' testColl:
// adding one is one entry of the table in collective_sweep.cpp.
struct CollectiveSpec {
  const char* name;   // the measure subcommand and the file's "op"
  const char* redop;  // nccl-tests' redop column
  bool rooted;        // has a root rank (--root)
  bool nonblocking;   // --nonblocking applies
  double (*bus_factor)(int ranks);  // busbw = algbw x this (nccl-tests' PERFORMANCE.md)
  void (*run)(const CollectiveCall& call);
  float (*expected)(int ranks, int root, std::size_t i);                // element i of every rank's result
  float (*initial)(int rank, int root, bool in_place, std::size_t i);  // the receive buffer before a call
};
// The table entry named `name`, or null.
const CollectiveSpec* find_collective(const std::string& name);
// "allreduce|broadcast": the names in the table, for messages.
std::string collective_names();

// --resume: the points of an earlier run of the same sweep (`meta`: this
// run's metadata, `sizes`: its sizes), every field of every point checked;
// anything else is an InputError naming the file and key.
std::vector<CollectivePoint> read_sweep_resume(const std::string& path, const nlohmann::json& meta,
                                               const std::vector<double>& sizes, nlohmann::json* file_metadata = nullptr);
// Runs the sweep; rank 0 prints nccl-tests' table to `out` and writes the
// files. Returns the total #wrong.
std::int64_t run_sweep(Comm& comm, const SweepOptions& o, std::ostream& out);

}  // namespace ks
