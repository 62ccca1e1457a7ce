#pragma once
/// \file
/// Reductions over windows and rows: max and average pooling (any padding; the average
/// divides by the cells inside the image, as TensorFlow's, or by the window's cells inside the
/// padded image, as PyTorch's default), global average and max pooling, and softmax.

#include <ipu/kernels/simd.hpp>
#include <ipu/kernels/views.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace ipu::kernels {

/// Which window reduction `pool` computes.
enum class pool_kind : std::uint8_t {
  max,               ///< the largest value in the image
  average,           ///< the sum over the cells in the image, divided by their number (TensorFlow's)
  average_of_padded  ///< the same sum divided by the window's cells in the padded image (PyTorch's default)
};

/// The divisor of an average at output position `p` that read `count` cells.
inline float divisor(pool_kind kind, const window_geometry& g, std::int64_t p, std::int64_t count) noexcept {
  return static_cast<float>(kind == pool_kind::average_of_padded ? g.padded_taps(p) : count);
}

/// Output elements `[begin, end)` of an NHWC pooling with `channels` channels (element `e` is
/// position `e / channels`, channel `e % channels`) into `out[e - begin]`.
template <class T>
void pool(pool_kind kind, const window_geometry& g, image_view<T> in, std::int64_t channels, std::int64_t begin,
          std::int64_t end, T* out) noexcept {
  for (std::int64_t e = begin; e < end; ++e) {
    const std::int64_t c = e % channels;
    float best = -std::numeric_limits<float>::infinity(), sum = 0;
    std::int64_t count = 0;
    for_each_tap(g, in, e / channels, [&](std::int64_t, std::int64_t, const T* pixel) {
      const float v = widen(pixel[c]);
      best = std::max(best, v);
      sum += v;
      ++count;
    });
    out[e - begin] = static_cast<T>(kind == pool_kind::max ? best : sum / divisor(kind, g, e / channels, count));
  }
}

/// The mean of `count` values `x[0], x[stride], ...`, summed in order.
template <class T>
T mean(const T* x, std::int64_t stride, std::int64_t count) noexcept {
  float sum = 0;
  for (std::int64_t k = 0; k < count; ++k) sum += widen(x[k * stride]);
  return static_cast<T>(sum / static_cast<float>(count));
}

/// The largest of `count` values `x[0], x[stride], ...`, taken as `pool`'s maximum (a NaN
/// never replaces the largest so far).
template <class T>
T maximum(const T* x, std::int64_t stride, std::int64_t count) noexcept {
  float best = -std::numeric_limits<float>::infinity();
  for (std::int64_t k = 0; k < count; ++k) best = std::max(best, widen(x[k * stride]));
  return static_cast<T>(best);
}

/// Stage 1 of a reduction in stages: `out[c]` the sum (from zero, in order) or, with `Max`,
/// the maximum (as `maximum`) of `count` pixels of `channels` channels at `x`, in f32.
template <bool Max, class T>
void partial_pixels(const T* x, std::int64_t channels, std::int64_t count, float* out) noexcept {
  for (std::int64_t c = 0; c < channels; ++c) {
    float r = Max ? -std::numeric_limits<float>::infinity() : 0.0f;
    for (std::int64_t k = 0; k < count; ++k) {
      const float v = widen(x[k * channels + c]);
      r = Max ? std::max(r, v) : r + v;
    }
    out[c] = r;
  }
}

/// Stage 2 of a reduction in stages: the `count` partials `x[0], x[stride], ...` combined in
/// order (summed from zero, or their maximum with `Max`); a sum is divided by `pixels`, the
/// pixels the partials cover.
template <bool Max, class T>
T reduce_partials(const float* x, std::int64_t stride, std::int64_t count, std::int64_t pixels) noexcept {
  float r = Max ? -std::numeric_limits<float>::infinity() : 0.0f;
  for (std::int64_t k = 0; k < count; ++k) r = Max ? std::max(r, x[k * stride]) : r + x[k * stride];
  return static_cast<T>(Max ? r : r / static_cast<float>(pixels));
}

