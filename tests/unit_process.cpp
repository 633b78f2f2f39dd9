// Running programs from argument vectors and quoting words for scripts
// (base/process.hpp): the shell hands every quoted word back
// unchanged, and nothing in a word runs.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "temp_dir.hpp"
#include "base/process.hpp"

TEST_CASE("run_process: exit status, the signal that ended it, the log, the working directory, the environment") {
  TempDir d;
  CHECK(ks::run_process({{"true"}, "", "", {}}) == 0);
  CHECK(ks::run_process({{"sh", "-c", "exit 7"}, "", "", {}}) == 7);
  CHECK(ks::run_process({{"sh", "-c", "kill -TERM $$"}, "", "", {}}) == 128 + 15);
  // the words arrive as they are: no shell splits or expands them
  CHECK(ks::run_process({{"sh", "-c", "printf '%s|' \"$@\"; pwd; printf '%s' \"$KS_TEST_VAR\"", "sh", "a b", "$(x)", "'q'"},
                         d.path, "log.txt", {"KS_TEST_VAR=v w"}}) == 0);
  CHECK(slurp(d / "log.txt") == "a b|$(x)|'q'|" + d.path + "\nv w");
  CHECK_THROWS_WITH_AS(ks::run_process({{"/nonexistent/program"}, "", "", {}}), doctest::Contains("cannot start /nonexistent/program"),
                       std::runtime_error);
  CHECK_THROWS_AS(ks::run_process({{"true"}, d / "missing-dir", "", {}}), std::runtime_error);
}

TEST_CASE("shell_quote: bash reads every word back unchanged, and runs none of it") {
  TempDir d;
  const std::vector<std::string> words = {"plain",        "with space",     "$(touch PWNED)", "`touch PWNED`", "a'b",
                                          "'",            "\"",             "x;touch PWNED",  "a|b",           "$HOME",
                                          "*",            "~",              "-n",             "",                "back\\slash",
                                          "tab\tin",      "new\nline",      "!event",         "a=b c",         "%s"};
  std::string script = "cd '" + d.path + "' || exit 1\n";
  for (const auto& w : words) script += "printf '%s\\0' " + ks::shell_quote(w) + "\n";
  std::ofstream(d / "s.sh") << script;
  REQUIRE(ks::run_process({{"bash", d / "s.sh"}, d.path, "out.bin", {}}) == 0);
  const std::string out = slurp(d / "out.bin");
  std::vector<std::string> back;
  std::string cur;
  for (char ch : out) {
    if (ch == '\0') {
      back.push_back(cur);
      cur.clear();
    } else {
      cur += ch;
    }
  }
  CHECK(back == words);
  struct stat st {};
  CHECK(stat((d / "PWNED").c_str(), &st) != 0);
  // plain words stay readable in the scripts
  CHECK(ks::shell_quote("results/kernels-r0.json") == "results/kernels-r0.json");
  CHECK(ks::shell_words({"-b", "8", "a b"}) == "-b 8 'a b'");
}
