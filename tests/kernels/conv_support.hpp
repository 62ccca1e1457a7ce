// What the kernel tests of every instruction set share, none of it compiled for a particular one:
// the convolution shapes, seeded data, the double-precision reference (tests/support/reference.hpp)
// and the scalar path the fast kernels must reproduce bit for bit (`kernels::conv` per group,
// then the separate `affine`, `add` and `relu`, as the faithful executor runs them).
//
// Everything here is the same in the three translation units (their target flags are the same,
// only IPU_SIMD differs), so it may live in `ipu_kernels_test` itself; what calls
// `packed_conv` lives in conv_cases.hpp, in a namespace named after the instruction set.
#pragma once

#include "support/reference.hpp"

#include <ipu/core/dtype.hpp>
#include <ipu/kernels/conv.hpp>
#include <ipu/kernels/packed_conv.hpp>
#include <ipu/kernels/pointwise.hpp>
#include <ipu/ops/relu6.hpp>
#include <ipu/ops/silu.hpp>
#include <ipu/ops/unary.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace ipu_kernels_test {

using ipu::kernels::conv_shape;

/// `batch` images of `height` x `width` x `in` channels, a `kernel` convolution (`ipu::hw`: one
/// number for a square) to `out` channels, SAME padding.
constexpr conv_shape shape(std::int64_t height, std::int64_t width, std::int64_t in, std::int64_t out, ipu::hw kernel,
                           ipu::hw stride = 1, std::int64_t groups = 1, std::int64_t batch = 1) noexcept {
  return {.batch = batch,
          .in_height = height,
          .in_width = width,
          .in_channels = in,
          .out_channels = out,
          .kernel = kernel,
          .stride = stride,
          .groups = groups};
}

/// `s` with its taps `dilation` apart and padding `pad`.
constexpr conv_shape with(conv_shape s, ipu::hw dilation, ipu::padding pad = {}) noexcept {
  s.dilation = dilation;
  s.pad = pad;
  return s;
}

/// A shape and where it comes from, for failure messages.
struct named_shape {
  const char* what;
  conv_shape shape;
};

// ---- the shapes ---------------------------------------------------------------------------

