#pragma once
// Reads the logs users already have from nccl-tests (all_reduce_perf and
// friends, any version's table layout: with or without the `root` column,
// `#wrong` or `error`, out-of-place and in-place columns, the `Rank ... on
// HOST` lines that give the topology, NCCL_DEBUG noise between them), and
// kanscale measure allreduce's output, which uses the same layout.
#include <cstdint>
#include <string>
#include <vector>

namespace ks {

struct NcclTestsRow {
  double bytes = 0;
  std::int64_t count = 0;
  std::string type, redop;
  double time_us[2] = {0, 0}, algbw_GBps[2] = {0, 0}, busbw_GBps[2] = {0, 0};  // out-of-place, in-place
  int line = 0;
};

struct NcclTestsLog {
  std::string file;
  int ranks = 0;  // from the Rank lines
  int nodes = 0;  // distinct hosts
  std::vector<std::string> hosts;
  std::string nccl_version;  // "NCCL version 2.14.3+cuda11.7" when logged
  std::vector<NcclTestsRow> rows;
};

// Throws InputError naming the file and line for a table row it cannot read,
// or a log without a table.
NcclTestsLog parse_nccl_tests_log(const std::string& text, const std::string& file);
NcclTestsLog read_nccl_tests_log(const std::string& path);

}  // namespace ks
