#pragma once
// The measurement workbench, after nccl-tests and nanobench: every benchmark
// times through it. A timer owns the warm-up, the barrier before the timed
// samples, the repeats and the clock (the host's steady clock, or a GPU's
// events: measure/workbench_gpu.hpp), and returns the project's Stat of the
// time per call. With `min_sample_s` it scales the calls per sample, as
// nanobench's IterationLogic does, until one sample lasts at least that long:
// a microsecond kernel is then read over many calls instead of one clock
// read's worth of noise. A Stopwatch is the one way to read a wall time
// (bench sim's replays, the trainer's epoch starts, interleaved loops that
// time two things against each other).
#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

#include "model/statistics.hpp"

namespace ks {

class Stopwatch {
 public:
  Stopwatch() : t0_(std::chrono::steady_clock::now()) {}
  void restart() { t0_ = std::chrono::steady_clock::now(); }
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count(); }

 private:
  std::chrono::steady_clock::time_point t0_;
};

// What a timer reads: start, then the seconds since (waiting for whatever
// must finish first: a device, an asynchronous collective).
class BenchClock {
 public:
  virtual ~BenchClock() = default;
  virtual void start() = 0;
  virtual double stop() = 0;
};

// The host's steady clock; `settle` (optional) runs inside the timed region
// before the clock is read: NCCL returns at once, and nccl-tests times to
// the stream's end.
class HostClock final : public BenchClock {
 public:
  explicit HostClock(std::function<void()> settle = {}) : settle_(std::move(settle)) {}
  void start() override { watch_.restart(); }
  double stop() override {
    if (settle_) settle_();
    return watch_.seconds();
  }

 private:
  std::function<void()> settle_;
  Stopwatch watch_;
};

struct Repeats {
  int warmup = 1;   // untimed calls first
  int samples = 5;  // timed samples
  int calls = 1;    // calls per sample (the time per call is the sample's mean)
  // > 0: the calls per sample double from `calls` until one sample lasts at
  // least this long (the trial samples count as warm-up), at most max_calls
  double min_sample_s = 0;
  int max_calls = 1 << 20;
  // > 0: `samples` is at most; they stop once the median is known to this
  // fraction (model/statistics' median_rel_halfwidth, the calibration's rule)
  double target_rel_halfwidth = 0;
};

// Around the timed samples: `barrier` once after the warm-up (neighbours
// time at once), `drain` before it (the warm-up's asynchronous work
// finished), `before_sample` untimed before each sample (cache eviction).
struct TimerHooks {
  std::function<void()> barrier, drain, before_sample;
  // with a target: every rank's verdict (this one's in, all ranks' out), so
  // that neighbours that time together also stop together
  std::function<bool(bool)> agree;
};

// The time per call of f, summarized over the samples.
template <typename F>
Stat time_calls(const Repeats& r, F&& f, BenchClock& clock, const TimerHooks& hooks = {}) {
  for (int i = 0; i < r.warmup; ++i) f();
  auto sample = [&](int calls) {
    if (hooks.before_sample) hooks.before_sample();
    clock.start();
    for (int c = 0; c < calls; ++c) f();
    return clock.stop();
  };
  int calls = r.calls;
  if (r.min_sample_s > 0)
    while (calls < r.max_calls && sample(calls) < r.min_sample_s) calls = calls * 2 > r.max_calls ? r.max_calls : calls * 2;
  if (hooks.drain) hooks.drain();
  if (hooks.barrier) hooks.barrier();
  std::vector<double> t;
  for (int s = 0; s < r.samples; ++s) {
    t.push_back(sample(calls) / calls);
    if (r.target_rel_halfwidth > 0 && static_cast<int>(t.size()) >= kMinStopSamples) {
      const bool known = median_rel_halfwidth(t) <= r.target_rel_halfwidth;
      if (hooks.agree ? hooks.agree(known) : known) break;
    }
  }
  return summarize(std::move(t));
}

template <typename F>
Stat time_calls(const Repeats& r, F&& f, const TimerHooks& hooks = {}) {
  HostClock clock;
  return time_calls(r, std::forward<F>(f), clock, hooks);
}

}  // namespace ks