/// Every distinct convolution of ResNet-50 and ResNeXt-101 32x4d at 224x224 (include/ipu/models/
/// resnext.hpp, as torchvision builds them, with the stride on the 3x3 conv, plus the 1x1 stride-2
/// convs of the variant with the stride on the first 1x1 conv, `stride_at::first_conv`, which the
/// TensorFlow seed runs), batch 1. Names are `stage.block conv`, block 0 being the one with the
/// stride and the projection shortcut; a shortcut of the same shape as another conv is listed once.
///
/// To keep the run time modest, layers on 56x56 and larger inputs run on 28x28 instead (the stem
/// on 28x28 instead of 224x224; the name gives the size in the network): the sizes stay even, so
/// each layer keeps its padding (the 7x7/2 stem pads 2 before and 3 after, a 3x3/2 pads 0 before
/// and 1 after) and its stride; odd sizes are in `odd_shapes`. Layers on 28x28 and smaller inputs
/// keep their size. Channel counts are never cut: they decide the panels, the lanes and the work
/// items. The reference dominates the run time (about 10 s for these shapes at -O2).
inline constexpr named_shape model_shapes[] = {
    // The stem, 224x224 -> 112x112 in the networks; 3 input channels (torchvision) and 4 (the seed).
    {"stem 7x7/2 3->64 (224x224 in the network)", shape(28, 28, 3, 64, 7, 2)},
    {"stem 7x7/2 4->64 (224x224 in the network)", shape(28, 28, 4, 64, 7, 2)},
    // ResNet-50, stage 1 on 56x56.
    {"resnet50 stage1 conv1 1x1 64->64 (56x56 in the network)", shape(28, 28, 64, 64, 1)},
    {"resnet50 stage1 conv2 3x3 64->64 (56x56 in the network)", shape(28, 28, 64, 64, 3)},
    {"resnet50 stage1 conv3 and projection 1x1 64->256 (56x56 in the network)", shape(28, 28, 64, 256, 1)},
    {"resnet50 stage1 conv1 1x1 256->64 (56x56 in the network)", shape(28, 28, 256, 64, 1)},
    // ResNet-50, stage 2: 56x56 -> 28x28.
    {"resnet50 stage2.0 conv1 1x1 256->128 (56x56 in the network)", shape(28, 28, 256, 128, 1)},
    {"resnet50 stage2.0 conv1 seed 1x1/2 256->128 (56x56 in the network)", shape(28, 28, 256, 128, 1, 2)},
    {"resnet50 stage2.0 conv2 3x3/2 128->128 (56x56 in the network)", shape(28, 28, 128, 128, 3, 2)},
    {"resnet50 stage2 conv2 3x3 128->128", shape(28, 28, 128, 128, 3)},
    {"resnet50 stage2 conv3 1x1 128->512", shape(28, 28, 128, 512, 1)},
    {"resnet50 stage2.0 projection 1x1/2 256->512 (56x56 in the network)", shape(28, 28, 256, 512, 1, 2)},
    {"resnet50 stage2 conv1 1x1 512->128", shape(28, 28, 512, 128, 1)},
    // ResNet-50, stage 3: 28x28 -> 14x14.
    {"resnet50 stage3.0 conv1 1x1 512->256", shape(28, 28, 512, 256, 1)},
    {"resnet50 stage3.0 conv1 seed 1x1/2 512->256", shape(28, 28, 512, 256, 1, 2)},
    {"resnet50 stage3.0 conv2 3x3/2 256->256", shape(28, 28, 256, 256, 3, 2)},
    {"resnet50 stage3 conv2 3x3 256->256", shape(14, 14, 256, 256, 3)},
    {"resnet50 stage3 conv3 1x1 256->1024", shape(14, 14, 256, 1024, 1)},
    {"resnet50 stage3.0 projection 1x1/2 512->1024", shape(28, 28, 512, 1024, 1, 2)},
    {"resnet50 stage3 conv1 1x1 1024->256", shape(14, 14, 1024, 256, 1)},
    // ResNet-50, stage 4: 14x14 -> 7x7.
    {"resnet50 stage4.0 conv1 1x1 1024->512", shape(14, 14, 1024, 512, 1)},
    {"resnet50 stage4.0 conv1 seed 1x1/2 1024->512", shape(14, 14, 1024, 512, 1, 2)},
    {"resnet50 stage4.0 conv2 3x3/2 512->512", shape(14, 14, 512, 512, 3, 2)},
    {"resnet50 stage4 conv2 3x3 512->512", shape(7, 7, 512, 512, 3)},
    {"resnet50 stage4 conv3 1x1 512->2048", shape(7, 7, 512, 2048, 1)},
    {"resnet50 stage4.0 projection 1x1/2 1024->2048", shape(14, 14, 1024, 2048, 1, 2)},
    {"resnet50 stage4 conv1 1x1 2048->512", shape(7, 7, 2048, 512, 1)},
    // The classifier of both networks: a dense layer is a 1x1 conv on a 1x1 image.
    {"classifier dense 2048->1000", shape(1, 1, 2048, 1000, 1)},
    // ResNeXt-101 32x4d, stage 1 on 56x56: 32 groups of 4 channels.
    {"resnext101 stage1 conv1 1x1 64->128 (56x56 in the network)", shape(28, 28, 64, 128, 1)},
    {"resnext101 stage1 conv2 3x3 128->128 32 groups (56x56 in the network)", shape(28, 28, 128, 128, 3, 1, 32)},
    {"resnext101 stage1 conv3 1x1 128->256 (56x56 in the network)", shape(28, 28, 128, 256, 1)},
    {"resnext101 stage1 conv1 1x1 256->128 (56x56 in the network)", shape(28, 28, 256, 128, 1)},
    // ResNeXt-101, stage 2: 56x56 -> 28x28, 32 groups of 8 channels.
    {"resnext101 stage2.0 conv1 1x1 256->256 (56x56 in the network)", shape(28, 28, 256, 256, 1)},
    {"resnext101 stage2.0 conv1 seed 1x1/2 256->256 (56x56 in the network)", shape(28, 28, 256, 256, 1, 2)},
    {"resnext101 stage2.0 conv2 3x3/2 256->256 32 groups (56x56 in the network)", shape(28, 28, 256, 256, 3, 2, 32)},
    {"resnext101 stage2 conv2 3x3 256->256 32 groups", shape(28, 28, 256, 256, 3, 1, 32)},
    {"resnext101 stage2 conv3 1x1 256->512", shape(28, 28, 256, 512, 1)},
    {"resnext101 stage2 conv1 1x1 512->256", shape(28, 28, 512, 256, 1)},
    // ResNeXt-101, stage 3: 28x28 -> 14x14, 32 groups of 16 channels.
    {"resnext101 stage3.0 conv1 1x1 512->512", shape(28, 28, 512, 512, 1)},
    {"resnext101 stage3.0 conv1 seed 1x1/2 512->512", shape(28, 28, 512, 512, 1, 2)},
    {"resnext101 stage3.0 conv2 3x3/2 512->512 32 groups", shape(28, 28, 512, 512, 3, 2, 32)},
    {"resnext101 stage3 conv2 3x3 512->512 32 groups", shape(14, 14, 512, 512, 3, 1, 32)},
    {"resnext101 stage3 conv3 1x1 512->1024", shape(14, 14, 512, 1024, 1)},
    {"resnext101 stage3 conv1 1x1 1024->512", shape(14, 14, 1024, 512, 1)},
    // ResNeXt-101, stage 4: 14x14 -> 7x7, 32 groups of 32 channels.
    {"resnext101 stage4.0 conv1 1x1 1024->1024", shape(14, 14, 1024, 1024, 1)},
    {"resnext101 stage4.0 conv1 seed 1x1/2 1024->1024", shape(14, 14, 1024, 1024, 1, 2)},
    {"resnext101 stage4.0 conv2 3x3/2 1024->1024 32 groups", shape(14, 14, 1024, 1024, 3, 2, 32)},
    {"resnext101 stage4 conv2 3x3 1024->1024 32 groups", shape(7, 7, 1024, 1024, 3, 1, 32)},
    {"resnext101 stage4 conv3 1x1 1024->2048", shape(7, 7, 1024, 2048, 1)},
    {"resnext101 stage4 conv1 1x1 2048->1024", shape(7, 7, 2048, 1024, 1)},
};

