// Dropout in training (`nn::dropout`): which inputs it drops out, the masks the trainer draws
// (the documented function of the seed, the step and the dropout, at the rate asked, the kept
// values scaled by 1 / (1 - rate)), the gradients through them against central finite
// differences of the independent reference with the same masks, and the same bits on any
// number of threads.

#include <catch2/catch.hpp>

#include "support/targets.hpp"
#include "train/train_support.hpp"

#include <ipu/ipu.hpp>

#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace nn = ipu::nn;

namespace {

using dropout_target = ipu_test::small_target<16>;

// Dropouts after a layer; at a block's start (its shortcut reads the value itself); before a
// block (its body and its shortcut read the same dropped values); in a concat's branch; two
// in a row before a batch norm; before the classifier.
template <class T>
constexpr auto dropout_net = ipu::input<T, 2, 5, 5, 3>
    | nn::conv<6, 3> | nn::dropout<0.25> | nn::relu
    | nn::residual(nn::dropout<0.5> | nn::conv<6, 3>)
    | nn::dropout<0.2> | nn::residual(nn::conv<6, 1> | nn::batch_norm)
    | nn::concat(nn::identity, nn::dropout<0.3> | nn::conv<2, 1>)
    | nn::dropout<0.1> | nn::dropout<0.1> | nn::batch_norm
    | nn::global_avg_pool | nn::dropout<0.5> | nn::dense<3>;
using dropout_net_t = decltype(dropout_net<ipu::f32>);
constexpr auto& dropout_table = ipu::node_table_v<dropout_net_t>;

constexpr bool reads_dropped(int j, int k, int src, double rate, int site) {
  const ipu::node& n = dropout_table[static_cast<std::size_t>(j)];
  const ipu::input_dropout& d = n.dropout[static_cast<std::size_t>(k)];
  return n.inputs[static_cast<std::size_t>(k)] == src && d.site == site && (site < 0 || std::abs(d.rate - rate) < 1e-15);
}

// The node table, in order: input, conv1, relu1, block1.conv1, block1.add, block2.conv1,
// block2.batch_norm1, block2.add, concat1.branch2.conv1, concat1, batch_norm1,
// global_avg_pool1, dense1.
static_assert(dropout_table.size() == 13);
// relu1 reads conv1 dropped out.
static_assert(reads_dropped(2, 0, 1, 0.25, 0));
// block1: its conv reads relu1 dropped out, its shortcut reads relu1 itself.
static_assert(reads_dropped(3, 0, 2, 0.5, 1) && reads_dropped(4, 1, 2, 0, -1));
// block2: its body and its shortcut read block1's output through one mask.
static_assert(reads_dropped(5, 0, 4, 0.2, 2) && reads_dropped(7, 1, 4, 0.2, 2));
// The concat's second branch reads block2's output dropped out, its identity branch does not.
static_assert(reads_dropped(8, 0, 7, 0.3, 3) && reads_dropped(9, 0, 7, 0, -1) && reads_dropped(9, 1, 8, 0, -1));
// Two dropouts in a row are one, keeping 0.9 x 0.9.
static_assert(reads_dropped(10, 0, 9, 1 - 0.9 * 0.9, 4));
// The classifier's.
static_assert(reads_dropped(12, 0, 11, 0.5, 5) && reads_dropped(11, 0, 10, 0, -1));

/// The masks a trainer seeded `seed` draws at step `step`, as the documentation gives them.
ipu_test::ref::dropout_mask drawn_masks(std::uint64_t seed, std::int64_t step) {
  return [=](const ipu::input_dropout& d, std::int64_t i) {
    return ipu::dropout_keeps(ipu::dropout_stream(seed, step, d.site), i, d.rate);
  };
}

// One dropout between the input and a dense layer with one unit: with a zero kernel and bias
// and mean squared error against 1, the kernel's gradient is -2 times the dropped-out input.
constexpr std::int64_t probe_width = 4096;
constexpr auto probe = ipu::input<ipu::f32, 1, 1, 1, probe_width> | nn::flatten | nn::dropout<0.3> | nn::dense<1>;
using probe_t = decltype(probe);
constexpr ipu::train_options probe_mse{.optimizer = ipu::sgd{.learning_rate = 0.01}, .loss = ipu::loss::mean_squared_error};

}  // namespace

