#include "base/progress_line.hpp"

#include <unistd.h>

#include <algorithm>
#include <iostream>

namespace ks {

namespace {
constexpr int kWidth = 30;
std::string bar(std::size_t done, std::size_t total) {
  const auto filled = static_cast<std::size_t>(kWidth * done / std::max<std::size_t>(total, 1));
  return "[" + std::string(filled, '#') + std::string(static_cast<std::size_t>(kWidth) - filled, ' ') + "]";
}
}  // namespace

Progress::Progress(std::size_t total, std::string unit) : total_(total), unit_(std::move(unit)), tty_(isatty(STDERR_FILENO) != 0) {}

void Progress::starting(const std::string& what) {
  if (!tty_) return;
  std::cerr << "\r" << bar(done_, total_) << " " << done_ + 1 << "/" << total_ << ": " << what << "\033[K" << std::flush;
}

void Progress::finished(const std::string& what, const std::string& prefix) {
  ++done_;
  if (!tty_) std::cerr << (prefix.empty() ? "" : prefix + ": ") << unit_ << " " << done_ << "/" << total_ << " done (" << what << ")\n";
}

void Progress::close() {
  if (tty_) std::cerr << "\r" << bar(total_, total_) << " " << total_ << " " << unit_ << " done\033[K\n";
}

}  // namespace ks
