#pragma once
// safetensors files (huggingface/safetensors format): an 8-byte little-endian
// header length, a JSON header {name: {dtype, shape, data_offsets}, and
// "__metadata__": {string: string}}, then the raw little-endian data.
// kanscale writes F32 tensors only.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ks {

struct StTensor {
  std::vector<std::int64_t> shape;
  std::vector<float> data;
};

struct StFile {
  std::map<std::string, StTensor> tensors;
  std::map<std::string, std::string> metadata;
};

// The bytes of a file (write them with write_files_atomic).
std::string safetensors_bytes(const StFile& f);
// Reads and checks a file: header bounds, dtypes, shapes against offsets,
// offsets inside the data and not overlapping. Throws InputError naming the
// file and what is wrong.
StFile read_safetensors(const std::string& path);

}  // namespace ks
