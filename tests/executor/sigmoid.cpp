// nn::sigmoid: its shape rule and, in a gate (a branch multiplied by its sigmoid), its output in
// both modes against the independent reference, bit-identical between the modes.

#include <catch2/catch.hpp>

#include "support/executor_support.hpp"

#include <ipu/ipu.hpp>

#include <array>
#include <cmath>
#include <cstdint>

namespace nn = ipu::nn;

namespace {

template <class T>
constexpr auto gated = ipu::input<T, 2, 10, 10, 8>
    | nn::conv<16, 3> | nn::batch_norm | nn::relu
    | nn::multiply(nn::identity, nn::conv<16, 1> | nn::sigmoid)
    | nn::global_avg_pool | nn::dense<10> | nn::sigmoid;
using gated_f32 = decltype(gated<ipu::f32>);
using gated_f16 = decltype(gated<ipu::f16>);

static_assert(ipu::output_shape_v<gated_f32> == std::array<std::int64_t, 2>{2, 10});
static_assert(ipu::node_table_v<gated_f32>[5].kind == ipu::op_of<ipu::ops::sigmoid>);
static_assert(ipu::node_table_v<gated_f32>[5].path.view() == "multiply1.branch2.sigmoid1");
static_assert(ipu::node_table_v<gated_f32>[9].path.view() == "sigmoid1");
// Parameters: conv 3x3x8x16, batch norm 2x16, conv 1x1 16x16, dense 16x10 + 10; sigmoid none.
static_assert(ipu::param_count_v<gated_f32> == 1152 + 32 + 256 + 170);

}  // namespace

TEST_CASE("nn::sigmoid gates a branch in both modes, against the reference") {
  ipu_test::check_engine<gated_f32, ipu_test::small_target<16>>(1e-5);
  ipu_test::check_engine<gated_f16, ipu_test::small_target<16>>(1e-2);
}

TEST_CASE("nn::sigmoid saturates to 0 and 1 and maps 0 to one half") {
  using net = decltype(ipu::input<ipu::f32, 1, 1, 1, 4> | nn::sigmoid);
  ipu::engine<net, ipu_test::small_target<4>> e{ipu::weights<net>{}, {ipu::execution_mode::faithful, 1}};
  ipu::input_tensor_t<net> x;
  const std::array<float, 4> in{0.0f, -200.0f, 200.0f, 2.0f};
  for (std::size_t k = 0; k < in.size(); ++k) x.data()[k] = in[k];
  const auto y = e.infer(x);
  CHECK(y.data()[0] == 0.5f);
  CHECK(y.data()[1] == 0.0f);
  CHECK(y.data()[2] == 1.0f);
  CHECK(y.data()[3] == Approx(1 / (1 + std::exp(-2.0))).epsilon(1e-7));
}
