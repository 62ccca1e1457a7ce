// The faithful trainer: every buffer of the training plan on the tiles' memory images. It gives
// the fast trainer's bits (losses, gradients, weights over steps), its measured bytes equal the
// plan's on every tile at every step, and the highest byte of each tile the plan's extent.

#include <catch2/catch.hpp>

#include "support/targets.hpp"
#include "train/train_support.hpp"

#include <ipu/ipu.hpp>

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

namespace nn = ipu::nn;

namespace {

using faithful_target = ipu_test::small_target<16>;

// Every kind of buffer: grouped convolutions (one at stride 2), batch norms, a pooling, a
// residual block, a concat, dropouts (one at a block's start), a dense layer, a fused softmax.
template <class T>
constexpr auto faithful_net = ipu::input<T, 2, 6, 6, 3>
    | nn::conv<8, 3> | nn::batch_norm | nn::relu
    | nn::residual(nn::dropout<0.25> | nn::conv<8, 1> | nn::batch_norm | nn::relu | nn::conv<8, 3, 1, 4> | nn::batch_norm)
    | nn::relu | nn::max_pool<2, 2>
    | nn::concat(nn::identity, nn::conv<4, 1> | nn::relu) | nn::conv<12, 3, 2, 3>
    | nn::global_avg_pool | nn::dropout<0.5> | nn::dense<3> | nn::softmax;

// The same in f16, with a recompute checkpoint after the stem.
constexpr auto faithful_marked = ipu::input<ipu::f16, 2, 6, 6, 3>
    | nn::conv<8, 3> | nn::batch_norm | nn::relu | nn::checkpoint
    | nn::residual(nn::dropout<0.25> | nn::conv<8, 1> | nn::batch_norm | nn::relu | nn::conv<8, 3, 1, 4> | nn::batch_norm)
    | nn::relu | nn::max_pool<2, 2>
    | nn::concat(nn::identity, nn::conv<4, 1> | nn::relu) | nn::conv<12, 3, 2, 3>
    | nn::global_avg_pool | nn::dropout<0.5> | nn::dense<3> | nn::softmax;

// "16.32" with Adam (master weights and two state tensors), recomputing per block.
constexpr ipu::train_options mixed_per_block{.optimizer = ipu::adam{.learning_rate = 0.01},
                                             .recompute = ipu::recompute::per_block, .loss_scaling = 64};
// "16.16" with LAMB, stochastic rounding and dynamic loss scaling from 2^15, which overflows
// f16 and skips updates at first; recomputing at the checkpoints.
constexpr ipu::train_options half_checkpoints{.optimizer = ipu::lamb{.learning_rate = 0.01},
                                              .recompute = ipu::recompute::checkpoints,
                                              .master_weights = ipu::dtype::f16,
                                              .loss_scaling = ipu::dynamic_loss_scaling()};
// f32 with Nesterov momentum, everything stashed.
constexpr ipu::train_options f32_nesterov{
    .optimizer = ipu::sgd{.learning_rate = 0.05, .momentum = 0.9, .weight_decay = 1e-4, .nesterov = true}};

/// Trains `G` with `Opts` in both modes from the same weights for `steps` steps: the same loss,
/// gradients and weights, bit for bit; then the faithful trainer's measured bytes against the
/// plan's, every tile at every step. Returns the steps skipped for an overflow.
template <class G, ipu::train_options Opts>
std::int64_t check_faithful(int steps = 3) {
  const auto w = ipu::weights<G>::random(3);
  const auto x = ipu_test::random_input<G>(4);
  const auto labels = ipu_test::random_labels(2, 3, 5);
  ipu::trainer<G, faithful_target, Opts> fast{w, {2, 7}};
  ipu::faithful_trainer<G, faithful_target, Opts> faithful{w, {2, 7}};
  for (int step = 0; step < steps; ++step) {
    INFO("step " << step);
    CHECK(faithful.step(std::span(x.data(), x.size()), labels) == fast.step(std::span(x.data(), x.size()), labels));
    CHECK(ipu_test::first_difference(faithful.gradients(), fast.gradients()).empty());
    CHECK(ipu_test::first_difference(faithful.weights(), fast.weights()).empty());
    CHECK(faithful.skipped_steps() == fast.skipped_steps());
  }

  constexpr auto& plan = ipu::plan_v<ipu::training<G, Opts>, faithful_target>;
  int differing = 0, steps_with_recompute = 0;
  for (int s = 0; s < static_cast<int>(plan.step_count); ++s) {
    steps_with_recompute += plan.steps[static_cast<std::size_t>(s)].phase == ipu::step_phase::recompute ? 1 : 0;
    for (int tile = 0; tile < faithful_target::chip.tiles; ++tile)
      if (!(faithful.measured_usage(tile, s) == plan.usage(tile, s))) {
        if (differing++ == 0) {
          const ipu::training_bytes m = faithful.measured_usage(tile, s), p = plan.usage(tile, s);
          INFO("step " << s << ", tile " << tile << ": measured " << m.total() << " bytes, planned " << p.total()
                       << " (activations " << m.activations << " / " << p.activations << ", recomputed "
                       << m.recomputed << " / " << p.recomputed << ", gradients " << m.gradients << " / "
                       << p.gradients << ", temporaries " << m.temporaries << " / " << p.temporaries << ")");
          CHECK(false);
        }
      }
  }
  CHECK(differing == 0);
  CHECK((Opts.recompute == ipu::recompute::none) == (steps_with_recompute == 0));
  std::int64_t highest = 0;
  for (int tile = 0; tile < faithful_target::chip.tiles; ++tile) {
    CHECK(faithful.measured_extent(tile) == plan.extent_on(tile));
    highest = std::max(highest, faithful.measured_extent(tile));
  }
  CHECK(highest == plan.ipus[0].peak);
  return fast.skipped_steps();
}

}  // namespace

TEST_CASE("faithful training in 16.32 with Adam, recomputing per block, gives the fast trainer's bits and the plan's bytes") {
  check_faithful<decltype(faithful_net<ipu::f16>), mixed_per_block>();
}

TEST_CASE("faithful training in f32 with Nesterov momentum, everything stashed, gives the fast trainer's bits and the plan's bytes") {
  check_faithful<decltype(faithful_net<ipu::f32>), f32_nesterov>();
}

TEST_CASE("faithful training in 16.16 with LAMB, skipping steps on overflow, recomputing at checkpoints, gives the fast trainer's bits and the plan's bytes") {
  const std::int64_t skipped = check_faithful<decltype(faithful_marked), half_checkpoints>(8);
  CHECK(skipped > 0);
  CHECK(skipped < 8);
}

TEST_CASE("a faithful trainer names a tile and a step outside the plan") {
  using G = decltype(faithful_net<ipu::f32>);
  ipu::faithful_trainer<G, faithful_target, f32_nesterov> faithful{ipu::weights<G>::random(3), {1}};
  CHECK_THROWS_AS(faithful.measured_usage(-1, 0), std::out_of_range);
  CHECK_THROWS_AS(faithful.measured_usage(0, 1000), std::out_of_range);
  CHECK_THROWS_AS(faithful.measured_extent(faithful_target::chip.tiles), std::out_of_range);
}
