#pragma once
// Progress of a long command on standard error: a bar redrawn in place on a
// terminal, one line per finished step otherwise (a log, CI).
#include <cstddef>
#include <string>

namespace ks {

class Progress {
 public:
  // `total` steps; `unit` names them in the lines ("jobs", "scenarios").
  Progress(std::size_t total, std::string unit);
  // Before step `done + 1` starts: the bar with `what` (terminal only).
  void starting(const std::string& what);
  // After a step: the bar advances, or one line "prefix: unit k/total done (what)".
  void finished(const std::string& what, const std::string& prefix = "");
  // The full bar and its closing line (terminal only).
  void close();

 private:
  std::size_t total_, done_ = 0;
  std::string unit_;
  bool tty_;
};

}  // namespace ks
