#pragma once
/// \file
/// `ops::unary_kernel<Op>`: the kernel of an element-wise op that maps each value on its own
/// (`Op::f`, a `float(float)` function, or `float(float, const layer_params&)`), one float at a
/// time: an op of a user's that states only `f` and `df` takes it. Each value is widened to
/// f32, mapped, and rounded once to the element type; fast and faithful modes do the same
/// arithmetic, so their outputs hold the same bits. The library's activations write their
/// functions over lanes and take `ops::lanes_unary_kernel` (`ops/kernels/lanes_unary.hpp`),
/// which derives from this one: its faithful mode is this one's.

#include <ipu/ops/op.hpp>

#include <cstdint>

namespace ipu::ops {

/// The kernel of element-wise op `Op`: `y = Op::f(x)` for every element, or `Op::f(x, p)` for
/// an op with hyper-parameters `p` (a leaky ReLU's slope), computed where the input lives
/// (`op_base::plan` maps the output like its input).
template <class Op>
struct unary_kernel : kernel_base {
  /// `Op::f` at `x`, with the node's hyper-parameters `p` if it takes them.
  static float f(float x, const layer_params& p) noexcept {
    if constexpr (requires { Op::f(x, p); }) {
      return Op::f(x, p);
    } else {
      return Op::f(x);
    }
  }
  /// `y[e] = f(x[e], p)` in f32 for `count` elements.
  template <class T>
  static void apply(const T* x, T* y, std::int64_t count, const layer_params& p) noexcept {
    for (std::int64_t e = 0; e < count; ++e) y[e] = static_cast<T>(f(static_cast<float>(x[e]), p));
  }
  /// The whole output, in parts over the threads.
  template <class Ctx>
  static void fast(const Ctx& c) {
    const auto* x = c.input();
    auto* y = c.output();
    c.parallel_ranges(c.n.out.elements(),
                      [&](std::int64_t e0, std::int64_t e1) { apply(x + e0, y + e0, e1 - e0, c.n.layer); });
  }
  /// `Op::df` at `x`, with the node's hyper-parameters `p` if it takes them.
  static float df(float x, const layer_params& p) noexcept {
    if constexpr (requires { Op::df(x, p); }) {
      return Op::df(x, p);
    } else {
      return Op::df(x);
    }
  }
  /// Training: `dx += dy * df(x)`, the derivative at the forward input.
  template <class Ctx>
  static void backward(const Ctx& c) {
    float* dx = c.grad_input();
    if (dx == nullptr) return;
    const auto* x = c.input();
    const float* dy = c.grad_output();
    parallel_chunks(c, c.n.out.elements(), [&](std::int64_t e0, std::int64_t e1) {
      for (std::int64_t e = e0; e < e1; ++e) dx[e] += dy[e] * df(static_cast<float>(x[e]), c.n.layer);
    });
  }
  /// The tile's elements, read where the input lives (mapped as the output).
  template <class Ctx>
  static void compute(const Ctx& c) {
    apply(c.operand(c.n.input()), c.output(), c.last - c.first, c.n.layer);
  }
};

}  // namespace ipu::ops
