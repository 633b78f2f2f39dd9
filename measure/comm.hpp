#pragma once
// The trainer's view of its process group: one rank (no communication) or
// MPI. Non-blocking all-reduces are progressed by test() between pieces of
// compute (OpenMPI's blocking calls busy-poll, and a progress thread would
// steal the core the compute needs).
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
};

std::unique_ptr<Comm> make_self_comm();
// MPI_COMM_WORLD; initialises MPI (with thread level FUNNELED). Throws
// std::runtime_error when the build has no MPI.
std::unique_ptr<Comm> make_mpi_comm();
bool mpi_available();
// Whether this process was started by mpirun (OpenMPI, or any PMI launcher).
bool launched_by_mpirun();

}  // namespace ks
