// ipu::feed: host pipelines of range-v3 (and standard) ranges into an infeed, with the end of
// the range, exceptions, cancellation and stop requests carried to the consumer.
#include <ipu/ipu.hpp>

#include <catch2/catch.hpp>

#include <range/v3/view/chunk.hpp>
#include <range/v3/view/iota.hpp>
#include <range/v3/view/take.hpp>
#include <range/v3/view/transform.hpp>

#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {
namespace nn = ipu::nn;
using image_t = decltype(ipu::input<ipu::f32, 1, 2, 2, 3> | nn::global_avg_pool);
using image = ipu::input_tensor_t<image_t>;  // [1, 2, 2, 3]

image filled(float v) {
  image x;
  for (float& e : x) e = v;
  return x;
}

// Every element a consumer reads, until the end of the stream.
template <class Channel>
std::vector<float> read_all(Channel& in) {
  std::vector<float> first_values;
  while (in.consume([&](const image& x) { first_values.push_back(x[0]); })) {}
  return first_values;
}

// Feeds `range` into `in` from a producer thread and reads until the consumer's read rethrows
// the producer's error, whose message must be `message`. Returns the first value of every
// element read before it, and what `feed` returned.
template <class Channel, class R>
std::pair<std::vector<float>, ipu::feed_result> read_until_error(Channel& in, R&& range, const std::string& message) {
  ipu::feed_result result;
  std::jthread producer([&] { result = ipu::feed(in, std::forward<R>(range)); });
  std::vector<float> seen;
  CHECK_THROWS_WITH(
      [&] {
        while (in.consume([&](const image& x) { seen.push_back(x[0]); })) {}
      }(),
      message);
  producer.join();
  return {seen, result};
}

template <class R>
concept can_feed = requires(ipu::infeed<image_t, 2>& in, R r) { ipu::feed(in, r); };
}  // namespace

// Ranges of tensors, of anything assignable to one, or of values `tensor::assign` takes.
static_assert(can_feed<std::vector<image>>);
static_assert(can_feed<std::vector<std::vector<float>>>);
static_assert(!can_feed<std::vector<std::string>>);
// A flat range of values cut into samples by range-v3, and floats into an f16 input.
using half_image_t = decltype(ipu::input<ipu::f16, 1, 2, 2, 3> | nn::global_avg_pool);
template <class R>
concept can_feed_half = requires(ipu::infeed<half_image_t, 2>& in, R r) { ipu::feed(in, r); };
static_assert(can_feed<decltype(std::declval<std::vector<float>&>() | ranges::views::chunk(12))>);
static_assert(can_feed_half<std::vector<std::vector<float>>>);
static_assert(can_feed_half<decltype(ranges::views::iota(0, 24) | ranges::views::chunk(12))>);
static_assert(!can_feed<int>);

TEST_CASE("feed: a range-v3 pipeline of tensors, pushed in order, then closed") {
  ipu::infeed<image_t, 2> in;
  ipu::feed_result result;
  std::jthread producer([&](std::stop_token stop) {
    const auto normalise = [](int i) { return filled(static_cast<float>(i) / 4.0f); };
    result = ipu::feed(in, ranges::views::iota(0, 1000) | ranges::views::transform(normalise), stop);
  });
  const std::vector<float> seen = read_all(in);
  producer.join();
  CHECK(result.pushed == 1000);
  CHECK(result.end == ipu::feed_end::closed);
  REQUIRE(seen.size() == 1000);
  for (std::size_t i = 0; i < seen.size(); ++i) REQUIRE(seen[i] == static_cast<float>(i) / 4.0f);
}

TEST_CASE("feed: a container of raw values, assigned into the slots, checked for size") {
  ipu::infeed<image_t, 2> in;
  std::vector<std::vector<float>> values{std::vector<float>(12, 1.0f), std::vector<float>(12, 2.0f),
                                         std::vector<float>(11, 3.0f), std::vector<float>(12, 4.0f)};
  ipu::feed_result result;
  std::jthread producer([&] { result = ipu::feed(in, values); });
  std::vector<float> seen;
  CHECK_THROWS_WITH(
      [&] {
        while (in.consume([&](const image& x) { seen.push_back(x[0]); })) {}
      }(),
      Catch::Contains("11 values given"));
  producer.join();
  CHECK(seen == std::vector<float>{1.0f, 2.0f});  // the elements before the bad one
  CHECK(result.pushed == 2);
  CHECK(result.end == ipu::feed_end::failed);
}

