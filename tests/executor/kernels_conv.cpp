// The convolution kernels, through graphs of one or two layers: kernel sizes 1, 3, 5 and 7,
// strides 1 and 2, dense and grouped convs (2 and 4 groups, depthwise), odd and 1x1 spatial
// sizes, channel counts that are not multiples of 4, conv + batch norm (+ relu), serial
// slices, and serial phases over kernel taps (of a dilated 3x2 kernel too) and input
// channels. Non-square and dilated windows in a whole net: windows.cpp. Every graph runs in f32 and in f16 with f32 partials, on targets of 4, 16 and 64
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

/// Transient bounds of 2% of a tile for f32 (12 KiB) and 1% for f16 (6 KiB): the conv's
/// weights fit, its windows and partials only in serial slices.
constexpr ipu::options tight{.available_memory_proportion = {2, 100}};
constexpr ipu::options tight_half{.available_memory_proportion = {1, 100}};
template <class T> using sliced = decltype(ipu::input<T, 2, 8, 8, 16> | nn::conv<32, 3> | nn::batch_norm);

/// A bound of 0.1% of a tile (638 bytes): no conv here meets it with slices alone, so each
/// runs one kernel tap per phase, or splits its input channels into parts, or both.
constexpr ipu::options starved{.available_memory_proportion = {1, 1000}};
constexpr ipu::options starved_half{.available_memory_proportion = {1, 1000}, .partials = ipu::dtype::f16};
template <class T> using phased_k3 = decltype(ipu::input<T, 2, 7, 7, 24> | nn::conv<12, 3>);
template <class T> using phased_k3_s2 = decltype(ipu::input<T, 2, 9, 9, 16> | nn::conv<8, 3, 2> | nn::batch_norm);
template <class T> using phased_grouped = decltype(ipu::input<T, 2, 6, 6, 32> | nn::conv<32, 3, 1, 4>);
template <class T> using parted_k1 = decltype(ipu::input<T, 2, 6, 6, 96> | nn::conv<24, 1>);
template <class T> using parted_k1_s2 = decltype(ipu::input<T, 2, 9, 9, 64> | nn::conv<16, 1, 2> | nn::relu);
template <class T> using parted_dense = decltype(ipu::input<T, 4, 1, 1, 256> | nn::global_avg_pool | nn::dense<10>);
template <class T>
using phased_dilated_3x2 = decltype(ipu::input<T, 2, 9, 9, 16> | nn::conv<8, nn::hw{3, 2}>.dilated(nn::dilation<2>));

/// The step model of node `j` of `G`'s plan on 4 tiles with `Opts`, when it meets the bound.
template <class G, ipu::options Opts>
constexpr ipu::step_model step_of(std::size_t j) {
  const ipu::node_plan& np = ipu::plan_v<G, small_target<4>, Opts>.nodes[j];
  return np.over_bound ? ipu::step_model{} : np.step;
}
static_assert(step_of<sliced<ipu::f32>, tight>(1).serial > 1 && step_of<sliced<ipu::f32>, tight>(1).phases_per_slice() == 1,
              "the sliced test must run its conv in serial slices");
static_assert(step_of<sliced<ipu::f16>, tight_half>(1).serial > 1 &&
                  step_of<sliced<ipu::f16>, tight_half>(1).phases_per_slice() == 1,
              "the sliced test must run its conv in serial slices");
// A 3x3 kernel runs one tap per phase; a 1x1 kernel splits its input channels.
static_assert(step_of<phased_k3<ipu::f32>, starved>(1).taps == 9 && step_of<phased_k3<ipu::f16>, starved_half>(1).taps == 9);
static_assert(step_of<phased_k3_s2<ipu::f32>, starved>(1).taps == 9 && step_of<phased_grouped<ipu::f32>, starved>(1).taps == 9);
static_assert(step_of<parted_k1<ipu::f32>, starved>(1).in_parts > 1 && step_of<parted_k1_s2<ipu::f16>, starved>(1).in_parts > 1);
static_assert(step_of<parted_dense<ipu::f32>, starved>(2).in_parts > 1);
static_assert(step_of<phased_dilated_3x2<ipu::f32>, starved>(1).taps == 6, "a 3x2 kernel runs one of its 6 taps per phase");

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
  check<sliced<ipu::f16>, small_target<4>, tight_half>(1e-2);
}

TEST_CASE("convs run in phases over kernel taps and input channels match the reference, bit for bit in both modes") {
  using target = small_target<4>;
  check<phased_k3<ipu::f32>, target, starved>(1e-5);
  check<phased_k3<ipu::f16>, target, starved>(1e-2);
  check<phased_k3<ipu::f16>, target, starved_half>(2e-2);
  check<phased_k3_s2<ipu::f32>, target, starved>(1e-5);
  check<phased_grouped<ipu::f32>, target, starved>(1e-5);
  check<phased_grouped<ipu::f16>, target, starved>(1e-2);
  check<parted_k1<ipu::f32>, target, starved>(1e-5);
  check<parted_k1_s2<ipu::f16>, target, starved>(1e-2);
  check<parted_dense<ipu::f32>, target, starved>(1e-5);
  check<parted_dense<ipu::f16>, target, starved_half>(2e-2);
  check<phased_dilated_3x2<ipu::f32>, target, starved>(1e-5);
}
