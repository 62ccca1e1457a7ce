#pragma once
/// \file
/// `ops::leaky_relu`: `x` where `x >= 0`, else `alpha * x` (PyTorch's `nn.LeakyReLU`, Keras'
/// `LeakyReLU`, TensorFlow's `tf.nn.leaky_relu`), with `alpha` rounded to f32 and the product
/// computed in f32 and rounded once to the element type. Element-wise on its input's tiles;
/// written once over lanes, so that the fast mode's vectors give the faithful mode's bits
/// (`ops/kernels/lanes_unary.hpp`).

#include <ipu/core/lanes.hpp>
#include <ipu/ops/op.hpp>

#include <ostream>
#include <string_view>

namespace ipu::ops {

/// Leaky ReLU: shape-preserving, no weights, computed where its input lives; the slope is
/// `layer_params::alpha`.
struct leaky_relu : op_base {
  static constexpr std::string_view name = "leaky_relu";  ///< as `nn::leaky_relu` names it
  /// The function on lanes `L` (one float, `kernels::scalar_lanes`, or a vector of them):
  /// `x < 0 ? alpha x : x` (a NaN stays itself).
  template <class L>
  static typename L::value of(typename L::value x, const layer_params& p) noexcept {
    const auto zero = L::splat(0.0f);
    return L::where_greater(zero, x, L::mul(L::splat(static_cast<float>(p.alpha)), x), x);
  }
  /// The function, in f32.
  static float f(float x, const layer_params& p) noexcept { return of<kernels::scalar_lanes>(x, p); }
  /// The derivative on lanes `L`: the slope below 0, else 1.
  template <class L>
  static typename L::value d_of(typename L::value x, const layer_params& p) noexcept {
    return L::where_greater(L::splat(0.0f), x, L::splat(static_cast<float>(p.alpha)), L::splat(1.0f));
  }
  /// The derivative at `x`, in f32.
  static float df(float x, const layer_params& p) noexcept { return d_of<kernels::scalar_lanes>(x, p); }
  struct kernel;  ///< its kernel, defined in `ipu/ops/kernels/lanes_unary.hpp`
  /// The slope: ` 0.2`.
  static void describe(std::ostream& os, const layer_params& p) { os << ' ' << p.alpha; }
};

}  // namespace ipu::ops

namespace ipu::nn {

/// Leaky ReLU with slope `Alpha` for negative inputs (`nn::scalar`).
///
/// \tparam Alpha  the slope; PyTorch's default is 0.01, Keras' `LeakyReLU` 0.3 and
///                `tf.nn.leaky_relu` 0.2, so the graph states it
template <scalar Alpha>
struct leaky_relu_t {
  using op_type = ops::leaky_relu;  ///< its op
  static constexpr layer_params params{.alpha = Alpha.value()};  ///< its hyper-parameters
};
/// `nn::leaky_relu<Alpha>`: see `leaky_relu_t`.
template <scalar Alpha>
inline constexpr leaky_relu_t<Alpha> leaky_relu{};

}  // namespace ipu::nn
