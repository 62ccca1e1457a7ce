#pragma once
/// \file
/// `ops::sigmoid`: the logistic sigmoid, `1 / (1 + exp(-x))` (PyTorch `nn.Sigmoid`, TensorFlow
/// `tf.math.sigmoid`). With `nn::multiply` it gates a branch (a squeeze-and-excitation block's
/// channel weights). Element-wise on its input's tiles, computed in f32 (`e^x` as
/// `kernels::exp`) and rounded once to the element type; written once over lanes, so that the
/// fast mode's vectors give the faithful mode's bits (`ops/kernels/lanes_unary.hpp`).

#include <ipu/core/lanes.hpp>
#include <ipu/ops/op.hpp>

#include <string_view>

namespace ipu::ops {

/// The logistic sigmoid: shape-preserving, no weights, computed where its input lives.
struct sigmoid : op_base {
  static constexpr std::string_view name = "sigmoid";  ///< as `nn::sigmoid` names it
  /// The function on lanes `L` (one float, `kernels::scalar_lanes`, or a vector of them).
  template <class L>
  static typename L::value of(typename L::value x) noexcept {
    return kernels::sigmoid<L>(x);
  }
  /// The function, in f32.
  static float f(float x) noexcept { return of<kernels::scalar_lanes>(x); }
  /// The derivative on lanes `L`: `s (1 - s)`, `s` the sigmoid of `x` and `1 - s` to its own
  /// precision (`kernels::sigmoid_with_complement`), so that the derivative keeps its digits
  /// for large `x` too.
  template <class L>
  static typename L::value d_of(typename L::value x) noexcept {
    const auto [s, complement] = kernels::sigmoid_with_complement<L>(x);
    return L::mul(s, complement);
  }
  /// The derivative at `x`, in f32.
  static float df(float x) noexcept { return d_of<kernels::scalar_lanes>(x); }
  struct kernel;  ///< its kernel, defined in `ipu/ops/kernels/lanes_unary.hpp`
};

}  // namespace ipu::ops

namespace ipu::nn {

/// The logistic sigmoid: `1 / (1 + exp(-x))`.
struct sigmoid_t {
  using op_type = ops::sigmoid;  ///< its op
};
/// `nn::sigmoid`: see `sigmoid_t`.
inline constexpr sigmoid_t sigmoid{};

}  // namespace ipu::nn
