#pragma once
// Writing output files without harming what is already there.
//
// A regular file (or a path that does not exist yet) is written to a fresh
// temporary file in the same directory, created exclusively and never
// through a link, and renamed over the target only when every file of the
// set has been written: a reader never sees half a file, and a failure
// leaves the old files and no temporary behind. A symbolic link is
// followed and its final target replaced (the link stays a link). A
// character device or a FIFO (/dev/null, /dev/stdout, a pipe) is written
// directly, without a temporary file, so it stays what it was. A
// directory, a socket or a block device is refused.
//
// check_output_path runs before any long work starts, so that a missing
// directory or a directory named as a file fails in the first second, not
// after an hour of training.
#include <string>
#include <utility>
#include <vector>

namespace ks {

// Refuses (InputError, one line naming `what` and the path) a path that
// cannot be written as an output file: its directory is missing or not
// writable, it names a directory, a socket or a block device, or it holds
// a control character. `what` names the option or key (e.g. "--json").
void check_output_path(const std::string& path, const std::string& what);

// check_output_path for every (path, what) whose path is not empty, and no
// file named twice among them.
void check_output_paths(const std::vector<std::pair<std::string, std::string>>& paths);

// Writes every (path, content) pair as described above. Throws
// std::runtime_error when a file cannot be written; nothing is renamed
// then. Two entries naming the same file are refused.
void write_files_atomic(const std::vector<std::pair<std::string, std::string>>& files);

}  // namespace ks

namespace ks {

// A directory of outputs that lands whole: its files are written into a
// fresh directory beside the target and swapped in at the end (an
// existing target is exchanged atomically and then removed), so a reader
// sees the old set or the new one, never a mix, and an interrupted run
// leaves the old one as it was.
//
// Every directory kanscale writes into or replaces carries kOutputMarker: a
// text file that lists, one per line, every file kanscale wrote there
// (relative paths). kanscale deletes or replaces only what it made:
// check_owned_dir refuses (InputError naming `what`) a target that exists
// and is not a directory, a non-empty directory without the marker, or one
// holding a file the marker does not list (the message names that file).
// write_owned_files writes `files` (paths inside `dir`) as write_files_atomic
// does (creating their directories), after listing them in dir's marker.
// A subdirectory with a marker of its own is judged by it (a validation
// run's work/ tree); kanscale's own temporaries (write_files_atomic's
// ".NAME.PID.N.tmp") are its own.
inline constexpr const char* kOutputMarker = ".kanscale-output";
void check_owned_dir(const std::string& target, const std::string& what);
// check_owned_dir for a directory that must exist already and be kanscale's
// (validate --collect's run directory): a directory without the marker is
// refused; files the marker does not list are allowed, as the jobs that an
// emitted script ran wrote them, but kanscale writes there only the names
// it records.
void check_marked_dir(const std::string& dir, const std::string& what);
// Creates `dir` (and its parents) when missing and adds `relative` (paths
// inside it) to its marker, creating the marker; atomic.
void record_outputs(const std::string& dir, const std::vector<std::string>& relative);
// A marker in `dir` listing every file under it now, except those under a
// subdirectory with its own marker (for a fresh staging directory).
void mark_all_outputs(const std::string& dir);
void write_owned_files(const std::string& dir, const std::vector<std::pair<std::string, std::string>>& files);

// An output of a command may not be, or hold, one of its inputs: a file
// output may not be an input file (the same path after links, or the same
// device and inode: a hard link), and a directory output may not contain
// an input (its path after links lies inside, or a hard link to it does).
// One InputError naming the output's option and the input.
struct OutputPath {
  std::string path;
  std::string what;  // the option or key, e.g. "--json"
  bool directory = false;
};
void check_outputs_spare_inputs(const std::vector<std::string>& inputs, const std::vector<OutputPath>& outputs);

// Creates the fresh directory beside `target`; returns its path.
std::string make_staging_dir(const std::string& target);
// Puts `staging` in place of `target`; an old target is removed.
void commit_staging_dir(const std::string& staging, const std::string& target);
// Removes a staging directory (after a failure); never throws.
void discard_staging_dir(const std::string& staging) noexcept;

// A stable digest of `text` (FNV-1a, 64 bits, 16 hex digits): the same on
// every machine and build, for telling whether a file changed since kanscale
// wrote or read it (not a cryptographic hash).
std::string content_digest(const std::string& text);

}  // namespace ks