/// Shapes that stress the edges of the kernels' tiling: channel counts that are not a multiple
/// of any vector width (4, 8, 16 floats), partial panels and partial vectors of groups, tiny and
/// odd images, kernels larger than the image, every path for grouped convolutions, batches, and
/// runs of positions that are not a multiple of the register-tile rows (4 to 12).
inline constexpr named_shape odd_shapes[] = {
    // Channels not a multiple of the vector width, in and out.
    {"3x3 3->5 on 7x5", shape(7, 5, 3, 5, 3)},
    {"3x3 5->3 on 7x5", shape(7, 5, 5, 3, 3)},
    {"3x3 12->20 on 6x7", shape(6, 7, 12, 20, 3)},
    {"3x3 20->33 on 5x6", shape(5, 6, 20, 33, 3)},
    {"3x3 33->12 on 5x5", shape(5, 5, 33, 12, 3)},
    {"1x1 33->33 on 7x5", shape(7, 5, 33, 33, 1)},
    {"1x1 5->12 on 6x6", shape(6, 6, 5, 12, 1)},
    {"3x3 20->100 on 5x7 (several panels)", shape(5, 7, 20, 100, 3)},
    {"1x1 1->1 on 5x5", shape(5, 5, 1, 1, 1)},
    {"3x3 1->1 on 5x5", shape(5, 5, 1, 1, 3)},
    {"3x3 2->2 on 5x5 (one group of 2)", shape(5, 5, 2, 2, 3)},
    {"3x3 4->4 on 5x5", shape(5, 5, 4, 4, 3)},
    {"3x3 8->8 on 6x5 (one group of 8)", shape(6, 5, 8, 8, 3)},
    {"3x3 1->16 on 6x5", shape(6, 5, 1, 16, 3)},
    {"3x3 16->1 on 6x5", shape(6, 5, 16, 1, 3)},
    // 1x1 images under kernels larger than 1.
    {"3x3 on 1x1 12->20 batch 2", shape(1, 1, 12, 20, 3, 1, 1, 2)},
    {"3x3/2 on 1x1 4->6 2 groups batch 2", shape(1, 1, 4, 6, 3, 2, 2, 2)},
    {"5x5 on 1x1 8->8 8 groups", shape(1, 1, 8, 8, 5, 1, 8)},
    {"dense 33->10 batch 3", shape(1, 1, 33, 10, 1, 1, 1, 3)},
    // Stride 2 on odd sizes.
    {"3x3/2 on 7x7 8->16", shape(7, 7, 8, 16, 3, 2)},
    {"3x3/2 on 9x5 5->12", shape(9, 5, 5, 12, 3, 2)},
    {"1x1/2 on 9x5 12->20", shape(9, 5, 12, 20, 1, 2)},
    {"5x5/2 on 7x7 6->10", shape(7, 7, 6, 10, 5, 2)},
    {"7x7/2 on 9x9 3->8", shape(9, 9, 3, 8, 7, 2)},
    {"7x7/2 stem on 29x29 3->64", shape(29, 29, 3, 64, 7, 2)},
    {"7x7/2 stem on 29x28 4->64", shape(29, 28, 4, 64, 7, 2)},
    {"4x4/3 on 10x8 6->9 (even kernel)", shape(10, 8, 6, 9, 4, 3)},
    {"2x2 on 5x6 6->10 (padding after only)", shape(5, 6, 6, 10, 2)},
    {"3x3/4 on 9x10 5->7 (stride above the kernel)", shape(9, 10, 5, 7, 3, 4)},
    {"11x11/4 on 23x23 3->16", shape(23, 23, 3, 16, 11, 4)},
    // Kernels larger than the input.
    {"5x5 on 3x2 6->10 batch 2", shape(3, 2, 6, 10, 5, 1, 1, 2)},
    {"7x7 on 2x2 8->8", shape(2, 2, 8, 8, 7)},
    {"5x5/2 on 1x3 4->4 2 groups", shape(1, 3, 4, 4, 5, 2, 2)},
    {"7x7 on 5x5 20->20 5 groups", shape(5, 5, 20, 20, 7, 1, 5)},
    // Groups of 1, 2, 3, 4 and 8 channels, in lanes and in panels.
    {"depthwise 3x3 12 channels", shape(7, 5, 12, 12, 3, 1, 12)},
    {"depthwise 3x3/2 20 channels on 9x9", shape(9, 9, 20, 20, 3, 2, 20)},
    {"depthwise 3x3 40 channels", shape(5, 6, 40, 40, 3, 1, 40)},
    // Panels by work item: 5 panels of 16 lanes in items of 3 and 2, 9 of 8 in items of 3,
    // 18 of 4 in items of 4 and a last of 2.
    {"depthwise 3x3 72 channels on 7x6 batch 2", shape(7, 6, 72, 72, 3, 1, 72, 2)},
    {"3x3 24->24 12 groups of 2", shape(6, 5, 24, 24, 3, 1, 12)},
    {"3x3/2 20->20 10 groups of 2 on 7x7", shape(7, 7, 20, 20, 3, 2, 10)},
    {"3x3 12->12 4 groups of 3", shape(6, 6, 12, 12, 3, 1, 4)},
    {"3x3 32->32 8 groups of 4", shape(6, 7, 32, 32, 3, 1, 8)},
    {"3x3/2 40->40 10 groups of 4 on 9x9", shape(9, 9, 40, 40, 3, 2, 10)},
    {"3x3 64->64 8 groups of 8", shape(5, 5, 64, 64, 3, 1, 8)},
    {"3x3 24->24 3 groups of 8", shape(6, 6, 24, 24, 3, 1, 3)},
    {"3x3 48->48 3 groups of 16", shape(5, 5, 48, 48, 3, 1, 3)},
    {"1x1 32->32 8 groups of 4", shape(6, 6, 32, 32, 1, 1, 8)},
    {"4x4/3 on 10x8 16->16 8 groups of 2 (even kernel)", shape(10, 8, 16, 16, 4, 3, 8)},
    {"2x2 on 5x6 depthwise 8 channels (padding after only)", shape(5, 6, 8, 8, 2, 1, 8)},
    {"3x3/4 on 9x10 depthwise 8 channels (stride above the kernel)", shape(9, 10, 8, 8, 3, 4, 8)},
    {"1x1/2 on 9x5 12 groups of 2", shape(9, 5, 24, 24, 1, 2, 12)},
    {"5x5/2 on 11x7 32 groups of 4 batch 2", shape(11, 7, 128, 128, 5, 2, 32, 2)},
    // Different input and output channels per group.
    {"3x3 8->12 2 groups", shape(6, 6, 8, 12, 3, 1, 2)},
    {"3x3 16->8 4 groups", shape(5, 6, 16, 8, 3, 1, 4)},
    {"3x3 6->15 3 groups", shape(5, 5, 6, 15, 3, 1, 3)},
    {"3x3 8->32 8 groups (depthwise x4)", shape(5, 5, 8, 32, 3, 1, 8)},
    {"3x3 16->160 2 groups (several panels per group)", shape(5, 4, 16, 160, 3, 1, 2)},
    // Batches; work items that end inside an image.
    {"3x3 64->48 batch 3", shape(5, 5, 64, 48, 3, 1, 1, 3)},
    {"1x1 16->24 batch 2 on 3x5", shape(3, 5, 16, 24, 1, 1, 1, 2)},
    {"3x3 192->256 batch 3 (items split images)", shape(5, 5, 192, 256, 3, 1, 1, 3)},
    {"3x3 128->128 32 groups batch 2", shape(6, 6, 128, 128, 3, 1, 32, 2)},
    {"3x3 64->64 16 groups of 4 on 48x48 (work items split rows)", shape(48, 48, 64, 64, 3, 1, 16)},
    // Rows of 37 positions: 37 is 1 more than a multiple of 4, 6 and 12 and 5 more than one of 8.
    {"1x1 16->16 on 1x37", shape(1, 37, 16, 16, 1)},
    {"1x1 16->48 on 1x37", shape(1, 37, 16, 48, 1)},
    {"1x1 16->64 on 1x37", shape(1, 37, 16, 64, 1)},
    {"3x3 8->100 on 3x37", shape(3, 37, 8, 100, 3)},
    {"3x3 64->64 8 groups on 2x37", shape(2, 37, 64, 64, 3, 1, 8)},
    {"3x3 16->16 depthwise on 2x37", shape(2, 37, 16, 16, 3, 1, 16)},
    // Depthwise rows long enough for whole tiles, whose input vectors are loaded once per
    // kernel row (`depthwise_row_tile`): 3x3 and 5x5 at stride 1, 5x5 at stride 2, 3x3 at
    // stride 2 and dilation 2 (taps a stride apart); with a partial last vector, and rows that
    // end in fewer positions than a tile.
    {"depthwise 3x3 128 channels on 9x11", shape(9, 11, 128, 128, 3, 1, 128)},
    {"depthwise 5x5 72 channels on 12x10 batch 2", shape(12, 10, 72, 72, 5, 1, 72, 2)},
    {"depthwise 5x5/2 64 channels on 17x19", shape(17, 19, 64, 64, 5, 2, 64)},
    {"depthwise 3x3/2 dilation 2 64 channels on 17x17", with(shape(17, 17, 64, 64, 3, 2, 64), 2)},
    // Depthwise at stride 1 on rows whose edge columns are half of them or more, computed from a
    // zero-padded window in whole tiles (`run_depthwise_window`): a 5x5 on 7x7 with groups of
    // 4 vectors and a partial last group and vector, a 3x3 on rows of 4 and 3, dilation (the
    // taps a cell apart no more), padding other than SAME, and a kernel wider than the image.
    {"depthwise 5x5 100 channels on 7x7 batch 3 (padded window)", shape(7, 7, 100, 100, 5, 1, 100, 3)},
    {"depthwise 3x3 16 channels on 5x4 (padded window)", shape(5, 4, 16, 16, 3, 1, 16)},
    {"depthwise 3x3 72 channels on 9x3 batch 2 (padded window)", shape(9, 3, 72, 72, 3, 1, 72, 2)},
    {"depthwise 3x3 dilation 2 40 channels on 6x6 (padded window)", with(shape(6, 6, 40, 40, 3, 1, 40), 2)},
    {"depthwise 5x5 24 channels on 6x5, padding 0,4,1,3 (padded window)", with(shape(6, 5, 24, 24, 5, 1, 24), 1, ipu::padding{.same = false, .top = 0, .bottom = 4, .left = 1, .right = 3})},
    {"depthwise 7x7 64 channels on 3x3 (padded window)", shape(3, 3, 64, 64, 7, 1, 64)},
};

