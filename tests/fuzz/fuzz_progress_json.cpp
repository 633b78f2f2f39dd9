// kanscale bench progress JSON files (how a non-blocking all-reduce moves
// while the ranks compute), as the fit's records read them (kanscale fit
// --progress), fitted into mpi_progress and written.
#include "fuzz_target.hpp"
#include "model/calibration_fit.hpp"
#include "formats/calibration_file.hpp"
#include "formats/measurement_records.hpp"

KS_FUZZ_TARGET(progress_json) {
  ks::fuzz::enter_source_dir();
  const std::string path = ks::fuzz::write_temp("progress.json", data, size);
  ks::fuzz::expect_no_crash([&] {
    const ks::FitInputs in = ks::read_fit_inputs({}, {}, {}, {}, {}, {path});
    (void)ks::write_calibration(ks::fit_calibration(in, "fuzz").file, "");
  });
}
