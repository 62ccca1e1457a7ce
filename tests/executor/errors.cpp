// Clear errors for bad input: weight sets that do not match their graph (counts, sizes,
// shapes, unknown layers and tensors), non-finite weights before and after folding and
// rounding to f16, buffers of the wrong size given to an engine, and host tensors indexed or
// filled wrongly. Also: random weights are deterministic, and a weight set has one entry per
// conv, batch norm and dense layer.

#include <catch2/catch.hpp>

#include "support/executor_support.hpp"

#include <ipu/ipu.hpp>

#include <array>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace nn = ipu::nn;
using Catch::Matchers::Contains;
using ipu_test::small_target;

namespace {

/// Three parameterised layers, seven weight tensors: `stem.conv1` (kernel [3, 3, 4, 8]),
/// `stem.batch_norm1` (scale, shift, mean, variance [8]) and `dense1` (kernel [8, 5], bias [5]).
template <class T>
using net = decltype(ipu::input<T, 1, 6, 6, 4> | nn::scope<"stem">(nn::conv<8, 3> | nn::batch_norm | nn::relu)
                     | nn::global_avg_pool | nn::dense<5>);
using net_f32 = net<ipu::f32>;
using net_f16 = net<ipu::f16>;
using target = small_target<4>;

/// A larger graph: a residual block with a projection shortcut, grouped convs and pooling.
using residual_net = decltype(ipu::input<ipu::f32, 1, 8, 8, 8> | nn::conv<16, 3> | nn::batch_norm | nn::relu
                              | nn::residual(nn::conv<16, 1> | nn::batch_norm | nn::relu
                                             | nn::conv<32, 3, 2, 4> | nn::batch_norm,
                                             nn::conv<32, 1, 2> | nn::batch_norm)
                              | nn::relu | nn::max_pool<3, 2> | nn::global_avg_pool | nn::dense<10> | nn::softmax);

/// The arrays `weights<G>::from_arrays` takes, all of the right sizes, every value `v`.
std::vector<std::vector<float>> arrays_for_net(float v) {
  return {
      std::vector<float>(3 * 3 * 4 * 8, v),                    // stem.conv1.kernel
      std::vector<float>(8, v), std::vector<float>(8, v),      // stem.batch_norm1.scale, shift
      std::vector<float>(8, v), std::vector<float>(8, 1.0f),   // mean, variance
      std::vector<float>(8 * 5, v), std::vector<float>(5, v),  // dense1.kernel, bias
  };
}

template <class G>
bool same_values(const ipu::weights<G>& a, const ipu::weights<G>& b) {
  for (std::size_t i = 0; i < ipu::weights<G>::size(); ++i)
    for (std::size_t k = 0; k < a[i].tensors().size(); ++k)
      if (a[i].tensors()[k].values != b[i].tensors()[k].values) return false;
  return true;
}

}  // namespace

TEST_CASE("the test graph's layers are named as the weight messages below expect") {
  const ipu::weights<net_f32> w;
  REQUIRE(ipu::weights<net_f32>::size() == 3);
  CHECK(w[0].path() == "stem.conv1");
  CHECK(w[1].path() == "stem.batch_norm1");
  CHECK(w[2].path() == "dense1");
  CHECK(w[0].tensor("kernel").shape == std::vector<std::int64_t>{3, 3, 4, 8});
}

TEST_CASE("from_arrays with the right arrays fills every tensor in order") {
  auto arrays = arrays_for_net(0.5f);
  arrays[6][4] = 2.0f;
  const auto w = ipu::weights<net_f32>::from_arrays(arrays);
  CHECK(w["stem.conv1"]["kernel"][0] == 0.5f);
  CHECK(w["stem.batch_norm1"]["variance"][7] == 1.0f);
  CHECK(w["dense1"]["bias"][4] == 2.0f);
}

