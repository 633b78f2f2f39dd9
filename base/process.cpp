#include "process.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <mutex>

#include <cctype>
#include <cstddef>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <stdexcept>

extern char** environ;

namespace ks {

namespace {
// The children running now (each the leader of its own group) and the
// temporary directories to remove, as the signal handler reads them: fixed
// arrays of atomics and characters, nothing allocated.
constexpr int kMaxChildren = 4096;
std::atomic<int> g_children[kMaxChildren];
constexpr int kMaxTempDirs = 64;
constexpr std::size_t kTempPathMax = 256;
char g_temp_dirs[kMaxTempDirs][kTempPathMax];
std::atomic<bool> g_temp_used[kMaxTempDirs];

// Removes a flat directory and what it holds, with system calls alone
// (opendir and readdir are not async-signal-safe; getdents64 is a call).
void remove_flat_dir(const char* dir) {
  const int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    alignas(8) char buf[4096];
    for (;;) {
      const long n = syscall(SYS_getdents64, fd, buf, sizeof buf);
      if (n <= 0) break;
      for (long off = 0; off < n;) {
        struct Entry {
          unsigned long long ino;
          long long off;
          unsigned short reclen;
          unsigned char type;
          char name[1];
        };
        const auto* e = reinterpret_cast<const Entry*>(buf + off);
        const char* name = buf + off + offsetof(Entry, name);
        if (!(name[0] == '.' && (name[1] == 0 || (name[1] == '.' && name[2] == 0)))) unlinkat(fd, name, 0);
        off += e->reclen;
      }
    }
    close(fd);
  }
  rmdir(dir);
}

// SIGINT, SIGTERM, SIGHUP while children may run: pass it on to every
// child's group, give them 3 s, SIGKILL what is left, remove the temporary
// directories, and die of the same signal.
extern "C" void on_stop_signal(int sig) {
  for (auto& c : g_children)
    if (const int pid = c.load(); pid > 0) kill(-pid, sig);
  for (int tick = 0; tick < 60; ++tick) {
    bool any = false;
    for (auto& c : g_children)
      if (const int pid = c.load(); pid > 0) {
        int status = 0;
        if (waitpid(pid, &status, WNOHANG) == pid) c.store(0);
        else any = true;
      }
    if (!any) break;
    const timespec pause{0, 50000000};
    nanosleep(&pause, nullptr);
  }
  for (auto& c : g_children)
    if (const int pid = c.load(); pid > 0) kill(-pid, SIGKILL);
  for (int i = 0; i < kMaxTempDirs; ++i)
    if (g_temp_used[i].load()) remove_flat_dir(g_temp_dirs[i]);
  signal(sig, SIG_DFL);
  raise(sig);
}

void install_stop_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&sa.sa_mask, sig);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
  });
}

void register_child(int pid) {
  install_stop_handlers();
  for (auto& c : g_children) {
    int free = 0;
    if (c.compare_exchange_strong(free, pid)) return;
  }
}

void forget_child(int pid) {
  for (auto& c : g_children) {
    int mine = pid;
    if (c.compare_exchange_strong(mine, 0)) return;
  }
}

int exit_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 255;
}

double seconds_since(const timespec& t) {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<double>(now.tv_sec - t.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec - t.tv_nsec);
}
}  // namespace

namespace {
// What a kanscale stopped by SIGKILL could not remove: scratch directories
// of this prefix whose process is gone (the name carries its pid), removed
// by the next one. A live process's, or another user's, are left alone.
void remove_orphans(const std::string& prefix) {
  const std::string head = prefix + "-";
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/tmp", ec)) {
    const std::string name = e.path().filename().string();
    if (name.compare(0, head.size(), head) != 0) continue;
    const std::size_t dash = name.find('-', head.size());
    if (dash == std::string::npos) continue;
    const std::string pid_text = name.substr(head.size(), dash - head.size());
    if (pid_text.empty() || pid_text.find_first_not_of("0123456789") != std::string::npos || pid_text.size() > 9) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(pid_text));
    struct stat st {};
    if (lstat(e.path().c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid()) continue;
    if (kill(pid, 0) == 0 || errno != ESRCH) continue;  // alive (or not ours to ask)
    remove_flat_dir(e.path().c_str());
  }
}
}  // namespace

