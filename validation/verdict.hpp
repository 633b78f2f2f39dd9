#pragma once
// The repeat-run verdict: a plan run N >= 3 times (plan key `runs: N`),
// judged against how far this machine's own runs repeat (repeatability.hpp's
// "others as prediction": each run's cases predicted by the geometric mean of
// the other runs' measurements).
//
//   (a) each run's mean |error| <= max(plan bound, mean_factor x the other
//       runs' predictor mean + mean_points);
//   (b) the signed mean error per group (rank count x transport, and per
//       model size), averaged over the runs, within +-group_bias_pct;
//   (c) the share of case-runs predicted too fast within
//       [too_fast_min_pct, too_fast_max_pct];
//   (d) coverage pooled over the runs >= coverage_min_pct, at a median
//       half-width <= half_width_factor x the other runs' predictor p90
//       (its mean over the runs).
// When that p90 is above inconclusive_p90_pct the machine does not repeat
// well enough to judge: "inconclusive" (exit 3), never a pass.
#include <string>
#include <vector>

#include "plan.hpp"
#include "repeatability.hpp"

namespace ks {

struct CriterionResult {
  std::string name;    // "(a) mean error per run", ...
  bool pass = false;
  std::string detail;  // the numbers against the threshold
};

// Where a group's bias is: its signed mean error (criterion (b)'s) split
// into the compute's and the exposed communication's share, each in points
// of the measured iteration (predicted - measured, over measured, averaged
// like the bias: per run, then over the runs), the rest being what neither
// holds (the host's share, rounding); and the group's pooled coverage.
struct GroupSplit {
  std::string group;
  double bias_pct = 0;
  bool has_parts = false;  // every case-run of the group records its parts
  double compute_pts = 0, exposed_pts = 0;
  int case_runs = 0, with_interval = 0, inside = 0;
};

struct RepeatVerdict {
  std::vector<CriterionResult> criteria;
  std::vector<GroupSplit> groups;  // in (b)'s order, not judged
  double others_mean_pct = 0, others_p90_pct = 0;  // means over the runs
  bool inconclusive = false;
  bool passed() const;
  // 0 every criterion holds, 1 one fails, 3 inconclusive
  int exit_code() const;
  std::string text() const;  // one line per criterion, then the verdict
};

// Judges runs of one plan (each with its predictions and intervals; at
// least three). Throws InputError when the runs are not of the same cases.
RepeatVerdict judge_repeat_runs(const std::vector<ValidationRun>& runs, const ValidationPlan& plan);

}  // namespace ks
