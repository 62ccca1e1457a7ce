// Windows beyond TensorFlow's SAME padding: explicit (PyTorch's) and VALID padding of
// convolutions and pooling, a convolution's bias, an average that counts padding (PyTorch's
// `count_include_pad`), non-square kernels, strides and pooling windows, and dilation: their
// shape rule and summary, and nets of them in both modes against the independent reference
// (which computes padding and dilation from their definitions), bit-identical between the
// modes.

#include <catch2/catch.hpp>

#include "support/executor_support.hpp"

#include <ipu/ipu.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace nn = ipu::nn;

namespace {

template <class T>
constexpr auto window_net = ipu::input<T, 2, 17, 15, 8>
    | nn::conv<16, 3, 2>.padded(nn::pad<1>).with_bias() | nn::batch_norm | nn::relu  // 9x8: floor((17 + 2 - 3) / 2) + 1
    | nn::max_pool<3, 2>.padded(nn::pad<1>)                                          // 5x4
    | nn::residual(nn::conv<16, 3>.padded(nn::pad<1>).with_bias() | nn::batch_norm) | nn::relu
    | nn::conv<16, 3, 1, 16>.padded(nn::pad<1>).with_bias() | nn::relu              // depthwise
    | nn::conv<24, 5>.padded(nn::pad<2, 1, 0, 3>)                                    // 4x3: top 2, bottom 1, left 0, right 3
    | nn::avg_pool<3, 1>.padded(nn::pad<1>).counting_padding()                        // 4x3, divisor 9 everywhere
    | nn::avg_pool<3, 2>.counting_padding()                                   // SAME 2x2, the padding counted
    | nn::conv<32, 1, 2>.valid().with_bias()                                  // 1x1
    | nn::global_avg_pool | nn::dense<10>;
using window_f32 = decltype(window_net<ipu::f32>);
using window_f16 = decltype(window_net<ipu::f16>);

constexpr const auto& window_nodes = ipu::node_table_v<window_f32>;
static_assert(window_nodes[1].out == ipu::nhwc(2, 9, 8, 16));
static_assert(window_nodes[4].out == ipu::nhwc(2, 5, 4, 16));
static_assert(window_nodes[11].out == ipu::nhwc(2, 4, 3, 24));
static_assert(window_nodes[12].out == ipu::nhwc(2, 4, 3, 24) && window_nodes[13].out == ipu::nhwc(2, 2, 2, 24));
static_assert(window_nodes[14].out == ipu::nhwc(2, 1, 1, 32));
// A bias adds one parameter per filter: 3x3x8x16 + 16, 3x3x16x16 + 16, 3x3x1x16 + 16,
// 5x5x16x24 (no bias), 1x1x24x32 + 32; batch norms 2x16 twice; dense 32x10 + 10.
static_assert(ipu::param_count_v<window_f32> ==
              (1152 + 16) + (2304 + 16) + (144 + 16) + 9600 + (768 + 32) + 64 + 330);

/// Non-square kernels, strides and windows (Inception's factorised 1x7 and 7x1), and dilated
/// convolutions: SAME (padding for the dilated span), VALID, explicit, depthwise.
template <class T>
constexpr auto dilated_net = ipu::input<T, 2, 13, 11, 6>
    | nn::conv<12, nn::hw{1, 7}>.with_bias() | nn::relu                                // 13x11
    | nn::conv<12, nn::hw{7, 1}, nn::hw{2, 1}>                                         // 7x11
    | nn::conv<16, nn::hw{1, 3}>.dilated(nn::dilation<nn::hw{1, 2}>).valid()            // 7x7: span 1x5
    | nn::conv<16, 3>.dilated(nn::dilation<2>) | nn::batch_norm | nn::relu             // 7x7: SAME over 5x5
    | nn::conv<16, 3, 2, 16>.dilated(nn::dilation<nn::hw{2, 3}>).padded(nn::pad<2, 2, 3, 3>)  // 4x4: span 5x7
    | nn::max_pool<nn::hw{2, 3}, nn::hw{1, 2}>                                         // 4x2
    | nn::avg_pool<nn::hw{3, 1}, 1>.padded(nn::pad<1, 1, 0, 0>).counting_padding()     // 4x2
    | nn::global_avg_pool | nn::dense<10>;
using dilated_f32 = decltype(dilated_net<ipu::f32>);
using dilated_f16 = decltype(dilated_net<ipu::f16>);
constexpr const auto& dilated_nodes = ipu::node_table_v<dilated_f32>;
static_assert(dilated_nodes[3].out == ipu::nhwc(2, 7, 11, 12) && dilated_nodes[4].out == ipu::nhwc(2, 7, 7, 16));
static_assert(dilated_nodes[5].out == ipu::nhwc(2, 7, 7, 16) && dilated_nodes[8].out == ipu::nhwc(2, 4, 4, 16));
static_assert(dilated_nodes[9].out == ipu::nhwc(2, 4, 2, 16) && dilated_nodes[10].out == ipu::nhwc(2, 4, 2, 16));
// Kernels of kh x kw taps, dilation adding none: 1x7x6x12 + 12, 7x1x12x12, 1x3x12x16,
// 3x3x16x16, batch norm 2x16, depthwise 3x3x1x16, dense 16x10 + 10.
static_assert(ipu::param_count_v<dilated_f32> == (504 + 12) + 1008 + 576 + 2304 + 32 + 144 + 170);
static_assert(dilated_nodes[1].macs == 2 * 13 * 11 * 12 * 7 * 6);

/// A graph whose only layer is `Layer` on a `[1, H, W, 4]` input.
template <int H, int W, class Layer>
using padded_alone = decltype(ipu::input<ipu::f32, 1, H, W, 4> | Layer{});

// Output sizes: floor((in + before + after - kernel) / stride) + 1, as PyTorch's.
static_assert(ipu::output_shape_v<padded_alone<7, 7, nn::conv_t<4, 7, 2>>>[1] == 4);  // SAME: ceil(7 / 2)
static_assert(ipu::output_shape_v<padded_alone<7, 7, decltype(nn::conv<4, 7, 2>.valid())>>[1] == 1);
static_assert(ipu::output_shape_v<padded_alone<7, 7, decltype(nn::conv<4, 7, 2>.padded(nn::pad<3>))>>[1] == 4);
static_assert(ipu::output_shape_v<padded_alone<8, 8, decltype(nn::max_pool<3, 2>.valid())>>[1] == 3);
static_assert(ipu::output_shape_v<padded_alone<8, 8, decltype(nn::max_pool<3, 2>.padded(nn::pad<1>))>>[1] == 4);
static_assert(ipu::output_shape_v<padded_alone<8, 9, decltype(nn::avg_pool<2, 2>.padded(nn::pad<0, 1, 1, 0>))>>[2] == 5);
// Dilated: the kernel spans d * (k - 1) + 1 cells; SAME keeps ceil(in / stride).
static_assert(ipu::output_shape_v<padded_alone<7, 7, decltype(nn::conv<4, 3>.dilated(nn::dilation<2>).valid())>>[1] == 3);
static_assert(ipu::output_shape_v<padded_alone<7, 7, decltype(nn::conv<4, 3, 2>.dilated(nn::dilation<3>))>>[1] == 4);
static_assert(ipu::output_shape_v<padded_alone<9, 9, decltype(nn::conv<4, nn::hw{1, 7}, nn::hw{1, 2}>.valid())>>[2] == 2);

// Squeeze-and-excitation (EfficientNet's, torchvision's `SqueezeExcitation`): the channel
// means as [N, 1, 1, C], two 1x1 convolutions with biases, and the product broadcast over the
// map; then a row of means broadcast over the rows, a one-channel map broadcast over the
// channels, and adaptive bins that neither divide 7 rows nor 5 columns.
template <class T>
constexpr auto se_net = ipu::input<T, 2, 7, 5, 8>
    | nn::conv<16, 3>.with_bias() | nn::relu
    | nn::multiply(nn::identity, nn::adaptive_avg_pool<1> | nn::conv<4, 1>.with_bias() | nn::relu
                                     | nn::conv<16, 1>.with_bias() | nn::sigmoid)
    | nn::add(nn::identity, nn::adaptive_avg_pool<1, 5>)
    | nn::multiply(nn::identity, nn::conv<1, 1>.with_bias() | nn::sigmoid)
    | nn::adaptive_avg_pool<3, 2>
    | nn::global_avg_pool | nn::dense<10>;
using se_f32 = decltype(se_net<ipu::f32>);
using se_f16 = decltype(se_net<ipu::f16>);
static_assert(ipu::node_table_v<se_f32>[3].out == ipu::nhwc(2, 1, 1, 16));
static_assert(ipu::node_table_v<se_f32>[10].out == ipu::nhwc(2, 7, 5, 16));
static_assert(ipu::node_table_v<se_f32>[14].out == ipu::nhwc(2, 3, 2, 16));

/// f16 to 1e-2: a dozen layers of f16 storage leave outputs near zero (the dense layer's
/// differences of sums) with absolute errors of a few 1e-4, so values below a twentieth of
/// the output's largest are compared against that.
void check_f16(const ipu_test::two_runs& r) {
  double largest = 0;
  for (double v : r.expected) largest = std::max(largest, std::abs(v));
  ipu_test::check_runs(r, 1e-2, largest / 20);
}


}  // namespace

