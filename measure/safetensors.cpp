#include "safetensors.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

#include "formats/measurement_records.hpp"
#include "formats/yaml_reader.hpp"

namespace ks {

std::string safetensors_bytes(const StFile& f) {
  nlohmann::json h = nlohmann::json::object();
  std::uint64_t off = 0;
  for (const auto& [name, t] : f.tensors) {
    const std::uint64_t n = 4ULL * t.data.size();
    h[name] = {{"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {off, off + n}}};
    off += n;
  }
  if (!f.metadata.empty()) h["__metadata__"] = f.metadata;
  std::string header = h.dump();
  while (header.size() % 8) header += ' ';  // align the data to 8 bytes
  std::string out(8, '\0');
  const std::uint64_t len = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((len >> (8 * i)) & 0xff);
  out += header;
  for (const auto& [name, t] : f.tensors) {
    // little-endian hosts only (x86-64, aarch64)
    out.append(reinterpret_cast<const char*>(t.data.data()), 4 * t.data.size());
  }
  return out;
}

StFile read_safetensors(const std::string& path) {
  const std::string bytes = read_input_file(path, "a safetensors file");
  auto bad = [&](const std::string& what) { return InputError(path + ": not a valid safetensors file: " + what); };
  if (bytes.size() < 8) throw bad("shorter than its 8-byte header length (truncated?)");
  std::uint64_t len = 0;
  for (int i = 0; i < 8; ++i) len |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  if (len > bytes.size() - 8) throw bad("header of " + std::to_string(len) + " bytes runs past the end of the file (truncated?)");
  nlohmann::json h;
  try {
    h = nlohmann::json::parse(bytes.substr(8, len));
  } catch (const std::exception& e) {
    throw bad(std::string("header is not JSON: ") + json_message(e));
  }
  if (!h.is_object()) throw bad("header is not a JSON object");
  const std::uint64_t data_size = bytes.size() - 8 - len;
  const char* data = bytes.data() + 8 + len;
  StFile f;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
  for (auto it = h.begin(); it != h.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it->is_object()) throw bad("__metadata__ is not an object");
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (!m->is_string()) throw bad("metadata value of '" + m.key() + "' is not a string");
        f.metadata[m.key()] = m->get<std::string>();
      }
      continue;
    }
    const auto& t = *it;
    if (!t.is_object() || !t.contains("dtype") || !t.contains("shape") || !t.contains("data_offsets"))
      throw bad("tensor '" + it.key() + "' lacks dtype, shape or data_offsets");
    if (t["dtype"] != "F32") throw bad("tensor '" + it.key() + "' has dtype " + t["dtype"].dump() + ", kanscale reads F32");
    StTensor st;
    if (!t["shape"].is_array()) throw bad("tensor '" + it.key() + "' has a shape that is not a list");
    std::uint64_t n = 1;
    for (const auto& d : t["shape"]) {
      if (!d.is_number_integer() || d.get<std::int64_t>() < 0) throw bad("tensor '" + it.key() + "' has a bad shape");
      st.shape.push_back(d.get<std::int64_t>());
      // a product past 2^60 cannot match any data range (and 4 n bytes must not wrap)
      if (__builtin_mul_overflow(n, static_cast<std::uint64_t>(d.get<std::int64_t>()), &n) || n > (std::uint64_t{1} << 60))
        throw bad("tensor '" + it.key() + "' has a shape larger than any file");
    }
    const auto& o = t["data_offsets"];
    if (!o.is_array() || o.size() != 2 || !o[0].is_number_unsigned() || !o[1].is_number_unsigned())
      throw bad("tensor '" + it.key() + "' has bad data_offsets");
    const auto a = o[0].get<std::uint64_t>(), b = o[1].get<std::uint64_t>();
    if (b < a || b > data_size) throw bad("tensor '" + it.key() + "' lies outside the data (truncated?)");
    if (b - a != 4 * n) throw bad("tensor '" + it.key() + "': shape and data_offsets disagree");
    ranges.emplace_back(a, b);
    st.data.resize(n);
    if (n) std::memcpy(st.data.data(), data + a, 4 * n);
    f.tensors.emplace(it.key(), std::move(st));
  }
  std::sort(ranges.begin(), ranges.end());
  for (std::size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second) throw bad("tensors overlap");
  return f;
}

}  // namespace ks
