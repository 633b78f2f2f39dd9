// Running programs from argument vectors and quoting words for scripts
// (base/process.hpp): the shell hands every quoted word back
// unchanged, and nothing in a word runs.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <chrono>
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

TEST_CASE("run_processes: a failure stops the others; so does a grace period after one finished; SIGKILL for one that ignores SIGTERM") {
  using ks::ProcessSpec;
  const auto t0 = std::chrono::steady_clock::now();
  auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  int failed = -2;
  // rank 1 fails at once: rank 0 (which would sleep 30 s) is stopped, and rank 1 is named
  auto codes = ks::run_processes({ProcessSpec{{"sleep", "30"}, "", "", {}}, ProcessSpec{{"sh", "-c", "exit 3"}, "", "", {}}}, 0, &failed);
  CHECK(codes == std::vector<int>{128 + 15, 3});
  CHECK(failed == 1);
  CHECK(seconds() < 10);
  // one finished; the other is still running after the 0.3 s grace: stopped, and no one failed by itself
  codes = ks::run_processes({ProcessSpec{{"true"}, "", "", {}}, ProcessSpec{{"sleep", "30"}, "", "", {}}}, 0.3, &failed);
  CHECK(codes == std::vector<int>{0, 128 + 15});
  CHECK(failed == -1);
  // all succeed: nobody is signalled
  codes = ks::run_processes({ProcessSpec{{"true"}, "", "", {}}, ProcessSpec{{"sh", "-c", "sleep 0.2"}, "", "", {}}}, 0, &failed);
  CHECK(codes == std::vector<int>{0, 0});
  CHECK(failed == -1);
  // one that ignores SIGTERM gets SIGKILL 10 s later (the failure comes 1 s
  // in, once the other has set its trap: before that, SIGTERM would end it)
  const auto t1 = std::chrono::steady_clock::now();
  codes = ks::run_processes({ProcessSpec{{"sh", "-c", "sleep 1; exit 1"}, "", "", {}},
                             ProcessSpec{{"sh", "-c", "trap '' TERM; while :; do sleep 0.1; done"}, "", "", {}}},
                            0, &failed);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  CHECK(codes == std::vector<int>{1, 128 + 9});
  CHECK(took >= 10.5);
  CHECK(took < 26);
  // a program that cannot start: an exception, and nothing left running
  CHECK_THROWS(ks::run_processes({ProcessSpec{{"sleep", "30"}, "", "", {}}, ProcessSpec{{"/nonexistent/program"}, "", "", {}}}));
}
