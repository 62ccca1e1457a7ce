// The model zoo against published counts (torchvision's model documentation, the ResNeXt paper) and
// against a closed-form reference written here, independent of the graph layer.
#include <ipu/ipu.hpp>

#include <catch2/catch.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>

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
// ResNet-18 and -34 per torchvision: basic blocks, a projection where a stage strides.
constexpr counts basic_reference(int layers, int64_t in_channels, int64_t classes, int64_t image, int64_t batch) {
  const std::array<int, 4> blocks = layers == 18 ? std::array<int, 4>{2, 2, 2, 2} : std::array<int, 4>{3, 4, 6, 3};
  counts c;
  auto conv = [&](int64_t k, int64_t cin, int64_t cout, int64_t out_hw) {
    c.params += k * k * cin * cout;
    c.macs += batch * out_hw * out_hw * cout * k * k * cin;
  };
  int64_t hw = (image + 1) / 2;
  conv(7, in_channels, 64, hw);
  c.params += 2 * 64;
  hw = (hw + 1) / 2;
  int64_t ch = 64;
  for (int s = 0; s < 4; ++s) {
    const int64_t planes = int64_t{64} << s;
    for (int b = 0; b < blocks[static_cast<std::size_t>(s)]; ++b) {
      const int64_t stride = (b == 0 && s > 0) ? 2 : 1;
      const int64_t out_hw = (hw + stride - 1) / stride;
      conv(3, ch, planes, out_hw);
      conv(3, planes, planes, out_hw);
      c.params += 2 * 2 * planes;
      if (stride == 2) {
        conv(1, ch, planes, out_hw);
        c.params += 2 * planes;
      }
      hw = out_hw;
      ch = planes;
    }
  }
  c.params += ch * classes + classes;
  c.macs += batch * ch * classes;
  return c;
}

// MobileNetV2 and EfficientNet-B0: a 3x3/2 stem to 32 channels, stages of inverted residuals
// (expansion t, kernel k, stride s, channels, blocks n), a 1x1 head to 1280 and a classifier;
// EfficientNet's blocks squeeze-and-excite to a quarter of their input channels.
struct stage { int64_t t, k, s, out, n; };

constexpr counts inverted_reference(const std::array<stage, 7>& stages, bool squeeze_excite, int64_t in_channels,
                                    int64_t classes, int64_t image, int64_t batch) {
  counts c;
  auto conv = [&](int64_t k, int64_t cin, int64_t cout, int64_t groups, int64_t out_hw) {
    c.params += k * k * cin / groups * cout + 2 * cout;  // and its batch norm
    c.macs += batch * out_hw * out_hw * cout * k * k * cin / groups;
  };
  int64_t hw = (image + 1) / 2;
  conv(3, in_channels, 32, 1, hw);
  int64_t ch = 32;
  for (const auto& [t, k, s, out, n] : stages)
    for (int64_t i = 0; i < n; ++i) {
      const int64_t stride = i == 0 ? s : 1, out_hw = (hw + stride - 1) / stride, hidden = ch * t;
      if (t != 1) conv(1, ch, hidden, 1, hw);
      conv(k, hidden, hidden, hidden, out_hw);
      if (squeeze_excite) {
        const int64_t squeezed = ch / 4 > 1 ? ch / 4 : 1;
        c.params += hidden * squeezed + squeezed + squeezed * hidden + hidden;  // two 1x1 convs with biases
        c.macs += 2 * batch * hidden * squeezed;
      }
      conv(1, hidden, out, 1, out_hw);
      hw = out_hw;
      ch = out;
    }
  conv(1, ch, 1280, 1, hw);
  c.params += 1280 * classes + classes;
  c.macs += batch * 1280 * classes;
  return c;
}

// MobileNetV2 per the paper's table 2 and torchvision.
constexpr counts mobilenet_v2_reference(int64_t in_channels, int64_t classes, int64_t image, int64_t batch) {
  constexpr std::array<stage, 7> stages{{{1, 3, 1, 16, 1}, {6, 3, 2, 24, 2}, {6, 3, 2, 32, 3}, {6, 3, 2, 64, 4},
                                         {6, 3, 1, 96, 3}, {6, 3, 2, 160, 3}, {6, 3, 1, 320, 1}}};
  return inverted_reference(stages, false, in_channels, classes, image, batch);
}

