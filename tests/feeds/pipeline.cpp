// Host pipelines (ipu/data/pipeline.hpp): the seeded epoch order against std::mt19937_64, the
// normalisation and cast, a range-v3 pipeline of 8-bit images shuffled, normalised and cut
// into batches for an f16 infeed against the same batches built by hand, and the prefetcher's
// thread ending in each of the ways a feed ends.
#include <ipu/data/pipeline.hpp>
#include <ipu/ipu.hpp>

#include <catch2/catch.hpp>

#include <range/v3/view/chunk.hpp>
#include <range/v3/view/iota.hpp>
#include <range/v3/view/join.hpp>
#include <range/v3/view/take.hpp>
#include <range/v3/view/transform.hpp>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <span>
#include <stdexcept>
#include <vector>

namespace {
namespace nn = ipu::nn;
namespace rv = ranges::views;

constexpr std::int64_t pixels = 4 * 4;
using net_t = decltype(ipu::input<ipu::f16, 3, 4, 4, 1> | nn::global_avg_pool);
constexpr std::int64_t batch = ipu::batch_size_v<net_t>;
}  // namespace

TEST_CASE("shuffled: a permutation drawn as std::mt19937_64 draws it, new each epoch, the same for a seed") {
  const std::vector<std::int64_t> order = ipu::data::shuffled(1000, 42, 3);
  // Fisher-Yates over the standard library's engine, seeded as the file comment says.
  std::vector<std::int64_t> expected(1000);
  std::iota(expected.begin(), expected.end(), 0);
  std::mt19937_64 engine(ipu::detail::mix64(42 ^ ipu::detail::mix64(3 + 1)));
  for (std::int64_t i = 999; i > 0; --i)
    std::swap(expected[static_cast<std::size_t>(i)],
              expected[static_cast<std::size_t>(engine() % static_cast<std::uint64_t>(i + 1))]);
  CHECK(order == expected);
  CHECK(ipu::data::shuffled(1000, 42, 3) == order);
  CHECK(ipu::data::shuffled(1000, 42, 4) != order);
  CHECK(ipu::data::shuffled(1000, 43, 3) != order);
  CHECK(ipu::data::shuffled(0, 1).empty());
  CHECK_THROWS_AS(ipu::data::shuffled(-1, 1), std::invalid_argument);
}

TEST_CASE("normalise and cast: (v * scale - mean) / stddev in float, and a conversion rounded to nearest even") {
  // Powers of two: each operation exact, whether or not the compiler fuses them.
  constexpr ipu::data::normalise n{.scale = 1 / 256.0f, .mean = 0.5f, .stddev = 0.25f};
  CHECK(n(std::uint8_t{192}) == 1.0f);
  CHECK(n(0) == -2.0f);
  CHECK(n(64.0) == -1.0f);
  CHECK(static_cast<float>(ipu::data::cast<ipu::f16>(2049.0f)) == 2048.0f);  // halfway: to the even significand
  CHECK(static_cast<float>(ipu::data::cast<ipu::f16>(2051.0f)) == 2052.0f);
  CHECK(ipu::data::cast<float>(ipu::f16(0.5f)) == 0.5f);
}

TEST_CASE("prefetcher: 8-bit images shuffled, normalised and batched by range-v3 reach an f16 infeed as built by hand") {
  constexpr std::int64_t images = 20;  // 6 whole batches of 3; 2 images left out
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(images * pixels));
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::uint8_t>(i * 37 % 256);
  const std::span<const std::uint8_t> all(bytes);
  // A scale of 1/256 keeps v * scale exact, so that the reference below rounds as the view does.
  constexpr ipu::data::normalise normalise{.scale = 1 / 256.0f, .mean = 0.3f, .stddev = 0.35f};

  const std::vector<std::int64_t> order = ipu::data::shuffled(images, 7, 0);
  auto batches = order | rv::take(order.size() / batch * batch)
               | rv::transform([&](std::int64_t i) { return all.subspan(static_cast<std::size_t>(i * pixels), pixels); })
               | rv::join | rv::transform(normalise) | rv::chunk(batch * pixels);
  ipu::infeed<net_t, 2> in;
  ipu::prefetcher feeding(in, batches);
  std::vector<ipu::input_tensor_t<net_t>> seen;
  while (in.consume([&](const ipu::input_tensor_t<net_t>& x) { seen.push_back(x); })) {}
  const ipu::feed_result result = feeding.wait();
  CHECK(result.end == ipu::feed_end::closed);
  CHECK(result.pushed == 6);
  REQUIRE(seen.size() == 6);
  for (std::size_t b = 0; b < seen.size(); ++b)
    for (std::int64_t s = 0; s < batch; ++s)
      for (std::int64_t p = 0; p < pixels; ++p) {
        const std::uint8_t v = bytes[static_cast<std::size_t>(order[b * batch + static_cast<std::size_t>(s)] * pixels + p)];
        const float expected = static_cast<float>(ipu::f16((static_cast<float>(v) / 256.0f - 0.3f) / 0.35f));
        REQUIRE(static_cast<float>(seen[b][static_cast<std::size_t>(s * pixels + p)]) == expected);
      }
}

TEST_CASE("prefetcher: a short last batch, a cancelled infeed, and a prefetcher destroyed early") {
  SECTION("the remainder of a batch is an error the consumer receives after the whole batches") {
    ipu::infeed<net_t, 2> in;
    ipu::prefetcher feeding(in, rv::iota(0, 4 * static_cast<int>(batch * pixels) + 5) | rv::chunk(batch * pixels));
    int whole = 0;
    CHECK_THROWS_WITH([&] { while (in.consume([](const auto&) {})) ++whole; }(),
                      "ipu::tensor: 5 values given, the tensor [3, 4, 4, 1] holds 48");
    CHECK(whole == 4);
    CHECK(feeding.wait().end == ipu::feed_end::failed);
  }
  SECTION("a consumer that cancels ends the thread") {
    ipu::infeed<net_t, 2> in;
    ipu::prefetcher feeding(in, rv::iota(0) | rv::chunk(batch * pixels));  // endless
    REQUIRE(in.consume([](const auto&) {}));
    in.cancel();
    const ipu::feed_result r = feeding.wait();
    CHECK(r.end == ipu::feed_end::cancelled);
    CHECK(r.pushed >= 1);
  }
  SECTION("destroyed before the end: the infeed says the stream is incomplete") {
    ipu::infeed<net_t, 2> in;
    {
      ipu::prefetcher feeding(in, rv::iota(0) | rv::chunk(batch * pixels));
      REQUIRE(in.consume([](const auto&) {}));
    }
    CHECK_THROWS_AS([&] { while (in.consume([](const auto&) {})) {} }(), ipu::channel_error);
  }
  SECTION("feeding a closed infeed is rethrown by wait") {
    ipu::infeed<net_t, 2> in;
    in.close();
    ipu::prefetcher feeding(in, std::vector<ipu::input_tensor_t<net_t>>(1));
    CHECK_THROWS_AS(feeding.wait(), ipu::channel_error);
  }
}
