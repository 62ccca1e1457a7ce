// ipu::tensor: checked access, assignment on a tensor that was moved from, and assignment from
// any range, converted.
#include <ipu/core/tensor.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <ranges>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

using Catch::Matchers::Contains;

TEST_CASE("tensor: at() on a moved-from tensor throws instead of reading null") {
  ipu::tensor<float, 2, 3> t;
  t.at(1, 2) = 5.0f;
  const ipu::tensor<float, 2, 3> moved = std::move(t);
  CHECK(moved[5] == 5.0f);
  CHECK_THROWS_AS(t.at(0, 0), std::out_of_range);
  CHECK_THROWS_WITH(t.at(1, 2), Contains("no storage") && Contains("[2, 3]"));
}

TEST_CASE("tensor: assign gives a moved-from tensor storage again") {
  ipu::tensor<float, 2, 3> t;
  ipu::tensor<float, 2, 3> moved = std::move(t);
  const std::vector<float> values{1, 2, 3, 4, 5, 6};
  t.assign(values);
  REQUIRE(t.data() != nullptr);
  CHECK(t.at(1, 2) == 6.0f);
  CHECK(t.at(0, 1) == 2.0f);
  moved = t;
  CHECK(moved == t);
}

TEST_CASE("tensor: assign converts any range's values, an f16 tensor's rounded to nearest even") {
  ipu::tensor<ipu::f16, 2, 3> t;
  // binary16 has 11 significant bits: 2049 lies halfway between 2048 and 2050 and goes to the
  // even significand (2048), 2051 to 2052; 1/3 is 0x3555 = 1365/4096; 65520 overflows.
  t.assign(std::vector<float>{1.0f, 1.0f / 3.0f, 2049.0f, 2051.0f, -0.5f, 65520.0f});
  CHECK(static_cast<float>(t[0]) == 1.0f);
  CHECK(static_cast<float>(t[1]) == 1365.0f / 4096.0f);
  CHECK(static_cast<float>(t[2]) == 2048.0f);
  CHECK(static_cast<float>(t[3]) == 2052.0f);
  CHECK(static_cast<float>(t[4]) == -0.5f);
  CHECK(std::isinf(static_cast<float>(t[5])));

  ipu::tensor<float, 2, 3> f;
  f.assign(std::views::iota(10, 16));  // ints, through a view without a contiguous buffer
  CHECK(f.at(1, 2) == 15.0f);
  f.assign(t);  // an f16 tensor's values, widened
  CHECK(f[2] == 2048.0f);
}

TEST_CASE("tensor: assign from a range refuses too few or too many values, and an endless range") {
  ipu::tensor<float, 2, 3> t;
  CHECK_THROWS_WITH(t.assign(std::views::iota(0, 4)), "ipu::tensor: 4 values given, the tensor [2, 3] holds 6");
  CHECK_THROWS_WITH(t.assign(std::views::iota(0, 7)), "ipu::tensor: more than 6 values given, the tensor [2, 3] holds 6");
  CHECK_THROWS_WITH(t.assign(std::views::iota(0)), Contains("more than 6 values given"));
}

// An 8-bit tensor takes only bytes: a float would be truncated unseen.
template <class T, class R>
concept assignable_from_range = requires(T& t, R r) { t.assign(r); };
static_assert(assignable_from_range<ipu::tensor<std::uint8_t, 4>, std::vector<std::uint8_t>>);
static_assert(!assignable_from_range<ipu::tensor<std::uint8_t, 4>, std::vector<float>>);
static_assert(assignable_from_range<ipu::tensor<ipu::f16, 4>, std::vector<double>>);
static_assert(!assignable_from_range<ipu::tensor<float, 4>, std::vector<std::string>>);
static_assert(!assignable_from_range<ipu::tensor<float, 4>, std::string>);  // characters are not values
