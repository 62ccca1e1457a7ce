// Training in f16 as the IPU trains: gradients stored in f16 (and lost below its range without
// loss scaling), static and dynamic loss scaling, and "16.16" weights updated with stochastic
// rounding. The expected gradients and weights are plain loops in double over the layer's
// definition (y = x W + b, the mean squared error), on values chosen so that the forward
// pass is exact in f16.

#include <catch2/catch.hpp>

#include "support/targets.hpp"

#include <ipu/ipu.hpp>

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

namespace nn = ipu::nn;
using ipu_test::small_target;

namespace {

// ---- a dense layer whose forward pass is exact in f16 -------------------------------------

constexpr int p_batch = 4, p_in = 8, p_out = 3;
using p_net_t = decltype(ipu::input<ipu::f16, p_batch, 1, 1, p_in> | nn::flatten | nn::dense<p_out>);

double p_x(int b, int i) { return ((b + i) % 3) * 0.5 - 0.5; }    // -0.5, 0 or 0.5
double p_w(int i, int o) { return ((i + o) % 4) * 0.125 - 0.25; }  // -0.25 to 0.125

ipu::weights<p_net_t> p_weights() {
  auto w = ipu::weights<p_net_t>::random(1);
  for (int i = 0; i < p_in; ++i)
    for (int o = 0; o < p_out; ++o) w["dense1"]["kernel"][static_cast<std::size_t>(i * p_out + o)] = static_cast<float>(p_w(i, o));
  for (float& b : w["dense1"]["bias"]) b = 0;
  return w;
}

std::vector<ipu::f16> p_input() {
  std::vector<ipu::f16> x;
  for (int b = 0; b < p_batch; ++b)
    for (int i = 0; i < p_in; ++i) x.emplace_back(static_cast<float>(p_x(b, i)));
  return x;
}

/// y = x W (bias 0), exact: sums of multiples of 1/16.
double p_y(int b, int o) {
  double y = 0;
  for (int i = 0; i < p_in; ++i) y += p_x(b, i) * p_w(i, o);
  return y;
}

/// Targets `offset` away from the outputs.
std::vector<float> p_targets(double offset) {
  std::vector<float> t;
  for (int b = 0; b < p_batch; ++b)
    for (int o = 0; o < p_out; ++o) t.push_back(static_cast<float>(p_y(b, o) + offset));
  return t;
}

/// The mean squared error's gradients of the kernel and the bias at targets `offset` away:
/// dy = 2 (y - t) / elements, dW = x^T dy, db = sum over the batch of dy.
struct p_gradients {
  std::vector<double> kernel, bias;
};
p_gradients p_reference(double offset) {
  const double dy = 2 * -offset / (p_batch * p_out);
  p_gradients g{std::vector<double>(p_in * p_out), std::vector<double>(p_out)};
  for (int b = 0; b < p_batch; ++b)
    for (int o = 0; o < p_out; ++o) {
      for (int i = 0; i < p_in; ++i) g.kernel[static_cast<std::size_t>(i * p_out + o)] += p_x(b, i) * dy;
      g.bias[static_cast<std::size_t>(o)] += dy;
    }
  return g;
}

/// The largest absolute value of `v`.
double largest(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::fabs(x));
  return m;
}

template <ipu::train_options Opts>
using p_trainer = ipu::trainer<p_net_t, small_target<16>, Opts>;

constexpr ipu::train_options p_unscaled{.optimizer = ipu::sgd{.learning_rate = 0.001}, .loss = ipu::loss::mean_squared_error};
constexpr ipu::train_options p_scaled{.optimizer = ipu::sgd{.learning_rate = 0.001},
                                      .loss = ipu::loss::mean_squared_error,
                                      .loss_scaling = 1 << 20};

}  // namespace

TEST_CASE("f16 gradients below f16's range are lost without loss scaling, and kept with it") {
  // Targets 2^-23 away: each output's gradient is 2 * 2^-23 / 12, under half the smallest f16
  // subnormal (2^-25), so it rounds to zero; scaled by 2^20 it is an ordinary f16.
  const double offset = 0x1p-23;
  const p_gradients ref = p_reference(offset);
  REQUIRE(largest(ref.kernel) > 0);

  p_trainer<p_unscaled> unscaled{p_weights()};
  unscaled.backward(p_input(), p_targets(offset));
  for (float g : unscaled.gradients()["dense1"]["kernel"]) CHECK(g == 0);
  for (float g : unscaled.gradients()["dense1"]["bias"]) CHECK(g == 0);

  p_trainer<p_scaled> scaled{p_weights()};
  CHECK(scaled.loss_scale() == 0x1p20f);
  scaled.backward(p_input(), p_targets(offset));
  // Two roundings to f16 (the output's gradient, the kernel's): 2^-11 each, relative.
  const auto kernel = scaled.gradients()["dense1"]["kernel"];
  for (std::size_t k = 0; k < ref.kernel.size(); ++k) CHECK(std::fabs(kernel[k] - ref.kernel[k]) <= 2e-3 * largest(ref.kernel));
  const auto bias = scaled.gradients()["dense1"]["bias"];
  for (std::size_t k = 0; k < ref.bias.size(); ++k) CHECK(std::fabs(bias[k] - ref.bias[k]) <= 2e-3 * largest(ref.bias));
  CHECK_FALSE(scaled.overflowed());
}

