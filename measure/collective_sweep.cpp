#include "collective_sweep.hpp"

#include <cmath>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "formats/provenance.hpp"
#include "kanscale/build_info.hpp"
#include "machine_info.hpp"
#include "formats/measurement_records.hpp"
#include "model/units.hpp"
#include "formats/yaml_reader.hpp"
#include "base/output_files.hpp"
#include "base/progress_line.hpp"
#include "workbench.hpp"
#include "model/statistics.hpp"
#include "model/units.hpp"

namespace ks {

namespace {

// Values whose sums over up to 2^16 ranks stay exact in fp32.
inline float pattern(int rank, std::size_t i) { return static_cast<float>((rank + 1) * static_cast<int>(i % 7 + 1)); }
inline float expected_sum(int ranks, std::size_t i) {
  return static_cast<float>(static_cast<double>(i % 7 + 1) * ranks * (ranks + 1) / 2);
}

CollectivePoint record_of(const SweepPoint& p, const std::string& redop, int root) {
  CollectivePoint r;
  r.size_bytes = p.bytes;
  r.count = p.count;
  r.redop = redop;
  r.root = root;
  for (int s = 0; s < 2; ++s) {
    CollectiveTiming t;
    t.time_us = p.time_us[s];
    t.algbw_GBps = p.algbw_GBps[s];
    t.busbw_GBps = p.busbw_GBps[s];
    t.wrong = p.wrong[s];
    t.launch_us = p.launch_us[s];
    (s == 0 ? r.out_of_place : r.in_place) = t;
  }
  return r;
}

}  // namespace

std::vector<CollectivePoint> read_sweep_resume(const std::string& path, const nlohmann::json& meta, const std::vector<double>& sizes,
                                               nlohmann::json* file_metadata) {
  const nlohmann::json j = read_json_file(path, "a kanscale sweep file");
  if (!j.is_object() || !j.contains("metadata") || !j["metadata"].is_object() || !j.contains("points") || !j["points"].is_array())
    throw InputError(path + ": not a kanscale sweep file (no metadata/points)");
  // (files from before --large-from: every size at -n and -w)
  auto with_large = [](nlohmann::json x) {
    if (!x.contains("large_from_bytes")) x["large_from_bytes"] = 0.0;
    if (!x.contains("large_iters") && x.contains("iters")) x["large_iters"] = x["iters"];
    if (!x.contains("large_warmup_iters") && x.contains("warmup_iters")) x["large_warmup_iters"] = x["warmup_iters"];
    return x;
  };
  const nlohmann::json m = with_large(j["metadata"]), now = with_large(meta);
  for (const char* k : {"op", "ranks", "min_bytes", "max_bytes", "factor", "iters", "warmup_iters", "large_from_bytes", "large_iters", "large_warmup_iters", "check",
                        "nonblocking"}) {
    if (!m.contains(k) || !now.contains(k) || m[k] != now[k])
      throw InputError(path + ": was measured with another " + std::string(k) + " (" + (m.contains(k) ? m[k].dump() : "none") +
                       ", now " + (now.contains(k) ? now[k].dump() : "none") + ")");
  }
  std::vector<CollectivePoint> done;
  const auto& points = j["points"];
  for (std::size_t i = 0; i < points.size(); ++i) {
    done.push_back(collective_point_from_json(points[i], path, i, true));
    if (i >= sizes.size() || done.back().size_bytes != sizes[i])
      throw InputError(path + ": point " + std::to_string(i) + " is not this sweep's size " +
                       (i < sizes.size() ? std::to_string(static_cast<long long>(sizes[i])) : "(none)"));
  }
  if (file_metadata) *file_metadata = m;
  return done;
}

std::vector<double> sweep_sizes(const SweepOptions& o) {
  std::vector<double> s;
  for (double b = o.min_bytes; b <= o.max_bytes * (1 + 1e-12); b = o.factor > 1 ? b * o.factor : b + 1e300) {
    const double r = std::floor(b / 4) * 4;
    if (r >= 4 && (s.empty() || r != s.back())) s.push_back(r);
    if (!(o.factor > 1)) break;
  }
  return s;
}

namespace {
// ---------------------------------------------------------------- the collectives
// Values whose sums over up to 2^16 ranks stay exact in fp32 (pattern()).
float allreduce_expected(int ranks, int, std::size_t i) { return expected_sum(ranks, i); }
float broadcast_expected(int, int root, std::size_t i) { return pattern(root, i); }
// the receive buffer before a call: in place, the rank's own input; out of
// place, zeros (a broadcast's non-root ranks start from zeros either way)
float allreduce_initial(int rank, int, bool in_place, std::size_t i) { return in_place ? pattern(rank, i) : 0.0f; }
float broadcast_initial(int rank, int root, bool in_place, std::size_t i) { return in_place && rank == root ? pattern(rank, i) : 0.0f; }

void allreduce_run(const CollectiveCall& c) {
  if (c.nonblocking) {
    // what the trainer does: an in-place non-blocking all-reduce, completed
    // by polling (out of place: the input copied in first)
    if (c.src != c.dst) c.comm.copy_buffer(c.dst, c.src, c.count);
    const Stopwatch launch;
    const int h = c.comm.iallreduce_sum(c.dst, c.count);
    *c.launch_s += launch.seconds();
    while (!c.comm.test(h)) {
    }
    c.comm.release();
  } else {
    c.comm.allreduce_floats(c.src, c.dst, c.count);
  }
}
void broadcast_run(const CollectiveCall& c) {
  // out of place: the root copies its input into the output first
  if (c.src != c.dst && c.comm.rank() == c.root) c.comm.copy_buffer(c.dst, c.src, c.count);
  c.comm.broadcast(c.dst, c.count, c.root);
}

const CollectiveSpec kCollectives[] = {
    // nccl-tests' PERFORMANCE.md: all-reduce moves 2(n-1)/n of the data per rank
    {"allreduce", "sum", false, true, [](int n) { return 2.0 * (n - 1) / n; }, allreduce_run, allreduce_expected, allreduce_initial},
    {"broadcast", "none", true, false, [](int) { return 1.0; }, broadcast_run, broadcast_expected, broadcast_initial},
};

struct SweepBuffers {
  Comm& c;
  float* send;
  float* recv;
  std::vector<float> host_send, host_recv;  // for filling and checking; the buffers live where the backend wants them
  SweepBuffers(Comm& comm, std::size_t n)
      : c(comm), send(comm.alloc_buffer(n)), recv(comm.alloc_buffer(n)), host_send(n), host_recv(n) {}
  ~SweepBuffers() {
    c.free_buffer(send);
    c.free_buffer(recv);
  }
  SweepBuffers(const SweepBuffers&) = delete;
  SweepBuffers& operator=(const SweepBuffers&) = delete;
};

nlohmann::json sweep_metadata(Comm& comm, const SweepOptions& o, const CollectiveSpec& spec) {
  const int n = comm.size();
  const std::vector<std::string> host_list = comm.hosts();
  const std::set<std::string> unique_hosts(host_list.begin(), host_list.end());
  return {{kProvenanceKey, to_json(provenance(o.command_line))},
          {"op", spec.name},
          {"backend", comm.backend()},
          {"library", comm.library_version()},
          {"busy_runnable_threads", other_runnable_threads(n - 1)},
          {"ranks", n},
          {"nodes", unique_hosts.size()},
          {"ranks_per_node", unique_hosts.empty() ? 0.0 : static_cast<double>(n) / unique_hosts.size()},
          {"hosts", host_list},
          {"min_bytes", o.min_bytes},
          {"max_bytes", o.max_bytes},
          {"factor", o.factor},
          {"iters", o.iters},
          {"warmup_iters", o.warmup},
          {"large_from_bytes", o.large_from},
          {"large_iters", o.large_from > 0 ? o.large_iters : o.iters},
          {"large_warmup_iters", o.large_from > 0 ? o.large_warmup : o.warmup},
          {"check", o.check},
          {"nonblocking", o.nonblocking && spec.nonblocking && !comm.device_buffers()},
          {"timing", "per rank: mean of the timed iterations after a barrier; reported: the maximum over ranks"}};
}

// --resume: rank 0 reads and checks the file; every rank learns how many
// points are done (or that the file is unusable).
std::vector<CollectivePoint> resume_points(Comm& comm, const SweepOptions& o, const std::vector<double>& sizes, nlohmann::json& meta) {
  std::vector<CollectivePoint> done;
  float status[2] = {0, 0};  // [done points, error]
  std::string resume_error;
  if (comm.rank() == 0 && !o.resume.empty()) {
    try {
      nlohmann::json original;
      done = read_sweep_resume(o.resume, meta, sizes, &original);
      status[0] = static_cast<float>(done.size());
      // the file keeps when it was started and records each resume
      nlohmann::json resumed = original.contains("resumed") && original["resumed"].is_array() ? original["resumed"] : nlohmann::json::array();
      resumed.push_back({{"date_utc", meta[kProvenanceKey]["date_utc"]}, {"points_done_before", done.size()}, {"command_line", o.command_line}});
      const nlohmann::json& started = provenance_of(original);
      if (started.contains("date_utc")) meta[kProvenanceKey]["date_utc"] = started["date_utc"];
      meta["resumed"] = resumed;
    } catch (const InputError& e) {
      resume_error = e.what();
      status[1] = 1;
    }
  }
  // host-side reductions (an NCCL comm's broadcast would take device memory)
  status[0] = static_cast<float>(comm.allreduce_max(status[0]));
  status[1] = static_cast<float>(comm.allreduce_max(status[1]));
  if (status[1] > 0) throw InputError(comm.rank() == 0 ? resume_error : o.resume + ": unusable (see rank 0)");
  done.resize(static_cast<std::size_t>(status[0]));  // the other ranks learn the count
  return done;
}

void print_table_head(std::ostream& out, Comm& comm, const CollectiveSpec& spec, const nlohmann::json& meta) {
  out << "# kanscale measure " << spec.name << ": " << comm.size() << " rank(s) on " << meta["nodes"].get<std::size_t>() << " node(s), "
      << comm.backend() << " (" << comm.library_version() << ")\n";
  const auto& hosts = meta["hosts"];
  for (std::size_t r = 0; r < hosts.size(); ++r) out << "#  Rank " << std::setw(3) << r << " on " << hosts[r].get<std::string>() << "\n";
  out << "#\n"
      << "#                                                              out-of-place                       in-place          \n"
      << "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      << "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       \n";
}

// a complete point: measured now, or checked by read_sweep_resume
void print_table_row(std::ostream& out, const CollectivePoint& p) {
  char line[256];
  const CollectiveTiming &a = *p.out_of_place, &b = *p.in_place;
  std::snprintf(line, sizeof line, "%12.0f  %12lld  %8s  %6s  %6d  %7.2f %6.2f %6.2f %6lld  %7.2f %6.2f %6.2f %6lld\n", p.size_bytes,
                static_cast<long long>(*p.count), "float", p.redop.c_str(), p.root, *a.time_us, *a.algbw_GBps, *a.busbw_GBps,
                static_cast<long long>(*a.wrong), *b.time_us, *b.algbw_GBps, *b.busbw_GBps, static_cast<long long>(*b.wrong));
  out << line;
}

void write_sweep_files(const SweepOptions& o, const nlohmann::json& meta, const std::vector<CollectivePoint>& pts) {
  std::vector<std::pair<std::string, std::string>> files;
  if (!o.json.empty()) {
    nlohmann::json points = nlohmann::json::array();
    for (const auto& p : pts) points.push_back(to_json(p));
    files.emplace_back(o.json, nlohmann::json{{"metadata", meta}, {"points", points}}.dump(2) + "\n");
  }
  if (!o.csv.empty()) {
    std::ostringstream c;
    c << std::setprecision(9);
    c << "size_bytes,count,type,redop,root,oop_time_us,oop_algbw_GBps,oop_busbw_GBps,oop_wrong,ip_time_us,ip_algbw_GBps,"
         "ip_busbw_GBps,ip_wrong\n";
    for (const auto& p : pts) {
      const CollectiveTiming &a = *p.out_of_place, &b = *p.in_place;
      c << p.size_bytes << "," << *p.count << ",float," << p.redop << "," << p.root << "," << *a.time_us << "," << *a.algbw_GBps << ","
        << *a.busbw_GBps << "," << *a.wrong << "," << *b.time_us << "," << *b.algbw_GBps << "," << *b.busbw_GBps << "," << *b.wrong
        << "\n";
    }
    add_csv_output(files, o.csv, c.str(), provenance_of(meta), {{"metadata", meta}});
  }
  write_files_atomic(files);
}

// One size, out of place and in place: nccl-tests' timing (warm-up, a
// barrier, the iterations timed as one sample to the stream's end, the
// maximum over ranks of the mean per call) and its check.
SweepPoint measure_point(Comm& comm, const SweepOptions& o, const CollectiveSpec& spec, SweepBuffers& buf, double bytes) {
  const int rank = comm.rank(), n = comm.size();
  const int root = spec.rooted ? o.root : -1;
  SweepPoint pt;
  pt.bytes = bytes;
  pt.count = static_cast<std::int64_t>(bytes / 4);
  const std::size_t cnt = static_cast<std::size_t>(pt.count);
  for (int inplace = 0; inplace < 2; ++inplace) {
    auto fill = [&] {
      for (std::size_t i = 0; i < cnt; ++i) {
        buf.host_send[i] = pattern(rank, i);
        buf.host_recv[i] = spec.initial(rank, root, inplace != 0, i);
      }
      comm.to_buffer(buf.send, buf.host_send.data(), cnt);
      comm.to_buffer(buf.recv, buf.host_recv.data(), cnt);
    };
    double launch_s = 0;  // time inside the non-blocking call itself
    const CollectiveCall call{comm, buf.recv, inplace ? buf.recv : buf.send, cnt, root,
                              o.nonblocking && spec.nonblocking && !comm.device_buffers(), &launch_s};
    fill();
    HostClock clock([&] { comm.synchronize(); });  // NCCL returns at once; nccl-tests times to the stream's end too
    const int iters = std::max(1, sweep_iters_at(o, bytes));
    const Stat per_call = time_calls(Repeats{sweep_warmup_at(o, bytes), 1, iters}, [&] { spec.run(call); }, clock,
                                     TimerHooks{[&] { comm.barrier(); }, [&] { comm.synchronize(); }, [&] { launch_s = 0; }});
    const double t = comm.allreduce_max(per_call.median);
    pt.time_us[inplace] = t * 1e6;
    pt.launch_us[inplace] = comm.allreduce_max(launch_s / iters) * 1e6;
    pt.algbw_GBps[inplace] = pt.bytes / t / 1e9;
    pt.busbw_GBps[inplace] = pt.algbw_GBps[inplace] * spec.bus_factor(n);
    pt.wrong[inplace] = -1;
    if (o.check) {
      fill();
      spec.run(call);
      comm.synchronize();
      comm.from_buffer(buf.host_recv.data(), buf.recv, cnt);
      std::int64_t wrong = 0;
      for (std::size_t i = 0; i < cnt; ++i) wrong += buf.host_recv[i] != spec.expected(n, root, i);
      pt.wrong[inplace] = static_cast<std::int64_t>(comm.allreduce_sum(static_cast<double>(wrong)));
    }
  }
  return pt;
}

}  // namespace

int sweep_iters_at(const SweepOptions& o, double bytes) { return o.large_from > 0 && bytes >= o.large_from ? o.large_iters : o.iters; }
int sweep_warmup_at(const SweepOptions& o, double bytes) { return o.large_from > 0 && bytes >= o.large_from ? o.large_warmup : o.warmup; }

const CollectiveSpec* find_collective(const std::string& name) {
  for (const auto& c : kCollectives)
    if (name == c.name) return &c;
  return nullptr;
}

std::string collective_names() {
  std::string s;
  for (const auto& c : kCollectives) s += (s.empty() ? "" : "|") + std::string(c.name);
  return s;
}

std::int64_t run_sweep(Comm& comm, const SweepOptions& o, std::ostream& out) {
  const CollectiveSpec* spec = find_collective(o.op);
  if (!spec) throw InputError("measure " + o.op + ": expected one of " + collective_names());
  const int rank = comm.rank();
  const auto sizes = sweep_sizes(o);
  nlohmann::json meta = sweep_metadata(comm, o, *spec);
  std::vector<CollectivePoint> done = resume_points(comm, o, sizes, meta);
  // the inputs are good: now say whether the machine is busy
  if (rank == 0 && meta["busy_runnable_threads"].get<int>() > 0)
    std::cerr << "kanscale: warning: " << meta["busy_runnable_threads"].get<int>()
              << " other runnable thread(s) on this machine as the sweep starts: every timing means less\n";
  SweepBuffers buf(comm, sizes.empty() ? 0 : static_cast<std::size_t>(sizes.back() / 4));
  std::int64_t total_wrong = 0;
  double busbw_sum = 0;
  if (rank == 0) {
    print_table_head(out, comm, *spec, meta);
    for (const auto& p : done) {
      print_table_row(out, p);
      total_wrong += *p.out_of_place->wrong + *p.in_place->wrong;
      busbw_sum += *p.out_of_place->busbw_GBps;
    }
  }
  Progress progress(sizes.size() - done.size(), "points");
  int new_points = 0;
  for (std::size_t si = done.size(); si < sizes.size(); ++si) {
    if (o.max_points > 0 && new_points >= o.max_points) break;
    if (rank == 0) progress.starting(format_bytes(sizes[si]));
    const SweepPoint pt = measure_point(comm, o, *spec, buf, sizes[si]);
    total_wrong += std::max<std::int64_t>(0, pt.wrong[0]) + std::max<std::int64_t>(0, pt.wrong[1]);
    busbw_sum += pt.busbw_GBps[0];
    done.push_back(record_of(pt, spec->redop, spec->rooted ? o.root : -1));
    ++new_points;
    if (rank == 0) {
      print_table_row(out, done.back());
      out.flush();
      write_sweep_files(o, meta, done);  // every finished point is on disk at once
      progress.finished(format_bytes(pt.bytes));
    }
  }
  if (rank == 0) {
    progress.close();
    if (new_points == 0) write_sweep_files(o, meta, done);
    out << "# Out of bounds values : " << total_wrong << (total_wrong == 0 ? " OK" : " FAILED") << "\n";
    out << "# Avg bus bandwidth    : " << std::fixed << std::setprecision(5) << (done.empty() ? 0.0 : busbw_sum / done.size())
        << std::defaultfloat << "\n#\n";
  }
  return total_wrong;
}

}  // namespace ks
