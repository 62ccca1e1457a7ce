#pragma once
/// \file
/// Convolution (dense and grouped, any kernel shape, stride, dilation and padding) and dense
/// layers, one block of output channels at a time.
///
/// Every output is the sum of its products in one fixed order — kernel row, kernel column,
/// input channel — each product added by one `madd` (fused when the target has FMA) into `Acc`
/// (f32 partials by default, f16 when the options say so), then the bias added and the result
/// rounded to `T`. `packed_conv` computes the same sums with vector instructions. The order does not depend on how
/// positions are grouped into calls, nor on a split of the sum into calls over consecutive taps
/// or channels (`conv_accumulate`, `conv_tap_accumulate`, then `conv_store`) that continue the
/// same partials, which is what keeps the faithful and fast executors bit-identical whatever
/// the tiles, serial phases, work items or host threads.

#include <ipu/kernels/simd.hpp>
#include <ipu/kernels/views.hpp>

#include <algorithm>
#include <cstdint>

namespace ipu::kernels {

/// `acc + x * w` in the partials type: one `madd` (see `simd.hpp`), rounded to `Acc`.
template <class Acc>
inline Acc accumulate(Acc acc, float x, float w) noexcept {
  return static_cast<Acc>(madd(x, w, widen(acc)));
}
/// The f32 case: `madd(x, w, acc)`, with no further rounding.
template <>
inline float accumulate<float>(float acc, float x, float w) noexcept {
  return madd(x, w, acc);
}

namespace detail {
/// Adds `x * w[co]` to `acc[co]` for `co < channels`.
template <class Acc, class W>
inline void axpy(Acc* __restrict acc, float x, const W* __restrict w, std::int64_t channels) noexcept {
  for (std::int64_t co = 0; co < channels; ++co) acc[co] = accumulate(acc[co], x, widen(w[co]));
}

/// Rounds `acc` (plus `bias`) to `T` into `out`.
template <class T, class Acc, class W>
inline void store(const Acc* acc, const W* bias, std::int64_t channels, T* out) noexcept {
  if (bias != nullptr) {
    for (std::int64_t co = 0; co < channels; ++co) out[co] = static_cast<T>(widen(acc[co]) + widen(bias[co]));
  } else {
    for (std::int64_t co = 0; co < channels; ++co) out[co] = static_cast<T>(widen(acc[co]));
  }
}

/// 1x1, stride 1: four positions share each weight row.
template <class T, class Acc, class W>
void conv_pointwise(const window_geometry& g, image_view<T> in, weight_view<W> w, std::int64_t channels,
                    std::int64_t begin, std::int64_t end, Acc* partials) noexcept {
  const std::int64_t per_image = g.positions_per_image();
  const auto pixel = [&](std::int64_t p) {
    const std::int64_t image = p / per_image, rest = p % per_image;
    return in.pixel(image * g.in_height + rest / g.out_width, rest % g.out_width);
  };
  std::int64_t p = begin;
  for (; p + 4 <= end; p += 4) {
    const T *x0 = pixel(p), *x1 = pixel(p + 1), *x2 = pixel(p + 2), *x3 = pixel(p + 3);
    Acc* a0 = partials + (p - begin) * channels;
    Acc *a1 = a0 + channels, *a2 = a1 + channels, *a3 = a2 + channels;
    for (std::int64_t ci = 0; ci < w.in_channels; ++ci) {
      const float v0 = widen(x0[ci]), v1 = widen(x1[ci]), v2 = widen(x2[ci]), v3 = widen(x3[ci]);
      const W* __restrict wr = w.row(0, 0, 1, ci);
      for (std::int64_t co = 0; co < channels; ++co) {
        const float wv = widen(wr[co]);
        a0[co] = accumulate(a0[co], v0, wv);
        a1[co] = accumulate(a1[co], v1, wv);
        a2[co] = accumulate(a2[co], v2, wv);
        a3[co] = accumulate(a3[co], v3, wv);
      }
    }
  }
  for (; p < end; ++p) {
    const T* x = pixel(p);
    Acc* acc = partials + (p - begin) * channels;
    for (std::int64_t ci = 0; ci < w.in_channels; ++ci) axpy(acc, widen(x[ci]), w.row(0, 0, 1, ci), channels);
  }
}
}  // namespace detail

/// Adds the products of output positions `[begin, end)` (over all images, row-major) of one
/// block of `channels` output channels to `partials` (`(end - begin) * channels` values of
/// `Acc`), in kernel-row, kernel-column, input-channel order. `in` views the input channels
/// `w` reads (`w.in_channels` of them, contiguous in each pixel).
template <class T, class Acc, class W>
void conv_accumulate(const window_geometry& g, image_view<T> in, weight_view<W> w, std::int64_t channels,
                     std::int64_t begin, std::int64_t end, Acc* partials) noexcept {
  if (g.pointwise()) {
    detail::conv_pointwise(g, in, w, channels, begin, end, partials);
    return;
  }
  for (std::int64_t p = begin; p < end; ++p) {
    Acc* acc = partials + (p - begin) * channels;
    for_each_tap(g, in, p, [&](std::int64_t kh, std::int64_t kw, const T* x) {
      for (std::int64_t ci = 0; ci < w.in_channels; ++ci)
        detail::axpy(acc, widen(x[ci]), w.row(kh, kw, g.kernel_w, ci), channels);
    });
  }
}

/// As `conv_accumulate`, for one tap `(kh, kw)`: `x` holds, for each position, the
/// `in_channels` input values the tap reads (`x[(p - begin) * in_channels + ci]`), and `w`
/// their `in_channels` rows of `channels` weights. Positions whose tap falls in the padding
/// add nothing.
template <class T, class Acc, class W>
void conv_tap_accumulate(const window_geometry& g, std::int64_t kh, std::int64_t kw, const T* x,
                         std::int64_t in_channels, const W* w, std::int64_t channels, std::int64_t begin,
                         std::int64_t end, Acc* partials) noexcept {
  for (std::int64_t p = begin; p < end; ++p) {
    if (g.tap_pixel(p, kh, kw) < 0) continue;
    Acc* acc = partials + (p - begin) * channels;
    const T* xp = x + (p - begin) * in_channels;
    for (std::int64_t ci = 0; ci < in_channels; ++ci) detail::axpy(acc, widen(xp[ci]), w + ci * channels, channels);
  }
}

/// Rounds `count` positions of partials (plus `bias`, null or `channels` values) to `T`:
/// position `i` to `out[i * out_stride + co]`.
template <class T, class Acc, class W>
void conv_store(const Acc* partials, const W* bias, std::int64_t channels, std::int64_t count, T* out,
                std::int64_t out_stride) noexcept {
  for (std::int64_t i = 0; i < count; ++i) detail::store(partials + i * channels, bias, channels, out + i * out_stride);
}

/// Output positions `[begin, end)` (over all images, row-major) of one block of `channels`
/// output channels: `out[(p - begin) * out_stride + co]`. `in` views the block's input
/// channels (`w.in_channels` of them, contiguous in each pixel); `partials` holds
/// `(end - begin) * channels` values of `Acc`; `bias` is null or `channels` values.
template <class T, class Acc, class W>
void conv(const window_geometry& g, image_view<T> in, weight_view<W> w, std::int64_t channels, const W* bias,
          std::int64_t begin, std::int64_t end, Acc* partials, T* out, std::int64_t out_stride) noexcept {
  std::fill(partials, partials + (end - begin) * channels, Acc{});
  conv_accumulate(g, in, w, channels, begin, end, partials);
  conv_store(partials, bias, channels, end - begin, out, out_stride);
}

}  // namespace ipu::kernels
