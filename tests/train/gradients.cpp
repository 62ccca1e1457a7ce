// Every op's backward pass: the trainer's weight gradients against central finite differences
// of the independent reference's loss in double (training-mode batch norm). An op's input
// gradient is checked through the weights of the layers before it; each net ends in a dense
// layer, so that every gradient reaches a weight. Also: the loss itself, batch norm's running
// statistics, the same bits on any number of threads and in a second pass, and the errors a
// trainer reports.

#include <catch2/catch.hpp>

#include "train/train_support.hpp"

#include <ipu/ipu.hpp>

#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace nn = ipu::nn;
using ipu_test::small_target;

namespace {

using target = small_target<16>;

/// Checks the gradients of `G` (f32) with softmax cross-entropy, or mean squared error with
/// `Mse`, against finite differences: every sampled element within `tolerance`. The input is
/// uniform in `[-input_scale, input_scale)`.
template <class G, ipu::loss Loss = ipu::loss::softmax_cross_entropy>
void check_gradients(double tolerance, std::uint64_t seed = 1, float input_scale = 1.0f) {
  constexpr ipu::train_options opts{.loss = Loss};
  const auto w = ipu::weights<G>::random(seed);
  auto x = ipu_test::random_input<G>(seed + 1);
  for (auto& v : x) v *= input_scale;
  const std::vector<double> input = ipu_test::input_values<G>(x);
  ipu::trainer<G, target, opts> trainer{w, {2}};
  const auto& last = ipu::node_table_v<G>.back();
  std::vector<std::int32_t> labels;
  std::vector<float> targets;
  float loss = 0;
  if constexpr (Loss == ipu::loss::softmax_cross_entropy) {
    labels = ipu_test::random_labels(static_cast<std::size_t>(last.out.dim[0]), last.out.channels(), seed + 2);
    loss = trainer.backward(std::span(x.data(), x.size()), labels);
  } else {
    for (std::int64_t e = 0; e < last.out.elements(); ++e) targets.push_back(static_cast<float>(std::sin(static_cast<double>(e))));
    loss = trainer.backward(std::span(x.data(), x.size()), targets);
  }
  const double expected = ipu_test::reference_loss<G>(input, ipu_test::in_double(w), labels, targets);
  CHECK(std::abs(loss - expected) <= 1e-5 * std::abs(expected));
  std::string where;
  const double error = ipu_test::gradient_error<G>(w, trainer.gradients(), input, labels, targets, where);
  INFO("worst gradient: " << where << ", relative error " << error);
  CHECK(error <= tolerance);
}

template <class T>
constexpr auto conv_net = ipu::input<T, 2, 13, 13, 4>
    | nn::conv<8, 3>.with_bias()                                   // SAME, stride 1
    | nn::conv<8, 1, 2>                                            // 1x1, stride 2
    | nn::conv<8, 3, 2>                                            // SAME, stride 2
    | nn::conv<8, 3, 1, 4>                                         // grouped
    | nn::conv<8, 3, 1, 8>                                         // depthwise
    | nn::conv<6, nn::hw{1, 3}>.dilated(nn::dilation<2>)           // 1x3, dilated
    | nn::conv<6, 3, 2>.padded(nn::pad<1, 0, 2, 1>).with_bias()    // explicit padding
    | nn::conv<5, 1> | nn::flatten | nn::dense<4> | nn::softmax;

// Strided windows, whose input gradient spreads the output's onto the input's grid: padding
// before as large as it may be (each first output row and column reads one input row or
// column), and stride 3 with a dilated, grouped kernel.
constexpr auto strided_net = ipu::input<ipu::f32, 2, 9, 9, 4>
    | nn::conv<6, 3, 2>.padded(nn::pad<2, 0, 2, 1>)
    | nn::conv<6, 3, 3, 2>.dilated(nn::dilation<2>)
    | nn::flatten | nn::dense<3>;

// Strides 2 and 3 whose input gradients run phase by phase: each phase of input pixels, those
// the same taps reach, a stride-1 convolution of the output's gradient by those taps.
constexpr auto phased_net = ipu::input<ipu::f32, 2, 9, 9, 3>
    | nn::conv<4, 1>
    | nn::conv<6, 3, 2>
    | nn::conv<8, 5, 3>
    | nn::flatten | nn::dense<3>;

// Groups of 4 and of 8 channels over several vectors and a part of one (24 and 40 channels):
// their kernels' gradients spread each group's inputs within a vector. Groups of 16 channels
// (48): with AVX-512 a group is a whole vector, and each input channel is broadcast from memory.
constexpr auto vector_groups_net = ipu::input<ipu::f32, 2, 6, 6, 5>
    | nn::conv<24, 1> | nn::conv<24, 3, 1, 6>
    | nn::conv<40, 1> | nn::conv<40, 3, 2, 5>
    | nn::conv<48, 1> | nn::conv<48, 3, 1, 3>
    | nn::flatten | nn::dense<3>;

// Kernel gradients of more rows (`[tap][ci]`) than a block of `matmul_kernel::kernel_gradient`
// holds (192): a 3x3 from 24 channels (216 rows, two blocks of 108) and a 1x1 from 200 (two
// blocks of unequal height), their 200 columns two blocks, the second partial.
constexpr auto row_blocks_net = ipu::input<ipu::f32, 2, 5, 5, 24>
    | nn::conv<200, 3>
    | nn::conv<6, 1>
    | nn::flatten | nn::dense<3>;

constexpr auto norm_net = ipu::input<ipu::f32, 3, 5, 5, 3>
    | nn::conv<6, 3> | nn::batch_norm | nn::relu
    | nn::conv<6, 1> | nn::batch_norm | nn::global_avg_pool | nn::dense<3> | nn::softmax;

constexpr auto pool_net = ipu::input<ipu::f32, 2, 9, 9, 3>
    | nn::conv<4, 3> | nn::max_pool<3, 2>
    | nn::conv<4, 1> | nn::avg_pool<3, 1>
    | nn::conv<4, 1> | nn::avg_pool<3, 2>.counting_padding()
    | nn::conv<4, 1> | nn::adaptive_avg_pool<2>
    | nn::conv<4, 1> | nn::global_max_pool | nn::dense<3>;

constexpr auto activation_net = ipu::input<ipu::f32, 2, 4, 4, 3>
    | nn::conv<6, 1> | nn::relu | nn::conv<6, 1> | nn::relu6 | nn::conv<6, 1> | nn::leaky_relu<0.2>
    | nn::conv<6, 1> | nn::sigmoid | nn::conv<6, 1> | nn::tanh | nn::conv<6, 1> | nn::silu
    | nn::conv<6, 1> | nn::gelu | nn::conv<6, 1> | nn::gelu_tanh
    | nn::conv<6, 1> | nn::hard_sigmoid | nn::conv<6, 1> | nn::hard_swish
    | nn::global_avg_pool | nn::dense<3> | nn::softmax;

// ReLU6, the hard sigmoid and the hard swish on inputs well beyond their bounds (the input is
// scaled to [-12, 12)), where their derivatives are constant.
constexpr auto clamp_net = ipu::input<ipu::f32, 2, 4, 4, 3>
    | nn::conv<6, 1> | nn::hard_swish | nn::conv<6, 1> | nn::relu6 | nn::conv<6, 1> | nn::hard_sigmoid
    | nn::flatten | nn::dense<3>;

// The smooth activations and leaky ReLU, each straight after a convolution of large inputs, so
// that each sees its tails too: tanh's and the sigmoid's saturation, GELU's and SiLU's negative
// tails, where their functions take other branches than near 0. The input is scaled to
// [-12, 12); the second join's convolutions read the first's outputs, in [-12, 12) too (GELU's).
constexpr auto tail_net = ipu::input<ipu::f32, 2, 4, 4, 3>
    | nn::concat(nn::conv<4, 1> | nn::tanh, nn::conv<4, 1> | nn::gelu, nn::conv<4, 1> | nn::gelu_tanh)
    | nn::concat(nn::conv<4, 1> | nn::silu, nn::conv<4, 1> | nn::sigmoid, nn::conv<4, 1> | nn::leaky_relu<0.2>)
    | nn::flatten | nn::dense<3>;

// An element-wise op of a user's that states only `f` and `df` takes `ops::unary_kernel`, which
// runs them one float at a time in the training forward and backward (the library's activations
// run on vectors, `ops::lanes_unary_kernel`). Tanh with `std::tanh`, named as the library's tanh,
// so that the reference, which finds activations by name, computes it in double.
struct one_float_tanh : ipu::ops::op_base {
  static constexpr std::string_view name = "tanh";
  static float f(float x) noexcept { return std::tanh(x); }
  static float df(float x) noexcept {
    const float t = std::tanh(x);
    return 1.0f - t * t;
  }
  using kernel = ipu::ops::unary_kernel<one_float_tanh>;
};
struct one_float_tanh_t {
  using op_type = one_float_tanh;
};
constexpr auto one_float_net = ipu::input<ipu::f32, 2, 4, 4, 3>
    | nn::conv<6, 1> | one_float_tanh_t{} | nn::conv<6, 1> | one_float_tanh_t{} | nn::flatten | nn::dense<3>;

constexpr auto join_net = ipu::input<ipu::f32, 2, 5, 5, 4>
    | nn::conv<6, 1>
    | nn::residual(nn::conv<6, 3> | nn::relu)
    | nn::concat(nn::conv<3, 1>, nn::identity, nn::conv<2, 3>)
    | nn::multiply(nn::identity, nn::global_avg_pool | nn::reshape<1, 1, 11> | nn::sigmoid)  // squeeze and excitation
    | nn::multiply(nn::identity, nn::conv<11, 1>, nn::global_avg_pool | nn::reshape<1, 1, 11>)  // three, one broadcast
    | nn::add(nn::identity, nn::global_avg_pool | nn::reshape<1, 1, 11>)                         // a broadcast add
    | nn::add(nn::identity, nn::conv<11, 1>, nn::conv<11, 3>)
    | nn::global_avg_pool | nn::dense<3> | nn::softmax;

constexpr auto regression_net = ipu::input<ipu::f32, 3, 4, 4, 2>
    | nn::conv<4, 3> | nn::tanh | nn::flatten | nn::dense<5> | nn::softmax | nn::dense<2>;

}  // namespace