// EfficientNet-B0 per the paper's table 1 and torchvision.
constexpr counts efficientnet_b0_reference(int64_t in_channels, int64_t classes, int64_t image, int64_t batch) {
  constexpr std::array<stage, 7> stages{{{1, 3, 1, 16, 1}, {6, 3, 2, 24, 2}, {6, 5, 2, 40, 2}, {6, 3, 2, 80, 3},
                                         {6, 5, 1, 112, 3}, {6, 5, 2, 192, 4}, {6, 3, 1, 320, 1}}};
  return inverted_reference(stages, true, in_channels, classes, image, batch);
}
}  // namespace

TEST_CASE("EfficientNet-B0 has torchvision's 5,288,548 parameters and ~0.39 G MACs", "[models]") {
  using G = m::efficientnet_b0<ipu::f32, 1>;
  STATIC_REQUIRE(ipu::param_count_v<G> == 5'288'548);  // torchvision: 0.39 GFLOPS (multiply-adds)
  STATIC_REQUIRE(ipu::mac_count_v<G> > 385'000'000 && ipu::mac_count_v<G> < 395'000'000);
  constexpr counts ref = efficientnet_b0_reference(3, 1000, 224, 1), small = efficientnet_b0_reference(4, 10, 96, 2);
  STATIC_REQUIRE(ipu::param_count_v<G> == ref.params);
  STATIC_REQUIRE(ipu::mac_count_v<G> == ref.macs);
  using small_t = m::efficientnet_b0<ipu::f16, 2, 4, 10, 96>;
  STATIC_REQUIRE(ipu::param_count_v<small_t> == small.params);
  STATIC_REQUIRE(ipu::mac_count_v<small_t> == small.macs);
  constexpr auto& t = ipu::node_table_v<G>;
  STATIC_REQUIRE(t[ipu::find_node(t, "stem.silu1")].out == ipu::nhwc(1, 112, 112, 32));
  STATIC_REQUIRE(t[ipu::find_node(t, "stage2.block1.se.multiply1")].out == ipu::nhwc(1, 56, 56, 144));
  STATIC_REQUIRE(t[ipu::find_node(t, "stage2.block1.se.multiply1.branch2.conv1")].out == ipu::nhwc(1, 1, 1, 6));
  STATIC_REQUIRE(t[ipu::find_node(t, "stage3.conv2")].layer.kernel == 5);  // depthwise 5x5, stride 2
  STATIC_REQUIRE(t[ipu::find_node(t, "stage3.conv2")].out == ipu::nhwc(1, 28, 28, 144));
  STATIC_REQUIRE(t[ipu::find_node(t, "stage6.block3.add")].out == ipu::nhwc(1, 7, 7, 192));
  STATIC_REQUIRE(t[ipu::find_node(t, "head.conv1")].out == ipu::nhwc(1, 7, 7, 1280));
}

TEST_CASE("ResNet-18 and ResNet-34 have torchvision's parameters and MACs", "[models]") {
  using r18 = m::resnet18<ipu::f32, 1>;
  using r34 = m::resnet34<ipu::f32, 1>;
  STATIC_REQUIRE(ipu::param_count_v<r18> == 11'689'512);  // torchvision: 1.81 GFLOPS (multiply-adds)
  STATIC_REQUIRE(ipu::mac_count_v<r18> > 1'805'000'000 && ipu::mac_count_v<r18> < 1'820'000'000);
  STATIC_REQUIRE(ipu::param_count_v<r34> == 21'797'672);  // torchvision: 3.66 GFLOPS
  STATIC_REQUIRE(ipu::mac_count_v<r34> > 3'655'000'000 && ipu::mac_count_v<r34> < 3'670'000'000);
  constexpr counts ref18 = basic_reference(18, 3, 1000, 224, 1), ref34 = basic_reference(34, 4, 10, 64, 3);
  STATIC_REQUIRE(ipu::param_count_v<r18> == ref18.params);
  STATIC_REQUIRE(ipu::mac_count_v<r18> == ref18.macs);
  using small34 = m::resnet_basic<ipu::f16, 3, 34, 4, 10, 64>;
  STATIC_REQUIRE(ipu::param_count_v<small34> == ref34.params);
  STATIC_REQUIRE(ipu::mac_count_v<small34> == ref34.macs);
  constexpr auto& t = ipu::node_table_v<r18>;
  STATIC_REQUIRE(t[ipu::find_node(t, "stage1.block2.add")].out == ipu::nhwc(1, 56, 56, 64));
  STATIC_REQUIRE(ipu::find_node(t, "stage1.block1.shortcut.conv1") == -1);  // stage 1 keeps its shape
  STATIC_REQUIRE(t[ipu::find_node(t, "stage2.block1.shortcut.conv1")].out == ipu::nhwc(1, 28, 28, 128));
  STATIC_REQUIRE(t[ipu::find_node(t, "stage4.block2.add")].out == ipu::nhwc(1, 7, 7, 512));
}