ScratchDir::ScratchDir(const std::string& prefix) {
  remove_orphans(prefix);
  std::string templ = "/tmp/" + prefix + "-" + std::to_string(getpid()) + "-XXXXXX";
  if (templ.size() >= kTempPathMax) throw std::runtime_error("a temporary directory's name is too long: " + templ);
  if (!mkdtemp(templ.data())) throw std::runtime_error("cannot create a temporary directory " + templ + ": " + std::strerror(errno));
  path_ = templ;
  install_stop_handlers();
  for (int i = 0; i < kMaxTempDirs; ++i) {
    bool used = false;
    if (g_temp_used[i].load()) continue;
    std::memcpy(g_temp_dirs[i], path_.c_str(), path_.size() + 1);
    if (g_temp_used[i].compare_exchange_strong(used, true)) {
      slot_ = i;
      break;
    }
  }
}

ScratchDir::~ScratchDir() {
  if (slot_ >= 0) g_temp_used[slot_].store(false);
  remove_flat_dir(path_.c_str());
}

int run_process(const ProcessSpec& spec) { return wait_process(start_process(spec)); }

int run_process_for(const ProcessSpec& spec, double timeout_s) {
  const int pid = start_process(spec);
  timespec start{};
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (;;) {
    int status = 0;
    const pid_t got = waitpid(pid, &status, WNOHANG);
    if (got == pid || (got < 0 && errno != EINTR)) {
      forget_child(pid);
      return got == pid ? exit_code(status) : 255;
    }
    if (seconds_since(start) > timeout_s) {
      kill(-pid, SIGTERM);
      const timespec grace{3, 0};
      nanosleep(&grace, nullptr);
      kill(-pid, SIGKILL);
      wait_process(pid);
      return kTimedOut;
    }
    const timespec pause{0, 10000000};
    nanosleep(&pause, nullptr);
  }
}

int start_process(const ProcessSpec& spec) {
  if (spec.argv.empty()) throw std::runtime_error("start_process: no program");
  // Everything the child needs is built before fork: between fork and exec
  // only async-signal-safe calls are made.
  std::vector<char*> argv;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    const std::string entry(*e);
    bool replaced = false;
    for (const auto& x : spec.extra_env) replaced |= entry.compare(0, x.find('=') + 1, x, 0, x.find('=') + 1) == 0;
    if (!replaced) env_strings.push_back(entry);
  }
  for (const auto& x : spec.extra_env) env_strings.push_back(x);
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  int report[2];  // the child writes errno here when it cannot start
  if (pipe2(report, O_CLOEXEC) != 0) throw std::runtime_error(std::string("cannot create a pipe: ") + std::strerror(errno));
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    close(report[0]);
    close(report[1]);
    throw std::runtime_error(std::string("cannot start ") + spec.argv[0] + ": " + std::strerror(errno));
  }
  if (pid == 0) {
    // a group of its own (stopped as one), SIGTERM when kanscale dies, and
    // no terminal input (a background group reading it would be stopped)
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(127);  // kanscale died before prctl
    if (const int null = open("/dev/null", O_RDONLY); null >= 0) {
      dup2(null, 0);
      if (null > 0) close(null);
    }
    int err = 0;
    const char* step = "chdir";
    if (!spec.cwd.empty() && chdir(spec.cwd.c_str()) != 0) {
      err = errno;
    } else if (!spec.log_path.empty()) {
      step = "open the log";
      const int fd = open(spec.log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0644);
      if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0) err = errno;
      if (fd > 2) close(fd);
    }
    if (err == 0) {
      step = "exec";
      execvpe(argv[0], argv.data(), envp.data());
      err = errno;
    }
    (void)!write(report[1], &err, sizeof err);
    (void)!write(report[1], step, std::strlen(step));
    _exit(127);
  }
  close(report[1]);
  setpgid(pid, pid);  // (the child does too: whichever runs first)
  register_child(pid);
  int child_err = 0;
  char step[32] = {0};
  const ssize_t got = read(report[0], &child_err, sizeof child_err);
  if (got == static_cast<ssize_t>(sizeof child_err)) (void)!read(report[0], step, sizeof step - 1);
  close(report[0]);
  if (got == static_cast<ssize_t>(sizeof child_err)) {
    wait_process(pid);
    throw std::runtime_error("cannot start " + spec.argv[0] + " (" + step + "): " + std::strerror(child_err));
  }
  return pid;
}

