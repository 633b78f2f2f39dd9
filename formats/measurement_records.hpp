#pragma once
// The measurement files kanscale writes (measure kernels, measure allreduce
// and broadcast, bench interference and progress, train --json) read into
// and written from their records (model/records.hpp), in one place:
// every field's type and range is checked here, and an InputError names the
// file, the row and the key. What a field means for a fit (a time must be
// positive, a point must have no wrong results) is the fit's business
// (calibration_fit).
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/calibration_fit.hpp"
#include "model/records.hpp"

namespace ks {

// A JSON file, parsed; InputError for a directory, a file that cannot be
// opened or text that is not JSON (`what`: the kind of file expected).
// A JSON library error as a reader shows it: the message without nlohmann's
// "[json.exception.KIND.N]" tag.
std::string json_message(const std::exception& e);
nlohmann::json read_json_file(const std::string& path, const char* what);
nlohmann::json to_json(const KernelRecord& r);
// Row `index` of `path` (an InputError names rows[index].<key>). With
// `complete` every field the writer writes is required (a resume writes them
// back); otherwise what a fit reads: op, time, FLOPs and bytes, a layer's
// shape, and for a warm layer whether it was stable and its CV.
KernelRecord kernel_record_from_json(const nlohmann::json& r, const std::string& path, std::size_t index, bool complete);
nlohmann::json to_json(const KernelMemoryRecord& r);
// memory[index]: the shape and peak required (rank too with `complete`);
// a shape kanscale could not have measured is refused.
KernelMemoryRecord kernel_memory_from_json(const nlohmann::json& r, const std::string& path, std::size_t index, bool complete);
KernelsFile read_kernels_file(const std::string& path);
// metadata.machine as measure kernels writes it (read back by read_kernels_file).
nlohmann::json machine_json(const Machine& m);
// A kernels file read only for its runtime memory (fit --runtime-memory).
KernelsFile read_runtime_memory_file(const std::string& path);
nlohmann::json to_json(const CollectivePoint& p);
// Point `index` of `path`: types checked (an InputError names
// points[index].<key>); with `complete`, every field that the sweep writes
// must be there (count, and time, bandwidths and #wrong on both sides).
CollectivePoint collective_point_from_json(const nlohmann::json& p, const std::string& path, std::size_t index, bool complete);
CollectiveSweepFile read_collective_sweep_file(const std::string& path);
nlohmann::json to_json(const TrainSummary& s);
// The "summary" object of a train --json file, every field checked
// (InputError naming `path` and the key).
TrainSummary train_summary_from_json(const nlohmann::json& summary, const std::string& path);
nlohmann::json to_json(const InterferenceFile& f);
InterferenceFile read_interference_file(const std::string& path);
nlohmann::json to_json(const ProgressFile& f);
ProgressFile read_progress_file(const std::string& path);

// kanscale measure torch-ops' file (measure/python/kanscale_torch/op_bench.py).
TorchOpsFile read_torch_ops_file(const std::string& path);

// The files a FitInputs needs, read (each reader checks its own file).
FitInputs read_fit_inputs(const std::vector<std::string>& kernels, const std::vector<std::string>& collectives,
                          const std::vector<std::string>& interference, const std::vector<std::string>& nccl_tests,
                          const std::vector<std::string>& runtime_memory, const std::vector<std::string>& progress = {},
                          const std::vector<std::string>& torch_ops = {});

}  // namespace ks
