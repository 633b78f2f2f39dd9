#pragma once
// The trainer's view of its process group: one rank (no communication) or
// MPI. Non-blocking all-reduces are progressed by test() between pieces of
// compute (OpenMPI's blocking calls busy-poll, and a progress thread would
// steal the core the compute needs).
#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace ks {

class Comm {
 public:
  virtual ~Comm() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string backend() const = 0;
  virtual void broadcast(float* data, std::size_t n, int root) = 0;
  // Starts an in-place sum all-reduce; returns a handle.
  virtual int iallreduce_sum(float* data, std::size_t n) = 0;
  virtual bool test(int handle) = 0;  // true once complete
  virtual void wait(int handle) = 0;
  // Forgets completed handles (call when every started one was waited for).
  virtual void release() = 0;
  virtual void barrier() = 0;
  virtual double allreduce_max(double v) = 0;
  virtual double allreduce_sum(double v) = 0;
  // Element-wise sum of a vector of doubles over every rank, in place (one
  // call for the vector; the default sums element by element).
  virtual void allreduce_sum(std::vector<double>& v) {
    for (double& x : v) x = allreduce_sum(x);
  }
  // Rank 0 receives every rank's string (others get an empty vector).
  virtual std::vector<std::string> gather(const std::string& s) = 0;
  // Every rank's host name (for metadata).
  virtual std::vector<std::string> hosts() = 0;
  // Blocking sum all-reduce; send == recv is in place.
  virtual void allreduce_floats(const float* send, float* recv, std::size_t n) = 0;
  // The collective library's own version string.
  virtual std::string library_version() const = 0;
  // Ends every rank (MPI_Abort) after an error on this one; no-op alone.
  virtual void abort(int code) = 0;

  // Where the buffers of broadcast and the all-reduces live: host memory
  // (self, MPI: blocking calls) or device memory (NCCL: calls are ordered on
  // the communication stream and return at once; synchronize() waits).
  virtual bool device_buffers() const { return false; }
  virtual void synchronize() {}
  // Buffers in that memory, and copies between them and the host.
  virtual float* alloc_buffer(std::size_t n) { return new float[n == 0 ? 1 : n](); }
  virtual void free_buffer(float* p) { delete[] p; }
  virtual void to_buffer(float* dst, const float* host, std::size_t n) { std::copy(host, host + n, dst); }
  virtual void from_buffer(float* host, const float* src, std::size_t n) { std::copy(src, src + n, host); }
  virtual void copy_buffer(float* dst, const float* src, std::size_t n) { std::copy(src, src + n, dst); }
};

std::unique_ptr<Comm> make_self_comm();
// MPI_COMM_WORLD; initialises MPI (with thread level FUNNELED). Throws
// std::runtime_error when the build has no MPI.
std::unique_ptr<Comm> make_mpi_comm();

class Gpu;
// NCCL over the ranks of `host` (which bootstraps it: rank 0's unique id is
// broadcast over it, and it serves gather/barrier/host-side reductions), on
// gpu's communication stream. Throws std::runtime_error without NCCL.
std::unique_ptr<Comm> make_nccl_comm(Comm& host, Gpu& gpu);
// The GPU this rank uses: the node-local rank (OMPI_COMM_WORLD_LOCAL_RANK,
// MPI_LOCALRANKID, SLURM_LOCALID) modulo the visible devices.
int local_device_index(int devices);
// Ranks on this node, as the launcher says (1 when it does not).
int local_ranks();
// Whether this process was started by mpirun (OpenMPI, or any PMI launcher).
bool launched_by_mpirun();

}  // namespace ks
