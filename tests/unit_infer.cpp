// The inference of a study's unknowns from its findings (study/abc,
// study/infer): the findings' predicates on hand-made predictions, rejection
// ABC and ABC-SMC on toy models whose posteriors are derived below, and the
// leave-one-out loop on the same toys.
#include <doctest/doctest.h>

#include <cmath>

#include "model/rng.hpp"
#include "study/abc.hpp"
#include "study/infer.hpp"
#include "study/settings.hpp"

using namespace ks;

namespace {

// A 2-D toy: theta = u in the unit square, uniform prior. Findings:
//   A: v_A = theta1 in [0.2, 0.4]
//   B: v_B = theta1 + theta2 in [0.5, 0.7]
//   C: v_C = theta1 in [0.8, 0.9] (contradicts A)
Draw toy(double a, double b) {
  Draw d;
  d.ok = true;
  d.u = {a, b};
  d.theta = d.u;
  d.values = {a, a + b, a};
  return d;
}
const std::vector<Predicate> kToy = {{"A", "", "", 0.2, 0.4}, {"B", "", "", 0.5, 0.7}, {"C", "", "", 0.8, 0.9}};

// The unit square on a 200 x 200 grid of cell centres: quantiles of the
// accepted draws are those of the continuous posterior within a cell (0.005)
// and the nearest rank.
std::vector<Draw> grid_draws() {
  std::vector<Draw> d;
  for (int i = 0; i < 200; ++i)
    for (int j = 0; j < 200; ++j) d.push_back(toy((i + 0.5) / 200, (j + 0.5) / 200));
  return d;
}

}  // namespace

TEST_CASE("the findings' values on hand-made predictions") {
  // overhead at 2, 4 and 8 GPUs against [1.25, 6.15]% (1.3-6.1% with half a
  // unit of the last digit): the value furthest outside, or the highest
  CHECK(overhead_range_value({1.5, 6.0, 3.0}, 1.25, 6.15) == 6.0);  // all inside: the highest
  CHECK(overhead_range_value({1.0, 3.0, 4.0}, 1.25, 6.15) == 1.0);  // one below
  CHECK(overhead_range_value({2.0, 7.0, 3.0}, 1.25, 6.15) == 7.0);  // one above
  // not monotonic: the smaller change of the turn, positive for a rise then
  // a fall: 1.3 -> 6.1 -> 2.0 rises 4.8, falls 4.1
  CHECK(not_monotonic_value({1.3, 6.1, 2.0}) == doctest::Approx(4.1));
  CHECK(not_monotonic_value({1.0, 2.0, 3.0}) == doctest::Approx(-1.0));  // monotonic: the smaller change, negated
  CHECK(std::isnan(not_monotonic_value({1.0, 2.0})));                   // no turn to judge
  // weak scaling 100, 95, 94.5, 95.2 samples/s per GPU: drop 5% (>= 2% by
  // 3 points), spread 95.2 / 94.5 - 1 = 0.7407% against half the drop (2.5%):
  // margin min(3, 2.5 - 0.7407) = 1.7593
  CHECK(weak_shape_value({100, 95, 94.5, 95.2}) == doctest::Approx(2.5 - (95.2 / 94.5 - 1) * 100));
  // a drop of 1% (1 point short of 2%) with a spread of 99 / 97 - 1 = 2.06%
  // past half the drop: min(1 - 2, 0.5 - 2.06) = -1.56
  CHECK(weak_shape_value({100, 99, 98, 97}) == doctest::Approx(0.5 - (99.0 / 97 - 1) * 100));
  // the ratio 0.1 -> 0.2 -> 0.3 rises 100% then 50%; 0.2 -> 0.15 falls 25%
  CHECK(rising_value({0.1, 0.2, 0.3}) == doctest::Approx(50.0));
  CHECK(rising_value({0.1, 0.2, 0.15}) == doctest::Approx(-25.0));

  PublishedFigures pub;
  pub.given = true;
  pub.gpus = 8;
  pub.speedup = 5.97;
  pub.speedup_tol = 0.005;
  pub.speedup_match = 0.05;
  pub.overhead = std::make_pair(0.013, 0.061);
  pub.overhead_tol = 0.0005;
  pub.weak_drop_then_plateau = true;
  pub.model_widths = {{64, 64, 1}, {64, 256, 256, 1}};
  const std::vector<Predicate> p = study_predicates(pub);
  REQUIRE(p.size() == 7);  // speedup, 2 readings x (range, turn), weak, model size
  CHECK(p[0].id == "speedup");
  CHECK(holds(p[0], 5.95));   // within 5.97 +- 0.05
  CHECK(!holds(p[0], 6.03));
  CHECK(p[1].id == "overhead_range_exposed");
  CHECK(holds(p[1], 1.26));   // 1.3% less half a unit of its last digit is 1.25%
  CHECK(!holds(p[1], 6.2));
  CHECK(holds(p[2], 4.1));
  CHECK(!holds(p[2], -1.0));
  CHECK(!holds(p[2], 0.0));   // flat is not a turn
  const auto readings = readings_of(p);
  REQUIRE(readings.size() == 2);
  CHECK(readings[0].first == "exposed");
  CHECK(readings[0].second == std::vector<bool>{true, true, true, false, false, true, true});
  CHECK(readings[1].second == std::vector<bool>{true, false, false, true, true, true, true});
}

