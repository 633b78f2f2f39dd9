#pragma once
// Where kanscale finds what it ships (clusters, workloads, calibrations with
// their measurement files, plans, studies, sites, its Python package): the
// directory named by KANSCALE_DATA, else share/kanscale beside the
// executable's bin/ (`<exe dir>/../share/kanscale`). An installed kanscale
// and the build tree's (the build stages build/share/kanscale) find it the
// same way; nothing is compiled in.
//
// A path written inside a file resolves against that file's directory, then
// against the data directory; a path on the command line resolves against
// the working directory (it is opened as given).
#include <string>

namespace ks {

struct DataDir {
  std::string path;  // absolute, without a trailing '/'
  std::string from;  // "KANSCALE_DATA" or "executable"
};

// The running executable's absolute path (/proc/self/exe).
std::string executable_path();

// The data directory. Throws InputError (one line naming where it looked)
// when KANSCALE_DATA names no directory, or when it is unset and none
// stands beside the executable.
const DataDir& data_dir();

// `relative` (e.g. "configs/clusters/local-cpu.yaml") inside the data
// directory; throws InputError naming the place when it is not there.
std::string shipped_path(const std::string& relative);

// A path named inside `naming_file`: absolute as it is; else against the
// naming file's directory; else against the data directory. Returns the
// path to open, in the first form that exists (`naming_file`'s directory
// joined as the user gave it, so relative stays relative). Throws
// InputError "file X not found (looked in A and B)" when neither holds it.
std::string resolve_named_path(const std::string& given, const std::string& naming_file);

// A path given on the command line (or to a loader by the program): as it
// is when it exists (relative to the working directory); else, when
// relative, the shipped file of that name in the data directory (so that
// `configs/clusters/dgx-a100.yaml` works from any directory). Throws
// InputError "file X not found (looked in A and B)" when neither holds it.
std::string resolve_given_path(const std::string& given);

}  // namespace ks