/// A representative few for f16 storage: grouped convs with 4 and 8 channels per group, 1x1
/// convs, the 7x7 stems, odd channel counts, batches.
inline constexpr named_shape f16_shapes[] = {
    {"resnext101 stage1 conv2 3x3 128->128 32 groups on 14x14", shape(14, 14, 128, 128, 3, 1, 32)},
    {"resnext101 stage2.0 conv2 3x3/2 256->256 32 groups on 28x28", shape(28, 28, 256, 256, 3, 2, 32)},
    {"resnext101 stage3 conv2 3x3 512->512 32 groups on 14x14", shape(14, 14, 512, 512, 3, 1, 32)},
    {"resnet50 stage1 conv3 1x1 64->256 on 14x14", shape(14, 14, 64, 256, 1)},
    {"resnet50 stage2.0 projection 1x1/2 256->512 on 14x14", shape(14, 14, 256, 512, 1, 2)},
    {"stem 7x7/2 3->64 on 28x28", shape(28, 28, 3, 64, 7, 2)},
    {"stem 7x7/2 4->64 on 29x29", shape(29, 29, 4, 64, 7, 2)},
    {"3x3 20->33 on 5x6", shape(5, 6, 20, 33, 3)},
    {"3x3/2 on 9x5 5->12", shape(9, 5, 5, 12, 3, 2)},
    {"depthwise 3x3/2 20 channels on 9x9", shape(9, 9, 20, 20, 3, 2, 20)},
    {"depthwise 3x3 128 channels on 9x11", shape(9, 11, 128, 128, 3, 1, 128)},
    {"depthwise 5x5/2 64 channels on 17x19", shape(17, 19, 64, 64, 5, 2, 64)},
    {"depthwise 5x5 100 channels on 7x7 batch 3 (padded window)", shape(7, 7, 100, 100, 5, 1, 100, 3)},
    {"3x3/2 20->20 10 groups of 2 on 7x7", shape(7, 7, 20, 20, 3, 2, 10)},
    {"3x3 8->12 2 groups batch 2", shape(6, 6, 8, 12, 3, 1, 2, 2)},
    {"3x3 192->256 batch 3 (items split images)", shape(5, 5, 192, 256, 3, 1, 1, 3)},
    {"1x1 16->24 batch 2 on 3x5", shape(3, 5, 16, 24, 1, 1, 1, 2)},
    {"3x3 128->128 32 groups batch 2", shape(6, 6, 128, 128, 3, 1, 32, 2)},
    {"1x1/2 128->200 on 11x13 batch 2 (every panel in each item of rows)", shape(11, 13, 128, 200, 1, 2, 1, 2)},
    {"1x1 1024->600 on 5x7 batch 2 (as many panels per item as half the L2 holds)", shape(5, 7, 1024, 600, 1, 1, 1, 2)},
};