TEST_CASE("informative: a finding the prior satisfies in 90% of its draws or more is not") {
  // 20 draws: finding A holds in 19 (95%), B in 10 (50%), C in 18 (exactly 90%)
  std::vector<Draw> d;
  for (int j = 0; j < 20; ++j) {
    Draw x;
    x.ok = true;
    x.values = {j < 19 ? 1.0 : 0.0, j < 10 ? 1.0 : 0.0, j < 18 ? 1.0 : 0.0};
    d.push_back(x);
  }
  Draw broken;  // a draw the model could not take counts in no rate
  broken.values = {0.0, 0.0, 0.0};
  d.push_back(broken);
  const std::vector<Predicate> yes = {{"A", "", "", 0.5, 1e300}, {"B", "", "", 0.5, 1e300}, {"C", "", "", 0.5, 1e300}};
  const std::vector<double> r = prior_rates(d, yes);
  CHECK(r[0] == doctest::Approx(0.95));
  CHECK(r[1] == doctest::Approx(0.5));
  CHECK(r[2] == doctest::Approx(0.9));
  CHECK(informative(r, {true, true, true}) == std::vector<bool>{false, true, false});
  CHECK(informative(r, {true, false, true}) == std::vector<bool>{false, false, false});  // B not in this reading
}

TEST_CASE("rejection ABC on a toy with a known posterior") {
  // 1-D: theta uniform on [0, 1], the finding theta in [0.2, 0.4]: the
  // posterior is the prior restricted to it, uniform on [0.2, 0.4], so its
  // median is 0.3 and its 90% range [0.21, 0.39]. 10,000 draws at cell
  // centres (j + 0.5) / 10,000: 2,000 accepted.
  std::vector<Draw> d;
  for (int j = 0; j < 10000; ++j) d.push_back(toy((j + 0.5) / 10000, 0.5));
  const std::vector<std::size_t> acc = accept(d, kToy, {true, false, false});
  CHECK(acc.size() == 2000);
  std::vector<double> theta;
  for (std::size_t j : acc) theta.push_back(d[j].theta[0]);
  const Quantiles q = quantiles(theta);
  CHECK(q.median == doctest::Approx(0.3).epsilon(0.001));
  CHECK(q.lo == doctest::Approx(0.21).epsilon(0.002));
  CHECK(q.hi == doctest::Approx(0.39).epsilon(0.002));
}

TEST_CASE("ABC-SMC reaches the same posterior on the toy") {
  // the same 1-D posterior, uniform on [0.2, 0.4], from 500 prior draws and a
  // population of 300: the median's standard error for a uniform of width
  // 0.2 is about 0.2 / sqrt(12 x 300) = 0.0033, so 0.02 is 6 of them
  const Rng rng(7);
  std::vector<Draw> prior;
  for (int j = 0; j < 500; ++j) prior.push_back(toy(rng.uniform(0, j), 0.5));
  const SimulateBatch sim = [](const std::vector<std::vector<double>>& us) {
    std::vector<Draw> out;
    for (const auto& u : us) out.push_back(toy(u[0], 0.5));
    return out;
  };
  SmcOptions opt;
  opt.population = 300;
  opt.budget = 20000;
  opt.seed = 3;
  const SmcResult r = abc_smc(prior, kToy, {true, false, false}, sim, opt);
  CHECK(r.exact);
  CHECK(r.tolerances.back() == 0);
  REQUIRE(r.population.size() == 300);
  std::vector<double> theta;
  for (const Draw& d : r.population) {
    CHECK(d.theta[0] >= 0.2);
    CHECK(d.theta[0] <= 0.4);
    theta.push_back(d.theta[0]);
  }
  const Quantiles q = quantiles(theta);
  CHECK(q.median == doctest::Approx(0.3).epsilon(0.07));  // 0.3 +- 0.021
  CHECK(q.lo == doctest::Approx(0.21).epsilon(0.1));
  CHECK(q.hi == doctest::Approx(0.39).epsilon(0.06));
  // the budget is kept
  CHECK(r.simulated <= opt.budget);
}

