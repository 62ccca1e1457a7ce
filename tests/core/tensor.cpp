// ipu::tensor: checked access and assignment on a tensor that was moved from.
#include <ipu/core/tensor.hpp>

#include <catch2/catch.hpp>

#include <stdexcept>
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
