#pragma once
/// \file
/// The kernel of `ops::softmax`: `kernels::softmax_row` per row, in parts over the threads
/// (fast mode); in faithful mode each tile receives the whole rows its elements belong to and
/// writes its own elements of them. Training (`backward`): `dx = y (dy - sum(dy y))` per row.

#include <ipu/ops/kernels/kernel.hpp>
#include <ipu/ops/softmax.hpp>

#include <algorithm>
#include <cstdint>

namespace ipu::ops {

/// The kernel of `softmax` (see the file comment).
struct softmax::kernel : kernel_base {
  /// The rows, in parts over the threads.
  template <class Ctx>
  static void fast(const Ctx& c) {
    const std::int64_t channels = c.n.out.channels();
    const auto* x = c.input();
    auto* y = c.output();
    c.parallel_ranges(c.n.out.elements() / channels, [&](std::int64_t r0, std::int64_t r1) {
      for (std::int64_t r = r0; r < r1; ++r) kernels::softmax_row(x + r * channels, channels, 0, channels, y + r * channels);
    });
  }

  /// Training: adds `y (dy - sum(dy y))`, by row.
  template <class Ctx>
  static void backward(const Ctx& c) {
    float* dx = c.grad_input();
    if (dx == nullptr) return;
    const std::int64_t channels = c.n.out.channels();
    const auto* y = c.output();
    const float* dy = c.grad_output();
    c.parallel(c.n.out.elements() / channels, [&](std::int64_t r) {
      const std::int64_t e0 = r * channels;
      float dot = 0;
      for (std::int64_t k = 0; k < channels; ++k) dot += dy[e0 + k] * kernels::widen(y[e0 + k]);
      for (std::int64_t k = 0; k < channels; ++k) dx[e0 + k] += kernels::widen(y[e0 + k]) * (dy[e0 + k] - dot);
    });
  }

  /// The rows the tile's elements belong to.
  template <class Ctx>
  static void exchange(const Ctx& c) {
    const std::int64_t ch = c.n.out.channels(), r0 = c.first / ch, r1 = (c.last - 1) / ch + 1;
    auto* dst = c.exchange_buffer(0, (r1 - r0) * ch);
    const auto& in = c.input(c.n.input());
    for (std::int64_t r = r0; r < r1; ++r) c.read_channels(in, r, 0, ch, dst + (r - r0) * ch);
  }

  /// The tile's elements of each gathered row.
  template <class Ctx>
  static void compute(const Ctx& c) {
    const std::int64_t ch = c.n.out.channels(), r0 = c.first / ch, r1 = (c.last - 1) / ch + 1;
    const auto* x = c.exchange_buffer(0, (r1 - r0) * ch);
    auto* y = c.output();
    for (std::int64_t r = r0; r < r1; ++r) {
      const std::int64_t c0 = std::max(c.first, r * ch) - r * ch, c1 = std::min(c.last, (r + 1) * ch) - r * ch;
      kernels::softmax_row(x + (r - r0) * ch, ch, c0, c1, y + (r * ch + c0 - c.first));
    }
  }
};

}  // namespace ipu::ops
