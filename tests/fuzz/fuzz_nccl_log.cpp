// nccl-tests logs (all_reduce_perf output, kanscale measure allreduce's
// table): ks::parse_nccl_tests_log.
#include "fuzz_target.hpp"
#include "formats/nccl_tests_log.hpp"

KS_FUZZ_TARGET(nccl_log) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  ks::fuzz::expect_no_crash([&] { ks::parse_nccl_tests_log(text, "fuzz.log"); });
}
