// Training converges: a small CNN learns a synthetic task (which quadrant of an image holds a
// bright square, under noise), its loss falls, and an engine built from the trained weights
// (batch norms' running statistics included) classifies unseen images, in f32 and in f16 with
// f32 master weights.

#include <catch2/catch.hpp>

#include "support/executor_support.hpp"
#include "train/train_support.hpp"

#include <ipu/ipu.hpp>

#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace nn = ipu::nn;
using ipu_test::small_target;

namespace {

constexpr int batch = 16, side = 6;

template <class T>
constexpr auto quadrant_net = ipu::input<T, batch, side, side, 1>
    | nn::conv<8, 3> | nn::batch_norm | nn::relu | nn::max_pool<2, 2>
    | nn::flatten | nn::dense<4> | nn::softmax;

/// A batch of the task (`ipu_test::quadrant_samples`).
template <class T>
void make_batch(std::mt19937_64& rng, std::vector<T>& images, std::vector<std::int32_t>& labels) {
  ipu_test::quadrant_samples(rng, batch, side, images, labels);
}

/// Trains `steps` steps; returns the first loss and the mean of the last five, and the
/// accuracy of an engine with the trained weights on 4 unseen batches.
template <class T>
void check_convergence(int steps, double loss_ratio, double accuracy) {
  using G = decltype(quadrant_net<T>);
  constexpr ipu::train_options opts{.optimizer = ipu::sgd{.learning_rate = 0.05, .momentum = 0.9}};
  ipu::trainer<G, small_target<16>, opts> trainer{ipu::weights<G>::random(1), {2}};
  std::mt19937_64 rng(7);
  std::vector<T> images;
  std::vector<std::int32_t> labels;
  double first = 0, last = 0;
  for (int s = 0; s < steps; ++s) {
    make_batch(rng, images, labels);
    const float loss = trainer.step(images, labels);
    if (s == 0) first = loss;
    if (s >= steps - 5) last += loss / 5.0;
  }
  INFO("loss " << first << " -> " << last);
  CHECK(last < loss_ratio * first);
  ipu::engine<G, small_target<16>> engine{trainer.weights()};
  int right = 0;
  for (int b = 0; b < 4; ++b) {
    make_batch(rng, images, labels);
    std::vector<T> y(batch * 4);
    engine.infer(images, y);
    for (int i = 0; i < batch; ++i) {
      int best = 0;
      for (int k = 1; k < 4; ++k)
        if (static_cast<float>(y[static_cast<std::size_t>(i * 4 + k)]) > static_cast<float>(y[static_cast<std::size_t>(i * 4 + best)])) best = k;
      right += best == labels[static_cast<std::size_t>(i)] ? 1 : 0;
    }
  }
  INFO("accuracy " << right << " of " << 4 * batch);
  CHECK(right >= accuracy * 4 * batch);
}

}  // namespace

TEST_CASE("a small CNN learns the task in f32, and an engine with its weights classifies unseen images") {
  check_convergence<ipu::f32>(40, 0.2, 0.9);
}

TEST_CASE("the same in f16 with f32 master weights (16.32)") {
  check_convergence<ipu::f16>(40, 0.2, 0.9);
}
