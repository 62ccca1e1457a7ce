// Non-finite values: what the ops do with them (as docs/executor.md documents), and the
// opt-in check (`engine_config::check_finite`) that names the first step producing one, in
// both modes, with the engine usable afterwards.

#include <catch2/catch.hpp>

#include "support/executor_support.hpp"

#include <ipu/ipu.hpp>

#include <cmath>
#include <limits>
#include <string>

namespace nn = ipu::nn;
using Catch::Matchers::Contains;
using ipu_test::small_target;

namespace {

using tiny = small_target<16>;
constexpr float quiet_nan = std::numeric_limits<float>::quiet_NaN();
constexpr float inf = std::numeric_limits<float>::infinity();

// ReLU, max pooling, a 1x1 conv and global pooling.
constexpr auto drop_net = ipu::input<ipu::f32, 1, 4, 4, 4> | nn::relu | nn::max_pool<2, 2> | nn::conv<4, 1>
    | nn::global_avg_pool;
using drop_t = decltype(drop_net);

// A conv whose sums overflow f16 (65504) on inputs of 60000, then ReLU and a dense layer.
constexpr auto overflow_net = ipu::input<ipu::f16, 1, 2, 2, 4> | nn::conv<4, 1> | nn::relu | nn::global_avg_pool
    | nn::dense<2>;
using overflow_t = decltype(overflow_net);

template <class G>
ipu::weights<G> ones() {
  auto w = ipu::weights<G>::random(1);
  for (ipu::layer_weights& layer : w)
    for (const ipu::weight_tensor& t : layer.tensors()) {
      const std::string name(t.name);
      const bool unit = name == "kernel" || name == "scale" || name == "variance";
      for (float& v : layer[name]) v = unit ? 1.0f : 0.0f;
    }
  return w;
}

ipu::input_tensor_t<drop_t> finite_input() {
  ipu::input_tensor_t<drop_t> x;
  for (std::size_t i = 0; i < x.size(); ++i) x.data()[i] = 0.25f * static_cast<float>(i % 7) - 0.5f;
  return x;
}

bool all_finite(const ipu::output_tensor_t<drop_t>& y) {
  for (std::size_t i = 0; i < y.size(); ++i)
    if (!std::isfinite(y.data()[i])) return false;
  return true;
}

}  // namespace

TEST_CASE("a NaN input can vanish: ReLU and max pooling drop it") {
  for (const auto mode : {ipu::execution_mode::fast, ipu::execution_mode::faithful}) {
    ipu::engine<drop_t, tiny> e{ones<drop_t>(), {mode, 1}};
    auto x = finite_input();
    x.data()[5] = quiet_nan;  // ReLU(NaN) is 0
    CHECK(all_finite(e.infer(x)));
  }
}

TEST_CASE("infinite inputs can give NaN outputs") {
  auto w = ones<drop_t>();
  for (int cout = 0; cout < 4; ++cout) w["conv1"]["kernel"][static_cast<std::size_t>(4 + cout)] = -1.0f;  // HWIO: input channel 1
  for (const auto mode : {ipu::execution_mode::fast, ipu::execution_mode::faithful}) {
    ipu::engine<drop_t, tiny> e{w, {mode, 1}};
    auto x = finite_input();
    x.data()[0] = inf;  // channel 0 of pixel (0, 0)
    x.data()[5] = inf;  // channel 1 of pixel (0, 1), in the same pooling window: the conv sums inf - inf
    const auto y = e.infer(x);
    for (std::size_t i = 0; i < y.size(); ++i) CHECK(std::isnan(y.data()[i]));
  }
}

TEST_CASE("the check names the input step for a non-finite input, in both modes") {
  for (const auto mode : {ipu::execution_mode::fast, ipu::execution_mode::faithful}) {
    ipu::engine<drop_t, tiny> e{ones<drop_t>(), {.mode = mode, .threads = 1, .check_finite = true}};
    auto x = finite_input();
    x.data()[21] = quiet_nan;  // pixel (1, 1), channel 1
    try {
      (void)e.infer(x);
      FAIL("no error");
    } catch (const ipu::non_finite_error& error) {
      CHECK(error.step() == 0);
      CHECK(error.index() == 21);
      CHECK(std::isnan(error.value()));
      CHECK_THAT(error.what(), Contains("step 0 (input, input)") && Contains("element 21 [0, 1, 1, 1]") &&
                                   Contains("[1, 4, 4, 4] is nan"));
    }
    // The engine is as before: a finite batch runs, and gives the unchecked engine's bits.
    ipu::engine<drop_t, tiny> unchecked{ones<drop_t>(), {mode, 1}};
    CHECK(ipu_test::same_bits(e.infer(finite_input()), unchecked.infer(finite_input())));
  }
}

TEST_CASE("the check names the layer whose f16 sums overflow, though ReLU and pooling follow it") {
  ipu::input_tensor_t<overflow_t> x;
  for (std::size_t i = 0; i < x.size(); ++i) x.data()[i] = ipu::f16(60000.0f);
  for (const auto mode : {ipu::execution_mode::fast, ipu::execution_mode::faithful}) {
    ipu::engine<overflow_t, tiny> unchecked{ones<overflow_t>(), {mode, 1}};
    const auto y = unchecked.infer(x);
    CHECK(std::isinf(static_cast<float>(y.data()[0])));  // inf, reported nowhere without the check

    ipu::engine<overflow_t, tiny> e{ones<overflow_t>(), {.mode = mode, .threads = 1, .check_finite = true}};
    try {
      (void)e.infer(x);
      FAIL("no error");
    } catch (const ipu::non_finite_error& error) {
      CHECK(error.step() == 1);
      CHECK(error.index() == 0);
      CHECK(error.value() == std::numeric_limits<double>::infinity());
      CHECK_THAT(error.what(), Contains("step 1 (conv1, conv)") && Contains("is inf"));
    }
  }
}

TEST_CASE("without the check, nothing is checked, with it, finite batches give the same bits") {
  const auto w = ipu::weights<drop_t>::random(3);
  ipu::engine<drop_t, tiny> checked{w, {.mode = ipu::execution_mode::fast, .threads = 1, .check_finite = true}};
  ipu::engine<drop_t, tiny> plain{w, {ipu::execution_mode::fast, 1}};
  const auto x = ipu_test::random_input<drop_t>(9);
  CHECK(ipu_test::same_bits(checked.infer(x), plain.infer(x)));
  auto bad = x;
  bad.data()[0] = quiet_nan;
  CHECK_NOTHROW(plain.infer(bad));
}
