#include "output_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <random>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <cctype>
#include <set>
#include <stdexcept>

#include "common/error.hpp"

namespace ks {

namespace {

namespace fs = std::filesystem;

std::string dir_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string base_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// A path as the user wrote it is echoed in messages; control characters
// (a newline would split the one error line, or a script line) are refused.
void refuse_control_characters(const std::string& path, const std::string& what) {
  for (unsigned char ch : path)
    if (ch < 0x20 || ch == 0x7f) throw InputError(what + ": the path holds a control character; expected a plain file name");
}

struct Target {
  std::string path;  // after following every symbolic link
  bool exists = false;
  struct stat st {};
  // /dev/stdout, /dev/fd/N, /proc/self/fd/N: this process's own descriptor,
  // written in place (its file offset shared with the rest of the output)
  int own_fd = -1;
};

// Follows symbolic links (relative ones from their own directory) to the
// file that a write would reach; a dangling link resolves to where it
// points. 40 hops, as the kernel allows.
Target resolve(const std::string& path, const std::string& what) {
  Target t;
  t.path = path;
  for (int hop = 0; hop < 40; ++hop) {
    if (lstat(t.path.c_str(), &t.st) != 0) {
      if (errno != ENOENT) throw InputError(what + " " + path + ": " + std::strerror(errno));
      t.exists = false;
      return t;
    }
    if (!S_ISLNK(t.st.st_mode)) {
      t.exists = true;
      return t;
    }
    char buf[4096];
    const ssize_t n = readlink(t.path.c_str(), buf, sizeof buf - 1);
    if (n < 0) throw InputError(what + " " + path + ": cannot read the symbolic link: " + std::strerror(errno));
    std::string next(buf, static_cast<std::size_t>(n));
    if (next.empty()) throw InputError(what + " " + path + ": an empty symbolic link");
    t.path = next[0] == '/' ? next : dir_of(t.path) + "/" + next;
    // The kernel's links in /proc name pipes and sockets that are no paths:
    // this process's descriptors are used as they are.
    const std::string own = "/proc/self/fd/";
    if (t.path.compare(0, own.size(), own) == 0) {
      char* end = nullptr;
      const long fd = std::strtol(t.path.c_str() + own.size(), &end, 10);
      if (end && *end == '\0' && fd >= 0 && fd < 1024 && fstat(static_cast<int>(fd), &t.st) == 0) {
        t.exists = true;
        t.own_fd = static_cast<int>(fd);
        return t;
      }
      throw InputError(what + " " + path + ": not an open descriptor of this process");
    }
  }
  throw InputError(what + " " + path + ": too many levels of symbolic links");
}

bool direct(const Target& t) {
  return t.exists && (t.own_fd >= 0 || S_ISCHR(t.st.st_mode) || S_ISFIFO(t.st.st_mode));
}

// The kinds of file an output may replace or write into.
void check_kind(const Target& t, const std::string& path, const std::string& what) {
  if (!t.exists) return;
  if (S_ISDIR(t.st.st_mode)) throw InputError(what + " " + path + ": is a directory; expected a file name");
  if (!S_ISREG(t.st.st_mode) && !direct(t))
    throw InputError(what + " " + path + ": is not a regular file, a character device or a FIFO; refusing to replace it");
}

void check_parent(const std::string& path, const std::string& resolved, const std::string& what) {
  const std::string dir = dir_of(resolved);
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0)
    throw InputError(what + " " + path + ": the directory '" + dir + "' does not exist");
  if (!S_ISDIR(st.st_mode)) throw InputError(what + " " + path + ": '" + dir + "' is not a directory");
  if (access(dir.c_str(), W_OK | X_OK) != 0)
    throw InputError(what + " " + path + ": cannot create files in '" + dir + "': " + std::strerror(errno));
}

// A fresh file beside `target`, created exclusively (never an existing
// file, never through a link). Returns its descriptor; `name` gets its path.
int create_temporary(const std::string& target, mode_t mode, std::string* name) {
  static unsigned counter = 0;
  static const unsigned long long now = std::random_device{}();  // another process's names differ (with the pid)
  for (int attempt = 0; attempt < 100; ++attempt) {
    char suffix[64];
    std::snprintf(suffix, sizeof suffix, ".%d.%llx.tmp", static_cast<int>(getpid()), now + 7919ULL * ++counter);
    *name = dir_of(target) + "/." + base_of(target).substr(0, 160) + suffix;  // within NAME_MAX (255)
    const int fd = open(name->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd >= 0) return fd;
    if (errno != EEXIST) break;
  }
  throw std::runtime_error(target + ": cannot create a temporary file beside it: " + std::strerror(errno));
}

bool write_all(int fd, const std::string& content) {
  const char* p = content.data();
  std::size_t left = content.size();
  while (left > 0) {
    const ssize_t n = write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  return true;
}

std::string normal(const std::string& path) { return fs::absolute(fs::path(path)).lexically_normal().string(); }

}  // namespace

void check_output_path(const std::string& path, const std::string& what) {
  if (path.empty()) throw InputError(what + ": expected a file name, got an empty one");
  refuse_control_characters(path, what);
  const Target t = resolve(path, what);
  check_kind(t, path, what);
  if (t.own_fd >= 0) return;
  if (direct(t)) {
    if (access(t.path.c_str(), W_OK) != 0) throw InputError(what + " " + path + ": not writable: " + std::strerror(errno));
    return;
  }
  check_parent(path, t.path, what);
}

void check_output_paths(const std::vector<std::pair<std::string, std::string>>& paths) {
  std::set<std::string> seen;
  for (const auto& [path, what] : paths) {
    if (path.empty()) continue;
    check_output_path(path, what);
    const Target t = resolve(path, what);
    // a device may take several outputs (/dev/null); a FIFO may not: its
    // reader would get two files run together
    struct stat st {};
    const bool fifo = stat(t.path.c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
    if ((!direct(t) || fifo) && !seen.insert(normal(t.path)).second)
      throw InputError(what + " " + path + ": this file is named by another output option too");
  }
}

void write_files_atomic(const std::vector<std::pair<std::string, std::string>>& files) {
  struct Pending {
    Target target;
    std::string temporary;  // empty: written directly (a device or a FIFO)
    const std::string* content;
  };
  std::vector<Pending> pending;
  auto discard = [&] {
    for (const auto& p : pending)
      if (!p.temporary.empty()) unlink(p.temporary.c_str());
  };
  std::set<std::string> seen;
  try {
    for (const auto& [path, content] : files) {
      if (path.empty()) throw InputError("an output file name is empty");
      refuse_control_characters(path, "an output file name");
      Target t = resolve(path, "output");
      check_kind(t, path, "output");
      if (!direct(t) && !seen.insert(normal(t.path)).second)
        throw InputError("output " + path + ": named twice among the files to write");
      Pending p{t, "", &content};
      if (!direct(t)) {
        // keep the permissions of a file that is replaced
        const mode_t mode = t.exists ? (t.st.st_mode & 07777) : 0666;
        const int fd = create_temporary(t.path, mode, &p.temporary);
        pending.push_back(p);
        if (t.exists) fchmod(fd, mode);
        const bool ok = write_all(fd, content);
        const int saved = errno;
        if (close(fd) != 0 || !ok)
          throw std::runtime_error(path + ": write failed: " + std::strerror(ok ? errno : saved));
      } else {
        pending.push_back(p);
      }
    }
    for (const auto& p : pending) {
      if (p.temporary.empty()) continue;
      if (std::rename(p.temporary.c_str(), p.target.path.c_str()) != 0)
        throw std::runtime_error(p.target.path + ": cannot rename " + p.temporary + " into place: " + std::strerror(errno));
    }
  } catch (...) {
    discard();
    throw;
  }
  // Devices and FIFOs last: they cannot be taken back.
  for (const auto& p : pending) {
    if (!p.temporary.empty()) continue;
    if (p.target.own_fd >= 0) {
      std::fflush(nullptr);  // after what this process printed before
      if (!write_all(p.target.own_fd, *p.content))
        throw std::runtime_error(p.target.path + ": write failed: " + std::strerror(errno));
      continue;
    }
    // a FIFO nobody reads would block here for ever: open without waiting, then write as usual
    const int fd = open(p.target.path.c_str(), O_WRONLY | O_CLOEXEC | (S_ISFIFO(p.target.st.st_mode) ? O_NONBLOCK : 0));
    if (fd < 0 && errno == ENXIO) throw std::runtime_error(p.target.path + ": a FIFO that no process reads; start its reader first");
    if (fd < 0) throw std::runtime_error(p.target.path + ": cannot open for writing: " + std::strerror(errno));
    if (S_ISFIFO(p.target.st.st_mode)) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    const bool ok = write_all(fd, *p.content);
    const int saved = errno;
    close(fd);
    if (!ok) throw std::runtime_error(p.target.path + ": write failed: " + std::strerror(saved));
  }
}

}  // namespace ks

namespace ks {

namespace {

std::string trim_slashes(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

// write_files_atomic's temporaries: ".NAME.PID.HEX.tmp"
bool own_temporary(const std::string& name) {
  if (name.size() < 8 || name[0] != '.' || name.compare(name.size() - 4, 4, ".tmp") != 0) return false;
  const std::string body = name.substr(0, name.size() - 4);
  const auto b = body.rfind('.');
  if (b == std::string::npos || b == 0) return false;
  const auto a = body.rfind('.', b - 1);
  if (a == std::string::npos || a == 0 || b - a < 2 || body.size() - b < 2) return false;
  for (std::size_t i = a + 1; i < b; ++i)
    if (!std::isdigit(static_cast<unsigned char>(body[i]))) return false;
  for (std::size_t i = b + 1; i < body.size(); ++i)
    if (!std::isxdigit(static_cast<unsigned char>(body[i]))) return false;
  return true;
}

std::set<std::string> read_marker(const std::string& dir) {
  std::set<std::string> names;
  std::ifstream in(dir + "/" + kOutputMarker);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty() && line[0] != '#') names.insert(line);
  return names;
}

constexpr std::size_t kMaxOwnedEntries = 1000000;  // a walk stops there: refused as too large to check

// The first entry under `dir` (relative to `root_rel`) that the marker of
// `dir` does not list; "" when every one is listed.
std::string foreign_entry(const std::string& dir, const std::string& rel, const std::set<std::string>& listed, std::size_t* seen) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (++*seen > kMaxOwnedEntries) return rel + it->path().filename().string() + " (and more than a million other entries)";
    const std::string name = it->path().filename().string();
    const std::string path = rel + name;
    if (rel.empty() && name == kOutputMarker) continue;
    const auto st = it->symlink_status(ec);
    if (ec) return path;
    if (fs::is_symlink(st)) return path + " (a symbolic link: kanscale writes none)";  // listed or not
    if (fs::is_directory(st)) {
      const std::string sub = dir + "/" + name;
      if (fs::is_regular_file(sub + "/" + kOutputMarker, ec)) {
        if (const std::string f = foreign_entry(sub, "", read_marker(sub), seen); !f.empty()) return path + "/" + f;
      } else if (const std::string f = foreign_entry(sub, path + "/", listed, seen); !f.empty()) {
        return f;
      }
      continue;
    }
    if (own_temporary(name)) continue;
    if (!listed.count(path)) return path;
  }
  if (ec) return rel + " (unreadable: " + ec.message() + ")";
  return "";
}

struct FileId {
  dev_t dev = 0;
  ino_t ino = 0;
  bool operator==(const FileId& o) const { return dev == o.dev && ino == o.ino; }
};

}  // namespace

