#pragma once
// The event core: a binary heap keyed by (time, sequence). Equal times pop
// in the order they were scheduled; time never goes back (asserted);
// cancelling marks an event dead instead of searching the heap.
#include <cassert>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace ks {

using EventId = std::uint64_t;

template <typename Payload>
class EventQueue {
 public:
  struct Event {
    double time;
    EventId seq;
    Payload payload;
  };

  double now() const { return now_; }
  bool empty() const { return live_ == 0; }
  std::uint64_t popped() const { return popped_; }

  EventId schedule(double time, const Payload& p) {
    if (!(time >= now_)) throw std::logic_error("event scheduled in the past");
    const EventId id = next_seq_++;
    heap_.push_back(Event{time, id, p});
    sift_up(heap_.size() - 1);
    dead_.push_back(false);
    ++live_;
    return id;
  }

  // Lazy: the event stays in the heap and is skipped when it surfaces.
  void cancel(EventId id) {
    if (id < dead_.size() && !dead_[id]) {
      dead_[id] = true;
      --live_;
    }
  }

  // Removes and returns the earliest live event; advances now().
  Event pop() {
    for (;;) {
      assert(!heap_.empty());
      Event e = heap_.front();
      heap_.front() = heap_.back();
      heap_.pop_back();
      if (!heap_.empty()) sift_down(0);
      if (dead_[e.seq]) continue;
      dead_[e.seq] = true;  // consumed
      --live_;
      assert(e.time >= now_ && "time travel");
      now_ = e.time;
      ++popped_;
      return e;
    }
  }

  void reserve(std::size_t n) { heap_.reserve(n); }

 private:
  static bool earlier(const Event& a, const Event& b) {
    return a.time < b.time || (a.time == b.time && a.seq < b.seq);
  }
  void sift_up(std::size_t i) {
    Event e = heap_[i];
    while (i > 0) {
      const std::size_t parent = (i - 1) / 2;
      if (!earlier(e, heap_[parent])) break;
      heap_[i] = heap_[parent];
      i = parent;
    }
    heap_[i] = e;
  }
  void sift_down(std::size_t i) {
    const std::size_t n = heap_.size();
    Event e = heap_[i];
    for (;;) {
      std::size_t c = 2 * i + 1;
      if (c >= n) break;
      if (c + 1 < n && earlier(heap_[c + 1], heap_[c])) ++c;
      if (!earlier(heap_[c], e)) break;
      heap_[i] = heap_[c];
      i = c;
    }
    heap_[i] = e;
  }

  std::vector<Event> heap_;
  std::vector<bool> dead_;  // indexed by sequence number
  EventId next_seq_ = 0;
  std::size_t live_ = 0;
  std::uint64_t popped_ = 0;
  double now_ = 0;
};

}  // namespace ks
