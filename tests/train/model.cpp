// ipu::model (ipu/model.hpp): fit learns and reports a history and progress; an interrupted
// fit, resumed from its checkpoints by a new model, ends with the bits of an uninterrupted one;
// evaluate agrees with an engine's outputs scored here; the callbacks stop training and set
// the rate; bad input is an error that says what is wrong.

#include <catch2/catch.hpp>

#include "support/scratch.hpp"
#include "support/targets.hpp"
#include "train/train_support.hpp"

#include <ipu/ipu.hpp>
#include <ipu/model.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace nn = ipu::nn;

namespace model_tests {

constexpr int side = ipu_test::quadrant_side;
using net_t = ipu_test::quadrant_net;
using target = ipu_test::small_target<16>;
constexpr ipu::train_options opts{.optimizer = ipu::sgd{.learning_rate = 0.05, .momentum = 0.9}};
using model_t = ipu::model<net_t, target, opts>;
using samples = ipu_test::quadrant_set;

/// Throws after step `at`: a crash in the middle of an epoch.
struct crash_at : ipu::callback {
  std::int64_t at;
  explicit crash_at(std::int64_t step) : at(step) {}
  void on_batch_end(ipu::training_session&, const ipu::batch_logs& b) override {
    if (b.step == at) throw std::runtime_error("crash");
  }
};

TEST_CASE("fit learns the task, with a history of every epoch and a line per epoch") {
  const samples train(203, 1), test(100, 2);  // 25 steps an epoch; 3 samples left out
  model_t m{ipu::weights<net_t>::random(1), {2, 3}};
  std::ostringstream out;
  const ipu::history h = m.fit(train.x, train.y, {.epochs = 4, .validation = {test.x, test.y}, .verbose = ipu::verbosity::lines, .out = &out});
  REQUIRE(h.epochs.size() == 4);
  for (int e = 0; e < 4; ++e) {
    const ipu::epoch_logs& l = h.epochs[static_cast<std::size_t>(e)];
    INFO("epoch " << e << ": loss " << l.loss << ", accuracy " << l.accuracy);
    CHECK(l.epoch == e);
    CHECK(l.steps == 25);
    CHECK(l.seconds > 0);
    REQUIRE(l.validation);
  }
  CHECK(m.trainer().steps() == 100);
  CHECK(h.epochs.back().loss < 0.5 * h.epochs.front().loss);
  CHECK(h.epochs.back().validation->accuracy > 0.9);
  // Keras' lines: "Epoch 1/4", then "25/25 [====...] - 0s 2ms/step - loss: ... - val_accuracy: ...".
  std::istringstream lines(out.str());
  std::string line;
  for (int e = 1; e <= 4; ++e) {
    std::getline(lines, line);
    CHECK(line == "Epoch " + std::to_string(e) + "/4");
    std::getline(lines, line);
    CHECK_THAT(line, Catch::Matches(R"(25/25 \[={30}\] - \d+s \d+ms/step - loss: \d\.\d{4} - accuracy: \d\.\d{4} - )"
                                    R"(val_loss: \d\.\d{4} - val_accuracy: \d\.\d{4})"));
  }
  CHECK(!std::getline(lines, line));
}

TEST_CASE("a fit interrupted mid-epoch and resumed from its checkpoints by a new model ends with the uninterrupted bits") {
  const samples train(100, 4);  // 12 steps an epoch
  model_t uninterrupted{ipu::weights<net_t>::random(1), {2, 3}};
  uninterrupted.fit(train.x, train.y, {.epochs = 3, .seed = 9, .verbose = ipu::verbosity::silent});

  const auto dir = ipu_test::scratch_dir("model_resume");
  {
    model_t first{ipu::weights<net_t>::random(1), {2, 3}};
    ipu::checkpoints backup{dir, 5, 2};
    crash_at crash{17};  // after the checkpoints of steps 5, 10, 12 (the first epoch's end) and 15
    REQUIRE_THROWS_WITH(first.fit(train.x, train.y, {.epochs = 3, .seed = 9, .verbose = ipu::verbosity::silent}, {&backup, &crash}),
                        "crash");
  }
  std::vector<std::int64_t> kept;
  for (const auto& [step, path] : ipu::checkpoints_in(dir)) kept.push_back(step);
  CHECK(kept == std::vector<std::int64_t>{12, 15});
  CHECK(ipu::latest_checkpoint(dir) == ipu::checkpoint_path(dir, 15));

  model_t resumed{ipu::weights<net_t>::random(2), {2, 4}};  // other weights and seed: the checkpoint's win
  ipu::checkpoints backup{dir, 5, 2};
  const ipu::history h = resumed.fit(train.x, train.y, {.epochs = 3, .seed = 9, .verbose = ipu::verbosity::silent}, {&backup});
  CHECK(backup.restored_step() == 15);
  REQUIRE(h.epochs.size() == 2);  // the rest of the second epoch, then the third
  CHECK(h.epochs[0].epoch == 1);
  CHECK(h.epochs[0].steps == 9);
  CHECK(h.epochs[1].steps == 12);
  CHECK(ipu_test::first_difference(resumed.weights(), uninterrupted.weights()).empty());
  CHECK(resumed.trainer().state().optimizer == uninterrupted.trainer().state().optimizer);
  std::filesystem::remove_all(dir);
}

TEST_CASE("evaluate scores an engine's outputs: loss, accuracy and top-5 accuracy") {
  const samples train(96, 5), test(21, 6);  // 21: the last batch padded
  model_t m{ipu::weights<net_t>::random(1), {2, 3}};
  m.fit(train.x, train.y, {.epochs = 1, .verbose = ipu::verbosity::silent});
  const ipu::metrics got = m.evaluate(test.x, test.y);

  ipu::engine<net_t, target> engine{m.weights()};
  std::vector<float> batch_x(8 * side * side), batch_y(8 * 4);
  double loss = 0;
  int right = 0;
  for (int first = 0; first < 21; first += 8) {
    std::fill(batch_x.begin(), batch_x.end(), 0.0f);
    const int count = std::min(8, 21 - first);
    std::copy_n(test.x.begin() + first * side * side, count * side * side, batch_x.begin());
    engine.infer(batch_x, batch_y);
    for (int i = 0; i < count; ++i) {
      const auto row = batch_y.begin() + i * 4;
      const int label = test.y[static_cast<std::size_t>(first + i)];
      loss -= std::log(static_cast<double>(row[label]));
      right += std::max_element(row, row + 4) - row == label ? 1 : 0;
    }
  }
  CHECK(got.loss == Approx(loss / 21).epsilon(1e-12));
  CHECK(got.accuracy == Approx(right / 21.0).epsilon(1e-12));
  CHECK(got.top5_accuracy == 1.0);  // 4 classes: every class is among the 5 largest
  const std::vector<float> p = m.predict(test.x);
  CHECK(p.size() == 21 * 4);
}

TEST_CASE("early stopping ends fit, the scheduler sets each epoch's rate") {
  const samples train(64, 7);
  model_t m{ipu::weights<net_t>::random(1), {2, 3}};
  ipu::early_stopping stop{1, 100.0};  // no fall of the loss is enough: stops after 1 + patience epochs
  ipu::learning_rate_scheduler rate{[](int epoch, double) { return 0.1 / (1 << epoch); }};
  const ipu::history h = m.fit(train.x, train.y, {.epochs = 10, .verbose = ipu::verbosity::silent}, {&stop, &rate});
  REQUIRE(h.epochs.size() == 2);
  CHECK(stop.stopped_epoch() == 1);
  CHECK(h.epochs[0].learning_rate == 0.1);
  CHECK(h.epochs[1].learning_rate == 0.05);
}

TEST_CASE("fit, evaluate and predict refuse inputs that are not whole samples, and a progress bar redraws in place") {
  const samples train(16, 8);
  model_t m{ipu::weights<net_t>::random(1), {2, 3}};
  const std::span<const float> x(train.x);
  const std::span<const std::int32_t> y(train.y);
  REQUIRE_THROWS_MATCHES(m.fit(x.first(100), y), std::invalid_argument,
                         Catch::Matchers::Message("ipu::model::fit: 100 input values for 16 labels; a sample has 36"));
  REQUIRE_THROWS_MATCHES(m.fit(x.first(7 * 36), y.first(7)), std::invalid_argument,
                         Catch::Matchers::Message("ipu::model::fit: 7 samples, fewer than a batch of 8"));
  REQUIRE_THROWS_MATCHES(m.predict(x.first(35)), std::invalid_argument,
                         Catch::Matchers::Message("ipu::model::predict: 35 input values are not whole samples of 36"));
  std::vector<std::int32_t> bad(train.y);
  bad[3] = 4;
  REQUIRE_THROWS_MATCHES(m.evaluate(x, bad), std::invalid_argument,
                         Catch::Matchers::Message("ipu::model::evaluate: label 3 is 4; the model has 4 classes"));
  std::ostringstream out;
  m.fit(x, y, {.epochs = 1, .verbose = ipu::verbosity::bar, .out = &out});
  CHECK_THAT(out.str(), Catch::StartsWith("Epoch 1/1\n\r1/2 [===============>..............] - ETA: "));
  CHECK_THAT(out.str(), Catch::Contains("\r2/2 [==============================] - "));
}

}  // namespace model_tests
