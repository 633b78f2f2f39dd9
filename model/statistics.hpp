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

}  // namespace ks
