#pragma once
// The ranges of every count that multiplies other counts, in one place.
// Readers of files and flags refuse a value outside its range (exit 2, the
// key or flag, the value as written and the range); past these checks
// every product kanscale forms (GPUs x batch, scenarios, events, bytes)
// stays far inside 64-bit integers and exact doubles. docs/configuration.md (Limits) lists
// each range with the keys and flags that use it.
#include <cstdint>

namespace ks {

// GPUs of a cluster (nodes x gpus_per_node) and every GPU count asked for
// (--gpus, a study's sweep.gpus, --set gpus): 2^20, 16x the largest
// systems of 2026; the replay keeps ~250 B per rank (0.3 GB here).
inline constexpr std::int64_t kMaxGpus = std::int64_t{1} << 20;
inline constexpr std::int64_t kMaxGpusPerNode = 1024;
// A KAN's grid size G: the KAN paper's grid extension reaches G = 1000
// (Liu et al. 2024, Fig. 2.3); coefficients per edge are G + k.
inline constexpr std::int64_t kMaxGridSize = 1000;
inline constexpr std::int64_t kMaxSplineOrder = 16;
// Samples per GPU per step (the activations are batch x width x (G + 2k)
// floats, checked against the GPU's memory separately).
inline constexpr std::int64_t kMaxBatch = std::int64_t{1} << 30;
inline constexpr std::int64_t kMaxEpochs = 1000000;
// Iterations replayed per prediction (simulate, whatif, a study).
inline constexpr std::int64_t kMaxIterations = 1000;
// Steps of one live run (a validation or calibration case, train --steps is
// bounded by its memory estimate): the case's dataset is batch x ranks x (steps + 2).
inline constexpr std::int64_t kMaxLiveSteps = 1000000;
// Scenarios of a study: clusters x every sweep axis, refused before expansion.
inline constexpr std::int64_t kMaxScenarios = 10000;
// Processes a measurement starts per core of this machine (calibrate,
// validate, measure): above it a run would only thrash.
inline constexpr std::int64_t kMaxRanksPerCore = 16;
// A time budget (whatif --budget): a millisecond (less than one iteration of
// any model) to a century.
inline constexpr double kMinBudgetS = 1e-3;
inline constexpr double kMaxBudgetS = 100 * 365.25 * 86400;
// A measured time (a measurement file, a validation run): a year.
inline constexpr double kMaxMeasuredS = 365.25 * 86400;

}  // namespace ks
