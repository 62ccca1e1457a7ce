#pragma once
/// \file
/// `ops::tanh`: the hyperbolic tangent, `tanh(x)` (PyTorch `nn.Tanh`, TensorFlow `tf.math.tanh`).
/// Element-wise on its input's tiles, computed in f32 (as `kernels::tanh`: Cephes' `tanhf`, within
/// 1.3 units in the last place) and rounded once to the element type; written once over lanes,
/// so that the fast mode's vectors give the faithful mode's bits (`ops/kernels/lanes_unary.hpp`).

#include <ipu/core/lanes.hpp>
#include <ipu/ops/op.hpp>

#include <string_view>

namespace ipu::ops {

/// The hyperbolic tangent: shape-preserving, no weights, computed where its input lives.
struct tanh : op_base {
  static constexpr std::string_view name = "tanh";  ///< as `nn::tanh` names it
  /// The function on lanes `L` (one float, `kernels::scalar_lanes`, or a vector of them).
  template <class L>
  static typename L::value of(typename L::value x) noexcept {
    return kernels::tanh<L>(x);
  }
  /// The function, in f32.
  static float f(float x) noexcept { return of<kernels::scalar_lanes>(x); }
  /// The derivative on lanes `L`: `1 - t^2`, `t = tanh(x)` (`t^2` unrounded with fused
  /// multiply-add, where the difference cancels).
  template <class L>
  static typename L::value d_of(typename L::value x) noexcept {
    const auto t = of<L>(x);
    return L::madd(L::sub(L::splat(0.0f), t), t, L::splat(1.0f));
  }
  /// The derivative at `x`, in f32.
  static float df(float x) noexcept { return d_of<kernels::scalar_lanes>(x); }
  struct kernel;  ///< its kernel, defined in `ipu/ops/kernels/lanes_unary.hpp`
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
