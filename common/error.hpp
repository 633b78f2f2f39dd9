#pragma once
// The one thing the pure model (model/) and the machinery (base/) share:
// the error for bad input (configs, data files, usage, output paths). The
// CLI prints what() as one line and exits 2.
#include <stdexcept>

namespace ks {

struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace ks
