// The kernels other than convolution, through graphs of one to four layers: batch norm on a
// conv's output and directly on the input (element-wise mapping), relu, max and average
// pooling (3/2, 2/2, 3/1, 5/1, windows reaching over the borders, odd sizes, 150 channels,
// inputs in block-major storage), global average pooling, dense layers (with bias,
// in-features not a multiple of 4, 40 outputs), residual adds whose shortcut is stored like
// the body's output and differently from it, and softmax over [N, C] with C not a multiple of
// 4. Every graph runs in f32 and in f16 with f32 partials, on targets of 4, 16 and 64 tiles,
// and each run is checked three ways:
//   - against the double-precision reference (tests/support/reference.hpp), to 1e-5 in f32
//     and 1e-2 in f16. The error is relative, with values smaller than a tenth of the largest
//     expected value compared against that tenth: rounding a sum of products to f32 leaves
//     absolute errors of order 1e-7 of the largest value, and rounding the weights to f16
//     (which the reference does not do) ~1e-4, so near-zero outputs cannot be compared
//     relatively to their own size;
//   - the fast and faithful modes against each other, bit for bit;
//   - the faithful engine's measured memory against the plan.
// kernels_conv.cpp covers the convolutions.

#include <catch2/catch.hpp>

#include "support/kernel_checks.hpp"

#include <ipu/ipu.hpp>

namespace nn = ipu::nn;
using ipu_test::small_target;

using ipu_test::check;
using ipu_test::check_nets;

