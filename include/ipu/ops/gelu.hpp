#pragma once
/// \file
/// `ops::gelu`: the Gaussian error linear unit, exactly: `0.5 x (1 + erf(x / sqrt(2)))` (PyTorch
/// `nn.GELU()`, TensorFlow `tf.nn.gelu(approximate=False)`). Element-wise on its input's tiles,
/// computed in f32 and rounded once to the element type (`ops::unary_kernel`).

#include <ipu/ops/op.hpp>
#include <ipu/ops/unary.hpp>

#include <cmath>
#include <string_view>

namespace ipu::ops {

/// The Gaussian error linear unit: shape-preserving, no weights, computed where its input lives.
struct gelu : op_base {
  static constexpr std::string_view name = "gelu";  ///< as `nn::gelu` names it
  /// The function, in f32.
  static float f(float x) noexcept { return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f)); }
  /// The derivative at `x`: `Phi(x) + x phi(x)`, the normal distribution and density.
  static float df(float x) noexcept {
    return 0.5f * (1.0f + std::erf(x * 0.70710678118654752f)) + x * 0.39894228040143268f * std::exp(-0.5f * x * x);
  }
  using kernel = unary_kernel<gelu>;  ///< its kernel
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
