#include "input_file.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "model/units.hpp"

namespace ks {

std::string read_input_file(const std::string& path, const std::string& what) {
  struct stat st {};
  if (stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw InputError(path + ": is a directory; expected " + what);
    // a device or a pipe may never end (/dev/zero, a FIFO nobody writes)
    if (!S_ISREG(st.st_mode)) throw InputError(path + ": not a regular file (a device or a pipe?); expected " + what);
    if (static_cast<double>(st.st_size) > kMaxInputFileBytes)
      throw InputError(path + ": " + format_bytes(static_cast<double>(st.st_size)) + ", more than the " +
                       format_bytes(kMaxInputFileBytes) + " that kanscale reads into memory; expected " + what);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open file");
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw InputError(path + ": cannot read file");
  return ss.str();
}

}  // namespace ks
