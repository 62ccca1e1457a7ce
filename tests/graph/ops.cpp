// The ops: every node's op handle reaches its op's facts, and the facts users see (names,
// weight tensors, counts, the summary's text) come from the op headers.
#include <ipu/ipu.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace nn = ipu::nn;

namespace {
constexpr auto net = ipu::input<ipu::f32, 2, 8, 8, 4> | nn::conv<8, 3, 2, 2> | nn::batch_norm | nn::relu
    | nn::residual(nn::conv<8, 1> | nn::batch_norm) | nn::max_pool<2, 2> | nn::avg_pool<2, 1>
    | nn::global_avg_pool | nn::dense<5> | nn::softmax;
using net_t = decltype(net);
}  // namespace

TEST_CASE("each op's handle reaches its facts, and lowering gives each node its layer's op") {
  using namespace ipu::ops;
  static_assert(ipu::name_of(ipu::op_of<conv>) == "conv" && ipu::name_of(ipu::op_of<global_avg_pool>) == "global_avg_pool" &&
                ipu::name_of(ipu::op_of<multiply>) == "multiply");
  static_assert(ipu::op_of<conv> == ipu::op_of<conv> && !(ipu::op_of<conv> == ipu::op_of<dense>) &&
                !(ipu::op_of<max_pool> == ipu::op_of<avg_pool>));
  static_assert(info_of<conv>.has_weights() && info_of<batch_norm>.has_weights() && info_of<dense>.has_weights() &&
                !info_of<relu>.has_weights() && !info_of<add>.has_weights());
  static_assert(info_of<conv>.epilogue_head && info_of<relu>.epilogue_order == 3 && !info_of<softmax>.epilogue_head);
  constexpr const auto& table = ipu::node_table_v<net_t>;
  const std::string_view expected[] = {"input", "conv", "batch_norm", "relu", "conv", "batch_norm", "add",
                                       "max_pool", "avg_pool", "global_avg_pool", "dense", "softmax"};
  REQUIRE(table.size() == std::size(expected));
  for (std::size_t j = 0; j < table.size(); ++j) CHECK(ipu::name_of(table[j].kind) == expected[j]);
  static_assert(table[1].kind == ipu::op_of<conv> && table[6].kind == ipu::op_of<add> && table[11].kind == ipu::op_of<softmax>);
}

TEST_CASE("device tensors are found by name") {
  static_assert(ipu::ops::device_index<ipu::ops::dense>("kernel") == 0);
  static_assert(ipu::ops::device_index<ipu::ops::dense>("bias") == 1);
  static_assert(ipu::ops::device_index<ipu::ops::batch_norm>("shift") == 1);
  // A batch norm's four user tensors fold into the device's two.
  const auto tensors = [](std::string_view name) {
    static const std::vector<float> scale{2.0f}, shift{1.0f}, mean{0.5f}, variance{3.0f};
    return std::span<const float>(name == "scale" ? scale : name == "shift" ? shift : name == "mean" ? mean : variance);
  };
  const auto folded = ipu::ops::info_of<ipu::ops::batch_norm>.to_device(ipu::ops::tensor_source{tensors});
  REQUIRE(folded.size() == 2);
  const double s = 2.0 / std::sqrt(3.0 + ipu::batch_norm_epsilon);  // scale / sqrt(variance + epsilon)
  CHECK(folded[0][0] == static_cast<float>(s));
  CHECK(folded[1][0] == static_cast<float>(1.0 - 0.5 * s));  // shift - mean * scale'
}

TEST_CASE("ipu::weights lists each layer's tensors as its op states them") {
  const ipu::weights<net_t> w;
  REQUIRE(w.size() == 5);  // two convs, two batch norms, a dense layer
  std::int64_t values = 0;
  for (const ipu::layer_weights& layer : w)
    for (const ipu::weight_tensor& t : layer.tensors()) values += t.elements();
  // conv 3x3 g2: 3*3*2*8; batch norm 4x8; block conv 1x1: 8*8; its batch norm 4x8; dense 8*5 + 5.
  CHECK(values == 144 + 32 + 64 + 32 + 45);
  CHECK(w["conv1"].tensor("kernel").shape == std::vector<std::int64_t>{3, 3, 2, 8});
  CHECK(w["batch_norm1"]["scale"][0] == 1.0f);     // a fresh batch norm is the identity
  CHECK(w["batch_norm1"]["variance"][0] == 1.0f);
  CHECK(w["batch_norm1"]["mean"][0] == 0.0f);
  CHECK(w["dense1"].tensor("bias").shape == std::vector<std::int64_t>{5});
  CHECK_THROWS_WITH(w["dense1"].tensor("scale"), Catch::Contains("its tensors are kernel, bias"));
}

TEST_CASE("the summary describes each layer from its op") {
  const std::string s = ipu::summary<net_t>().str();
  CHECK(s.find("conv 3x3/2 g2") != std::string::npos);
  CHECK(s.find("max_pool 2x2/2") != std::string::npos);
  CHECK(s.find("dense 5") != std::string::npos);
}

namespace {
/// Whether code outside `ipu` could change the size of a layer's tensor.
template <class L>
concept resizable = requires(L& l) { l.tensors()[0].values.resize(1); } ||
                    requires(L& l) { l.tensor("kernel").values.resize(1); } ||
                    requires(L& l) { l.tensors()[0].shape.push_back(1); };
}  // namespace

TEST_CASE("a layer's tensors keep their names, shapes and sizes: only their values change") {
  static_assert(!resizable<ipu::layer_weights>);
  ipu::weights<net_t> w;
  ipu::layer_weights& conv = w["conv1"];
  conv["kernel"][0] = 0.5f;  // values change in place
  CHECK(conv.tensor("kernel").values[0] == 0.5f);
  CHECK_THROWS_AS(conv.assign("kernel", std::vector<float>(7)), ipu::weight_error);
  CHECK(conv["kernel"].size() == 144);
}