TEST_CASE("MobileNetV2 has torchvision's 3,504,872 parameters and ~300 M MACs", "[models]") {
  using G = m::mobilenet_v2<ipu::f32, 1>;
  STATIC_REQUIRE(ipu::param_count_v<G> == 3'504'872);  // torchvision: 0.30 GFLOPS; the paper: 300 M
  STATIC_REQUIRE(ipu::mac_count_v<G> > 299'000'000 && ipu::mac_count_v<G> < 302'000'000);
  constexpr counts ref = mobilenet_v2_reference(3, 1000, 224, 1), small = mobilenet_v2_reference(4, 10, 96, 2);
  STATIC_REQUIRE(ipu::param_count_v<G> == ref.params);
  STATIC_REQUIRE(ipu::mac_count_v<G> == ref.macs);
  using small_t = m::mobilenet_v2<ipu::f16, 2, 4, 10, 96>;
  STATIC_REQUIRE(ipu::param_count_v<small_t> == small.params);
  STATIC_REQUIRE(ipu::mac_count_v<small_t> == small.macs);
  constexpr auto& t = ipu::node_table_v<G>;
  STATIC_REQUIRE(t[ipu::find_node(t, "stem.relu6_1")].out == ipu::nhwc(1, 112, 112, 32));
  STATIC_REQUIRE(t[ipu::find_node(t, "stage2.block1.add")].out == ipu::nhwc(1, 56, 56, 24));
  STATIC_REQUIRE(t[ipu::find_node(t, "stage4.block3.add")].out == ipu::nhwc(1, 14, 14, 64));
  STATIC_REQUIRE(t[ipu::find_node(t, "stage6.conv2")].layer.groups == 576);  // depthwise, stride 2
  STATIC_REQUIRE(t[ipu::find_node(t, "stage6.conv2")].out == ipu::nhwc(1, 7, 7, 576));
  STATIC_REQUIRE(t[ipu::find_node(t, "head.conv1")].out == ipu::nhwc(1, 7, 7, 1280));
}

namespace {
constexpr auto pytorch = m::padding_convention::pytorch;

/// Whether `Pt` (PyTorch's padding) has `Tf`'s (SAME's) parameters, multiply-accumulates and
/// node shapes, with every window larger than 1x1 padded `(k - 1) / 2` on each side.
template <class Tf, class Pt>
constexpr bool same_model_padded_as_pytorch() {
  if (ipu::param_count_v<Tf> != ipu::param_count_v<Pt> || ipu::mac_count_v<Tf> != ipu::mac_count_v<Pt>) return false;
  const auto& tf = ipu::node_table_v<Tf>;
  const auto& pt = ipu::node_table_v<Pt>;
  if (tf.size() != pt.size()) return false;
  for (std::size_t j = 0; j < tf.size(); ++j) {
    if (!(tf[j].out == pt[j].out) || !tf[j].layer.pad.same) return false;
    const bool window = pt[j].kind == ipu::op_of<ipu::ops::conv> || pt[j].kind == ipu::op_of<ipu::ops::max_pool>;
    const ipu::hw k = pt[j].layer.kernel;
    const int ph = (k.h - 1) / 2, pw = (k.w - 1) / 2;
    const ipu::padding expected = window && k != ipu::hw{1, 1} ? ipu::explicit_padding(ph, ph, pw, pw) : ipu::padding{};
    if (!(pt[j].layer.pad == expected)) return false;
  }
  return true;
}
}  // namespace

