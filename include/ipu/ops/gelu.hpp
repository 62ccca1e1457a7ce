#pragma once
/// \file
/// `ops::gelu`: the Gaussian error linear unit, exactly: `0.5 x (1 + erf(x / sqrt(2)))` (PyTorch
/// `nn.GELU()`, TensorFlow `tf.nn.gelu(approximate=False)`), as `x Phi(x)`, `Phi` the standard
/// normal distribution. Element-wise on its input's tiles, computed in f32 (`Phi` as
/// `kernels::normal_cdf`: Cephes' `ndtrf`, relative to `Phi` itself, so that the negative tail
/// keeps its digits where `1 + erf` would cancel) and rounded once to the element type; written
/// once over lanes, so that the fast mode's vectors give the faithful mode's bits
/// (`ops/kernels/lanes_unary.hpp`).

#include <ipu/core/lanes.hpp>
#include <ipu/ops/op.hpp>

#include <string_view>

namespace ipu::ops {

/// The Gaussian error linear unit: shape-preserving, no weights, computed where its input lives.
struct gelu : op_base {
  static constexpr std::string_view name = "gelu";  ///< as `nn::gelu` names it
  /// The function on lanes `L` (one float, `kernels::scalar_lanes`, or a vector of them):
  /// `x Phi(x)`, `Phi` as `kernels::normal_cdf`.
  template <class L>
  static typename L::value of(typename L::value x) noexcept {
    return L::mul(x, kernels::normal_cdf<L>(x));
  }
  /// The function, in f32.
  static float f(float x) noexcept { return of<kernels::scalar_lanes>(x); }
  /// The derivative on lanes `L`: `Phi(x) + x phi(x)`, the normal distribution and its density
  /// `phi(x) = e^{-x^2 / 2} / sqrt(2 pi)`, both from one exponential (`kernels::gauss`).
  template <class L>
  static typename L::value d_of(typename L::value x) noexcept {
    const auto e = kernels::gauss<L>(x);
    return L::madd(x, L::mul(e, L::splat(0.39894228040143268f)), kernels::normal_cdf<L>(x, e));
  }
  /// The derivative at `x`, in f32.
  static float df(float x) noexcept { return d_of<kernels::scalar_lanes>(x); }
  struct kernel;  ///< its kernel, defined in `ipu/ops/kernels/lanes_unary.hpp`
};

}  // namespace ipu::ops

namespace ipu::nn {

/// The Gaussian error linear unit: `0.5 x (1 + erf(x / sqrt(2)))`.
struct gelu_t {
  using op_type = ops::gelu;  ///< its op
};
/// `nn::gelu`: see `gelu_t`.
inline constexpr gelu_t gelu{};

}  // namespace ipu::nn
