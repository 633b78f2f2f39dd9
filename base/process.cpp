#include "process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <stdexcept>

extern char** environ;

namespace ks {

int run_process(const ProcessSpec& spec) { return wait_process(start_process(spec)); }

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
  const pid_t pid = fork();
  if (pid < 0) {
    close(report[0]);
    close(report[1]);
    throw std::runtime_error(std::string("cannot start ") + spec.argv[0] + ": " + std::strerror(errno));
  }
  if (pid == 0) {
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

namespace {
int exit_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 255;
}
}  // namespace

int wait_process(int pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return 255;
  }
  return exit_code(status);
}

std::vector<int> run_processes(const std::vector<ProcessSpec>& specs, double grace_s, int* first_failed) {
  if (first_failed) *first_failed = -1;
  std::vector<int> pids, codes(specs.size(), -1);
  try {
    for (const auto& s : specs) pids.push_back(start_process(s));
  } catch (...) {
    for (int pid : pids) kill(pid, SIGTERM);
    for (int pid : pids) wait_process(pid);
    throw;
  }
  std::size_t left = pids.size();
  bool stopping = false, killed = false;
  timespec first_done{}, stop_at{};  // when the first one ended with status 0; when the rest were sent SIGTERM
  bool any_done = false;
  auto since = [](const timespec& t) {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    return static_cast<double>(now.tv_sec - t.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec - t.tv_nsec);
  };
  auto stop_rest = [&] {
    stopping = true;
    clock_gettime(CLOCK_MONOTONIC, &stop_at);
    for (std::size_t j = 0; j < pids.size(); ++j)
      if (codes[j] < 0) kill(pids[j], SIGTERM);
  };
  constexpr double kKillAfterS = 10;  // one that ignores SIGTERM that long gets SIGKILL
  while (left > 0) {
    if (any_done && !stopping && grace_s > 0 && since(first_done) > grace_s) stop_rest();
    if (stopping && !killed && since(stop_at) > kKillAfterS) {
      killed = true;
      for (std::size_t j = 0; j < pids.size(); ++j)
        if (codes[j] < 0) kill(pids[j], SIGKILL);
    }
    // only our own children are reaped (waitpid(-1) would take any child's status)
    for (std::size_t i = 0; i < pids.size(); ++i) {
      if (codes[i] >= 0) continue;
      int status = 0;
      const pid_t got = waitpid(pids[i], &status, WNOHANG);
      if (got == 0 || (got < 0 && errno == EINTR)) continue;
      codes[i] = got < 0 ? 255 : exit_code(status);
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
