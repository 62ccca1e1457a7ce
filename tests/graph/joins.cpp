// The graph language's joins: shapes, parameters, node paths and the nodes a join reads.
#include <ipu/ipu.hpp>

#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <string_view>

namespace nn = ipu::nn;

namespace {
constexpr auto net = ipu::input<ipu::f32, 2, 8, 8, 4>
    | nn::concat(nn::conv<8, 1>, nn::conv<16, 3> | nn::relu, nn::identity)
    | nn::scope<"gate">(nn::multiply(nn::identity, nn::conv<28, 1>))
    | nn::add(nn::identity, nn::identity, nn::relu);
using net_t = decltype(net);
constexpr auto& table = ipu::node_table_v<net_t>;
constexpr int at(std::string_view path) { return ipu::find_node(table, path); }
}  // namespace

TEST_CASE("a concat's output has the sum of its branches' channels, the other joins their shape") {
  STATIC_REQUIRE(ipu::output_shape_v<net_t> == std::array<std::int64_t, 4>{2, 8, 8, 28});  // 8 + 16 + 4
  STATIC_REQUIRE(ipu::param_count_v<net_t> == 4 * 8 + 3 * 3 * 4 * 16 + 28 * 28);
  STATIC_REQUIRE(ipu::node_count_v<net_t> == 1 + 4 + 2 + 2);  // input; concat: 3 branch nodes + join; gate: 1 + join; add: 1 + join
}

TEST_CASE("a join is named like a layer and its branches inside it, and it reads each branch in order") {
  constexpr int concat = at("concat1");
  STATIC_REQUIRE(concat > 0);
  STATIC_REQUIRE(table[concat].kind == ipu::op_of<ipu::ops::concat>);
  STATIC_REQUIRE(table[concat].input_count == 3);
  STATIC_REQUIRE(table[concat].inputs[0] == at("concat1.branch1.conv1"));
  STATIC_REQUIRE(table[concat].inputs[1] == at("concat1.branch2.relu1"));
  STATIC_REQUIRE(table[concat].inputs[2] == 0);  // the identity branch: the join's own input
  STATIC_REQUIRE(table[at("concat1.branch2.conv1")].input() == 0);  // every branch starts at the input

  constexpr int gate = at("gate.multiply1");
  STATIC_REQUIRE(table[gate].input_count == 2);
  STATIC_REQUIRE(table[gate].inputs[0] == concat);
  STATIC_REQUIRE(table[gate].inputs[1] == at("gate.multiply1.branch2.conv1"));

  constexpr int sum = at("add1");
  STATIC_REQUIRE(table[sum].input_count == 3);
  STATIC_REQUIRE(table[sum].inputs[0] == gate);
  STATIC_REQUIRE(table[sum].inputs[1] == gate);
  STATIC_REQUIRE(table[sum].inputs[2] == at("add1.branch3.relu1"));
  STATIC_REQUIRE(sum == static_cast<int>(table.size()) - 1);
}

TEST_CASE("a join's inputs stay live until the join has run") {
  const auto last = ipu::last_use(table);
  CHECK(last[0] == at("concat1"));  // the graph input: read by the identity branch of the concat
  CHECK(last[static_cast<std::size_t>(at("concat1.branch1.conv1"))] == at("concat1"));
}
