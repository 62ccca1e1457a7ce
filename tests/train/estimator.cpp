// ipu::estimator (ipu/estimator.hpp): train takes its steps from a range-v3 input pipeline and
// ends with a trainer's bits for the same batches, checkpointing in model_dir; a new estimator
// in the same model_dir continues where the first stopped; warm starts take weights only;
// evaluate scores a checkpoint as an engine's outputs scored here do; the input's errors and
// bad batches come out of train and evaluate, the steps before them saved.

#include <catch2/catch.hpp>

#include "support/scratch.hpp"
#include "support/targets.hpp"
#include "train/train_support.hpp"

#include <ipu/estimator.hpp>
#include <ipu/ipu.hpp>

#include <range/v3/view/chunk.hpp>
#include <range/v3/view/drop.hpp>
#include <range/v3/view/iota.hpp>
#include <range/v3/view/transform.hpp>
#include <range/v3/view/zip.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

namespace nn = ipu::nn;

namespace estimator_tests {

using net_t = ipu_test::quadrant_net;
using target = ipu_test::small_target<16>;
constexpr ipu::train_options opts{.optimizer = ipu::sgd{.learning_rate = 0.05, .momentum = 0.9}};
using estimator_t = ipu::estimator<net_t, target, opts>;
constexpr std::int64_t batch = estimator_t::batch, sample = ipu_test::quadrant_side * ipu_test::quadrant_side;

/// `count` samples of the quadrant task drawn from `seed`, as an estimator's input reads them.
struct samples : ipu_test::quadrant_set {
  using quadrant_set::quadrant_set;
  /// The labelled batches in order, as range-v3 pairs them: (a batch's values, its labels).
  auto batches() const {
    return ranges::views::zip(x | ranges::views::chunk(batch * sample), y | ranges::views::chunk(batch));
  }
  /// Batch `b`'s values.
  std::span<const float> inputs(std::int64_t b) const {
    return std::span(x).subspan(static_cast<std::size_t>(b * batch * sample), batch * sample);
  }
  /// Batch `b`'s labels.
  std::span<const std::int32_t> labels(std::int64_t b) const {
    return std::span(y).subspan(static_cast<std::size_t>(b * batch), batch);
  }
};

ipu::estimator_config in(const std::filesystem::path& dir, std::int64_t every = 0, int keep = 5) {
  return {.model_dir = dir, .save_checkpoints_steps = every, .keep_checkpoint_max = keep};
}

std::vector<std::int64_t> steps_in(const std::filesystem::path& dir) {
  std::vector<std::int64_t> steps;
  for (const auto& [step, path] : ipu::checkpoints_in(dir)) steps.push_back(step);
  return steps;
}

bool same_weights(const ipu::weights<net_t>& a, const ipu::weights<net_t>& b) {
  for (std::size_t l = 0; l < a.size(); ++l)
    for (const ipu::weight_tensor& t : a[l].tensors())
      if (!std::ranges::equal(t.values, b[l][t.name])) return false;
  return true;
}


TEST_CASE("estimator: train's steps give a trainer's bits, and a new estimator in model_dir continues from its checkpoint") {
  const samples data(96, 21);  // 12 batches
  ipu::trainer<net_t, target, opts> reference(ipu::weights<net_t>::random(1), {2, 3});
  std::vector<float> losses;
  for (std::int64_t b = 0; b < 12; ++b) losses.push_back(reference.step(data.inputs(b), data.labels(b)));

  const auto dir = ipu_test::scratch_dir("estimator_continue");
  {
    estimator_t first(ipu::weights<net_t>::random(1), in(dir, 3, 2), {2, 3});
    const ipu::train_result r = first.train([&] { return data.batches(); }, 7);
    CHECK(r.steps == 7);
    CHECK(r.global_step == 7);
    CHECK_FALSE(r.input_ended);
    CHECK(r.checkpoint == ipu::checkpoint_path(dir, 7));
    double mean = 0;
    for (int k = 0; k < 7; ++k) mean += losses[static_cast<std::size_t>(k)];
    CHECK(r.loss == Approx(mean / 7).epsilon(1e-12));
    CHECK(steps_in(dir) == std::vector<std::int64_t>{6, 7});  // saved at 3, 6 and 7, the 2 latest kept
  }
  // Other initial weights: the checkpoint wins. The input starts anew, as TensorFlow calls
  // input_fn again: batches 7 to 11 are its first 5 after skipping 7.
  estimator_t second(ipu::weights<net_t>::random(99), in(dir, 3, 2), {2, 3});
  CHECK(second.global_step() == 7);
  const ipu::train_result r = second.train([&] { return data.batches() | ranges::views::drop(7); });
  CHECK(r.steps == 5);
  CHECK(r.global_step == 12);
  CHECK_FALSE(r.input_ended);  // no step count: the input's end is the end
  CHECK(steps_in(dir) == std::vector<std::int64_t>{9, 12});
  CHECK(same_weights(second.trainer().weights(), reference.weights()));
  CHECK(second.latest_checkpoint() == ipu::checkpoint_path(dir, 12));
}

TEST_CASE("estimator: a count of steps beyond the input ends with the input, and says so") {
  const samples data(40, 5);  // 5 batches
  const auto dir = ipu_test::scratch_dir("estimator_short");
  estimator_t est(ipu::weights<net_t>::random(1), in(dir));
  const ipu::train_result r = est.train([&] { return data.batches(); }, 8);
  CHECK(r.steps == 5);
  CHECK(r.input_ended);
  CHECK(steps_in(dir) == std::vector<std::int64_t>{5});
  CHECK(est.train([&] { return data.batches(); }, 0).steps == 0);  // nothing to do: no new checkpoint
  CHECK(steps_in(dir) == std::vector<std::int64_t>{5});
}

TEST_CASE("estimator: evaluate scores a checkpoint's weights as an engine's outputs are scored here") {
  const samples train(64, 3), test(40, 4);
  const auto dir = ipu_test::scratch_dir("estimator_evaluate");
  estimator_t est(ipu::weights<net_t>::random(1), in(dir));
  est.train([&] { return train.batches(); });
  const ipu::eval_result r = est.evaluate([&] { return test.batches(); });
  CHECK(r.checkpoint == ipu::checkpoint_path(dir, 8));
  CHECK(r.global_step == 8);
  CHECK(r.steps == 5);
  CHECK(r.samples == 40);

  // The reference: an engine with the checkpoint's weights, its softmax outputs scored here.
  ipu::engine<net_t, target> engine{ipu::load_weights<net_t>(r.checkpoint)};
  double loss = 0;
  int right = 0;
  for (std::int64_t b = 0; b < 5; ++b) {
    std::vector<float> p(static_cast<std::size_t>(batch * 4));
    engine.infer(test.inputs(b), p);
    for (std::int64_t i = 0; i < batch; ++i) {
      const auto row = std::span(p).subspan(static_cast<std::size_t>(i * 4), 4);
      const std::int32_t label = test.labels(b)[static_cast<std::size_t>(i)];
      loss -= std::log(static_cast<double>(row[static_cast<std::size_t>(label)]));
      right += std::max_element(row.begin(), row.end()) - row.begin() == label ? 1 : 0;
    }
  }
  CHECK(r.values.loss == Approx(loss / 40).epsilon(1e-9));
  CHECK(r.values.accuracy == static_cast<double>(right) / 40);
  CHECK(r.values.top5_accuracy == 1.0);  // 4 classes: always among the 5 largest

  const ipu::eval_result two = est.evaluate([&] { return test.batches(); }, r.checkpoint, 2);
  CHECK(two.steps == 2);
  CHECK(two.samples == 16);
}

TEST_CASE("estimator: a warm start takes the weights at step 0, and only when model_dir has no checkpoint") {
  const samples data(32, 8);
  const auto dir = ipu_test::scratch_dir("estimator_warm");
  const auto warm = ipu_test::scratch_dir("estimator_warm_file") / "w.safetensors";
  ipu::save_weights(warm, ipu::weights<net_t>::random(5));
  ipu::estimator_config config = in(dir);
  config.warm_start_from = warm;
  {
    estimator_t est(ipu::weights<net_t>::random(1), config);
    CHECK(est.global_step() == 0);
    CHECK(same_weights(est.trainer().weights(), ipu::load_weights<net_t>(warm)));
    est.train([&] { return data.batches(); }, 2);
  }
  estimator_t resumed(ipu::weights<net_t>::random(1), config);
  CHECK(resumed.global_step() == 2);
  CHECK(same_weights(resumed.trainer().weights(), ipu::load_weights<net_t>(ipu::checkpoint_path(dir, 2))));
}

TEST_CASE("estimator: the input's errors and bad batches come out of train, the steps before them saved") {
  const samples data(64, 2);
  SECTION("an exception in the input pipeline") {
    const auto dir = ipu_test::scratch_dir("estimator_input_error");
    estimator_t est(ipu::weights<net_t>::random(1), in(dir));
    CHECK(est.train([&] { return data.batches(); }, 3).steps == 3);
    const auto throwing = [&] {
      return ranges::views::iota(0, 8) | ranges::views::transform([&](int b) {
               if (b == 3) throw std::runtime_error("record 3 is corrupt");
               return std::pair(data.inputs(b), data.labels(b));
             });
    };
    CHECK_THROWS_WITH(est.train(throwing), "record 3 is corrupt");
    CHECK(steps_in(dir) == std::vector<std::int64_t>{3, 6});
  }
  SECTION("a batch of the wrong size, and a label out of range") {
    const auto dir = ipu_test::scratch_dir("estimator_bad_batch");
    estimator_t est(ipu::weights<net_t>::random(1), in(dir));
    const std::vector<std::int32_t> seven(7, 1), bad(8, 4);
    CHECK_THROWS_WITH(est.train([&] { return std::vector{std::pair(data.inputs(0), std::span(seven))}; }),
                      "ipu::labelled_batch: 7 labels for a batch of 8");
    CHECK_THROWS_WITH(est.train([&] { return std::vector{std::pair(data.inputs(0).first(100), data.labels(0))}; }),
                      "ipu::tensor: 100 values given, the tensor [8, 6, 6, 1] holds 288");
    CHECK_THROWS_WITH(est.train([&] { return std::vector{std::pair(data.inputs(0), std::span(bad))}; }),
                      Catch::Contains("label 0 is 4"));
    CHECK_THROWS_WITH(est.evaluate([&] { return std::vector{std::pair(data.inputs(0), std::span(bad))}; }),
                      Catch::Contains("label 0 of batch 0 is 4; the model has 4 classes"));
  }
}

TEST_CASE("estimator: no checkpoint to evaluate, a bad config, and the log lines") {
  const auto dir = ipu_test::scratch_dir("estimator_misuse");
  const samples data(32, 1);
  estimator_t est(ipu::weights<net_t>::random(1), in(dir));
  CHECK_THROWS_MATCHES(est.evaluate([&] { return data.batches(); }), ipu::checkpoint_error,
                       Catch::Matchers::Message("ipu::estimator::evaluate: no checkpoint in " + dir.string() +
                                                " (train first, or name a checkpoint)"));
  CHECK_THROWS_WITH(estimator_t(ipu::weights<net_t>::random(1), {}), "ipu::estimator: the config has no model_dir");
  CHECK_THROWS_AS(estimator_t(ipu::weights<net_t>::random(1), in(dir, -1)), std::invalid_argument);
  CHECK_THROWS_AS(est.train([&] { return data.batches(); }, -1), std::invalid_argument);

  std::ostringstream log;
  ipu::estimator_config logged = in(ipu_test::scratch_dir("estimator_log"));
  logged.log_step_count_steps = 2;
  logged.log = &log;
  estimator_t talking(ipu::weights<net_t>::random(1), logged);
  talking.train([&] { return data.batches(); });
  std::vector<std::string> lines;
  std::istringstream text(log.str());
  for (std::string line; std::getline(text, line);) lines.push_back(line);
  REQUIRE(lines.size() == 2);
  CHECK(lines[0].starts_with("ipu::estimator: step 2, loss = "));
  CHECK(lines[1].starts_with("ipu::estimator: step 4, loss = "));
  CHECK(lines[1].ends_with(" steps/s)"));
}

}  // namespace estimator_tests
