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
#include <bit>
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

namespace detail {
/// The levels of `pack`'s lists of placed buffers ordered by offset. Each list is a skip list:
/// every buffer is on level 0, one in 4 also on level 1, one in 16 on level 2, and so on, as
/// its index says (`offset_list_level`; indices say nothing of offsets). Finding where a
/// buffer goes then walks a few buffers per level instead of every buffer below it.
inline constexpr int offset_list_levels = 5;

/// The highest level of buffer `i`: half the trailing zeros of `i + 1`.
constexpr int offset_list_level(int i) noexcept {
  return std::min(std::countr_zero(static_cast<unsigned>(i) + 1u) / 2, offset_list_levels - 1);
}

/// Links `i` into the skip list from `head` (`head[level]` is the first on `level`,
/// `next[level * stride + q]` follows `q` there, -1 ends a level) ordered by `offset`, after
/// the last at or below its own.
constexpr void insert_by_offset(int* next, std::size_t stride, int* head, const std::int64_t* offset, int i) noexcept {
  const int top = offset_list_level(i);
  int at = -1;  // the last buffer found at or below offset[i]
  for (int level = offset_list_levels - 1; level >= 0; --level) {
    int* const row = next + static_cast<std::size_t>(level) * stride;
    int* link = at < 0 ? &head[level] : &row[at];
    while (*link >= 0 && offset[*link] <= offset[i]) at = *link, link = &row[at];
    if (level <= top) row[i] = *link, *link = i;
  }
}

/// The first index of the ascending `a[lo, hi)` whose element is not below `key` (or `hi`):
/// `std::lower_bound` on plain indices, which the constant evaluator runs in a quarter of the
/// steps.
constexpr int first_not_below(const std::int64_t* a, int lo, int hi, std::int64_t key) noexcept {
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    if (a[mid] < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
}  // namespace detail

/// Offsets of `requests[0, count)` from the dynamic base, such that two buffers live at a
/// common step never share a byte; buffers of 0 bytes get offset 0. Greedy by size: the
/// largest first (the earliest first step first among equals, then the lowest index), each at
/// the lowest offset clear of every placed buffer it meets (one of 0 and the ends of those
/// buffers), found by walking the buffers it meets in order of offset as far as its end.
///
/// Most buffers live a few steps (an activation until its readers, a step's scratch one).
/// Those living fewer than `short_lifetime` steps are found through the requests ordered by
/// first step: the placed ones that start in the steps before a buffer that such a life can
/// span, or during its life. The others (a training step's stashed activations live through
/// most of its steps) are kept in a list ordered by offset. A short-lived buffer walks the
/// short-lived ones it meets, sorted (they are few), merged with that list: inference costs
/// about the buffers that meet each one, not all of them. A long-lived one, which meets most
/// buffers, walks a list of all placed buffers ordered by offset, kept only when there are
/// long-lived ones. (Written for the constant evaluator, where library calls and member
/// accesses cost: integer keys, no comparators, plain arrays indexed through pointers.)
template <std::size_t M>
constexpr std::array<std::int64_t, M> pack(const std::array<buffer_request, M>& requests, int count) noexcept {
  static_assert(M < (std::size_t{1} << 16), "pack: at most 65535 buffers");
  constexpr int short_lifetime = 32;
  constexpr std::int64_t index_mask = 0xffff;
  const buffer_request* r = requests.data();
  std::array<std::int64_t, M> offsets{};
  std::int64_t* offset = offsets.data();
  // Sort keys: bytes descending, then first step, then index (16 bits each for the last two);
  // and the short-lived buffers by first step, then index.
  std::array<std::int64_t, M> keys{}, by_first_storage{};
  std::int64_t* by_first = by_first_storage.data();
  int sized = 0, short_count = 0, longest_short = 0;
  for (int k = 0; k < count; ++k) {
    if (r[k].bytes <= 0) continue;
    const std::int64_t bytes = std::min<std::int64_t>(r[k].bytes, (std::int64_t{1} << 31) - 1);
    keys.data()[sized++] = ((std::int64_t{1} << 31) - 1 - bytes) << 32 | std::int64_t{r[k].first & 0xffff} << 16 | k;
    if (r[k].last - r[k].first >= short_lifetime) continue;
    by_first[short_count++] = std::int64_t{r[k].first} << 16 | k;
    longest_short = std::max(longest_short, r[k].last - r[k].first);
  }
  std::sort(keys.begin(), keys.begin() + sized);
  if (!std::is_sorted(by_first, by_first + short_count))  // the plans make them in order
    std::sort(by_first, by_first + short_count);
  const bool any_long = short_count < sized;
  // Each placed buffer's steps and end (0 until it is placed: every buffer here has bytes);
  // the short-lived buffers a buffer meets, as keys `offset << 16 | index`; the placed buffers
  // as lists in order of offset, the long-lived ones and all (`next_*[q]` follows `q` on level
  // 0, -1 ends a list; the other levels follow).
  constexpr std::size_t levels = detail::offset_list_levels;
  std::array<int, levels * M> next_long_storage{}, next_all_storage{};
  std::array<int, levels> head_long{}, head_all{};
  head_long.fill(-1), head_all.fill(-1);
  std::array<int, M> first_storage{}, last_storage{};
  std::array<std::int64_t, M> end_storage{}, met_storage{};
  int *next_long = next_long_storage.data(), *next_all = next_all_storage.data();
  int *first = first_storage.data(), *last = last_storage.data();
  std::int64_t *end = end_storage.data(), *met = met_storage.data();
  for (int k = 0; k < sized; ++k) {
    const int i = static_cast<int>(keys.data()[k] & index_mask);
    const int f = r[i].first, l = r[i].last;
    const std::int64_t bytes = r[i].bytes;
    const bool lives_long = l - f >= short_lifetime;
    std::int64_t lowest = 0;
    if (lives_long) {
      for (int q = head_all[0]; q >= 0 && offset[q] < lowest + bytes; q = next_all[q])
        if (first[q] <= l && f <= last[q] && end[q] > lowest) lowest = end[q];
    } else {
      // The short-lived ones it meets, sorted, merged with the long-lived ones.
      const std::int64_t from = std::int64_t{std::max(f - longest_short, 0)} << 16, to = std::int64_t{l} << 16 | index_mask;
      const int window_begin = detail::first_not_below(by_first, 0, short_count, from);
      const int window_end = detail::first_not_below(by_first, window_begin, short_count, to + 1);
      int n = 0;
      for (int w = window_begin; w < window_end; ++w) {
        const int q = static_cast<int>(by_first[w] & index_mask);
        if (end[q] != 0 && last[q] >= f) met[n++] = offset[q] << 16 | q;
      }
      for (int c = 1; c < n; ++c)
        for (int d = c; d > 0 && met[d - 1] > met[d]; --d) std::swap(met[d - 1], met[d]);
      int a = 0, q = head_long[0];
      while (true) {
        const bool from_list = q >= 0 && (a == n || offset[q] < (met[a] >> 16));
        const int b = from_list ? q : a < n ? static_cast<int>(met[a] & index_mask) : -1;
        if (b < 0 || offset[b] >= lowest + bytes) break;
        if ((!from_list || (first[b] <= l && f <= last[b])) && end[b] > lowest) lowest = end[b];
        if (from_list) q = next_long[q];
        else ++a;
      }
    }
    offset[i] = lowest;
    first[i] = f, last[i] = l, end[i] = lowest + bytes;
    if (lives_long) detail::insert_by_offset(next_long, M, head_long.data(), offset, i);
    if (any_long) detail::insert_by_offset(next_all, M, head_all.data(), offset, i);
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
