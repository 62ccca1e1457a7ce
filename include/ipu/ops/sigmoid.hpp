#pragma once
/// \file
/// `ops::sigmoid`: the logistic sigmoid, `1 / (1 + exp(-x))` (PyTorch `nn.Sigmoid`, TensorFlow
/// `tf.math.sigmoid`). With `nn::multiply` it gates a branch (a squeeze-and-excitation block's
/// channel weights). Element-wise on its input's tiles, computed in f32 and rounded once to the
/// element type (`ops::unary_kernel`).

#include <ipu/ops/op.hpp>
#include <ipu/ops/unary.hpp>

#include <cmath>
#include <string_view>

namespace ipu::ops {

/// The logistic sigmoid: shape-preserving, no weights, computed where its input lives.
struct sigmoid : op_base {
  static constexpr std::string_view name = "sigmoid";  ///< as `nn::sigmoid` names it
  /// The function, in f32.
  static float f(float x) noexcept { return 1.0f / (1.0f + std::exp(-x)); }
  /// The derivative at `x`: `s (1 - s)`, `s` the sigmoid of `x`.
  static float df(float x) noexcept {
    const float s = f(x);
    return s * (1.0f - s);
  }
  using kernel = unary_kernel<sigmoid>;  ///< its kernel
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