int wait_process(int pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      forget_child(pid);
      return 255;
    }
  }
  forget_child(pid);
  return exit_code(status);
}

std::vector<int> run_processes(const std::vector<ProcessSpec>& specs, double grace_s, int* first_failed) {
  if (first_failed) *first_failed = -1;
  std::vector<int> pids, codes(specs.size(), -1);
  try {
    for (const auto& s : specs) pids.push_back(start_process(s));
  } catch (...) {
    for (int pid : pids) kill(-pid, SIGTERM);
    for (int pid : pids) wait_process(pid);
    throw;
  }
  std::size_t left = pids.size();
  bool stopping = false, killed = false;
  timespec first_done{}, stop_at{};  // when the first one ended with status 0; when the rest were sent SIGTERM
  bool any_done = false;
  auto stop_rest = [&] {
    stopping = true;
    clock_gettime(CLOCK_MONOTONIC, &stop_at);
    for (std::size_t j = 0; j < pids.size(); ++j)
      if (codes[j] < 0) kill(-pids[j], SIGTERM);  // the rank's whole group: a wrapper's children too
  };
  constexpr double kKillAfterS = 10;  // one that ignores SIGTERM that long gets SIGKILL
  while (left > 0) {
    if (any_done && !stopping && grace_s > 0 && seconds_since(first_done) > grace_s) stop_rest();
    if (stopping && !killed && seconds_since(stop_at) > kKillAfterS) {
      killed = true;
      for (std::size_t j = 0; j < pids.size(); ++j)
        if (codes[j] < 0) kill(-pids[j], SIGKILL);
    }
    // only our own children are reaped (waitpid(-1) would take any child's status)
    for (std::size_t i = 0; i < pids.size(); ++i) {
      if (codes[i] >= 0) continue;
      int status = 0;
      const pid_t got = waitpid(pids[i], &status, WNOHANG);
      if (got == 0 || (got < 0 && errno == EINTR)) continue;
      codes[i] = got < 0 ? 255 : exit_code(status);
      forget_child(pids[i]);
      --left;
      if (codes[i] == 0 && !any_done) {
        any_done = true;
        clock_gettime(CLOCK_MONOTONIC, &first_done);
      }
      // one rank failed: the others would wait for it in a collective forever
      if (codes[i] != 0 && !stopping) {
        if (first_failed) *first_failed = static_cast<int>(i);
        stop_rest();
      }
    }
    if (left > 0) {
      const timespec pause{0, 5000000};  // 5 ms between polls
      nanosleep(&pause, nullptr);
    }
  }
  return codes;
}

std::string shell_quote(const std::string& word) {
  bool plain = !word.empty();
  for (unsigned char ch : word)
    plain &= std::isalnum(ch) || std::strchr("_-./:=,+@%", ch) != nullptr;
  if (plain) return word;
  std::string q = "'";
  for (char ch : word) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return q + "'";
}

std::string shell_words(const std::vector<std::string>& words) {
  std::string s;
  for (const auto& w : words) s += (s.empty() ? "" : " ") + shell_quote(w);
  return s;
}

}  // namespace ks
