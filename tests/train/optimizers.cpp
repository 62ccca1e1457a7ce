// The optimisers and the learning-rate schedules: three updates of each optimiser against a
// plain-loop reference in double written from the published rules, fed the trainer's
// gradients (checked against finite differences in gradients.cpp); the schedules' rates at
// steps that pin their definitions down.

#include <catch2/catch.hpp>

#include "train/train_support.hpp"

#include <ipu/ipu.hpp>

#include <cmath>
#include <cstdint>
#include <numbers>
#include <span>
#include <vector>

namespace nn = ipu::nn;
using ipu_test::small_target;

namespace {

constexpr auto linear_net = ipu::input<ipu::f32, 4, 1, 1, 3> | nn::flatten | nn::dense<3> | nn::batch_norm | nn::dense<2>;
using linear_t = decltype(linear_net);

/// Plain-loop reference of one update of every element of a tensor, in double.
struct reference_optimizer {
  ipu::optimizer o;
  std::vector<double> w, v, m, s;
  void step(const std::vector<double>& g, double lr, int t) {
    const double wd = o.weight_decay.value(), mu = o.momentum.value(), b1 = o.beta1.value(), b2 = o.beta2.value();
    const double eps = o.epsilon.value();
    if (o.kind == ipu::optimizer_kind::sgd) {
      for (std::size_t i = 0; i < w.size(); ++i) {
        const double d = g[i] + wd * w[i];
        if (mu == 0) {
          w[i] -= lr * d;
          continue;
        }
        v[i] = mu * v[i] + d;
        w[i] -= lr * (o.nesterov ? d + mu * v[i] : v[i]);
      }
      return;
    }
    std::vector<double> r(w.size());
    for (std::size_t i = 0; i < w.size(); ++i) {
      const double d = o.kind == ipu::optimizer_kind::adam ? g[i] + wd * w[i] : g[i];
      m[i] = b1 * m[i] + (1 - b1) * d;
      s[i] = b2 * s[i] + (1 - b2) * d * d;
      const double mh = m[i] / (1 - std::pow(b1, t)), sh = s[i] / (1 - std::pow(b2, t));
      r[i] = mh / (std::sqrt(sh) + eps) + (o.kind == ipu::optimizer_kind::adam ? 0.0 : wd * w[i]);
    }
    double trust = 1;
    if (o.kind == ipu::optimizer_kind::lamb) {
      double ww = 0, rr = 0;
      for (std::size_t i = 0; i < w.size(); ++i) ww += w[i] * w[i], rr += r[i] * r[i];
      if (ww > 0 && rr > 0) trust = std::sqrt(ww) / std::sqrt(rr);
    }
    for (std::size_t i = 0; i < w.size(); ++i) w[i] -= lr * trust * r[i];
  }
};

/// Three updates of `Opts` on the linear net: every trainable value against the reference
/// (to 1e-5 of the tensor's largest value), the running statistics left to the forward pass.
template <ipu::train_options Opts>
void check_optimizer() {
  using G = linear_t;
  const auto w0 = ipu::weights<G>::random(3);
  ipu::trainer<G, small_target<16>, Opts> trainer{w0, {1}};
  std::vector<std::vector<reference_optimizer>> ref;  // per layer, per tensor
  for (const ipu::layer_weights& l : w0) {
    ref.emplace_back();
    for (const ipu::weight_tensor& t : l.tensors()) {
      const std::size_t n = t.values.size();
      ref.back().push_back({Opts.optimizer, {t.values.begin(), t.values.end()}, std::vector<double>(n),
                            std::vector<double>(n), std::vector<double>(n)});
    }
  }
  for (int t = 1; t <= 3; ++t) {
    const auto x = ipu_test::random_input<G>(static_cast<std::uint64_t>(10 + t));
    std::vector<float> targets(8);
    for (std::size_t i = 0; i < targets.size(); ++i) targets[i] = static_cast<float>(std::cos(double(i * t)));
    const double lr = trainer.learning_rate();
    CHECK(lr == Approx(Opts.schedule.rate(Opts.optimizer.learning_rate.value(), t - 1)));
    trainer.backward(std::span(x.data(), x.size()), targets);
    for (std::size_t l = 0; l < w0.size(); ++l)
      for (std::size_t k = 0; k < ref[l].size(); ++k) {
        const ipu::weight_tensor& tensor = w0[l].tensors()[k];
        if (!tensor.trainable) continue;
        const auto g = trainer.gradients()[l][tensor.name];
        ref[l][k].step({g.begin(), g.end()}, lr, t);
      }
    trainer.update();
    CHECK(trainer.steps() == t);
    for (std::size_t l = 0; l < w0.size(); ++l)
      for (std::size_t k = 0; k < ref[l].size(); ++k) {
        const ipu::weight_tensor& tensor = w0[l].tensors()[k];
        if (!tensor.trainable) continue;
        const auto got = trainer.weights()[l][tensor.name];
        const double error = ipu_test::ref::max_relative_error(ref[l][k].w, got.data(), got.size(), 1e-2);
        INFO("step " << t << ", " << trainer.weights()[l].path() << "." << tensor.name);
        CHECK(error <= 1e-5);
      }
  }
}

}  // namespace

