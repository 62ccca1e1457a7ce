// A whole ResNeXt-50 32x4d (at a 32x32 image, so that the test is quick) on one Mk2: the
// reference agrees, both modes agree bit for bit, and faithful mode's memory is the plan's.

#include <catch2/catch.hpp>

#include "support/executor_support.hpp"

#include <ipu/ipu.hpp>

#include <cstring>

namespace {
template <class T>
using small_resnext50 = ipu::models::resnext<T, 2, 50, 32, 4, /*InChannels*/ 4, /*Classes*/ 10, /*ImageSize*/ 32>;

template <class G>
void check_resnext(double tolerance) {
  const auto w = ipu::weights<G>::random(2024);
  const auto x = ipu_test::random_input<G>(99);
  const std::vector<double> expected = ipu_test::reference_output<G>(x, w);
  ipu::engine<G, ipu::mk2> fast{w};
  ipu::engine<G, ipu::mk2> faithful{w, {ipu::execution_mode::faithful, 0}};
  const auto y = fast.infer(x);
  const double error = ipu_test::ref::max_relative_error(expected, y.data(), y.size());
  INFO("max relative error " << error);
  CHECK(error < tolerance);
  const auto z = faithful.infer(x);
  CHECK(std::memcmp(y.data(), z.data(), y.size() * sizeof(y[0])) == 0);
  ipu_test::check_memory_matches_plan(faithful);
}
}  // namespace

TEST_CASE("ResNeXt-50 32x4d in f32 matches the reference") { check_resnext<small_resnext50<ipu::f32>>(1e-5); }

TEST_CASE("ResNeXt-50 32x4d in f16 matches the reference within the f16 tolerance") {
  check_resnext<small_resnext50<ipu::f16>>(3e-2);
}
