#pragma once
/// \file
/// `runtime::tile_heap`: the allocator of one tile's memory image in faithful mode.

#include <ipu/runtime/execution.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace ipu::runtime {

/// First-fit allocation in one tile's memory image. Offsets and sizes are in bytes.
class tile_heap {
 public:
  static constexpr std::int64_t alignment = 4;  ///< every allocation starts at a multiple of this many bytes

  /// An empty image of `capacity` bytes.
  explicit tile_heap(std::int64_t capacity = 0) : capacity_(capacity) {}

  /// Offset of `bytes` new bytes, the lowest aligned one where they fit, or -1 when no gap
  /// holds them.
  std::int64_t allocate(std::int64_t bytes) {
    std::int64_t cursor = 0;
    auto it = used_.begin();
    for (; it != used_.end(); ++it) {
      if (align(cursor) + bytes <= it->first) break;
      cursor = it->first + it->second;
    }
    const std::int64_t at = align(cursor);
    if (at + bytes > capacity_) return -1;
    used_.insert(it, {at, bytes});
    return at;
  }
  /// Frees the allocation that starts at `offset`; throws `execution_error` if none does.
  void release(std::int64_t offset) {
    const auto it = std::lower_bound(used_.begin(), used_.end(), std::pair<std::int64_t, std::int64_t>{offset, 0});
    if (it == used_.end() || it->first != offset) throw execution_error("ipu: release of an unallocated offset");
    used_.erase(it);
  }
  /// Keeps the first `count` allocations (the always-live ones) and releases the rest.
  void truncate(std::size_t count) { used_.resize(std::min(count, used_.size())); }
  /// Number of live allocations.
  std::size_t allocations() const noexcept { return used_.size(); }
  /// One past the highest allocated byte.
  std::int64_t extent() const noexcept { return used_.empty() ? 0 : used_.back().first + used_.back().second; }

 private:
  static constexpr std::int64_t align(std::int64_t x) noexcept { return (x + alignment - 1) / alignment * alignment; }
  std::int64_t capacity_;
  std::vector<std::pair<std::int64_t, std::int64_t>> used_;  // (offset, bytes), by offset
};

}  // namespace ipu::runtime