void check_owned_dir(const std::string& target, const std::string& what) {
  if (target.empty()) throw InputError(what + ": expected a directory name, got an empty one");
  refuse_control_characters(target, what);
  const std::string trimmed = trim_slashes(target);
  struct stat st {};
  if (lstat(trimmed.c_str(), &st) != 0) {
    if (errno != ENOENT) throw InputError(what + " " + target + ": " + std::strerror(errno));
    check_parent(target, trimmed, what);
    return;
  }
  if (S_ISLNK(st.st_mode)) throw InputError(what + " " + target + ": is a symbolic link; kanscale writes only into a directory of its own");
  if (!S_ISDIR(st.st_mode)) throw InputError(what + " " + target + ": exists and is not a directory");
  std::error_code ec;
  const bool empty = fs::is_empty(trimmed, ec);
  if (ec) throw InputError(what + " " + target + ": cannot read it: " + ec.message());
  if (!empty) {
    if (!fs::is_regular_file(trimmed + "/" + kOutputMarker, ec))
      throw InputError(what + " " + target + ": a directory that kanscale did not make (no " + kOutputMarker +
                       "); kanscale writes only into its own output: choose another directory");
    std::size_t seen = 0;
    if (const std::string f = foreign_entry(trimmed, "", read_marker(trimmed), &seen); !f.empty())
      throw InputError(what + " " + target + ": holds " + f +
                       ", which kanscale did not write; kanscale replaces only its own output: move it or choose another directory");
  }
  if (access(trimmed.c_str(), W_OK | X_OK) != 0)
    throw InputError(what + " " + target + ": cannot create files in it: " + std::strerror(errno));
  check_parent(target, trimmed, what);
}

