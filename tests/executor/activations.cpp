// The element-wise activations (relu6, hard_sigmoid, hard_swish, silu, gelu, gelu_tanh, tanh):
// their shape rule and paths, a net of all of them in both modes against the independent
// reference (double precision, written from the published definitions), bit-identical between
// the modes, and each function's values at points that pin its definition down.

#include <catch2/catch.hpp>

#include "support/executor_support.hpp"

#include <ipu/ipu.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace nn = ipu::nn;

namespace {

template <class T>
constexpr auto activation_net = ipu::input<T, 2, 6, 6, 8>
    | nn::conv<16, 3> | nn::batch_norm | nn::relu6
    | nn::conv<16, 1> | nn::hard_swish
    | nn::multiply(nn::identity, nn::conv<16, 1> | nn::hard_sigmoid)
    | nn::conv<16, 3, 1, 4> | nn::silu
    | nn::conv<16, 1> | nn::gelu | nn::tanh | nn::gelu_tanh | nn::relu6
    | nn::global_avg_pool | nn::dense<10> | nn::softmax;
using activations_f32 = decltype(activation_net<ipu::f32>);
using activations_f16 = decltype(activation_net<ipu::f16>);

constexpr const auto& activation_nodes = ipu::node_table_v<activations_f32>;
static_assert(ipu::output_shape_v<activations_f32> == std::array<std::int64_t, 2>{2, 10});
// A name that ends in a digit takes a `_` before its number.
static_assert(activation_nodes[3].path.view() == "relu6_1" && activation_nodes[3].kind == ipu::op_of<ipu::ops::relu6>);
static_assert(activation_nodes[5].path.view() == "hard_swish1");
static_assert(activation_nodes[7].path.view() == "multiply1.branch2.hard_sigmoid1");
static_assert(activation_nodes[10].path.view() == "silu1");
static_assert(activation_nodes[12].path.view() == "gelu1" && activation_nodes[13].path.view() == "tanh1");
static_assert(activation_nodes[14].path.view() == "gelu_tanh1");
static_assert(activation_nodes[13].out == activation_nodes[12].out);
static_assert(activation_nodes[15].path.view() == "relu6_2");  // not after a convolution: a step of its own
// Parameters: convs 3x3x8x16, 1x1 16x16 twice, 3x3x4x16, 1x1 16x16; batch norm 2x16; dense
// 16x10 + 10; the activations none.
static_assert(ipu::param_count_v<activations_f32> == 1152 + 256 + 256 + 576 + 256 + 32 + 170);

/// Runs `Layer` alone on `values` (f32, faithful mode) and returns its outputs.
template <class Layer>
std::vector<float> outputs_of(const std::array<float, 12>& values) {
  using net = decltype(ipu::input<ipu::f32, 1, 1, 1, 12> | Layer{});
  ipu::engine<net, ipu_test::small_target<4>> e{ipu::weights<net>{}, {ipu::execution_mode::faithful, 1}};
  ipu::input_tensor_t<net> x;
  for (std::size_t k = 0; k < values.size(); ++k) x.data()[k] = values[k];
  const auto y = e.infer(x);
  return {y.data(), y.data() + y.size()};
}

/// `Layer` at `values` against the definition, to 4e-7 of the larger of 1 and the value: an f32
/// rounding or two in each of the few operations (GELU's negative tail is checked apart, to its
/// own precision).
template <class Layer>
void check_values(const std::array<float, 12>& values) {
  const std::string_view op = ipu::name_of(ipu::op_of<typename Layer::op_type>);
  const std::vector<float> y = outputs_of<Layer>(values);
  for (std::size_t k = 0; k < values.size(); ++k) {
    const double expected = ipu_test::ref::activation(op, values[k]);
    INFO(op << "(" << values[k] << ") = " << y[k] << ", expected " << expected);
    CHECK(std::abs(y[k] - expected) <= 4e-7 * std::max(1.0, std::abs(expected)));
  }
}

}  // namespace

TEST_CASE("the activations in a net, in both modes, against the reference") {
  ipu_test::check_engine<activations_f32, ipu_test::small_target<16>>(1e-5);
  ipu_test::check_engine<activations_f16, ipu_test::small_target<16>>(1e-2);
}

TEST_CASE("each activation takes its published values") {
  // Around the kinks of the hard functions (-3, 0, 3, 6), both signs, and the tails.
  constexpr std::array<float, 12> at{-8.0f, -3.0f, -2.5f, -1.0f, -0.25f, 0.0f, 0.5f, 1.0f, 2.75f, 3.0f, 6.0f, 7.5f};
  check_values<nn::relu6_t>(at);
  check_values<nn::hard_sigmoid_t>(at);
  check_values<nn::hard_swish_t>(at);
  check_values<nn::silu_t>(at);
  check_values<nn::gelu_t>(at);
  check_values<nn::gelu_tanh_t>(at);
  check_values<nn::tanh_t>(at);
  check_values<nn::sigmoid_t>(at);
  // Exact values the definitions give.
  CHECK(outputs_of<nn::relu6_t>(at)[11] == 6.0f);
  CHECK(outputs_of<nn::hard_sigmoid_t>(at)[9] == 1.0f);
  CHECK(outputs_of<nn::hard_sigmoid_t>(at)[1] == 0.0f);
  CHECK(outputs_of<nn::hard_swish_t>(at)[10] == 6.0f);
  CHECK(outputs_of<nn::gelu_t>(at)[5] == 0.0f);
}

TEST_CASE("GELU and its tanh form keep their relative precision in the negative tail") {
  // Where 1 + erf or 1 + tanh would cancel in f32, leaving only an absolute error of about
  // 1e-7: GELU within 2e-6 of itself (Phi to 10 units in the last place, and x's product),
  // its tanh form within 2e-5 (e^{-2u} takes the roundings of u, relative 1e-7 times 2u: 49
  // at x = -8).
  constexpr std::array<float, 12> at{-1.5f, -2.0f, -3.0f, -4.0f, -5.0f, -6.0f, -7.0f, -8.0f, -9.0f, -10.0f, -11.0f, -12.0f};
  for (const auto& [op, y, tolerance] : {std::tuple{"gelu", outputs_of<nn::gelu_t>(at), 2e-6},
                                         std::tuple{"gelu_tanh", outputs_of<nn::gelu_tanh_t>(at), 2e-5}}) {
    for (std::size_t k = 0; k < at.size(); ++k) {
      const double expected = ipu_test::ref::activation(op, at[k]);
      if (std::abs(expected) < std::numeric_limits<float>::min()) continue;  // below f32's normal values
      INFO(op << "(" << at[k] << ") = " << y[k] << ", expected " << expected);
      CHECK(std::abs(y[k] - expected) <= tolerance * std::abs(expected));
    }
  }
}
