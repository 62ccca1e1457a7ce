#pragma once
/// \file
/// `ops::tanh`: the hyperbolic tangent, `tanh(x)` (PyTorch `nn.Tanh`, TensorFlow `tf.math.tanh`).
/// Element-wise on its input's tiles, computed in f32 and rounded once to the element type
/// (`ops::unary_kernel`).

#include <ipu/ops/op.hpp>
#include <ipu/ops/unary.hpp>

#include <cmath>
#include <string_view>

namespace ipu::ops {

/// The hyperbolic tangent: shape-preserving, no weights, computed where its input lives.
struct tanh : op_base {
  static constexpr std::string_view name = "tanh";  ///< as `nn::tanh` names it
  /// The function, in f32.
  static float f(float x) noexcept { return std::tanh(x); }
  /// The derivative at `x`: `1 - tanh(x)^2`.
  static float df(float x) noexcept {
    const float t = std::tanh(x);
    return 1.0f - t * t;
  }
  using kernel = unary_kernel<tanh>;  ///< its kernel
};

}  // namespace ipu::ops

namespace ipu::nn {

/// The hyperbolic tangent: `tanh(x)`.
struct tanh_t {
  using op_type = ops::tanh;  ///< its op
};
/// `nn::tanh`: see `tanh_t`.
inline constexpr tanh_t tanh{};

}  // namespace ipu::nn
