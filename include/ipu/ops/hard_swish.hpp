#pragma once
/// \file
/// `ops::hard_swish`: the hard swish, `x * relu6(x + 3) / 6`, as MobileNetV3 uses it (PyTorch
/// `nn.Hardswish`). Element-wise on its input's tiles, computed in f32 and rounded once to the
/// element type; written once over lanes, so that the fast mode's vectors give the faithful mode's
/// bits (`ops/kernels/lanes_unary.hpp`).

#include <ipu/core/lanes.hpp>
#include <ipu/ops/op.hpp>

#include <string_view>

namespace ipu::ops {

/// The hard swish: shape-preserving, no weights, computed where its input lives.
struct hard_swish : op_base {
  static constexpr std::string_view name = "hard_swish";  ///< as `nn::hard_swish` names it
  /// The function on lanes `L` (one float, `kernels::scalar_lanes`, or a vector of them).
  template <class L>
  static typename L::value of(typename L::value x) noexcept {
    return L::div(L::mul(x, kernels::relu6<L>(L::add(x, L::splat(3.0f)))), L::splat(6.0f));
  }
  /// The function, in f32.
  static float f(float x) noexcept { return of<kernels::scalar_lanes>(x); }
  /// The derivative at `x`: 0 up to -3, `(2x + 3) / 6` inside `(-3, 3)`, 1 from 3.
  static float df(float x) noexcept { return x <= -3.0f ? 0.0f : x >= 3.0f ? 1.0f : (2.0f * x + 3.0f) / 6.0f; }
  struct kernel;  ///< its kernel, defined in `ipu/ops/kernels/lanes_unary.hpp`
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
