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

namespace detail {

/// The taps of one window inside the image: `rows` by `cols` pixels, `row` and `col`
/// elements apart.
struct pool_window {
  std::int64_t rows, cols, row, col;
};

/// One window's reduction over `V` vectors of channels from `first` (its first tap inside the
/// image) into `to`, the last vector `last` lanes wide: taps in order, the accumulators in
/// registers; an average divided by `divisor`.
template <bool Max, int V, class T>
[[gnu::always_inline]] inline void pool_vectors(const pool_window& w, const T* first, int last, float divisor,
                                                T* to) noexcept {
  using simd::vec;
  const auto lanes = [&](int v) { return v == V - 1 ? last : vec::width; };
  vec acc[V];
  unroll<V>([&](auto v) { acc[v] = Max ? simd::splat(-std::numeric_limits<float>::infinity()) : simd::zero(); });
  for (std::int64_t kh = 0; kh < w.rows; ++kh)
    for (std::int64_t kw = 0; kw < w.cols; ++kw) {
      const T* pixel = first + kh * w.row + kw * w.col;
      unroll<V>([&](auto v) {
        const vec x = simd::load_widened(pixel + v * vec::width, lanes(v));
        acc[v] = Max ? simd::max(x, acc[v]) : simd::add(acc[v], x);
      });
    }
  const vec d = simd::splat(divisor);
  unroll<V>([&](auto v) { simd::store_rounded(to + v * vec::width, Max ? acc[v] : simd::div(acc[v], d), lanes(v)); });
}

/// `pool_positions` for a maximum (`Max`) or an average: row by row, each window's taps found
/// once, then its channels `V` vectors at a time.
template <bool Max, class T>
void pool_rows(pool_kind kind, const window_geometry& g, image_view<T> in, std::int64_t channels, std::int64_t begin,
               std::int64_t end, T* out) noexcept {
  using simd::vec;
  constexpr int V = 8;  // vectors of accumulators, as many loads in flight: a quarter of AVX-512's 32 registers
  const std::int64_t vectors = (channels + vec::width - 1) / vec::width;
  const int last = simd::lanes_from(channels - (vectors - 1) * vec::width);
  const std::int64_t per_image = g.positions_per_image();
  for (std::int64_t p = begin; p < end;) {
    const std::int64_t image = p / per_image, ih0 = p % per_image / g.out_width * g.stride_h - g.pad_top;
    const auto [kh0, kh1] = g.rows_inside(ih0);
    for (const std::int64_t row_end = std::min(end, p - p % g.out_width + g.out_width); p < row_end; ++p) {
      const std::int64_t iw0 = p % g.out_width * g.stride_w - g.pad_left;
      const auto [kw0, kw1] = g.columns_inside(iw0);
      const pool_window w{kh1 - kh0, kw1 - kw0, g.dilation_h * in.row_stride, g.dilation_w * in.pixel_stride};
      // A window wholly in the padding reads nothing (and its first tap would lie outside).
      const T* first = w.rows * w.cols == 0 ? in.data
                                            : in.pixel(image * g.in_height + ih0 + kh0 * g.dilation_h, iw0 + kw0 * g.dilation_w);
      const float d = Max ? 1.0f : divisor(kind, g, p, w.rows * w.cols);
      T* to = out + (p - begin) * channels;
      std::int64_t v = 0;
      for (; v + V < vectors; v += V) pool_vectors<Max, V>(w, first + v * vec::width, vec::width, d, to + v * vec::width);
      with_count<V>(static_cast<int>(vectors - v),
                    [&](auto n) { pool_vectors<Max, n()>(w, first + v * vec::width, last, d, to + v * vec::width); });
    }
  }
}

}  // namespace detail

/// Positions `[begin, end)` (over all images) of an NHWC pooling, every channel, into
/// `out[(p - begin) * channels + c]`: the values of `pool` (the taps in the same order, so the
/// same sums and maxima), computed up to 8 vectors of channels at a time.
template <class T>
void pool_positions(pool_kind kind, const window_geometry& g, image_view<T> in, std::int64_t channels,
                    std::int64_t begin, std::int64_t end, T* out) noexcept {
  if (kind == pool_kind::max) {
    detail::pool_rows<true>(kind, g, in, channels, begin, end, out);
  } else {
    detail::pool_rows<false>(kind, g, in, channels, begin, end, out);
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
