// Node paths, wiring of residual blocks, placement, and the size of graph types.
#include <ipu/ipu.hpp>

#include <catch2/catch.hpp>

#include <sstream>
#include <string_view>
#include <type_traits>

namespace nn = ipu::nn;

namespace {
constexpr auto body = nn::conv<8, 1> | nn::batch_norm | nn::relu | nn::conv<8, 3, 1, 4> | nn::batch_norm;
constexpr auto net = ipu::input<ipu::f32, 1, 8, 8, 8> | nn::conv<8, 3> |
                     nn::scope<"stage1">(nn::residual(body, nn::conv<8, 1> | nn::batch_norm) | nn::relu |
                                         nn::repeat<2>(nn::residual(body) | nn::relu)) |
                     ipu::on<1>(nn::global_avg_pool | nn::dense<4>);
using net_t = decltype(net);
constexpr auto& table = ipu::node_table_v<net_t>;
constexpr int at(std::string_view path) { return ipu::find_node(table, path); }
}  // namespace

TEST_CASE("paths follow the structure: scopes, blocks, per-op counters", "[graph][names]") {
  STATIC_REQUIRE(table[0].path == "input");
  STATIC_REQUIRE(table[1].path == "conv1");
  STATIC_REQUIRE(at("stage1.block1.conv2") > 0);
  STATIC_REQUIRE(at("stage1.block1.shortcut.conv1") > at("stage1.block1.batch_norm2"));
  STATIC_REQUIRE(at("stage1.block1.add") == at("stage1.block1.shortcut.batch_norm1") + 1);
  STATIC_REQUIRE(at("stage1.relu1") == at("stage1.block1.add") + 1);
  // repeat continues the block counter of its scope
  STATIC_REQUIRE(at("stage1.block2.add") > 0);
  STATIC_REQUIRE(at("stage1.block3.add") > at("stage1.block2.add"));
  STATIC_REQUIRE(at("stage1.block4.add") == -1);
  STATIC_REQUIRE(at("stage1.relu3") == at("stage1.block3.add") + 1);
  STATIC_REQUIRE(at("dense1") == static_cast<int>(table.size()) - 1);
}

TEST_CASE("a residual add reads its body and its shortcut", "[graph][wiring]") {
  constexpr int add = at("stage1.block1.add");
  STATIC_REQUIRE(table[add].inputs[0] == at("stage1.block1.batch_norm2"));
  STATIC_REQUIRE(table[add].inputs[1] == at("stage1.block1.shortcut.batch_norm1"));
  // both the body and the projection start from the block input
  STATIC_REQUIRE(table[at("stage1.block1.conv1")].input() == at("conv1"));
  STATIC_REQUIRE(table[at("stage1.block1.shortcut.conv1")].input() == at("conv1"));
  // an identity shortcut is the block input itself
  constexpr int add2 = at("stage1.block2.add");
  STATIC_REQUIRE(table[add2].inputs[1] == at("stage1.relu1"));
  // every node reads only nodes before it
  bool ordered = true;
  for (std::size_t i = 1; i < table.size(); ++i) {
    for (int src : table[i].sources()) ordered = ordered && src >= 0 && src < static_cast<int>(i);
    ordered = ordered && table[i].input_count >= 1;
  }
  REQUIRE(ordered);
}

TEST_CASE("on<> places blocks, everything else is on IPU 0", "[graph][placement]") {
  STATIC_REQUIRE(table[at("stage1.block3.add")].ipu == 0);
  STATIC_REQUIRE(table[at("global_avg_pool1")].ipu == 1);
  STATIC_REQUIRE(table[at("dense1")].ipu == 1);
  constexpr auto nested = ipu::input<ipu::f32, 1, 4, 4, 4> | ipu::on<2>(nn::relu | ipu::on<3>(nn::relu) | nn::relu);
  constexpr auto& t = ipu::node_table_v<decltype(nested)>;
  STATIC_REQUIRE(t[1].ipu == 2);
  STATIC_REQUIRE(t[2].ipu == 3);
  STATIC_REQUIRE(t[3].ipu == 2);
}

TEST_CASE("types stay flat: | concatenates, repeat<N> is one type", "[graph][types]") {
  using ab = decltype(nn::relu | nn::batch_norm);
  using abc = decltype((nn::relu | nn::batch_norm) | (nn::softmax | nn::relu));
  STATIC_REQUIRE(std::is_same_v<ab, nn::seq_t<nn::relu_t, nn::batch_norm_t>>);
  STATIC_REQUIRE(std::is_same_v<abc, nn::seq_t<nn::relu_t, nn::batch_norm_t, nn::softmax_t, nn::relu_t>>);
  using r23 = decltype(nn::repeat<23>(nn::residual(body)));
  using r2 = decltype(nn::repeat<2>(nn::residual(body)));
  STATIC_REQUIRE(sizeof(r23) == sizeof(r2));
  STATIC_REQUIRE(std::is_same_v<r23, nn::repeat_t<23, nn::seq_t<nn::residual_t<std::remove_cvref_t<decltype(body)>, nn::identity_t>>>>);
  // a graph's type lists its top-level blocks, not its nodes
  STATIC_REQUIRE(std::is_same_v<std::remove_cvref_t<decltype(ipu::input<ipu::f32, 1, 1, 1, 1> | nn::relu | nn::relu)>,
                                ipu::graph<ipu::input_spec<ipu::f32, 1, 1, 1, 1>, nn::relu_t, nn::relu_t>>);
  STATIC_REQUIRE(ipu::Block<decltype(body)>);
  STATIC_REQUIRE(!ipu::Block<int>);
  STATIC_REQUIRE(!ipu::Block<net_t>);
  STATIC_REQUIRE(ipu::Graph<net_t>);
  STATIC_REQUIRE(!ipu::Graph<decltype(body)>);
}

TEST_CASE("the summary lists every node and the totals", "[report][summary]") {
  const auto s = ipu::summary<net_t>();
  const std::string text = s.str();
  REQUIRE(s.nodes().size() == table.size());
  REQUIRE(s.total_params() == ipu::param_count_v<net_t>);
  for (const auto& n : table) REQUIRE(text.find(n.path.view()) != std::string::npos);
  REQUIRE(text.find("conv 3x3/1 g4") != std::string::npos);
  REQUIRE(text.find("[1, 4]") != std::string::npos);
  REQUIRE(text.find("total params: ") != std::string::npos);

  // Printing leaves the stream's format as the caller set it (the totals use fixed, 3 digits).
  std::ostringstream out;
  out << s << 0.123456789;
  CHECK(out.str().substr(out.str().size() - 8) == "0.123457");
  CHECK(out.flags() == std::ostringstream().flags());
}