TEST_CASE("convolutions' gradients: 1x1 and 3x3 strided, grouped, depthwise, dilated, padded, with bias, flatten and dense") {
  check_gradients<decltype(conv_net<ipu::f32>)>(5e-4);
}

TEST_CASE("strided convolutions' input gradients: the most padding, stride 3 dilated and grouped") {
  check_gradients<decltype(strided_net)>(5e-4);
}

TEST_CASE("strided convolutions' input gradients phase by phase, at strides 2 and 3") {
  check_gradients<decltype(phased_net)>(5e-4);
}

TEST_CASE("grouped convolutions' kernel gradients: groups of 4, 8 and 16 channels over 24, 40 and 48 channels") {
  check_gradients<decltype(vector_groups_net)>(5e-4);
}

TEST_CASE("kernel gradients of more rows than a block: 3x3 from 24 channels, 1x1 from 200") {
  check_gradients<decltype(row_blocks_net)>(5e-4);
}

TEST_CASE("batch norm in training mode: gradients through the batch's statistics") {
  check_gradients<decltype(norm_net)>(5e-4);
}

TEST_CASE("pooling's gradients: max, average, average counting padding, adaptive, global max") {
  check_gradients<decltype(pool_net)>(5e-4);
}

TEST_CASE("every activation's gradient") {
  check_gradients<decltype(activation_net)>(5e-4);
}