TEST_CASE("from_arrays with one array too few throws a weight_error giving both counts") {
  auto arrays = arrays_for_net(0.5f);
  arrays.pop_back();
  CHECK_THROWS_AS(ipu::weights<net_f32>::from_arrays(arrays), ipu::weight_error);
  CHECK_THROWS_WITH(ipu::weights<net_f32>::from_arrays(arrays),
                    Contains("6 arrays given") && Contains("7 weight tensors") && Contains("3 layers"));
  arrays = arrays_for_net(0.5f);
  arrays.push_back({1.0f});
  CHECK_THROWS_WITH(ipu::weights<net_f32>::from_arrays(arrays), Contains("8 arrays given") && Contains("7 weight tensors"));
  CHECK_THROWS_WITH(ipu::weights<net_f32>::from_arrays({}), Contains("0 arrays given"));
}

TEST_CASE("from_arrays with an array of the wrong size names the layer path and tensor and the shape") {
  auto arrays = arrays_for_net(0.5f);
  arrays[3].resize(7);  // stem.batch_norm1.mean
  CHECK_THROWS_AS(ipu::weights<net_f32>::from_arrays(arrays), ipu::weight_error);
  CHECK_THROWS_WITH(ipu::weights<net_f32>::from_arrays(arrays),
                    Contains("stem.batch_norm1.mean") && Contains("[8]") && Contains("7 given"));
  arrays = arrays_for_net(0.5f);
  arrays[0].resize(3 * 3 * 8 * 4 + 1);  // stem.conv1.kernel
  CHECK_THROWS_WITH(ipu::weights<net_f32>::from_arrays(arrays),
                    Contains("stem.conv1.kernel") && Contains("[3, 3, 4, 8]") && Contains("288") && Contains("289 given"));
  arrays = arrays_for_net(0.5f);
  arrays[5].clear();  // dense1.kernel
  CHECK_THROWS_WITH(ipu::weights<net_f32>::from_arrays(arrays), Contains("dense1.kernel") && Contains("[8, 5]"));
}

TEST_CASE("an unknown layer path or tensor name throws a weight_error naming it") {
  auto w = ipu::weights<net_f32>::random(1);
  const auto& cw = w;
  CHECK_THROWS_AS(w["no.such.layer"], ipu::weight_error);
  CHECK_THROWS_WITH(w["no.such.layer"], Contains("no.such.layer"));
  CHECK_THROWS_WITH(cw["conv1"], Contains("'conv1'"));  // the path is stem.conv1
  CHECK_THROWS_AS(w["stem.conv1"]["no_such_tensor"], ipu::weight_error);
  CHECK_THROWS_WITH(w["stem.conv1"]["no_such_tensor"], Contains("no_such_tensor") && Contains("stem.conv1") &&
                                                           Contains("its tensors are kernel"));
  CHECK_THROWS_WITH(cw["stem.batch_norm1"]["bias"],
                    Contains("'bias'") && Contains("scale, shift, mean, variance"));
  CHECK_THROWS_WITH(w["dense1"].tensor("weights"), Contains("'weights'") && Contains("kernel, bias"));
  CHECK_NOTHROW(w["dense1"]["bias"]);
}

TEST_CASE("assign with a wrong shape or count throws a weight_error with both shapes") {
  auto w = ipu::weights<net_f32>::random(1);
  ipu::layer_weights& conv = w["stem.conv1"];
  const std::vector<float> values(3 * 3 * 4 * 8, 0.25f);
  const std::array<std::int64_t, 4> transposed{3, 3, 8, 4};
  CHECK_THROWS_AS(conv.assign("kernel", values, transposed), ipu::weight_error);
  CHECK_THROWS_WITH(conv.assign("kernel", values, transposed),
                    Contains("stem.conv1.kernel") && Contains("[3, 3, 4, 8]") && Contains("[3, 3, 8, 4] given"));
  const std::array<std::int64_t, 3> flat{3, 3, 32};
  CHECK_THROWS_WITH(conv.assign("kernel", values, flat), Contains("[3, 3, 4, 8]") && Contains("[3, 3, 32] given"));
  const std::vector<float> too_few(10, 0.25f);
  CHECK_THROWS_WITH(conv.assign("kernel", too_few), Contains("[3, 3, 4, 8]") && Contains("288") && Contains("10 given"));
  // Nothing was changed by the failed calls; the right shape is accepted.
  CHECK(conv["kernel"][0] != 0.25f);
  const std::array<std::int64_t, 4> hwio{3, 3, 4, 8};
  CHECK_NOTHROW(conv.assign("kernel", values, hwio));
  CHECK(conv["kernel"][287] == 0.25f);
}

