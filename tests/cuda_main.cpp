// The CUDA tests' main: without a usable GPU they skip (exit code 77, which
// CTest reports as skipped) and say why; with one they run every case.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <iostream>

#include "measure/kan_cuda.hpp"

int main(int argc, char** argv) {
  std::string why;
  if (!ks::cuda_device_available(&why)) {
    std::cout << "SKIPPED: CUDA kernel tests need a GPU: " << why << "\n";
    return 77;
  }
  doctest::Context ctx(argc, argv);
  return ctx.run();
}
