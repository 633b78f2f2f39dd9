#pragma once
// Running another program from an argument vector: no shell ever sees the
// words, so nothing in a plan (a name, a path, a sweep option) can become a
// second command. Its standard output and error go to a log file.
#include <string>
#include <vector>

namespace ks {

struct ProcessSpec {
  std::vector<std::string> argv;       // argv[0] is looked up in PATH when it has no '/'
  std::string cwd;                     // "" : this process's
  std::string log_path;                // stdout and stderr (created or truncated; relative to cwd); "" : inherited
  std::vector<std::string> extra_env;  // NAME=VALUE, added to this process's environment
};

// Nothing kanscale starts outlives it. Every child starts in a process
// group of its own and gets SIGTERM when kanscale dies, even of SIGKILL
// (PR_SET_PDEATHSIG); while any child runs, SIGINT, SIGTERM and SIGHUP sent
// to kanscale go on to every child's group (SIGKILL 3 s later), the
// temporary paths registered below are removed, and kanscale then dies of
// the same signal (exit 128 + its number). Stopping a child stops its group:
// a wrapper interpreter's own children with it.

// Runs the program and waits. Returns its exit status, or 128 + the signal
// that ended it. Throws std::runtime_error when it cannot be started.
int run_process(const ProcessSpec& spec);
// The same with a time limit: a program still running after `timeout_s`
// seconds has its group stopped (SIGTERM, SIGKILL 3 s later); returns
// kTimedOut then.
inline constexpr int kTimedOut = -1;
int run_process_for(const ProcessSpec& spec, double timeout_s);
// The same in two steps: start it (its process id; throws std::runtime_error
// when it cannot be started) and wait for it (exit status, or 128 + signal).
int start_process(const ProcessSpec& spec);
int wait_process(int pid);
// Starts every spec at once and waits for all; when one ends with a non-zero
// status the others are sent SIGTERM (ranks of one job would otherwise wait
// for it in a collective forever), and likewise those still running
// `grace_s` seconds after the first ended with status 0 (0: wait for ever);
// one still running 10 s after SIGTERM gets SIGKILL. Each one's exit status,
// in order; `first_failed`: the index of the first to fail by itself (-1:
// none; the ones stopped after it are not it).
std::vector<int> run_processes(const std::vector<ProcessSpec>& specs, double grace_s = 0, int* first_failed = nullptr);

// A private temporary directory (mkdtemp under /tmp, named
// `prefix`-PID-XXXXXX, `prefix` e.g. "kanscale-torch"), removed with
// everything in it when this object goes, and by the signal handler above
// when kanscale is stopped first. SIGKILL leaves it: the next ScratchDir of
// the prefix removes those whose process is gone. Throws
// std::runtime_error when it cannot be made.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& prefix);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int slot_ = -1;
};

// A word as the shell reads it back unchanged: left bare when it holds only
// characters that no shell interprets, single-quoted otherwise.
std::string shell_quote(const std::string& word);
// The words of a command line, each quoted as needed, joined by spaces.
std::string shell_words(const std::vector<std::string>& words);

}  // namespace ks
