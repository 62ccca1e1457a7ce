#pragma once
/// \file
/// `ipu::aligned_vector<T>`: a `std::vector` whose data starts on a cache line, so that a
/// vector load or store of a whole line (64 bytes: an AVX-512 register) at a multiple of 64
/// bytes from the start never spans two lines. The fast executor's host tensors use it:
/// `std::vector`'s blocks are 16-byte aligned, and a load split over two lines costs two.

#include <cstddef>
#include <new>
#include <vector>

namespace ipu {

/// Bytes in a cache line of x86-64 processors (Intel 64 and IA-32 Architectures Optimization
/// Reference Manual, "Cache line size"; AMD's Software Optimization Guide, the same), the alignment of
/// `cache_aligned_allocator`'s blocks.
inline constexpr std::size_t cache_line_bytes = 64;

/// An allocator of blocks that start on a cache line (`cache_line_bytes`), through the aligned
/// `operator new`.
template <class T>
struct cache_aligned_allocator {
  using value_type = T;  ///< what it allocates
  /// An allocator (it has no state).
  cache_aligned_allocator() = default;
  /// The same allocator for another type (as a container's rebinding asks).
  template <class U>
  explicit(false) cache_aligned_allocator(const cache_aligned_allocator<U>&) noexcept {}
  /// Room for `n` values of `T`, on a cache line; throws `std::bad_alloc` if there is none.
  T* allocate(std::size_t n) {
    return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{cache_line_bytes}));
  }
  /// Frees `p`, a block from `allocate`.
  void deallocate(T* p, std::size_t) noexcept { ::operator delete(p, std::align_val_t{cache_line_bytes}); }
  /// Every such allocator frees what any other allocated.
  friend bool operator==(const cache_aligned_allocator&, const cache_aligned_allocator&) noexcept { return true; }
};

/// A `std::vector` of `T` whose data starts on a cache line.
template <class T>
using aligned_vector = std::vector<T, cache_aligned_allocator<T>>;

}  // namespace ipu
