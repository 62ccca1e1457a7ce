#pragma once
/// \file
/// What the kernels read: strided views over activations and weights, and the geometry of a
/// sliding-window op. The executor builds views over a tile's exchange buffers (faithful mode)
/// or over whole host tensors (fast mode); a kernel computes the same values from either, so
/// the two modes agree bit for bit.
///
/// Kernels compute in f32 (`Acc` may be f16 for f16 partials) from `T` storage and never
/// allocate; the partials buffer is the caller's.

#include <ipu/core/dtype.hpp>
#include <ipu/target/layout.hpp>

#include <algorithm>
#include <cstdint>
#include <utility>

namespace ipu::kernels {

/// Converts a stored element to the f32 the arithmetic runs in.
template <class T>
constexpr float widen(T x) noexcept {
  return static_cast<float>(x);
}

/// Rows of an NHWC image: row `r` is `image * height + h`; pixel `(r, x)` starts at
/// `data + (r - first_row) * row_stride + x * pixel_stride`, with its channels contiguous.
///
/// \tparam T  the element type: `float` or `ipu::f16`
template <class T>
struct image_view {
  const T* data = nullptr;        ///< the first channel of pixel `(first_row, 0)`
  std::int64_t first_row = 0;     ///< the row (`image * height + h`) that `data` points into
  std::int64_t row_stride = 0;    ///< elements from a pixel to the same pixel one row down
  std::int64_t pixel_stride = 0;  ///< elements from a pixel to the next one in its row

  /// The first channel of pixel `(row, x)`: `row` counts over all images, `x` is the column.
  /// `row` must be at least `first_row`.
  constexpr const T* pixel(std::int64_t row, std::int64_t x) const noexcept {
    return data + (row - first_row) * row_stride + x * pixel_stride;
  }
};

/// Calls `f(kh, kw, pixel)` for each tap of output position `p` (over all images, row-major)
/// that falls inside the image, in kernel-row then kernel-column order; `pixel` points at the
/// tap's input channels in `in`.
template <class T, class F>
constexpr void for_each_tap(const window_geometry& g, image_view<T> in, std::int64_t p, F&& f) {
  const std::int64_t per_image = g.positions_per_image();
  const std::int64_t image = p / per_image, oh = p % per_image / g.out_width, ow = p % g.out_width;
  const std::int64_t ih0 = oh * g.stride_h - g.pad_top, iw0 = ow * g.stride_w - g.pad_left;
  const auto [kh0, kh1] = g.rows_inside(ih0);
  const auto [kw0, kw1] = g.columns_inside(iw0);
  for (std::int64_t kh = kh0; kh < kh1; ++kh)
    for (std::int64_t kw = kw0; kw < kw1; ++kw)
      f(kh, kw, in.pixel(image * g.in_height + ih0 + kh * g.dilation_h, iw0 + kw * g.dilation_w));
}

/// A block of conv weights: `[kh][kw][ci]` rows of `block_channels` contiguous output
/// channels, row `(kh * kernel_w + kw) * in_channels + ci` at `data + row * row_stride`. `W` is
/// the storage type (f32 weights converted once, or `T` read straight from a tile); either
/// way each weight reaches the arithmetic as the same f32 value.
template <class W>
struct weight_view {
  const W* data = nullptr;       ///< row 0: tap `(0, 0)`, input channel 0
  std::int64_t in_channels = 0;  ///< rows per tap: the input channels each output channel reads
  std::int64_t row_stride = 0;   ///< elements from one row to the next

  /// Row `(kh * kernel_w + kw) * in_channels + ci`: the weights from input channel `ci` at
  /// tap `(kh, kw)` of a window `kernel_w` taps wide to each output channel of the block.
  constexpr const W* row(std::int64_t kh, std::int64_t kw, std::int64_t kernel_w, std::int64_t ci) const noexcept {
    return data + ((kh * kernel_w + kw) * in_channels + ci) * row_stride;
  }
};

}  // namespace ipu::kernels