void check_marked_dir(const std::string& dir, const std::string& what) {
  refuse_control_characters(dir, what);
  const std::string trimmed = trim_slashes(dir);
  std::error_code ec;
  if (!fs::is_directory(trimmed, ec)) throw InputError(what + " " + dir + ": not a directory");
  if (!fs::is_regular_file(trimmed + "/" + kOutputMarker, ec))
    throw InputError(what + " " + dir + ": not a directory that kanscale made (no " + kOutputMarker + ")");
}

void record_outputs(const std::string& dir, const std::vector<std::string>& relative) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error(dir + ": cannot create directory: " + ec.message());
  std::set<std::string> names = read_marker(dir);
  const std::size_t before = names.size();
  for (std::string r : relative) {
    r = fs::path(r).lexically_normal().string();
    while (!r.empty() && r.front() == '/') r.erase(0, 1);
    while (r.compare(0, 2, "./") == 0) r = r.substr(2);
    for (unsigned char ch : r)
      if (ch < 0x20 || ch == 0x7f) throw std::runtime_error(dir + ": an output name holds a control character");
    if (!r.empty() && r != kOutputMarker) names.insert(r);
  }
  if (names.size() == before && fs::exists(dir + "/" + kOutputMarker, ec)) return;
  std::string text =
      "# written by kanscale: every file below is one kanscale wrote in this directory. kanscale writes into or replaces\n"
      "# this directory only while it holds no other file.\n";
  for (const auto& n : names) text += n + "\n";
  write_files_atomic({{dir + "/" + kOutputMarker, text}});
}