TEST_CASE("a NaN or an infinity in a kernel is named by validate and rejected by the engine") {
  auto w = ipu::weights<net_f32>::random(2);
  CHECK_NOTHROW(w.validate());
  w["stem.conv1"]["kernel"][5] = std::numeric_limits<float>::quiet_NaN();
  CHECK_THROWS_AS(w.validate(), ipu::weight_error);
  CHECK_THROWS_WITH(w.validate(), Contains("stem.conv1.kernel[5]") && Contains("not finite"));
  CHECK_THROWS_AS((ipu::engine<net_f32, target>{w}), ipu::weight_error);

  w = ipu::weights<net_f32>::random(2);
  w["dense1"]["kernel"][39] = -std::numeric_limits<float>::infinity();
  CHECK_THROWS_WITH(w.validate(), Contains("dense1.kernel[39]") && Contains("not finite"));
  CHECK_THROWS_AS((ipu::engine<net_f32, target>{w}), ipu::weight_error);
  CHECK_THROWS_WITH((ipu::engine<net_f32, target>{w, {ipu::execution_mode::faithful, 1}}), Contains("dense1.kernel[39]"));

  auto h = ipu::weights<net_f16>::random(2);
  h["stem.batch_norm1"]["shift"][2] = std::numeric_limits<float>::infinity();
  CHECK_THROWS_WITH(h.validate(), Contains("stem.batch_norm1.shift[2]") && Contains("not finite"));
  CHECK_THROWS_AS((ipu::engine<net_f16, target>{h}), ipu::weight_error);
}

TEST_CASE("a batch-norm variance with variance + epsilon not positive is rejected by validate") {
  auto w = ipu::weights<net_f32>::random(3);
  w["stem.batch_norm1"]["variance"][6] = -1.0f;
  CHECK_THROWS_AS(w.validate(), ipu::weight_error);
  CHECK_THROWS_WITH(w.validate(), Contains("stem.batch_norm1.variance[6]") && Contains("must be positive"));
  CHECK_THROWS_AS((ipu::engine<net_f32, target>{w}), ipu::weight_error);
  w["stem.batch_norm1"]["variance"][6] = -2e-5f;
  CHECK_THROWS_WITH(w.validate(), Contains("stem.batch_norm1.variance[6]"));
}

TEST_CASE("weights that fold or round to a non-finite f16 value are rejected by the f16 engine") {
  SECTION("a variance of -1e-5 folds to a scale beyond the f16 range") {
    auto w = ipu::weights<net_f16>::random(3);
    // -1e-5f is a little above -1e-5, so validate lets it through (variance + epsilon is
    // 2.5e-13); the folded scale, ~2e6, is not finite in f16.
    w["stem.batch_norm1"]["variance"][1] = -1e-5f;
    CHECK_THROWS_AS((ipu::engine<net_f16, target>{w}), ipu::weight_error);
  }
  SECTION("a scale of 1e6 over a variance of 1e-5 folds to more than 65504") {
    auto w = ipu::weights<net_f16>::random(3);
    w["stem.batch_norm1"]["scale"][4] = 1e6f;
    w["stem.batch_norm1"]["variance"][4] = 1e-5f;
    CHECK_NOTHROW(w.validate());  // finite before folding
    CHECK_THROWS_AS((ipu::engine<net_f16, target>{w}), ipu::weight_error);
    CHECK_THROWS_WITH((ipu::engine<net_f16, target>{w}),
                      Contains("stem.batch_norm1") && Contains("scale[4]") && Contains("not finite") && Contains("f16"));
    // In f32 the folded scale, 2.2e8, is finite: the same weights are accepted.
    auto f = ipu::weights<net_f32>::random(3);
    f["stem.batch_norm1"]["scale"][4] = 1e6f;
    f["stem.batch_norm1"]["variance"][4] = 1e-5f;
    CHECK_NOTHROW((ipu::engine<net_f32, target>{f}));
  }
  SECTION("a kernel value of 1e5 rounds to infinity in f16") {
    auto w = ipu::weights<net_f16>::random(3);
    w["dense1"]["kernel"][3] = 1e5f;
    CHECK_NOTHROW(w.validate());
    CHECK_THROWS_WITH((ipu::engine<net_f16, target>{w}), Contains("dense1") && Contains("kernel[3]") && Contains("not finite"));
  }
}