TEST_CASE("feed: floats cut into samples by views::chunk feed an f16 infeed, rounded to nearest even") {
  ipu::infeed<half_image_t, 2> in;
  // 100 samples of 12 values; value v of sample s is s + v / 3, which binary16 cannot hold
  // exactly: each is rounded to nearest, ties to even.
  std::vector<float> flat(1200);
  for (std::size_t i = 0; i < flat.size(); ++i) flat[i] = static_cast<float>(i / 12) + static_cast<float>(i % 12) / 3.0f;
  ipu::feed_result result;
  std::jthread producer([&] { result = ipu::feed(in, flat | ranges::views::chunk(12)); });
  std::vector<float> seen;
  while (in.consume([&](const ipu::input_tensor_t<half_image_t>& x) {
    for (const ipu::f16 v : x) seen.push_back(static_cast<float>(v));
  })) {}
  producer.join();
  CHECK(result.pushed == 100);
  CHECK(result.end == ipu::feed_end::closed);
  REQUIRE(seen.size() == flat.size());
  // The nearest binary16 (11 significant bits) by search over the neighbours in float steps.
  const auto nearest_half = [](float x) {
    const int e = std::ilogb(x);
    const float step = std::ldexp(1.0f, (x < 6.103515625e-05f ? -14 : e) - 10);  // spacing at x's binade
    const float below = std::floor(x / step) * step, above = below + step;
    if (x - below != above - x) return x - below < above - x ? below : above;
    return std::fmod(below / step, 2.0f) == 0.0f ? below : above;
  };
  for (std::size_t i = 0; i < flat.size(); ++i) REQUIRE(seen[i] == (flat[i] == 0.0f ? 0.0f : nearest_half(flat[i])));
}

TEST_CASE("feed: an exception thrown inside a view reaches the consumer") {
  ipu::infeed<image_t, 4> in;
  const auto load = [](int i) {
    if (i == 5) throw std::runtime_error("image 5 cannot be decoded");
    return filled(static_cast<float>(i));
  };
  const ipu::feed_result result = ipu::feed(in, ranges::views::iota(0, 4) | ranges::views::transform(load));
  CHECK(result.end == ipu::feed_end::closed);  // 0..3: no throw, capacity 4 suffices
  CHECK(read_all(in) == std::vector<float>{0, 1, 2, 3});

  in.reset();
  const auto [seen, failed] =
      read_until_error(in, ranges::views::iota(0, 10) | ranges::views::transform(load), "image 5 cannot be decoded");
  CHECK(seen == std::vector<float>{0, 1, 2, 3, 4});
  CHECK(failed.end == ipu::feed_end::failed);
  CHECK(failed.pushed == 5);
}

TEST_CASE("feed: a channel_error thrown by the range aborts the infeed like any other") {
  // A pipeline reading from another channel can throw channel_error itself; that is the
  // range's failure, not misuse of the infeed, so the consumer must receive it.
  ipu::infeed<image_t, 4> in;
  const auto load = [](int i) {
    if (i == 2) throw ipu::channel_error("upstream channel aborted");
    return filled(static_cast<float>(i));
  };
  const auto [seen, result] =
      read_until_error(in, ranges::views::iota(0, 10) | ranges::views::transform(load), "upstream channel aborted");
  CHECK(seen == std::vector<float>{0, 1});
  CHECK(result.end == ipu::feed_end::failed);
  CHECK(result.pushed == 2);
}

TEST_CASE("feed: a consumer that cancels ends the feed") {
  ipu::infeed<image_t, 1> in;
  ipu::feed_result result;
  std::jthread producer([&] { result = ipu::feed(in, ranges::views::iota(0) | ranges::views::transform(filled)); });
  int read = 0;
  while (read < 10 && in.consume([&](const image&) { ++read; })) {}
  in.cancel();
  producer.join();
  CHECK(result.end == ipu::feed_end::cancelled);
  CHECK(result.pushed >= 10);
  CHECK(result.pushed <= 11);  // at most one more than read: the depth
}

TEST_CASE("feed: a stop request ends the feed and tells the consumer the stream is incomplete") {
  ipu::infeed<image_t, 1> in;
  ipu::feed_result result;
  {
    std::jthread producer([&](std::stop_token stop) {
      result = ipu::feed(in, ranges::views::iota(0) | ranges::views::take(100) | ranges::views::transform(filled), stop);
    });
    for (int i = 0; i < 2000 && in.size() < 1; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }  // ~jthread: request_stop while feed waits for room, then join
  CHECK(result.end == ipu::feed_end::stopped);
  CHECK(result.pushed == 1);
  std::vector<float> seen;
  CHECK_THROWS_WITH(
      [&] {
        while (in.consume([&](const image& x) { seen.push_back(x[0]); })) {}
      }(),
      Catch::Contains("stopped after 1 elements"));
  CHECK(seen == std::vector<float>{0});
}

TEST_CASE("feed: feeding a closed infeed is a channel error") {
  ipu::infeed<image_t, 2> in;
  in.close();
  CHECK_THROWS_AS(ipu::feed(in, std::vector<image>(1)), ipu::channel_error);
}
