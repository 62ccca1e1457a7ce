#pragma once
/// \file
/// The ResNet / ResNeXt family, written with the public graph language exactly as a user would.
///
/// `resnet18` and `resnet34` (`resnet_basic`) follow torchvision too: the same stem, four stages
/// of basic blocks (`{2,2,2,2}` or `{3,4,6,3}`: two 3x3 convs, each followed by batch norm, the
/// first by relu, plus a shortcut) of 64, 128, 256 and 512 channels; the first block of stages 2
/// to 4 strides and has a projection shortcut (1x1 conv and batch norm).
///
/// `resnext<DType, Batch, Layers, Cardinality, WidthPerGroup, ...>` follows torchvision: a stem
/// (7x7/2 conv, batch norm, relu, 3x3/2 max pool), four stages of bottleneck blocks with
/// `{3,4,6,3}`, `{3,4,23,3}` or `{3,8,36,3}` blocks for 50, 101 or 152 layers, global average
/// pooling and a dense classifier. A bottleneck is 1x1 conv, grouped 3x3 conv, 1x1 conv (each
/// followed by batch norm, the first two by relu), plus a shortcut; its width is
/// `planes * WidthPerGroup / 64 * Cardinality` with `planes = 64, 128, 256, 512`, and it
/// expands to `4 * planes` channels. The first block of a stage has a projection shortcut.
///
/// Every model pads as `Padding` says (`padding_convention`): TensorFlow's SAME by default, the
/// Keras models and the seed's; `padding_convention::pytorch` pads the 7x7 stem by 3, the max
/// pool and the 3x3 convs by 1, as torchvision does, which a port of torchvision's weights needs.

#include <ipu/core/dtype.hpp>
#include <ipu/graph/compose.hpp>
#include <ipu/graph/layers.hpp>
#include <ipu/models/padding.hpp>

#include <cstdint>
#include <type_traits>

