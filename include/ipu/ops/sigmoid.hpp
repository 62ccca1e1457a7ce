#pragma once
/// \file
/// `ops::sigmoid`: the logistic function `1 / (1 + exp(-x))`, element-wise on its input's
/// tiles, computed in f32 and rounded once to the element type. With `nn::multiply` it gates a
/// branch (a squeeze-and-excitation block's channel weights).

#include <ipu/ops/op.hpp>

#include <cmath>
#include <cstdint>

namespace ipu::ops {

/// The logistic sigmoid: shape-preserving, no weights, computed where its input lives.
struct sigmoid : op_base {
  static constexpr std::string_view name = "sigmoid";  ///< as `nn::sigmoid` names it

  /// Its kernel: one element at a time, the same arithmetic in both modes.
  struct kernel : kernel_base {
    /// `y[e] = 1 / (1 + exp(-x[e]))` for `count` elements.
    template <class T>
    static void apply(const T* x, T* y, std::int64_t count) noexcept {
      for (std::int64_t e = 0; e < count; ++e) y[e] = static_cast<T>(1.0f / (1.0f + std::exp(-static_cast<float>(x[e]))));
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
};

}  // namespace ipu::ops

namespace ipu::nn {

/// The logistic sigmoid, `1 / (1 + exp(-x))`.
struct sigmoid_t {
  using op_type = ops::sigmoid;  ///< its op
};
/// `nn::sigmoid`: see `sigmoid_t`.
inline constexpr sigmoid_t sigmoid{};

}  // namespace ipu::nn