namespace {

// ---- batch norm and relu --------------------------------------------------------------

template <class T> using bn_on_input = decltype(ipu::input<T, 2, 7, 5, 6> | nn::batch_norm);
template <class T> using bn_relu_on_input = decltype(ipu::input<T, 3, 5, 5, 3> | nn::batch_norm | nn::relu);
template <class T> using relu_on_input = decltype(ipu::input<T, 2, 5, 7, 3> | nn::relu);
template <class T>
using bn_after_grouped_conv = decltype(ipu::input<T, 2, 5, 5, 12> | nn::conv<12, 3, 1, 3> | nn::batch_norm | nn::relu);

// ---- pooling ----------------------------------------------------------------------------

template <class T> using max_3_2 = decltype(ipu::input<T, 2, 9, 9, 6> | nn::max_pool<3, 2>);
template <class T> using max_2_2_odd = decltype(ipu::input<T, 1, 7, 5, 10> | nn::max_pool<2, 2>);
template <class T> using max_3_1 = decltype(ipu::input<T, 2, 6, 6, 3> | nn::max_pool<3, 1>);
template <class T> using max_5_1 = decltype(ipu::input<T, 1, 5, 6, 4> | nn::max_pool<5, 1>);
template <class T> using max_3_2_whole = decltype(ipu::input<T, 2, 3, 3, 6> | nn::max_pool<3, 2>);
template <class T> using avg_3_2 = decltype(ipu::input<T, 2, 9, 9, 6> | nn::avg_pool<3, 2>);
template <class T> using avg_2_2_odd = decltype(ipu::input<T, 1, 7, 5, 10> | nn::avg_pool<2, 2>);
template <class T> using avg_3_1 = decltype(ipu::input<T, 2, 5, 7, 3> | nn::avg_pool<3, 1>);
template <class T> using avg_5_2 = decltype(ipu::input<T, 1, 5, 7, 6> | nn::avg_pool<5, 2>);
/// 150 channels: more than 8 vectors of accumulators (4 or 8 lanes each), the last in part.
template <class T> using max_3_2_wide = decltype(ipu::input<T, 1, 7, 6, 150> | nn::max_pool<3, 2>.padded(nn::pad<1>));
template <class T>
using avg_3_2_wide = decltype(ipu::input<T, 1, 7, 6, 150> | nn::avg_pool<3, 2>.padded(nn::pad<1>).counting_padding());
template <class T>
using max_after_grouped_conv = decltype(ipu::input<T, 2, 6, 6, 16> | nn::conv<16, 3, 1, 4> | nn::max_pool<3, 2>);
template <class T>
using avg_after_grouped_conv = decltype(ipu::input<T, 1, 7, 7, 12> | nn::conv<12, 1, 1, 3> | nn::avg_pool<3, 1>);

// ---- global average pooling and dense ---------------------------------------------------

template <class T> using gap = decltype(ipu::input<T, 2, 7, 5, 6> | nn::global_avg_pool);
template <class T> using gap_1x1 = decltype(ipu::input<T, 3, 1, 1, 10> | nn::global_avg_pool);
template <class T>
using gap_after_grouped_conv = decltype(ipu::input<T, 2, 6, 6, 16> | nn::conv<16, 3, 1, 4> | nn::global_avg_pool);
/// Reductions in stages: 35 pixels in 7 chunks of 5 on 16 tiles (2 images), partials read
/// across tiles in runs of channels; 9 channels, not a multiple of the vector width; a
/// maximum; the global average that keeps `[N, 1, 1, C]`.
template <class T> using gap_chunks = decltype(ipu::input<T, 2, 9, 13, 9> | nn::global_avg_pool);
template <class T> using gmp = decltype(ipu::input<T, 3, 5, 7, 9> | nn::global_max_pool);
template <class T> using adaptive_1 = decltype(ipu::input<T, 2, 6, 5, 20> | nn::adaptive_avg_pool<1>);
/// The same reduction planned over 16 tiles is cut into chunks: the step runs in two stages.
static_assert(ipu::plan_v<gap_chunks<ipu::f32>, small_target<16>>.nodes[1].step.kind == ipu::step_kind::reduce);
static_assert(ipu::plan_v<gap_chunks<ipu::f32>, small_target<16>>.nodes[1].step.chunks == 8);
static_assert(ipu::plan_v<gap_chunks<ipu::f32>, small_target<16>>.nodes[1].step.reduce == 15);
template <class T> using dense_in6 = decltype(ipu::input<T, 2, 5, 5, 6> | nn::global_avg_pool | nn::dense<10>);
template <class T> using dense_out40 = decltype(ipu::input<T, 4, 3, 3, 16> | nn::global_avg_pool | nn::dense<40>);
template <class T>
using dense_dense = decltype(ipu::input<T, 2, 2, 2, 24> | nn::global_avg_pool | nn::dense<40> | nn::dense<10>);

// ---- residual adds ----------------------------------------------------------------------

/// The shortcut (the input, element-wise) and the body (a conv, by channel blocks) differ.
template <class T>
using residual_on_input = decltype(ipu::input<T, 2, 6, 6, 16> | nn::residual(nn::conv<16, 3> | nn::batch_norm));
/// The shortcut is a grouped conv's output (one block per group), the body a 1x1 conv's.
template <class T>
using residual_after_grouped = decltype(ipu::input<T, 2, 6, 6, 16> | nn::conv<16, 3, 1, 4>
                                        | nn::residual(nn::conv<16, 1> | nn::batch_norm));
/// A two-conv body over odd sizes and 12 channels.
template <class T>
using residual_two_convs = decltype(ipu::input<T, 1, 7, 5, 6> | nn::conv<12, 3> | nn::batch_norm | nn::relu
                                    | nn::residual(nn::conv<12, 3> | nn::batch_norm | nn::relu
                                                   | nn::conv<12, 3> | nn::batch_norm)
                                    | nn::relu);
/// A projection shortcut with stride 2: a 1x1 conv whose stride is larger than its kernel.
template <class T>
using residual_projection = decltype(ipu::input<T, 2, 9, 9, 8> | nn::conv<8, 1>
                                     | nn::residual(nn::conv<16, 3, 2> | nn::batch_norm,
                                                    nn::conv<16, 1, 2> | nn::batch_norm));
/// Body and shortcut stored alike: no remap.
template <class T>
using residual_same_storage = decltype(ipu::input<T, 2, 6, 6, 8> | nn::conv<8, 3>
                                       | nn::residual(nn::batch_norm | nn::relu));

/// Whether the add of `G` on `Target` receives its shortcut through a remap.
template <class G, class Target>
constexpr bool add_remaps = [] {
  const auto& plan = ipu::plan_v<G, Target>;
  for (std::size_t j = 0; j < plan.nodes.size(); ++j)
    if (plan.at(static_cast<int>(j)).kind == ipu::op_of<ipu::ops::add>) return plan.nodes[j].step.kind == ipu::step_kind::remap;
  return false;
}();
static_assert(add_remaps<residual_on_input<ipu::f32>, small_target<16>>);
static_assert(add_remaps<residual_after_grouped<ipu::f32>, small_target<16>>);
static_assert(add_remaps<residual_after_grouped<ipu::f16>, small_target<16>>);
static_assert(!add_remaps<residual_same_storage<ipu::f32>, small_target<16>>);
static_assert(!add_remaps<residual_same_storage<ipu::f16>, small_target<16>>);

// ---- softmax ----------------------------------------------------------------------------

template <class T> using softmax_c6 = decltype(ipu::input<T, 2, 5, 5, 6> | nn::global_avg_pool | nn::softmax);
template <class T>
using softmax_c7 = decltype(ipu::input<T, 3, 2, 2, 10> | nn::global_avg_pool | nn::dense<7> | nn::softmax);
template <class T> using softmax_4d = decltype(ipu::input<T, 1, 3, 5, 6> | nn::softmax);

}  // namespace

