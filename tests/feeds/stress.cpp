// Producer and consumer on separate threads, many elements: every element arrives once, in
// order, with its contents intact. Run under ThreadSanitizer by scripts/run-tests.
#include <ipu/ipu.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

namespace {
namespace nn = ipu::nn;

constexpr std::uint64_t small_elements = 2'000'000;

// A value no two indices share, so a lost, duplicated or reordered element is seen.
constexpr std::uint64_t mix(std::uint64_t i) { return i * 0x9E3779B97F4A7C15ull ^ (i >> 7); }

template <std::size_t Capacity>
void stream_small(bool blocking) {
  ipu::channel<std::uint64_t, Capacity> c;
  std::jthread producer([&] {
    for (std::uint64_t i = 0; i < small_elements; ++i) {
      if (blocking) {
        c.push(mix(i));
      } else {
        while (!c.try_push(mix(i))) std::this_thread::yield();
      }
    }
    c.close();
  });
  std::uint64_t received = 0, mismatches = 0;
  const auto check = [&](const std::uint64_t& v) { mismatches += v != mix(received++); };
  if (blocking) {
    while (c.consume(check)) {}
  } else {
    for (;;) {
      if (c.try_consume(check)) continue;
      if (c.closed() && c.empty()) break;  // closed() read before empty(): nothing can follow
      std::this_thread::yield();
    }
  }
  CHECK(received == small_elements);
  CHECK(mismatches == 0);
  CHECK(c.pushed() == small_elements);
}

// The seed's batch: 4 x 224 x 224 x 4 in f16, 1,605,632 bytes.
using seed_t = decltype(ipu::input<ipu::f16, 4, 224, 224, 4> | nn::relu);
using seed_batch = ipu::input_tensor_t<seed_t>;

// Element i: a copy of one of three patterns, stamped with i at both ends.
struct batch_patterns {
  std::vector<seed_batch> patterns;
  batch_patterns() : patterns(3) {
    for (std::size_t p = 0; p < patterns.size(); ++p)
      for (std::size_t k = 0; k < seed_batch::size(); ++k)
        patterns[p][k] = ipu::f16(static_cast<float>((k * 7 + p * 13) % 1000) / 8.0f);
  }
  void write(seed_batch& slot, std::uint64_t i) const {
    std::memcpy(slot.data(), patterns[i % 3].data(), seed_batch::bytes);
    slot[0] = stamp(i);
    slot[seed_batch::size() - 1] = stamp(i);
  }
  bool matches(const seed_batch& x, std::uint64_t i) const {
    const seed_batch& p = patterns[i % 3];
    return x[0] == stamp(i) && x[seed_batch::size() - 1] == stamp(i) &&
           std::memcmp(x.data() + 1, p.data() + 1, seed_batch::bytes - 2 * sizeof(ipu::f16)) == 0;
  }
  static ipu::f16 stamp(std::uint64_t i) { return ipu::f16(static_cast<float>(i % 2048)); }  // exact in f16
};
}  // namespace

TEST_CASE("stress: two million small elements, blocking, depth 1, 7 and 255") {
  stream_small<1>(true);
  stream_small<7>(true);
  stream_small<255>(true);
}

TEST_CASE("stress: two million small elements, try_ calls only, depth 1 and 64") {
  stream_small<1>(false);
  stream_small<64>(false);
}

TEST_CASE("stress: two thousand of the seed's batches through an infeed of depth 8") {
  static const batch_patterns patterns;
  constexpr std::uint64_t batches = 2000;
  ipu::infeed<seed_t, 8> in;
  STATIC_REQUIRE(decltype(in)::capacity == 8);
  std::jthread producer([&] {
    for (std::uint64_t i = 0; i < batches; ++i) in.emplace([&](seed_batch& slot) { patterns.write(slot, i); });
    in.close();
  });
  std::uint64_t received = 0, bad = 0;
  while (in.consume([&](const seed_batch& x) { bad += !patterns.matches(x, received++); })) {}
  CHECK(received == batches);
  CHECK(bad == 0);
}

TEST_CASE("stress: a million results through an outfeed that keeps all, read while written") {
  using tiny_t = decltype(ipu::input<ipu::f32, 1, 1, 1, 2> | nn::global_avg_pool);  // results [1, 2]
  using result = ipu::output_tensor_t<tiny_t>;
  constexpr std::uint64_t results = 1'000'000;
  ipu::outfeed<tiny_t, ipu::outfeed_mode::all> out;
  std::jthread producer([&] {
    for (std::uint64_t i = 0; i < results; ++i)
      out.emplace([&](result& y) {
        y(0, 0) = static_cast<float>(i % 4096);
        y(0, 1) = static_cast<float>(i / 4096);
      });
    out.close();
  });
  std::uint64_t received = 0, bad = 0;
  result y;
  for (int round = 0;; ++round) {
    if (round % 2 == 0) {  // alternate the blocking pop and drain()
      if (!out.pop(y)) break;
      bad += y(0, 0) != static_cast<float>(received % 4096) || y(0, 1) != static_cast<float>(received / 4096);
      ++received;
    } else {
      for (const result& r : out.drain()) {
        bad += r(0, 0) != static_cast<float>(received % 4096) || r(0, 1) != static_cast<float>(received / 4096);
        ++received;
      }
    }
  }
  CHECK(received == results);
  CHECK(bad == 0);
  CHECK(out.pushed() == results);
}

TEST_CASE("stress: an outfeed that keeps the last result never goes back in time") {
  using tiny_t = decltype(ipu::input<ipu::f32, 1, 1, 1, 2> | nn::global_avg_pool);
  using result = ipu::output_tensor_t<tiny_t>;
  constexpr std::uint64_t results = 1'000'000;
  ipu::outfeed<tiny_t, ipu::outfeed_mode::last> out;
  std::jthread producer([&] {
    for (std::uint64_t i = 1; i <= results; ++i)
      out.emplace([&](result& y) {
        y(0, 0) = static_cast<float>(i % 4096);  // both halves from one i: a torn read is seen
        y(0, 1) = static_cast<float>(i / 4096);
      });
    out.close();
  });
  std::uint64_t last = 0, reads = 0, torn_or_backwards = 0;
  result y;
  while (out.pop(y)) {
    const auto i = static_cast<std::uint64_t>(y(0, 1)) * 4096 + static_cast<std::uint64_t>(y(0, 0));
    torn_or_backwards += i <= last;  // each pop returns a result not seen before
    last = i;
    ++reads;
  }
  CHECK(last == results);
  CHECK(torn_or_backwards == 0);
  CHECK(reads >= 1);
  CHECK(out.drain().empty());
}