TEST_CASE("dropout keeps values at the rate asked, scales them by 1 / (1 - rate), and draws new masks each step") {
  auto w = ipu::weights<probe_t>::random(1);
  for (float& v : w[0]["kernel"]) v = 0;
  for (float& v : w[0]["bias"]) v = 0;
  const auto x = ipu_test::random_input<probe_t>(2);
  const std::vector<float> wanted{1.0f};
  const std::uint64_t seed = 77;
  ipu::trainer<probe_t, dropout_target, probe_mse> trainer{w, {2, seed}};
  trainer.backward(std::span(x.data(), x.size()), wanted);
  const std::span<const float> g0 = trainer.gradients()[0]["kernel"];
  const float scale = 1.0f / 0.7f;
  std::int64_t kept = 0;
  std::vector<bool> first(static_cast<std::size_t>(probe_width));
  for (std::int64_t i = 0; i < probe_width; ++i) {
    const std::size_t e = static_cast<std::size_t>(i);
    const bool keep = ipu::dropout_keeps(ipu::dropout_stream(seed, 0, 0), i, 0.3);
    first[e] = keep;
    kept += keep ? 1 : 0;
    INFO("value " << i);
    CHECK(g0[e] == (keep ? -2 * (x[e] * scale) : 0.0f));
  }
  // Binomial(4096, 0.7): mean 2867.2, standard deviation 29.3; within 4 of them.
  CHECK(std::abs(static_cast<double>(kept) - 0.7 * probe_width) < 4 * 29.3);

  // The same seed and step draw the same masks; a step draws new ones.
  trainer.backward(std::span(x.data(), x.size()), wanted);
  for (std::int64_t i = 0; i < probe_width; ++i) CHECK((trainer.gradients()[0]["kernel"][static_cast<std::size_t>(i)] != 0) == first[static_cast<std::size_t>(i)]);
  trainer.step(std::span(x.data(), x.size()), wanted);
  trainer.backward(std::span(x.data(), x.size()), wanted);
  std::int64_t changed = 0;
  for (std::int64_t i = 0; i < probe_width; ++i) {
    const bool keep = trainer.gradients()[0]["kernel"][static_cast<std::size_t>(i)] != 0;
    CHECK(keep == ipu::dropout_keeps(ipu::dropout_stream(seed, 1, 0), i, 0.3));
    changed += keep != first[static_cast<std::size_t>(i)] ? 1 : 0;
  }
  // Independent masks differ at 2 * 0.3 * 0.7 of the values: 1720 of 4096.
  CHECK(changed > 1400);

  // Another seed, other masks.
  ipu::trainer<probe_t, dropout_target, probe_mse> other{w, {2, seed + 1}};
  other.backward(std::span(x.data(), x.size()), wanted);
  std::int64_t differ = 0;
  for (std::int64_t i = 0; i < probe_width; ++i)
    differ += (other.gradients()[0]["kernel"][static_cast<std::size_t>(i)] != 0) != first[static_cast<std::size_t>(i)] ? 1 : 0;
  CHECK(differ > 1400);
}

TEST_CASE("gradients through dropouts match finite differences of the reference with the same masks") {
  const std::uint64_t seed = 5;
  const auto w = ipu::weights<dropout_net_t>::random(seed);
  const auto x = ipu_test::random_input<dropout_net_t>(seed + 1);
  const std::vector<double> input = ipu_test::input_values<dropout_net_t>(x);
  const auto labels = ipu_test::random_labels(2, 3, seed + 2);
  ipu::trainer<dropout_net_t, dropout_target> trainer{w, {2, seed}};
  const float loss = trainer.backward(std::span(x.data(), x.size()), labels);
  const double expected = ipu_test::reference_loss<dropout_net_t>(input, ipu_test::in_double(w), labels, {}, drawn_masks(seed, 0));
  const double undropped = ipu_test::reference_loss<dropout_net_t>(input, ipu_test::in_double(w), labels);
  CHECK(std::abs(loss - expected) <= 1e-5 * std::abs(expected));
  CHECK(std::abs(expected - undropped) > 1e-3 * std::abs(expected));  // the dropouts change the loss
  std::string where;
  const double error = ipu_test::gradient_error<dropout_net_t>(w, trainer.gradients(), input, labels, {}, where, 24, drawn_masks(seed, 0));
  INFO("worst gradient: " << where << ", relative error " << error);
  CHECK(error <= 5e-4);
}

TEST_CASE("dropout's masks and gradients hold the same bits on 1 and 3 threads, in f16") {
  using G = decltype(dropout_net<ipu::f16>);
  const auto w = ipu::weights<G>::random(8);
  const auto x = ipu_test::random_input<G>(9);
  const auto labels = ipu_test::random_labels(2, 3, 10);
  ipu::trainer<G, dropout_target> one{w, {1, 3}}, three{w, {3, 3}};
  for (int step = 0; step < 2; ++step) {
    CHECK(one.step(std::span(x.data(), x.size()), labels) == three.step(std::span(x.data(), x.size()), labels));
    CHECK(ipu_test::first_difference(one.gradients(), three.gradients()).empty());
  }
}
