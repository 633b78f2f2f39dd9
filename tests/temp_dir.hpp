#pragma once
// A fresh directory under /tmp for one test, removed with everything in it
// when the test ends.
#include <stdlib.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

// A whole file's bytes ("" when it cannot be read).
inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/kanscale-test-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf " + path).c_str()); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string operator/(const std::string& f) const { return path + "/" + f; }
  // writes `text` to `name` in the directory; returns its path
  std::string write(const std::string& name, const std::string& text) const {
    const std::string p = *this / name;
    std::ofstream(p) << text;
    return p;
  }
};
