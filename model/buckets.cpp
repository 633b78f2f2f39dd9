#include "buckets.hpp"

#include <algorithm>
#include <limits>
#include <numeric>

namespace ks {

std::vector<Bucket> assign_buckets_by_size(const std::vector<double>& param_bytes, const std::vector<int>& order,
                                           const std::vector<double>& limits, bool sort_by_min_index) {
  std::vector<Bucket> result;
  std::size_t limit_index = 0;
  Bucket cur;
  for (int i : order) {
    cur.params.push_back(i);
    cur.bytes += param_bytes.at(static_cast<std::size_t>(i));
    if (cur.bytes >= limits[limit_index]) {
      result.push_back(std::move(cur));
      cur = Bucket{};
      if (limit_index + 1 < limits.size()) ++limit_index;
    }
  }
  if (!cur.params.empty()) result.push_back(std::move(cur));
  if (sort_by_min_index) {
    std::stable_sort(result.begin(), result.end(), [](const Bucket& a, const Bucket& b) {
      return *std::min_element(a.params.begin(), a.params.end()) < *std::min_element(b.params.begin(), b.params.end());
    });
  }
  return result;
}

DdpBucketPlans ddp_bucket_plans(const std::vector<double>& param_bytes, const std::vector<int>& ready_order,
                                const DdpSettings& ddp, bool torch2) {
  std::vector<int> definition(param_bytes.size());
  std::iota(definition.begin(), definition.end(), 0);
  const double first = torch2 && ddp.bucket_cap_given ? ddp.bucket_cap_bytes : ddp.first_bucket_bytes;
  const std::vector<double> limits = {first, ddp.bucket_cap_bytes};
  DdpBucketPlans plans;
  if (ddp.find_unused_parameters) {
    // Built once in definition order, reversed, never rebuilt.
    auto b = assign_buckets_by_size(param_bytes, definition, limits, true);
    std::reverse(b.begin(), b.end());
    plans.first_iteration = b;
    plans.steady = b;
    plans.rebuilt = false;
  } else {
    // First iteration: one bucket of every parameter (limit sys.maxsize);
    // then rebuilt in the recorded ready order with limits [first, cap].
    plans.first_iteration = assign_buckets_by_size(param_bytes, definition, {std::numeric_limits<double>::max()}, true);
    plans.steady = assign_buckets_by_size(param_bytes, ready_order, limits, false);
    plans.rebuilt = true;
  }
  return plans;
}

}  // namespace ks