TEST_CASE("dynamic loss scaling skips the steps that overflow f16, halving the scale, and doubles it after clean steps") {
  // Targets 64 below the outputs: the gradients are large, and scaled by 2^15 beyond f16.
  constexpr double offset = -64;
  constexpr ipu::train_options opts{.optimizer = ipu::sgd{.learning_rate = 0.001},
                                    .loss = ipu::loss::mean_squared_error,
                                    .loss_scaling = ipu::dynamic_loss_scaling(32768, 2)};
  const p_gradients ref = p_reference(offset);
  // The f16 gradients a scale s stores: the outputs' 2 * 64 / 12 * s, the kernel's, the bias's.
  const auto overflows = [&](double s) {
    const double dy = 2 * 64.0 / (p_batch * p_out);
    return std::max({dy, largest(ref.kernel), largest(ref.bias)}) * s >= 65520;  // rounds to infinity
  };
  int expected_skips = 0;
  for (double s = 32768; overflows(s); s /= 2) ++expected_skips;
  REQUIRE(expected_skips >= 2);

  p_trainer<opts> t{p_weights()};
  const std::vector<float> initial(t.weights()["dense1"]["kernel"].begin(), t.weights()["dense1"]["kernel"].end());
  for (int k = 0; k < expected_skips; ++k) {
    t.step(p_input(), p_targets(offset));
    CHECK(t.overflowed());
    CHECK(t.skipped_steps() == k + 1);
    CHECK(t.steps() == 0);
    CHECK(t.loss_scale() == static_cast<float>(std::ldexp(32768.0, -(k + 1))));
    for (std::size_t i = 0; i < initial.size(); ++i) CHECK(t.weights()["dense1"]["kernel"][i] == initial[i]);
  }
  // The first clean step applies SGD's update with the unscaled gradients.
  const float scale = t.loss_scale();
  t.step(p_input(), p_targets(offset));
  CHECK_FALSE(t.overflowed());
  CHECK(t.steps() == 1);
  for (std::size_t i = 0; i < initial.size(); ++i)
    CHECK(t.weights()["dense1"]["kernel"][i] ==
          Approx(initial[i] - 0.001 * ref.kernel[i]).margin(0.001 * 2e-3 * largest(ref.kernel)));
  CHECK(t.loss_scale() == scale);
  // A second clean step doubles the scale (growth interval 2), which overflows again.
  t.step(p_input(), p_targets(offset));
  CHECK(t.steps() == 2);
  CHECK(t.loss_scale() == 2 * scale);
  t.step(p_input(), p_targets(offset));
  CHECK(t.overflowed());
  CHECK(t.skipped_steps() == expected_skips + 1);
  CHECK(t.loss_scale() == scale);
}

