#pragma once
/// \file
/// The kernel of `ops::flatten` and `ops::reshape` (`ops::reordering`): a copy. In fast mode the host tensor is already in NHWC
/// order; in faithful mode a tile copies its elements from its own memory, or, when the input
/// is stored otherwise, from its exchange buffer, which received them in the output's order.
/// Training (`backward`): the output's gradient added to the input's, the same logical order.

#include <ipu/ops/flatten.hpp>
#include <ipu/ops/kernels/kernel.hpp>

#include <algorithm>
#include <cstdint>

namespace ipu::ops {

/// The kernel of `flatten` and `reshape` (see the file comment).
struct reordering::kernel : kernel_base {
  /// The whole tensor, in parts over the threads.
  template <class Ctx>
  static void fast(const Ctx& c) {
    const auto* x = c.input();
    auto* y = c.output();
    c.parallel_ranges(c.n.out.elements(), [&](std::int64_t e0, std::int64_t e1) { std::copy(x + e0, x + e1, y + e0); });
  }

  /// Training: `dx += dy`.
  template <class Ctx>
  static void backward(const Ctx& c) {
    float* dx = c.grad_input();
    if (dx == nullptr) return;
    const float* dy = c.grad_output();
    parallel_chunks(c, c.n.out.elements(), [&](std::int64_t e0, std::int64_t e1) {
      for (std::int64_t e = e0; e < e1; ++e) dx[e] += dy[e];
    });
  }

  /// The tile's elements, in NHWC order, when the input is stored otherwise.
  template <class Ctx>
  static void exchange(const Ctx& c) {
    if (c.p.step.kind != step_kind::remap) return;
    const std::int64_t channels = c.n.in.channels();
    const auto& in = c.input(c.n.input());
    auto* dst = c.exchange_buffer(0, c.last - c.first);
    for (std::int64_t q = c.first; q < c.last;) {
      const std::int64_t ch = q % channels, len = std::min(c.last - q, channels - ch);
      c.read_channels(in, q / channels, ch, len, dst + (q - c.first));
      q += len;
    }
  }

  /// The tile's elements, from its own memory or its exchange buffer.
  template <class Ctx>
  static void compute(const Ctx& c) {
    const std::int64_t count = c.last - c.first;
    const auto* x = c.p.step.kind == step_kind::remap ? c.exchange_buffer(0, count) : c.operand(c.n.input());
    std::copy_n(x, count, c.output());
  }
};

}  // namespace ipu::ops
