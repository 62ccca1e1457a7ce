#pragma once
/// \file
/// `ipu::shape`: the extents of a tensor of rank 1 to 4, as a plain value usable in constant
/// expressions. Activations are NHWC (rank 4) or NC (rank 2, after global pooling).

#include <array>
#include <cstdint>
#include <ostream>

namespace ipu {

/// Extents of a tensor; `dim[0..rank)` are meaningful, the rest are zero.
struct shape {
  int rank = 0;                      ///< number of meaningful extents, 0 to 4
  std::array<std::int64_t, 4> dim{};  ///< the extents, outermost first (N, H, W, C for NHWC)

  /// Number of elements (1 for rank 0).
  constexpr std::int64_t elements() const noexcept {
    std::int64_t n = 1;
    for (int i = 0; i < rank; ++i) n *= dim[static_cast<std::size_t>(i)];
    return n;
  }
  /// The last extent: channels for NHWC and NC tensors.
  constexpr std::int64_t channels() const noexcept {
    return rank > 0 ? dim[static_cast<std::size_t>(rank - 1)] : 0;
  }
  /// True when the ranks and all four entries of `dim` are equal.
  constexpr bool operator==(const shape&) const = default;
};

/// The rank-4 shape `[n, h, w, c]`.
constexpr shape nhwc(std::int64_t n, std::int64_t h, std::int64_t w, std::int64_t c) noexcept {
  return {4, {n, h, w, c}};
}
/// The rank-2 shape `[n, c]`.
constexpr shape nc(std::int64_t n, std::int64_t c) noexcept { return {2, {n, c, 0, 0}}; }

/// Prints `[4, 56, 56, 256]`.
inline std::ostream& operator<<(std::ostream& os, const shape& s) {
  os << '[';
  for (int i = 0; i < s.rank; ++i) os << (i ? ", " : "") << s.dim[static_cast<std::size_t>(i)];
  return os << ']';
}

}  // namespace ipu
