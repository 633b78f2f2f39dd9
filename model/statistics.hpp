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

}  // namespace ks
