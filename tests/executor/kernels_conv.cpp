// The convolution kernels, through graphs of one or two layers: kernel sizes 1, 3, 5 and 7,
// strides 1 and 2, dense and grouped convs (2 and 4 groups, depthwise), odd and 1x1 spatial
// sizes, channel counts that are not multiples of 4, conv + batch norm (+ relu), and serial
// slices. Every graph runs in f32 and in f16 with f32 partials, on targets of 4, 16 and 64
// tiles so that several tile mappings and channel splits are exercised, and each run is
// checked three ways:
//   - against the double-precision reference (tests/support/reference.hpp), to 1e-5 in f32
//     and 1e-2 in f16. The error is relative, with values smaller than a tenth of the largest
//     expected value compared against that tenth: rounding a sum of products to f32 leaves
//     absolute errors of order 1e-7 of the largest value, and rounding the weights to f16
//     (which the reference does not do) ~1e-4, so near-zero outputs cannot be compared
//     relatively to their own size;
//   - the fast and faithful modes against each other, bit for bit;
//   - the faithful engine's measured memory against the plan.

#include <catch2/catch.hpp>

#include "support/kernel_checks.hpp"

#include <ipu/ipu.hpp>

namespace nn = ipu::nn;
using ipu_test::small_target;

using ipu_test::check;
using ipu_test::check_nets;

namespace {

// ---- kernel sizes and strides ---------------------------------------------------------

template <class T> using k1_s1 = decltype(ipu::input<T, 2, 6, 6, 8> | nn::conv<8, 1>);
template <class T> using k1_s1_c6 = decltype(ipu::input<T, 2, 7, 5, 6> | nn::conv<10, 1>);
template <class T> using k1_s2_odd = decltype(ipu::input<T, 2, 7, 5, 8> | nn::conv<12, 1, 2>);
/// A stride larger than the kernel, with tiles whose positions span two output rows.
template <class T> using k1_s2_9x9 = decltype(ipu::input<T, 2, 9, 9, 8> | nn::conv<16, 1, 2>);
template <class T> using k3_s1_odd = decltype(ipu::input<T, 2, 7, 5, 6> | nn::conv<12, 3>);
template <class T> using k3_s2_9x9 = decltype(ipu::input<T, 2, 9, 9, 3> | nn::conv<16, 3, 2>);
template <class T> using k5_s1_c10 = decltype(ipu::input<T, 2, 8, 8, 10> | nn::conv<10, 5>);
template <class T> using k5_s2_odd = decltype(ipu::input<T, 1, 9, 7, 6> | nn::conv<6, 5, 2>);
template <class T> using k7_s2_c3 = decltype(ipu::input<T, 1, 12, 12, 3> | nn::conv<8, 7, 2>);
template <class T> using k7_wider_than_input = decltype(ipu::input<T, 1, 7, 5, 10> | nn::conv<6, 7>);

// ---- grouped convs --------------------------------------------------------------------

template <class T> using groups2 = decltype(ipu::input<T, 2, 8, 8, 8> | nn::conv<16, 3, 1, 2>);
template <class T> using groups4_s2 = decltype(ipu::input<T, 2, 9, 9, 16> | nn::conv<16, 3, 2, 4>);
template <class T> using groups4_k1 = decltype(ipu::input<T, 2, 5, 5, 12> | nn::conv<24, 1, 1, 4>);
template <class T> using groups2_k5_c10 = decltype(ipu::input<T, 1, 7, 7, 10> | nn::conv<6, 5, 1, 2>);
template <class T> using depthwise = decltype(ipu::input<T, 2, 7, 5, 12> | nn::conv<12, 3, 1, 12>);
template <class T> using depthwise_s2 = decltype(ipu::input<T, 1, 9, 9, 6> | nn::conv<6, 3, 2, 6>);
template <class T> using depthwise_x2 = decltype(ipu::input<T, 1, 6, 6, 3> | nn::conv<6, 3, 1, 3>);

// ---- 1x1 spatial inputs ---------------------------------------------------------------

template <class T> using spatial1_k3 = decltype(ipu::input<T, 4, 1, 1, 6> | nn::conv<8, 3>);
template <class T> using spatial1_k1 = decltype(ipu::input<T, 3, 1, 1, 10> | nn::conv<10, 1>);
template <class T> using spatial1_k3_s2_groups2 = decltype(ipu::input<T, 2, 1, 1, 4> | nn::conv<6, 3, 2, 2>);

// ---- conv + batch norm ----------------------------------------------------------------

template <class T> using conv_bn = decltype(ipu::input<T, 2, 7, 5, 6> | nn::conv<12, 3> | nn::batch_norm);
template <class T>
using grouped_conv_bn_relu = decltype(ipu::input<T, 2, 6, 6, 16> | nn::conv<16, 3, 1, 4> | nn::batch_norm | nn::relu);
template <class T>
using conv_s2_bn_relu = decltype(ipu::input<T, 2, 9, 9, 10> | nn::conv<10, 3, 2> | nn::batch_norm | nn::relu);
template <class T> using wide_conv_bn = decltype(ipu::input<T, 1, 6, 6, 10> | nn::conv<40, 3> | nn::batch_norm);
template <class T> using depthwise_bn = decltype(ipu::input<T, 1, 7, 7, 6> | nn::conv<6, 3, 1, 6> | nn::batch_norm);

// ---- larger convs for the small and large targets ---------------------------------------

template <class T> using k3_64 = decltype(ipu::input<T, 2, 8, 8, 16> | nn::conv<64, 3>);

/// A transient bound of 1% of a tile (6 KiB): the convs run in serial slices.
constexpr ipu::options tight{.available_memory_proportion = {1, 100}};
template <class T> using sliced = decltype(ipu::input<T, 2, 8, 8, 16> | nn::conv<32, 3> | nn::batch_norm);

static_assert(ipu::plan_v<sliced<ipu::f32>, small_target<4>, tight>.nodes[1].step.serial > 1,
              "the sliced test must run its conv in serial slices");
static_assert(ipu::plan_v<sliced<ipu::f16>, small_target<4>, tight>.nodes[1].step.serial > 1,
              "the sliced test must run its conv in serial slices");

}  // namespace