TEST_CASE("explicit padding, biases and averages that count padding, in both modes, against the reference") {
  ipu_test::check_engine<window_f32, ipu_test::small_target<16>>(1e-5);
  check_f16(ipu_test::run_both<window_f16, ipu_test::small_target<16>>());
}

TEST_CASE("non-square and dilated windows, in both modes, against the reference") {
  ipu_test::check_engine<dilated_f32, ipu_test::small_target<16>>(1e-5);
  check_f16(ipu_test::run_both<dilated_f16, ipu_test::small_target<16>>());
}

TEST_CASE("squeeze-and-excitation: broadcast products and sums, adaptive average pooling, in both modes") {
  ipu_test::check_engine<se_f32, ipu_test::small_target<16>>(1e-5);
  check_f16(ipu_test::run_both<se_f16, ipu_test::small_target<16>>());
}

TEST_CASE("the summary names explicit padding, a bias, an average that counts padding and non-square or dilated windows") {
  CHECK(ipu_test::summary_column<nn::conv_t<64, 7, 2>>() == " 7x7/2");
  CHECK(ipu_test::summary_column<decltype(nn::conv<64, 7, 2>.padded(nn::pad<3>).with_bias())>() == " 7x7/2 pad 3,3,3,3 +bias");
  CHECK(ipu_test::summary_column<decltype(nn::conv<8, 3, 1, 8>.valid())>() == " 3x3/1 pad 0,0,0,0 g8");
  CHECK(ipu_test::summary_column<decltype(nn::avg_pool<3, 1>.padded(nn::pad<1, 0, 1, 0>).counting_padding())>() ==
        " 3x3/1 pad 1,0,1,0 counting padding");
  CHECK(ipu_test::summary_column<nn::conv_t<128, nn::hw{1, 7}>>() == " 1x7/1");
  CHECK(ipu_test::summary_column<nn::conv_t<8, nn::hw{7, 1}, nn::hw{2, 1}>>() == " 7x1/2x1");
  CHECK(ipu_test::summary_column<decltype(nn::conv<8, 3>.dilated(nn::dilation<2>).padded(nn::pad<2>))>() ==
        " 3x3/1 dil 2 pad 2,2,2,2");
  CHECK(ipu_test::summary_column<decltype(nn::conv<16, 3, 2, 16>.dilated(nn::dilation<nn::hw{2, 3}>))>() == " 3x3/2 dil 2x3 g16");
  CHECK(ipu_test::summary_column<nn::max_pool_t<nn::hw{2, 3}, nn::hw{1, 2}>>() == " 2x3/1x2");
}

TEST_CASE("a conv's bias is a tensor of its layer only when it has one") {
  using net = decltype(ipu::input<ipu::f32, 1, 4, 4, 3> | nn::conv<5, 3>.with_bias() | nn::conv<2, 1>);
  ipu::weights<net> w;
  CHECK(w["conv1"].tensor("bias").shape == std::vector<std::int64_t>{5});
  CHECK(w["conv1"].contains("bias"));
  CHECK_FALSE(w["conv2"].contains("bias"));
  CHECK_THROWS_WITH(w["conv2"]["bias"], Catch::Contains("its tensors are kernel"));
}
