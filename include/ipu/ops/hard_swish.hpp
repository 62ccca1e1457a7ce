#pragma once
/// \file
/// `ops::hard_swish`: the hard swish, `x * relu6(x + 3) / 6`, as MobileNetV3 uses it (PyTorch
/// `nn.Hardswish`). Element-wise on its input's tiles, computed in f32 and rounded once to the
/// element type (`ops::unary_kernel`).

#include <ipu/ops/op.hpp>
#include <ipu/ops/unary.hpp>

#include <algorithm>
#include <string_view>

namespace ipu::ops {

/// The hard swish: shape-preserving, no weights, computed where its input lives.
struct hard_swish : op_base {
  static constexpr std::string_view name = "hard_swish";  ///< as `nn::hard_swish` names it
  /// The function, in f32.
  static float f(float x) noexcept { return x * std::min(std::max(x + 3.0f, 0.0f), 6.0f) / 6.0f; }
  /// The derivative at `x`: 0 up to -3, `(2x + 3) / 6` inside `(-3, 3)`, 1 from 3.
  static float df(float x) noexcept { return x <= -3.0f ? 0.0f : x >= 3.0f ? 1.0f : (2.0f * x + 3.0f) / 6.0f; }
  using kernel = unary_kernel<hard_swish>;  ///< its kernel
};

}  // namespace ipu::ops

namespace ipu::nn {

/// The hard swish: `x * relu6(x + 3) / 6`.
struct hard_swish_t {
  using op_type = ops::hard_swish;  ///< its op
};
/// `nn::hard_swish`: see `hard_swish_t`.
inline constexpr hard_swish_t hard_swish{};

}  // namespace ipu::nn