/// Ready-made networks written in the graph language: the ResNet and ResNeXt family.
namespace ipu::models {

/// Where the first block of a stage downsamples.
enum class stride_at : std::uint8_t {
  grouped_conv,  ///< on the 3x3 conv, as torchvision ("ResNet v1.5") and the published counts
  first_conv,    ///< on the first 1x1 conv, as the original paper and the TensorFlow seed do
};

namespace detail {

template <int Width, int Out, int Stride, int Groups, stride_at At, padding_convention Padding>
inline constexpr auto bottleneck_body =
    nn::conv<Width, 1, At == stride_at::first_conv ? Stride : 1> | nn::batch_norm | nn::relu |
    padded_as<Padding>(nn::conv<Width, 3, At == stride_at::grouped_conv ? Stride : 1, Groups>) | nn::batch_norm |
    nn::relu | nn::conv<Out, 1> | nn::batch_norm;

/// A stage's first block: a bottleneck with a projection shortcut, strided by `Stride`.
template <int Planes, int Stride, int Cardinality, int WidthPerGroup, stride_at At, padding_convention Padding>
inline constexpr auto first_block =
    nn::residual(bottleneck_body<Planes * WidthPerGroup / 64 * Cardinality, 4 * Planes, Stride, Cardinality, At, Padding>,
                 nn::conv<4 * Planes, 1, Stride> | nn::batch_norm) |
    nn::relu;

/// `Blocks` of a stage's other blocks: bottlenecks with an identity shortcut.
template <int Planes, int Blocks, int Cardinality, int WidthPerGroup, stride_at At, padding_convention Padding>
inline constexpr auto identity_blocks = nn::repeat<Blocks>(
    nn::residual(bottleneck_body<Planes * WidthPerGroup / 64 * Cardinality, 4 * Planes, 1, Cardinality, At, Padding>) | nn::relu);

template <int Planes, int Blocks, int Stride, int Cardinality, int WidthPerGroup, stride_at At, padding_convention Padding>
inline constexpr auto stage = first_block<Planes, Stride, Cardinality, WidthPerGroup, At, Padding> |
                              identity_blocks<Planes, Blocks - 1, Cardinality, WidthPerGroup, At, Padding>;

/// The stem of every ResNet: a 7x7/2 convolution to 64 channels, batch norm, relu and a 3x3/2
/// max pool.
template <padding_convention Padding>
inline constexpr auto resnet_stem = padded_as<Padding>(nn::conv<64, 7, 2>) | nn::batch_norm | nn::relu |
                                    padded_as<Padding>(nn::max_pool<3, 2>);

template <int Layers, int Stage>
inline constexpr int blocks_in_stage = [] {
  constexpr int table[3][4] = {{3, 4, 6, 3}, {3, 4, 23, 3}, {3, 8, 36, 3}};
  return table[Layers == 50 ? 0 : Layers == 101 ? 1 : 2][Stage];
}();

template <class DType, int Batch, int Layers, int Cardinality, int WidthPerGroup, int InChannels, int Classes,
          int ImageSize, stride_at At, padding_convention Padding>
inline constexpr auto resnext_graph =
    input<DType, Batch, ImageSize, ImageSize, InChannels> | nn::scope<"stem">(resnet_stem<Padding>) |
    nn::scope<"stage1">(stage<64, blocks_in_stage<Layers, 0>, 1, Cardinality, WidthPerGroup, At, Padding>) |
    nn::scope<"stage2">(stage<128, blocks_in_stage<Layers, 1>, 2, Cardinality, WidthPerGroup, At, Padding>) |
    nn::scope<"stage3">(stage<256, blocks_in_stage<Layers, 2>, 2, Cardinality, WidthPerGroup, At, Padding>) |
    nn::scope<"stage4">(stage<512, blocks_in_stage<Layers, 3>, 2, Cardinality, WidthPerGroup, At, Padding>) |
    nn::global_avg_pool | nn::dense<Classes>;

/// ResNeXt-101 as `resnext_graph` builds it, its blocks over `Stages` pipeline stages (1, 2 or 4
/// IPUs, `ipu::on<k>`), about as many on each: its 33 bottleneck blocks compute about the same
/// (a stage halves the image and doubles the channels), so the stem, stage1, stage2 and 9 of
/// stage3's 23 blocks go on IPU 0 and the rest on IPU 1; over four, 8, 8, 8 and 9 blocks.
template <class DType, int Batch, int Stages, int Cardinality, int WidthPerGroup, int InChannels, int Classes,
          int ImageSize, stride_at At, padding_convention Padding>
inline constexpr auto resnext101_staged_graph = [] {
  constexpr auto in = input<DType, Batch, ImageSize, ImageSize, InChannels>;
  constexpr auto front = nn::scope<"stem">(resnet_stem<Padding>) |
                         nn::scope<"stage1">(stage<64, 3, 1, Cardinality, WidthPerGroup, At, Padding>) |
                         nn::scope<"stage2">(stage<128, 4, 2, Cardinality, WidthPerGroup, At, Padding>);
  constexpr auto first3 = first_block<256, 2, Cardinality, WidthPerGroup, At, Padding>;
  constexpr auto head = nn::scope<"stage4">(stage<512, 3, 2, Cardinality, WidthPerGroup, At, Padding>) |
                        nn::global_avg_pool | nn::dense<Classes>;
  constexpr int C = Cardinality, W = WidthPerGroup;
  if constexpr (Stages == 2) {
    return in | ipu::on<0>(front | nn::scope<"stage3">(first3 | identity_blocks<256, 8, C, W, At, Padding> |
                                                      ipu::on<1>(identity_blocks<256, 14, C, W, At, Padding>))) |
           ipu::on<1>(head);
  } else {
    return in | ipu::on<0>(front | nn::scope<"stage3">(first3 | ipu::on<1>(identity_blocks<256, 8, C, W, At, Padding>) |
                                                      ipu::on<2>(identity_blocks<256, 8, C, W, At, Padding>) |
                                                      ipu::on<3>(identity_blocks<256, 6, C, W, At, Padding>))) |
           ipu::on<3>(head);
  }
}();

/// A basic block's body: two 3x3 convs, the first strided.
template <int Out, int Stride, padding_convention Padding>
inline constexpr auto basic_body = padded_as<Padding>(nn::conv<Out, 3, Stride>) | nn::batch_norm | nn::relu |
                                   padded_as<Padding>(nn::conv<Out, 3>) | nn::batch_norm;

/// A stage of basic blocks; its first has a projection shortcut when it strides.
template <int Planes, int Blocks, int Stride, padding_convention Padding>
inline constexpr auto basic_stage = [] {
  constexpr auto rest = nn::repeat<Blocks - 1>(nn::residual(basic_body<Planes, 1, Padding>) | nn::relu);
  if constexpr (Stride == 1) {
    return nn::residual(basic_body<Planes, 1, Padding>) | nn::relu | rest;
  } else {
    return nn::residual(basic_body<Planes, Stride, Padding>, nn::conv<Planes, 1, Stride> | nn::batch_norm) |
           nn::relu | rest;
  }
}();

template <class DType, int Batch, int Layers, int InChannels, int Classes, int ImageSize, padding_convention Padding>
inline constexpr auto resnet_basic_graph =
    input<DType, Batch, ImageSize, ImageSize, InChannels> | nn::scope<"stem">(resnet_stem<Padding>) |
    nn::scope<"stage1">(basic_stage<64, Layers == 18 ? 2 : 3, 1, Padding>) |
    nn::scope<"stage2">(basic_stage<128, Layers == 18 ? 2 : 4, 2, Padding>) |
    nn::scope<"stage3">(basic_stage<256, Layers == 18 ? 2 : 6, 2, Padding>) |
    nn::scope<"stage4">(basic_stage<512, Layers == 18 ? 2 : 3, 2, Padding>) |
    nn::global_avg_pool | nn::dense<Classes>;

}  // namespace detail

/// ResNet of basic blocks (18 or 34 layers) as a graph type, padded by `Padding`.
template <ElementType DType, int Batch, int Layers, int InChannels = 3, int Classes = 1000, int ImageSize = 224,
          padding_convention Padding = padding_convention::tensorflow>
  requires(Layers == 18 || Layers == 34) && (Batch > 0)
using resnet_basic = std::remove_cvref_t<
    decltype(detail::resnet_basic_graph<DType, Batch, Layers, InChannels, Classes, ImageSize, Padding>)>;

/// ResNet-18 (torchvision's `resnet18` with `padding_convention::pytorch`): 11,689,512
/// parameters at 3 input channels.
template <ElementType DType, int Batch, int InChannels = 3, padding_convention Padding = padding_convention::tensorflow>
using resnet18 = resnet_basic<DType, Batch, 18, InChannels, 1000, 224, Padding>;
/// ResNet-34 (torchvision's `resnet34` with `padding_convention::pytorch`): 21,797,672
/// parameters at 3 input channels.
template <ElementType DType, int Batch, int InChannels = 3, padding_convention Padding = padding_convention::tensorflow>
using resnet34 = resnet_basic<DType, Batch, 34, InChannels, 1000, 224, Padding>;

/// ResNeXt (ResNet when `Cardinality == 1` and `WidthPerGroup == 64`) as a graph type, padded
/// by `Padding`.
template <ElementType DType, int Batch, int Layers, int Cardinality, int WidthPerGroup, int InChannels = 3,
          int Classes = 1000, int ImageSize = 224, stride_at At = stride_at::grouped_conv,
          padding_convention Padding = padding_convention::tensorflow>
  requires(Layers == 50 || Layers == 101 || Layers == 152) && (Batch > 0) && (Cardinality > 0) &&
          (WidthPerGroup > 0)
using resnext = std::remove_cvref_t<decltype(detail::resnext_graph<DType, Batch, Layers, Cardinality, WidthPerGroup,
                                                                   InChannels, Classes, ImageSize, At, Padding>)>;

/// ResNet-50 (torchvision's `resnet50` with `padding_convention::pytorch`): 25,557,032
/// parameters at 3 input channels.
template <ElementType DType, int Batch, int InChannels = 3, padding_convention Padding = padding_convention::tensorflow>
using resnet50 = resnext<DType, Batch, 50, 1, 64, InChannels, 1000, 224, stride_at::grouped_conv, Padding>;
/// ResNet-101.
template <ElementType DType, int Batch, int InChannels = 3, padding_convention Padding = padding_convention::tensorflow>
using resnet101 = resnext<DType, Batch, 101, 1, 64, InChannels, 1000, 224, stride_at::grouped_conv, Padding>;
/// ResNet-152.
template <ElementType DType, int Batch, int InChannels = 3, padding_convention Padding = padding_convention::tensorflow>
using resnet152 = resnext<DType, Batch, 152, 1, 64, InChannels, 1000, 224, stride_at::grouped_conv, Padding>;
/// ResNeXt-50 32x4d: 25,028,904 parameters at 3 input channels.
template <ElementType DType, int Batch, int InChannels = 3, padding_convention Padding = padding_convention::tensorflow>
using resnext50_32x4d = resnext<DType, Batch, 50, 32, 4, InChannels, 1000, 224, stride_at::grouped_conv, Padding>;
/// ResNeXt-101 32x4d, the network of the TensorFlow inference seed (which uses 4 input channels).
template <ElementType DType, int Batch, int InChannels = 3, padding_convention Padding = padding_convention::tensorflow>
using resnext101_32x4d = resnext<DType, Batch, 101, 32, 4, InChannels, 1000, 224, stride_at::grouped_conv, Padding>;
/// ResNeXt-101 32x4d as pipeline stages over `Stages` IPUs (1, 2 or 4), about as many of its
/// bottleneck blocks on each (see `detail::resnext101_staged_graph`): the same layers, paths
/// and weights as `resnext101_32x4d`, placed with `ipu::on<k>`, for pipelined training.
template <ElementType DType, int Batch, int Stages, int InChannels = 3, int ImageSize = 224,
          padding_convention Padding = padding_convention::tensorflow>
  requires(Stages == 1 || Stages == 2 || Stages == 4) && (Batch > 0)
using resnext101_32x4d_stages = std::conditional_t<
    Stages == 1, resnext<DType, Batch, 101, 32, 4, InChannels, 1000, ImageSize, stride_at::grouped_conv, Padding>,
    std::remove_cvref_t<decltype(detail::resnext101_staged_graph<DType, Batch, (Stages == 1 ? 2 : Stages), 32, 4, InChannels, 1000,
                                                                 ImageSize, stride_at::grouped_conv, Padding>)>>;

}  // namespace ipu::models
