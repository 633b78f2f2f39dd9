// Inputs that once crashed a reader or were wrongly taken as complete
// (issue 10, section 5), through the kanscale executable as a user runs it:
// each must end with exit 2 and one line naming the file and the key, or,
// where the input is valid, succeed. A signal (SIGSEGV, SIGABRT) is a failure.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "temp_dir.hpp"
#include "paths.hpp"

namespace {

struct Run {
  int code = -1;  // exit status; -1 when ended by a signal
  std::string err;
};

Run run(const std::string& args, const TempDir& d) {
  const std::string e = d / "stderr";
  const int status = std::system(("timeout 300 " + kExe + " " + args + " >" + (d / "stdout") + " 2>" + e).c_str());
  Run r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = slurp(e);
  return r;
}

int lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

// exit 2, one line, naming the file and the key
void expect_refused(const Run& r, const std::string& file, const std::string& key) {
  CAPTURE(r.err);
  CHECK(r.code == 2);
  CHECK(lines(r.err) == 1);
  CHECK(r.err.find(file) != std::string::npos);
  CHECK(r.err.find("key '" + key + "'") != std::string::npos);
}

}  // namespace

TEST_CASE("an nccl-tests log whose '# NCCL version' line ends there is read (was SIGSEGV)") {
  TempDir d;
  const std::string log = slurp(kSrc + "/tests/fixtures/nccl-tests/h100_2node_16rank_allreduce.log");
  REQUIRE(!log.empty());
  // the bare line first, as some launchers print it before the version
  const std::string f = d.write("bare-version.log", "# NCCL version\n" + log);
  const Run r = run("fit --nccl-tests " + f + " --out " + (d / "k.yaml"), d);
  CAPTURE(r.err);
  CHECK(r.code == 0);
  CHECK(!slurp(d / "k.yaml").empty());
  // nothing but the bare line: no table, refused in one line
  const std::string g = d.write("only-version.log", "# NCCL version\n");
  const Run q = run("fit --nccl-tests " + g + " --out " + (d / "k2.yaml"), d);
  CAPTURE(q.err);
  CHECK(q.code == 2);
  CHECK(lines(q.err) == 1);
}

TEST_CASE("measure allreduce --resume: a point lacking a field, or with one of the wrong type, is refused (was SIGABRT)") {
  TempDir d;
  const std::string sweep = "measure allreduce -b 8 -e 64 -f 2 -n 1 -w 0";
  {
    const Run r = run(sweep + " --json " + (d / "full.json"), d);
    CAPTURE(r.err);
    REQUIRE(r.code == 0);
  }
  const auto full = nlohmann::json::parse(slurp(d / "full.json"));
  REQUIRE(full["points"].size() == 4);  // 8, 16, 32, 64 bytes
  // the untouched file resumes (nothing left to do)
  CHECK(run(sweep + " --resume " + (d / "full.json"), d).code == 0);
  struct Case {
    const char* what;
    std::string key;
    void (*edit)(nlohmann::json&);
  };
  const Case cases[] = {
      {"no size", "points[1].size_bytes", [](nlohmann::json& p) { p.erase("size_bytes"); }},
      {"no count", "points[1].count", [](nlohmann::json& p) { p.erase("count"); }},
      {"count a string", "points[1].count", [](nlohmann::json& p) { p["count"] = "4"; }},
      {"no out-of-place", "points[1].out_of_place", [](nlohmann::json& p) { p.erase("out_of_place"); }},
      {"in-place not an object", "points[1].in_place", [](nlohmann::json& p) { p["in_place"] = 3; }},
      {"no time", "points[1].out_of_place.time_us", [](nlohmann::json& p) { p["out_of_place"].erase("time_us"); }},
      {"no busbw", "points[1].in_place.busbw_GBps", [](nlohmann::json& p) { p["in_place"].erase("busbw_GBps"); }},
      {"wrong a float", "points[1].in_place.wrong", [](nlohmann::json& p) { p["in_place"]["wrong"] = 0.5; }},
      {"algbw null", "points[1].out_of_place.algbw_GBps", [](nlohmann::json& p) { p["out_of_place"]["algbw_GBps"] = nullptr; }},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    auto j = full;
    c.edit(j["points"][1]);
    const std::string f = d.write("edited.json", j.dump(2));
    expect_refused(run(sweep + " --resume " + f, d), f, c.key);
    CHECK(nlohmann::json::parse(slurp(f)) == j);  // left as it was
  }
  // a point that is not an object at all
  auto j = full;
  j["points"][0] = "8";
  const std::string f = d.write("edited.json", j.dump(2));
  expect_refused(run(sweep + " --resume " + f, d), f, "points[0]");
}

TEST_CASE("measure kernels --resume: shapes_done out of range is refused, not taken as a complete plan") {
  TempDir d;
  const std::string plan = "measure kernels --shapes 32:4:4:3:2,32:4:8:3:2 --repeat 3";
  {
    const Run r = run(plan + " --json " + (d / "half.json") + " --max-shapes 1", d);
    CAPTURE(r.err);
    REQUIRE(r.code == 0);
  }
  const auto half = nlohmann::json::parse(slurp(d / "half.json"));
  REQUIRE(half["metadata"]["shapes_done"] == 1);
  struct Case {
    const char* what;
    nlohmann::json shapes_done;
  };
  // 3 and 99 are past the plan's 2 shapes; 2 claims a shape whose rows are
  // not in the file (one memory entry per shape and rank); the rest are not counts
  const Case cases[] = {{"past the plan", 3}, {"far past the plan", 99}, {"more than the file holds", 2},
                        {"negative", -1},     {"fractional", 1.5},      {"a string", "1"},
                        {"null", nullptr}};
  for (const auto& c : cases) {
    CAPTURE(c.what);
    auto j = half;
    j["metadata"]["shapes_done"] = c.shapes_done;
    const std::string f = d.write("edited.json", j.dump(2));
    expect_refused(run(plan + " --resume " + f, d), f, "metadata.shapes_done");
    CHECK(nlohmann::json::parse(slurp(f)) == j);  // not marked complete, not rewritten
  }
  // a row lacking a field, or of the wrong type
  for (const char* field : {"op", "time_median_s", "grid_size", "unstable"}) {
    CAPTURE(field);
    auto j = half;
    j["rows"][0].erase(field);
    const std::string f = d.write("edited.json", j.dump(2));
    expect_refused(run(plan + " --resume " + f, d), f, std::string("rows[0].") + field);
  }
  auto j = half;
  j["memory"][0]["peak_bytes"] = "many";
  const std::string f = d.write("edited.json", j.dump(2));
  expect_refused(run(plan + " --resume " + f, d), f, "memory[0].peak_bytes");
}