TEST_CASE("conv kernels 1 3 5 and 7 at strides 1 and 2 match the reference") {
  check_nets<small_target<16>, k1_s1, k1_s1_c6, k1_s2_odd, k1_s2_9x9, k3_s1_odd, k3_s2_9x9, k5_s1_c10,
             k5_s2_odd, k7_s2_c3, k7_wider_than_input>();
}

TEST_CASE("grouped convs with 2 and 4 groups and depthwise convs match the reference") {
  check_nets<small_target<16>, groups2, groups4_s2, groups4_k1, groups2_k5_c10, depthwise, depthwise_s2,
             depthwise_x2>();
}

TEST_CASE("convs on 1x1 spatial inputs match the reference") {
  check_nets<small_target<16>, spatial1_k3, spatial1_k1, spatial1_k3_s2_groups2>();
}

TEST_CASE("conv then batch norm and relu match the reference") {
  check_nets<small_target<16>, conv_bn, grouped_conv_bn_relu, conv_s2_bn_relu, wide_conv_bn, depthwise_bn>();
}

TEST_CASE("convs on 4 tiles match the reference") {
  check_nets<small_target<4>, k3_s1_odd, groups4_s2, grouped_conv_bn_relu, wide_conv_bn, k3_64>();
}

TEST_CASE("convs on 64 tiles match the reference") {
  check_nets<small_target<64>, k5_s1_c10, groups2, depthwise, conv_s2_bn_relu>();
}

TEST_CASE("convs run in serial slices match the reference") {
  check<sliced<ipu::f32>, small_target<4>, tight>(1e-5);
  check<sliced<ipu::f16>, small_target<4>, tight>(1e-2);
}
