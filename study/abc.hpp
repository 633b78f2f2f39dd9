#pragma once
// Rejection approximate Bayesian computation (ABC) over draws from a prior:
// a finding is a predicate on one value a draw predicts (it holds when the
// value lies in [lo, hi]); the posterior is the draws that satisfy every
// informative finding together. A finding is informative when the prior
// predictive does not already satisfy it in at least 90% of the draws: one
// that cannot fail explains nothing. Leaving one finding out conditions on
// the others and predicts the one left out. Independent of what the draws
// model (study/infer runs it over a study's unknowns; the tests over a toy).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ks {

struct Predicate {
  std::string id;      // "speedup", "overhead_range_exposed", ...
  std::string text;    // what the finding says
  std::string target;  // as the source states it: "5.97 +- 0.05"
  double lo = 0, hi = 0;  // holds when lo <= value <= hi (a yes/no finding: value 1 or 0, lo 0.5)
};

struct Draw {
  bool ok = false;             // the model could predict it (a batch that splits, a layout that fits)
  std::vector<double> u;       // the draw in the unit cube (each unknown's range on its own scale)
  std::vector<double> theta;   // the unknowns' values
  std::vector<double> values;  // one per predicate
  std::vector<double> extra;   // what else it predicts (the posterior predictive); may be empty
};

inline constexpr double kInformativeBelow = 0.9;  // a finding the prior satisfies this often explains nothing

bool holds(const Predicate& p, double value);

// The fraction of the usable draws that satisfy each predicate.
std::vector<double> prior_rates(const std::vector<Draw>& draws, const std::vector<Predicate>& preds);
// Which predicates are informative (rate < kInformativeBelow), among `use`.
std::vector<bool> informative(const std::vector<double>& rates, const std::vector<bool>& use);
// The draws (indices) that satisfy every predicate in `use` at once.
std::vector<std::size_t> accept(const std::vector<Draw>& draws, const std::vector<Predicate>& preds, const std::vector<bool>& use);

// The central `level` interval (nearest-rank quantiles, model/statistics)
// and the median of a sample's finite values; nan for none.
struct Quantiles {
  double lo = 0, median = 0, hi = 0;
  std::size_t n = 0;
};
Quantiles quantiles(std::vector<double> x, double level = 0.9);

struct LeftOut {
  std::size_t predicate = 0;
  std::size_t conditioned = 0;  // draws satisfying every other informative finding
  Quantiles value;              // the left-out finding's value over them
  double p_holds = 0;           // the fraction of them where it holds
  // whether its 90% band reaches the published target: [lo, hi] of the
  // value meets [predicate.lo, predicate.hi] (for a yes/no finding: it
  // holds in at least 5% of them)
  bool inside = false;
};
// Predicate k's value over draws conditioned on the others (accepted by
// rejection, or an ABC-SMC population).
LeftOut predict_left_out(const std::vector<Draw>& conditioned, const std::vector<Predicate>& preds, std::size_t k, double level = 0.9);
// For each informative predicate, conditioned on the other informative ones.
std::vector<LeftOut> leave_one_out(const std::vector<Draw>& draws, const std::vector<Predicate>& preds, const std::vector<bool>& informative,
                                   double level = 0.9);

// When nothing satisfies every informative finding: the one whose removal
// admits the most draws (the finding that resists the others); -1 when some
// draw satisfies them all or none is informative.
int resisting(const std::vector<Draw>& draws, const std::vector<Predicate>& preds, const std::vector<bool>& informative);

// ---------------------------------------------------------------- ABC-SMC
// Sequential Monte Carlo ABC (Beaumont et al. 2009, "Adaptive approximate
// Bayesian computation"; Toni et al. 2009): a population of draws moves
// from the prior toward the exact posterior through decreasing tolerances
// on a distance: the largest, over the findings in `use`, of how far a
// draw's value lies outside the finding's interval, in units of that
// value's spread over the prior (its median absolute deviation). Each
// generation's tolerance is the `quantile` of the last one's distances; a
// proposal is a weighted particle moved by a Gaussian of twice the
// population's variance per dimension (kept in the unit cube), weighted by
// prior / proposal density. It stops at tolerance 0 (every finding holds:
// the rejection posterior) or when the budget of simulations is spent.

// Simulates a batch of points of the unit cube (the caller may split it
// over ranks); one draw each, in order.
using SimulateBatch = std::function<std::vector<Draw>(const std::vector<std::vector<double>>& us)>;

struct SmcOptions {
  std::size_t population = 400;
  std::size_t budget = 10000;  // simulations, the prior's draws not counted (they are given)
  double quantile = 0.5;
  std::size_t batch = 64;      // proposals simulated together
  std::uint64_t seed = 0;
};

struct SmcResult {
  std::vector<Draw> population;  // resampled to equal weights
  std::vector<double> tolerances;  // per generation (the last: where it stopped)
  std::size_t simulated = 0;
  bool exact = false;  // the last tolerance is 0: every finding in `use` holds in every particle
};

// Each predicate's spread over the usable prior draws (median absolute
// deviation; 1 where it is 0 or undefined).
std::vector<double> value_scales(const std::vector<Draw>& prior, const std::vector<Predicate>& preds);
double distance(const Draw& d, const std::vector<Predicate>& preds, const std::vector<bool>& use, const std::vector<double>& scales);

SmcResult abc_smc(const std::vector<Draw>& prior, const std::vector<Predicate>& preds, const std::vector<bool>& use,
                  const SimulateBatch& simulate, const SmcOptions& opt);

}  // namespace ks