// The vectorised reductions depend on IPU_SIMD, so they live in its namespace, as
// packed_conv does: translation units built for different instruction sets hold distinct
// functions.
inline namespace IPU_SIMD_NAMESPACE {

/// Positions `[begin, end)` (over all images) of an NHWC pooling, every channel, into
/// `out[(p - begin) * channels + c]`: the values of `pool`, computed a vector of channels at
/// a time (the taps in the same order, so the same sums).
template <class T>
void pool_positions(pool_kind kind, const window_geometry& g, image_view<T> in, std::int64_t channels,
                    std::int64_t begin, std::int64_t end, T* out) noexcept {
  using simd::vec;
  for (std::int64_t p = begin; p < end; ++p)
    for (std::int64_t c = 0; c < channels; c += vec::width) {
      const int n = simd::lanes_from(channels - c);
      vec best = simd::splat(-std::numeric_limits<float>::infinity()), sum = simd::zero();
      int count = 0;
      for_each_tap(g, in, p, [&](std::int64_t, std::int64_t, const T* pixel) {
        const vec v = simd::load_widened(pixel + c, n);
        best = simd::max(v, best);
        sum = simd::add(sum, v);
        ++count;
      });
      const vec result = kind == pool_kind::max ? best : simd::div(sum, simd::splat(divisor(kind, g, p, count)));
      simd::store_rounded(out + (p - begin) * channels + c, result, n);
    }
}

/// The means of `count` pixels of `channels` channels, `out[c]` for `c < channels`, summed as
/// a reduction in stages sums them: over each chunk of `chunk` consecutive pixels from zero,
/// then the chunks' sums in order from zero (`partial_pixels`, `reduce_partials` give the
/// same bits element by element), divided by `count`; a vector of channels at a time.
template <class T>
void staged_mean_pixels(const T* x, std::int64_t channels, std::int64_t count, std::int64_t chunk, T* out) noexcept {
  using simd::vec;
  for (std::int64_t c = 0; c < channels; c += vec::width) {
    const int n = simd::lanes_from(channels - c);
    vec total = simd::zero();
    for (std::int64_t k0 = 0; k0 < count; k0 += chunk) {
      vec part = simd::zero();
      for (std::int64_t k = k0; k < std::min(count, k0 + chunk); ++k)
        part = simd::add(part, simd::load_widened(x + k * channels + c, n));
      total = simd::add(total, part);
    }
    simd::store_rounded(out + c, simd::div(total, simd::splat(static_cast<float>(count))), n);
  }
}

/// `out[c] = maximum(x, channels, count)` offset by channel `c`, for `c < channels`, a vector
/// of channels at a time (the same comparisons, so the same values).
template <class T>
void max_pixels(const T* x, std::int64_t channels, std::int64_t count, T* out) noexcept {
  using simd::vec;
  for (std::int64_t c = 0; c < channels; c += vec::width) {
    const int n = simd::lanes_from(channels - c);
    vec best = simd::splat(-std::numeric_limits<float>::infinity());
    for (std::int64_t k = 0; k < count; ++k) best = simd::max(simd::load_widened(x + k * channels + c, n), best);
    simd::store_rounded(out + c, best, n);
  }
}

}  // namespace IPU_SIMD_NAMESPACE

/// Softmax of one row of `channels` values; writes channels `[begin, end)` into
/// `out[c - begin]`. The row maximum is subtracted first.
template <class T>
void softmax_row(const T* row, std::int64_t channels, std::int64_t begin, std::int64_t end, T* out) noexcept {
  float top = -std::numeric_limits<float>::infinity();
  for (std::int64_t c = 0; c < channels; ++c) top = std::max(top, widen(row[c]));
  float sum = 0;
  for (std::int64_t c = 0; c < channels; ++c) sum += std::exp(widen(row[c]) - top);
  for (std::int64_t c = begin; c < end; ++c) out[c - begin] = static_cast<T>(std::exp(widen(row[c]) - top) / sum);
}

}  // namespace ipu::kernels
