#pragma once
/// \file
/// `ops::unary_kernel<Op>`: the kernel of an element-wise op that maps each value on its own
/// (`Op::f`, a `float(float)` function), shared by the activations (`ops/sigmoid.hpp`,
/// `ops/tanh.hpp`, ...). Each value is widened to f32, mapped, and rounded once to the element
/// type; fast and faithful modes do the same arithmetic, so their outputs hold the same bits.

#include <ipu/ops/op.hpp>

#include <cstdint>

namespace ipu::ops {

/// The kernel of element-wise op `Op`: `y = Op::f(x)` for every element, computed where the
/// input lives (`op_base::plan` maps the output like its input).
template <class Op>
struct unary_kernel : kernel_base {
  /// `y[e] = Op::f(x[e])` in f32 for `count` elements.
  template <class T>
  static void apply(const T* x, T* y, std::int64_t count) noexcept {
    for (std::int64_t e = 0; e < count; ++e) y[e] = static_cast<T>(Op::f(static_cast<float>(x[e])));
  }
  /// The whole output, in parts over the threads.
  template <class Ctx>
  static void fast(const Ctx& c) {
    const auto* x = c.input();
    auto* y = c.output();
    c.parallel_ranges(c.n.out.elements(), [&](std::int64_t e0, std::int64_t e1) { apply(x + e0, y + e0, e1 - e0); });
  }
  /// The tile's elements, read where the input lives (mapped as the output).
  template <class Ctx>
  static void compute(const Ctx& c) {
    apply(c.operand(c.n.input()), c.output(), c.last - c.first);
  }
};

}  // namespace ipu::ops
