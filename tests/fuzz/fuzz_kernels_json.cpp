// kanscale measure kernels JSON files, as every reader takes them:
// measure kernels --resume (ks::read_kernels_resume) and the fit's records
// (kanscale fit --kernels / --runtime-memory), fitted and written.
#include "fuzz_target.hpp"
#include "measure/kernel_bench.hpp"
#include "model/calibration_fit.hpp"
#include "formats/calibration_file.hpp"
#include "formats/measurement_records.hpp"

KS_FUZZ_TARGET(kernels_json) {
  const std::string path = ks::fuzz::write_temp("kernels.json", data, size);
  // The resume check compares the file's settings with this run's: take them
  // from the file itself where it has them, so the rows get read.
  nlohmann::json meta = {{"plan", "cli"}, {"backend", "cpu"}, {"ranks", 1}, {"threads_per_rank", 1}, {"repeats", 15},
                         {"warmup", 3}, {"seed", 1}, {"shapes", nlohmann::json::array()}};
  const auto parsed = nlohmann::json::parse(reinterpret_cast<const char*>(data), reinterpret_cast<const char*>(data) + size,
                                            nullptr, false);
  if (parsed.is_object() && parsed.contains("metadata") && parsed["metadata"].is_object())
    for (auto it = meta.begin(); it != meta.end(); ++it)
      if (parsed["metadata"].contains(it.key())) it.value() = parsed["metadata"][it.key()];
  // this run's metadata is the tool's own: ranks a small count, shapes a list
  if (!meta["ranks"].is_number_unsigned() || meta["ranks"].get<std::uint64_t>() > 4096) meta["ranks"] = 1;
  const std::size_t plan_shapes = meta["shapes"].is_array() ? meta["shapes"].size() : 0;
  ks::fuzz::expect_no_crash([&] { ks::read_kernels_resume(path, meta, plan_shapes); });
  ks::fuzz::expect_no_crash([&] {
    const ks::FitInputs in = ks::read_fit_inputs({path}, {}, {}, {}, {path});
    (void)ks::write_calibration(ks::fit_calibration(in, "fuzz").file, "");
  });
}
