#pragma once
/// \file
/// The kernel of `ops::global_avg_pool` and `ops::global_max_pool`: `kernels::mean_pixels` or
/// `kernels::max_pixels` per image (fast mode), or `kernels::mean` or `kernels::maximum` per
/// output element after its channel's pixels arrive in the tile's exchange buffer (faithful
/// mode).

#include <ipu/ops/global_avg_pool.hpp>
#include <ipu/ops/kernels/kernel.hpp>

#include <cstdint>

namespace ipu::ops {

/// The kernel of the global poolings (see the file comment).
template <bool Max>
struct global_pool_kernel : kernel_base {
  /// One image per work item.
  template <class Ctx>
  static void fast(const Ctx& c) {
    const std::int64_t channels = c.n.out.channels(), hw = c.n.in.dim[1] * c.n.in.dim[2];
    const auto* x = c.input();
    auto* y = c.output();
    c.parallel(c.n.out.dim[0], [&](std::int64_t image) {
      if constexpr (Max) {
        kernels::max_pixels(x + image * hw * channels, channels, hw, y + image * channels);
      } else {
        kernels::mean_pixels(x + image * hw * channels, channels, hw, y + image * channels);
      }
    });
  }

  /// The pixels of each output element's image and channel.
  template <class Ctx>
  static void exchange(const Ctx& c) {
    const std::int64_t ch = c.n.out.channels(), hw = c.n.in.dim[1] * c.n.in.dim[2];
    auto* dst = c.exchange_buffer(0, (c.last - c.first) * hw);
    const auto& in = c.input(c.n.input());
    for (std::int64_t e = c.first; e < c.last; ++e)
      for (std::int64_t q = 0; q < hw; ++q) c.read_channels(in, e / ch * hw + q, e % ch, 1, dst++);
  }

  /// The mean or maximum of each element's gathered pixels.
  template <class Ctx>
  static void compute(const Ctx& c) {
    const std::int64_t hw = c.n.in.dim[1] * c.n.in.dim[2];
    const auto* x = c.exchange_buffer(0, (c.last - c.first) * hw);
    auto* y = c.output();
    for (std::int64_t e = c.first; e < c.last; ++e) {
      const auto* pixels = x + (e - c.first) * hw;
      y[e - c.first] = Max ? kernels::maximum(pixels, 1, hw) : kernels::mean(pixels, 1, hw);
    }
  }
};

}  // namespace ipu::ops