TEST_CASE("infer on raw buffers of the wrong size throws invalid_argument with both counts") {
  const auto w = ipu::weights<net_f32>::random(4);
  ipu::engine<net_f32, target> e{w};
  constexpr std::size_t in = 1 * 6 * 6 * 4, out = 1 * 5;
  std::vector<float> x(in, 0.5f), y(out), short_x(in - 1, 0.5f), long_y(out + 3);
  CHECK_THROWS_AS(e.infer(std::span<const float>(short_x), std::span<float>(y)), std::invalid_argument);
  CHECK_THROWS_WITH(e.infer(std::span<const float>(short_x), std::span<float>(y)),
                    Contains("input has 143 elements") && Contains("[1, 6, 6, 4] has 144"));
  CHECK_THROWS_AS(e.infer(std::span<const float>(x), std::span<float>(long_y)), std::invalid_argument);
  CHECK_THROWS_WITH(e.infer(std::span<const float>(x), std::span<float>(long_y)),
                    Contains("output has 8 elements") && Contains("[1, 5] has 5"));
  CHECK_THROWS_WITH(e.infer(std::span<const float>(), std::span<float>(y)), Contains("input has 0 elements"));

  // The right sizes give what the tensor overload gives.
  REQUIRE_NOTHROW(e.infer(std::span<const float>(x), std::span<float>(y)));
  ipu::input_tensor_t<net_f32> t{std::span<const float>(x)};
  const auto expected = e.infer(t);
  CHECK(std::vector<float>(expected.begin(), expected.end()) == y);

  ipu::engine<net_f16, target> h{ipu::weights<net_f16>::random(4)};
  std::vector<ipu::f16> hx(in + 1), hy(out);
  CHECK_THROWS_WITH(h.infer(std::span<const ipu::f16>(hx), std::span<ipu::f16>(hy)),
                    Contains("145 elements") && Contains("144"));
}

TEST_CASE("measured memory outside the target's IPUs and tiles or the graph's steps throws out_of_range") {
  const auto w = ipu::weights<net_f32>::random(4);
  for (const auto mode : {ipu::execution_mode::faithful, ipu::execution_mode::fast}) {
    INFO(ipu::name_of(mode));
    ipu::engine<net_f32, target> e{w, {mode, 1}};
    const int tiles = target::chip.tiles, steps = static_cast<int>(ipu::node_count_v<net_f32>);
    CHECK_NOTHROW(e.measured_usage(0, tiles - 1, steps - 1));
    CHECK_NOTHROW(e.measured_extent(0, tiles - 1));
    CHECK_THROWS_AS(e.measured_usage(1, 0, 0), std::out_of_range);
    CHECK_THROWS_AS(e.measured_usage(-1, 0, 0), std::out_of_range);
    CHECK_THROWS_WITH(e.measured_usage(0, tiles, 0), Contains("tile 4 is out of range") && Contains("0 to 3"));
    CHECK_THROWS_WITH(e.measured_usage(0, 0, steps), Contains("step " + std::to_string(steps)));
    CHECK_THROWS_AS(e.measured_usage(0, 0, -1), std::out_of_range);
    CHECK_THROWS_AS(e.measured_extent(0, -1), std::out_of_range);
    CHECK_THROWS_AS(e.measured_extent(2, 0), std::out_of_range);
  }
}

