// validate --repeatability: each run predicted from the others, on
// hand-made runs whose errors are worked out by hand.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "formats/yaml_reader.hpp"
#include "temp_dir.hpp"
#include "validation/repeatability.hpp"

using namespace ks;

namespace {
ValidationRun run(const std::string& path, std::vector<double> ms) {
  ValidationRun r;
  r.path = path;
  r.cases = {"x", "y", "z"};
  r.cases.resize(ms.size());
  for (double m : ms) r.measured_s.push_back(m * 1e-3);
  return r;
}

std::string results_json(const std::vector<std::tuple<std::string, bool, double>>& cases) {
  nlohmann::json c = nlohmann::json::array();
  for (const auto& [label, over, t] : cases)
    c.push_back({{"case", label}, {"oversubscribed", over}, {"measured_median", {{"iteration_time_s", t}}}});
  return nlohmann::json{{"plan", "p.yaml"},
                        {"machine", "AMD EPYC, 2 cores"},
                        {"mean_noise_pct", 6.5},
                        {"summary", {{{"metric", "iteration time"}, {"mean_abs_pct", 8.7}, {"max_abs_pct", 24.9}},
                                     {{"metric", "compute time"}, {"mean_abs_pct", 1.0}, {"max_abs_pct", 2.0}}}},
                        {"cases", c}}
      .dump();
}
}  // namespace

TEST_CASE("repeatability of two runs: each run's cases predicted by the other's (hand calculation)") {
  // run 1: x 10 ms, y 20 ms; run 2: x 11 ms, y 19 ms
  const Repeatability r = repeatability({run("/a", {10, 20}), run("/b", {11, 19})});
  REQUIRE(r.runs.size() == 2);
  const auto& a = r.runs[0];
  // run 1 predicted by run 2: x 11/10 - 1 = +10%, y 19/20 - 1 = -5%
  CHECK(a.others.mean_abs_pct == doctest::Approx(7.5));
  CHECK(a.others.max_abs_pct == doctest::Approx(10.0));
  CHECK(a.others.worst_case == "x");
  CHECK(a.others.p90_abs_pct == doctest::Approx(10.0));  // nearest rank: ceil(0.9 x 2) = the 2nd of {5, 10}
  // shift: the geometric mean of 1.1 and 0.95, sqrt(1.045) - 1
  CHECK(a.shift_pct == doctest::Approx(100 * (std::sqrt(1.045) - 1)));
  // shift removed: x sqrt(1.1 / 0.95) - 1 = +7.6055%, y sqrt(0.95 / 1.1) - 1 = -7.0680%
  CHECK(a.others_shifted.max_abs_pct == doctest::Approx(100 * (std::sqrt(1.1 / 0.95) - 1)));
  CHECK(a.others_shifted.mean_abs_pct == doctest::Approx(50 * (std::sqrt(1.1 / 0.95) - 1 + 1 - std::sqrt(0.95 / 1.1))));
  // perfect: log errors x sqrt(1/2): x 1.1^(1/sqrt 2) - 1, y 1 - 0.95^(1/sqrt 2)
  const double px = std::pow(1.1, 1 / std::sqrt(2.0)) - 1, py = 1 - std::pow(0.95, 1 / std::sqrt(2.0));
  CHECK(a.perfect.mean_abs_pct == doctest::Approx(50 * (px + py)));
  CHECK(a.perfect.max_abs_pct == doctest::Approx(100 * px));
  // run 2 predicted by run 1: x 10/11 - 1 = -9.0909%, y 20/19 - 1 = +5.2632%
  const auto& b = r.runs[1];
  CHECK(b.others.mean_abs_pct == doctest::Approx(50 * (1.0 / 11 + 1.0 / 19)));
  CHECK(b.others.max_abs_pct == doctest::Approx(100.0 / 11));
  CHECK(b.shift_pct == doctest::Approx(100 * (std::sqrt(10.0 / 11 * 20.0 / 19) - 1)));
}

