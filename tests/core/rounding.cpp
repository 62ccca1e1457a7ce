// Rounding f32 to f16 stochastically (ipu/train/precision.hpp), against f16 neighbours found
// in double arithmetic from the format's definition (10 fraction bits, exponents -14 to 15,
// subnormals in steps of 2^-24), not by the library's half conversion.

#include <ipu/train/precision.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace {

/// The spacing of f16 values around finite `x` (of the binade holding |x|; 2^-24 below 2^-14).
double f16_spacing(double x) {
  const double a = std::fabs(x);
  if (a < 0x1p-14) return 0x1p-24;
  return std::ldexp(1.0, static_cast<int>(std::floor(std::log2(a))) - 10);
}

/// The f16 values around `x`: the largest at most `x` and the smallest at least `x`.
std::pair<double, double> f16_around(double x) {
  const double step = f16_spacing(x);
  const double lo = std::floor(x / step) * step;
  return {lo, lo == x ? x : lo + step};
}

/// 64 random bits for draw `i`, from a generator that is not the library's.
std::uint64_t bits(std::uint64_t i) {
  std::uint64_t z = i * 0x2545f4914f6cdd1dULL + 0x9e3779b97f4a7c15ULL;
  z ^= z >> 33, z *= 0xff51afd7ed558ccdULL, z ^= z >> 33, z *= 0xc4ceb9fe1a85ec53ULL;
  return z ^ (z >> 33);
}

}  // namespace

TEST_CASE("stochastic rounding gives one of the two f16 values around a value, with the value as expectation") {
  const std::vector<float> values = {1.0001f, 0.3f, -0.3f, 3.14159f, -2.5e-3f, 1e-6f, -3e-7f, 6.1e-5f, 1000.3f, 60000.5f, -41234.7f};
  constexpr int draws = 20000;
  for (const float x : values) {
    CAPTURE(x);
    const auto [lo, hi] = f16_around(x);
    REQUIRE(lo < x);
    REQUIRE(x < hi);
    double sum = 0;
    int up = 0, neither = 0;
    for (int i = 0; i < draws; ++i) {
      const float r = ipu::stochastic_round_to_half(x, bits(static_cast<std::uint64_t>(i)));
      neither += r == lo || r == hi ? 0 : 1;
      up += r == hi ? 1 : 0;
      sum += r;
    }
    CHECK(neither == 0);
    // The mean of `draws` Bernoulli steps of (hi - lo): within 5 standard deviations of x.
    const double p = (x - lo) / (hi - lo);
    const double sd = (hi - lo) * std::sqrt(p * (1 - p) / draws);
    CHECK(std::fabs(sum / draws - x) <= 5 * sd);
    CHECK(up > 0);
    CHECK(up < draws);
  }
}

TEST_CASE("stochastic rounding leaves f16 values, infinities and NaN as they are, and rounds beyond the largest f16 as nearest does") {
  for (const float x : {0.0f, -0.0f, 1.0f, -2.0f, 0.5f + 0x1p-11f, 0x1p-24f, 65504.0f, -65504.0f})
    for (std::uint64_t i = 0; i < 64; ++i) CHECK(ipu::stochastic_round_to_half(x, bits(i)) == x);
  CHECK(std::signbit(ipu::stochastic_round_to_half(-0.0f, bits(3))));
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(ipu::stochastic_round_to_half(inf, bits(1)) == inf);
  CHECK(ipu::stochastic_round_to_half(-inf, bits(1)) == -inf);
  CHECK(std::isnan(ipu::stochastic_round_to_half(std::numeric_limits<float>::quiet_NaN(), bits(1))));
  // Between the largest f16 (65504) and the boundary where nearest rounds to infinity (65520).
  CHECK(ipu::stochastic_round_to_half(65510.0f, 0) == 65504.0f);
  CHECK(ipu::stochastic_round_to_half(65510.0f, ~std::uint64_t{0}) == 65504.0f);
  CHECK(ipu::stochastic_round_to_half(70000.0f, 0) == inf);
}

TEST_CASE("the random bits decide: all-zero bits round up, all-one bits round down") {
  for (const float x : {1.0001f, -1.0001f, 2.5e-7f, 777.77f}) {
    CAPTURE(x);
    const auto [lo, hi] = f16_around(x);
    CHECK(ipu::stochastic_round_to_half(x, 0) == static_cast<float>(hi));
    CHECK(ipu::stochastic_round_to_half(x, ~std::uint64_t{0}) == static_cast<float>(lo));
  }
}

TEST_CASE("round_to_half: nearest as the f16 conversion rounds, stochastic the same bits for the same stream, others for another") {
  std::vector<float> v(1000);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(std::sin(static_cast<double>(i)) * 3.0);
  std::vector<float> nearest = v, a = v, b = v, c = v;
  ipu::round_to_half(nearest, ipu::rounding::nearest);
  ipu::round_to_half(a, ipu::rounding::stochastic, 42);
  ipu::round_to_half(b, ipu::rounding::stochastic, 42);
  ipu::round_to_half(c, ipu::rounding::stochastic, 43);
  int differ_from_nearest = 0, differ_between_streams = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const auto [lo, hi] = f16_around(v[i]);
    // Nearest: the closer of the two, ties to the even significand (an even multiple of the spacing).
    const double d_lo = v[i] - lo, d_hi = hi - v[i];
    const bool lo_even = std::fmod(lo / f16_spacing(lo == 0 ? hi : lo), 2.0) == 0;
    const double expected = d_lo < d_hi ? lo : d_hi < d_lo ? hi : (lo_even ? lo : hi);
    CHECK(nearest[i] == static_cast<float>(expected));
    CHECK((a[i] == static_cast<float>(lo) || a[i] == static_cast<float>(hi)));
    CHECK(a[i] == b[i]);
    differ_from_nearest += a[i] != nearest[i] ? 1 : 0;
    differ_between_streams += a[i] != c[i] ? 1 : 0;
  }
  CHECK(differ_from_nearest > 100);
  CHECK(differ_between_streams > 100);
}
