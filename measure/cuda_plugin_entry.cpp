// The plugin side of cuda_plugin.hpp: the CUDA build of measure/ behind one
// table of entry points.
#include "cuda_plugin.hpp"
#include "gpu.hpp"

namespace ks {
namespace {

TrainResult train_entry(const TrainOptions& o, Comm& host) {
#if KANSCALE_HAVE_NCCL
  return run_train_cuda(o, host);
#else
  (void)o;
  (void)host;
  throw InputError("--backend cuda: this kanscale was built without NCCL (set NCCL_HOME and reconfigure)");
#endif
}

std::int64_t nccl_sweep_entry(Comm& host, const SweepOptions& o, std::ostream& out) {
  std::string why;
  if (!cuda_device_available(&why)) throw std::runtime_error("--backend nccl on rank " + std::to_string(host.rank()) + ": " + why);
  if (local_ranks() > cuda_device_count())
    throw std::runtime_error("--backend nccl: " + std::to_string(local_ranks()) + " ranks on this node but " +
                             std::to_string(cuda_device_count()) + " visible GPU(s); NCCL needs one GPU per rank");
  Gpu gpu(local_device_index(cuda_device_count()));
  auto nccl = make_nccl_comm(host, gpu);
  return run_sweep(*nccl, o, out);
}

const CudaPlugin kPlugin = {cuda_device_available, train_entry, run_kernel_plan, nccl_sweep_entry};

}  // namespace
}  // namespace ks

extern "C" const ks::CudaPlugin* kanscale_cuda_plugin() { return &ks::kPlugin; }