TEST_CASE("leave one out on the toy: each finding predicted from the other") {
  const std::vector<Draw> d = grid_draws();
  const std::vector<bool> inf = {true, true, false};
  const std::vector<LeftOut> loo = leave_one_out(d, kToy, inf);
  REQUIRE(loo.size() == 2);
  // B left out: conditioned on A, theta1 ~ U[0.2, 0.4] and theta2 ~ U[0, 1],
  // so v_B = theta1 + theta2 has a trapezoid density: 5 (x - 0.2) on
  // [0.2, 0.4], 1 on [0.4, 1.2], symmetric about 0.8. Its 5% quantile solves
  // 2.5 (x - 0.2)^2 = 0.05: x = 0.2 + sqrt(0.02) = 0.3414; 95%: 1.6 - 0.3414.
  const LeftOut& b = loo[1];
  CHECK(b.predicate == 1);
  CHECK(b.conditioned == 40 * 200);  // theta1 cells in [0.2, 0.4]: 40 of 200
  CHECK(b.value.median == doctest::Approx(0.8).epsilon(0.01));
  CHECK(b.value.lo == doctest::Approx(0.2 + std::sqrt(0.02)).epsilon(0.02));
  CHECK(b.value.hi == doctest::Approx(1.6 - 0.2 - std::sqrt(0.02)).epsilon(0.01));
  CHECK(b.inside);  // [0.34, 1.26] meets [0.5, 0.7]
  // the probability it holds given A: P(0.5 <= theta1 + theta2 <= 0.7) = 0.2
  CHECK(b.p_holds == doctest::Approx(0.2).epsilon(0.05));
  // A left out: conditioned on B, theta1 has density 0.2 on [0, 0.5] and
  // 0.7 - theta1 on [0.5, 0.7] (mass 0.1 + 0.02 = 0.12): median 0.3
  // (0.2 m = 0.06), 5% at 0.006 / 0.2 = 0.03, 95% where (0.7 - q)^2 / 2 =
  // 0.006: q = 0.7 - sqrt(0.012) = 0.5905
  const LeftOut& a = loo[0];
  CHECK(a.value.median == doctest::Approx(0.3).epsilon(0.03));
  CHECK(a.value.lo == doctest::Approx(0.03).epsilon(0.2));
  CHECK(a.value.hi == doctest::Approx(0.7 - std::sqrt(0.012)).epsilon(0.02));
  CHECK(a.inside);
  // A and B together are satisfiable: nothing resists
  CHECK(resisting(d, kToy, inf) == -1);
}

TEST_CASE("the finding that resists the others") {
  // A, B and C together: no draw (A and C contradict). Leaving out A admits
  // theta1 in [0.8, 0.9] with B's theta1 + theta2 <= 0.7: none; leaving out
  // B admits A and C: none; leaving out C admits A and B (the 2-D strip): C
  // resists.
  const std::vector<Draw> d = grid_draws();
  CHECK(accept(d, kToy, {true, true, true}).empty());
  CHECK(resisting(d, kToy, {true, true, true}) == 2);
  // and a leave-one-out whose others admit nothing is never inside
  const std::vector<LeftOut> loo = leave_one_out(d, kToy, {true, true, true});
  CHECK(!loo[0].inside);
  CHECK(loo[0].conditioned == 0);
}

TEST_CASE("doubled ranges: about each range's centre on its own scale") {
  Unknown f;
  f.setting = find_setting("compute_time", kUnknown);
  f.key = "compute_time";
  f.kind = Unknown::Kind::factor;
  f.lo = 0.5;
  f.hi = 2.0;
  Unknown t;
  t.setting = find_setting("host_overhead", kUnknown);
  t.key = "host_overhead";
  t.kind = Unknown::Kind::time;
  t.lo = 0;
  t.hi = 2e-3;
  const auto s = scaled_unknowns({f, t}, 2);
  // a factor's centre is 1 on the log scale (sqrt(0.5 x 2)), its half-width
  // ln 2, doubled: [1/4, 4]
  CHECK(s[0].lo == doctest::Approx(0.25));
  CHECK(s[0].hi == doctest::Approx(4.0));
  // a time's centre 1 ms, half-width 2 ms: [-1 ms, 3 ms], cut at 0
  CHECK(s[1].lo == 0);
  CHECK(s[1].hi == doctest::Approx(3e-3));
}
