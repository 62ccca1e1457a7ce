// A deep graph: a residual net of 200 blocks (1,404 nodes) lowers, plans and fits one Mk2 with
// both compilers. With clang this needs more constant evaluation than its default allows; the
// ipu::ipu target raises the limit (CMakeLists.txt, docs/graph-language.md "Compile time").

#include <catch2/catch.hpp>

#include <ipu/ipu.hpp>

#include <array>
#include <cstdint>
#include <string_view>

namespace nn = ipu::nn;

namespace {
constexpr auto block = nn::residual(nn::conv<8, 3> | nn::batch_norm | nn::relu | nn::conv<8, 3> | nn::batch_norm) | nn::relu;
using deep = decltype(ipu::input<ipu::f32, 1, 8, 8, 8> | nn::conv<8, 3> | nn::repeat<200>(block)
                      | nn::global_avg_pool | nn::dense<10>);

static_assert(ipu::node_count_v<deep> == 1 + 1 + 7 * 200 + 2);
static_assert(ipu::output_shape_v<deep> == std::array<std::int64_t, 2>{1, 10});
static_assert(ipu::fits_v<deep, ipu::mk2>);
}  // namespace

TEST_CASE("a 200-block residual net (1,404 nodes) is lowered and planned at compile time") {
  constexpr const auto& table = ipu::node_table_v<deep>;
  CHECK(table[1400].path.view() == std::string_view("block200.add"));
  constexpr const auto& plan = ipu::plan_v<deep, ipu::mk2>;
  CHECK(plan.fits);
  CHECK(plan.ipus[0].peak > 0);
}
