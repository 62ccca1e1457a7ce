#pragma once
/// \file
/// Layout: how a tensor's elements are laid out over the tiles and in each tile's memory, and
/// the geometry of a sliding window over NHWC images. The plan decides mappings with these,
/// the executors and kernels read data through them, and nothing else defines them.
///
/// - `tensor_mapping`: which elements each tile holds (units of elements over PopLibs' linear
///   tile mapping, `target/mapping.hpp`);
/// - `storage_order`: the order a mapping stores a tensor's elements in (NHWC or block-major);
/// - `window_geometry`: which input pixels an output of a conv or pooling reads, with
///   TensorFlow's SAME padding or explicit amounts, any kernel shape, stride and dilation.

#include <ipu/core/shape.hpp>
#include <ipu/target/chip.hpp>
#include <ipu/target/mapping.hpp>

#include <algorithm>
#include <cstdint>
#include <utility>

namespace ipu {

/// Where a tensor lives: a linear mapping of units of `unit_elements` elements each, over the
/// tensor's *storage order*. With `blocks == 1` the storage order is the logical one (NHWC or
/// NC, channels innermost). With `blocks > 1` the channels are cut into `blocks` blocks of
/// `unit_elements` channels and stored block-major: all positions of block 0, then block 1, ...
/// (a conv's output, each unit one position of one block).
struct tensor_mapping {
  linear_mapping units{};          ///< the linear mapping of the units over the tiles
  /// Elements per unit: the channels of one block at one position for a conv or dense output,
  /// 1 for a tensor mapped element by element.
  std::int64_t unit_elements = 1;
  std::int64_t blocks = 1;         ///< channel blocks of the storage order (1: the logical order)

  /// Elements of the whole tensor.
  constexpr std::int64_t elements() const noexcept { return units.elements * unit_elements; }
  /// Elements held by \p tile (zero for a tile outside the mapping).
  constexpr std::int64_t elements_on(int tile) const noexcept { return units.elements_on(tile) * unit_elements; }
  /// Most elements held by any one tile.
  constexpr std::int64_t max_elements_per_tile() const noexcept {
    return units.max_elements_per_tile() * unit_elements;
  }
  /// Tiles holding part of the tensor: `[0, tiles())`.
  constexpr int tiles() const noexcept { return static_cast<int>(units.parts); }
  /// Equal when the units, their size and the blocks are equal (then the same elements live
  /// on the same tiles in the same storage order).
  constexpr bool operator==(const tensor_mapping&) const = default;
};

/// A tensor of `elements` elements of `element_bytes` bytes, mapped element by element.
constexpr tensor_mapping map_elements(std::int64_t elements, std::int64_t element_bytes,
                                      const chip_spec& chip) noexcept {
  return {map_linearly(elements, element_bytes, chip), 1};
}

/// The storage order of a tensor of `positions x channels` elements under a mapping (see
/// `tensor_mapping`): NHWC when `blocks == 1`, otherwise block-major.
/// In block-major order, block `b` holds channels `[b * block_channels, (b + 1) * block_channels)`
/// of every position, positions outer and channels inner.
struct storage_order {
  /// Elements per channel: N·H·W, or N for an NC tensor.
  std::int64_t positions = 1, channels = 1, blocks = 1, block_channels = 1;
  /// \var channels
  /// \brief The last extent of the shape.
  /// \var blocks
  /// \brief Channel blocks; 1 for NHWC.
  /// \var block_channels
  /// \brief Channels per block; `channels` when `blocks == 1`.