TEST_CASE("repeatability of three runs: the others' geometric mean, and the perfect predictor's sqrt(2/3)") {
  // case x: 8, 10, 12.5 ms; case y the same in every run
  const Repeatability r = repeatability({run("/a", {8, 4}), run("/b", {10, 4}), run("/c", {12.5, 4})});
  // run 1: x predicted sqrt(10 x 12.5) = sqrt(125) ms against 8: +39.75%; y exact
  CHECK(r.runs[0].others.max_abs_pct == doctest::Approx(100 * (std::sqrt(125.0) / 8 - 1)));
  CHECK(r.runs[0].others.mean_abs_pct == doctest::Approx(50 * (std::sqrt(125.0) / 8 - 1)));
  // run 2: sqrt(8 x 12.5) = 10 ms: exact for both cases
  CHECK(r.runs[1].others.max_abs_pct == doctest::Approx(0.0).scale(1));
  CHECK(r.runs[1].shift_pct == doctest::Approx(0.0).scale(1));
  // perfect, run 1: (sqrt(125) / 8)^sqrt(2/3) - 1
  CHECK(r.runs[0].perfect.max_abs_pct == doctest::Approx(100 * (std::pow(std::sqrt(125.0) / 8, std::sqrt(2.0 / 3)) - 1)));
  // the case order follows the first run's; every run measured aligned to it
  CHECK(r.measured[2][0] == doctest::Approx(12.5e-3));
}

TEST_CASE("repeatability refuses fewer than two runs, different cases and a run given twice") {
  CHECK_THROWS_AS(repeatability({run("/a", {1, 2})}), InputError);
  ValidationRun other = run("/b", {1, 2});
  other.cases = {"x", "w"};
  CHECK_THROWS_WITH_AS(repeatability({run("/a", {1, 2}), other}), doctest::Contains("lacks the case \"y\""), InputError);
  CHECK_THROWS_WITH_AS(repeatability({run("/a", {1, 2}), run("/b", {1, 2, 3})}), doctest::Contains("not runs of the same plan"),
                       InputError);
  CHECK_THROWS_WITH_AS(repeatability({run("/tmp/a", {1, 2}), run("/tmp/../tmp/a", {1, 2})}), doctest::Contains("given twice"),
                       InputError);
}

TEST_CASE("a validate results.json read back: judged cases only, the model's iteration-time error, bad files refused") {
  TempDir d;
  const std::string f = d.write("results.json", results_json({{"x", false, 0.01}, {"y", true, 0.5}, {"z", false, 0.02}}));
  for (const std::string& given : {f, d.path}) {  // the file, or the report directory that holds it
    const ValidationRun r = read_validation_run(given);
    CHECK(r.path == f);
    CHECK(r.cases == std::vector<std::string>{"x", "z"});
    CHECK(r.measured_s == std::vector<double>{0.01, 0.02});
    CHECK(r.model_mean_abs_pct == 8.7);
    CHECK(r.model_max_abs_pct == 24.9);
    CHECK(r.mean_noise_pct == 6.5);
    CHECK(r.machine == "AMD EPYC, 2 cores");
  }
  CHECK_THROWS_WITH_AS(read_validation_run(d.write("z.json", results_json({{"x", false, 0.0}}))),
                       doctest::Contains("iteration_time_s"), InputError);
  CHECK_THROWS_WITH_AS(read_validation_run(d.write("o.json", results_json({{"x", true, 0.1}}))), doctest::Contains("no judged case"),
                       InputError);
  CHECK_THROWS_WITH_AS(read_validation_run(d.write("t.json", results_json({{"x", false, 0.1}, {"x", false, 0.2}}))),
                       doctest::Contains("appears twice"), InputError);
}

