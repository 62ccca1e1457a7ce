// A trainer's profile: the training plan's steps in its order with the cycle model's estimates,
// and the host times the trainer measured for them.

#include <catch2/catch.hpp>

#include "support/targets.hpp"

#include <ipu/ipu.hpp>

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace nn = ipu::nn;

namespace {

using pr_target = ipu_test::small_target<16>;
using pr_net_t = decltype(ipu::input<ipu::f32, 4, 6, 6, 3> | nn::conv<8, 3> | nn::batch_norm | nn::relu
                          | nn::residual(nn::conv<8, 3> | nn::batch_norm | nn::relu) | nn::global_avg_pool | nn::dense<4>
                          | nn::softmax);
constexpr ipu::train_options pr_opts{.optimizer = ipu::sgd{.learning_rate = 0.1, .momentum = 0.9},
                                     .recompute = ipu::recompute::per_block};

}  // namespace

TEST_CASE("a trainer's profile lists the training plan's steps with their cycles, and the host time of those it ran") {
  ipu::trainer<pr_net_t, pr_target, pr_opts> trainer{ipu::weights<pr_net_t>::random(3), {2}};
  constexpr auto& plan = ipu::plan_v<ipu::training<pr_net_t, pr_opts>, pr_target>;

  const ipu::training_profile before = trainer.profile();
  REQUIRE(before.steps().size() == plan.step_count);
  CHECK(before.steps_measured() == 0);
  CHECK(before.measured_samples_per_second() == 0);
  for (std::size_t s = 0; s < plan.step_count; ++s) {
    const ipu::training_step_profile& p = before.steps()[s];
    CHECK(p.phase == plan.steps[s].phase);
    CHECK(p.node == plan.steps[s].node);
    CHECK(p.path.view() == plan.at(p.node).path.view());
    CHECK(p.cycles == plan.cycles(static_cast<int>(s)));
    CHECK(p.host_seconds == 0);
  }
  CHECK(before.cycles_per_step() == plan.total_cycles());
  CHECK(before.simulated_samples_per_second() ==
        Approx(4.0 * static_cast<double>(pr_target::chip.clock_hz) / static_cast<double>(plan.total_cycles())));

  const std::vector<float> images(4 * 6 * 6 * 3, 0.25f);
  const std::vector<std::int32_t> labels{0, 1, 2, 3};
  trainer.step(images, labels);
  trainer.step(images, labels);
  const ipu::training_profile after = trainer.profile();
  CHECK(after.steps_measured() == 2);
  double host = 0;
  int recompute_steps = 0;
  for (const ipu::training_step_profile& p : after.steps()) {
    INFO(ipu::name_of(p.phase) << ' ' << p.path.view());
    if (p.phase == ipu::step_phase::recompute) {
      ++recompute_steps;
      CHECK(p.host_seconds == 0);  // the host keeps every output
    } else if (p.node > 0 || p.phase == ipu::step_phase::forward) {
      CHECK(p.host_seconds > 0);
    }
    host += p.host_seconds;
  }
  CHECK(recompute_steps > 0);
  CHECK(after.measured_samples_per_second() == Approx(4.0 / host));
  for (const auto ph : {ipu::step_phase::forward, ipu::step_phase::backward, ipu::step_phase::update})
    CHECK(after.phase_host_seconds(ph) > 0);

  const std::string text = after.str();
  for (const char* expected : {"training profile: mk2-small, micro-batch 4, host times the mean of 2 micro-batches in 2 steps\n", "  forward ",
                               "  backward ", "  update ", "  recompute ", " samples/s, host ", "most host time:\n"})
    CHECK(text.find(expected) != std::string::npos);
}

TEST_CASE("the steps of a profile the loop's own expression returns are the loop's to read") {
  // `for (... : trainer.profile().steps())`: the profile is a temporary, destroyed before the
  // loop's body runs (C++20 extends the life of the range, `steps()`'s result, alone). Read from
  // a temporary, `steps()` and `window()` hand over the profile's own values, so the loop reads
  // them, not the destroyed profile's; from a named profile they are references, as before.
  static_assert(std::is_same_v<decltype(std::declval<ipu::training_profile>().steps()), std::vector<ipu::training_step_profile>>);
  static_assert(std::is_same_v<decltype(std::declval<const ipu::training_profile&>().steps()), const std::vector<ipu::training_step_profile>&>);
  static_assert(std::is_same_v<decltype(std::declval<ipu::training_profile>().window()), ipu::training_profile::window_timing>);
  static_assert(std::is_same_v<decltype(std::declval<ipu::profile>().steps()), std::vector<ipu::step_profile>>);
  static_assert(std::is_same_v<decltype(std::declval<ipu::profile>().ipus()), std::vector<ipu::ipu_profile>>);
  static_assert(std::is_same_v<decltype(std::declval<ipu::profile>().host()), ipu::ipu_profile>);
  static_assert(std::is_same_v<decltype(std::declval<const ipu::profile&>().steps()), const std::vector<ipu::step_profile>&>);

  ipu::trainer<pr_net_t, pr_target, pr_opts> trainer{ipu::weights<pr_net_t>::random(3), {2}};
  const std::vector<float> images(4 * 6 * 6 * 3, 0.25f);
  const std::vector<std::int32_t> labels{0, 1, 2, 3};
  trainer.step(images, labels);
  std::size_t steps = 0;
  double host = 0;
  for (const ipu::training_step_profile& p : trainer.profile().steps()) {
    ++steps;
    host += p.host_seconds;
  }
  CHECK(steps == ipu::plan_v<ipu::training<pr_net_t, pr_opts>, pr_target>.step_count);
  CHECK(host > 0);
  CHECK(trainer.profile().window().stages == 1);
  std::int64_t cycles = 0;
  for (const ipu::step_profile& p : ipu::plan_profile<pr_net_t, pr_target>().steps()) cycles += p.compute_cycles;
  CHECK(cycles > 0);
}