TEST_CASE("With PyTorch's padding the zoo has the same shapes, parameters and MACs", "[models]") {
  STATIC_REQUIRE(same_model_padded_as_pytorch<m::resnet18<ipu::f32, 1>, m::resnet18<ipu::f32, 1, 3, pytorch>>());
  STATIC_REQUIRE(same_model_padded_as_pytorch<m::resnet50<ipu::f32, 1>, m::resnet50<ipu::f32, 1, 3, pytorch>>());
  STATIC_REQUIRE(same_model_padded_as_pytorch<m::mobilenet_v2<ipu::f32, 1>,
                                              m::mobilenet_v2<ipu::f32, 1, 3, 1000, 224, pytorch>>());
  STATIC_REQUIRE(same_model_padded_as_pytorch<m::efficientnet_b0<ipu::f32, 1>,
                                              m::efficientnet_b0<ipu::f32, 1, 3, 1000, 224, pytorch>>());
  // torchvision's stem: conv 7x7/2 padding 3, max pool 3x3/2 padding 1.
  constexpr auto& t = ipu::node_table_v<m::resnet18<ipu::f32, 1, 3, pytorch>>;
  STATIC_REQUIRE(t[ipu::find_node(t, "stem.conv1")].layer.pad == ipu::explicit_padding(3, 3, 3, 3));
  STATIC_REQUIRE(t[ipu::find_node(t, "stem.max_pool1")].layer.pad == ipu::explicit_padding(1, 1, 1, 1));
}

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

namespace {
// Whether graphs A and B have the same nodes: paths, ops, shapes and inputs, whatever their IPUs.
template <class A, class B>
constexpr bool same_layers = [] {
  if constexpr (ipu::node_count_v<A> != ipu::node_count_v<B>) {
    return false;
  } else {
    for (std::size_t j = 0; j < ipu::node_count_v<A>; ++j) {
      const ipu::node& a = ipu::node_table_v<A>[j];
      const ipu::node& b = ipu::node_table_v<B>[j];
      if (a.path.view() != b.path.view() || !(a.out == b.out) || !(a.kind == b.kind) || a.input_count != b.input_count)
        return false;
    }
    return true;
  }
}();

// The bottleneck blocks (their adds) on each IPU of G.
template <class G, int Ipus>
constexpr std::array<int, Ipus> blocks_per_ipu = [] {
  std::array<int, Ipus> blocks{};
  for (const ipu::node& n : ipu::node_table_v<G>)
    if (n.path.view().ends_with(".add")) ++blocks[static_cast<std::size_t>(n.ipu)];
  return blocks;
}();
}  // namespace

TEST_CASE("ResNeXt-101 32x4d as pipeline stages: the zoo's layers and paths, its 33 blocks shared out over the IPUs", "[models]") {
  using zoo = m::resnext101_32x4d<ipu::f16, 2>;
  using one = m::resnext101_32x4d_stages<ipu::f16, 2, 1>;
  using two = m::resnext101_32x4d_stages<ipu::f16, 2, 2>;
  using four = m::resnext101_32x4d_stages<ipu::f16, 2, 4>;
  STATIC_REQUIRE(std::is_same_v<zoo, one>);
  STATIC_REQUIRE(same_layers<zoo, two>);
  STATIC_REQUIRE(same_layers<zoo, four>);
  STATIC_REQUIRE(ipu::pipeline_stages_v<two> == 2);
  STATIC_REQUIRE(ipu::pipeline_stages_v<four> == 4);
  // IPU 0 also holds the stem; the last IPU stage4's three blocks and the classifier.
  STATIC_REQUIRE(blocks_per_ipu<two, 2> == std::array{16, 17});
  STATIC_REQUIRE(blocks_per_ipu<four, 4> == std::array{8, 8, 8, 9});
  constexpr auto& t = ipu::node_table_v<four>;
  STATIC_REQUIRE(t[ipu::find_node(t, "stage3.block1.add")].ipu == 0);
  STATIC_REQUIRE(t[ipu::find_node(t, "stage3.block2.conv1")].ipu == 1);
  STATIC_REQUIRE(t[ipu::find_node(t, "dense1")].ipu == 3);
  // The IPUs follow the table in order, as a pipeline needs.
  STATIC_REQUIRE(ipu::pipeline_out_of_order(t) == -1);
}
