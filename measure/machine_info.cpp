#include "machine_info.hpp"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

namespace ks {

namespace {
std::string one_line(std::string s) {
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

// This process's threads in state R (running or runnable).
int own_running_threads() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (const dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      std::ifstream st(std::string("/proc/self/task/") + e->d_name + "/stat");
      std::string line;
      std::getline(st, line);
      const auto close = line.rfind(')');
      if (close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'R') ++n;
    }
    closedir(d);
  }
  return n;
}
}  // namespace

double physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0.0;
}

Machine this_machine(const std::string& gpu, const std::string& collective_library) {
  Machine m;
  std::ifstream in("/proc/cpuinfo");
  std::string line, flags;
  while (std::getline(in, line)) {
    if (m.cpu_model.empty() && line.rfind("model name", 0) == 0) m.cpu_model = line.substr(line.find(':') + 2);
    if (flags.empty() && line.rfind("flags", 0) == 0) flags = " " + line.substr(line.find(':') + 1) + " ";
  }
  if (m.cpu_model.empty()) m.cpu_model = "unknown";
  // the extensions Eigen and the compiler's vectoriser use for fp32 work
  for (const char* f : {"sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_bf16", "amx_tile", "asimd", "sve"})
    if (flags.find(std::string(" ") + f + " ") != std::string::npos) m.isa += (m.isa.empty() ? "" : " ") + std::string(f);
  m.cores = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  m.memory_bytes = physical_memory_bytes();
  m.cpu_model = one_line(m.cpu_model);
  m.gpu = one_line(gpu);
  m.collective_library = one_line(collective_library);
  return m;
}

int other_runnable_threads(int peers) {
  std::ifstream in("/proc/loadavg");
  double a, b, c;
  std::string running;  // "R/T"
  if (!(in >> a >> b >> c >> running)) return -1;
  const auto slash = running.find('/');
  if (slash == std::string::npos) return -1;
  int r = 0;
  try {
    r = std::stoi(running.substr(0, slash));
  } catch (...) {
    return -1;
  }
  return std::max(0, r - own_running_threads() - std::max(0, peers));
}

std::string busy_warning(const std::string& what, int peers) {
  const int n = other_runnable_threads(peers);
  if (n <= 0) return "";
  return "kanscale: warning: " + std::to_string(n) + " other runnable thread(s) on this machine while " + what +
         ": every timing means less";
}

}  // namespace ks
