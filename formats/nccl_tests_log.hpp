#pragma once
// Reads the logs users already have from nccl-tests (all_reduce_perf and
// friends, any version's table layout: with or without the `root` column,
// `#wrong` or `error`, out-of-place and in-place columns, the `Rank ... on
// HOST` lines that give the topology, NCCL_DEBUG noise between them), and
// kanscale measure allreduce's output, which uses the same layout.
#include <string>

#include "model/records.hpp"

namespace ks {

// Throws InputError naming the file and line for a table row it cannot read,
// or a log without a table.
NcclTestsLog parse_nccl_tests_log(const std::string& text, const std::string& file);
NcclTestsLog read_nccl_tests_log(const std::string& path);

}  // namespace ks