void write_owned_files(const std::string& dir, const std::vector<std::pair<std::string, std::string>>& files) {
  const fs::path root = fs::path(dir).lexically_normal();
  std::vector<std::string> names;
  for (const auto& f : files) {
    const fs::path rel = fs::path(f.first).lexically_normal().lexically_relative(root);
    if (rel.empty() || rel.begin()->string() == "..") throw std::runtime_error(f.first + ": not inside the output directory " + dir);
    names.push_back(rel.string());
  }
  record_outputs(dir, names);
  for (const auto& f : files) fs::create_directories(fs::path(f.first).parent_path());
  write_files_atomic(files);
}

void mark_all_outputs(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  const std::string root = trim_slashes(dir);
  for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_directory(ec) && fs::is_regular_file(it->path() / kOutputMarker, ec)) {
      it.disable_recursion_pending();
      continue;
    }
    if (!it->is_directory(ec)) names.push_back(fs::relative(it->path(), root, ec).string());
  }
  if (ec) throw std::runtime_error(dir + ": cannot list it: " + ec.message());
  record_outputs(root, names);
}

void check_outputs_spare_inputs(const std::vector<std::string>& inputs, const std::vector<OutputPath>& outputs) {
  struct Input {
    std::string given, real;
    FileId id;
    bool exists = false;
  };
  std::vector<Input> in;
  for (const auto& p : inputs) {
    if (p.empty()) continue;
    Input i;
    i.given = p;
    std::error_code ec;
    i.real = fs::weakly_canonical(fs::absolute(p), ec).string();
    if (ec) i.real = normal(p);
    struct stat st {};
    if (stat(p.c_str(), &st) == 0) {
      i.exists = true;
      i.id = {st.st_dev, st.st_ino};
    }
    in.push_back(i);
  }
  for (const auto& o : outputs) {
    if (o.path.empty()) continue;
    std::error_code ec;
    const std::string real = fs::weakly_canonical(fs::absolute(trim_slashes(o.path)), ec).string();
    const std::string out_real = ec ? normal(o.path) : real;
    struct stat st {};
    const bool exists = stat(o.path.c_str(), &st) == 0;
    if (exists && S_ISCHR(st.st_mode)) continue;  // /dev/null, a terminal: no file of anyone's
    for (const auto& i : in) {
      const bool same = out_real == i.real || (exists && i.exists && FileId{st.st_dev, st.st_ino} == i.id);
      if (same)
        throw InputError(o.what + " " + o.path + ": is an input of this command (" + i.given + "); an output never replaces an input");
      if (o.directory && i.real.size() > out_real.size() && i.real.compare(0, out_real.size(), out_real) == 0 &&
          (out_real == "/" || i.real[out_real.size()] == '/'))
        throw InputError(o.what + " " + o.path + ": holds " + i.given +
                         ", an input of this command; outputs go into a directory of their own");
    }
    if (o.directory && exists && S_ISDIR(st.st_mode)) {
      std::size_t seen = 0;
      for (fs::recursive_directory_iterator it(o.path, fs::directory_options::skip_permission_denied, ec), end;
           !ec && it != end && ++seen < kMaxOwnedEntries; it.increment(ec)) {
        struct stat e {};
        if (lstat(it->path().c_str(), &e) != 0 || !S_ISREG(e.st_mode)) continue;
        for (const auto& i : in)
          if (i.exists && FileId{e.st_dev, e.st_ino} == i.id)
            throw InputError(o.what + " " + o.path + ": holds " + it->path().string() + ", a link to " + i.given +
                             ", an input of this command; outputs go into a directory of their own");
      }
    }
  }
}

