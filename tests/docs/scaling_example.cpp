// The examples of docs/scaling.md, compiled and run. Keep the two in step.
#include <ipu/ipu.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <iostream>
#include <vector>

// A namespace of its own: the guides' examples that run engines are one translation unit
// (tests/CMakeLists.txt).
namespace scaling_doc {

namespace {
namespace nn = ipu::nn;

using net_t = decltype(ipu::input<ipu::f32, 8, 8, 8, 3>
                       | nn::conv<16, 3> | nn::batch_norm | nn::relu
                       | nn::global_avg_pool | nn::dense<10> | nn::softmax);

// [arithmetic]
constexpr ipu::train_options accumulate{
    .optimizer = ipu::sgd{.learning_rate = 0.1, .momentum = 0.9},
    .gradient_accumulation = 4};  // 4 micro-batches per update
using accumulating_t = ipu::trainer<net_t, ipu::mk2, accumulate>;
static_assert(accumulating_t::micro_batch == 8 && accumulating_t::batch == 32);
// [arithmetic]

// [pipeline]
using pipelined_net_t = decltype(ipu::input<ipu::f32, 4, 8, 8, 3>
                                 | ipu::on<0>(nn::conv<16, 3> | nn::batch_norm | nn::relu)
                                 | ipu::on<1>(nn::residual(nn::conv<16, 3> | nn::batch_norm | nn::relu)
                                              | nn::global_avg_pool | nn::dense<10> | nn::softmax));
constexpr ipu::train_options pipelined{
    .optimizer = ipu::sgd{.learning_rate = 0.05, .momentum = 0.9},
    .gradient_accumulation = 8,                    // a multiple of 2 x 2 stages
    .pipeline = ipu::pipeline_schedule::grouped};

// docs/scaling.md, "Will a pipeline fit?"
static_assert(ipu::require_fit<ipu::training<pipelined_net_t, pipelined>, ipu::system<ipu::mk2, 2>>);
// [pipeline]

// [replicated]
using replicated_target = ipu::replicated<ipu::system<ipu::mk2, 4>, 2>;  // 2 replicas of 2 IPUs
static_assert(replicated_target::ipus == 2 && ipu::replicas_v<replicated_target> == 2);
// [replicated]

// [shared state]
constexpr ipu::train_options shared_state{
    .optimizer = ipu::adam{},          // two moments per weight: the most state
    .shard_optimizer_state = true};    // each of the 4 replicas holds a quarter of them
using four_replicas = ipu::replicated<ipu::system<ipu::mk2, 4>, 4>;
constexpr auto& replica_plan = ipu::plan_v<ipu::training<net_t, shared_state>, four_replicas>;
static_assert(replica_plan.state_shards == 4);
// [shared state]
// A quarter of Adam's two f32 moments of each trainable tensor, rounded up: conv1's 432
// weights, the batch norm's 16 scales and offsets, dense1's 160 weights and 10 biases.
static_assert(replica_plan.ipus[0].totals.optimizer_state == 2 * 4 * (108 + 4 + 4 + 40 + 3));

}  // namespace

TEST_CASE("docs/scaling.md: a step accumulates micro-batches, and a pipeline runs them over two IPUs") {
  // [accumulate]
  accumulating_t accumulating{ipu::weights<net_t>::random(1)};
  const std::vector<float> window(accumulating_t::batch * 8 * 8 * 3, 0.5f);  // 4 micro-batches
  const std::vector<std::int32_t> window_labels(accumulating_t::batch, 3);
  const float mean_loss = accumulating.step(window, window_labels);  // 4 passes, 1 update
  // [accumulate]
  CHECK(std::isfinite(mean_loss));
  CHECK(accumulating.steps() == 1);

  ipu::trainer<pipelined_net_t, ipu::system<ipu::mk2, 2>, pipelined> pipeline{ipu::weights<pipelined_net_t>::random(2)};
  using pipeline_t = decltype(pipeline);
  static_assert(pipeline_t::pipelined && pipeline_t::stages == 2 && pipeline_t::batch == 32);
  const std::vector<float> x(pipeline_t::batch * 8 * 8 * 3, 0.25f);
  const std::vector<std::int32_t> y(pipeline_t::batch, 7);
  // docs/scaling.md, "How fast is a pipeline?"
  constexpr auto timing = ipu::plan_v<ipu::training<pipelined_net_t, pipelined>, ipu::system<ipu::mk2, 2>>.timing();
  static_assert(timing.slots == 11 && timing.ramp_up_slots == 1 && timing.steady_slots == 9);
  double images_per_second = timing.samples_per_second();  // 32 samples per window at the IPUs' clock
  CHECK(images_per_second == Approx(32.0 * 1.33e9 / static_cast<double>(timing.total())));
  CHECK(pipeline.profile().str().find("IPU 1  .FXXXXXXXB.") != std::string::npos);
  const float first = pipeline.step(x, y);
  float last = first;
  for (int i = 0; i < 5; ++i) last = pipeline.step(x, y);
  CHECK(last < first);  // one class throughout: the loss falls

  // [replicated trainer]
  ipu::replicated_trainer<pipelined_net_t, replicated_target, pipelined> replicated{
      ipu::weights<pipelined_net_t>::random(3)};
  static_assert(decltype(replicated)::batch == 4 * 8 * 2);  // micro-batch x accumulation x replicas
  std::cout << replicated.batches().to_string() << '\n';
  // micro-batch 4 x gradient accumulation 8 x replicas 2 = 64 samples per step
  // [replicated trainer]
  CHECK(replicated.batches().to_string() == "micro-batch 4 x gradient accumulation 8 x replicas 2 = 64 samples per step");
  const std::vector<float> both(decltype(replicated)::batch * 8 * 8 * 3, 0.25f);
  const std::vector<std::int32_t> both_labels(decltype(replicated)::batch, 7);
  const float before = replicated.step(both, both_labels);
  CHECK(replicated.step(both, both_labels) < before);
}

TEST_CASE("docs/scaling.md: an engine pipelines its batches over the IPUs, and replicas run batches at once") {
  const auto weights = ipu::weights<pipelined_net_t>::random(4);
  ipu::engine<pipelined_net_t, ipu::system<ipu::mk2, 2>> unpipelined{weights, {.threads = 1}};
  const auto batch_of = [](int i) {  // a constant image per batch
    ipu::input_tensor_t<pipelined_net_t> x;
    for (auto& v : x) v = 0.01f * static_cast<float>(i);
    return x;
  };
  {
    // [pipelined inference]
    ipu::engine<pipelined_net_t, ipu::system<ipu::mk2, 2>> engine{weights, {.threads = 2, .pipelined = true}};
    ipu::infeed<pipelined_net_t, 4> in;
    ipu::outfeed<pipelined_net_t> out;
    // [pipelined inference]
    for (int i = 0; i < 4; ++i) in.push(batch_of(i));
    in.close();
    // [pipelined run]
    ipu::run_stats stats = engine.run(in, out, 100);  // IPU 0 runs batch i + 1 while IPU 1 runs batch i
    // [pipelined run]
    CHECK(stats.iterations == 4);
    const auto ys = out.drain();
    for (int i = 0; i < 4; ++i) CHECK(ys[static_cast<std::size_t>(i)] == unpipelined.infer(batch_of(i)));
  }
  // [replicated inference]
  ipu::replicated_engine<pipelined_net_t, replicated_target> replicas{weights, {.pipelined = true}};
  ipu::infeed<pipelined_net_t, 8> in;
  ipu::outfeed<pipelined_net_t> out;
  // [replicated inference]
  for (int i = 0; i < 6; ++i) in.push(batch_of(i));
  in.close();
  // [replicated run]
  ipu::run_stats stats = replicas.run(in, out, 10);  // every iteration a batch on each replica
  std::cout << replicas.batches(10).to_string() << '\n';
  // micro-batch 4 x gradient accumulation 1 x replicas 2 = 8 samples per step, x 10 device iterations = 80 samples per call
  // [replicated run]
  CHECK(stats.iterations == 6);  // batches: the infeed ended within the fourth iteration
  CHECK(replicas.batches(10).per_call() == 80);
  const auto ys = out.drain();
  for (int i = 0; i < 6; ++i) CHECK(ys[static_cast<std::size_t>(i)] == unpipelined.infer(batch_of(i)));
}

}  // namespace scaling_doc
