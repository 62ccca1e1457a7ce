#pragma once
/// \file
/// `ops::relu6`: ReLU capped at 6, `min(max(x, 0), 6)`, as MobileNetV2 uses it (PyTorch `nn.ReLU6`,
/// TensorFlow `tf.nn.relu6`). Element-wise on its input's tiles, computed in f32 and rounded once
/// to the element type (`ops::unary_kernel`); in fast mode, the last step of the epilogue of
/// the convolution it follows (`ops/kernels/relu6.hpp`).

#include <ipu/ops/op.hpp>

#include <algorithm>
#include <string_view>

namespace ipu::ops {

/// ReLU capped at 6: shape-preserving, no weights, computed where its input lives.
struct relu6 : op_base {
  static constexpr std::string_view name = "relu6";  ///< as `nn::relu6` names it
  static constexpr int epilogue_order = 3;  ///< last in a convolution's epilogue, as `relu`
  /// The function, in f32.
  static float f(float x) noexcept { return std::min(std::max(x, 0.0f), 6.0f); }
  /// The derivative at `x`: 1 inside `(0, 6)`, else 0.
  static float df(float x) noexcept { return x > 0.0f && x < 6.0f ? 1.0f : 0.0f; }
  struct kernel;  ///< its kernel, defined in `ipu/ops/kernels/relu6.hpp`
};

}  // namespace ipu::ops

namespace ipu::nn {

/// ReLU capped at 6: `min(max(x, 0), 6)`.
struct relu6_t {
  using op_type = ops::relu6;  ///< its op
};
/// `nn::relu6`: see `relu6_t`.
inline constexpr relu6_t relu6{};

}  // namespace ipu::nn