/// `1x28x28x64 -> 256, kernel 1x1, stride 2x2, groups 1`, then the dilation and the padding
/// when they are not the defaults.
inline std::string describe(const conv_shape& s) {
  std::ostringstream os;
  os << s.batch << 'x' << s.in_height << 'x' << s.in_width << 'x' << s.in_channels << " -> " << s.out_channels
     << ", kernel " << s.kernel.h << 'x' << s.kernel.w << ", stride " << s.stride.h << 'x' << s.stride.w << ", groups "
     << s.groups;
  if (s.dilation != ipu::hw{1, 1}) os << ", dilation " << s.dilation.h << 'x' << s.dilation.w;
  if (!s.pad.same) os << ", pad " << s.pad.top << ',' << s.pad.bottom << ',' << s.pad.left << ',' << s.pad.right;
  return os.str();
}

// ---- data ---------------------------------------------------------------------------------

/// Uniform values in [-1, 1) with 24 random bits, the same on every compiler and standard
/// library (the bits of mt19937 are specified; std::uniform_real_distribution's are not).
class uniform_source {
 public:
  explicit uniform_source(std::uint32_t seed) : bits_(seed) {}
  float operator()() { return static_cast<float>(bits_() >> 8) * 0x1p-23f - 1.0f; }

 private:
  std::mt19937 bits_;
};