TEST_CASE("ReLU6's, the hard sigmoid's and the hard swish's gradients on both sides of their bounds") {
  check_gradients<decltype(clamp_net)>(5e-4, 1, 12.0f);
}

TEST_CASE("the smooth activations' and leaky ReLU's gradients in their tails") {
  check_gradients<decltype(tail_net)>(5e-4, 1, 12.0f);
}

TEST_CASE("an op of a user's on ops::unary_kernel: its forward and gradients, one float at a time") {
  check_gradients<decltype(one_float_net)>(5e-4, 1, 3.0f);
}

TEST_CASE("joins' gradients: residual add, concat, broadcast multiply, multiply of three, broadcast add, add of three") {
  check_gradients<decltype(join_net)>(5e-4);
}

TEST_CASE("mean squared error, and a softmax inside the graph") {
  check_gradients<decltype(regression_net), ipu::loss::mean_squared_error>(5e-4);
}

TEST_CASE("a whole residual net's gradients: grouped convolutions, batch norms, both poolings, dense, softmax") {
  check_gradients<decltype(ipu_test::grouped_net<ipu::f32>)>(5e-4);
}

TEST_CASE("batch norm's running statistics move towards the batch's, the variance unbiased") {
  using G = decltype(norm_net);
  auto w = ipu::weights<G>::random(4);
  const auto x = ipu_test::random_input<G>(5);
  const std::vector<double> input = ipu_test::input_values<G>(x);
  ipu::trainer<G, target> trainer{w};
  const auto labels = ipu_test::random_labels(3, 3, 6);
  trainer.backward(std::span(x.data(), x.size()), labels);
  // The conv output the first batch norm reads, from the reference.
  const ipu::layer_weights& conv = w[0];
  const std::vector<double> kernel(conv["kernel"].begin(), conv["kernel"].end());
  const std::vector<double> y = ipu_test::ref::conv2d(input, 3, 5, 5, 3, kernel, 3, 6, 1, 1);
  const ipu::layer_weights& before = w[1];
  const ipu::layer_weights& after = trainer.weights()[1];
  const double m = 3 * 5 * 5;
  for (std::size_t c = 0; c < 6; ++c) {
    double mean = 0, var = 0;
    for (std::size_t i = c; i < y.size(); i += 6) mean += y[i] / m;
    for (std::size_t i = c; i < y.size(); i += 6) var += (y[i] - mean) * (y[i] - mean) / (m - 1);
    CHECK(after["mean"][c] == Approx(0.997 * before["mean"][c] + 0.003 * mean).epsilon(1e-6));
    CHECK(after["variance"][c] == Approx(0.997 * before["variance"][c] + 0.003 * var).epsilon(1e-6));
  }
  // Scale and shift are not changed by a forward pass, only by an update.
  CHECK(after["scale"][0] == before["scale"][0]);
}