  /// The storage order of a tensor of shape `s` under mapping `m`: block-major with
  /// `m.unit_elements` channels per block when `m.blocks > 1`, else NHWC.
  static storage_order of(const tensor_mapping& m, const shape& s) noexcept {
    const std::int64_t c = s.channels();
    return {s.elements() / c, c, m.blocks, m.blocks > 1 ? m.unit_elements : c};
  }
  /// Storage index of channel `c` of position `p`.
  constexpr std::int64_t index(std::int64_t p, std::int64_t c) const noexcept {
    if (blocks == 1) return p * channels + c;
    return (c / block_channels) * positions * block_channels + p * block_channels + c % block_channels;
  }
  /// How many of the `n` channels from `c` of one position are contiguous in storage.
  constexpr std::int64_t run(std::int64_t c, std::int64_t n) const noexcept {
    return blocks == 1 ? n : std::min(n, block_channels - c % block_channels);
  }
  /// Position and channel of storage index `s`.
  constexpr std::pair<std::int64_t, std::int64_t> locate(std::int64_t s) const noexcept {
    if (blocks == 1) return {s / channels, s % channels};
    const std::int64_t per_block = positions * block_channels, r = s % per_block;
    return {r / block_channels, s / per_block * block_channels + r % block_channels};
  }
};

/// TensorFlow's SAME padding and the sliding-window geometry, in the namespace of the kernels
/// that read through it.
namespace kernels {

/// TensorFlow's SAME padding along one axis, for a window spanning `span` cells: the padding
/// before and after, together.
constexpr std::int64_t same_padding_total(std::int64_t in, std::int64_t out, std::int64_t span,
                                          std::int64_t stride) noexcept {
  return std::max<std::int64_t>(0, (out - 1) * stride + span - in);
}

/// The geometry of a sliding-window op over NHWC images (a dense layer is a 1x1 conv on 1x1
/// images): tap `(kh, kw)` of output `(oh, ow)` reads input row
/// `oh * stride_h - pad_top + kh * dilation_h` and column
/// `ow * stride_w - pad_left + kw * dilation_w`; taps outside the image are skipped, not read
/// as zeros.
struct window_geometry {
  /// \var in_height
  /// Rows of each input image.
  /// \var in_width
  /// Columns of each input image.
  /// \var out_height
  /// Rows of each output image.
  /// \var out_width
  /// Columns of each output image.
  /// \var kernel_h
  /// Rows of the window's taps.
  /// \var kernel_w
  /// Columns of the window's taps.
  /// \var stride_h
  /// Rows from one window to the next.
  /// \var stride_w
  /// Columns from one window to the next.
  /// \var dilation_h
  /// Rows from one tap to the next (1: adjacent).
  /// \var dilation_w
  /// Columns from one tap to the next (1: adjacent).
  /// \var pad_top
  /// Padding rows above the image.
  /// \var pad_left
  /// Padding columns left of the image.
  /// \var pad_bottom
  /// Padding rows below the image (only an average that counts padding reads it).
  /// \var pad_right
  /// Padding columns right of the image (only an average that counts padding reads it).
  std::int64_t in_height = 1, in_width = 1;
  std::int64_t out_height = 1, out_width = 1;
  std::int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  std::int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;

  /// The geometry of padding `pad` (SAME or explicit) for the given sizes and window. SAME
  /// pads `same_padding_total` for the window's span (`dilated_extent`), the smaller half
  /// before (`pad_top`, `pad_left`), the rest after.
  static constexpr window_geometry of(std::int64_t in_h, std::int64_t in_w, std::int64_t out_h, std::int64_t out_w,
                                      hw kernel, hw stride, hw dilation, const padding& pad) noexcept {
    window_geometry g{in_h, in_w, out_h, out_w, kernel.h, kernel.w, stride.h, stride.w, dilation.h, dilation.w};
    if (!pad.same) {
      g.pad_top = pad.top, g.pad_bottom = pad.bottom, g.pad_left = pad.left, g.pad_right = pad.right;
      return g;
    }
    const hw span = dilated_extent(kernel, dilation);
    const std::int64_t rows = same_padding_total(in_h, out_h, span.h, stride.h);
    const std::int64_t cols = same_padding_total(in_w, out_w, span.w, stride.w);
    g.pad_top = rows / 2, g.pad_bottom = rows - rows / 2, g.pad_left = cols / 2, g.pad_right = cols - cols / 2;
    return g;
  }
  /// Rows the window spans: `dilation_h * (kernel_h - 1) + 1`.
  constexpr std::int64_t span_h() const noexcept { return dilation_h * (kernel_h - 1) + 1; }
  /// Columns the window spans: `dilation_w * (kernel_w - 1) + 1`.
  constexpr std::int64_t span_w() const noexcept { return dilation_w * (kernel_w - 1) + 1; }
  /// True for a 1x1 window at stride 1: each output reads the input pixel at its own place
  /// (none where that place is padding).
  constexpr bool pointwise() const noexcept { return kernel_h == 1 && kernel_w == 1 && stride_h == 1 && stride_w == 1; }
  /// True for a 1x1 window at stride 1 without padding: output position `p` reads input pixel `p`.
  constexpr bool one_to_one() const noexcept { return pointwise() && in_height == out_height && in_width == out_width; }

