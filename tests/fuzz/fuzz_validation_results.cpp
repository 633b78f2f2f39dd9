// kanscale validate's results.json as validate --repeatability reads it,
// then each run predicted from another (the same cases, 5% slower).
#include "fuzz_target.hpp"
#include "validation/repeatability.hpp"

KS_FUZZ_TARGET(validation_results) {
  ks::fuzz::enter_source_dir();
  const std::string path = ks::fuzz::write_temp("results.json", data, size);
  ks::fuzz::expect_no_crash([&] {
    const ks::ValidationRun a = ks::read_validation_run(path);
    ks::ValidationRun b = a;
    b.path = path + ".other";
    for (double& t : b.measured_s) t *= 1.05;
    (void)ks::repeatability({a, b});
  });
}
