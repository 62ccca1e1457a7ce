// The zoo's smaller models whole (one 32x32 image, 4 input channels and 10 classes, so that the
// test is quick) on one Mk2: ResNet-18 (basic blocks; ResNet-34 has more of the same),
// MobileNetV2 (inverted residuals, ReLU6, depthwise convolutions) and EfficientNet-B0 (MBConv
// blocks with SiLU and squeeze-and-excitation: a global average pooled in stages,
// convolutions with biases, a sigmoid, a broadcast multiply), under TensorFlow's SAME padding
// and PyTorch's symmetric padding (`padding_convention`). Each agrees with the plain-loop
// reference, both modes agree bit for bit, and faithful mode's memory is the plan's.

#include <catch2/catch.hpp>

#include "support/executor_support.hpp"

#include <ipu/ipu.hpp>

namespace m = ipu::models;
using ipu_test::check_engine;
constexpr auto torch_padding = m::padding_convention::pytorch;

TEST_CASE("ResNet-18 with PyTorch's padding in f32 matches the reference", "[models]") {
  check_engine<m::resnet_basic<ipu::f32, 1, 18, 4, 10, 32, torch_padding>, ipu::mk2>(1e-5);
}

TEST_CASE("MobileNetV2 in f32 matches the reference", "[models]") {
  check_engine<m::mobilenet_v2<ipu::f32, 1, 4, 10, 32>, ipu::mk2>(1e-5);
}

TEST_CASE("EfficientNet-B0 with PyTorch's padding in f32 matches the reference", "[models]") {
  check_engine<m::efficientnet_b0<ipu::f32, 1, 4, 10, 32, torch_padding>, ipu::mk2>(1e-5);
}
