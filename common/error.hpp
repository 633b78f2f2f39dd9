#pragma once
// The one thing the pure model (model/) and the machinery (base/) share:
// the error for bad input (configs, data files, usage, output paths). The
// CLI prints what() as one line and exits 2.
#include <cstdio>
#include <stdexcept>
#include <string>

namespace ks {

struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A number as %g writes it, for the messages of such errors.
inline std::string gnum(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", v);
  return b;
}

}  // namespace ks
