#pragma once
// An allocator for the replay's large per-rank and per-event arrays: blocks
// of 2 MiB or more are aligned to 2 MiB and offered to the kernel as
// transparent huge pages (madvise(MADV_HUGEPAGE); Debian's default THP mode
// is "madvise", so without the call they stay 4 KiB pages). At 65,536 ranks
// the ranks' state, the event buckets and the launch times span tens of
// MiB visited in no order; in 4 KiB pages nearly every visit also missed the
// TLB, which costs the most in a virtual machine's nested page tables
// (issue 29). Smaller blocks, and systems without THP, get plain memory:
// the contents, hence every replay, are the same either way.
#include <cstddef>
#include <cstdlib>
#include <new>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace ks {

template <typename T>
struct HugePageAllocator {
  using value_type = T;
  static constexpr std::size_t kHuge = std::size_t{2} << 20;

  HugePageAllocator() = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) noexcept {}

  T* allocate(std::size_t n) {
    if (n > static_cast<std::size_t>(-1) / sizeof(T)) throw std::bad_array_new_length();
    const std::size_t bytes = n * sizeof(T);
    const std::size_t align = bytes >= kHuge ? kHuge : (alignof(T) > 64 ? alignof(T) : 64);
    void* p = std::aligned_alloc(align, (bytes + align - 1) / align * align);
    if (!p) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (bytes >= kHuge) (void)madvise(p, (bytes + kHuge - 1) / kHuge * kHuge, MADV_HUGEPAGE);  // advice only
#endif
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t) noexcept { std::free(p); }

  template <typename U>
  bool operator==(const HugePageAllocator<U>&) const noexcept { return true; }
  template <typename U>
  bool operator!=(const HugePageAllocator<U>&) const noexcept { return false; }
};

template <typename T>
using HugeVector = std::vector<T, HugePageAllocator<T>>;

// The same, but resize() leaves new elements of a trivial type unwritten
// (default-initialised), for an array every element of which is written
// before it is read: at 65,536 ranks zeroing one first costs a pass of
// last-level misses over all of it.
template <typename T>
struct UninitHugePageAllocator : HugePageAllocator<T> {
  template <typename U>
  struct rebind {
    using other = UninitHugePageAllocator<U>;
  };
  UninitHugePageAllocator() = default;
  template <typename U>
  UninitHugePageAllocator(const UninitHugePageAllocator<U>&) noexcept {}
  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

template <typename T>
using UninitHugeVector = std::vector<T, UninitHugePageAllocator<T>>;

}  // namespace ks
