// torch.profiler Chrome traces (train --profile, a user's own job):
// ks::read_torch_trace, and the profiler steps import torch-profile splits
// a trace into (validation/torch_profile).
#include <nlohmann/json.hpp>

#include "fuzz_target.hpp"
#include "formats/torch_trace.hpp"
#include "validation/torch_profile.hpp"

KS_FUZZ_TARGET(torch_trace) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  ks::fuzz::expect_no_crash([&] {
    const nlohmann::json trace = nlohmann::json::parse(text, nullptr, false);
    if (trace.is_discarded()) return;
    for (const auto& step : ks::split_profiler_steps(trace, "fuzz.json")) {
      const auto events = ks::read_torch_trace(step, "fuzz.json");
      (void)ks::torch_class_counts(events);
    }
  });
}
