// Shape inference against TensorFlow's SAME rule, out = ceil(in / stride), written out here.
#include <ipu/ipu.hpp>

#include <catch2/catch.hpp>

#include <array>
#include <cstdint>

namespace nn = ipu::nn;
using std::int64_t;

namespace {
constexpr int64_t same(int64_t in, int64_t stride) { return (in + stride - 1) / stride; }
}  // namespace

TEST_CASE("conv and pooling follow TensorFlow SAME padding, odd sizes included", "[graph][shape]") {
  constexpr auto g = ipu::input<ipu::f32, 3, 17, 9, 5> | nn::conv<8, 3, 2> | nn::max_pool<3, 2> |
                     nn::avg_pool<2, 3> | nn::conv<4, 1>;
  using G = decltype(g);
  constexpr auto& t = ipu::node_table_v<G>;
  static_assert(t.size() == 5);
  STATIC_REQUIRE(t[1].out == ipu::nhwc(3, same(17, 2), same(9, 2), 8));
  STATIC_REQUIRE(t[2].out == ipu::nhwc(3, same(same(17, 2), 2), same(same(9, 2), 2), 8));
  STATIC_REQUIRE(t[3].out == ipu::nhwc(3, same(same(same(17, 2), 2), 3), same(same(same(9, 2), 2), 3), 8));
  STATIC_REQUIRE(ipu::output_shape_v<G> == std::array<int64_t, 4>{3, 2, 1, 4});
  STATIC_REQUIRE(ipu::input_shape_v<G> == std::array<int64_t, 4>{3, 17, 9, 5});
  STATIC_REQUIRE(ipu::batch_size_v<G> == 3);
}

TEST_CASE("global pooling gives NC, dense and softmax keep it", "[graph][shape]") {
  constexpr auto g = ipu::input<ipu::f16, 2, 7, 7, 32> | nn::global_avg_pool | nn::dense<10> | nn::softmax;
  using G = decltype(g);
  STATIC_REQUIRE(ipu::output_shape_v<G> == std::array<int64_t, 2>{2, 10});
  STATIC_REQUIRE(ipu::node_table_v<G>[1].out == ipu::nc(2, 32));
  STATIC_REQUIRE(std::is_same_v<ipu::element_type_t<G>, ipu::f16>);
  STATIC_REQUIRE(ipu::node_table_v<G>[3].type == ipu::dtype::f16);
}

TEST_CASE("an empty graph outputs its input", "[graph][shape]") {
  using G = decltype(ipu::input<ipu::f32, 1, 2, 3, 4>);
  STATIC_REQUIRE(ipu::node_count_v<G> == 1);
  STATIC_REQUIRE(ipu::output_shape_v<G> == std::array<int64_t, 4>{1, 2, 3, 4});
  STATIC_REQUIRE(ipu::param_count_v<G> == 0);
}

TEST_CASE("parameters and MACs per layer", "[graph][params]") {
  // 10x10x6 input; conv 3x3, 12 filters, 3 groups, stride 2 -> 5x5x12.
  constexpr auto g = ipu::input<ipu::f32, 2, 10, 10, 6> | nn::conv<12, 3, 2, 3> | nn::batch_norm | nn::relu |
                     nn::global_avg_pool | nn::dense<7>;
  using G = decltype(g);
  constexpr auto& t = ipu::node_table_v<G>;
  STATIC_REQUIRE(t[1].params == 3 * 3 * (6 / 3) * 12);
  STATIC_REQUIRE(t[1].macs == 2 * 5 * 5 * 12 * (3 * 3 * 2));
  STATIC_REQUIRE(t[2].params == 2 * 12);
  STATIC_REQUIRE(t[3].params == 0);
  STATIC_REQUIRE(t[5].params == 12 * 7 + 7);
  STATIC_REQUIRE(t[5].macs == 2 * 12 * 7);
  STATIC_REQUIRE(ipu::param_count_v<G> == 216 + 24 + 91);
  STATIC_REQUIRE(ipu::mac_count_v<G> == 10800 + 168);
}
