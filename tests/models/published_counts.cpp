// The model zoo against published counts (torchvision's model documentation, the ResNeXt paper) and
// against a closed-form reference written here, independent of the graph layer.
#include <ipu/ipu.hpp>

#include <catch2/catch.hpp>

#include <array>
#include <cstdint>

using std::int64_t;
namespace m = ipu::models;

namespace {
struct counts { int64_t params = 0, macs = 0; };

// ResNe(X)t per torchvision, from formulas: stride on the grouped 3x3 conv (or on the first 1x1).
constexpr counts reference(int layers, int cardinality, int width_per_group, int64_t in_channels, int64_t classes,
                           int64_t image, int64_t batch, bool stride_on_first = false) {
  const std::array<int, 4> blocks = layers == 50    ? std::array<int, 4>{3, 4, 6, 3}
                                    : layers == 101 ? std::array<int, 4>{3, 4, 23, 3}
                                                    : std::array<int, 4>{3, 8, 36, 3};
  counts c;
  auto conv = [&](int64_t k, int64_t cin, int64_t cout, int64_t groups, int64_t out_hw) {
    c.params += k * k * cin / groups * cout;
    c.macs += batch * out_hw * out_hw * cout * k * k * cin / groups;
  };
  auto bn = [&](int64_t ch) { c.params += 2 * ch; };
  int64_t hw = (image + 1) / 2;  // stem conv 7x7/2
  conv(7, in_channels, 64, 1, hw);
  bn(64);
  hw = (hw + 1) / 2;  // max pool 3x3/2
  int64_t ch = 64;
  for (int s = 0; s < 4; ++s) {
    const int64_t planes = int64_t{64} << s;
    const int64_t width = planes * width_per_group / 64 * cardinality, out = 4 * planes;
    for (int b = 0; b < blocks[static_cast<std::size_t>(s)]; ++b) {
      const int64_t stride = (b == 0 && s > 0) ? 2 : 1;
      const int64_t out_hw = (hw + stride - 1) / stride;
      conv(1, ch, width, 1, stride_on_first ? out_hw : hw);
      bn(width);
      conv(3, width, width, cardinality, out_hw);
      bn(width);
      conv(1, width, out, 1, out_hw);
      bn(out);
      if (b == 0) {
        conv(1, ch, out, 1, out_hw);
        bn(out);
      }
      hw = out_hw;
      ch = out;
    }
  }
  c.params += ch * classes + classes;
  c.macs += batch * ch * classes;
  return c;
}
}  // namespace

TEST_CASE("ResNet-50 has torchvision's 25,557,032 parameters and ~4.09 G MACs", "[models]") {
  using G = m::resnet50<ipu::f32, 1>;
  STATIC_REQUIRE(ipu::param_count_v<G> == 25'557'032);
  STATIC_REQUIRE(ipu::mac_count_v<G> > 4'080'000'000 && ipu::mac_count_v<G> < 4'100'000'000);
  STATIC_REQUIRE(ipu::output_shape_v<G> == std::array<int64_t, 2>{1, 1000});
}

TEST_CASE("ResNeXt-50 32x4d has 25,028,904 parameters and ~4.23 G MACs", "[models]") {
  using G = m::resnext50_32x4d<ipu::f32, 1>;
  STATIC_REQUIRE(ipu::param_count_v<G> == 25'028'904);
  STATIC_REQUIRE(ipu::mac_count_v<G> > 4'220'000'000 && ipu::mac_count_v<G> < 4'280'000'000);
}

TEST_CASE("ResNeXt-101 32x4d has ~44.18 M parameters and ~8.0 G MACs per image", "[models]") {
  using G = m::resnext101_32x4d<ipu::f32, 1>;
  STATIC_REQUIRE(ipu::param_count_v<G> > 44'170'000 && ipu::param_count_v<G> < 44'190'000);
  STATIC_REQUIRE(ipu::mac_count_v<G> > 7'900'000'000 && ipu::mac_count_v<G> < 8'100'000'000);
}

