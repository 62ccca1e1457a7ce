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

/// TensorFlow's SAME padding along one axis: the padding before and after, together.
constexpr std::int64_t same_padding_total(std::int64_t in, std::int64_t out, std::int64_t kernel,
                                          std::int64_t stride) noexcept {
  return std::max<std::int64_t>(0, (out - 1) * stride + kernel - in);
}

/// TensorFlow's SAME padding along one axis: the padding before the first element, the
/// smaller half of `same_padding_total`.
constexpr std::int64_t same_padding_before(std::int64_t in, std::int64_t out, std::int64_t kernel,
                                           std::int64_t stride) noexcept {
  return same_padding_total(in, out, kernel, stride) / 2;
}

/// The geometry of a sliding-window op over NHWC images (a dense layer is a 1x1 conv on 1x1
/// images).
struct window_geometry {
  /// \var in_height
  /// Rows of each input image.
  /// \var in_width
  /// Columns of each input image.
  /// \var out_height
  /// Rows of each output image.
  /// \var out_width
  /// Columns of each output image.
  /// \var kernel
  /// Side of the square window, in pixels.
  /// \var stride
  /// Pixels from one window to the next, along rows and columns.
  /// \var pad_top
  /// Padding rows above the image: output row `oh` reads from input row
  /// `oh * stride - pad_top`; taps outside the image are skipped, not read as zeros.
  /// \var pad_left
  /// Padding columns left of the image: output column `ow` reads from input column
  /// `ow * stride - pad_left`.
  std::int64_t in_height = 1, in_width = 1;
  std::int64_t out_height = 1, out_width = 1;
  std::int64_t kernel = 1, stride = 1;
  std::int64_t pad_top = 0, pad_left = 0;

  /// SAME padding for the given sizes: `pad_top` and `pad_left` from `same_padding_before`.
  static constexpr window_geometry same(std::int64_t in_h, std::int64_t in_w, std::int64_t out_h,
                                        std::int64_t out_w, std::int64_t kernel, std::int64_t stride) noexcept {
    return {in_h,   in_w,   out_h, out_w, kernel, stride, same_padding_before(in_h, out_h, kernel, stride),
            same_padding_before(in_w, out_w, kernel, stride)};
  }
  /// Output positions of one image, `out_height * out_width`.
  constexpr std::int64_t positions_per_image() const noexcept { return out_height * out_width; }

  /// The input rows (`image * in_height + h`) that output positions `[begin, end)` read:
  /// `[first, last)`. Positions count over all images, row-major.
  constexpr std::pair<std::int64_t, std::int64_t> input_rows(std::int64_t begin, std::int64_t end) const noexcept {
    const std::int64_t first_out = begin / out_width, last_out = (end - 1) / out_width;
    const auto first_in = [&](std::int64_t out_row) {
      const std::int64_t image = out_row / out_height, oh = out_row % out_height;
      return image * in_height + std::max<std::int64_t>(0, oh * stride - pad_top);
    };
    const auto end_in = [&](std::int64_t out_row) {
      const std::int64_t image = out_row / out_height, oh = out_row % out_height;
      return image * in_height + std::min(in_height, oh * stride - pad_top + kernel);
    };
    return {first_in(first_out), end_in(last_out)};
  }
};

/// Calls `f(kh, kw, pixel)` for each tap of output position `p` (over all images, row-major)
/// that falls inside the image, in kernel-row then kernel-column order; `pixel` points at the
/// tap's input channels in `in`.
template <class T, class F>
constexpr void for_each_tap(const window_geometry& g, image_view<T> in, std::int64_t p, F&& f) {
  const std::int64_t per_image = g.positions_per_image();
  const std::int64_t image = p / per_image, oh = p % per_image / g.out_width, ow = p % g.out_width;
  for (std::int64_t kh = 0; kh < g.kernel; ++kh) {
    const std::int64_t ih = oh * g.stride - g.pad_top + kh;
    if (ih < 0 || ih >= g.in_height) continue;
    for (std::int64_t kw = 0; kw < g.kernel; ++kw) {
      const std::int64_t iw = ow * g.stride - g.pad_left + kw;
      if (iw >= 0 && iw < g.in_width) f(kh, kw, in.pixel(image * g.in_height + ih, iw));
    }
  }
}

/// A block of conv weights: `[kh][kw][ci]` rows of `block_channels` contiguous output
/// channels, row `(kh * kernel + kw) * in_channels + ci` at `data + row * row_stride`. `W` is
/// the storage type (f32 weights converted once, or `T` read straight from a tile); either
/// way each weight reaches the arithmetic as the same f32 value.
template <class W>
struct weight_view {
  const W* data = nullptr;       ///< row 0: tap `(0, 0)`, input channel 0
  std::int64_t in_channels = 0;  ///< rows per tap: the input channels each output channel reads
  std::int64_t row_stride = 0;   ///< elements from one row to the next

  /// Row `(kh * kernel + kw) * in_channels + ci`: the weights from input channel `ci` at tap
  /// `(kh, kw)` of a `kernel` x `kernel` window to each output channel of the block.
  constexpr const W* row(std::int64_t kh, std::int64_t kw, std::int64_t kernel, std::int64_t ci) const noexcept {
    return data + ((kh * kernel + kw) * in_channels + ci) * row_stride;
  }
};

}  // namespace ipu::kernels
