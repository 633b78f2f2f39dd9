#include "site.hpp"

#include <cctype>

#include "base/process.hpp"
#include "formats/yaml_reader.hpp"

namespace ks {

namespace {

// Text that goes into a job script, even quoted, holds no control character.
void check_script_text(YamlMap& m, const std::string& key, const std::string& value) {
  for (unsigned char ch : value)
    if (ch < 0x20 || ch == 0x7f) m.fail(key, "holds a control character (a newline?); it cannot go into a job script");
}

// A Slurm option's value (#SBATCH lines are read by Slurm, not a shell):
// letters, digits and . _ - : , + @ only.
void check_slurm_word(YamlMap& m, const std::string& key, const std::string& value) {
  check_script_text(m, key, value);
  for (unsigned char ch : value)
    if (!std::isalnum(ch) && std::string("._-:,+@").find(static_cast<char>(ch)) == std::string::npos)
      m.fail(key, "\"" + value + "\": expected letters, digits and . _ - : , + @ only (it goes on an #SBATCH line)");
}

bool is_name_char(char c, bool first) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || (!first && std::isdigit(static_cast<unsigned char>(c))); }

// The length of a leading $NAME or ${NAME} (0: none).
std::size_t variable_prefix(const std::string& s, std::string* name) {
  if (s.empty() || s[0] != '$') return 0;
  const bool braced = s.size() > 1 && s[1] == '{';
  std::size_t i = braced ? 2 : 1;
  const std::size_t from = i;
  while (i < s.size() && is_name_char(s[i], i == from)) ++i;
  if (i == from) return 0;
  if (braced) {
    if (i >= s.size() || s[i] != '}') return 0;
    *name = s.substr(from, i - from);
    return i + 1;
  }
  *name = s.substr(from, i - from);
  return i;
}

}  // namespace

std::string scratch_shell_word(const std::string& scratch) {
  std::string name;
  const std::size_t n = variable_prefix(scratch, &name);
  if (n == 0) return shell_quote(scratch);
  const std::string rest = scratch.substr(n);
  // unset, it reads as the literal $NAME (no path matches it) rather than
  // stopping a script under set -u
  return "\"${" + name + ":-\\$" + name + "}\"" + (rest.empty() ? "" : shell_quote(rest));
}

Site load_site(const std::string& path) {
  YamlMap m = YamlMap::load_file(path);
  Site s;
  s.file = path;
  s.name = m.string("name");
  check_script_text(m, "name", s.name);
  s.scheduler = m.choice("scheduler", {"slurm", "none"});
  const bool slurm = s.scheduler == "slurm";
  if (slurm) {
    if (!m.has("partition")) m.fail("partition", "missing: a Slurm site names the partition its jobs go to (partition: NAME)");
    s.partition = m.string("partition");
    check_slurm_word(m, "partition", s.partition);
    s.account = m.string_opt("account").value_or("");
    if (!s.account.empty()) check_slurm_word(m, "account", s.account);
    s.time_limit = m.string_opt("time_limit").value_or(s.time_limit);
    if (s.time_limit.empty()) m.fail("time_limit", "expected a time such as \"2:00:00\" (an empty one writes #SBATCH --time=, which sbatch rejects)");
    check_slurm_word(m, "time_limit", s.time_limit);
    if (auto c = m.integer_opt("cpus_per_task", 1, 4096)) s.cpus_per_task = static_cast<int>(*c);
  } else {
    for (const char* k : {"partition", "account", "time_limit", "cpus_per_task"})
      if (m.has(k)) m.fail(k, "only a Slurm site has it (scheduler: none runs on this host)");
  }
  if (m.has("modules")) {
    s.modules = m.string_list("modules");
    for (const auto& mod : s.modules) {
      check_script_text(m, "modules", mod);
      for (unsigned char ch : mod)
        if (!std::isalnum(ch) && std::string("._-/+@").find(static_cast<char>(ch)) == std::string::npos)
          m.fail("modules", "\"" + mod + "\": expected a module name (letters, digits and . _ - / + @)");
    }
  }
  s.load_modules = m.boolean_opt("load_modules").value_or(false);
  s.launcher = m.choice_opt("launcher", {"srun", "mpirun"}).value_or(slurm ? "srun" : "mpirun");
  if (!slurm && s.launcher == "srun") m.fail("launcher", "srun needs scheduler: slurm");
  if (m.has("launcher_flags")) {
    s.launcher_flags = m.string_list("launcher_flags");
    for (const auto& f : s.launcher_flags) check_script_text(m, "launcher_flags", f);
  }
  s.gpu_binding = m.choice_opt("gpu_binding", {"per_task", "none"}).value_or(s.gpu_binding);
  s.scratch = m.string("scratch");
  check_script_text(m, "scratch", s.scratch);
  {
    std::string name;
    const std::size_t var = variable_prefix(s.scratch, &name);
    if (s.scratch.empty() || (s.scratch[0] != '/' && var == 0) || (var > 0 && var < s.scratch.size() && s.scratch[var] != '/'))
      m.fail("scratch", "\"" + s.scratch + "\": expected an absolute path or $NAME[/rest] (a directory every node shares)");
    while (s.scratch.size() > 1 && s.scratch.back() == '/') s.scratch.pop_back();
    if (s.scratch == "/tmp" || s.scratch.rfind("/tmp/", 0) == 0)
      m.fail("scratch", "\"" + s.scratch + "\": /tmp is node-local on most clusters; give the shared scratch");
  }
  s.kanscale = m.string_opt("kanscale").value_or(s.kanscale);
  check_script_text(m, "kanscale", s.kanscale);
  if (s.kanscale.empty() || s.kanscale.find_first_of(" \t") != std::string::npos)
    m.fail("kanscale", "\"" + s.kanscale + "\": expected one executable's name or path on the nodes (no spaces; a container wrapper goes in a script of its own)");
  s.run_as_root = m.boolean_opt("run_as_root").value_or(false);
  m.finish();
  return s;
}

}  // namespace ks