TEST_CASE("the zoo matches the closed-form reference for every depth and width", "[models]") {
  constexpr auto r50 = reference(50, 1, 64, 3, 1000, 224, 1);
  constexpr auto x101 = reference(101, 32, 4, 3, 1000, 224, 1);
  constexpr auto r152 = reference(152, 1, 64, 3, 1000, 224, 2);
  constexpr auto seed = reference(101, 32, 4, 4, 1000, 224, 4);
  constexpr auto small = reference(50, 32, 4, 3, 10, 64, 2);
  STATIC_REQUIRE(ipu::param_count_v<m::resnet50<ipu::f32, 1>> == r50.params);
  STATIC_REQUIRE(ipu::mac_count_v<m::resnet50<ipu::f32, 1>> == r50.macs);
  STATIC_REQUIRE(ipu::param_count_v<m::resnext101_32x4d<ipu::f32, 1>> == x101.params);
  STATIC_REQUIRE(ipu::mac_count_v<m::resnext101_32x4d<ipu::f32, 1>> == x101.macs);
  STATIC_REQUIRE(ipu::param_count_v<m::resnet152<ipu::f16, 2>> == r152.params);
  STATIC_REQUIRE(ipu::mac_count_v<m::resnet152<ipu::f16, 2>> == r152.macs);
  STATIC_REQUIRE(ipu::param_count_v<m::resnext101_32x4d<ipu::f16, 4, 4>> == seed.params);
  STATIC_REQUIRE(ipu::mac_count_v<m::resnext101_32x4d<ipu::f16, 4, 4>> == seed.macs);
  using small_t = m::resnext<ipu::f32, 2, 50, 32, 4, 3, 10, 64>;
  STATIC_REQUIRE(ipu::param_count_v<small_t> == small.params);
  STATIC_REQUIRE(ipu::mac_count_v<small_t> == small.macs);
  STATIC_REQUIRE(ipu::output_shape_v<small_t> == std::array<int64_t, 2>{2, 10});
}

TEST_CASE("the seed's variant strides the first 1x1 conv: same parameters, fewer MACs", "[models]") {
  using seed_t = m::resnext<ipu::f16, 4, 101, 32, 4, 4, 1000, 224, m::stride_at::first_conv>;
  constexpr auto ref = reference(101, 32, 4, 4, 1000, 224, 4, true);
  STATIC_REQUIRE(ipu::param_count_v<seed_t> == ref.params);
  STATIC_REQUIRE(ipu::mac_count_v<seed_t> == ref.macs);
  STATIC_REQUIRE(ipu::param_count_v<seed_t> == ipu::param_count_v<m::resnext101_32x4d<ipu::f16, 4, 4>>);
  // with the stride on the first 1x1 conv the grouped conv runs at the reduced size: fewer MACs
  STATIC_REQUIRE(ipu::mac_count_v<seed_t> < ipu::mac_count_v<m::resnext101_32x4d<ipu::f16, 4, 4>>);
}

TEST_CASE("ResNeXt-101 stage shapes and block counts", "[models]") {
  using G = m::resnext101_32x4d<ipu::f16, 4, 4>;
  constexpr auto& t = ipu::node_table_v<G>;
  STATIC_REQUIRE(t.size() == 1 + 4 + 33 * 10 + 4 * 2 + 2);
  STATIC_REQUIRE(t[ipu::find_node(t, "stem.max_pool1")].out == ipu::nhwc(4, 56, 56, 64));
  STATIC_REQUIRE(t[ipu::find_node(t, "stage1.block3.add")].out == ipu::nhwc(4, 56, 56, 256));
  STATIC_REQUIRE(t[ipu::find_node(t, "stage2.block1.conv2")].out == ipu::nhwc(4, 28, 28, 256));
  STATIC_REQUIRE(t[ipu::find_node(t, "stage3.block23.add")].out == ipu::nhwc(4, 14, 14, 1024));
  STATIC_REQUIRE(ipu::find_node(t, "stage3.block24.add") == -1);
  STATIC_REQUIRE(t[ipu::find_node(t, "stage4.block3.conv2")].layer.groups == 32);
  STATIC_REQUIRE(t[ipu::find_node(t, "stage4.block3.add")].out == ipu::nhwc(4, 7, 7, 2048));
}
