#include "collective_sweep.hpp"

#include <unistd.h>

#include <chrono>
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
  const std::string text = read_input_file(path, "a kanscale sweep file");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    throw InputError(path + ": not a kanscale sweep file: " + json_message(e));
  }
  if (!j.is_object() || !j.contains("metadata") || !j["metadata"].is_object() || !j.contains("points") || !j["points"].is_array())
    throw InputError(path + ": not a kanscale sweep file (no metadata/points)");
  const auto& m = j["metadata"];
  for (const char* k : {"op", "ranks", "min_bytes", "max_bytes", "factor", "iters", "warmup_iters", "check", "nonblocking"}) {
    if (!m.contains(k) || m[k] != meta[k])
      throw InputError(path + ": was measured with another " + std::string(k) + " (" + (m.contains(k) ? m[k].dump() : "none") +
                       ", now " + meta[k].dump() + ")");
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

double bus_factor(const std::string& op, int ranks) {
  return op == "allreduce" ? 2.0 * (ranks - 1) / ranks : 1.0;
}

std::int64_t run_sweep(Comm& comm, const SweepOptions& o, std::ostream& out) {
  const int rank = comm.rank(), n = comm.size();
  const bool allreduce = o.op == "allreduce";
  const std::string redop = allreduce ? "sum" : "none";
  const int root = allreduce ? -1 : o.root;
  const auto sizes = sweep_sizes(o);
  const std::vector<std::string> host_list = comm.hosts();
  std::set<std::string> unique_hosts(host_list.begin(), host_list.end());

  nlohmann::json meta = {{kProvenanceKey, to_json(provenance(o.command_line))},
                         {"op", o.op},
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
                         {"check", o.check},
                         {"nonblocking", o.nonblocking && allreduce && !comm.device_buffers()},
                         {"timing", "per rank: mean of the timed iterations after a barrier; reported: the maximum over ranks"}};

  // --resume: rank 0 reads and checks the file; every rank learns how many
  // points are done (or that the file is unusable).
  std::vector<CollectivePoint> done;
  float status[2] = {0, 0};  // [done points, error]
  std::string resume_error;
  if (rank == 0 && !o.resume.empty()) {
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
  if (status[1] > 0) throw InputError(rank == 0 ? resume_error : o.resume + ": unusable (see rank 0)");
  // the inputs are good: now say whether the machine is busy
  if (rank == 0 && meta["busy_runnable_threads"].get<int>() > 0)
    std::cerr << "kanscale: warning: " << meta["busy_runnable_threads"].get<int>()
              << " other runnable thread(s) on this machine as the sweep starts: every timing means less\n";
  const std::size_t start = static_cast<std::size_t>(status[0]);

  const std::size_t max_count = sizes.empty() ? 0 : static_cast<std::size_t>(sizes.back() / 4);
  // Host copies for filling and checking; the buffers themselves live where
  // the backend wants them (device memory for NCCL).
  std::vector<float> send(max_count), recv(max_count);
  struct Buffers {
    Comm& c;
    float* send;
    float* recv;
    ~Buffers() {
      c.free_buffer(send);
      c.free_buffer(recv);
    }
  } buf{comm, comm.alloc_buffer(max_count), comm.alloc_buffer(max_count)};
  const bool tty = isatty(STDERR_FILENO);
  if (rank == 0) {
    out << "# kanscale measure " << o.op << ": " << n << " rank(s) on " << unique_hosts.size() << " node(s), "
        << comm.backend() << " (" << comm.library_version() << ")\n";
    for (int r = 0; r < n; ++r) out << "#  Rank " << std::setw(3) << r << " on " << host_list[static_cast<std::size_t>(r)] << "\n";
    out << "#\n"
        << "#                                                              out-of-place                       in-place          \n"
        << "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
        << "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       \n";
  }
  // every point here is complete: measured now, or checked by read_sweep_resume
  auto print_row = [&](const CollectivePoint& p) {
    char line[256];
    const CollectiveTiming &a = *p.out_of_place, &b = *p.in_place;
    std::snprintf(line, sizeof line, "%12.0f  %12lld  %8s  %6s  %6d  %7.2f %6.2f %6.2f %6lld  %7.2f %6.2f %6.2f %6lld\n",
                  p.size_bytes, static_cast<long long>(*p.count), "float", redop.c_str(), root, *a.time_us, *a.algbw_GBps,
                  *a.busbw_GBps, static_cast<long long>(*a.wrong), *b.time_us, *b.algbw_GBps, *b.busbw_GBps,
                  static_cast<long long>(*b.wrong));
    out << line;
  };
  for (const auto& p : done)
    if (rank == 0) print_row(p);

  auto write_files = [&](const std::vector<CollectivePoint>& pts) {
    if (rank != 0) return;
    std::vector<std::pair<std::string, std::string>> files;
    if (!o.json.empty()) {
      nlohmann::json points = nlohmann::json::array();
      for (const auto& p : pts) points.push_back(to_json(p));
      files.emplace_back(o.json, nlohmann::json{{"metadata", meta}, {"points", points}}.dump(2) + "\n");
    }
    if (!o.csv.empty()) {
      std::ostringstream c;
      c << std::setprecision(9);
      for (auto it = meta.begin(); it != meta.end(); ++it) c << "# " << it.key() << ": " << it.value().dump() << "\n";
      c << "size_bytes,count,type,redop,root,oop_time_us,oop_algbw_GBps,oop_busbw_GBps,oop_wrong,ip_time_us,ip_algbw_GBps,"
           "ip_busbw_GBps,ip_wrong\n";
      for (const auto& p : pts) {
        const CollectiveTiming &a = *p.out_of_place, &b = *p.in_place;
        c << p.size_bytes << "," << *p.count << ",float," << redop << "," << root << "," << *a.time_us << "," << *a.algbw_GBps
          << "," << *a.busbw_GBps << "," << *a.wrong << "," << *b.time_us << "," << *b.algbw_GBps << "," << *b.busbw_GBps << ","
          << *b.wrong << "\n";
      }
      files.emplace_back(o.csv, c.str());
    }
    write_files_atomic(files);
  };

  std::int64_t total_wrong = 0;
  double busbw_sum = 0;
  int busbw_n = 0;
  for (const auto& p : done) {
    total_wrong += *p.out_of_place->wrong + *p.in_place->wrong;
    busbw_sum += *p.out_of_place->busbw_GBps;
    ++busbw_n;
  }
  int new_points = 0;
  for (std::size_t si = start; si < sizes.size(); ++si) {
    if (o.max_points > 0 && new_points >= o.max_points) break;
    SweepPoint pt;
    pt.bytes = sizes[si];
    pt.count = static_cast<std::int64_t>(sizes[si] / 4);
    const std::size_t cnt = static_cast<std::size_t>(pt.count);
    for (int inplace = 0; inplace < 2; ++inplace) {
      double launch_sum = 0;  // time inside the non-blocking call itself
      float* dst = buf.recv;
      const float* src = inplace ? buf.recv : buf.send;
      auto fill = [&] {
        for (std::size_t i = 0; i < cnt; ++i) {
          send[i] = pattern(rank, i);
          recv[i] = inplace ? pattern(rank, i) : 0.0f;
        }
        if (!allreduce && rank != o.root) std::fill(recv.begin(), recv.begin() + static_cast<std::ptrdiff_t>(cnt), 0.0f);
        comm.to_buffer(buf.send, send.data(), cnt);
        comm.to_buffer(buf.recv, recv.data(), cnt);
      };
      auto once = [&] {
        if (allreduce && o.nonblocking && !comm.device_buffers()) {
          // what the trainer does: an in-place non-blocking all-reduce,
          // completed by polling (out of place: the input copied in first)
          if (!inplace) comm.copy_buffer(dst, src, cnt);
          const auto l0 = std::chrono::steady_clock::now();
          const int h = comm.iallreduce_sum(dst, cnt);
          launch_sum += std::chrono::duration<double>(std::chrono::steady_clock::now() - l0).count();
          while (!comm.test(h)) {
          }
          comm.release();
        } else if (allreduce) {
          comm.allreduce_floats(src, dst, cnt);
        } else {
          // out of place: the root copies its input into the output first
          if (!inplace && rank == o.root) comm.copy_buffer(buf.recv, buf.send, cnt);
          comm.broadcast(dst, cnt, o.root);
        }
      };
      fill();
      for (int w = 0; w < o.warmup; ++w) once();
      comm.synchronize();
      comm.barrier();
      launch_sum = 0;
      const auto t0 = std::chrono::steady_clock::now();
      for (int it = 0; it < o.iters; ++it) once();
      comm.synchronize();  // NCCL returns at once; nccl-tests times to the stream's end too
      const double mean_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / std::max(1, o.iters);
      const double t = comm.allreduce_max(mean_s);
      pt.time_us[inplace] = t * 1e6;
      pt.launch_us[inplace] = comm.allreduce_max(launch_sum / std::max(1, o.iters)) * 1e6;
      pt.algbw_GBps[inplace] = pt.bytes / t / 1e9;
      pt.busbw_GBps[inplace] = pt.algbw_GBps[inplace] * bus_factor(o.op, n);
      if (o.check) {
        fill();
        once();
        comm.synchronize();
        comm.from_buffer(recv.data(), buf.recv, cnt);
        std::int64_t wrong = 0;
        for (std::size_t i = 0; i < cnt; ++i) {
          const float want = allreduce ? expected_sum(n, i) : pattern(o.root, i);
          wrong += recv[i] != want;
        }
        pt.wrong[inplace] = static_cast<std::int64_t>(comm.allreduce_sum(static_cast<double>(wrong)));
      } else {
        pt.wrong[inplace] = -1;
      }
    }
    total_wrong += std::max<std::int64_t>(0, pt.wrong[0]) + std::max<std::int64_t>(0, pt.wrong[1]);
    busbw_sum += pt.busbw_GBps[0];
    ++busbw_n;
    done.push_back(record_of(pt, redop, root));
    ++new_points;
    if (rank == 0) {
      print_row(done.back());
      out.flush();
      write_files(done);  // every finished point is on disk at once
      if (tty) {
        const int width = 30, filled = static_cast<int>(width * done.size() / sizes.size());
        std::cerr << "\r[" << std::string(static_cast<std::size_t>(filled), '#') << std::string(static_cast<std::size_t>(width - filled), ' ')
                  << "] " << done.size() << "/" << sizes.size() << " " << format_bytes(pt.bytes) << "      " << std::flush;
      } else {
        std::cerr << "point " << done.size() << "/" << sizes.size() << ": " << format_bytes(pt.bytes) << " done\n";
      }
    }
  }
  if (rank == 0) {
    if (tty) std::cerr << "\n";
    if (new_points == 0) write_files(done);
    out << "# Out of bounds values : " << total_wrong << (total_wrong == 0 ? " OK" : " FAILED") << "\n";
    out << "# Avg bus bandwidth    : " << std::fixed << std::setprecision(5) << (busbw_n ? busbw_sum / busbw_n : 0.0)
        << std::defaultfloat << "\n#\n";
  }
  return total_wrong;
}

}  // namespace ks
