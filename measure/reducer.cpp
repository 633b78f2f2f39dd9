#include "reducer.hpp"

namespace ks {

Reducer::Reducer(const DdpBucketPlans& plans, const std::vector<std::size_t>& param_elements)
    : plans_(plans), param_elements_(param_elements) {
  for (Plan plan : {kFirst, kSteady}) {
    Layout& l = layout_[plan];
    l.slot.assign(param_elements.size(), Slot{-1, 0});
    const auto& bs = plan == kFirst ? plans_.first_iteration : plans_.steady;
    for (std::size_t b = 0; b < bs.size(); ++b) {
      std::size_t off = 0;
      for (int p : bs[b].params) {
        if (p < 0 || static_cast<std::size_t>(p) >= param_elements.size() || l.slot[static_cast<std::size_t>(p)].bucket >= 0)
          throw std::logic_error("Reducer: parameter " + std::to_string(p) + " is out of range or in two buckets");
        l.slot[static_cast<std::size_t>(p)] = Slot{static_cast<int>(b), off};
        off += param_elements[static_cast<std::size_t>(p)];
      }
      l.elements.push_back(off);
    }
    for (std::size_t p = 0; p < l.slot.size(); ++p)
      if (l.slot[p].bucket < 0) throw std::logic_error("Reducer: parameter " + std::to_string(p) + " is in no bucket");
  }
}

void Reducer::begin(Plan plan) {
  plan_ = plan;
  ready_.assign(buckets(plan), 0);
  next_ = 0;
}

}  // namespace ks