TEST_CASE("batch norm on the input and after a conv and relu match the reference") {
  check_nets<small_target<16>, bn_on_input, bn_relu_on_input, relu_on_input, bn_after_grouped_conv>();
}

TEST_CASE("max pooling 3/2 2/2 3/1 and 5/1 over odd sizes and borders matches the reference") {
  check_nets<small_target<16>, max_3_2, max_2_2_odd, max_3_1, max_5_1, max_3_2_whole, max_3_2_wide,
             max_after_grouped_conv>();
}

TEST_CASE("average pooling 3/2 2/2 3/1 and 5/2 over odd sizes and borders matches the reference") {
  check_nets<small_target<16>, avg_3_2, avg_2_2_odd, avg_3_1, avg_5_2, avg_3_2_wide, avg_after_grouped_conv>();
}

TEST_CASE("global average pooling and dense layers match the reference") {
  check_nets<small_target<16>, gap, gap_1x1, gap_after_grouped_conv, dense_in6, dense_out40, dense_dense>();
}

TEST_CASE("global pooling reduced in stages over the tiles matches the reference") {
  check_nets<small_target<16>, gap_chunks, gmp, adaptive_1>();
  check<gap_chunks<ipu::f32>, small_target<64>>(1e-5);  // one pixel per chunk over 64 tiles
  check<adaptive_1<ipu::f16>, small_target<4>>(1e-2);   // several chunks per tile
}

TEST_CASE("residual adds with shortcuts stored alike and differently match the reference") {
  check_nets<small_target<16>, residual_on_input, residual_after_grouped, residual_two_convs, residual_projection,
             residual_same_storage>();
}

TEST_CASE("softmax over rows whose length is not a multiple of 4 matches the reference") {
  check_nets<small_target<16>, softmax_c6, softmax_c7, softmax_4d>();
}

TEST_CASE("pooling residual adds and dense layers on 4 tiles match the reference") {
  check_nets<small_target<4>, max_3_2, avg_3_1, residual_after_grouped, dense_out40>();
}

TEST_CASE("batch norm pooling residual adds and softmax on 64 tiles match the reference") {
  check_nets<small_target<64>, bn_on_input, avg_3_2, residual_projection, softmax_c7>();
}