TEST_CASE("batch norm's statistics over several chunks of positions: a mean far from zero that drifts along the batch") {
  // 2x20x20 = 800 positions: three chunks of 256 and one of 32 (ops/kernels/batch_norm.hpp),
  // each with its own mean, 1000 and up, the spread about it a thousandth of that. The
  // running statistics start at zero, so that after one step they hold 0.003 times the
  // batch's: the variance checked to 1e-5, where the chunks' sums of squares added about
  // their own means, not moved to the batch's, give 7 to 9 times too little.
  constexpr auto net = ipu::input<ipu::f32, 2, 20, 20, 3> | nn::batch_norm | nn::global_avg_pool | nn::dense<3> | nn::softmax;
  using G = decltype(net);
  auto w = ipu::weights<G>::random(6);
  for (float& v : w[0]["mean"]) v = 0.0f;
  for (float& v : w[0]["variance"]) v = 0.0f;
  auto x = ipu_test::random_input<G>(9);
  for (std::size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(1000.0 + 0.01 * static_cast<double>(i / 3) * (1.0 + static_cast<double>(i % 3)) + x[i]);
  const std::vector<double> input = ipu_test::input_values<G>(x);
  ipu::trainer<G, target> trainer{w};
  trainer.backward(std::span(x.data(), x.size()), ipu_test::random_labels(2, 3, 7));
  const double m = 800;
  for (std::size_t c = 0; c < 3; ++c) {
    double mean = 0, var = 0;
    for (std::size_t i = c; i < input.size(); i += 3) mean += input[i] / m;
    for (std::size_t i = c; i < input.size(); i += 3) var += (input[i] - mean) * (input[i] - mean) / (m - 1);
    CHECK(trainer.weights()[0]["mean"][c] == Approx(0.003 * mean).epsilon(1e-6));
    CHECK(trainer.weights()[0]["variance"][c] == Approx(0.003 * var).epsilon(1e-5));
  }
}

TEST_CASE("gradients hold the same bits on 1 and 3 threads") {
  using G = decltype(join_net);
  const auto w = ipu::weights<G>::random(8);
  const auto x = ipu_test::random_input<G>(9);
  const auto labels = ipu_test::random_labels(2, 3, 10);
  ipu::trainer<G, target> one{w, {1}}, three{w, {3}};
  CHECK(one.backward(std::span(x.data(), x.size()), labels) == three.backward(std::span(x.data(), x.size()), labels));
  CHECK(ipu_test::first_difference(one.gradients(), three.gradients()).empty());
}

/// Checks that a trainer's second backward pass, on another batch, gives the bits of a new
/// trainer's first: no gradient of the first pass is left in a node's buffer.
template <class G>
void check_second_pass() {
  const auto w = ipu::weights<G>::random(11);
  const auto x1 = ipu_test::random_input<G>(12), x2 = ipu_test::random_input<G>(13);
  const auto& last = ipu::node_table_v<G>.back();
  const auto labels = ipu_test::random_labels(static_cast<std::size_t>(last.out.dim[0]), last.out.channels(), 14);
  ipu::trainer<G, target> used{w}, fresh{w};
  used.backward(std::span(x1.data(), x1.size()), labels);
  CHECK(used.backward(std::span(x2.data(), x2.size()), labels) == fresh.backward(std::span(x2.data(), x2.size()), labels));
  CHECK(ipu_test::first_difference(used.gradients(), fresh.gradients()).empty());
}

TEST_CASE("a second backward pass starts each node's gradient from zero") {
  // The pass clears a node's gradient when a step first adds to it, or lets a first step
  // that writes all of it store its values; what the first pass left must not show.
  check_second_pass<decltype(join_net)>();
  check_second_pass<decltype(ipu_test::grouped_net<ipu::f32>)>();
  check_second_pass<decltype(conv_net<ipu::f32>)>();
}

TEST_CASE("a trainer names a wrong input size, a wrong label count and a label out of range") {
  using G = decltype(norm_net);
  ipu::trainer<G, target> trainer{ipu::weights<G>::random(1)};
  const auto x = ipu_test::random_input<G>(2);
  const std::vector<float> short_input(10);
  CHECK_THROWS_WITH(trainer.step(short_input, std::vector<std::int32_t>{0, 1, 2}),
                    "ipu::trainer: the input has 10 elements, the graph's input has 225");
  CHECK_THROWS_WITH(trainer.step(std::span(x.data(), x.size()), std::vector<std::int32_t>{0, 1}),
                    "ipu::trainer: 2 labels for a batch of 3");
  CHECK_THROWS_WITH(trainer.step(std::span(x.data(), x.size()), std::vector<std::int32_t>{0, 3, 1}),
                    "ipu::trainer: label 1 is 3; the graph has 3 classes (0 to 2)");
  CHECK(trainer.steps() == 0);
}
