#pragma once
/// \file
/// `ops::relu6`: ReLU capped at 6, `min(max(x, 0), 6)`, as MobileNetV2 uses it (PyTorch `nn.ReLU6`,
/// TensorFlow `tf.nn.relu6`). Element-wise on its input's tiles, computed in f32 and rounded once
/// to the element type; written once over lanes (`kernels::relu6`), so that the fast mode's
/// vectors give the faithful mode's bits (`ops/kernels/lanes_unary.hpp`); in fast mode, the last
/// step of the epilogue of the convolution it follows.

#include <ipu/core/lanes.hpp>
#include <ipu/ops/op.hpp>

#include <string_view>

namespace ipu::ops {

/// ReLU capped at 6: shape-preserving, no weights, computed where its input lives.
struct relu6 : op_base {
  static constexpr std::string_view name = "relu6";  ///< as `nn::relu6` names it
  static constexpr int epilogue_order = 3;  ///< last in a convolution's epilogue, as `relu`
  /// The function on lanes `L` (one float, `kernels::scalar_lanes`, or a vector of them).
  template <class L>
  static typename L::value of(typename L::value x) noexcept {
    return kernels::relu6<L>(x);
  }
  /// The function, in f32.
  static float f(float x) noexcept { return of<kernels::scalar_lanes>(x); }
  /// The derivative on lanes `L`: 1 inside `(0, 6)`, else 0 (0 at NaN).
  template <class L>
  static typename L::value d_of(typename L::value x) noexcept {
    const auto zero = L::splat(0.0f);
    return L::where_greater(x, zero, L::where_greater(L::splat(6.0f), x, L::splat(1.0f), zero), zero);
  }
  /// The derivative at `x`, in f32.
  static float df(float x) noexcept { return d_of<kernels::scalar_lanes>(x); }
  struct kernel;  ///< its kernel, defined in `ipu/ops/kernels/lanes_unary.hpp`
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
