#pragma once
// Statistics of repeated measurements, one definition each, for every part
// of kanscale (the simulator's per-rank spread, the microbenchmarks'
// repetitions, the live trainer's steps, validation's runs, the fit).
#include <cstddef>
#include <vector>

namespace ks {

// Median: the middle value, or the mean of the two middle values for an
// even count; 0 for no values.
double median(std::vector<double> v);

// Nearest-rank quantile, q in [0, 1]: the smallest value with at least
// q x n values at or below it (q = 0: the minimum); 0 for no values.
double quantile(std::vector<double> v, double q);

// The median's distribution-free interval from order statistics: the j-th
// smallest and the j-th largest of the n values, j the largest with
// P(Binomial(n, 1/2) < j) <= (1 - level) / 2, so that it holds the median
// with probability at least `level` whatever the distribution; false when
// no j qualifies (fewer than 6 values at 95%). The calibration's stopping
// rule (kanscale_torch/timer.py's median_ci is the Python side's).
bool median_ci(std::vector<double> v, double level, double& lo, double& hi);
// Half that interval's width over the median (infinity without one).
double median_rel_halfwidth(const std::vector<double>& v, double level = 0.95);
// The fewest samples before a stopping rule looks (a 95% interval of the
// median needs 6: with 5, the smallest and largest cover only 93.75%).
inline constexpr int kMinStopSamples = 6;

// A sample summarised. p95, p25 and p75 are nearest-rank quantiles; cv is
// the sample standard deviation (n - 1) over the mean (0 when n < 2 or the
// mean is not positive).
struct Stat {
  std::size_t n = 0;
  double median = 0, p95 = 0, mean = 0, iqr = 0, cv = 0, min = 0, max = 0;
};
Stat summarize(std::vector<double> v);

// Run-to-run drift from measurements repeated in R rounds ([item][round]
// seconds: live runs, or a kernel at one shape, R >= 2; 0 otherwise): each round's mean over items of log(time) -
// the item's mean log time is that round's effect (a random effect per run
// of the plan, the whole machine faster or slower); the result is their
// standard deviation over the rounds (R - 1).
double round_drift_sigma(const std::vector<std::vector<double>>& runs_rounds_s);

// A rank's speed that persists through a run (one core of a shared host
// slower for seconds, a slower GPU), from runs of two or more ranks: each
// run's ranks' own median compute ([run][rank] seconds); each rank's log
// median less its run's mean log, pooled over the runs with R - 1 degrees
// of freedom each: sqrt(sum of squares / sum (R - 1)). Runs of fewer than 2
// ranks, or with a time that is not positive, count nothing; 0 without any.
double rank_spread_sigma(const std::vector<std::vector<double>>& runs_rank_medians_s);

// The per-rank compute factors a point prediction gives N ranks under that
// spread: exp(sigma z_i), z_i = Phi^-1((i - 0.375) / (N + 0.25)) for
// i = 1..N, Blom's approximation of the expected order statistics of N
// standard normals (G. Blom, Statistical Estimates and Transformed
// Beta-Variables, 1958). Symmetric in the log: their geometric mean is 1;
// the slowest rank, which gates every synchronised iteration, is at
// exp(0.59 sigma) for N = 2 and exp(3.2 sigma) for N = 1000. Empty when
// sigma <= 0 or N < 2.
std::vector<double> rank_spread_factors(double sigma, int ranks);

}  // namespace ks
