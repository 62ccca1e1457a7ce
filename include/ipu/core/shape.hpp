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

/// A pair of extents along height and width: a window's size, its stride or its dilation. An
/// `int` converts to the square pair, so `nn::conv<64, 3, 2>` is a 3x3 kernel at stride 2 and
/// `nn::conv<64, hw{1, 7}>` a kernel of one row and seven columns.
struct hw {
  int h = 1;  ///< along height (rows)
  int w = 1;  ///< along width (columns)

  /// 1 x 1.
  constexpr hw() noexcept = default;
  /// `both` x `both`: implicit, so that a square window is written as one number.
  constexpr hw(int both) noexcept : h(both), w(both) {}  // NOLINT(google-explicit-constructor)
  /// `height` x `width`.
  constexpr hw(int height, int width) noexcept : h(height), w(width) {}

  /// `h * w`: the taps of a kernel.
  constexpr std::int64_t area() const noexcept { return std::int64_t{h} * w; }
  /// Equal when both extents are.
  constexpr bool operator==(const hw&) const = default;
};

/// The cells a window of `kernel` taps spans when its taps are `dilation` apart:
/// `dilation * (kernel - 1) + 1` along each axis (the kernel itself when `dilation` is 1).
constexpr hw dilated_extent(hw kernel, hw dilation) noexcept {
  return {dilation.h * (kernel.h - 1) + 1, dilation.w * (kernel.w - 1) + 1};
}

/// The padding of a sliding window (a convolution or pooling) along height and width: either
/// TensorFlow's SAME, which pads so that the output has `ceil(in / stride)` rows and columns
/// and puts the smaller half of the padding before (above, left), or explicit amounts, as
/// PyTorch's `padding=` (VALID is every amount zero). An explicit output has
/// `floor((in + before + after - extent) / stride) + 1` rows (columns), `extent` being the
/// window's span (`dilated_extent`: the kernel itself unless dilated); padded cells are never
/// read: a convolution skips their taps (zeros), a pooling leaves them out of its window.
struct padding {
  bool same = true;  ///< TensorFlow's SAME; when false, the amounts below
  int top = 0;       ///< rows above the image
  int bottom = 0;    ///< rows below the image
  int left = 0;      ///< columns left of the image
  int right = 0;     ///< columns right of the image

  /// Output extent along an axis of `in` cells with `before` and `after` explicit padding, a
  /// window spanning `extent` cells at `stride`.
  constexpr std::int64_t out_extent(std::int64_t in, int before, int after, int extent, int stride) const noexcept {
    if (same) return (in + stride - 1) / stride;
    return (in + before + after - extent) / stride + 1;
  }
  /// Output rows for `in` input rows, a window spanning `extent` cells at `stride`.
  constexpr std::int64_t out_height(std::int64_t in, hw extent, hw stride) const noexcept {
    return out_extent(in, top, bottom, extent.h, stride.h);
  }
  /// Output columns for `in` input columns, a window spanning `extent` cells at `stride`.
  constexpr std::int64_t out_width(std::int64_t in, hw extent, hw stride) const noexcept {
    return out_extent(in, left, right, extent.w, stride.w);
  }
  /// Whether a window spanning `extent` cells fits the image (SAME always does) and every
  /// explicit amount is below the window along its axis, so that every undilated window
  /// reads at least one cell.
  constexpr bool valid_for(std::int64_t in_height, std::int64_t in_width, hw extent) const noexcept {
    if (same) return true;
    const bool amounts = top < extent.h && bottom < extent.h && left < extent.w && right < extent.w;
    return amounts && in_height + top + bottom >= extent.h && in_width + left + right >= extent.w;
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
