// ipu::pack, the plan's allocator of dynamic buffers (requests in order of their first step):
// buffers live at a common step never share a byte, buffers that never meet share addresses,
// and the result is aligned.

#include <ipu/plan/allocation.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <random>

namespace {

constexpr std::size_t capacity = 64;

/// Whether no two requests live at a common step share a byte under `offset`, and every offset is aligned.
template <std::size_t C>
bool valid(const std::array<ipu::buffer_request, C>& r, int count, const std::array<std::int64_t, C>& offset) {
  for (int a = 0; a < count; ++a) {
    if (offset[static_cast<std::size_t>(a)] % ipu::buffer_alignment != 0) return false;
    for (int b = a + 1; b < count; ++b) {
      const auto &x = r[static_cast<std::size_t>(a)], &y = r[static_cast<std::size_t>(b)];
      const std::int64_t xa = offset[static_cast<std::size_t>(a)], ya = offset[static_cast<std::size_t>(b)];
      if (x.overlaps(y) && x.bytes > 0 && y.bytes > 0 && xa < ya + y.bytes && ya < xa + x.bytes) return false;
    }
  }
  return true;
}

/// The greedy allocation `pack` promises, found the plain way: the requests by size
/// (descending), then first step, then index; each at the lowest of 0 and the ends of the
/// placed buffers it meets where it meets none of them.
template <std::size_t C>
std::array<std::int64_t, C> first_fit(const std::array<ipu::buffer_request, C>& r, int count) {
  std::array<int, C> order{};
  int sized = 0;
  for (int k = 0; k < count; ++k)
    if (r[static_cast<std::size_t>(k)].bytes > 0) order[static_cast<std::size_t>(sized++)] = k;
  std::sort(order.begin(), order.begin() + sized, [&](int a, int b) {
    const auto &x = r[static_cast<std::size_t>(a)], &y = r[static_cast<std::size_t>(b)];
    return x.bytes != y.bytes ? x.bytes > y.bytes : x.first != y.first ? x.first < y.first : a < b;
  });
  std::array<std::int64_t, C> offset{};
  for (int n = 0; n < sized; ++n) {
    const int i = order[static_cast<std::size_t>(n)];
    const auto& x = r[static_cast<std::size_t>(i)];
    const auto clear = [&](std::int64_t at) {
      for (int m = 0; m < n; ++m) {
        const int q = order[static_cast<std::size_t>(m)];
        const auto& y = r[static_cast<std::size_t>(q)];
        const std::int64_t o = offset[static_cast<std::size_t>(q)];
        if (x.overlaps(y) && at < o + y.bytes && o < at + x.bytes) return false;
      }
      return true;
    };
    std::int64_t best = clear(0) ? 0 : -1;
    for (int m = 0; m < n; ++m) {
      const int q = order[static_cast<std::size_t>(m)];
      const std::int64_t at = offset[static_cast<std::size_t>(q)] + r[static_cast<std::size_t>(q)].bytes;
      if ((best < 0 || at < best) && clear(at)) best = at;
    }
    offset[static_cast<std::size_t>(i)] = best;
  }
  return offset;
}

}  // namespace

TEST_CASE("pack: buffers that never meet share an address, buffers that meet are stacked") {
  std::array<ipu::buffer_request, capacity> r{};
  r[0] = {0, 1, 64};  // steps 0-1
  r[1] = {1, 2, 32};  // meets both others
  r[2] = {2, 3, 64};  // steps 2-3: after r[0], so at the same offset
  const auto offset = ipu::pack(r, 3);
  CHECK(offset[0] == 0);
  CHECK(offset[2] == 0);
  CHECK(offset[1] == 64);
  CHECK(valid(r, 3, offset));
  // The same in a constant expression, as the plan computes it.
  static_assert([] {
    std::array<ipu::buffer_request, capacity> q{};
    q[0] = {0, 0, 8};
    q[1] = {0, 0, 12};
    const auto o = ipu::pack(q, 2);
    return o[1] == 0 && o[0] == 12;  // the larger first
  }());
}

