// Flatten, reshape, global max pooling, leaky ReLU and dropout: their shape rules, summaries
// and paths, and nets of them in both modes against the independent reference, bit-identical
// between the modes. Flatten and reshape are tested both where their input is stored as it is
// (the graph input) and where a convolution stores it in channel blocks (the exchange
// reorders it).

#include <catch2/catch.hpp>

#include "support/executor_support.hpp"

#include <ipu/ipu.hpp>

#include <array>
#include <cstdint>
#include <string>

namespace nn = ipu::nn;

namespace {

template <class T>
constexpr auto flatten_net = ipu::input<T, 2, 6, 5, 8>
    | nn::conv<12, 3, 2>.with_bias() | nn::leaky_relu<0.2> | nn::dropout<0.3>
    | nn::concat(nn::flatten, nn::global_max_pool, nn::global_avg_pool)
    | nn::dropout<0.5> | nn::dense<10> | nn::leaky_relu<0.01>;
using flatten_f32 = decltype(flatten_net<ipu::f32>);
using flatten_f16 = decltype(flatten_net<ipu::f16>);

constexpr const auto& flatten_nodes = ipu::node_table_v<flatten_f32>;
// Dropout is the identity at inference: no node.
static_assert(ipu::node_count_v<flatten_f32> == 9);
static_assert(flatten_nodes[2].path.view() == "leaky_relu1" && flatten_nodes[2].layer.alpha == 0.2);
static_assert(flatten_nodes[3].path.view() == "concat1.branch1.flatten1" && flatten_nodes[3].out == ipu::nc(2, 3 * 3 * 12));
static_assert(flatten_nodes[4].path.view() == "concat1.branch2.global_max_pool1" && flatten_nodes[4].out == ipu::nc(2, 12));
static_assert(flatten_nodes[6].out == ipu::nc(2, 108 + 12 + 12));
static_assert(flatten_nodes[8].layer.alpha == 0.01);
static_assert(ipu::param_count_v<flatten_f32> == (3 * 3 * 8 * 12 + 12) + (132 * 10 + 10));
static_assert(nn::dropout_t<0.3>::rate == 0.3);

// Flatten straight from the input, whose storage is already NHWC, and of an NC tensor.
constexpr auto direct_net = ipu::input<ipu::f32, 3, 4, 2, 5> | nn::flatten | nn::dense<7> | nn::flatten;
using direct_t = decltype(direct_net);
static_assert(ipu::node_table_v<direct_t>[1].out == ipu::nc(3, 40) && ipu::output_shape_v<direct_t>[1] == 7);

// Reshape keeps each sample's values in NHWC order under another shape: a feature map read
// as another map, a dense layer's output as a map (a generator's first layer), a map as NC.
constexpr auto reshape_net = ipu::input<ipu::f32, 2, 4, 6, 3>
    | nn::conv<8, 3>.with_bias() | nn::reshape<6, 4, 8> | nn::conv<4, 3>   // [2, 6, 4, 4]
    | nn::flatten | nn::dense<24> | nn::reshape<2, 3, 4> | nn::conv<5, 1>  // [2, 2, 3, 5]
    | nn::reshape<30> | nn::relu | nn::reshape<1, 1, 30> | nn::reshape<30>;
using reshape_t = decltype(reshape_net);
constexpr const auto& reshape_nodes = ipu::node_table_v<reshape_t>;
static_assert(reshape_nodes[2].path.view() == "reshape1" && reshape_nodes[2].out == ipu::nhwc(2, 6, 4, 8));
static_assert(reshape_nodes[6].out == ipu::nhwc(2, 2, 3, 4) && reshape_nodes[8].out == ipu::nc(2, 30));
static_assert(reshape_nodes[10].out == ipu::nhwc(2, 1, 1, 30) && ipu::output_shape_v<reshape_t> == std::array<std::int64_t, 2>{2, 30});


}  // namespace

TEST_CASE("flatten, global max pooling, leaky ReLU and dropout, in both modes, against the reference") {
  ipu_test::check_engine<flatten_f32, ipu_test::small_target<16>>(1e-5);
  ipu_test::check_engine<flatten_f16, ipu_test::small_target<16>>(1e-2);
  ipu_test::check_engine<direct_t, ipu_test::small_target<8>>(1e-5);
}

TEST_CASE("reshape, in both modes, against the reference") {
  ipu_test::check_engine<reshape_t, ipu_test::small_target<16>>(1e-5);
}

TEST_CASE("the summary names a reshape's target") {
  CHECK(ipu_test::summary_column<nn::reshape_t<7, 7, 256>>() == " to 7x7x256");
  CHECK(ipu_test::summary_column<nn::reshape_t<1024>>() == " to 1024");
}

TEST_CASE("the flatten or reshape of a convolution's output reads it through the exchange, of the input in place") {
  constexpr auto& plan = ipu::plan_v<flatten_f32, ipu_test::small_target<16>>;
  CHECK(plan.nodes[3].step.kind == ipu::step_kind::remap);
  CHECK(ipu::plan_v<direct_t, ipu_test::small_target<8>>.nodes[1].step.kind != ipu::step_kind::remap);
  // A reshape reads its input the same way.
  CHECK(ipu::plan_v<reshape_t, ipu_test::small_target<16>>.nodes[2].step.kind == ipu::step_kind::remap);
}

TEST_CASE("leaky ReLU's slope is in the summary") {
  CHECK(ipu_test::summary_column<nn::leaky_relu_t<0.2>>() == " 0.2");
  CHECK(ipu_test::summary_column<nn::leaky_relu_t<0.01>>() == " 0.01");
}
