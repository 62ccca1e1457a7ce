// The examples of docs/training.md, compiled and run. Keep the two in step.
#include <ipu/checkpoint.hpp>
#include <ipu/data/pipeline.hpp>
#include <ipu/estimator.hpp>
#include <ipu/ipu.hpp>
#include <ipu/model.hpp>

#include <range/v3/view/chunk.hpp>
#include <range/v3/view/join.hpp>
#include <range/v3/view/take.hpp>
#include <range/v3/view/transform.hpp>
#include <range/v3/view/zip.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

// A namespace of its own: the guides' examples that run engines are one translation unit
// (tests/CMakeLists.txt).
namespace training_doc {

namespace {
namespace nn = ipu::nn;

// [model]
using net_t = decltype(ipu::input<ipu::f32, /*N*/ 8, /*H*/ 8, /*W*/ 8, /*C*/ 3>
                       | nn::conv<16, 3> | nn::batch_norm | nn::relu
                       | nn::residual(nn::conv<16, 3> | nn::batch_norm | nn::relu | nn::conv<16, 3> | nn::batch_norm)
                       | nn::relu | nn::global_avg_pool | nn::dense<10> | nn::softmax);

constexpr ipu::train_options opts{
    .optimizer = ipu::sgd{.learning_rate = 0.1, .momentum = 0.9, .weight_decay = 1e-4},
    .loss = ipu::loss::softmax_cross_entropy,
    .schedule = ipu::cosine_decay(/*steps*/ 1000, /*warm-up*/ 50)};
// [model]

// [fit]
using training_t = ipu::training<net_t, opts>;
static_assert(ipu::require_fit<training_t, ipu::mk2>);  // weights, optimiser state, stash, gradients

constexpr const ipu::training_memory& m = ipu::plan_v<training_t, ipu::mk2>.ipus[0];
static_assert(m.totals.optimizer_state == 4 * ipu::param_count_v<net_t>);  // momentum, in f32
// [fit]

// [precision]
using half_net_t = decltype(ipu::input<ipu::f16, 8, 8, 8, 3>
                            | nn::conv<16, 3> | nn::batch_norm | nn::relu
                            | nn::global_avg_pool | nn::dense<10> | nn::softmax);

constexpr ipu::train_options sixteen_sixteen{
    .optimizer = ipu::sgd{.learning_rate = 0.1, .momentum = 0.9},
    .master_weights = ipu::dtype::f16,              // "16.16": f16 weights and momentum
    .rounding = ipu::rounding::stochastic,          // the default
    .loss_scaling = ipu::dynamic_loss_scaling()};   // 2^15, halved on overflow
// [precision]

// [dropout]
constexpr auto classifier = ipu::input<ipu::f32, 8, 28, 28, 1>
    | nn::conv<16, 3> | nn::relu | nn::max_pool<2, 2>
    | nn::flatten | nn::dropout<0.5> | nn::dense<10>;

constexpr const ipu::node& dense = ipu::node_table_v<decltype(classifier)>.back();
static_assert(dense.dropout[0].rate == 0.5 && dense.dropout[0].site == 0);  // dense1 reads its input dropped out
// [dropout]
}  // namespace

TEST_CASE("docs/training.md: train, read the gradients, run the trained weights") {
  std::vector<float> images(8 * 8 * 8 * 3, 0.5f);
  std::vector<std::int32_t> labels{0, 1, 2, 3, 4, 5, 6, 7};
  // [train]
  ipu::trainer<net_t, ipu::mk2, opts> trainer{ipu::weights<net_t>::random(1)};
  float loss = trainer.step(images, labels);          // forward, loss, backward, update

  loss = trainer.backward(images, labels);           // forward and backward only
  std::span<const float> g = trainer.gradients()["conv1"]["kernel"];
  trainer.update();                                   // the optimiser, at the schedule's rate

  ipu::engine<net_t, ipu::mk2> engine{trainer.weights()};  // inference with the trained weights
  // [train]
  // [profile]
  ipu::training_profile profile = trainer.profile();      // the plan's steps: cycles, host times
  double simulated = profile.simulated_samples_per_second();  // on the target, by the cycle model
  double measured = profile.measured_samples_per_second();    // on this host
  // [profile]
  CHECK(simulated > measured);
  CHECK(measured > 0);
  CHECK(loss > 0);
  CHECK(g.size() == 3 * 3 * 3 * 16);
  CHECK(trainer.steps() == 2);
  CHECK(trainer.learning_rate() == Approx(0.1 * 3 / 50));
  ipu::output_tensor_t<net_t> y;
  engine.infer(images, y);
  CHECK(y(0, 0) > 0);
}

TEST_CASE("docs/training.md: checkpoints") {
  std::vector<float> images(8 * 8 * 8 * 3, 0.5f);
  std::vector<std::int32_t> labels{0, 1, 2, 3, 4, 5, 6, 7};
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "ipu_training_doc";
  std::filesystem::create_directories(dir);
  ipu::trainer<net_t, ipu::mk2, opts> trainer{ipu::weights<net_t>::random(1)};
  trainer.step(images, labels);
  // [checkpoint]
  ipu::save_checkpoint(dir / "ckpt-1.safetensors", trainer);  // weights, optimiser state, steps, seed

  ipu::trainer<net_t, ipu::mk2, opts> resumed{ipu::weights<net_t>{}};
  ipu::restore_checkpoint(dir / "ckpt-1.safetensors", resumed);  // continues with the same bits

  ipu::save_weights(dir / "net.safetensors", trainer.weights());  // the weights alone
  ipu::engine<net_t, ipu::mk2> engine{ipu::load_weights<net_t>(dir / "net.safetensors")};
  // [checkpoint]
  CHECK(resumed.step(images, labels) == trainer.step(images, labels));
  CHECK(resumed.steps() == 2);
  std::filesystem::remove_all(dir);
}

TEST_CASE("docs/training.md: fit, evaluate and predict") {
  const std::vector<float> x(16 * 8 * 8 * 3, 0.5f), x_test(10 * 8 * 8 * 3, 0.25f);
  const std::vector<std::int32_t> y{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4, 5}, y_test{0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "ipu_training_doc_fit";
  std::filesystem::remove_all(dir);
  // [fit]
  ipu::model<net_t, ipu::mk2, opts> model{ipu::weights<net_t>::random(1)};
  ipu::checkpoints backup{dir / "model"};         // each epoch; resumes from the latest
  ipu::early_stopping stop{/*patience*/ 2};
  ipu::history h = model.fit(x, y, {.epochs = 3, .validation = {x_test, y_test}}, {&backup, &stop});

  ipu::metrics m = model.evaluate(x_test, y_test);  // loss, accuracy, top-5 accuracy
  std::vector<float> p = model.predict(x_test);     // 10 probabilities per image
  // [fit]
  CHECK(h.epochs.size() == 3);
  CHECK(m.loss > 0);
  CHECK(p.size() == 10 * 10);
  CHECK(ipu::latest_checkpoint(dir / "model") == ipu::checkpoint_path(dir / "model", 6));
  std::filesystem::remove_all(dir);
}

TEST_CASE("docs/training.md: the estimator's train and evaluate") {
  const std::vector<float> x(16 * 8 * 8 * 3, 0.5f);
  const std::vector<std::int32_t> y{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4, 5};
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "ipu_training_doc_estimator";
  std::filesystem::remove_all(dir);
  // [estimator]
  namespace rv = ranges::views;
  ipu::estimator<net_t, ipu::mk2, opts> est{ipu::weights<net_t>::random(1),
                                            {.model_dir = dir / "run", .save_checkpoints_steps = 100}};
  const auto input_fn = [&] {                                // (a batch's values, its labels)
    return rv::zip(x | rv::chunk(8 * 8 * 8 * 3), y | rv::chunk(8));
  };
  ipu::train_result t = est.train(input_fn, /*steps*/ 2);    // writes ckpt-2 as it returns
  ipu::eval_result e = est.evaluate(input_fn, est.latest_checkpoint());
  // [estimator]
  CHECK(t.global_step == 2);
  CHECK(e.global_step == 2);
  CHECK(e.samples == 16);
  std::filesystem::remove_all(dir);
}

TEST_CASE("docs/training.md: a host pipeline of 8-bit images, shuffled and normalised") {
  const std::vector<std::uint8_t> bytes(20 * 8 * 8 * 3, 128);
  const std::vector<std::int32_t> labels(20, 3);
  const std::span<const std::uint8_t> images(bytes);
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "ipu_training_doc_pipeline";
  std::filesystem::remove_all(dir);
  ipu::estimator<net_t, ipu::mk2, opts> est{ipu::weights<net_t>::random(1), {.model_dir = dir}};
  const int epoch = 0;
  // [pipeline]
  namespace rv = ranges::views;
  constexpr std::int64_t batch = 8, size = 8 * 8 * 3;                  // samples, values per sample
  const std::vector<std::int64_t> order = ipu::data::shuffled(labels.size(), /*seed*/ 7, epoch);
  const auto input_fn = [&] {
    auto kept = order | rv::take(order.size() / batch * batch);     // whole batches
    auto values = kept | rv::transform([&](std::int64_t i) { return images.subspan(i * size, size); })
                | rv::join | rv::transform(ipu::data::normalise{.scale = 1 / 255.0f, .mean = 0.5f, .stddev = 0.25f});
    auto classes = kept | rv::transform([&](std::int64_t i) { return labels[i]; });
    return rv::zip(values | rv::chunk(batch * size), classes | rv::chunk(batch));
  };
  est.train(input_fn);                                                 // 2 steps; 4 images left out
  // [pipeline]
  CHECK(est.global_step() == 2);
  std::filesystem::remove_all(dir);
}

TEST_CASE("docs/training.md: faithful mode measures the plan's bytes") {
  std::vector<float> images(8 * 8 * 8 * 3, 0.5f);
  std::vector<std::int32_t> labels{0, 1, 2, 3, 4, 5, 6, 7};
  const auto w = ipu::weights<net_t>::random(2);
  // [faithful]
  ipu::trainer<net_t, ipu::mk2, opts> fast{w};
  ipu::faithful_trainer<net_t, ipu::mk2, opts> faithful{w};
  const float loss = faithful.step(images, labels);
  CHECK(loss == fast.step(images, labels));                          // the same bits
  constexpr auto& plan = ipu::plan_v<training_t, ipu::mk2>;
  for (int s = 0; s < static_cast<int>(plan.step_count); ++s)
    CHECK(faithful.measured_usage(/*tile*/ 0, s) == plan.usage(0, s));  // the plan's bytes, by category
  CHECK(faithful.measured_extent(0) == plan.extent_on(0));             // its highest byte
  // [faithful]
  CHECK(loss > 0);
}

TEST_CASE("docs/training.md: the summary of a training configuration") {
  std::ostringstream out;
  {
    std::streambuf* const console = std::cout.rdbuf(out.rdbuf());
    // [summary]
    std::cout << ipu::summary<training_t>();
    // [summary]
    std::cout.rdbuf(console);
  }
  // The lines the guide shows.
  CHECK(out.str().find("training: SGD with momentum (1 state tensor), master weights f32, recompute none\n"
                       "  loss softmax_cross_entropy, learning rate 0.1, cosine decay over 1,000 steps to 0 times it, after 50 "
                       "steps of linear warm-up\n"
                       "  trained values: 5,306 of 5,402; f32 master copies: 0; optimiser state: 5,306 values\n"
                       "  MACs of a step: 2,581,760 forward, 5,163,520 backward\n") != std::string::npos);
}

TEST_CASE("docs/training.md: 16.16 with stochastic rounding and dynamic loss scaling") {
  std::vector<ipu::f16> half_images(8 * 8 * 8 * 3, ipu::f16(0.5f));
  std::vector<std::int32_t> labels{0, 1, 2, 3, 4, 5, 6, 7};
  // [sixteen]
  ipu::trainer<half_net_t, ipu::mk2, sixteen_sixteen> half_trainer{
      ipu::weights<half_net_t>::random(1), {.seed = 7}};
  half_trainer.step(half_images, labels);
  float scale = half_trainer.loss_scale();              // the next step's
  std::int64_t skipped = half_trainer.skipped_steps();  // steps not applied for an overflow
  // [sixteen]
  CHECK(half_trainer.steps() + skipped == 1);
  CHECK(scale == 32768.0f / static_cast<float>(1 << skipped));
  for (float w : half_trainer.weights()["conv1"]["kernel"]) CHECK(static_cast<float>(ipu::half(w)) == w);
}

}  // namespace training_doc
