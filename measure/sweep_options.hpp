#pragma once
// The options of `kanscale measure allreduce|broadcast` (nccl-tests'
// letters: -b -e -f -n -w -c -r), parsed in one place: by the command, and
// by `kanscale validate`, which checks a plan's sweep options before
// anything runs and passes them on as an argument vector, never through a
// shell.
#include <string>
#include <vector>

#include "collective_sweep.hpp"

namespace ks {

struct ParsedSweep {
  SweepOptions options;
  std::string backend = "mpi";  // mpi | nccl | gloo (torch.distributed: kanscale starts the ranks)
  int ranks = 2;                // gloo: the processes kanscale starts
  std::string python, port_range = "29500-29999";  // gloo: the interpreter (resolve_python) and the rendezvous ports
  bool help = false;            // --help: `usage` holds the text to print; nothing else was checked
  bool check_only = false;      // --check-options
  std::string usage;
};

// Parses the words after `kanscale measure OP`. Every problem is one
// InputError line naming the option (e.g. "-f: the size factor must be
// above 1"). The output paths are not checked here.
ParsedSweep parse_sweep_options(const std::string& op, const std::vector<std::string>& args);

// Splits a plan's option string ("-b 8 -e 64M") into words at white space;
// nothing else is interpreted (no quotes, no variables, no substitutions).
std::vector<std::string> split_words(const std::string& text);

}  // namespace ks
