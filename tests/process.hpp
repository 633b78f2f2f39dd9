#pragma once
// Runs a program as a child process from an argument vector (no shell), with
// its standard output and error captured, for black-box tests of the
// kanscale executable.
#include <fcntl.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

struct ProcessResult {
  int exit_code = -1;  // the exit status; 128 + N when killed by signal N
  std::string out, err;
};

namespace process_detail {
inline std::string slurp_fd(int fd) {
  std::string s;
  char buf[65536];
  lseek(fd, 0, SEEK_SET);
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    s.append(buf, static_cast<std::size_t>(n));
  }
  return s;
}
// An unlinked temporary file: the child writes into it, the parent reads it.
inline int temp_fd() {
  char tmpl[] = "/tmp/kanscale-proc-XXXXXX";
  const int fd = mkstemp(tmpl);
  if (fd >= 0) unlink(tmpl);
  return fd;
}
}  // namespace process_detail

// argv[0] is the program (searched in PATH when it holds no '/'); `cwd`,
// when given, is the child's working directory. Standard input is
// /dev/null. A child still running after `timeout_s` is killed by SIGALRM
// (exit_code 142), so a hang fails a test instead of stalling it.
inline ProcessResult run_process(const std::vector<std::string>& argv, const std::string& cwd = "",
                                 unsigned timeout_s = 60) {
  ProcessResult r;
  if (argv.empty()) return r;
  const int out_fd = process_detail::temp_fd(), err_fd = process_detail::temp_fd();
  if (out_fd < 0 || err_fd < 0) return r;
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    const int in_fd = open("/dev/null", O_RDONLY);
    if (in_fd >= 0) dup2(in_fd, 0);
    dup2(out_fd, 1);
    dup2(err_fd, 2);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(126);
    alarm(timeout_s);  // survives exec
    execvp(args[0], args.data());
    _exit(127);
  }
  if (pid > 0) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  r.out = process_detail::slurp_fd(out_fd);
  r.err = process_detail::slurp_fd(err_fd);
  close(out_fd);
  close(err_fd);
  return r;
}
