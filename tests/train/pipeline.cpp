// Gradient accumulation and pipelined training (ipu/train/pipeline.hpp, runtime/pipeline.hpp):
// the schedules' pass orders and stash depths, a step over micro-batches against one batch of
// all their samples, and pipelined steps against the same micro-batches run one after another.

#include <catch2/catch.hpp>

#include "support/scratch.hpp"
#include "train/train_support.hpp"

#include <ipu/estimator.hpp>
#include <ipu/ipu.hpp>

#include <range/v3/view/chunk.hpp>
#include <range/v3/view/zip.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

namespace nn = ipu::nn;

namespace pipeline_tests {

using ipu::pipeline_schedule;
using ipu::stage_pass;

// ---- the schedules --------------------------------------------------------------------------

// The passes of stage `s` of `n` over `ga` micro-batches, as (backward, micro) in order.
constexpr std::vector<stage_pass> passes(pipeline_schedule schedule, int n, int s, std::int64_t ga) {
  std::vector<stage_pass> r;
  ipu::for_each_stage_pass(schedule, n, s, ga, [&](const stage_pass& p) { r.push_back(p); });
  return r;
}

// Grouped over 2 IPUs: the stage list [F0, F1, B1, B0] rotated every slot; stage 0 runs the
// forward of micro-batch t and the backward of t - 3 in slot t.
static_assert(passes(pipeline_schedule::grouped, 2, 0, 4) ==
              std::vector<stage_pass>{{false, 0, 0}, {false, 1, 1}, {false, 2, 2}, {false, 3, 3}, {true, 0, 3},
                                      {true, 1, 4}, {true, 2, 5}, {true, 3, 6}});
static_assert(passes(pipeline_schedule::grouped, 2, 1, 4) ==
              std::vector<stage_pass>{{false, 0, 1}, {false, 1, 2}, {true, 0, 2}, {false, 2, 3}, {true, 1, 3},
                                      {false, 3, 4}, {true, 2, 4}, {true, 3, 5}});
// Interleaved over 2 IPUs: one pass per IPU per slot, forward and backward alternating.
static_assert(passes(pipeline_schedule::interleaved, 2, 0, 2) ==
              std::vector<stage_pass>{{false, 0, 0}, {false, 1, 2}, {true, 0, 3}, {true, 1, 5}});
static_assert(passes(pipeline_schedule::interleaved, 2, 1, 2) ==
              std::vector<stage_pass>{{false, 0, 1}, {true, 0, 2}, {false, 1, 3}, {true, 1, 4}});
// Sequential: one micro-batch through every stage and back before the next.
static_assert(passes(pipeline_schedule::sequential, 2, 0, 2) ==
              std::vector<stage_pass>{{false, 0, 0}, {true, 0, 3}, {false, 1, 4}, {true, 1, 7}});

// Slots: fill and drain of 2N - 1 each around the micro-batches (PopART's G + P - 1 pipeline
// cycles for P = 2N stages, at one micro-batch per slot).
static_assert(ipu::pipeline_slots(pipeline_schedule::grouped, 4, 8) == 8 + 2 * 4 - 1);
static_assert(ipu::pipeline_slots(pipeline_schedule::interleaved, 4, 8) == 2 * 7 + 8);
static_assert(ipu::pipeline_slots(pipeline_schedule::sequential, 4, 3) == 8 * 2 + 8);

// TensorFlow's rule: grouped a positive multiple of 2N, interleaved of N, sequential any.
static_assert(ipu::pipeline_accepts(pipeline_schedule::grouped, 2, 4) && ipu::pipeline_accepts(pipeline_schedule::grouped, 2, 16));
static_assert(!ipu::pipeline_accepts(pipeline_schedule::grouped, 2, 6) && !ipu::pipeline_accepts(pipeline_schedule::grouped, 4, 4));
static_assert(ipu::pipeline_accepts(pipeline_schedule::interleaved, 3, 3) && !ipu::pipeline_accepts(pipeline_schedule::interleaved, 3, 4));
static_assert(ipu::pipeline_accepts(pipeline_schedule::sequential, 4, 1) && ipu::pipeline_accepts(pipeline_schedule::sequential, 4, 7));

// Stash depths: grouped 2(N - s), interleaved N - s, sequential 1; TensorFlow's FIFO depths
// 2(N - 1 - s) and N - 1 - s plus the micro-batches in the stage's own buffers.
constexpr bool depths_hold() {
  for (int n = 1; n <= 8; ++n)
    for (int s = 0; s < n; ++s) {
      if (ipu::pipeline_stash_depth(pipeline_schedule::grouped, n, s, 4 * n) != 2 * (n - s)) return false;
      if (ipu::pipeline_stash_depth(pipeline_schedule::interleaved, n, s, 2 * n) != n - s) return false;
      if (ipu::pipeline_stash_depth(pipeline_schedule::sequential, n, s, 5) != 1) return false;
    }
  return true;
}
static_assert(depths_hold());

// ---- accumulation -----------------------------------------------------------------------------

using one_ipu = ipu_test::small_target<16>;

using micro_net = std::remove_cvref_t<decltype(ipu_test::plain_net<2>)>;
using whole_net = std::remove_cvref_t<decltype(ipu_test::plain_net<8>)>;

TEST_CASE("Four micro-batches of 2 with mean accumulation give the gradients and the step of one batch of 8") {
  constexpr ipu::train_options micro_opts{.optimizer = ipu::sgd{.learning_rate = 0.05, .momentum = 0.9},
                                          .gradient_accumulation = 4};
  constexpr ipu::train_options whole_opts{.optimizer = ipu::sgd{.learning_rate = 0.05, .momentum = 0.9}};
  const auto w = ipu::weights<micro_net>::random(3);
  ipu::trainer<micro_net, one_ipu, micro_opts> micro(w);
  ipu::trainer<whole_net, one_ipu, whole_opts> whole(ipu_test::weights_as<whole_net>(w));
  static_assert(decltype(micro)::batch == 8 && decltype(micro)::micro_batch == 2);

  const std::vector<float> x = ipu_test::normal_values(8 * 6 * 6 * 3, 11);
  const std::vector<std::int32_t> y = ipu_test::random_labels(8, 4, 12);
  for (int step = 0; step < 3; ++step) {
    const float lm = micro.step(x, y), lw = whole.step(x, y);
    CHECK(lm == Approx(lw).epsilon(1e-5));
    for (std::size_t l = 0; l < w.size(); ++l)
      for (const ipu::weight_tensor& t : micro.gradients()[l].tensors()) {
        const std::span<const float> gm = micro.gradients()[l][t.name], gw = whole.gradients()[l][t.name];
        for (std::size_t i = 0; i < gm.size(); ++i) REQUIRE(gm[i] == Approx(gw[i]).margin(1e-6).epsilon(1e-4));
      }
  }
  for (std::size_t l = 0; l < w.size(); ++l)
    for (const ipu::weight_tensor& t : micro.weights()[l].tensors()) {
      const std::span<const float> a = micro.weights()[l][t.name], b = whole.weights()[l][t.name];
      for (std::size_t i = 0; i < a.size(); ++i) REQUIRE(a[i] == Approx(b[i]).margin(1e-6).epsilon(1e-4));
    }
  CHECK(micro.steps() == 3);
  CHECK(micro.logits().size() == 8 * 4);
}

TEST_CASE("Sum accumulation gives the micro-batches' gradients summed, each as a step of one gives it") {
  constexpr ipu::train_options sum_opts{.gradient_accumulation = 3, .gradient_reduction = ipu::gradient_reduction::sum};
  const auto w = ipu::weights<micro_net>::random(5);
  ipu::trainer<micro_net, one_ipu, sum_opts> summed(w);
  ipu::trainer<micro_net, one_ipu> single(w);
  constexpr std::size_t in = 2 * 6 * 6 * 3;
  const std::vector<float> x = ipu_test::normal_values(3 * in, 21);
  const std::vector<std::int32_t> y = ipu_test::random_labels(6, 4, 22);
  const float loss = summed.backward(x, y);
  ipu::weights<micro_net> expected;
  for (ipu::layer_weights& layer : expected)
    for (const ipu::weight_tensor& t : layer.tensors()) std::ranges::fill(layer[t.name], 0.0f);
  double losses = 0;
  for (std::size_t m = 0; m < 3; ++m) {
    losses += single.backward(std::span(x).subspan(m * in, in), std::span(y).subspan(2 * m, 2));
    for (std::size_t l = 0; l < w.size(); ++l)
      for (const ipu::weight_tensor& t : w[l].tensors()) {
        const std::span<const float> g = single.gradients()[l][t.name];
        const std::span<float> e = expected[l][t.name];
        for (std::size_t i = 0; i < g.size(); ++i) e[i] += g[i];  // in micro-batch order, in f32
      }
  }
  CHECK(loss == Approx(losses / 3).epsilon(1e-6));
  for (std::size_t l = 0; l < w.size(); ++l)
    for (const ipu::weight_tensor& t : w[l].tensors()) {
      const std::span<const float> a = summed.gradients()[l][t.name], b = expected[l][t.name];
      for (std::size_t i = 0; i < a.size(); ++i) REQUIRE(a[i] == b[i]);
    }
}

TEST_CASE("A step with accumulation refuses an input or labels of one micro-batch") {
  ipu::trainer<micro_net, one_ipu, ipu::train_options{.gradient_accumulation = 4}> t(ipu::weights<micro_net>::random(1));
  const std::vector<float> x(2 * 6 * 6 * 3);
  const std::vector<std::int32_t> y(8);
  CHECK_THROWS_WITH(t.step(x, y), Catch::Contains("4 micro-batches") && Catch::Contains("864"));
  const std::vector<float> x8(8 * 6 * 6 * 3);
  CHECK_THROWS_WITH(t.step(x8, std::vector<std::int32_t>(2)), Catch::Contains("2 labels for a batch of 8"));
}

TEST_CASE("An accumulating step's plan keeps the f32 sums of the weights' gradients through the whole step") {
  constexpr const auto& single = ipu::plan_v<ipu::training<micro_net>, one_ipu>;
  constexpr const auto& accumulating = ipu::plan_v<ipu::training<micro_net, ipu::train_options{.gradient_accumulation = 4}>, one_ipu>;
  std::int64_t at_first_step = 0;  // the input's forward step: no gradient yet but the sums
  for (int tile = 0; tile < 16; ++tile) {
    CHECK(single.usage(tile, 0).gradients == 0);
    at_first_step += accumulating.usage(tile, 0).gradients;
  }
  CHECK(at_first_step == 4 * ipu::param_count_v<micro_net>);  // every parameter trains, in f32
  CHECK(accumulating.ipus[0].peak >= single.ipus[0].peak);
}

// ---- pipelining -------------------------------------------------------------------------------

// Two stages: batch norms, a residual and dropouts on each side of the boundary; the softmax's
// input crosses it with the rest of stage 0's last output.
template <class T>
constexpr auto two_stage = ipu::input<T, 2, 6, 6, 3>
    | ipu::on<0>(nn::conv<8, 3> | nn::batch_norm | nn::relu
                 | nn::residual(nn::dropout<0.25> | nn::conv<8, 1> | nn::batch_norm | nn::relu))
    | ipu::on<1>(nn::max_pool<2, 2> | nn::residual(nn::conv<8, 3> | nn::relu) | nn::global_avg_pool
                 | nn::dropout<0.5> | nn::dense<3> | nn::softmax);

// Three stages, and a residual whose shortcut passes through the middle stage: stage 0's
// output is read by stage 2's add.
constexpr auto three_stage = ipu::input<float, 2, 6, 6, 3>
    | ipu::on<0>(nn::conv<8, 3> | nn::batch_norm | nn::relu)
    | ipu::on<2>(nn::residual(ipu::on<1>(nn::conv<8, 3> | nn::relu) | nn::conv<8, 1> | nn::batch_norm)
                 | nn::global_avg_pool | nn::dense<3>);

template <class G>
constexpr int first_on(int ipu) {
  for (std::size_t j = 0; j < ipu::node_table_v<G>.size(); ++j)
    if (ipu::node_table_v<G>[j].ipu == ipu) return static_cast<int>(j);
  return -1;
}
using three_t = std::remove_cvref_t<decltype(three_stage)>;
static_assert(ipu::pipeline_stages_v<three_t> == 3);
// The residual's add, on stage 2, reads stage 0's relu, which crosses stage 1.
static_assert(ipu::node_table_v<three_t>[static_cast<std::size_t>(first_on<three_t>(2) + 2)].reads(first_on<three_t>(1) - 1));

template <class A, class B>
void require_same_bits(const A& a, const B& b) {
  for (std::size_t l = 0; l < a.weights().size(); ++l)
    for (const ipu::weight_tensor& t : a.weights()[l].tensors()) {
      INFO("layer " << l << ", tensor " << t.name);
      const std::span<const float> x = a.weights()[l][t.name], y = b.weights()[l][t.name];
      const std::span<const float> gx = a.gradients()[l][t.name], gy = b.gradients()[l][t.name];
      for (std::size_t i = 0; i < x.size(); ++i) {
        REQUIRE(std::bit_cast<std::uint32_t>(x[i]) == std::bit_cast<std::uint32_t>(y[i]));
        REQUIRE(std::bit_cast<std::uint32_t>(gx[i]) == std::bit_cast<std::uint32_t>(gy[i]));
      }
    }
}

// Steps of `G` pipelined with `Schedule` and run sequentially: the same losses and bits.
template <class G, class Tgt, ipu::train_options Opts, pipeline_schedule Schedule>
void pipelined_matches_sequential(unsigned threads) {
  constexpr ipu::train_options sequential = Opts;
  constexpr ipu::train_options pipelined = [] {
    ipu::train_options o = Opts;
    o.pipeline = Schedule;
    return o;
  }();
  using stream_t = ipu::stream_type_t<G>;
  const auto w = ipu::weights<G>::random(7);
  ipu::trainer<G, Tgt, pipelined> p(w, {.threads = threads, .seed = 3});
  ipu::trainer<G, Tgt, sequential> s(w, {.threads = 1, .seed = 3});
  static_assert(decltype(p)::pipelined && !decltype(s)::pipelined);
  constexpr std::int64_t batch = decltype(p)::batch;
  constexpr std::size_t in = static_cast<std::size_t>(ipu::node_table_v<G>[0].out.elements() * Opts.gradient_accumulation);
  constexpr std::int64_t classes = ipu::node_table_v<G>.back().out.channels();
  for (int step = 0; step < 3; ++step) {
    const std::vector<float> xf = ipu_test::normal_values(in, 100 + static_cast<std::uint64_t>(step));
    const std::vector<stream_t> x(xf.begin(), xf.end());
    const std::vector<std::int32_t> y = ipu_test::random_labels(static_cast<std::size_t>(batch), classes, 200 + static_cast<std::uint64_t>(step));
    const float lp = p.step(x, y), ls = s.step(x, y);
    REQUIRE(std::bit_cast<std::uint32_t>(lp) == std::bit_cast<std::uint32_t>(ls));
    REQUIRE(std::ranges::equal(p.logits(), s.logits()));
    require_same_bits(p, s);
  }
  CHECK(p.steps() == 3);
}

using two_ipus = ipu::system<ipu_test::small_target<16>, 2>;
using three_ipus = ipu::system<ipu_test::small_target<16>, 3>;
using two_f32 = std::remove_cvref_t<decltype(two_stage<float>)>;
using two_f16 = std::remove_cvref_t<decltype(two_stage<ipu::f16>)>;

TEST_CASE("Grouped pipelining over two IPUs gives the bits of the same micro-batches run one after another") {
  constexpr ipu::train_options opts{.optimizer = ipu::sgd{.learning_rate = 0.05, .momentum = 0.9}, .gradient_accumulation = 8};
  pipelined_matches_sequential<two_f32, two_ipus, opts, pipeline_schedule::grouped>(2);
  pipelined_matches_sequential<two_f32, two_ipus, opts, pipeline_schedule::grouped>(1);
}

TEST_CASE("Interleaved pipelining over two IPUs gives the bits of the same micro-batches run one after another") {
  constexpr ipu::train_options opts{.optimizer = ipu::adam{.learning_rate = 0.01}, .gradient_accumulation = 2,
                                    .gradient_reduction = ipu::gradient_reduction::sum};
  pipelined_matches_sequential<two_f32, two_ipus, opts, pipeline_schedule::interleaved>(2);
}

TEST_CASE("Pipelining an f16 graph in 16.32 with loss scaling gives the sequential bits") {
  constexpr ipu::train_options opts{.optimizer = ipu::sgd{.learning_rate = 0.05}, .loss_scaling = 128, .gradient_accumulation = 4};
  pipelined_matches_sequential<two_f16, two_ipus, opts, pipeline_schedule::grouped>(2);
}

TEST_CASE("Three stages, with a shortcut through the middle one, give the sequential bits in both schedules") {
  constexpr ipu::train_options grouped{.optimizer = ipu::sgd{.learning_rate = 0.05, .momentum = 0.9}, .gradient_accumulation = 6};
  pipelined_matches_sequential<three_t, three_ipus, grouped, pipeline_schedule::grouped>(2);
  constexpr ipu::train_options interleaved{.optimizer = ipu::sgd{.learning_rate = 0.05}, .gradient_accumulation = 3};
  pipelined_matches_sequential<three_t, three_ipus, interleaved, pipeline_schedule::interleaved>(3);
}

TEST_CASE("A pipelined trainer refuses a wrong batch before any stage runs, and trains on afterwards") {
  constexpr ipu::train_options opts{.gradient_accumulation = 4, .pipeline = pipeline_schedule::grouped};
  ipu::trainer<two_f32, two_ipus, opts> t(ipu::weights<two_f32>::random(1));
  const std::vector<float> x(4 * 2 * 6 * 6 * 3, 0.5f);
  std::vector<std::int32_t> y(8, 1);
  y[5] = 3;
  CHECK_THROWS_WITH(t.step(x, y), Catch::Contains("label 5 is 3"));
  y[5] = 2;
  CHECK(std::isfinite(t.step(x, y)));
  CHECK(t.steps() == 1);

  // Its profile: the plan's window over both IPUs, and each stage's host times.
  const ipu::training_profile profile = t.profile();
  const ipu::training_profile::window_timing& w = profile.window();
  CHECK(w.stages == 2);
  CHECK(w.micro_batches == 4);
  CHECK(w.slots == ipu::pipeline_slots(pipeline_schedule::grouped, 2, 4));
  REQUIRE(w.timelines.size() == 2);
  CHECK(w.timelines[0] == "FFFXBBB");  // slots 0-6: stage 0 forward in 0-3, backward in 3-6
  CHECK(w.timelines[1] == ".FXXXB.");  // stage 1: forward in 1-4, backward in 2-5
  CHECK(profile.steps_measured() == 4);
  for (const ipu::training_step_profile& sp : profile.steps())
    if (sp.phase == ipu::step_phase::forward) CHECK(sp.host_seconds > 0);
  CHECK(profile.str().find("IPU 1") != std::string::npos);
}

// ---- fit and the estimator over a pipeline ---------------------------------------------------

// The quadrant classifier over two IPUs, micro-batches of 4.
using quadrant_two = std::remove_cvref_t<decltype(ipu::input<float, 4, ipu_test::quadrant_side, ipu_test::quadrant_side, 1>
                                                  | ipu::on<0>(nn::conv<8, 3> | nn::batch_norm | nn::relu)
                                                  | ipu::on<1>(nn::max_pool<2, 2> | nn::flatten | nn::dropout<0.2>
                                                               | nn::dense<4> | nn::softmax))>;
constexpr ipu::train_options quadrant_sequential{.optimizer = ipu::sgd{.learning_rate = 0.05, .momentum = 0.9},
                                                 .gradient_accumulation = 4};
constexpr ipu::train_options quadrant_grouped = [] {
  ipu::train_options o = quadrant_sequential;
  o.pipeline = pipeline_schedule::grouped;
  return o;
}();

TEST_CASE("fit over a grouped pipeline learns, with the history and weights of the sequential schedule") {
  const ipu_test::quadrant_set train(256, 31), test(128, 32);
  const auto w = ipu::weights<quadrant_two>::random(4);
  ipu::model<quadrant_two, two_ipus, quadrant_grouped> pipelined(w, {.threads = 2, .seed = 5});
  ipu::model<quadrant_two, two_ipus, quadrant_sequential> sequential(w, {.threads = 1, .seed = 5});
  static_assert(decltype(pipelined)::batch == 16 && decltype(pipelined)::micro_batch == 4);
  const ipu::fit_options<float> o{.epochs = 3, .seed = 9, .verbose = ipu::verbosity::silent};
  const ipu::history hp = pipelined.fit(train.x, train.y, o), hs = sequential.fit(train.x, train.y, o);
  REQUIRE(hp.epochs.size() == 3);
  for (std::size_t e = 0; e < 3; ++e) {
    CHECK(hp.epochs[e].steps == 256 / 16);
    CHECK(hp.epochs[e].loss == hs.epochs[e].loss);
    CHECK(hp.epochs[e].accuracy == hs.epochs[e].accuracy);
  }
  for (std::size_t l = 0; l < w.size(); ++l)
    for (const ipu::weight_tensor& t : w[l].tensors()) REQUIRE(std::ranges::equal(pipelined.weights()[l][t.name], sequential.weights()[l][t.name]));
  CHECK(pipelined.evaluate(test.x, test.y).accuracy > 0.6);  // chance is 0.25
}

TEST_CASE("estimator: a step takes gradient_accumulation batches of the input through the pipeline") {
  const ipu_test::quadrant_set data(4 * 9, 41);  // 9 batches of 4: two steps of 4, one batch left over
  constexpr std::int64_t sample = ipu_test::quadrant_side * ipu_test::quadrant_side;
  const auto w = ipu::weights<quadrant_two>::random(6);
  const auto dir = ipu_test::scratch_dir("pipeline_estimator");
  ipu::estimator<quadrant_two, two_ipus, quadrant_grouped> est(w, {.model_dir = dir}, {.threads = 2, .seed = 7});
  const ipu::train_result r = est.train([&] {
    return ranges::views::zip(data.x | ranges::views::chunk(4 * sample), data.y | ranges::views::chunk(4));
  });
  CHECK(r.steps == 2);
  CHECK(r.global_step == 2);
  ipu::trainer<quadrant_two, two_ipus, quadrant_sequential> reference(w, {.threads = 1, .seed = 7});
  for (std::size_t step = 0; step < 2; ++step)
    reference.step(std::span(data.x).subspan(step * 16 * sample, 16 * sample), std::span(data.y).subspan(step * 16, 16));
  const ipu::weights<quadrant_two> saved = ipu::load_weights<quadrant_two>(r.checkpoint);
  for (std::size_t l = 0; l < w.size(); ++l)
    for (const ipu::weight_tensor& t : w[l].tensors()) REQUIRE(std::ranges::equal(saved[l][t.name], reference.weights()[l][t.name]));
  std::filesystem::remove_all(dir);
}

}  // namespace pipeline_tests
