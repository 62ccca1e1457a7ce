#pragma once
/// \file
/// `ops::gelu_tanh`: the Gaussian error linear unit's tanh approximation, `0.5 x (1 + tanh(sqrt(2 /
/// pi) (x + 0.044715 x^3)))` (Hendrycks and Gimpel 2016), as BERT and GPT-2 use it (PyTorch
/// `nn.GELU(approximate="tanh")`, TensorFlow `tf.nn.gelu(approximate=True)`). Element-wise on its
/// input's tiles, computed in f32 (`e^x` as `kernels::exp`) and rounded once to the element type;
/// written once over lanes, so that the fast mode's vectors give the faithful mode's bits
/// (`ops/kernels/lanes_unary.hpp`).

#include <ipu/core/lanes.hpp>
#include <ipu/ops/op.hpp>

#include <string_view>

namespace ipu::ops {

/// The Gaussian error linear unit, tanh approximation: shape-preserving, no weights, computed where its input lives.
struct gelu_tanh : op_base {
  static constexpr std::string_view name = "gelu_tanh";  ///< as `nn::gelu_tanh` names it
  /// `2 u(x) = 2 sqrt(2 / pi) (x + 0.044715 x^3)` on lanes `L` (`2 sqrt(2 / pi)` =
  /// 1.5957691216057308).
  template <class L>
  static typename L::value twice_u(typename L::value x) noexcept {
    const auto x2 = L::mul(x, x);
    return L::mul(L::madd(L::mul(x2, L::splat(0.044715f)), x, x), L::splat(1.5957691216057308f));
  }
  /// The function on lanes `L` (one float, `kernels::scalar_lanes`, or a vector of them):
  /// `x / (1 + e^{-2u})`, which is `0.5 x (1 + tanh(u))` (as `1 + tanh(u) = 2 / (1 + e^{-2u})`)
  /// without its cancellation for negative `x`; `e^x` as `kernels::exp`.
  template <class L>
  static typename L::value of(typename L::value x) noexcept {
    return L::div(x, L::add(L::splat(1.0f), kernels::exp<L>(L::sub(L::splat(0.0f), twice_u<L>(x)))));
  }
  /// The function, in f32.
  static float f(float x) noexcept { return of<kernels::scalar_lanes>(x); }
  /// The derivative on lanes `L`: `s + x s (1 - s) 2u'(x)`, `s` the sigmoid of `2u` and `1 - s`
  /// to its own precision (`kernels::sigmoid_with_complement`; `x 2u'(x)` grows as `x^3`), and
  /// `2u'(x) = 2 sqrt(2 / pi) (1 + 3 * 0.044715 x^2)`.
  template <class L>
  static typename L::value d_of(typename L::value x) noexcept {
    const auto [s, complement] = kernels::sigmoid_with_complement<L>(twice_u<L>(x));
    const auto du = L::madd(L::mul(x, x), L::splat(0.21406444881780076f), L::splat(1.5957691216057308f));
    return L::madd(L::mul(x, L::mul(s, complement)), du, s);
  }
  /// The derivative at `x`, in f32.
  static float df(float x) noexcept { return d_of<kernels::scalar_lanes>(x); }
  struct kernel;  ///< its kernel, defined in `ipu/ops/kernels/lanes_unary.hpp`
};

}  // namespace ipu::ops

namespace ipu::nn {

/// The Gaussian error linear unit, tanh approximation: `0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))`.
struct gelu_tanh_t {
  using op_type = ops::gelu_tanh;  ///< its op
};
/// `nn::gelu_tanh`: see `gelu_tanh_t`.
inline constexpr gelu_tanh_t gelu_tanh{};

}  // namespace ipu::nn