TEST_CASE("pack: random lifetimes and sizes never overlap, and fill a gap when one fits") {
  std::mt19937 rng(17);
  for (int trial = 0; trial < 200; ++trial) {
    std::array<ipu::buffer_request, capacity> r{};
    const int count = 1 + static_cast<int>(rng() % capacity);
    for (int k = 0; k < count; ++k) {
      const int first = static_cast<int>(rng() % 40);
      r[static_cast<std::size_t>(k)] = {first, first + static_cast<int>(rng() % 8),
                                        ipu::aligned(static_cast<std::int64_t>(rng() % 500))};
    }
    std::sort(r.begin(), r.begin() + count, [](const auto& a, const auto& b) { return a.first < b.first; });
    const auto offset = ipu::pack(r, count);
    INFO("trial " << trial);
    REQUIRE(valid(r, count, offset));
  }
  // A small buffer goes into the gap left between two large ones.
  std::array<ipu::buffer_request, capacity> r{};
  r[0] = {0, 9, 100};
  r[1] = {0, 4, 40};
  r[2] = {0, 9, 60};
  r[3] = {5, 9, 40};  // meets r[0] and r[2] but not r[1]: it takes r[1]'s place
  const auto offset = ipu::pack(r, 4);
  CHECK(offset[3] == offset[1]);
  CHECK(valid(r, 4, offset));
}

TEST_CASE("pack: the lowest offset clear of the buffers placed before, short and long lifetimes alike") {
  // Lifetimes under 32 steps in half the trials; in the others from one step to the whole
  // run, so that buffers found through the requests by first step and those kept in lists by
  // offset meet. Sizes from a few values, so that equal sizes fall back to the first step and
  // the index.
  std::mt19937 rng(29);
  for (int trial = 0; trial < 300; ++trial) {
    std::array<ipu::buffer_request, capacity> r{};
    const int count = 1 + static_cast<int>(rng() % capacity);
    const int steps = 1 + static_cast<int>(rng() % 200);
    const bool short_lived = trial % 2 == 0;  // as in inference: no life of 32 steps or more
    for (int k = 0; k < count; ++k) {
      const int first = static_cast<int>(rng() % static_cast<unsigned>(steps));
      const int life = !short_lived && rng() % 4 == 0 ? static_cast<int>(rng() % static_cast<unsigned>(steps))
                                                      : static_cast<int>(rng() % (short_lived ? 32 : 40));
      const std::int64_t bytes = rng() % 8 == 0 ? 0 : ipu::aligned(static_cast<std::int64_t>(1 + rng() % 6) * 48);
      r[static_cast<std::size_t>(k)] = {first, first + life, bytes};
    }
    const auto offset = ipu::pack(r, count);
    INFO("trial " << trial << ", " << count << " buffers over " << steps << " steps");
    REQUIRE(offset == first_fit(r, count));
    REQUIRE(valid(r, count, offset));
  }
}

TEST_CASE("pack: hundreds of buffers, as a training step has, placed as the plain first fit") {
  // Enough buffers for every level of the skip lists that keep the placed buffers in order of
  // offset (one buffer in 4^k is on level k), many of them long-lived, as a training step's
  // stashed activations are, so that both lists grow long.
  constexpr std::size_t many = 320;
  std::mt19937 rng(43);
  for (int trial = 0; trial < 4; ++trial) {
    std::array<ipu::buffer_request, many> r{};
    const int steps = 600;
    for (std::size_t k = 0; k < many; ++k) {
      const int first = static_cast<int>(rng() % static_cast<unsigned>(steps));
      const int life = rng() % 3 == 0 ? static_cast<int>(rng() % static_cast<unsigned>(steps)) : static_cast<int>(rng() % 32);
      r[k] = {first, first + life, ipu::aligned(static_cast<std::int64_t>(1 + rng() % 40) * 52)};
    }
    const auto offset = ipu::pack(r, static_cast<int>(many));
    INFO("trial " << trial);
    REQUIRE(offset == first_fit(r, static_cast<int>(many)));
    REQUIRE(valid(r, static_cast<int>(many), offset));
  }
}

TEST_CASE("aligned rounds up to the buffer alignment") {
  STATIC_REQUIRE(ipu::aligned(0) == 0);
  STATIC_REQUIRE(ipu::aligned(1) == ipu::buffer_alignment);
  STATIC_REQUIRE(ipu::aligned(ipu::buffer_alignment) == ipu::buffer_alignment);
  STATIC_REQUIRE(ipu::aligned(ipu::buffer_alignment + 2) == 2 * ipu::buffer_alignment);
}
