#pragma once
/// \file
/// MobileNetV2 (Sandler et al. 2018, "MobileNetV2: Inverted Residuals and Linear Bottlenecks"),
/// written with the public graph language, as torchvision's `mobilenet_v2` (width 1.0).
///
/// A 3x3/2 conv to 32 channels (batch norm, ReLU6), seven stages of inverted residual blocks
/// with the paper's settings (expansion t, channels c, blocks n, stride s): (1, 16, 1, 1),
/// (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1);
/// a 1x1 conv to 1280 channels (batch norm, ReLU6), global average pooling and a dense
/// classifier. An inverted residual is a 1x1 expansion to `t` times its input channels (none
/// when t is 1), a depthwise 3x3 conv carrying the stride, and a linear 1x1 projection, each
/// followed by batch norm, the first two by ReLU6; a block that keeps its shape adds its input.
/// torchvision's dropout before the classifier is the identity at inference and is left out.
/// Convolutions pad as `Padding` says (`padding_convention`): TensorFlow's SAME by default,
/// torchvision's `(k - 1) / 2` with `padding_convention::pytorch`; at 224x224 both give every
/// output torchvision's shape, so the parameters and multiply-accumulates are torchvision's.

#include <ipu/core/dtype.hpp>
#include <ipu/graph/compose.hpp>
#include <ipu/graph/layers.hpp>
#include <ipu/models/padding.hpp>

#include <type_traits>

namespace ipu::models {

namespace detail {

/// An inverted residual's body: expansion (unless `T` is 1), depthwise conv, linear projection.
template <int In, int T, int Out, int Stride, padding_convention Padding>
inline constexpr auto inverted_body = [] {
  constexpr int hidden = In * T;
  constexpr auto depthwise_project = padded_as<Padding>(nn::conv<hidden, 3, Stride, hidden>) | nn::batch_norm |
                                     nn::relu6 | nn::conv<Out, 1> | nn::batch_norm;
  if constexpr (T == 1) {
    return depthwise_project;
  } else {
    return nn::conv<hidden, 1> | nn::batch_norm | nn::relu6 | depthwise_project;
  }
}();

/// MobileNetV2's block with expansion `T` to `Out` channels: `body<In, Stride>`.
template <int T, int Out, padding_convention Padding>
struct inverted_block {
  /// The block's body from `In` channels, with stride `Stride`.
  template <int In, int Stride>
  static constexpr auto body = inverted_body<In, T, Out, Stride, Padding>;
};

/// `N` blocks from `In` to `Out` channels, each `Block::body<in, stride>`, the first with
/// stride `Stride`; those that keep their input's shape add it (MobileNetV2's inverted
/// residuals, EfficientNet's MBConv blocks).
template <int In, int Out, int N, int Stride, class Block>
inline constexpr auto inverted_stage = [] {
  constexpr auto first = [] {
    if constexpr (Stride == 1 && In == Out) {
      return nn::residual(Block::template body<In, 1>);
    } else {
      return Block::template body<In, Stride>;
    }
  }();
  if constexpr (N == 1) {
    return first;
  } else {
    return first | nn::repeat<N - 1>(nn::residual(Block::template body<Out, 1>));
  }
}();

/// MobileNetV2's stage of `N` blocks with expansion `T` from `In` to `Out` channels.
template <int In, int T, int Out, int N, int Stride, padding_convention Padding>
inline constexpr auto mobilenet_stage = inverted_stage<In, Out, N, Stride, inverted_block<T, Out, Padding>>;

template <class DType, int Batch, int InChannels, int Classes, int ImageSize, padding_convention Padding>
inline constexpr auto mobilenet_v2_graph =
    input<DType, Batch, ImageSize, ImageSize, InChannels> |
    nn::scope<"stem">(padded_as<Padding>(nn::conv<32, 3, 2>) | nn::batch_norm | nn::relu6) |
    nn::scope<"stage1">(mobilenet_stage<32, 1, 16, 1, 1, Padding>) |
    nn::scope<"stage2">(mobilenet_stage<16, 6, 24, 2, 2, Padding>) |
    nn::scope<"stage3">(mobilenet_stage<24, 6, 32, 3, 2, Padding>) |
    nn::scope<"stage4">(mobilenet_stage<32, 6, 64, 4, 2, Padding>) |
    nn::scope<"stage5">(mobilenet_stage<64, 6, 96, 3, 1, Padding>) |
    nn::scope<"stage6">(mobilenet_stage<96, 6, 160, 3, 2, Padding>) |
    nn::scope<"stage7">(mobilenet_stage<160, 6, 320, 1, 1, Padding>) |
    nn::scope<"head">(nn::conv<1280, 1> | nn::batch_norm | nn::relu6) |
    nn::global_avg_pool | nn::dense<Classes>;

}  // namespace detail

/// MobileNetV2 (torchvision's `mobilenet_v2` with `padding_convention::pytorch`): 3,504,872
/// parameters at 3 input channels and 1000 classes.
template <ElementType DType, int Batch, int InChannels = 3, int Classes = 1000, int ImageSize = 224,
          padding_convention Padding = padding_convention::tensorflow>
  requires(Batch > 0)
using mobilenet_v2 =
    std::remove_cvref_t<decltype(detail::mobilenet_v2_graph<DType, Batch, InChannels, Classes, ImageSize, Padding>)>;

}  // namespace ipu::models
