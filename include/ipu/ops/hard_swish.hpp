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
  /// The derivative on lanes `L`: 0 up to -3, `(2x + 3) / 6` inside `(-3, 3)`, 1 from 3, NaN at
  /// NaN. `x <= -3` is `-below_3 > x` and `x >= 3` is `x > below_3`, `below_3` the float
  /// below 3 (`L::where_greater` compares with `>` only, false at NaN).
  template <class L>
  static typename L::value d_of(typename L::value x) noexcept {
    constexpr float below_3 = 0x1.7ffffep+1f;  // 3 - 2^-22
    const auto inside = L::div(L::add(L::mul(L::splat(2.0f), x), L::splat(3.0f)), L::splat(6.0f));
    return L::where_greater(L::splat(-below_3), x, L::splat(0.0f), L::where_greater(x, L::splat(below_3), L::splat(1.0f), inside));
  }
  /// The derivative at `x`, in f32.
  static float df(float x) noexcept { return d_of<kernels::scalar_lanes>(x); }
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
