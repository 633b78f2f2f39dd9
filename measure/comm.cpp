#include "comm.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#if KANSCALE_HAVE_MPI
#include <mpi.h>
#endif

namespace ks {

namespace {

std::string hostname() {
  char buf[256] = {0};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

class SelfComm final : public Comm {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string backend() const override { return "self"; }
  void broadcast(float*, std::size_t, int) override {}
  int iallreduce_sum(float*, std::size_t) override { return 0; }
  bool test(int) override { return true; }
  void wait(int) override {}
  void release() override {}
  void barrier() override {}
  double allreduce_max(double v) override { return v; }
  double allreduce_sum(double v) override { return v; }
  void allreduce_sum(std::vector<double>&) override {}
  std::vector<std::string> gather(const std::string& s) override { return {s}; }
  std::vector<std::string> hosts() override { return {hostname()}; }
  void abort(int) override {}
  void allreduce_floats(const float* send, float* recv, std::size_t n) override {
    if (send != recv) std::copy(send, send + n, recv);
  }
  std::string library_version() const override { return "none (one process)"; }
};

#if KANSCALE_HAVE_MPI
void check(int rc, const char* call, int rank) {
  if (rc != MPI_SUCCESS) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    throw std::runtime_error(std::string(call) + " failed on rank " + std::to_string(rank) + ": " + std::string(msg, len));
  }
}

class MpiComm final : public Comm {
 public:
  MpiComm() {
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited) {
      int provided = 0;
      MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
      owner_ = true;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~MpiComm() override {
    if (owner_) MPI_Finalize();
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "mpi"; }
  void broadcast(float* data, std::size_t n, int root) override {
    check(MPI_Bcast(data, static_cast<int>(n), MPI_FLOAT, root, MPI_COMM_WORLD), "MPI_Bcast", rank_);
  }
  int iallreduce_sum(float* data, std::size_t n) override {
    reqs_.push_back(MPI_REQUEST_NULL);
    check(MPI_Iallreduce(MPI_IN_PLACE, data, static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &reqs_.back()),
          "MPI_Iallreduce", rank_);
    return static_cast<int>(reqs_.size() - 1);
  }
  bool test(int h) override {
    int flag = 0;
    check(MPI_Test(&reqs_.at(static_cast<std::size_t>(h)), &flag, MPI_STATUS_IGNORE), "MPI_Test", rank_);
    return flag != 0;
  }
  void wait(int h) override { check(MPI_Wait(&reqs_.at(static_cast<std::size_t>(h)), MPI_STATUS_IGNORE), "MPI_Wait", rank_); }
  void release() override { reqs_.clear(); }
  void barrier() override { check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier", rank_); }
  double allreduce_max(double v) override {
    double r = 0;
    check(MPI_Allreduce(&v, &r, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce", rank_);
    return r;
  }
  double allreduce_sum(double v) override {
    double r = 0;
    check(MPI_Allreduce(&v, &r, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce", rank_);
    return r;
  }
  void allreduce_sum(std::vector<double>& v) override {
    if (v.empty()) return;
    check(MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce", rank_);
  }
  std::vector<std::string> gather(const std::string& s) override {
    const int len = static_cast<int>(s.size());
    std::vector<int> lens(static_cast<std::size_t>(size_));
    check(MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Gather", rank_);
    std::vector<int> displs(static_cast<std::size_t>(size_), 0);
    int total = 0;
    for (int r = 0; r < size_; ++r) {
      displs[r] = total;
      total += lens[r];
    }
    std::string all(rank_ == 0 ? static_cast<std::size_t>(total) : 0, '\0');
    check(MPI_Gatherv(s.data(), len, MPI_CHAR, all.data(), lens.data(), displs.data(), MPI_CHAR, 0, MPI_COMM_WORLD),
          "MPI_Gatherv", rank_);
    std::vector<std::string> out;
    if (rank_ == 0)
      for (int r = 0; r < size_; ++r) out.push_back(all.substr(static_cast<std::size_t>(displs[r]), static_cast<std::size_t>(lens[r])));
    return out;
  }
  std::vector<std::string> hosts() override {
    auto all = gather(hostname());
    return all;
  }
  void abort(int code) override {
    if (size_ > 1) MPI_Abort(MPI_COMM_WORLD, code);
  }
  void allreduce_floats(const float* send, float* recv, std::size_t n) override {
    check(MPI_Allreduce(send == recv ? MPI_IN_PLACE : send, recv, static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
          "MPI_Allreduce", rank_);
  }
  std::string library_version() const override {
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(v, &len);
    std::string s(v, static_cast<std::size_t>(len));
    const auto nl = s.find_first_of("\n,");
    return nl == std::string::npos ? s : s.substr(0, nl);
  }

 private:
  int rank_ = 0, size_ = 1;
  bool owner_ = false;
  std::vector<MPI_Request> reqs_;
};
#endif

}  // namespace

std::unique_ptr<Comm> make_self_comm() { return std::make_unique<SelfComm>(); }

#if !KANSCALE_HAVE_NCCL
std::unique_ptr<Comm> make_nccl_comm(Comm&, Gpu&) {
  throw std::runtime_error("this kanscale was built without NCCL (nvcc and NCCL were not found at configure time)");
}
#endif

int local_ranks() {
  for (const char* v : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"}) {
    if (const char* s = std::getenv(v)) return std::max(1, std::atoi(s));
  }
  return 1;
}

int local_device_index(int devices) {
  if (devices < 1) return 0;
  for (const char* v : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}) {
    if (const char* s = std::getenv(v)) return std::atoi(s) % devices;
  }
  return 0;
}

bool launched_by_mpirun() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(v)) return true;
  return false;
}

std::unique_ptr<Comm> make_mpi_comm() {
#if KANSCALE_HAVE_MPI
  return std::make_unique<MpiComm>();
#else
  throw std::runtime_error("this kanscale was built without MPI");
#endif
}

}  // namespace ks
