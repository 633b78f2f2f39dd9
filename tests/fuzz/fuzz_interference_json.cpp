// kanscale bench interference JSON files (the trainer's interference
// measurement), as kanscale fit --interference reads them (beside a shipped
// nccl-tests log, since fit wants a kernels, collectives or nccl-tests input).
#include <iostream>

#include "cli/commands.hpp"
#include "fuzz_target.hpp"

KS_FUZZ_TARGET(interference_json) {
  const ks::fuzz::QuietCout quiet;  // fit's report
  ks::fuzz::enter_source_dir();
  const std::string path = ks::fuzz::write_temp("interference.json", data, size);
  const std::string out = ks::fuzz::temp_dir() + "/fit.yaml";
  ks::fuzz::expect_no_crash([&] {
    ks::cli::fit({"--nccl-tests", "tests/fixtures/nccl-tests/h100_2node_16rank_allreduce.log", "--interference", path, "--out", out},
                 "fuzz");
  });
}
