#pragma once
/// \file
/// The kernel of `ops::adaptive_avg_pool`: with one bin per image, the global average's
/// (`global_pool_kernel`, a reduction in stages). Otherwise each output element the mean of its bin, summed in
/// f32 over the bin's rows then columns and divided by its cells (`kernels::mean`). In fast
/// mode over the host tensor; in faithful mode each output element's cells first arrive in
/// the tile's exchange buffer, in the same order. Training (`backward`): each output's
/// gradient in equal shares to its bin's cells, by image.

#include <ipu/ops/adaptive_avg_pool.hpp>
#include <ipu/ops/kernels/global_avg_pool.hpp>
#include <ipu/ops/kernels/kernel.hpp>

#include <cstdint>

namespace ipu::ops {

/// The kernel of `adaptive_avg_pool` (see the file comment).
struct adaptive_avg_pool::kernel : kernel_base {
  /// Calls `f(pixel)` for the input pixels (over all images, row-major) of output element `e`'s
  /// bin, rows then columns.
  template <class F>
  static void for_each_cell(const node& n, std::int64_t e, F&& f) {
    const std::int64_t c = n.out.channels(), oh = n.out.dim[1], ow = n.out.dim[2], h = n.in.dim[1], w = n.in.dim[2];
    const std::int64_t pos = e / c, image = pos / (oh * ow), row = pos / ow % oh, col = pos % ow;
    const auto [r0, r1] = adaptive_bin(row, h, oh);
    const auto [c0, c1] = adaptive_bin(col, w, ow);
    for (std::int64_t r = r0; r < r1; ++r)
      for (std::int64_t x = c0; x < c1; ++x) f((image * h + r) * w + x);
  }
  /// Cells of output element `e`'s bin.
  static std::int64_t cells(const node& n, std::int64_t e) noexcept {
    const std::int64_t c = n.out.channels(), oh = n.out.dim[1], ow = n.out.dim[2];
    const std::int64_t pos = e / c, row = pos / ow % oh, col = pos % ow;
    const auto [r0, r1] = adaptive_bin(row, n.in.dim[1], oh);
    const auto [c0, c1] = adaptive_bin(col, n.in.dim[2], ow);
    return (r1 - r0) * (c1 - c0);
  }

  /// The output elements, in parts over the threads.
  template <class Ctx>
  static void fast(const Ctx& c) {
    if (global(c.n.layer)) return global_pool_kernel<false>::fast(c);
    using T = typename Ctx::value_type;
    const node& n = c.n;
    const std::int64_t channels = n.out.channels();
    const auto* x = c.input();
    auto* y = c.output();
    c.parallel_ranges(n.out.elements(), [&](std::int64_t e0, std::int64_t e1) {
      for (std::int64_t e = e0; e < e1; ++e) {
        float sum = 0;
        for_each_cell(n, e, [&](std::int64_t pixel) { sum += kernels::widen(x[pixel * channels + e % channels]); });
        y[e] = static_cast<T>(sum / static_cast<float>(cells(n, e)));
      }
    });
  }

  /// Training: adds each output's gradient, shared equally, to its bin's cells.
  template <class Ctx>
  static void backward(const Ctx& c) {
    if (global(c.n.layer)) return global_pool_kernel<false>::backward(c);
    float* dx = c.grad_input();
    if (dx == nullptr) return;
    const node& n = c.n;
    const std::int64_t channels = n.out.channels(), per_image = n.out.elements() / n.out.dim[0];
    const float* dy = c.grad_output();
    c.parallel(n.out.dim[0], [&](std::int64_t image) {
      for (std::int64_t e = image * per_image; e < (image + 1) * per_image; ++e) {
        const float share = dy[e] / static_cast<float>(cells(n, e));
        for_each_cell(n, e, [&](std::int64_t pixel) { dx[pixel * channels + e % channels] += share; });
      }
    });
  }

  /// The cells of each of the tile's output elements, bin after bin.
  template <class Ctx>
  static void exchange(const Ctx& c) {
    if (global(c.n.layer)) return global_pool_kernel<false>::exchange(c);
    const node& n = c.n;
    const std::int64_t channels = n.out.channels();
    auto* dst = c.exchange_buffer(0, c.p.step.reduce * (c.last - c.first));
    const auto& in = c.input(n.input());
    for (std::int64_t e = c.first; e < c.last; ++e)
      for_each_cell(n, e, [&](std::int64_t pixel) { c.read_channels(in, pixel, e % channels, 1, dst++); });
  }

  /// The mean of each element's gathered cells.
  template <class Ctx>
  static void compute(const Ctx& c) {
    if (global(c.n.layer)) return global_pool_kernel<false>::compute(c);
    const node& n = c.n;
    const auto* x = c.exchange_buffer(0, c.p.step.reduce * (c.last - c.first));
    auto* y = c.output();
    for (std::int64_t e = c.first; e < c.last; ++e) {
      const std::int64_t count = cells(n, e);
      y[e - c.first] = kernels::mean(x, 1, count);
      x += count;
    }
  }
};

}  // namespace ipu::ops
