#pragma once
/// \file
/// The kernel of `ops::max_pool` and `ops::avg_pool`: `kernels::pool_positions` over parts of
/// the output positions (fast mode), or `kernels::pool` over a tile's elements after the input
/// rows their windows read arrive in its exchange buffer (faithful mode).

#include <ipu/ops/kernels/kernel.hpp>
#include <ipu/ops/pool.hpp>

#include <cstdint>
#include <tuple>

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
