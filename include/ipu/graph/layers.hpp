#pragma once
/// \file
/// The layers of `ipu::nn`. Each layer is an empty type whose hyper-parameters are template
/// arguments; `nn::conv<64, 7, 2>` is a value of that type, ready to compose with `|`.

#include <ipu/graph/node.hpp>

#include <concepts>
#include <type_traits>

namespace ipu {

/// A primitive layer: an empty type that states its hyper-parameters as `T::params`.
template <class T>
concept Layer = std::is_empty_v<T> && requires {
  { T::params } -> std::convertible_to<layer_params>;
};

/// The layers and the compound blocks of the graph language: `nn::conv`, `nn::batch_norm`,
/// `nn::relu`, the pooling layers, `nn::dense`, `nn::softmax`, and `nn::residual`,
/// `nn::repeat` and `nn::scope` to compose them. Users usually write
/// `namespace nn = ipu::nn;`.
namespace nn {

/// 2-D convolution with TensorFlow's SAME padding and no bias (a batch norm follows).
/// Weights are HWIO: `[Kernel, Kernel, in_channels / Groups, Filters]`.
///
/// \tparam Filters  output channels
/// \tparam Kernel   height and width of the kernel
/// \tparam Stride   step along height and width; the output is `[N, ceil(H/Stride), ceil(W/Stride), Filters]`
/// \tparam Groups   groups (cardinality); must divide both the input channels and `Filters`,
///                  which is checked when the graph is lowered
template <int Filters, int Kernel, int Stride = 1, int Groups = 1>
  requires(Filters > 0 && Kernel > 0 && Stride > 0 && Groups > 0)
struct conv_t {
  /// `{op::conv, Filters, Kernel, Stride, Groups}`.
  static constexpr layer_params params{op::conv, Filters, Kernel, Stride, Groups};
};
/// `nn::conv<Filters, Kernel, Stride = 1, Groups = 1>`: see `conv_t`.
template <int Filters, int Kernel, int Stride = 1, int Groups = 1>
inline constexpr conv_t<Filters, Kernel, Stride, Groups> conv{};

/// Inference batch normalisation over the channel axis: scale, shift, mean, variance.
struct batch_norm_t {
  /// `{op::batch_norm}`.
  static constexpr layer_params params{op::batch_norm};
};
/// `nn::batch_norm`: see `batch_norm_t`.
inline constexpr batch_norm_t batch_norm{};

/// Rectified linear unit.
struct relu_t {
  /// `{op::relu}`.
  static constexpr layer_params params{op::relu};
};
/// `nn::relu`: see `relu_t`.
inline constexpr relu_t relu{};

/// Max pooling over `Size x Size` windows with SAME padding.
///
/// \tparam Size    height and width of the window; must not exceed the input's (checked when
///                 the graph is lowered)
/// \tparam Stride  step along height and width; the output is `[N, ceil(H/Stride), ceil(W/Stride), C]`
template <int Size, int Stride>
  requires(Size > 0 && Stride > 0)
struct max_pool_t {
  /// `{op::max_pool}` with window `Size` and stride `Stride`.
  static constexpr layer_params params{op::max_pool, 0, Size, Stride};
};
/// `nn::max_pool<Size, Stride>`: see `max_pool_t`.
template <int Size, int Stride>
inline constexpr max_pool_t<Size, Stride> max_pool{};

/// Average pooling over `Size x Size` windows with SAME padding; padded positions are not
/// counted (as TensorFlow's `avg_pool` with SAME).
///
/// \tparam Size    height and width of the window; must not exceed the input's (checked when
///                 the graph is lowered)
/// \tparam Stride  step along height and width; the output is `[N, ceil(H/Stride), ceil(W/Stride), C]`
template <int Size, int Stride>
  requires(Size > 0 && Stride > 0)
struct avg_pool_t {
  /// `{op::avg_pool}` with window `Size` and stride `Stride`.
  static constexpr layer_params params{op::avg_pool, 0, Size, Stride};
};
/// `nn::avg_pool<Size, Stride>`: see `avg_pool_t`.
template <int Size, int Stride>
inline constexpr avg_pool_t<Size, Stride> avg_pool{};

/// Mean over height and width: `[N, H, W, C]` becomes `[N, C]`.
struct global_avg_pool_t {
  /// `{op::global_avg_pool}`.
  static constexpr layer_params params{op::global_avg_pool};
};
/// `nn::global_avg_pool`: see `global_avg_pool_t`.
inline constexpr global_avg_pool_t global_avg_pool{};

/// Fully connected layer with bias on an `[N, C]` tensor; weights `[C, Units]`. On a 4-D
/// tensor it is a compile error, never a silent flatten.
///
/// \tparam Units  output features: the output is `[N, Units]`
template <int Units>
  requires(Units > 0)
struct dense_t {
  /// `{op::dense}` with `Units` output units (held in `layer_params::filters`).
  static constexpr layer_params params{op::dense, Units};
};
/// `nn::dense<Units>`: see `dense_t`.
template <int Units>
inline constexpr dense_t<Units> dense{};

/// Softmax over the last axis.
struct softmax_t {
  /// `{op::softmax}`.
  static constexpr layer_params params{op::softmax};
};
/// `nn::softmax`: see `softmax_t`.
inline constexpr softmax_t softmax{};

}  // namespace nn
}  // namespace ipu
