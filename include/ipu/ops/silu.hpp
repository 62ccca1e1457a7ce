#pragma once
/// \file
/// `ops::silu`: the sigmoid-weighted linear unit (swish), `x * sigmoid(x)`, computed as `x / (1 +
/// exp(-x))`, as EfficientNet uses it (PyTorch `nn.SiLU`, TensorFlow `tf.nn.silu`). Element-wise on
/// its input's tiles, computed in f32 and rounded once to the element type (`ops::unary_kernel`).

#include <ipu/ops/op.hpp>
#include <ipu/ops/unary.hpp>

#include <cmath>
#include <string_view>

namespace ipu::ops {

/// The sigmoid-weighted linear unit (swish): shape-preserving, no weights, computed where its input lives.
struct silu : op_base {
  static constexpr std::string_view name = "silu";  ///< as `nn::silu` names it
  /// The function, in f32.
  static float f(float x) noexcept { return x / (1.0f + std::exp(-x)); }
  /// The derivative at `x`: `s (1 + x (1 - s))`, `s` the sigmoid of `x`.
  static float df(float x) noexcept {
    const float s = 1.0f / (1.0f + std::exp(-x));
    return s * (1.0f + x * (1.0f - s));
  }
  using kernel = unary_kernel<silu>;  ///< its kernel
};

}  // namespace ipu::ops

namespace ipu::nn {

/// The sigmoid-weighted linear unit (swish): `x * sigmoid(x)`.
struct silu_t {
  using op_type = ops::silu;  ///< its op
};
/// `nn::silu`: see `silu_t`.
inline constexpr silu_t silu{};

}  // namespace ipu::nn