TEST_CASE("random weights are deterministic per seed and there is one entry per parameterised layer") {
  const auto a = ipu::weights<net_f32>::random(42), b = ipu::weights<net_f32>::random(42);
  const auto c = ipu::weights<net_f32>::random(43);
  CHECK(same_values(a, b));
  CHECK_FALSE(same_values(a, c));
  for (std::size_t i = 0; i < a.size(); ++i)  // every layer is filled, not just the first
    for (std::size_t k = 0; k < a[i].tensors().size(); ++k) {
      INFO(a[i].path() << '.' << a[i].tensors()[k].name);
      CHECK(a[i].tensors()[k].values != c[i].tensors()[k].values);
    }
  CHECK_NOTHROW(a.validate());

  STATIC_REQUIRE(ipu::weights<net_f32>::size() == 3);
  std::size_t parameterised = 0;
  for (const ipu::node& n : ipu::node_table_v<residual_net>)
    parameterised += n.kind == ipu::op_of<ipu::ops::conv> || n.kind == ipu::op_of<ipu::ops::batch_norm> ||
                             n.kind == ipu::op_of<ipu::ops::dense>
                         ? 1
                         : 0;
  CHECK(parameterised == 9);  // 4 convs (one in the shortcut), 4 batch norms, 1 dense
  CHECK(ipu::weights<residual_net>::size() == parameterised);
  const auto r = ipu::weights<residual_net>::random(5);
  CHECK(same_values(r, ipu::weights<residual_net>::random(5)));
  CHECK_FALSE(same_values(r, ipu::weights<residual_net>::random(6)));
  std::size_t layers = 0;
  for (const ipu::layer_weights& l : r) {
    CHECK(ipu::node_table_v<residual_net>[static_cast<std::size_t>(l.node_index())].kind == l.kind());
    ++layers;
  }
  CHECK(layers == parameterised);
}

TEST_CASE("tensor at() outside the extents throws out_of_range and a wrong-size span invalid_argument") {
  using t23 = ipu::tensor<float, 2, 3>;
  t23 t;
  CHECK_NOTHROW(t.at(1, 2));
  t.at(1, 2) = 7.0f;
  CHECK(t(1, 2) == 7.0f);
  CHECK(t[5] == 7.0f);
  CHECK_THROWS_AS(t.at(2, 0), std::out_of_range);
  CHECK_THROWS_AS(t.at(0, 3), std::out_of_range);
  CHECK_THROWS_AS(t.at(-1, 0), std::out_of_range);
  CHECK_THROWS_WITH(t.at(0, 3), Contains("index 3 of axis 1") && Contains("[2, 3]"));

  const std::vector<float> five(5, 1.0f), six{1, 2, 3, 4, 5, 6}, seven(7, 1.0f);
  CHECK_THROWS_AS(t23{std::span<const float>(five)}, std::invalid_argument);
  CHECK_THROWS_WITH(t23{std::span<const float>(seven)}, Contains("7 values given") && Contains("[2, 3] holds 6"));
  CHECK_THROWS_WITH(t.assign(std::span<const float>(five)), Contains("5 values given"));
  CHECK(t(1, 2) == 7.0f);  // unchanged by the failed assign
  const t23 u{std::span<const float>(six)};
  CHECK(u(1, 0) == 4.0f);

  using image = ipu::tensor<ipu::f16, 1, 2, 2, 3>;
  image im;
  CHECK_THROWS_WITH(im.at(0, 0, 2, 0), Contains("axis 2") && Contains("[1, 2, 2, 3]"));
}
