// kanscale measure allreduce / broadcast JSON files, as both readers take
// them: measure allreduce --resume (ks::read_sweep_resume) and
// kanscale fit --collectives.
#include <iostream>

#include "cli/commands.hpp"
#include "fuzz_target.hpp"
#include "measure/collective_sweep.hpp"

KS_FUZZ_TARGET(sweep_json) {
  const ks::fuzz::QuietCout quiet;  // fit's report
  const std::string path = ks::fuzz::write_temp("sweep.json", data, size);
  // The resume check compares the file's settings with this run's: take them
  // from the file itself where it has them, so the points get read.
  ks::SweepOptions o;
  o.min_bytes = 8, o.max_bytes = 1 << 20, o.factor = 2;
  nlohmann::json meta = {{"op", "allreduce"}, {"ranks", 2}, {"min_bytes", o.min_bytes}, {"max_bytes", o.max_bytes},
                         {"factor", o.factor}, {"iters", 20}, {"warmup_iters", 5}, {"check", true}, {"nonblocking", false}};
  const auto parsed = nlohmann::json::parse(reinterpret_cast<const char*>(data), reinterpret_cast<const char*>(data) + size,
                                            nullptr, false);
  if (parsed.is_object() && parsed.contains("metadata") && parsed["metadata"].is_object())
    for (auto it = meta.begin(); it != meta.end(); ++it)
      if (parsed["metadata"].contains(it.key())) it.value() = parsed["metadata"][it.key()];
  ks::fuzz::expect_no_crash([&] { ks::read_sweep_resume(path, meta, ks::sweep_sizes(o)); });
  const std::string out = ks::fuzz::temp_dir() + "/fit.yaml";
  ks::fuzz::expect_no_crash([&] { ks::cli::fit({"--collectives", path, "--out", out}, "fuzz"); });
}