/// The steps fused after the convolution (see `ipu::kernels::epilogue`).
struct fusion {
  bool bias = false, affine = false, residual = false, relu = false;
  bool relu6 = false;  ///< instead of `relu`; the scale is then 8 times larger, so that outputs pass 6
  bool silu = false;   ///< instead of `relu`
};
inline constexpr fusion no_fusion{};
inline constexpr fusion full_fusion{true, true, true, true};

inline std::string describe(const fusion& f) {
  std::string s;
  for (const auto& [on, name] : {std::pair{f.bias, "bias"}, std::pair{f.affine, "scale and shift"},
                                 std::pair{f.residual, "residual"}, std::pair{f.relu, "relu"}, std::pair{f.relu6, "relu6"},
                                 std::pair{f.silu, "silu"}})
    if (on) s += s.empty() ? name : std::string(" + ") + name;
  return s.empty() ? "no epilogue" : "epilogue: " + s;
}

/// One convolution's operands, seeded: input and residual in [-1, 1), weights scaled by
/// `1 / sqrt(fan in)` so that outputs stay near 1 (and in f16's range), bias and shift in
/// [-0.5, 0.5), scale in [0.5, 1.5).
template <class T>
struct problem {
  conv_shape shape;
  std::vector<T> input;           // (N,H,W,C)
  std::vector<float> kernel;      // (K,K,C/G,O)
  std::vector<float> bias;        // (O)
  std::vector<float> scale;       // (O)
  std::vector<float> shift;       // (O)
  std::vector<T> residual;        // (N,OH,OW,O)

