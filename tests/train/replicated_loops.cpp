// ipu::model and ipu::estimator on a replicated target: fit and train step as a
// replicated_trainer on the same samples, bit for bit; predict, evaluate and the estimator's
// evaluate run a batch on every replica and score what one engine's outputs score here; a
// replicated trainer's checkpoint continues a replicated trainer, or one trainer.

#include <catch2/catch.hpp>

#include "support/scratch.hpp"
#include "support/targets.hpp"
#include "train/train_support.hpp"

#include <ipu/estimator.hpp>
#include <ipu/ipu.hpp>
#include <ipu/model.hpp>

#include <range/v3/view/chunk.hpp>
#include <range/v3/view/zip.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <span>
#include <type_traits>
#include <vector>

namespace replicated_loops {

constexpr int side = ipu_test::quadrant_side;
constexpr std::int64_t sample = side * side;
using net_t = ipu_test::quadrant_net;  // batches of 8
using target = ipu_test::small_target<16>;
using two_replicas = ipu::replicated<ipu::system<target, 2>, 2>;
constexpr ipu::train_options opts{.optimizer = ipu::sgd{.learning_rate = 0.05, .momentum = 0.9}};
using model_t = ipu::model<net_t, two_replicas, opts>;
using reference_t = ipu::replicated_trainer<net_t, two_replicas, opts>;

static_assert(std::is_same_v<model_t::trainer_type, reference_t>);
static_assert(std::is_same_v<reference_t::replica_type, ipu::trainer<net_t, target, opts>>);  // one replica: one IPU of `target`
static_assert(std::is_same_v<model_t::engine_type, ipu::replicated_engine<net_t, two_replicas>>);
static_assert(std::is_same_v<ipu::model<net_t, target, opts>::trainer_type, ipu::trainer<net_t, target, opts>>);
static_assert(model_t::batch == 16 && model_t::micro_batch == 8 && model_t::replicas == 2);

bool same_weights(const ipu::weights<net_t>& a, const ipu::weights<net_t>& b) {
  for (std::size_t l = 0; l < a.size(); ++l)
    for (const ipu::weight_tensor& t : a[l].tensors())
      if (!std::ranges::equal(t.values, b[l][t.name])) return false;
  return true;
}

/// The mean loss and the accuracy of one engine of `w` on the samples of `data`, a batch at a
/// time, the last padded with zeros.
std::pair<double, double> scored_by_one_engine(const ipu::weights<net_t>& w, const ipu_test::quadrant_set& data) {
  ipu::engine<net_t, target> engine{w};
  const auto n = static_cast<std::int64_t>(data.y.size());
  std::vector<float> x(8 * sample), y(8 * 4);
  double loss = 0;
  std::int64_t right = 0;
  for (std::int64_t first = 0; first < n; first += 8) {
    const std::int64_t count = std::min<std::int64_t>(8, n - first);
    std::fill(x.begin(), x.end(), 0.0f);
    std::copy_n(data.x.begin() + first * sample, count * sample, x.begin());
    engine.infer(x, y);
    for (std::int64_t i = 0; i < count; ++i) {
      const auto row = y.begin() + i * 4;
      const int label = data.y[static_cast<std::size_t>(first + i)];
      loss -= std::log(static_cast<double>(row[label]));
      right += std::max_element(row, row + 4) - row == label ? 1 : 0;
    }
  }
  return {loss / static_cast<double>(n), static_cast<double>(right) / static_cast<double>(n)};
}

TEST_CASE("model on two replicas: fit steps as a replicated trainer, predict and evaluate as one engine scores") {
  const ipu_test::quadrant_set train(64, 5), test(37, 6);  // 4 steps of 16; 37: 5 batches, the last padded
  model_t m{ipu::weights<net_t>::random(1), {2, 3}};
  const ipu::history h = m.fit(train.x, train.y, {.epochs = 1, .shuffle = false, .verbose = ipu::verbosity::silent});
  reference_t reference{ipu::weights<net_t>::random(1), {2, 3}};
  double loss = 0;
  for (std::size_t b = 0; b < 4; ++b)
    loss += reference.step(std::span(train.x).subspan(b * 16 * sample, 16 * sample), std::span(train.y).subspan(b * 16, 16));
  REQUIRE(h.epochs.size() == 1);
  CHECK(h.epochs[0].steps == 4);
  CHECK(h.epochs[0].loss == Approx(loss / 4).epsilon(1e-12));
  CHECK(same_weights(m.weights(), reference.weights()));
  CHECK(m.trainer().steps() == 4);
  CHECK(m.trainer().logits().size() == 16 * 4);  // both replicas' rows

  const auto [expected_loss, expected_accuracy] = scored_by_one_engine(m.weights(), test);
  const ipu::metrics got = m.evaluate(test.x, test.y);
  CHECK(got.loss == Approx(expected_loss).epsilon(1e-12));
  CHECK(got.accuracy == Approx(expected_accuracy).epsilon(1e-12));
  CHECK(m.predict(test.x).size() == 37 * 4);
}

TEST_CASE("a replicated trainer's checkpoint continues a replicated trainer, or one trainer, with the same bits") {
  const ipu_test::quadrant_set data(48, 9);
  const auto step_on = [&](auto& t, std::size_t b) {
    return t.step(std::span(data.x).subspan(b * 16 * sample, 16 * sample), std::span(data.y).subspan(b * 16, 16));
  };
  reference_t first{ipu::weights<net_t>::random(2), {2, 3}};
  step_on(first, 0);
  step_on(first, 1);
  const auto path = ipu_test::scratch_dir("replicated_checkpoint") / "ckpt.safetensors";
  ipu::save_checkpoint(path, first);
  const ipu::weights<net_t> weights_at_two = first.weights();
  const ipu::trainer_state state_at_two = first.state();

  reference_t resumed{ipu::weights<net_t>::random(7), {2, 3}};
  ipu::restore_checkpoint(path, resumed);
  CHECK(resumed.steps() == 2);
  CHECK(same_weights(resumed.replica(1).weights(), first.weights()));
  CHECK(step_on(resumed, 2) == step_on(first, 2));
  CHECK(same_weights(resumed.weights(), first.weights()));

  ipu::trainer<net_t, target, opts> one{ipu::weights<net_t>::random(7)};
  ipu::restore_checkpoint(path, one);
  CHECK(one.steps() == 2);
  CHECK(one.state().optimizer == state_at_two.optimizer);
  CHECK(same_weights(one.weights(), weights_at_two));
}

TEST_CASE("estimator on two replicas: a step takes two batches, and evaluate runs two at once") {
  const ipu_test::quadrant_set data(96, 21), test(40, 22);  // 12 batches: 6 steps; 5 batches to score
  const auto batches = [](const ipu_test::quadrant_set& s) {
    return ranges::views::zip(s.x | ranges::views::chunk(8 * sample), s.y | ranges::views::chunk(8));
  };
  const auto dir = ipu_test::scratch_dir("replicated_estimator");
  ipu::estimator<net_t, two_replicas, opts> est(ipu::weights<net_t>::random(1), {.model_dir = dir}, {2, 3});
  static_assert(decltype(est)::batch == 16);
  const ipu::train_result r = est.train([&] { return batches(data); });
  CHECK(r.steps == 6);
  reference_t reference{ipu::weights<net_t>::random(1), {2, 3}};
  for (std::size_t b = 0; b < 6; ++b)
    reference.step(std::span(data.x).subspan(b * 16 * sample, 16 * sample), std::span(data.y).subspan(b * 16, 16));
  CHECK(same_weights(est.trainer().weights(), reference.weights()));

  const ipu::eval_result e = est.evaluate([&] { return batches(test); });
  CHECK(e.steps == 5);
  CHECK(e.samples == 40);
  const auto [expected_loss, expected_accuracy] = scored_by_one_engine(ipu::load_weights<net_t>(r.checkpoint), test);
  CHECK(e.values.loss == Approx(expected_loss).epsilon(1e-12));
  CHECK(e.values.accuracy == Approx(expected_accuracy).epsilon(1e-12));
}

}  // namespace replicated_loops
