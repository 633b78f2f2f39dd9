// fuzz_replay: every file in tests/fuzz/corpus/<target>/ and
// tests/fuzz/regressions/<target>/ through its fuzz target's entry function,
// in the normal build (no libFuzzer). A crash, an abort or a sanitizer report
// ends the process with the file's name on stderr; an exception is a normal
// answer to bad bytes. `fuzz_replay [TARGET FILE...]` replays given files.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz_target.hpp"

namespace fs = std::filesystem;

namespace {

// The file in progress, for the fatal-signal handler (async-signal-safe writes only).
char g_current[4096] = "";

void on_fatal(int sig) {
  const char* msg = "fuzz_replay: crashed on ";
  (void)!write(STDERR_FILENO, msg, std::strlen(msg));
  (void)!write(STDERR_FILENO, g_current, std::strlen(g_current));
  (void)!write(STDERR_FILENO, "\n", 1);
  signal(sig, SIG_DFL);
  raise(sig);
}

int replay(const ks::fuzz::Target& t, const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    std::cerr << "fuzz_replay: cannot read " << file << "\n";
    return 1;
  }
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::snprintf(g_current, sizeof g_current, "%s (target %s)", file.c_str(), t.name);
  t.fn(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  for (int sig : {SIGSEGV, SIGABRT, SIGFPE, SIGBUS, SIGILL}) signal(sig, on_fatal);
  const fs::path root = fs::path(KANSCALE_SOURCE_DIR) / "tests" / "fuzz";
  auto& targets = ks::fuzz::registry();
  std::sort(targets.begin(), targets.end(), [](const auto& a, const auto& b) { return std::strcmp(a.name, b.name) < 0; });
  if (argc >= 3) {  // one target, given files
    for (const auto& t : targets)
      if (t.name == std::string(argv[1])) {
        for (int i = 2; i < argc; ++i)
          if (replay(t, argv[i])) return 1;
        return 0;
      }
    std::cerr << "fuzz_replay: no target '" << argv[1] << "'\n";
    return 2;
  }
  int total = 0;
  for (const auto& t : targets) {
    int n = 0;
    for (const char* kind : {"corpus", "regressions"}) {
      const fs::path dir = root / kind / t.name;
      if (!fs::is_directory(dir)) continue;
      std::vector<fs::path> files;
      for (const auto& e : fs::directory_iterator(dir))
        if (e.is_regular_file()) files.push_back(e.path());
      std::sort(files.begin(), files.end());
      for (const auto& f : files) {
        if (replay(t, f)) return 1;
        ++n;
      }
    }
    std::cout << t.name << ": " << n << " file(s) replayed\n";
    total += n;
  }
  if (total == 0) {
    std::cerr << "fuzz_replay: no files under " << root << "\n";
    return 1;
  }
  std::cout << "fuzz_replay: " << total << " file(s), " << targets.size() << " target(s), no crash\n";
  return 0;
}
