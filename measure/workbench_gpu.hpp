#pragma once
// The workbench's GPU clock: events on the compute stream around the timed
// calls (Gpu::mark, the device's event pool), read after the stream has
// reached the second one. Plain C++: it compiles wherever measure/gpu.hpp does.
#include "gpu.hpp"
#include "workbench.hpp"

namespace ks {

class GpuEventClock final : public BenchClock {
 public:
  explicit GpuEventClock(Gpu& gpu) : gpu_(gpu) {}
  void start() override {
    gpu_.clear_marks();
    a_ = gpu_.mark(GpuStream::compute);
  }
  double stop() override {
    const int b = gpu_.mark(GpuStream::compute);
    gpu_.synchronize();
    const double s = gpu_.seconds(a_, b);
    gpu_.clear_marks();
    return s;
  }

 private:
  Gpu& gpu_;
  int a_ = 0;
};

}  // namespace ks