  std::size_t outputs() const noexcept { return static_cast<std::size_t>(shape.positions() * shape.out_channels); }
};

template <class T>
problem<T> make_problem(const conv_shape& s, std::uint32_t seed) {
  uniform_source u(seed);
  problem<T> p{s, {}, {}, {}, {}, {}, {}};
  const auto n = [](std::int64_t x) { return static_cast<std::size_t>(x); };
  p.input.resize(n(s.batch * s.in_height * s.in_width * s.in_channels));
  for (T& x : p.input) x = static_cast<T>(u());
  const std::int64_t fan_in = s.kernel.area() * (s.in_channels / s.groups);
  const float weight_scale = std::sqrt(3.0f / static_cast<float>(fan_in));
  p.kernel.resize(n(fan_in * s.out_channels));
  for (float& w : p.kernel) w = u() * weight_scale;
  for (std::int64_t c = 0; c < s.out_channels; ++c) {
    p.bias.push_back(0.5f * u());
    p.scale.push_back(1.0f + 0.5f * u());
    p.shift.push_back(0.5f * u());
  }
  p.residual.resize(p.outputs());
  for (T& x : p.residual) x = static_cast<T>(u());
  return p;
}

/// The epilogue of `f` over `p`'s parameters.
template <class T>
ipu::kernels::epilogue<T> epilogue_of(const problem<T>& p, const fusion& f) {
  ipu::kernels::epilogue<T> e;
  if (f.bias) e.bias = p.bias.data();
  if (f.affine) {
    e.scale = p.scale.data();
    e.shift = p.shift.data();
  }
  if (f.residual) e.residual = p.residual.data();
  using kind = ipu::kernels::activation_kind;
  e.activation = f.silu ? kind::silu : f.relu6 ? kind::relu6 : f.relu ? kind::relu : kind::none;
  return e;
}

template <class T>
std::vector<double> as_double(const std::vector<T>& v) {
  std::vector<double> d(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) d[i] = static_cast<double>(static_cast<float>(v[i]));
  return d;
}

// ---- the two paths the fast kernels are checked against -------------------------------------

/// The independent reference in double: the convolution, then each step of `f` unrounded.
template <class T>
std::vector<double> reference(const problem<T>& p, const fusion& f) {
  namespace ref = ipu_test::ref;
  const conv_shape& s = p.shape;
  const auto i = [](std::int64_t x) { return static_cast<int>(x); };
  const int channels = i(s.out_channels);
  const ref::window win{s.kernel.h, s.kernel.w, s.stride.h, s.stride.w, s.dilation.h, s.dilation.w};
  const ref::padding pad{s.pad.same, s.pad.top, s.pad.bottom, s.pad.left, s.pad.right};
  ref::tensor y = ref::conv2d(as_double(p.input), i(s.batch), i(s.in_height), i(s.in_width), i(s.in_channels),
                              as_double(p.kernel), win, channels, i(s.groups), pad);
  const ref::tensor zeros(static_cast<std::size_t>(channels), 0.0), ones(static_cast<std::size_t>(channels), 1.0);
  // batch_norm with mean 0, variance 1 and epsilon 0 is exactly x * scale + shift.
  if (f.bias) y = ref::batch_norm(y, channels, ones, as_double(p.bias), zeros, ones, 0.0);
  if (f.affine) y = ref::batch_norm(y, channels, as_double(p.scale), as_double(p.shift), zeros, ones, 0.0);
  if (f.residual) y = ref::add(y, as_double(p.residual));
  if (f.relu) y = ref::relu(std::move(y));
  for (const auto& [on, op] : {std::pair{f.relu6, "relu6"}, std::pair{f.silu, "silu"}})
    if (on)
      for (double& v : y) v = ref::activation(op, v);
  return y;
}

