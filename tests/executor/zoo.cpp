// The zoo's smaller models whole (one 32x32 image, 4 input channels and 10 classes, so that the
// test is quick) on one Mk2: ResNet-18 and ResNet-34 (basic blocks), MobileNetV2 (inverted
// residuals, ReLU6, depthwise convolutions) and EfficientNet-B0 (MBConv blocks with SiLU and
// squeeze-and-excitation: a global average pooled in stages, convolutions with biases, a
// sigmoid, a broadcast multiply). Each agrees with the plain-loop reference, both modes agree
// bit for bit, and faithful mode's memory is the plan's.

#include <catch2/catch.hpp>

#include "support/executor_support.hpp"

#include <ipu/ipu.hpp>

namespace m = ipu::models;
using ipu_test::check_engine;

TEST_CASE("ResNet-18 and ResNet-34 in f32 match the reference", "[models]") {
  check_engine<m::resnet_basic<ipu::f32, 1, 18, 4, 10, 32>, ipu::mk2>(1e-5);
  check_engine<m::resnet_basic<ipu::f32, 1, 34, 4, 10, 32>, ipu::mk2>(1e-5);
}

TEST_CASE("MobileNetV2 in f32 matches the reference", "[models]") {
  check_engine<m::mobilenet_v2<ipu::f32, 1, 4, 10, 32>, ipu::mk2>(1e-5);
}

TEST_CASE("EfficientNet-B0 in f32 and f16 matches the reference", "[models]") {
  check_engine<m::efficientnet_b0<ipu::f32, 1, 4, 10, 32>, ipu::mk2>(1e-5);
  check_engine<m::efficientnet_b0<ipu::f16, 1, 4, 10, 32>, ipu::mk2>(3e-2);
}
