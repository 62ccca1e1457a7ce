// An input streamed as 8-bit values and normalised on the IPU (`ipu::input_stream`): the
// types the host hands over, the plan's receive buffer and conversion step, and nets in both
// modes against the independent reference, which normalises in double.

#include <catch2/catch.hpp>

#include "support/executor_support.hpp"

#include <ipu/ipu.hpp>

#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <type_traits>
#include <vector>

namespace nn = ipu::nn;

namespace {

template <class T>
constexpr auto rgb_net = ipu::input<T, 2, 9, 9, 3, ipu::imagenet_eight_bit>
    | nn::conv<8, 3, 2> | nn::batch_norm | nn::relu | nn::global_avg_pool | nn::dense<5>;
using rgb_f32 = decltype(rgb_net<ipu::f32>);
using rgb_f16 = decltype(rgb_net<ipu::f16>);

// One grey channel, Fashion-MNIST's way: 0 to 255 mapped to [-1, 1].
constexpr auto grey_net = ipu::input<ipu::f32, 3, 7, 7, 1, ipu::eight_bit_io({0.5}, {0.5})> | nn::conv<4, 3> | nn::relu;
using grey_t = decltype(grey_net);

// The same net streamed in its element type.
using plain_f16 = decltype(ipu::input<ipu::f16, 2, 9, 9, 3>
    | nn::conv<8, 3, 2> | nn::batch_norm | nn::relu | nn::global_avg_pool | nn::dense<5>);

static_assert(std::is_same_v<ipu::stream_type_t<rgb_f16>, std::uint8_t>);
static_assert(std::is_same_v<ipu::element_type_t<rgb_f16>, ipu::f16>);
static_assert(std::is_same_v<ipu::input_tensor_t<rgb_f16>::value_type, std::uint8_t>);
static_assert(std::is_same_v<ipu::stream_type_t<plain_f16>, ipu::f16>);
static_assert(ipu::node_table_v<rgb_f16>[0].type == ipu::dtype::f16);
static_assert(ipu::node_table_v<rgb_f16>[0].layer.stream == ipu::imagenet_eight_bit);
static_assert(!ipu::node_table_v<plain_f16>[0].layer.stream.eight_bit);
static_assert(ipu::input_stream_v<grey_t>.mean[0].value() == 0.5 && ipu::input_stream_v<grey_t>.stddev[0].value() == 0.5);

}  // namespace

TEST_CASE("nets from an 8-bit stream, in both modes, against the reference") {
  // The conversion cancels (x * scale - shift, both terms up to 2.6 where the result is near
  // 0), so an input carries an f32 error of about 1e-7 in absolute terms, not relative to its
  // value; through a conv the outputs near a thousandth of the largest, where the check's
  // floor is, see 4e-5 of it. The test below checks the conversion itself to f32's rounding.
  ipu_test::check_engine<rgb_f32, ipu_test::small_target<16>>(1e-4);
  ipu_test::check_engine<rgb_f16, ipu_test::small_target<16>>(1e-2);
  ipu_test::check_engine<grey_t, ipu_test::small_target<8>>(1e-4);
}

TEST_CASE("the input step converts every byte as the stream's mean and deviation define") {
  // The graph's output is its input: each value to within f32's rounding of the two operations.
  using G = decltype(ipu::input<ipu::f32, 1, 2, 128, 3, ipu::imagenet_eight_bit> | nn::relu);
  ipu::input_tensor_t<G> x;
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<std::uint8_t>(i / 3 % 256);
  const std::vector<double> expected = ipu_test::input_values<G>(x);
  for (const auto mode : {ipu::execution_mode::fast, ipu::execution_mode::faithful}) {
    ipu::engine<G, ipu_test::small_target<4>> e{ipu::weights<G>::random(1), {mode, 2}};
    const auto y = e.infer(x);
    double worst = 0;
    for (std::size_t i = 0; i < y.size(); ++i) {
      const double want = std::max(0.0, expected[i]);
      worst = std::max(worst, std::abs(static_cast<double>(y[i]) - want));
    }
    INFO(ipu::name_of(mode));
    CHECK(worst < 4e-7);  // |x * scale - shift| < 2.7: a few f32 ulps
  }
}

TEST_CASE("an 8-bit stream is received into a byte per value, then converted in a compute set") {
  constexpr auto& stream = ipu::plan_v<rgb_f16, ipu_test::small_target<16>>;
  constexpr auto& plain = ipu::plan_v<plain_f16, ipu_test::small_target<16>>;
  CHECK(stream.nodes[0].step.kind == ipu::step_kind::stream);
  CHECK(plain.nodes[0].step.kind == ipu::step_kind::none);
  // Each tile receives a byte per element of the input it holds, beside the f16 tensor.
  for (int t = 0; t < 16; ++t) {
    const std::int64_t held = stream.nodes[0].output.elements_on(t);
    INFO("tile " << t);
    CHECK(stream.usage(0, t, 0).exchange == held);
    CHECK(stream.usage(0, t, 0).activations == 2 * held);
    CHECK(plain.usage(0, t, 0).exchange == 0);
  }
  // Converting is work: the input's codelets, a vertex and exchange code on the tiles that
  // hold it, and its cycles.
  CHECK(stream.codelets[0] == plain.codelets[0] + 1);
  CHECK(stream.step_code_on(0, 0) > 0);
  CHECK(plain.step_code_on(0, 0) == 0);
  CHECK(stream.nodes[0].cycles.compute > 0);
  CHECK(plain.nodes[0].cycles.compute == 0);
}

TEST_CASE("an engine on an 8-bit stream takes bytes, and says when their count is wrong") {
  ipu::engine<grey_t, ipu_test::small_target<8>> e{ipu::weights<grey_t>::random(3)};
  std::vector<std::uint8_t> x(3 * 7 * 7 * 1, 200);
  std::vector<float> y(ipu::output_tensor_t<grey_t>::size());
  e.infer(std::span<const std::uint8_t>(x), std::span<float>(y));
  x.pop_back();
  CHECK_THROWS_WITH(e.infer(std::span<const std::uint8_t>(x), std::span<float>(y)),
                    Catch::Contains("the input has 146 elements") && Catch::Contains("147"));
}

TEST_CASE("the summary says the input comes from an 8-bit stream") {
  std::ostringstream os;
  os << ipu::summary<rgb_f16>();
  CHECK_THAT(os.str(), Catch::Contains("from an 8-bit stream"));
  std::ostringstream plain;
  plain << ipu::summary<plain_f16>();
  CHECK_THAT(plain.str(), !Catch::Contains("8-bit"));
}

TEST_CASE("an infeed of an 8-bit stream carries bytes, and a run gives what infer gives") {
  using engine_t = ipu::engine<grey_t, ipu_test::small_target<8>>;
  static_assert(std::is_same_v<ipu::infeed<grey_t, 2>::value_type::value_type, std::uint8_t>);
  engine_t e{ipu::weights<grey_t>::random(3)};
  ipu::infeed<grey_t, 2> in;
  ipu::outfeed<grey_t, ipu::outfeed_mode::all> out;
  const auto a = ipu_test::random_input<grey_t>(1), b = ipu_test::random_input<grey_t>(2);
  CHECK(in.push(a));
  CHECK(in.push(b));
  in.close();
  const ipu::run_stats stats = e.run(in, out, 5);
  CHECK(stats.iterations == 2);
  CHECK(stats.end_of_stream);
  const auto results = out.drain();
  REQUIRE(results.size() == 2);
  CHECK(ipu_test::same_bits(results[0], e.infer(a)));
  CHECK(ipu_test::same_bits(results[1], e.infer(b)));
}
