// Joins of parallel branches (nn::add, nn::concat, nn::multiply) in both modes, against the
// independent reference, bit-identical between the modes, memory as planned; on one IPU and
// with branches on two.

#include <catch2/catch.hpp>

#include "support/executor_support.hpp"

#include <ipu/ipu.hpp>

namespace nn = ipu::nn;
using ipu_test::small_target;

namespace {

// An Inception-like concat of a 1x1 conv, a 3x3 conv and a pooling branch; a gate that
// multiplies the input by a sigmoid-free stand-in (a conv and relu of the same shape); a sum
// of three branches, one the identity; a concat with the identity.
template <class T>
constexpr auto join_net = ipu::input<T, 2, 8, 8, 8>
    | nn::concat(nn::conv<8, 1> | nn::batch_norm | nn::relu, nn::conv<16, 3> | nn::relu, nn::max_pool<3, 1>)
    | nn::multiply(nn::identity, nn::conv<32, 1> | nn::relu)
    | nn::add(nn::identity, nn::conv<32, 3, 1, 4> | nn::batch_norm, nn::conv<32, 1>)
    | nn::concat(nn::identity, nn::avg_pool<3, 1>)
    | nn::global_avg_pool | nn::dense<10> | nn::softmax;
using join_f32 = decltype(join_net<ipu::f32>);
using join_f16 = decltype(join_net<ipu::f16>);

// The branches of each join on another IPU than the join: their outputs cross the IPU-Link.
constexpr auto branch_net = ipu::input<ipu::f32, 2, 8, 8, 8>
    | ipu::on<1>(nn::conv<8, 1> | nn::relu)
    | nn::concat(ipu::on<1>(nn::conv<8, 3>), nn::conv<4, 1>, nn::identity)
    | nn::multiply(nn::identity, ipu::on<1>(nn::conv<20, 1> | nn::relu))
    | nn::global_avg_pool | nn::dense<4>;
using net_split = decltype(branch_net);

}  // namespace

TEST_CASE("joins in f32 match the reference, both modes bit-identical, memory as planned") {
  STATIC_REQUIRE(ipu::output_shape_v<join_f32> == std::array<std::int64_t, 2>{2, 10});
  ipu_test::check_engine<join_f32, small_target<16>>(1e-5);
}

TEST_CASE("joins in f16 match the reference within the f16 tolerance") {
  ipu_test::check_engine<join_f16, small_target<16>>(1e-2);
}

TEST_CASE("joins whose branches live on another IPU") {
  ipu_test::check_engine<net_split, small_target<16, 2>>(1e-5);
}
