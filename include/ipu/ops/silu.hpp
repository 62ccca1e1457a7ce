#pragma once
/// \file
/// `ops::silu`: the sigmoid-weighted linear unit (swish), `x * sigmoid(x)`, computed as `x / (1 +
/// exp(-x))`, as EfficientNet uses it (PyTorch `nn.SiLU`, TensorFlow `tf.nn.silu`). Element-wise on
/// its input's tiles, computed in f32 (`e^x` as `kernels::exp`) and rounded once to the element
/// type; written once over lanes, so that the fast mode's vectors give the faithful mode's bits
/// (`ops/kernels/lanes_unary.hpp`).

#include <ipu/core/lanes.hpp>
#include <ipu/ops/op.hpp>

#include <string_view>

namespace ipu::ops {

/// The sigmoid-weighted linear unit (swish): shape-preserving, no weights, computed where its input lives.
struct silu : op_base {
  static constexpr std::string_view name = "silu";  ///< as `nn::silu` names it
  static constexpr int epilogue_order = 3;  ///< last in a convolution's epilogue, as `relu`
  /// The function on lanes `L` (one float, `kernels::scalar_lanes`, or a vector of them).
  template <class L>
  static typename L::value of(typename L::value x) noexcept {
    return kernels::silu<L>(x);
  }
  /// The function, in f32.
  static float f(float x) noexcept { return of<kernels::scalar_lanes>(x); }
  /// The derivative on lanes `L`: `s (1 + x (1 - s))`, `s` the sigmoid of `x` and `1 - s` to
  /// its own precision (`kernels::sigmoid_with_complement`).
  template <class L>
  static typename L::value d_of(typename L::value x) noexcept {
    const auto [s, complement] = kernels::sigmoid_with_complement<L>(x);
    return L::mul(s, L::madd(x, complement, L::splat(1.0f)));
  }
  /// The derivative at `x`, in f32.
  static float df(float x) noexcept { return d_of<kernels::scalar_lanes>(x); }
  struct kernel;  ///< its kernel, defined in `ipu/ops/kernels/lanes_unary.hpp`
};

}  // namespace ipu::ops

namespace ipu::nn {

/// The sigmoid-weighted linear unit (swish): `x * sigmoid(x)`.
struct silu_t {
  using op_type = ops::silu;  ///< its op
};
/// `nn::silu`: see `silu_t`.
inline constexpr silu_t silu{};

}  // namespace ipu::nn