namespace {

// ---- "16.16": updates smaller than half an f16 step ------------------------------------

constexpr int s_batch = 4, s_width = 64;
using s_net_t = decltype(ipu::input<ipu::f16, s_batch, 1, 1, s_width> | nn::flatten | nn::dense<s_width>);
constexpr double s_lr = 0x1p-11;
constexpr int s_steps = 20;

/// Kernel 0.5 everywhere, bias 0, inputs 0.25, targets 0: every output is 16 w + b, every kernel
/// element's gradient the same, dy = 2 y / 256 summed over the batch times 0.25, and the bias's
/// four times that. Each kernel update, 2^-11 * 2^-4 = 2^-15, is an eighth of the f16 step below
/// 0.5 (2^-12) and under half of it.
ipu::weights<s_net_t> s_weights() {
  auto w = ipu::weights<s_net_t>::random(1);
  for (float& v : w["dense1"]["kernel"]) v = 0.5f;
  for (float& v : w["dense1"]["bias"]) v = 0;
  return w;
}

/// The kernel's change after `s_steps` steps of SGD on the definition above, in double.
double s_reference_change() {
  double w = 0.5, b = 0;
  for (int s = 0; s < s_steps; ++s) {
    const double y = s_width * 0.25 * w + b, dy = 2 * y / (s_batch * s_width);
    w -= s_lr * s_batch * 0.25 * dy;
    b -= s_lr * s_batch * dy;
  }
  return w - 0.5;
}

template <ipu::rounding R>
constexpr ipu::train_options s_opts{.optimizer = ipu::sgd{.learning_rate = s_lr},
                                    .loss = ipu::loss::mean_squared_error,
                                    .master_weights = ipu::dtype::f16,
                                    .rounding = R};

template <ipu::rounding R>
std::vector<float> s_train(std::uint64_t seed, unsigned threads) {
  ipu::trainer<s_net_t, small_target<16>, s_opts<R>> t{s_weights(), {threads, seed}};
  const std::vector<ipu::f16> x(s_batch * s_width, ipu::f16(0.25f));
  const std::vector<float> targets(s_batch * s_width, 0.0f);
  for (int s = 0; s < s_steps; ++s) t.step(x, targets);
  return {t.weights()["dense1"]["kernel"].begin(), t.weights()["dense1"]["kernel"].end()};
}

}  // namespace

TEST_CASE("16.16: rounding to the nearest loses updates under half an f16 step, stochastic rounding keeps them on average") {
  const double expected = s_reference_change();
  REQUIRE(expected < -5e-4);

  const std::vector<float> nearest = s_train<ipu::rounding::nearest>(1, 2);
  for (float w : nearest) CHECK(w == 0.5f);  // every update rounded back

  const std::vector<float> stochastic = s_train<ipu::rounding::stochastic>(1, 2);
  double mean = 0;
  for (float w : stochastic) {
    CHECK(static_cast<float>(ipu::half(w)) == w);  // an f16 value
    mean += (w - 0.5) / static_cast<double>(stochastic.size());
  }
  // Per element and step the rounding adds at most an f16 step (2^-12) times a Bernoulli(1/8)
  // draw: over 4096 elements and 20 steps the mean's standard deviation is about 6e-6 (1% of the
  // change); 5% allows it and the forward pass's f16 rounding.
  CHECK(std::fabs(mean - expected) <= 0.05 * std::fabs(expected));

  CHECK(s_train<ipu::rounding::stochastic>(1, 1) == stochastic);  // the same bits on 1 and 2 threads
  CHECK(s_train<ipu::rounding::stochastic>(2, 2) != stochastic);  // another seed, other draws
}

TEST_CASE("in an f16 graph a batch norm's running statistics are f16 values, each update rounded to a neighbour") {
  using G = decltype(ipu::input<ipu::f16, 4, 2, 2, 2> | nn::batch_norm | nn::flatten | nn::dense<1>);
  const auto w = ipu::weights<G>::random(3);
  std::vector<ipu::f16> x;
  std::vector<double> sum(2), squares(2);
  for (int e = 0; e < 4 * 2 * 2 * 2; ++e) {
    const double v = ((e * 7) % 11) * 0.25 - 1;  // exact in f16
    x.emplace_back(static_cast<float>(v));
    sum[static_cast<std::size_t>(e % 2)] += v;
    squares[static_cast<std::size_t>(e % 2)] += v * v;
  }
  constexpr ipu::train_options mse{.optimizer = ipu::sgd{.learning_rate = 0.01}, .loss = ipu::loss::mean_squared_error};
  ipu::trainer<G, small_target<16>, mse> trainer{w, {1, 11}};
  trainer.backward(x, std::vector<float>{0, 0, 0, 0});
  const ipu::layer_weights& before = w["batch_norm1"];
  const ipu::layer_weights& after = trainer.weights()["batch_norm1"];
  const double m = 16;  // values per channel
  for (std::size_t c = 0; c < 2; ++c) {
    const double mean = sum[c] / m, variance = (squares[c] - m * mean * mean) / (m - 1);  // unbiased
    const double expected_mean = 0.997 * before["mean"][c] + 0.003 * mean;
    const double expected_variance = 0.997 * before["variance"][c] + 0.003 * variance;
    for (const auto& [got, expected] : {std::pair{after["mean"][c], expected_mean}, std::pair{after["variance"][c], expected_variance}}) {
      INFO("channel " << c << ": " << got << " against " << expected);
      CHECK(static_cast<float>(ipu::half(got)) == got);                        // an f16 value
      CHECK(std::fabs(got - expected) <= std::ldexp(std::fabs(expected), -10));  // one of its f16 neighbours
    }
  }
}
