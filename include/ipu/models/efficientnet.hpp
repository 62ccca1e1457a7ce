#pragma once
/// \file
/// EfficientNet-B0 (Tan and Le 2019, "EfficientNet: Rethinking Model Scaling for Convolutional
/// Neural Networks"), written with the public graph language, as torchvision's
/// `efficientnet_b0`.
///
/// A 3x3/2 conv to 32 channels (batch norm, SiLU), seven stages of MBConv blocks with the
/// paper's table 1 (expansion t, kernel k, stride s, channels c, blocks n): (1, 3, 1, 16, 1),
/// (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3), (6, 5, 1, 112, 3), (6, 5, 2, 192, 4),
/// (6, 3, 1, 320, 1); a 1x1 conv to 1280 channels (batch norm, SiLU), global average pooling
/// and a dense classifier. An MBConv block is a 1x1 expansion to `t` times its input channels
/// (none when t is 1), a depthwise k x k conv carrying the stride, squeeze-and-excitation, and
/// a linear 1x1 projection; the convolutions are followed by batch norm, the first two by SiLU.
/// Squeeze-and-excitation (torchvision's `SqueezeExcitation`) averages each channel
/// (`adaptive_avg_pool<1>`), reduces to a quarter of the block's input channels with a 1x1
/// conv with bias and SiLU, expands back with a 1x1 conv with bias and a sigmoid, and scales
/// the map by the result (`nn::multiply`, broadcast). A block that keeps its shape adds its
/// input; stochastic depth and the dropout before the classifier are the identity at
/// inference and are left out. Convolutions pad as `Padding` says (`padding_convention`):
/// TensorFlow's SAME by default (Keras' `EfficientNetB0`), torchvision's `(k - 1) / 2` on every
/// side with `padding_convention::pytorch`; both give the same shapes, parameters and
/// multiply-accumulates.
///
/// Each squeeze-and-excitation's pooling is a reduction in stages over the tiles
/// (`ops::plan_reduction`), so no tile holds a whole map: in f16 with half partials the model
/// fits one Mk2 up to batch 128 (`tests/models/zoo_fit.cpp`).

#include <ipu/core/dtype.hpp>
#include <ipu/graph/compose.hpp>
#include <ipu/graph/layers.hpp>
#include <ipu/models/mobilenet.hpp>

#include <type_traits>

namespace ipu::models {

namespace detail {

/// Squeeze-and-excitation on `Channels` channels, squeezed to `Squeezed`.
template <int Channels, int Squeezed>
inline constexpr auto squeeze_excitation = nn::multiply(
    nn::identity, nn::adaptive_avg_pool<1> | nn::conv<Squeezed, 1>.with_bias() | nn::silu |
                      nn::conv<Channels, 1>.with_bias() | nn::sigmoid);

/// An MBConv block's body: expansion (unless `T` is 1), depthwise conv, squeeze-and-excitation
/// to a quarter of `In`, linear projection.
template <int In, int T, int K, int Out, int Stride, padding_convention Padding>
inline constexpr auto mbconv_body = [] {
  constexpr int hidden = In * T;
  constexpr auto rest = padded_as<Padding>(nn::conv<hidden, K, Stride, hidden>) | nn::batch_norm | nn::silu |
                        nn::scope<"se">(squeeze_excitation<hidden, (In / 4 > 1 ? In / 4 : 1)>) |
                        nn::conv<Out, 1> | nn::batch_norm;
  if constexpr (T == 1) {
    return rest;
  } else {
    return nn::conv<hidden, 1> | nn::batch_norm | nn::silu | rest;
  }
}();

/// EfficientNet's MBConv block with expansion `T` and a `K` x `K` depthwise kernel to `Out`
/// channels: `body<In, Stride>`.
template <int T, int K, int Out, padding_convention Padding>
struct mbconv_block {
  /// The block's body from `In` channels, with stride `Stride`.
  template <int In, int Stride>
  static constexpr auto body = mbconv_body<In, T, K, Out, Stride, Padding>;
};

/// A stage of `N` MBConv blocks (`inverted_stage`).
template <int In, int T, int K, int Out, int N, int Stride, padding_convention Padding>
inline constexpr auto mbconv_stage = inverted_stage<In, Out, N, Stride, mbconv_block<T, K, Out, Padding>>;

template <class DType, int Batch, int InChannels, int Classes, int ImageSize, padding_convention Padding>
inline constexpr auto efficientnet_b0_graph =
    input<DType, Batch, ImageSize, ImageSize, InChannels> |
    nn::scope<"stem">(padded_as<Padding>(nn::conv<32, 3, 2>) | nn::batch_norm | nn::silu) |
    nn::scope<"stage1">(mbconv_stage<32, 1, 3, 16, 1, 1, Padding>) |
    nn::scope<"stage2">(mbconv_stage<16, 6, 3, 24, 2, 2, Padding>) |
    nn::scope<"stage3">(mbconv_stage<24, 6, 5, 40, 2, 2, Padding>) |
    nn::scope<"stage4">(mbconv_stage<40, 6, 3, 80, 3, 2, Padding>) |
    nn::scope<"stage5">(mbconv_stage<80, 6, 5, 112, 3, 1, Padding>) |
    nn::scope<"stage6">(mbconv_stage<112, 6, 5, 192, 4, 2, Padding>) |
    nn::scope<"stage7">(mbconv_stage<192, 6, 3, 320, 1, 1, Padding>) |
    nn::scope<"head">(nn::conv<1280, 1> | nn::batch_norm | nn::silu) |
    nn::global_avg_pool | nn::dense<Classes>;

}  // namespace detail

/// EfficientNet-B0 (torchvision's `efficientnet_b0` with `padding_convention::pytorch`):
/// 5,288,548 parameters at 3 input channels and 1000 classes.
template <ElementType DType, int Batch, int InChannels = 3, int Classes = 1000, int ImageSize = 224,
          padding_convention Padding = padding_convention::tensorflow>
  requires(Batch > 0)
using efficientnet_b0 = std::remove_cvref_t<
    decltype(detail::efficientnet_b0_graph<DType, Batch, InChannels, Classes, ImageSize, Padding>)>;

}  // namespace ipu::models
