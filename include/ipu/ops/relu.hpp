#pragma once
/// \file
/// `ops::relu`: `max(x, 0)`, element-wise on its input's tiles (`kernels::relu`).

#include <ipu/ops/op.hpp>

namespace ipu::ops {

/// Rectified linear unit: shape-preserving, no weights, computed where its input lives.
struct relu : op_base {
  static constexpr std::string_view name = "relu";  ///< as `nn::relu` names it
  static constexpr int epilogue_order = 3;  ///< last in a convolution's epilogue
  /// The derivative at `x`: 1 where `x` is positive, else 0.
  static float df(float x) noexcept { return x > 0.0f ? 1.0f : 0.0f; }
  struct kernel;  ///< its kernel, defined in `ipu/ops/kernels/relu.hpp`
};

}  // namespace ipu::ops

namespace ipu::nn {

/// Rectified linear unit.
struct relu_t {
  using op_type = ops::relu;  ///< its op
};
/// `nn::relu`: see `relu_t`.
inline constexpr relu_t relu{};

}  // namespace ipu::nn