  /// Cells of output position `p`'s window inside the padded image (the image and its
  /// padding): PyTorch's divisor for an average that counts padding (`count_include_pad`).
  /// Pooling windows are never dilated.
  constexpr std::int64_t padded_taps(std::int64_t p) const noexcept {
    const std::int64_t rest = p % positions_per_image(), oh = rest / out_width, ow = rest % out_width;
    const std::int64_t rows = std::min(oh * stride_h + kernel_h, in_height + pad_top + pad_bottom) - oh * stride_h;
    const std::int64_t cols = std::min(ow * stride_w + kernel_w, in_width + pad_left + pad_right) - ow * stride_w;
    return rows * cols;
  }
  /// Output positions of one image, `out_height * out_width`.
  constexpr std::int64_t positions_per_image() const noexcept { return out_height * out_width; }

  /// The input rows (`image * in_height + h`) that output positions `[begin, end)` read:
  /// `[first, last)`. Positions count over all images, row-major.
  constexpr std::pair<std::int64_t, std::int64_t> input_rows(std::int64_t begin, std::int64_t end) const noexcept {
    const std::int64_t first_out = begin / out_width, last_out = (end - 1) / out_width;
    const auto first_in = [&](std::int64_t out_row) {
      const std::int64_t image = out_row / out_height, oh = out_row % out_height;
      return image * in_height + std::max<std::int64_t>(0, oh * stride_h - pad_top);
    };
    const auto end_in = [&](std::int64_t out_row) {
      const std::int64_t image = out_row / out_height, oh = out_row % out_height;
      return image * in_height + std::min(in_height, oh * stride_h - pad_top + span_h());
    };
    return {first_in(first_out), end_in(last_out)};
  }

  /// The kernel rows `[first, last)` whose taps fall inside the image for a window whose
  /// tap row 0 is input row `ih` (possibly negative).
  constexpr std::pair<std::int64_t, std::int64_t> rows_inside(std::int64_t ih) const noexcept {
    return inside(ih, in_height, kernel_h, dilation_h);
  }
  /// The kernel columns `[first, last)` whose taps fall inside the image for a window whose
  /// tap column 0 is input column `iw` (possibly negative).
  constexpr std::pair<std::int64_t, std::int64_t> columns_inside(std::int64_t iw) const noexcept {
    return inside(iw, in_width, kernel_w, dilation_w);
  }

  /// The input pixel that tap `(kh, kw)` of output position `p` (over all images, row-major)
  /// reads, as an index over all images' pixels (`(image * in_height + h) * in_width + w`);
  /// -1 when the tap falls in the padding.
  constexpr std::int64_t tap_pixel(std::int64_t p, std::int64_t kh, std::int64_t kw) const noexcept {
    const std::int64_t per_image = positions_per_image();
    const std::int64_t image = p / per_image, oh = p % per_image / out_width, ow = p % out_width;
    const std::int64_t ih = oh * stride_h - pad_top + kh * dilation_h, iw = ow * stride_w - pad_left + kw * dilation_w;
    if (ih < 0 || ih >= in_height || iw < 0 || iw >= in_width) return -1;
    return (image * in_height + ih) * in_width + iw;
  }

 private:
  // Taps `[first, last)` of `taps` taps `dilation` apart, from cell `at`, inside `[0, extent)`.
  static constexpr std::pair<std::int64_t, std::int64_t> inside(std::int64_t at, std::int64_t extent, std::int64_t taps,
                                                                std::int64_t dilation) noexcept {
    const std::int64_t first = at >= 0 ? 0 : (-at + dilation - 1) / dilation;
    const std::int64_t last = extent <= at ? 0 : std::min(taps, (extent - at + dilation - 1) / dilation);
    return {std::min(first, last), last};
  }
};

}  // namespace kernels
}  // namespace ipu
