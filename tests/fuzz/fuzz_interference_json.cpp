// kanscale bench interference JSON files (the trainer's interference
// measurement), as the fit's records read them (kanscale fit
// --interference), fitted beside a shipped nccl-tests log and written.
#include "fuzz_target.hpp"
#include "model/calibration_fit.hpp"
#include "formats/calibration_file.hpp"
#include "formats/measurement_records.hpp"

KS_FUZZ_TARGET(interference_json) {
  ks::fuzz::enter_source_dir();
  const std::string path = ks::fuzz::write_temp("interference.json", data, size);
  ks::fuzz::expect_no_crash([&] {
    const ks::FitInputs in =
        ks::read_fit_inputs({}, {}, {path}, {"tests/fixtures/nccl-tests/h100_2node_16rank_allreduce.log"}, {});
    (void)ks::write_calibration(ks::fit_calibration(in, "fuzz").file, "");
  });
}
