// Checkpoints (ipu/checkpoint.hpp): a trainer restored from one continues with the bits of the
// trainer that wrote it; weights load into the same network on other IPUs or at another batch,
// and not into another network, which the error names; wrong files give checkpoint_error.

#include <catch2/catch.hpp>

#include "support/scratch.hpp"
#include "train/train_support.hpp"

#include <ipu/checkpoint.hpp>
#include <ipu/ipu.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <span>
#include <string>
#include <vector>

namespace nn = ipu::nn;

namespace checkpoint_tests {

using one_ipu = ipu_test::small_target<16>;

// Batch norms (running statistics, not trainable), a residual, dropouts, a dense layer.
template <class T, std::int64_t Batch = 2>
constexpr auto small_net = ipu::input<T, Batch, 6, 6, 3>
    | nn::conv<8, 3> | nn::batch_norm | nn::relu
    | nn::residual(nn::dropout<0.25> | nn::conv<8, 1> | nn::batch_norm | nn::relu)
    | nn::max_pool<2, 2> | nn::global_avg_pool | nn::dropout<0.5> | nn::dense<3> | nn::softmax;
using f32_net = std::remove_cvref_t<decltype(small_net<float>)>;
using f16_net = std::remove_cvref_t<decltype(small_net<ipu::f16>)>;

// The same layers over two IPUs, at another batch.
constexpr auto split_net = ipu::input<float, 4, 6, 6, 3>
    | ipu::on<0>(nn::conv<8, 3> | nn::batch_norm | nn::relu
                 | nn::residual(nn::dropout<0.25> | nn::conv<8, 1> | nn::batch_norm | nn::relu))
    | ipu::on<1>(nn::max_pool<2, 2> | nn::global_avg_pool | nn::dropout<0.5> | nn::dense<3> | nn::softmax);
using split_t = std::remove_cvref_t<decltype(split_net)>;

// Another network: the residual's convolution has 4 outputs and a batch norm is gone.
constexpr auto other_net = ipu::input<float, 2, 6, 6, 3>
    | nn::conv<8, 3> | nn::batch_norm | nn::relu
    | nn::residual(nn::dropout<0.25> | nn::conv<8, 1> | nn::relu)
    | nn::max_pool<2, 2> | nn::global_avg_pool | nn::dropout<0.5> | nn::dense<3> | nn::softmax;
using other_t = std::remove_cvref_t<decltype(other_net)>;

constexpr ipu::train_options adam_opts{.optimizer = ipu::adam{.learning_rate = 0.01}};
// "16.16" with stochastic rounding and dynamic loss scaling from 2^15, which overflows f16 and
// skips updates at first: the seed, the step counts and the scale all shape the next steps.
constexpr ipu::train_options half_opts{.optimizer = ipu::sgd{.learning_rate = 0.05, .momentum = 0.9},
                                       .master_weights = ipu::dtype::f16,
                                       .loss_scaling = ipu::dynamic_loss_scaling()};

/// Trains `G` 3 steps, checkpoints, trains 3 more; a trainer of other weights and seed restored
/// from the checkpoint gives the last 3 steps' losses, weights and state bit for bit.
template <class G, ipu::train_options Opts>
void check_resume(const std::string& name) {
  const auto path = ipu_test::scratch_dir("checkpoint_" + name) / "ckpt.safetensors";
  const auto x = ipu_test::random_input<G>(4);
  const std::span input(x.data(), x.size());
  const auto labels = ipu_test::random_labels(2, 3, 5);
  ipu::trainer<G, one_ipu, Opts> first{ipu::weights<G>::random(3), {2, 7}};
  for (int s = 0; s < 3; ++s) first.step(input, labels);
  ipu::save_checkpoint(path, first);
  std::vector<float> losses;
  for (int s = 0; s < 3; ++s) losses.push_back(first.step(input, labels));

  ipu::trainer<G, one_ipu, Opts> second{ipu::weights<G>::random(11), {2, 99}};
  ipu::restore_checkpoint(path, second);
  CHECK(second.steps() + second.skipped_steps() == 3);
  for (int s = 0; s < 3; ++s) {
    INFO("step " << s << " after the restore");
    CHECK(second.step(input, labels) == losses[static_cast<std::size_t>(s)]);
  }
  CHECK(ipu_test::first_difference(second.weights(), first.weights()).empty());
  const ipu::trainer_state a = first.state(), b = second.state();
  CHECK(a.steps == b.steps);
  CHECK(a.skipped_steps == b.skipped_steps);
  CHECK(a.clean_steps == b.clean_steps);
  CHECK(a.loss_scale == b.loss_scale);
  CHECK(a.seed == b.seed);
  CHECK(a.optimizer == b.optimizer);
}

TEST_CASE("a trainer restored from a checkpoint continues with the bits of the trainer that wrote it") {
  SECTION("f32 with Adam") { check_resume<f32_net, adam_opts>("adam"); }
  SECTION("16.16 with momentum, stochastic rounding and dynamic loss scaling") {
    check_resume<f16_net, half_opts>("half");
  }
}

TEST_CASE("a checkpoint's weights load into the same network on two IPUs and at another batch") {
  const auto path = ipu_test::scratch_dir("checkpoint_split") / "w.safetensors";
  const auto w = ipu::weights<f32_net>::random(5);
  ipu::save_weights(path, w);
  const auto split = ipu::load_weights<split_t>(path);
  REQUIRE(split.size() == w.size());
  for (std::size_t l = 0; l < w.size(); ++l)
    for (const ipu::weight_tensor& t : w[l].tensors()) {
      INFO(w[l].path() << "." << t.name);
      CHECK(split[l].path() == w[l].path());
      CHECK(split[l].tensor(t.name).values == t.values);
    }
}

TEST_CASE("loading a checkpoint into another network names the first node that differs") {
  const auto path = ipu_test::scratch_dir("checkpoint_other") / "w.safetensors";
  ipu::save_weights(path, ipu::weights<f32_net>::random(5));
  REQUIRE_THROWS_MATCHES(ipu::load_weights<other_t>(path), ipu::checkpoint_error,
                         Catch::Matchers::Message(path.string() +
                                                  ": written for another network: its node 5 is "
                                                  "'block1.batch_norm1 batch_norm scale[8] shift[8] mean[8] variance[8]', "
                                                  "this network's is 'block1.relu1 relu'"));
}

TEST_CASE("weights saved in f16 and bf16 load rounded to nearest") {
  const auto dir = ipu_test::scratch_dir("checkpoint_narrow");
  const auto w = ipu::weights<f32_net>::random(6);
  ipu::save_weights(dir / "f16.safetensors", w, ipu::safetensors::dtype::f16);
  ipu::save_weights(dir / "bf16.safetensors", w, ipu::safetensors::dtype::bf16);
  const auto h = ipu::load_weights<f32_net>(dir / "f16.safetensors");
  const auto b = ipu::load_weights<f32_net>(dir / "bf16.safetensors");
  for (std::size_t l = 0; l < w.size(); ++l)
    for (const ipu::weight_tensor& t : w[l].tensors())
      for (std::size_t i = 0; i < t.values.size(); ++i) {
        INFO(w[l].path() << "." << t.name << "[" << i << "] = " << t.values[i]);
        // bfloat16 keeps f32's top 16 bits; the nearest of the two candidates, by exact
        // arithmetic in double.
        const auto bits = std::bit_cast<std::uint32_t>(t.values[i]);
        const float down = std::bit_cast<float>(bits & 0xffff0000u), up = std::bit_cast<float>((bits & 0xffff0000u) + 0x10000u);
        const double v = t.values[i];
        const float nearest = std::abs(v - down) < std::abs(v - up) ? down
                              : std::abs(v - down) > std::abs(v - up) ? up
                              : (bits & 0x10000u) ? up : down;
        CHECK(b[l].tensor(t.name).values[i] == nearest);
        CHECK(h[l].tensor(t.name).values[i] == static_cast<float>(ipu::half(t.values[i])));
      }
}

TEST_CASE("restoring a checkpoint of another optimiser is an error, its weights still load") {
  const auto path = ipu_test::scratch_dir("checkpoint_optimiser") / "ckpt.safetensors";
  const auto x = ipu_test::random_input<f32_net>(4);
  ipu::trainer<f32_net, one_ipu, adam_opts> adam{ipu::weights<f32_net>::random(3), {2, 7}};
  adam.step(std::span(x.data(), x.size()), ipu_test::random_labels(2, 3, 5));
  ipu::save_checkpoint(path, adam);
  constexpr ipu::train_options sgd_opts{.optimizer = ipu::sgd{.learning_rate = 0.1, .momentum = 0.9}};
  ipu::trainer<f32_net, one_ipu, sgd_opts> sgd{ipu::weights<f32_net>::random(3), {2, 7}};
  REQUIRE_THROWS_MATCHES(ipu::restore_checkpoint(path, sgd), ipu::checkpoint_error,
                         Catch::Matchers::Message(path.string() +
                                                  ": written by a trainer with adam (2 state tensors per weight), this "
                                                  "one has sgd (1); ipu::load_weights reads the weights alone"));
  CHECK(sgd.steps() == 0);
  CHECK(ipu_test::first_difference(sgd.weights(), ipu::weights<f32_net>::random(3)).empty());
  CHECK(ipu_test::first_difference(ipu::load_weights<f32_net>(path), adam.weights()).empty());
}

TEST_CASE("a weight file lacking a tensor, with a wrong shape or not finite is a checkpoint_error naming it") {
  const auto dir = ipu_test::scratch_dir("checkpoint_foreign");
  const auto w = ipu::weights<f32_net>::random(5);
  const auto write = [&](const std::string& skip, const std::string& reshape, float poison) {
    ipu::safetensors::writer out;
    for (const ipu::layer_weights& layer : w)
      for (const ipu::weight_tensor& t : layer.tensors()) {
        const std::string key = std::string(layer.path()) + "." + std::string(t.name);
        std::vector<float> values = t.values;
        std::vector<std::int64_t> shape = t.shape;
        if (key == skip) continue;
        if (key == reshape) shape = {static_cast<std::int64_t>(values.size())};
        if (key == "dense1.bias") values[1] = poison;
        out.add(key, shape, values);
      }
    out.add("num_batches_tracked", std::vector<std::int64_t>{}, std::vector<float>{1.0f});  // not ours: ignored
    const auto path = dir / "w.safetensors";
    out.write(path);
    return path;
  };
  auto changed = w;
  changed["dense1"]["bias"][1] = 0.5f;
  CHECK(ipu_test::first_difference(ipu::load_weights<f32_net>(write("", "", 0.5f)), changed).empty());
  const auto path = write("block1.conv1.kernel", "", 0.5f);
  REQUIRE_THROWS_MATCHES(ipu::load_weights<f32_net>(path), ipu::checkpoint_error,
                         Catch::Matchers::Message(path.string() + ": no tensor 'block1.conv1.kernel'"));
  write("", "block1.conv1.kernel", 0.5f);
  REQUIRE_THROWS_MATCHES(ipu::load_weights<f32_net>(path), ipu::checkpoint_error,
                         Catch::Matchers::Message(path.string() + ": tensor 'block1.conv1.kernel' has shape [64]; "
                                                                  "the network's has [1, 1, 8, 8]"));
  write("", "", std::numeric_limits<float>::quiet_NaN());
  REQUIRE_THROWS_WITH(ipu::load_weights<f32_net>(path), Catch::Contains("dense1.bias[1]"));
  REQUIRE_THROWS_MATCHES(ipu::load_weights<f32_net>(dir / "missing.safetensors"), ipu::checkpoint_error,
                         Catch::Matchers::Message((dir / "missing.safetensors").string() +
                                                  ": cannot open: No such file or directory"));
}

}  // namespace checkpoint_tests
