#pragma once
// The event core: a heap keyed by (time, sequence). Equal times pop in the
// order they were scheduled; time never goes back (asserted); cancelling
// marks an event dead instead of searching the heap.
//
// The heap is 4-ary and its nodes are 16 bytes, the sequence number and a
// 32-bit payload packed into one word below the time, so that a node's four
// children fill one 64-byte cache line: at 65,536 ranks the heap outgrows
// the caches and each level of a sift costs a miss (issue 29: a binary heap
// of 24-byte events took twice the levels and straddled lines). The order
// is the same as any heap's on (time, sequence): that key is unique.
//
// Only the near events are in the heap: the rest wait unsorted in buckets
// of equal time width (a one-rung ladder queue), moved into the heap a
// bucket at a time, so that the heap stays a few events deep however many
// ranks there are (issue 29: at 65,536 ranks its depth and its misses made
// each event cost 2.5 times what it cost at 64).
#include <algorithm>
#include <cassert>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "sim/huge_pages.hpp"

namespace ks {

using EventId = std::uint64_t;

template <typename Payload>
class EventQueue {
  static_assert(sizeof(Payload) <= 4 && std::is_trivially_copyable<Payload>::value,
                "an event's payload is packed into 32 bits beside its sequence number");

 public:
  struct Event {
    double time;
    EventId seq;
    Payload payload;
  };

  EventQueue() = default;
  EventQueue(const EventQueue&) = delete;
  EventQueue& operator=(const EventQueue&) = delete;
  ~EventQueue() {
    if (heap_) HugePageAllocator<Node>().deallocate(heap_, heap_nodes_);
  }

  double now() const { return now_; }
  bool empty() const { return live_ == 0; }
  std::uint64_t popped() const { return popped_; }

