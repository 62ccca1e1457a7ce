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

/// The padding of a sliding window (a convolution or pooling) along height and width: either
/// TensorFlow's SAME, which pads so that the output has `ceil(in / stride)` rows and columns
/// and puts the smaller half of the padding before (above, left), or explicit amounts, as
/// PyTorch's `padding=` (VALID is every amount zero). An explicit output has
/// `floor((in + before + after - kernel) / stride) + 1` rows (columns); padded cells are never
/// read: a convolution skips their taps (zeros), a pooling leaves them out of its window.
struct padding {
  bool same = true;  ///< TensorFlow's SAME; when false, the amounts below
  int top = 0;       ///< rows above the image
  int bottom = 0;    ///< rows below the image
  int left = 0;      ///< columns left of the image
  int right = 0;     ///< columns right of the image

  /// Output extent along an axis of `in` cells with `before` and `after` explicit padding.
  constexpr std::int64_t out_extent(std::int64_t in, int before, int after, int kernel, int stride) const noexcept {
    if (same) return (in + stride - 1) / stride;
    return (in + before + after - kernel) / stride + 1;
  }
  /// Output rows for `in` input rows.
  constexpr std::int64_t out_height(std::int64_t in, int kernel, int stride) const noexcept {
    return out_extent(in, top, bottom, kernel, stride);
  }
  /// Output columns for `in` input columns.
  constexpr std::int64_t out_width(std::int64_t in, int kernel, int stride) const noexcept {
    return out_extent(in, left, right, kernel, stride);
  }
  /// Whether a `kernel`-sized window fits an axis of `in` cells (SAME always does) and every
  /// explicit amount is below `kernel`, so that every window reads at least one cell.
  constexpr bool valid_for(std::int64_t in_height, std::int64_t in_width, int kernel) const noexcept {
    if (same) return true;
    const bool amounts = top < kernel && bottom < kernel && left < kernel && right < kernel;
    return amounts && in_height + top + bottom >= kernel && in_width + left + right >= kernel;
  }
  /// Equal when both are SAME, or both explicit with the same amounts.
  constexpr bool operator==(const padding&) const = default;
};

/// Explicit padding `top, bottom, left, right` (see `padding`).
constexpr padding explicit_padding(int top, int bottom, int left, int right) noexcept {
  return {false, top, bottom, left, right};
}

/// Prints `[4, 56, 56, 256]`.
inline std::ostream& operator<<(std::ostream& os, const shape& s) {
  os << '[';
  for (int i = 0; i < s.rank; ++i) os << (i ? ", " : "") << s.dim[static_cast<std::size_t>(i)];
  return os << ']';
}

}  // namespace ipu
