#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "sim/event_queue.hpp"
#include "sim/huge_pages.hpp"
#include "model/rng.hpp"

using namespace ks;

TEST_CASE("events pop by time, and equal times in scheduling order") {
  EventQueue<int> q;
  q.schedule(2.0, 20);
  q.schedule(1.0, 10);
  q.schedule(2.0, 21);
  q.schedule(1.0, 11);
  q.schedule(0.5, 5);
  std::vector<int> got;
  while (!q.empty()) got.push_back(q.pop().payload);
  CHECK(got == std::vector<int>{5, 10, 11, 20, 21});
  CHECK(q.now() == 2.0);
  CHECK(q.popped() == 5);
}

TEST_CASE("many equal times keep FIFO order through heap reshuffles") {
  EventQueue<int> q;
  for (int i = 0; i < 1000; ++i) q.schedule(static_cast<double>(i % 3), i);
  int last_time = -1, last_payload = -1;
  while (!q.empty()) {
    auto e = q.pop();
    const int t = static_cast<int>(e.time);
    if (t == last_time) CHECK(e.payload > last_payload);
    last_time = t;
    last_payload = e.payload;
  }
}

TEST_CASE("cancelled events never surface; cancelling twice or after popping is harmless") {
  EventQueue<int> q;
  const EventId a = q.schedule(1.0, 1);
  q.schedule(2.0, 2);
  const EventId c = q.schedule(3.0, 3);
  q.cancel(a);
  q.cancel(a);
  CHECK(q.pop().payload == 2);
  q.cancel(c);
  CHECK(q.empty());
  const EventId d = q.schedule(4.0, 4);
  CHECK(q.pop().payload == 4);
  q.cancel(d);  // already consumed
  CHECK(q.empty());
}

// The reference for the queue's order: the live events sorted on (time,
// sequence), independent of any heap or bucketing.
struct Reference {
  struct Ref {
    double time;
    EventId seq;
    int payload;
  };
  std::vector<Ref> live;
  std::vector<int> got, want;  // payloads as popped, and as the reference orders them
  void sort() {
    std::sort(live.begin(), live.end(), [](const Ref& a, const Ref& b) { return a.time < b.time || (a.time == b.time && a.seq < b.seq); });
  }
  // pops n events, each checked against the reference's next
  void pop(EventQueue<int>& q, std::size_t n) {
    sort();
    for (std::size_t i = 0; i < n; ++i) {
      const auto e = q.pop();
      got.push_back(e.payload);
      want.push_back(live[i].payload);
      CHECK(e.time == live[i].time);
    }
    live.erase(live.begin(), live.begin() + static_cast<std::ptrdiff_t>(n));
  }
  void drain(EventQueue<int>& q) {
    sort();
    while (!q.empty()) got.push_back(q.pop().payload);
    for (const auto& r : live) want.push_back(r.payload);
  }
};

// The 4-ary heap, its batches and its rebuilds against a plain reference:
// every live event sorted by (time, sequence). Times on a coarse grid so that
// ties are common; a third of the events cancelled; batches of every size
// (a small one is placed event by event, a large one rebuilds the heap).
TEST_CASE("random schedules, cancels and batches pop in (time, sequence) order") {
  EventQueue<int> q;
  Rng rng(7);
  Reference ref;
  std::vector<Reference::Ref>& live = ref.live;
  int next_payload = 0;
  std::uint64_t draw = 0;
  for (int round = 0; round < 60; ++round) {
    const bool batch = round % 3 != 0;
    const int n = 1 + static_cast<int>(rng.uniform(1, draw++) * (round % 5 == 0 ? 2000 : 40));
    if (batch) q.begin_batch();
    for (int i = 0; i < n; ++i) {
      const double t = q.now() + std::floor(rng.uniform(2, draw++) * 50.0);
      const EventId id = q.schedule(t, next_payload);
      live.push_back(Reference::Ref{t, id, next_payload++});
      if (rng.uniform(3, draw++) < 0.33) {  // cancel a random live one
        const std::size_t k = static_cast<std::size_t>(rng.uniform(4, draw++) * static_cast<double>(live.size()));
        q.cancel(live[k].seq);
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
      }
    }
    if (batch) q.end_batch();
    ref.pop(q, live.size() / 2);  // half of what is live
  }
  ref.drain(q);
  CHECK(ref.got.size() > 5000);
  CHECK(ref.got == ref.want);
}

