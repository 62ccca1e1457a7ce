#pragma once
/// \file
/// Where buffers go: the offsets the plan gives every buffer of a tile, which the faithful
/// executor uses as they are.
///
/// A tile's memory is laid out in two regions. From byte 0, the **always-live** region: the
/// tile's code, then each weight tensor of its IPU's nodes, in node order. Above it, from the
/// tile's *dynamic base*, the **dynamic** region: activations (and copies of activations from
/// other IPUs) and each step's temporaries, exchange and send buffers. Each dynamic buffer has
/// one offset from the dynamic base, the same on every tile of its IPU, and room for its
/// fullest tile; buffers whose lifetimes (in steps) overlap never share bytes. The offsets are
/// found by `pack`, greedily by size (largest first, each at the lowest offset clear of the
/// buffers already placed that live at the same time).
///
/// Every buffer starts at a multiple of `buffer_alignment`.

#include <ipu/core/arith.hpp>
#include <ipu/graph/node.hpp>
#include <ipu/plan/node_plan.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace ipu {

/// Bytes every buffer's offset, and every region's size, is a multiple of: the largest
/// alignment the kernels read with, `alignof(float)` (f32 values and f32 partials).
inline constexpr std::int64_t buffer_alignment = 4;

/// `bytes` rounded up to a multiple of `buffer_alignment`.
constexpr std::int64_t aligned(std::int64_t bytes) noexcept {
  return detail::div_up(bytes, buffer_alignment) * buffer_alignment;
}

/// A dynamic buffer to place: live during steps `[first, last]`, `bytes` (aligned) on its
/// fullest tile.
struct buffer_request {
  int first = 0;           ///< the step that allocates it
  int last = 0;            ///< the last step that reads it
  std::int64_t bytes = 0;  ///< room it needs, a multiple of `buffer_alignment`

  /// Whether it and `o` are live at a common step.
  constexpr bool overlaps(const buffer_request& o) const noexcept { return first <= o.last && o.first <= last; }
};

/// Offsets of `requests[0, count)` from the dynamic base, such that two buffers live at a
/// common step never share a byte; buffers of 0 bytes get offset 0. Greedy by size: the
/// largest first (the earliest first step first among equals, then the lowest index), each at
/// the lowest offset clear of every placed buffer it overlaps. The placed buffers are kept in
/// a list ordered by offset, which a buffer walks only up to the first offset above its own
/// end, so the cost grows with the buffers below it, whatever their lifetimes (a training
/// step's stashed activations live through most of its steps). (Written for the constant
/// evaluator: integer keys sort without a comparator, arrays are indexed through pointers.)
template <std::size_t M>
constexpr std::array<std::int64_t, M> pack(const std::array<buffer_request, M>& requests, int count) noexcept {
  static_assert(M < (std::size_t{1} << 16), "pack: at most 65535 buffers");
  const buffer_request* r = requests.data();
  std::array<std::int64_t, M> offsets{};
  std::int64_t* offset = offsets.data();
  // Sort keys: bytes descending, then first step, then index (16 bits each for the last two).
  std::array<std::int64_t, M> keys{};
  int sized = 0;
  for (int k = 0; k < count; ++k) {
    if (r[k].bytes <= 0) continue;
    const std::int64_t bytes = std::min<std::int64_t>(r[k].bytes, (std::int64_t{1} << 31) - 1);
    keys.data()[sized++] = ((std::int64_t{1} << 31) - 1 - bytes) << 32 | std::int64_t{r[k].first & 0xffff} << 16 | k;
  }
  std::sort(keys.begin(), keys.begin() + sized);
  // The placed buffers as a list in order of offset: `next[q]` follows `q`, -1 ends it. Each
  // buffer's steps and end are copied to plain arrays: the walks read nothing else.
  std::array<int, M> next_storage{}, first_storage{}, last_storage{};
  std::array<std::int64_t, M> end_storage{};
  int *next = next_storage.data(), *first = first_storage.data(), *last = last_storage.data();
  std::int64_t* end = end_storage.data();
  int head = -1;
  for (int k = 0; k < sized; ++k) {
    const int i = static_cast<int>(keys.data()[k] & 0xffff);
    const int f = r[i].first, l = r[i].last;
    const std::int64_t bytes = r[i].bytes;
    std::int64_t lowest = 0;
    for (int q = head; q >= 0 && offset[q] < lowest + bytes; q = next[q])
      if (first[q] <= l && f <= last[q] && end[q] > lowest) lowest = end[q];
    offset[i] = lowest;
    first[i] = f, last[i] = l, end[i] = lowest + bytes;
    int* link = &head;  // after the last placed buffer at or below `lowest`
    while (*link >= 0 && offset[*link] <= lowest) link = &next[*link];
    next[i] = *link;
    *link = i;
  }
  return offsets;
}

/// The always-live region of `tile` on IPU `ipu`: `code_bytes` of code from byte 0, then each
/// weight tensor `w` of each node `j` of `nodes` placed on `ipu`, in that order, each at an
/// aligned offset `offset`, for which it calls `place(j, w, offset)`. Returns the end of the
/// region: the tile's dynamic base. `plans` holds the plan of each node.
template <class Place>
constexpr std::int64_t lay_out_always_live(std::span<const node> nodes, std::span<const node_plan> plans, int ipu,
                                           int tile, std::int64_t code_bytes, Place&& place) {
  std::int64_t offset = aligned(code_bytes);
  for (std::size_t j = 0; j < nodes.size(); ++j) {
    if (nodes[j].ipu != ipu) continue;
    const node_plan& p = plans[j];
    for (int w = 0; w < p.weight_tensors; ++w) {
      place(static_cast<int>(j), w, offset);
      offset += aligned(p.weights[static_cast<std::size_t>(w)].elements_on(tile) * p.weight_bytes[static_cast<std::size_t>(w)]);
    }
  }
  return offset;
}

}  // namespace ipu
