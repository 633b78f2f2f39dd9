#pragma once
// Reading an input file whole, with the checks every reader needs: the
// formats layer and the measurement readers share it.
#include <string>

#include "common/error.hpp"

namespace ks {

// The whole of an input file; InputError "PATH: cannot open file" or "PATH:
// is a directory; expected WHAT" otherwise. Devices and pipes are refused
// (/dev/zero never ends), and so is a file above kMaxInputFileBytes: the
// largest input kanscale reads (a checkpoint of a wide model, a long
// measurement file) is tens of MB.
inline constexpr double kMaxInputFileBytes = 1024.0 * 1048576;  // 1 GiB
std::string read_input_file(const std::string& path, const std::string& what);

}  // namespace ks
