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

// The same for a directory that a command fills (created when missing;
// its parent must exist).
void check_output_dir(const std::string& path, const std::string& what);

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
// check_replaceable_dir refuses (InputError naming `what`) a target that
// exists and is not a directory, or is a non-empty directory without
// `marker` (a file only this command writes): kanscale never removes a
// directory it did not make.
void check_replaceable_dir(const std::string& target, const std::string& marker, const std::string& what);
// Creates the fresh directory beside `target`; returns its path.
std::string make_staging_dir(const std::string& target);
// Puts `staging` in place of `target`; an old target is removed.
void commit_staging_dir(const std::string& staging, const std::string& target);
// Removes a staging directory (after a failure); never throws.
void discard_staging_dir(const std::string& staging) noexcept;

}  // namespace ks