/// The scalar kernels, as the faithful executor runs them: `kernels::conv` on each group's block
/// of weights (`[kh][kw][ci][co]`, the group's output channels contiguous) with the bias, then
/// `affine`, `add` and `relu` as separate layers, each rounding to `T`.
template <class T>
std::vector<T> scalar_path(const problem<T>& p, const fusion& f) {
  namespace kn = ipu::kernels;
  const conv_shape& s = p.shape;
  const std::int64_t cin = s.in_channels / s.groups, cout = s.out_channels / s.groups;
  const std::int64_t rows = s.kernel.area() * cin, positions = s.positions();
  const auto n = [](std::int64_t x) { return static_cast<std::size_t>(x); };
  std::vector<T> y(p.outputs());                          // (N,OH,OW,O)
  std::vector<float> block(n(rows * cout));                // (KH,KW,C/G,O/G)
  std::vector<float> partials(n(positions * cout));
  for (std::int64_t g = 0; g < s.groups; ++g) {
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < cout; ++c) block[n(r * cout + c)] = p.kernel[n(r * s.out_channels + g * cout + c)];
    const kn::image_view<T> in{p.input.data() + g * cin, 0, s.in_width * s.in_channels, s.in_channels};
    kn::conv<T, float, float>(s.geometry(), in, kn::weight_view<float>{block.data(), cin, cout}, cout,
                              f.bias ? p.bias.data() + g * cout : nullptr, 0, positions, partials.data(),
                              y.data() + g * cout, s.out_channels);
  }
  if (f.affine)
    for (std::int64_t q = 0; q < positions; ++q)
      kn::affine(y.data() + q * s.out_channels, y.data() + q * s.out_channels, s.out_channels, p.scale.data(),
                 p.shift.data());
  const auto count = static_cast<std::int64_t>(y.size());
  if (f.residual) kn::add(y.data(), p.residual.data(), y.data(), count);
  if (f.relu) kn::relu(y.data(), y.data(), count);
  if (f.relu6) ipu::ops::unary_kernel<ipu::ops::relu6>::apply(y.data(), y.data(), count, {});
  if (f.silu) ipu::ops::unary_kernel<ipu::ops::silu>::apply(y.data(), y.data(), count, {});
  return y;
}

// ---- comparisons ----------------------------------------------------------------------------

/// The largest relative error of `actual` against `expected`, values below a tenth of the
/// largest expected one compared against that tenth: as `ipu_test::check_described` of
/// tests/support/kernel_checks.hpp (not included here: it brings in the whole executor).
template <class T>
double scaled_error(const std::vector<double>& expected, const std::vector<T>& actual) {
  double largest = 0;
  for (double e : expected) largest = std::max(largest, std::abs(e));
  return ipu_test::ref::max_relative_error(expected, actual.data(), actual.size(), largest > 0 ? 0.1 * largest : 1.0);
}

/// The tolerance of `scaled_error` against the reference. f16 storage (every step rounded to
/// f16): 1e-2. f32: 1e-5 for sums of up to 256 products, then growing as the square root of
/// their number, as rounding errors add up in a random walk: the errors measured on the shapes
/// here are 1.5e-7 to 3e-7 times the square root of the fan in (1.7e-5 at 3x3x512).
template <class T>
double tolerance(const conv_shape& s) {
  if constexpr (std::is_same_v<T, float>) {
    const double fan_in = static_cast<double>(s.kernel.area() * (s.in_channels / s.groups));
    return 1e-5 * std::max(1.0, std::sqrt(fan_in / 256));
  } else {
    return 1e-2;
  }
}

/// How two outputs of the same shape differ bit for bit: `count` elements, the first at
/// `first`, described in `message` (position, channel, both values).
struct bit_difference {
  std::size_t count = 0;
  std::size_t first = 0;
  std::string message;
};

template <class T>
bit_difference compare_bits(std::span<const T> actual, std::span<const T> expected, std::int64_t channels) {
  bit_difference d;
  if (actual.size() != expected.size()) {
    d.count = std::max(actual.size(), expected.size());
    d.message = "sizes differ: " + std::to_string(actual.size()) + " and " + std::to_string(expected.size());
    return d;
  }
  for (std::size_t i = 0; i < actual.size(); ++i) {
    if (std::memcmp(&actual[i], &expected[i], sizeof(T)) == 0) continue;
    if (d.count++ == 0) d.first = i;
  }
  if (d.count > 0) {
    std::ostringstream os;
    const auto c = static_cast<std::size_t>(channels);
    os.precision(9);
    os << d.count << " of " << actual.size() << " outputs differ; the first at position " << d.first / c
       << ", channel " << d.first % c << ": " << static_cast<float>(actual[d.first]) << " instead of "
       << static_cast<float>(expected[d.first]);
    d.message = os.str();
  }
  return d;
}

}  // namespace ipu_kernels_test
