#pragma once
/// \file
/// `ops::gelu_tanh`: the Gaussian error linear unit's tanh approximation, `0.5 x (1 + tanh(sqrt(2 /
/// pi) (x + 0.044715 x^3)))` (Hendrycks and Gimpel 2016), as BERT and GPT-2 use it (PyTorch
/// `nn.GELU(approximate="tanh")`, TensorFlow `tf.nn.gelu(approximate=True)`). Element-wise on its
/// input's tiles, computed in f32 and rounded once to the element type (`ops::unary_kernel`).

#include <ipu/ops/op.hpp>
#include <ipu/ops/unary.hpp>

#include <cmath>
#include <string_view>

namespace ipu::ops {

/// The Gaussian error linear unit, tanh approximation: shape-preserving, no weights, computed where its input lives.
struct gelu_tanh : op_base {
  static constexpr std::string_view name = "gelu_tanh";  ///< as `nn::gelu_tanh` names it
  /// The function, in f32.
  static float f(float x) noexcept { return 0.5f * x * (1.0f + std::tanh(0.79788456080286536f * (x + 0.044715f * x * x * x))); }
  /// The derivative at `x`: `(1 + t) / 2 + x (1 - t^2) u'(x) / 2`, `t = tanh(u(x))`.
  static float df(float x) noexcept {
    const float t = std::tanh(0.79788456080286536f * (x + 0.044715f * x * x * x));
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * 0.79788456080286536f * (1.0f + 3.0f * 0.044715f * x * x);
  }
  using kernel = unary_kernel<gelu_tanh>;  ///< its kernel
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