TEST_CASE("the repeatability report: files written, and whether the other runs meet the plan's bound as validate judges it") {
  TempDir d;
  const std::vector<ValidationRun> runs = {run("/a", {10, 20}), run("/b", {11, 19})};
  const Repeatability r = repeatability(runs);
  // run 1's others: 7.5% mean, 10% max; run 2's: 7.18%, 9.09%; no noise floors recorded
  auto fixed = [](double mean, double max) {
    ValidationPlan p;
    p.name = "p";
    p.bound_mean_pct = mean;
    p.bound_max_pct = max;
    return p;
  };
  CHECK(write_repeatability_report(runs, r, fixed(8, 11), d / "in", "cmd"));
  CHECK_FALSE(write_repeatability_report(runs, r, fixed(7, 11), d / "mean", "cmd"));
  CHECK_FALSE(write_repeatability_report(runs, r, fixed(8, 9.5), d / "max", "cmd"));
  const auto j = nlohmann::json::parse(slurp(d / "in/repeatability.json"));
  CHECK(j["others_within_bound"] == true);
  CHECK(j["runs"].size() == 2);
  CHECK(j["runs"][0]["others"]["mean_abs_pct"].get<double>() == doctest::Approx(7.5));
  CHECK(j["cases"][1]["measured_s"][1].get<double>() == doctest::Approx(19e-3));
  const std::string md = slurp(d / "in/report.md");
  CHECK(md.find("| x | 10.000, 11.000 | 10.0% |") != std::string::npos);
  CHECK(md.find("7.5% / 10.0% / 10.0%") != std::string::npos);
  CHECK(!slurp(d / "in/repeatability.gp").empty());
  // the perfect estimate (x 1/sqrt 2: run 1 +6.97%, -3.56%: 5.27% mean) meets 6% mean, 11% max where the others (7.5%) do not
  const auto jm = nlohmann::json::parse(slurp(d / "mean/repeatability.json"));
  CHECK(jm["others_within_bound"] == false);
  CHECK_FALSE(write_repeatability_report(runs, r, fixed(6, 11), d / "perfect", "cmd"));
  CHECK(nlohmann::json::parse(slurp(d / "perfect/repeatability.json"))["perfect_within_bound"] == true);
}

TEST_CASE("meets_plan_bound: validate's judge, each case's noise floor and their mean (hand cases)") {
  // |errors| 9.9% and 5% (log errors of 1.099 and 0.95; mean 7.45%); the
  // mean noise floor is the cases' mean, as validate takes it
  const std::vector<double> e = {std::log(1.099), std::log(0.95)}, t = {0.01, 0.02};
  ValidationPlan b;  // 5% mean, 10% max
  b.bound_mean_pct = 5;
  b.bound_max_pct = 10;
  CHECK_FALSE(meets_plan_bound(e, t, {0, 0}, b));      // mean 7.45% > 5%
  CHECK(meets_plan_bound(e, t, {8, 8}, b));            // mean 7.45% within the mean noise floor 8%
  b.bound_max_pct = 9;
  CHECK_FALSE(meets_plan_bound(e, t, {8, 8}, b));      // 9.9% > max(9%, 8%)
  CHECK(meets_plan_bound(e, t, {10.5, 5.5}, b));       // 9.9% within that case's noise floor 10.5% (mean 8%)
  // noise-derived: every case within max(floor, factor x the mean noise floor)
  ValidationPlan n;
  n.noise_factor = 2;
  n.noise_floor_pct = 4;
  CHECK(meets_plan_bound(e, t, {5, 5}, n));            // 2 x 5% = 10% holds 9.9% and 5%
  CHECK_FALSE(meets_plan_bound(e, t, {4.9, 4.9}, n));  // 9.8% does not hold 9.9%
  n.noise_floor_pct = 12;
  CHECK(meets_plan_bound(e, t, {1, 1}, n));            // the floor 12% holds both
}

TEST_CASE("repeatability aligns runs whose cases come in another order") {
  ValidationRun b = run("/b", {19, 11});  // y 19 ms, x 11 ms
  b.cases = {"y", "x"};
  const Repeatability r = repeatability({run("/a", {10, 20}), b});
  CHECK(r.cases == std::vector<std::string>{"x", "y"});
  CHECK(r.measured[1][0] == doctest::Approx(11e-3));
  CHECK(r.measured[1][1] == doctest::Approx(19e-3));
  CHECK(r.runs[0].others.max_abs_pct == doctest::Approx(10.0));  // x: 11 / 10 - 1, as with the cases in order
  CHECK(r.runs[0].others.worst_case == "x");
}