  EventId schedule(double time, const Payload& p) {
    if (!(time >= now_)) throw std::logic_error("event scheduled in the past");
    const EventId id = next_seq_++;
    if (id > kMaxSeq) throw std::logic_error("more than 2^32 events scheduled in one replay");
    std::uint32_t bits = 0;
    std::memcpy(&bits, &p, sizeof p);
    const Node e{time, (id << 32) | bits};
    const double u = (time - base_) * inv_width_;  // the time's bucket, unrounded
    if (u < near_limit_) {
      if (size_ == capacity_) grow(size_ + 1);
      if (batch_from_ != kNoBatch) node(size_++) = e;  // placed by end_batch()
      else sift_up(size_++, e);
    } else if (u < static_cast<double>(buckets_used_)) {
      push_far(static_cast<std::size_t>(u), e);
    } else {
      overflow_.push_back(e);
    }
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

  // Between begin_batch() and end_batch() events are scheduled without
  // being placed, and end_batch() places them all: one by one while they
  // are few, else by dropping the cancelled events and rebuilding the heap
  // in linear time (a whole-machine change of speed reschedules every
  // computing rank at once). Nothing may be popped in between.
  void begin_batch() {
    assert(batch_from_ == kNoBatch);
    batch_from_ = size_;
  }
  void end_batch() {
    const std::size_t from = batch_from_;
    batch_from_ = kNoBatch;
    const std::size_t added = size_ - from;
    if (added == 0) return;
    std::size_t levels = 1;
    for (std::size_t m = size_; m > 4; m /= 4) ++levels;
    if (added * levels < size_) {
      for (std::size_t i = from; i < size_; ++i) sift_up(i, node(i));
      return;
    }
    std::size_t kept = 0;
    for (std::size_t i = 0; i < size_; ++i)
      if (!dead_[node(i).key >> 32]) node(kept++) = node(i);
    size_ = kept;
    heapify();
  }

  // Removes and returns the earliest live event; advances now().
  Event pop() {
    assert(batch_from_ == kNoBatch);
    for (;;) {
      if (size_ == 0) refill();
      const Node top = node(0);
      const Node last = node(--size_);
      if (size_ > 0) sift_down_from(0, last);
      const EventId seq = top.key >> 32;
      if (dead_[seq]) continue;
      dead_[seq] = true;  // consumed
      --live_;
      assert(top.time >= now_ && "time travel");
      now_ = top.time;
      ++popped_;
      Event e{top.time, seq, Payload{}};
      const auto bits = static_cast<std::uint32_t>(top.key);
      std::memcpy(&e.payload, &bits, sizeof e.payload);
      return e;
    }
  }

  // The payload at the top of the heap (it may be a cancelled event's):
  // false when the heap is empty. A hint for prefetching, not an event.
  bool peek(Payload& out) const {
    if (size_ == 0) return false;
    const auto bits = static_cast<std::uint32_t>(heap_[kPad].key);
    std::memcpy(&out, &bits, sizeof out);
    return true;
  }

  // Each time the near heap is refilled from a bucket, the payloads of the
  // bucket after it (events a few pops away, cancelled ones included): a
  // hint for prefetching what those events will touch, early enough for the
  // memory to answer. Visits none between refills.
  template <typename F>
  void visit_upcoming(F&& f) {
    if (refills_ == visited_refills_) return;
    visited_refills_ = refills_;
    if (cur_ == kNoBucket || cur_ + 1 >= buckets_used_) return;
    for_each_far(cur_ + 1, [&f](const Node& e) {
      Payload p;
      const auto bits = static_cast<std::uint32_t>(e.key);
      std::memcpy(&p, &bits, sizeof p);
      f(p);
    });
  }

  // The slabs of the far tier now (buckets' own and chained): for tests.
  std::size_t slabs() const { return slabs_.size(); }

  void reserve(std::size_t n) {
    if (n > capacity_) grow(n);
    dead_.reserve(n);
  }

 private:
  struct Node {
    double time;
    std::uint64_t key;  // sequence << 32 | payload
  };
  static constexpr EventId kMaxSeq = 0xFFFFFFFFull;
  static constexpr std::size_t kNoBatch = ~std::size_t{0};
  // Node i lives at slot i + 3 so that the children of i, 4i+1 .. 4i+4, sit
  // at slots 4(i+1) .. 4(i+1)+3: one aligned line.
  static constexpr std::size_t kPad = 3;
  Node& node(std::size_t i) { return heap_[i + kPad]; }
  static bool earlier(const Node& a, const Node& b) { return a.time < b.time || (a.time == b.time && a.key < b.key); }

  // The near heap is empty: move the next bucket that holds events into it,
  // or, past the last bucket, spread the overflow over new buckets.
  void refill() {
    assert(live_ > 0);
    for (;;) {
      while (++cur_ < buckets_used_) {
        const std::uint32_t count = head_[cur_].count;
        if (count == 0) continue;
        near_limit_ = static_cast<double>(cur_ + 1);
        if (count > capacity_) grow(count);
        for_each_far(cur_, [this](const Node& e) {
          if (!dead_[e.key >> 32]) node(size_++) = e;
        });
        if (count > kSlab) {  // its chained slabs are free for the buckets still to fill
          next_[head_[cur_].tail] = free_slab_;
          free_slab_ = next_[cur_];
        }
        head_[cur_].count = 0;
        next_[cur_] = 0;
        heapify();
        ++refills_;
        if (size_ > 0) return;
      }
      rebuild();  // bucket 0 now holds the earliest event
    }
  }
  // Every live event is in the overflow: new buckets over its time range,
  // about kPerBucket events each.
  void rebuild() {
    spare_.clear();
    spare_.swap(overflow_);
    double lo = 0, hi = 0;
    std::size_t m = 0;
    for (const Node& e : spare_) {
      if (dead_[e.key >> 32]) continue;
      lo = m ? std::min(lo, e.time) : e.time;
      hi = m ? std::max(hi, e.time) : e.time;
      spare_[m++] = e;
    }
    assert(m > 0);
    spare_.resize(m);
    base_ = lo;
    buckets_used_ = std::max<std::size_t>(1, m / kPerBucket);
    // All at one time: one bucket a picosecond wide; the later events wait
    // in the overflow for the next rebuild.
    inv_width_ = hi > lo ? static_cast<double>(buckets_used_) / (hi - lo) : kTieInvWidth;
    // every bucket is empty here (the last rebuild's were all moved in):
    // only the slabs chained to them go
    slabs_.resize(buckets_used_);
    next_.assign(buckets_used_, 0);
    free_slab_ = 0;
    if (head_.size() < buckets_used_) head_.resize(buckets_used_);
    near_limit_ = 0;  // nothing is near until a bucket is moved in
    cur_ = kNoBucket;
    for (const Node& e : spare_) {
      const double u = (e.time - base_) * inv_width_;
      if (u < static_cast<double>(buckets_used_)) push_far(static_cast<std::size_t>(u), e);
      else overflow_.push_back(e);
    }
  }
  // A far event into bucket b: into the bucket's own slab while it has room
  // (a store at an address known without a load: the write of a cache line
  // the core need not wait for), else into the slabs chained after it.
  void push_far(std::size_t b, const Node& e) {
    Head& h = head_[b];
    const std::uint32_t c = h.count++;
    if (c < kSlab) {
      slabs_[b].n[c] = e;
      return;
    }
    std::uint32_t& tail = h.tail;
    if (c % kSlab == 0) {  // the bucket's last slab is full: chain a free one, else a new one
      std::uint32_t fresh = free_slab_;
      if (fresh != 0) {
        free_slab_ = next_[fresh];
      } else {
        fresh = static_cast<std::uint32_t>(slabs_.size());
        slabs_.emplace_back();
        next_.push_back(0);
      }
      next_[c == kSlab ? b : tail] = fresh;
      tail = fresh;
    }
    slabs_[tail].n[c % kSlab] = e;
  }
  template <typename F>
  void for_each_far(std::size_t b, F&& f) const {
    std::uint32_t left = head_[b].count;
    for (std::size_t s = b;; s = next_[s]) {
      const std::uint32_t m = std::min<std::uint32_t>(left, kSlab);
      for (std::uint32_t i = 0; i < m; ++i) f(slabs_[s].n[i]);
      left -= m;
      if (left == 0) return;
    }
  }
  void heapify() {
    for (std::size_t i = size_ > 1 ? (size_ - 2) / 4 + 1 : 0; i-- > 0;) sift_down_from(i, node(i));
  }

  void grow(std::size_t need) {
    std::size_t cap = capacity_ ? capacity_ : 64;
    while (cap < need) cap *= 2;
    const std::size_t bytes = (cap + kPad + 1) * sizeof(Node);
    const std::size_t nodes = (bytes + 63) / 64 * 64 / sizeof(Node);
    Node* p = HugePageAllocator<Node>().allocate(nodes);
    if (heap_) {
      std::memcpy(p + kPad, heap_ + kPad, size_ * sizeof(Node));
      HugePageAllocator<Node>().deallocate(heap_, heap_nodes_);
    }
    heap_ = p;
    heap_nodes_ = nodes;
    capacity_ = cap;
  }
  void sift_up(std::size_t i, Node e) {
    while (i > 0) {
      const std::size_t parent = (i - 1) / 4;
      if (!earlier(e, node(parent))) break;
      node(i) = node(parent);
      i = parent;
    }
    node(i) = e;
  }
  // Places e in the subtree rooted at i (whose children are heaps), the
  // bottom-up way: the hole at i moves down to a leaf along the earliest
  // children, then e rises from there (it came from the bottom, so it
  // rarely rises far). The children are compared without branches: on
  // event times in no order, a branch per comparison is mispredicted half
  // the time, and that, not the memory, was most of a pop's cost.
  void sift_down_from(std::size_t i, Node e) {
    const std::size_t n = size_;
    const std::size_t top = i;
    for (;;) {
      const std::size_t c0 = 4 * i + 1;
      if (c0 >= n) break;
      std::size_t c;
      if (c0 + 4 <= n) {
        const std::size_t a = c0 + before(node(c0 + 1), node(c0));
        const std::size_t b = c0 + 2 + before(node(c0 + 3), node(c0 + 2));
        c = before(node(b), node(a)) ? b : a;
      } else {
        c = c0;
        for (std::size_t j = c0 + 1; j < n; ++j) c = before(node(j), node(c)) ? j : c;
      }
      node(i) = node(c);
      i = c;
    }
    while (i > top) {
      const std::size_t parent = (i - 1) / 4;
      if (!earlier(e, node(parent))) break;
      node(i) = node(parent);
      i = parent;
    }
    node(i) = e;
  }
  // earlier() as 0 or 1, evaluated without a branch
  static std::size_t before(const Node& a, const Node& b) {
    return static_cast<std::size_t>((a.time < b.time) | ((a.time == b.time) & (a.key < b.key)));
  }

  Node* heap_ = nullptr;
  std::size_t heap_nodes_ = 0;  // allocated, padding included
  std::size_t size_ = 0, capacity_ = 0;
  std::size_t batch_from_ = kNoBatch;  // first node scheduled in the open batch
  // The far tier: events not yet near wait unsorted in buckets of equal
  // time width (bucket floor((t - base) * inv_width)), past the last bucket
  // in the overflow. The near heap holds every event of the buckets up to
  // the current one, so it stays a few events deep however many ranks
  // there are: the heap's log N had made each event cost more at scale.
  // The bucket function is monotone in t, so every event in a later bucket
  // is later than every near one: the order is the heap's, exactly.
  static constexpr std::size_t kPerBucket = 4;
  static constexpr std::size_t kNoBucket = ~std::size_t{0};
  // A bucket's events are in its own slab of kSlab nodes (two cache lines),
  // then in slabs chained after it (a bucket holds kPerBucket events on
  // average; events that bunch in time fill more). Slabs [0, buckets_used_)
  // are the buckets'; the chained ones follow. One array: a bucket's push
  // needs no load of a vector's pointer first, which was a dependent miss
  // per event at scale (issue 29).
  static constexpr std::uint32_t kSlab = 8;
  struct alignas(64) Slab {
    Slab() {}  // left uninitialised: a slab's nodes are written before they are read
    Node n[kSlab];
  };
  static constexpr double kTieInvWidth = 1e12;  // 1/s: buckets of 1 ps when every event is at one time
  double base_ = 0, inv_width_ = 0;
  double near_limit_ = -1;  // a time whose unrounded bucket is below this is near (-1: none yet)
  std::size_t buckets_used_ = 0, cur_ = kNoBucket;
  HugeVector<Slab> slabs_;
  struct Head {
    std::uint32_t count = 0;  // the bucket's events
    std::uint32_t tail = 0;   // with chained slabs: the last of them
  };
  HugeVector<Head> head_;  // per bucket, read together by a push
  HugeVector<std::uint32_t> next_;   // per slab: the next slab of its bucket (0: none), or the next free one
  // Chained slabs of the buckets already moved into the heap, reused before
  // new ones are added: a rebuild's slabs are then about its events' (they
  // had grown with every event pushed since the rebuild, 8 MiB at 65,536
  // ranks against 2 MiB of buckets; issue 60). Slab 0 is a bucket's own,
  // never chained, so 0 ends the list.
  std::uint32_t free_slab_ = 0;
  HugeVector<Node> overflow_, spare_;
  std::uint64_t refills_ = 0, visited_refills_ = 0;
  std::vector<bool> dead_;  // indexed by sequence number
  EventId next_seq_ = 0;
  std::size_t live_ = 0;
  std::uint64_t popped_ = 0;
  double now_ = 0;
};

}  // namespace ks
