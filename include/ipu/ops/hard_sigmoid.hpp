#pragma once
/// \file
/// `ops::hard_sigmoid`: the hard sigmoid, `relu6(x + 3) / 6`, as MobileNetV3 uses it: PyTorch's
/// `nn.Hardsigmoid` and Keras 3's `hard_sigmoid` (Keras 2's was `clip(0.2 x + 0.5, 0, 1)`, another
/// function). Element-wise on its input's tiles, computed in f32 and rounded once to the element
/// type; written once over lanes, so that the fast mode's vectors give the faithful mode's bits
/// (`ops/kernels/lanes_unary.hpp`).

#include <ipu/core/lanes.hpp>
#include <ipu/ops/op.hpp>

#include <string_view>

namespace ipu::ops {

/// The hard sigmoid: shape-preserving, no weights, computed where its input lives.
struct hard_sigmoid : op_base {
  static constexpr std::string_view name = "hard_sigmoid";  ///< as `nn::hard_sigmoid` names it
  /// The function on lanes `L` (one float, `kernels::scalar_lanes`, or a vector of them).
  template <class L>
  static typename L::value of(typename L::value x) noexcept {
    return L::div(kernels::relu6<L>(L::add(x, L::splat(3.0f))), L::splat(6.0f));
  }
  /// The function, in f32.
  static float f(float x) noexcept { return of<kernels::scalar_lanes>(x); }
  /// The derivative on lanes `L`: 1/6 inside `(-3, 3)`, else 0 (0 at NaN).
  template <class L>
  static typename L::value d_of(typename L::value x) noexcept {
    const auto zero = L::splat(0.0f);
    return L::where_greater(x, L::splat(-3.0f), L::where_greater(L::splat(3.0f), x, L::splat(1.0f / 6.0f), zero), zero);
  }
  /// The derivative at `x`, in f32.
  static float df(float x) noexcept { return d_of<kernels::scalar_lanes>(x); }
  struct kernel;  ///< its kernel, defined in `ipu/ops/kernels/lanes_unary.hpp`
};

}  // namespace ipu::ops

namespace ipu::nn {

/// The hard sigmoid: `relu6(x + 3) / 6`.
struct hard_sigmoid_t {
  using op_type = ops::hard_sigmoid;  ///< its op
};
/// `nn::hard_sigmoid`: see `hard_sigmoid_t`.
inline constexpr hard_sigmoid_t hard_sigmoid{};

}  // namespace ipu::nn
