#pragma once
// An allocator for the replay's large per-rank and per-event arrays: blocks
// of 2 MiB or more are mapped on their own, aligned to 2 MiB, and their
// whole 2 MiB spans offered to the kernel as transparent huge pages
// (madvise(MADV_HUGEPAGE); Debian's default THP mode is "madvise", so
// without the call they stay 4 KiB pages). At 65,536 ranks the ranks'
// state, the event buckets and the launch times span tens of MiB visited in
// no order; in 4 KiB pages nearly every visit also missed the TLB, which
// costs the most in a virtual machine's nested page tables (issue 29).
// The block's tail past its last whole span stays in 4 KiB pages, so
// touching it does not make a whole 2 MiB resident, and a freed block goes
// back to the system at once (malloc's heap kept freed blocks and moved its
// mmap threshold up after each, so the resident peak of a series of
// replays varied by 8 MiB from run to run; issue 60). Smaller blocks, and
// systems without mmap, get plain memory: the contents, hence every
// replay, are the same either way.
#include <cstddef>
#include <cstdint>
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
  static constexpr std::size_t kPage = 4096;
  static std::size_t mapped_bytes(std::size_t bytes) { return (bytes + kPage - 1) / kPage * kPage; }

  HugePageAllocator() = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) noexcept {}

  T* allocate(std::size_t n) {
    if (n > (static_cast<std::size_t>(-1) - 2 * kHuge) / sizeof(T)) throw std::bad_array_new_length();
    const std::size_t bytes = n * sizeof(T);
#if defined(__linux__)
    if (bytes >= kHuge) {
      // map 2 MiB more than the pages needed, then unmap what lies outside
      // the aligned block
      const std::size_t len = mapped_bytes(bytes);
      void* raw = mmap(nullptr, len + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (raw == MAP_FAILED) throw std::bad_alloc();
      const auto at = reinterpret_cast<std::uintptr_t>(raw);
      const std::uintptr_t start = (at + kHuge - 1) / kHuge * kHuge;
      if (start > at) munmap(raw, start - at);
      munmap(reinterpret_cast<void*>(start + len), at + len + kHuge - (start + len));  // (start < at + kHuge: never empty)
#if defined(MADV_HUGEPAGE)
      (void)madvise(reinterpret_cast<void*>(start), bytes / kHuge * kHuge, MADV_HUGEPAGE);  // advice only
#endif
      return reinterpret_cast<T*>(start);
    }
#endif
    const std::size_t align = alignof(T) > 64 ? alignof(T) : 64;
    void* p = std::aligned_alloc(align, (bytes + align - 1) / align * align);
    if (!p) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t n) noexcept {
#if defined(__linux__)
    if (n * sizeof(T) >= kHuge) {
      munmap(p, mapped_bytes(n * sizeof(T)));
      return;
    }
#endif
    std::free(p);
  }

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
