// kanscale measure allreduce / broadcast JSON files, as both readers take
// them: measure allreduce --resume (ks::read_sweep_resume) and
// the fit's records (kanscale fit --collectives), fitted and written.
#include "fuzz_target.hpp"
#include "measure/collective_sweep.hpp"
#include "model/calibration_fit.hpp"
#include "formats/calibration_file.hpp"
#include "formats/measurement_records.hpp"

KS_FUZZ_TARGET(sweep_json) {
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
  ks::fuzz::expect_no_crash([&] {
    const ks::FitInputs in = ks::read_fit_inputs({}, {path}, {}, {}, {});
    (void)ks::write_calibration(ks::fit_calibration(in, "fuzz").file, "");
  });
}