std::string make_staging_dir(const std::string& target) {
  const std::string trimmed = trim_slashes(target);
  std::string templ = dir_of(trimmed) + "/." + base_of(trimmed).substr(0, 160) + ".tmp-XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) throw std::runtime_error(target + ": cannot create a directory beside it: " + std::strerror(errno));
  return buf.data();
}

void commit_staging_dir(const std::string& staging, const std::string& target) {
  const std::string trimmed = trim_slashes(target);
  struct stat st {};
  if (lstat(trimmed.c_str(), &st) == 0) {
    // swap the two names in one step; the old directory is then the staging one
    if (renameat2(AT_FDCWD, staging.c_str(), AT_FDCWD, trimmed.c_str(), RENAME_EXCHANGE) != 0)
      throw std::runtime_error(target + ": cannot put the new output in place: " + std::strerror(errno));
    std::error_code ec;
    fs::remove_all(staging, ec);
    return;
  }
  if (rename(staging.c_str(), trimmed.c_str()) != 0)
    throw std::runtime_error(target + ": cannot put the new output in place: " + std::strerror(errno));
}

void discard_staging_dir(const std::string& staging) noexcept {
  std::error_code ec;
  fs::remove_all(staging, ec);
}

std::string content_digest(const std::string& text) {
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a's offset basis
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;  // FNV's 64-bit prime
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace ks
