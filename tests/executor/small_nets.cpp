// The engine on small networks: fast and faithful modes against the independent reference,
// bit-identity between the modes and across thread counts, and the faithful mode's measured
// memory against the plan, on one IPU and on two.

#include <catch2/catch.hpp>

#include "support/executor_support.hpp"

#include <ipu/ipu.hpp>

#include <cstring>

namespace nn = ipu::nn;
using ipu_test::grouped_net;
using ipu_test::small_target;

namespace {

using net_f32 = decltype(grouped_net<ipu::f32>);
using net_f16 = decltype(grouped_net<ipu::f16>);

/// The same network over two IPUs: the residual block and what follows on IPU 1.
constexpr auto two_ipu_net = ipu::input<ipu::f32, 2, 12, 12, 8>
    | nn::conv<16, 3, 1> | nn::batch_norm | nn::relu
    | ipu::on<1>(nn::residual(nn::conv<16, 1> | nn::batch_norm | nn::relu
                              | nn::conv<16, 3, 1, 4> | nn::batch_norm | nn::relu
                              | nn::conv<16, 1> | nn::batch_norm)
                 | nn::relu | nn::max_pool<3, 2> | nn::conv<32, 3, 2, 8> | nn::batch_norm | nn::relu)
    | nn::global_avg_pool | nn::dense<10> | nn::softmax;
using net_two_ipus = decltype(two_ipu_net);

}  // namespace

TEST_CASE("a grouped residual net in f32 matches the reference to 1e-5, both modes bit-identical") {
  ipu_test::check_engine<net_f32, small_target<16>>(1e-5);
}

TEST_CASE("a grouped residual net in f16 with f32 partials matches the reference to 1e-2") {
  ipu_test::check_engine<net_f16, small_target<16>>(1e-2);
}

TEST_CASE("f16 partials are used when the options say so, and stay within 2e-2") {
  constexpr ipu::options half_partials{.partials = ipu::dtype::f16};
  ipu_test::check_engine<net_f16, small_target<16>, half_partials>(2e-2);
  // The partials differ: the outputs are not those of f32 partials.
  const auto w = ipu::weights<net_f16>::random(7);
  const auto x = ipu_test::random_input<net_f16>(11);
  ipu::engine<net_f16, small_target<16>> f32_partials{w};
  ipu::engine<net_f16, small_target<16>, half_partials> f16_partials{w};
  CHECK_FALSE(ipu_test::same_bits(f32_partials.infer(x), f16_partials.infer(x)));
}

TEST_CASE("the net on a 64-tile target: other mappings, same results") {
  ipu_test::check_engine<net_f32, small_target<64>>(1e-5);
}

TEST_CASE("over two IPUs, activations cross the IPU-Link and memory matches the plan on both") {
  static_assert(ipu::node_table_v<net_two_ipus>.back().ipu == 0);
  ipu_test::check_engine<net_two_ipus, small_target<16, 2>>(1e-5);
}

TEST_CASE("outputs do not depend on the number of host threads") {
  const auto w = ipu::weights<net_f16>::random(3);
  const auto x = ipu_test::random_input<net_f16>(5);
  for (auto mode : {ipu::execution_mode::fast, ipu::execution_mode::faithful}) {
    ipu::engine<net_f16, small_target<16>> one{w, {mode, 1}};
    ipu::engine<net_f16, small_target<16>> three{w, {mode, 3}};
    CHECK(one.threads() == 1);
    CHECK(three.threads() == 3);
    const auto y = one.infer(x);
    CHECK(ipu_test::same_bits(y, three.infer(x)));
    CHECK(ipu_test::same_bits(y, three.infer(x)));  // and a second batch on the same engine
  }
}

TEST_CASE("an engine can be moved, and runs where it was moved to") {
  const auto w = ipu::weights<net_f32>::random(3);
  const auto x = ipu_test::random_input<net_f32>(5);
  ipu::engine<net_f32, small_target<16>> a{w, {ipu::execution_mode::faithful, 2}};
  const auto y = a.infer(x);
  ipu::engine<net_f32, small_target<16>> b = std::move(a);
  CHECK(ipu_test::same_bits(y, b.infer(x)));
  CHECK(b.profile().batches_measured() == 2);
}
