#include "base/data_dir.hpp"

#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "common/error.hpp"

namespace ks {

namespace fs = std::filesystem;

namespace {
bool is_dir(const std::string& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}
bool exists(const std::string& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}
std::string without_trailing_slash(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}
}  // namespace

std::string executable_path() {
  char exe[PATH_MAX] = {0};
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) throw InputError("cannot find the kanscale executable (/proc/self/exe)");
  return std::string(exe, static_cast<std::size_t>(n));
}

const DataDir& data_dir() {
  static std::once_flag once;
  static DataDir dir;
  static std::string error;
  std::call_once(once, [] {
    const char* env = std::getenv("KANSCALE_DATA");
    if (env && *env) {
      std::error_code ec;
      const fs::path p = fs::absolute(env, ec);
      if (ec || !is_dir(p.string())) {
        error = "KANSCALE_DATA=" + std::string(env) + ": not a directory (expected kanscale's data directory, share/kanscale of an installation)";
        return;
      }
      dir = {without_trailing_slash(p.lexically_normal().string()), "KANSCALE_DATA"};
      return;
    }
    std::string exe;
    try {
      exe = executable_path();
    } catch (const InputError& e) {
      error = e.what();
      return;
    }
    const fs::path p = (fs::path(exe).parent_path() / ".." / "share" / "kanscale").lexically_normal();
    if (!is_dir(p.string())) {
      error = "kanscale's data directory was not found: KANSCALE_DATA is not set and " + p.string() +
              " (share/kanscale beside the executable's directory) does not exist";
      return;
    }
    dir = {without_trailing_slash(p.string()), "executable"};
  });
  if (!error.empty()) throw InputError(error);
  return dir;
}

std::string shipped_path(const std::string& relative) {
  const std::string p = data_dir().path + "/" + relative;
  if (!exists(p)) throw InputError("kanscale's shipped " + relative + " is missing from its data directory " + data_dir().path);
  return p;
}

namespace {
// `given` in the data directory, once `looked` (where it was looked for
// first, already missing) holds it not: `no_data` leads the error when
// there is no data directory.
std::string shipped_else_throw(const std::string& given, const std::string& looked, const std::string& no_data) {
  std::string shipped;
  try {
    shipped = data_dir().path + "/" + given;
  } catch (const InputError& e) {
    throw InputError(no_data + ", and " + e.what());
  }
  if (exists(shipped)) return shipped;
  throw InputError("file " + given + " not found (looked in " + looked + " and " + shipped + ")");
}
}  // namespace

std::string resolve_named_path(const std::string& given, const std::string& naming_file) {
  if (given.empty()) throw InputError("expected a file name, got an empty one");
  if (given[0] == '/') {
    if (!exists(given)) throw InputError("file " + given + " does not exist");
    return given;
  }
  const std::string parent = fs::path(naming_file).parent_path().string();
  const std::string beside = parent.empty() ? given : parent + "/" + given;
  if (exists(beside)) return beside;
  return shipped_else_throw(given, beside, "file " + given + " not found beside " + naming_file + " (" + beside + ")");
}

std::string resolve_given_path(const std::string& given) {
  if (given.empty() || given[0] == '/' || exists(given)) return given;
  return shipped_else_throw(given, given, "file " + given + " not found (looked in " + given + ")");
}

}  // namespace ks
