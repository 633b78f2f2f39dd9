#pragma once
// One fuzz target = one reader fed arbitrary bytes. Each tests/fuzz/fuzz_*.cpp
// defines its body with KS_FUZZ_TARGET(name); the same body is built two ways:
//   - with KS_LIBFUZZER (the KANSCALE_FUZZ=ON clang build): as libFuzzer's
//     LLVMFuzzerTestOneInput, one executable per target;
//   - in the normal build: as a function registered by name, which
//     fuzz_replay runs over every file in tests/fuzz/corpus/<name>/ and
//     tests/fuzz/regressions/<name>/.
// A reader that throws (ks::InputError, or any std::exception the CLI turns
// into one line) is a normal outcome; a crash, an abort, a sanitizer report or
// a hang is a finding.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

namespace ks::fuzz {

using TargetFn = void (*)(const std::uint8_t* data, std::size_t size);

struct Target {
  const char* name;
  TargetFn fn;
};

inline std::vector<Target>& registry() {
  static std::vector<Target> r;
  return r;
}

struct Register {
  Register(const char* name, TargetFn fn) { registry().push_back({name, fn}); }
};

// A private directory for this process's temporary files (readers that want a
// path get one here), removed at exit.
inline const std::string& temp_dir() {
  static const std::string dir = [] {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/ks-fuzz-XXXXXX";
    if (!mkdtemp(tmpl.data())) {
      std::perror("ks fuzz: mkdtemp");
      std::abort();
    }
    static const std::string keep = tmpl;
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(keep, ec);
    });
    return tmpl;
  }();
  return dir;
}

// Writes the bytes to TEMP/name and returns the path.
inline std::string write_temp(const std::string& name, const std::uint8_t* data, std::size_t size) {
  const std::string path = temp_dir() + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) {
    std::perror(("ks fuzz: writing " + path).c_str());
    std::abort();
  }
  return path;
}

// Silences std::cout (a command's report) while a reader runs.
struct QuietCout {
  QuietCout() : state_(std::cout.rdstate()) { std::cout.setstate(std::ios::failbit); }
  ~QuietCout() { std::cout.clear(state_); }
  QuietCout(const QuietCout&) = delete;
  QuietCout& operator=(const QuietCout&) = delete;

 private:
  std::ios::iostate state_;
};

// Runs a reader: exceptions are the normal answer to bad bytes.
template <typename F>
void expect_no_crash(F&& f) {
  try {
    f();
  } catch (const std::exception&) {
  }
}

// Readers resolve paths such as a plan's cluster file against the working
// directory, as the CLI does from the source tree.
inline void enter_source_dir() {
  static const bool done = [] {
    if (chdir(KANSCALE_SOURCE_DIR) != 0) std::perror("ks fuzz: chdir " KANSCALE_SOURCE_DIR);
    return true;
  }();
  (void)done;
}

}  // namespace ks::fuzz

#ifdef KS_LIBFUZZER
#define KS_FUZZ_TARGET(name)                                                          \
  static void ks_fuzz_##name(const std::uint8_t* data, std::size_t size);            \
  extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) { \
    ks::fuzz::enter_source_dir();                                                     \
    ks_fuzz_##name(data, size);                                                       \
    return 0;                                                                         \
  }                                                                                   \
  static void ks_fuzz_##name(const std::uint8_t* data, std::size_t size)
#else
#define KS_FUZZ_TARGET(name)                                                 \
  static void ks_fuzz_##name(const std::uint8_t* data, std::size_t size);   \
  static const ks::fuzz::Register ks_fuzz_register_##name(#name, ks_fuzz_##name); \
  static void ks_fuzz_##name(const std::uint8_t* data, std::size_t size)
#endif
