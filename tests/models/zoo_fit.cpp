// The zoo's smaller models fit one Mk2 at realistic inference batches (f16 with half partials,
// as Graphcore's inference benchmarks run), proved at compile time. The largest batches the
// planner fits (bisected over 1 to 1024): ResNet-18 210, ResNet-34 199, MobileNetV2 136,
// EfficientNet-B0 128 (its squeeze-and-excitation poolings reduce in stages over the tiles).
#include <ipu/ipu.hpp>

#include <catch2/catch.hpp>

namespace m = ipu::models;

namespace {
constexpr ipu::options half_partials{.partials = ipu::dtype::f16};
}  // namespace

TEST_CASE("ResNet-18, ResNet-34, MobileNetV2 and EfficientNet-B0 fit one Mk2 at batch 64", "[models]") {
  STATIC_REQUIRE(ipu::require_fit<m::resnet18<ipu::f16, 64>, ipu::mk2, half_partials>);
  STATIC_REQUIRE(ipu::require_fit<m::resnet34<ipu::f16, 64>, ipu::mk2, half_partials>);
  STATIC_REQUIRE(ipu::require_fit<m::mobilenet_v2<ipu::f16, 64>, ipu::mk2, half_partials>);
  STATIC_REQUIRE(ipu::require_fit<m::efficientnet_b0<ipu::f16, 64>, ipu::mk2, half_partials>);
  // Every layer's transients meet the default available memory proportion.
  STATIC_REQUIRE(ipu::plan_v<m::mobilenet_v2<ipu::f16, 64>, ipu::mk2, half_partials>.warnings == 0);
  STATIC_REQUIRE(ipu::plan_v<m::efficientnet_b0<ipu::f16, 64>, ipu::mk2, half_partials>.warnings == 0);
}
