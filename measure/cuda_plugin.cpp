#include "cuda_plugin.hpp"

#include "base/data_dir.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <mutex>

namespace ks {

const CudaPlugin* cuda_plugin(std::string* why) {
  static std::once_flag once;
  static const CudaPlugin* plugin = nullptr;
  static std::string error;
  std::call_once(once, [] {
    // beside the executable first, then the loader's search path
    std::string dir;
    try {
      dir = executable_path();
    } catch (const std::exception&) {  // no /proc: the loader's search path alone
    }
    dir = dir.substr(0, dir.find_last_of('/') + 1);
    void* h = nullptr;
    std::string tried;
    for (const std::string& path : {dir + "libkanscale_cuda.so", std::string("libkanscale_cuda.so")}) {
      h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (h) break;
      const char* e = dlerror();
      tried += (tried.empty() ? "" : "; ") + (e ? std::string(e) : path);
    }
    if (!h) {
      error = "the CUDA plugin (libkanscale_cuda.so) could not be loaded: " + tried +
              " (kanscale builds it when nvcc is found at configure time)";
      return;
    }
    using Entry = const CudaPlugin* (*)();
    auto entry = reinterpret_cast<Entry>(dlsym(h, "kanscale_cuda_plugin"));
    if (!entry) {
      error = "libkanscale_cuda.so has no entry point kanscale_cuda_plugin";
      return;
    }
    plugin = entry();
  });
  if (!plugin && why) *why = error;
  return plugin;
}

}  // namespace ks
