#pragma once
/// \file
/// The kernel of `ops::max_pool` and `ops::avg_pool`: `kernels::pool_positions` over parts of
/// the output positions (fast mode), or `kernels::pool` over a tile's elements after the input
/// rows their windows read arrive in its exchange buffer (faithful mode). Training
/// (`backward`): each output's gradient goes to its window's first largest value (max), or in
/// equal shares to the cells its average divided over; by image.

#include <ipu/ops/kernels/kernel.hpp>
#include <ipu/ops/pool.hpp>

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <vector>

namespace ipu::ops {

/// The kernel of `max_pool` and `avg_pool` (see the file comment).
struct pool_base::kernel : kernel_base {
  /// The output positions, in parts over the threads.
  template <class Ctx>
  static void fast(const Ctx& c) {
    using T = typename Ctx::value_type;
    const kernels::window_geometry g = geometry_of(c.n);
    const std::int64_t channels = c.n.out.channels();
    const T* x = c.input();
    T* y = c.output();
    c.parallel_ranges(c.n.out.elements() / channels, [&](std::int64_t p0, std::int64_t p1) {
      kernels::pool_positions(kind_of(c.n), g, kernels::image_view<T>{x, 0, g.in_width * channels, channels}, channels, p0,
                              p1, y + p0 * channels);
    });
  }

  /// Training: adds each output's gradient to its window (see the file comment). A vector of
  /// channels at a time: for a max, the first tap holding each channel's largest value; for an
  /// average, the share added to each pixel the window reads.
  template <class Ctx>
  static void backward(const Ctx& c) {
    using kernels::simd::vec;
    float* dx = c.grad_input();
    if (dx == nullptr) return;
    const kernels::window_geometry g = geometry_of(c.n);
    const kernels::pool_kind kind = kind_of(c.n);
    const std::int64_t ch = c.n.out.channels(), per_image = g.positions_per_image();
    const auto* x = c.input();
    const float* dy = c.grad_output();
    c.parallel(c.n.out.dim[0], [&](std::int64_t image) {
      std::vector<std::int64_t> pixels(static_cast<std::size_t>(g.kernel_h * g.kernel_w));  // a window's, in tap order
      std::vector<float> first_largest(static_cast<std::size_t>(ch));  // per channel, its index in `pixels`
      for (std::int64_t p = image * per_image; p < (image + 1) * per_image; ++p) {
        std::size_t count = 0;
        for (std::int64_t kh = 0; kh < g.kernel_h; ++kh)
          for (std::int64_t kw = 0; kw < g.kernel_w; ++kw)
            if (const std::int64_t pixel = g.tap_pixel(p, kh, kw); pixel >= 0) pixels[count++] = pixel;
        if (count == 0) continue;
        if (kind != kernels::pool_kind::max) {
          const float share = 1.0f / kernels::divisor(kind, g, p, static_cast<std::int64_t>(count));
          for (std::size_t t = 0; t < count; ++t) kernels::add_scaled(dx + pixels[t] * ch, share, dy + p * ch, ch);
          continue;
        }
        for (std::int64_t k = 0; k < ch; k += vec::width) {
          const int lanes = kernels::simd::lanes_from(ch - k);
          vec best = kernels::simd::load_widened(x + pixels[0] * ch + k, lanes), at = kernels::simd::zero();
          for (std::size_t t = 1; t < count; ++t) {
            const vec v = kernels::simd::load_widened(x + pixels[t] * ch + k, lanes);
            at = kernels::simd::where_greater(v, best, kernels::simd::splat(static_cast<float>(t)), at);
            best = kernels::simd::where_greater(v, best, v, best);
          }
          kernels::simd::store(first_largest.data() + k, at, lanes);
        }
        for (std::int64_t k = 0; k < ch; ++k)
          dx[pixels[static_cast<std::size_t>(first_largest[static_cast<std::size_t>(k)])] * ch + k] += dy[p * ch + k];
      }
    });
  }

  /// The input rows the windows of the tile's outputs read.
  template <class Ctx>
  static void exchange(const Ctx& c) {
    const auto [g, r0, r1] = window(c);
    const std::int64_t ch = c.n.out.channels();
    auto* dst = c.exchange_buffer(0, (r1 - r0) * g.in_width * ch);
    const auto& in = c.input(c.n.input());
    for (std::int64_t r = r0; r < r1; ++r)
      for (std::int64_t x = 0; x < g.in_width; ++x, dst += ch) c.read_channels(in, r * g.in_width + x, 0, ch, dst);
  }

  /// The tile's elements from the gathered rows.
  template <class Ctx>
  static void compute(const Ctx& c) {
    using T = typename Ctx::value_type;
    const auto [g, r0, r1] = window(c);
    const std::int64_t ch = c.n.out.channels();
    const kernels::image_view<T> in{c.exchange_buffer(0, (r1 - r0) * g.in_width * ch), r0, g.in_width * ch, ch};
    kernels::pool(kind_of(c.n), g, in, ch, c.first, c.last, c.output());
  }

 private:
  static kernels::pool_kind kind_of(const node& n) noexcept {
    using enum kernels::pool_kind;
    return n.kind == op_of<max_pool> ? max : n.layer.count_padding ? average_of_padded : average;
  }
  /// The geometry and the input rows `[first, last)` the tile's output elements read.
  template <class Ctx>
  static std::tuple<kernels::window_geometry, std::int64_t, std::int64_t> window(const Ctx& c) noexcept {
    const kernels::window_geometry g = geometry_of(c.n);
    const std::int64_t ch = c.n.out.channels();
    const auto [first, last] = g.input_rows(c.first / ch, (c.last - 1) / ch + 1);
    return {g, first, last};
  }
};

}  // namespace ipu::ops