TEST_CASE("SGD, plain") { check_optimizer<ipu::train_options{.optimizer = ipu::sgd{.learning_rate = 0.1}, .loss = ipu::loss::mean_squared_error}>(); }

TEST_CASE("SGD with momentum and weight decay") {
  check_optimizer<ipu::train_options{.optimizer = ipu::sgd{.learning_rate = 0.1, .momentum = 0.9, .weight_decay = 1e-2},
                                     .loss = ipu::loss::mean_squared_error}>();
}

TEST_CASE("SGD with Nesterov momentum, under a linear warm-up") {
  check_optimizer<ipu::train_options{.optimizer = ipu::sgd{.learning_rate = 0.1, .momentum = 0.9, .nesterov = true},
                                     .loss = ipu::loss::mean_squared_error,
                                     .schedule = ipu::constant_rate(2)}>();
}

TEST_CASE("Adam with an L2 penalty") {
  check_optimizer<ipu::train_options{.optimizer = ipu::adam{.learning_rate = 0.01, .weight_decay = 1e-2},
                                     .loss = ipu::loss::mean_squared_error}>();
}

TEST_CASE("AdamW, under a cosine decay") {
  check_optimizer<ipu::train_options{.optimizer = ipu::adamw{.learning_rate = 0.01, .weight_decay = 0.1},
                                     .loss = ipu::loss::mean_squared_error,
                                     .schedule = ipu::cosine_decay(4)}>();
}

TEST_CASE("LAMB, under a step decay") {
  check_optimizer<ipu::train_options{.optimizer = ipu::lamb{.learning_rate = 0.01},
                                     .loss = ipu::loss::mean_squared_error,
                                     .schedule = ipu::step_decay(1, 0.5)}>();
}

TEST_CASE("the schedules' rates") {
  CHECK(ipu::constant_rate().rate(0.1, 1000) == 0.1);
  // Warm-up: step s at (s + 1) / warmup of the rate, then the decay from its own step 0.
  constexpr ipu::lr_schedule warm = ipu::step_decay(10, 0.1, 4);
  CHECK(warm.rate(0.2, 0) == Approx(0.05));
  CHECK(warm.rate(0.2, 3) == Approx(0.2));
  CHECK(warm.rate(0.2, 13) == Approx(0.2));
  CHECK(warm.rate(0.2, 14) == Approx(0.02));
  CHECK(warm.rate(0.2, 34) == Approx(0.0002));
  // Cosine: the base rate at 0, the mean of base and final halfway, the final rate at the end and after.
  constexpr ipu::lr_schedule cosine = ipu::cosine_decay(100, 0, 0.1);
  CHECK(cosine.rate(1.0, 0) == Approx(1.0));
  CHECK(cosine.rate(1.0, 50) == Approx(0.55));
  CHECK(cosine.rate(1.0, 25) == Approx(0.1 + 0.9 * 0.5 * (1 + std::cos(std::numbers::pi / 4))));
  CHECK(cosine.rate(1.0, 100) == Approx(0.1));
  CHECK(cosine.rate(1.0, 1000) == Approx(0.1));
}

TEST_CASE("hyper-parameters are held exactly, the smallest too") {
  constexpr ipu::optimizer adam = ipu::adam{};
  STATIC_REQUIRE(adam.epsilon.value() == 1e-8);
  STATIC_REQUIRE(adam.beta2.value() == 0.999);
  STATIC_REQUIRE(adam.state_tensors() == 2);
  STATIC_REQUIRE(ipu::optimizer(ipu::sgd{}).state_tensors() == 0);
  STATIC_REQUIRE(ipu::optimizer(ipu::sgd{.momentum = 0.9}).state_tensors() == 1);
  STATIC_REQUIRE(ipu::scalar{0.1}.value() == 0.1);
  STATIC_REQUIRE(ipu::scalar{-2.5}.value() == -2.5);
}
