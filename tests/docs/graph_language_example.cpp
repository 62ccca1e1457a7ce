// The example at the top of docs/graph-language.md, compiled. Keep the two in step
// (tests/docs/examples_in_step.py checks that they are).
#include <ipu/ipu.hpp>
namespace nn = ipu::nn;

#include <catch2/catch.hpp>

#include <array>
#include <cstdint>

namespace {
constexpr auto net = ipu::input<ipu::f32, 8, 32, 32, 3>            // batch 8, 32x32 RGB, NHWC
    | nn::conv<32, 3> | nn::batch_norm | nn::relu
    | nn::scope<"stage1">(nn::residual(nn::conv<32, 3> | nn::batch_norm | nn::relu
                                       | nn::conv<32, 3> | nn::batch_norm) | nn::relu)
    | ipu::on<1>(nn::global_avg_pool | nn::dense<10> | nn::softmax);
using net_t = decltype(net);

static_assert(ipu::output_shape_v<net_t> == std::array<std::int64_t, 2>{8, 10});
static_assert(ipu::param_count_v<net_t> == 19'818);

// By hand: 3*3*3*32 + 64 + 2 * (3*3*32*32 + 64) + 32*10 + 10.
static_assert(864 + 64 + 2 * (9216 + 64) + 330 == 19'818);

constexpr auto inception = nn::concat(nn::conv<16, 1>,
                                      nn::conv<16, 1> | nn::relu | nn::conv<32, 3>,
                                      nn::max_pool<3, 1> | nn::conv<16, 1>);   // 64 channels
constexpr auto gate = nn::multiply(nn::identity, nn::conv<64, 1> | nn::relu);
using block_t = decltype(ipu::input<ipu::f32, 2, 28, 28, 32> | inception | gate);
static_assert(ipu::output_shape_v<block_t> == std::array<std::int64_t, 4>{2, 28, 28, 64});

// The stem on the IPU, a block on the host, the rest on the IPU again.
constexpr auto mixed = ipu::input<ipu::f32, 2, 28, 28, 32>
    | nn::conv<32, 3> | nn::relu
    | ipu::on_host(nn::max_pool<3, 1> | nn::conv<32, 1>)   // runs on the host between IPU steps
    | nn::residual(nn::conv<32, 3> | nn::batch_norm) | nn::global_avg_pool | nn::dense<10>;
using mixed_t = decltype(mixed);
}  // namespace

TEST_CASE("graph language guide: paths and placement of the example", "[docs]") {
  constexpr auto& t = ipu::node_table_v<net_t>;
  STATIC_REQUIRE(ipu::find_node(t, "stage1.block1.conv2") > 0);
  STATIC_REQUIRE(t[ipu::find_node(t, "dense1")].ipu == 1);
  STATIC_REQUIRE(t[ipu::find_node(t, "stage1.relu1")].ipu == 0);
}

TEST_CASE("graph language guide: the joins' paths", "[docs]") {
  constexpr auto& t = ipu::node_table_v<block_t>;
  STATIC_REQUIRE(t[ipu::find_node(t, "concat1")].input_count == 3);
  STATIC_REQUIRE(ipu::find_node(t, "concat1.branch2.conv2") > 0);
  STATIC_REQUIRE(t[ipu::find_node(t, "multiply1")].inputs[0] == ipu::find_node(t, "concat1"));
}

TEST_CASE("graph language guide: a block on the host", "[docs]") {
  constexpr auto& t = ipu::node_table_v<mixed_t>;
  STATIC_REQUIRE(t[ipu::find_node(t, "conv2")].on_host());
  STATIC_REQUIRE(t[ipu::find_node(t, "max_pool1")].ipu == ipu::host_device);
  STATIC_REQUIRE(t[ipu::find_node(t, "block1.conv1")].ipu == 0);
  constexpr auto& plan = ipu::plan_v<mixed_t, ipu::mk2>;
  STATIC_REQUIRE(plan.host_bytes(ipu::find_node(t, "max_pool1")) == 2 * 28 * 28 * 32 * 4);
}
