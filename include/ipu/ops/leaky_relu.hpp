#pragma once
/// \file
/// `ops::leaky_relu`: `x` where `x >= 0`, else `alpha * x` (PyTorch's `nn.LeakyReLU`, Keras'
/// `LeakyReLU`, TensorFlow's `tf.nn.leaky_relu`), with `alpha` rounded to f32 and the product
/// computed in f32 and rounded once to the element type (`ops::unary_kernel`). Element-wise
/// on its input's tiles.

#include <ipu/ops/op.hpp>
#include <ipu/ops/unary.hpp>

#include <ostream>
#include <string_view>

namespace ipu::ops {

/// Leaky ReLU: shape-preserving, no weights, computed where its input lives; the slope is
/// `layer_params::alpha`.
struct leaky_relu : op_base {
  static constexpr std::string_view name = "leaky_relu";  ///< as `nn::leaky_relu` names it
  /// The function, in f32.
  static float f(float x, const layer_params& p) noexcept { return x < 0 ? static_cast<float>(p.alpha) * x : x; }
  /// The derivative at `x`: the slope below 0, else 1.
  static float df(float x, const layer_params& p) noexcept { return x < 0 ? static_cast<float>(p.alpha) : 1.0f; }
  using kernel = unary_kernel<leaky_relu>;  ///< its kernel
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