// The far tier's edges: times over twelve decades (most events land past
// the buckets, in the overflow, and come back through several rebuilds),
// all events at one time (the buckets have no width), and events scheduled
// between now and the buckets' base (earlier than every bucketed event).
TEST_CASE("the bucketed far tier keeps (time, sequence) order at its edges") {
  EventQueue<int> q;
  Rng rng(11);
  std::vector<std::pair<double, int>> want;  // (time, payload), payloads in scheduling order
  for (int i = 0; i < 3000; ++i) {
    const double t = i % 7 == 0 ? 5.0 : std::pow(10.0, 12.0 * rng.uniform(1, static_cast<std::uint64_t>(i)) - 6.0);
    q.schedule(t, i);
    want.emplace_back(t, i);
  }
  std::stable_sort(want.begin(), want.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<int> got;
  // pop 100, then schedule an event at now + a little (below every bucket
  // still waiting) and expect it next
  for (int i = 0; i < 100; ++i) got.push_back(q.pop().payload);
  q.schedule(q.now() + 1e-12, -1);
  CHECK(q.pop().payload == -1);
  while (!q.empty()) got.push_back(q.pop().payload);
  std::vector<int> order;
  for (const auto& w : want) order.push_back(w.second);
  CHECK(got == order);
  // all at one time: FIFO
  EventQueue<int> same;
  for (int i = 0; i < 500; ++i) same.schedule(2.5, i);
  for (int i = 0; i < 500; ++i) CHECK(same.pop().payload == i);
}

TEST_CASE("no time travel: scheduling before now is refused") {
  EventQueue<int> q;
  q.schedule(5.0, 1);
  q.pop();
  CHECK_THROWS_AS(q.schedule(4.0, 2), std::logic_error);
  CHECK_NOTHROW(q.schedule(5.0, 3));  // same time is allowed
}

TEST_CASE("the seeded RNG is deterministic and order-free") {
  Rng a(42), b(42), c(43);
  CHECK(a.normal(3, 7) == b.normal(3, 7));
  CHECK(a.normal(3, 7) != c.normal(3, 7));
  CHECK(a.normal(3, 7) != a.normal(3, 8));
  // Mean of the mean-one lognormal over many draws: 1 within 4 standard
  // errors (sigma 0.1: sd of the factor ~0.1, n = 20000 -> se ~7e-4).
  double s = 0;
  for (int i = 0; i < 20000; ++i) s += a.lognormal_mean_one(0.1, 1, static_cast<std::uint64_t>(i));
  CHECK(s / 20000 == doctest::Approx(1.0).epsilon(0.003));
  CHECK(a.lognormal_mean_one(0.0, 1, 1) == 1.0);
}

// A bucket holds eight events in its own slab, then chains slabs of eight
// (sim/event_queue.hpp). Events bunched at a few times put hundreds in one
// bucket, pushed both by a rebuild and afterwards (the chain's tail), across
// several rebuilds that reuse the slabs; the reference is a sort on (time,
// sequence), independent of any bucketing.
TEST_CASE("buckets far fuller than their slab keep (time, sequence) order") {
  EventQueue<int> q;
  Rng rng(23);
  Reference ref;
  std::vector<Reference::Ref>& live = ref.live;
  int payload = 0;
  std::uint64_t draw = 0;
  for (int round = 0; round < 8; ++round) {
    // 1,500 events: 90% at one of three times, the rest spread to 100 s ahead
    for (int i = 0; i < 1500; ++i) {
      const double u = rng.uniform(1, draw++);
      const double t = q.now() + (u < 0.9 ? 1.0 + std::floor(u * 3.3) : 100.0 * rng.uniform(2, draw++));
      live.push_back(Reference::Ref{t, q.schedule(t, payload), payload});
      ++payload;
      if (i % 5 == 4) {  // cancel the one before (it may sit in a chained slab)
        q.cancel(live[live.size() - 2].seq);
        live.erase(live.end() - 2);
      }
    }
    // past the first dense time; the next round schedules into the buckets behind it
    ref.pop(q, live.size() / 3);
  }
  ref.drain(q);
  CHECK(ref.got.size() == ref.want.size());
  CHECK(ref.got == ref.want);
}

// A bucket moved into the heap gives its chained slabs back, and the buckets
// filled after it reuse them. 2,048 events at t = i + 0.5 make 512 buckets
// 2047/512 s wide, 4 events each (no chain). Then 256 events go to 1000 s,
// into a bucket already holding 4: 260 events, its own slab and 32 chained
// (ceil(260 / 8) = 33 slabs). Each event of cluster j (at 1000 + 50j)
// schedules one at 1000 + 50(j + 1), for ten clusters, all inside the
// buckets, each again a bucket of 4 + 256. Reusing, the far tier holds at
// most 512 + 32 slabs (a cluster's chain is freed when its bucket moves into
// the heap, before the next cluster's is built); without reuse it ends at
// 512 + 11 x 32 = 864.
TEST_CASE("a bucket's chained slabs are reused once it is moved into the heap") {
  EventQueue<int> q;
  for (int i = 0; i < 2048; ++i) q.schedule(i + 0.5, i);
  std::size_t most = 0;
  std::vector<std::pair<double, EventId>> popped;
  std::size_t scheduled = 2048;
  for (int i = 0; i < 256; ++i) {
    const auto e = q.pop();
    popped.emplace_back(e.time, e.seq);
    q.schedule(1000.0, -1);
    ++scheduled;
    most = std::max(most, q.slabs());
  }
  while (!q.empty()) {
    const auto e = q.pop();
    popped.emplace_back(e.time, e.seq);
    const double j = (e.time - 1000.0) / 50.0;
    if (e.payload < 0 && j < 10) {
      q.schedule(e.time + 50.0, -1);
      ++scheduled;
      most = std::max(most, q.slabs());
    }
  }
  CHECK(popped.size() == scheduled);  // 2048 + 11 x 256
  CHECK(popped.size() == 2048 + 11 * 256);
  CHECK(std::is_sorted(popped.begin(), popped.end()));  // (time, sequence) order
  CHECK(most == 512 + 32);
}

TEST_CASE("the huge-page allocator: 2 MiB blocks aligned to 2 MiB, contents kept through growth") {
  HugeVector<double> v;
  for (int i = 0; i < 600000; ++i) v.push_back(i * 0.5);  // 4.8 MB: several reallocations, the last ones huge
  CHECK(reinterpret_cast<std::uintptr_t>(v.data()) % HugePageAllocator<double>::kHuge == 0);
  bool kept = true;
  for (int i = 0; i < 600000; ++i) kept = kept && v[static_cast<std::size_t>(i)] == i * 0.5;
  CHECK(kept);
  // a block whose tail is past its last whole 2 MiB (left in 4 KiB pages):
  // mapped to its last byte
  HugeVector<char> odd(HugePageAllocator<char>::kHuge + 5000, 1);
  odd.back() = 2;
  CHECK(odd[HugePageAllocator<char>::kHuge] + odd.back() == 3);
  HugeVector<char> small(100);  // below 2 MiB: cache-line aligned memory
  CHECK(reinterpret_cast<std::uintptr_t>(small.data()) % 64 == 0);
}
