// ipu::half against the processor's own conversions (F16C's vcvtps2ph and vcvtph2ps) as the
// independent reference: every binary16 value widened, and every f32 in the ranges where
// rounding decides, narrowed. Without F16C, against known encodings only.

#include <catch2/catch.hpp>

#include <ipu/core/half.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#if defined(__F16C__)
#include <immintrin.h>
#endif

namespace {

using ipu::half;
using ipu::detail::float_from_half_bits;
using ipu::detail::half_bits_from_float;

// Encodings from IEEE-754's definition of binary16, computed at compile time.
static_assert(half(1.0f).bits() == 0x3c00);
static_assert(half(-2.0f).bits() == 0xc000);
static_assert(half(65504.0f).bits() == 0x7bff);                 // the largest finite value
static_assert(half(65519.99f).bits() == 0x7bff);                // below the half-way point to 2^16
static_assert(half(65520.0f).bits() == 0x7c00);                 // the tie rounds to even: infinity
static_assert(half(0x1p-14f).bits() == 0x0400);                 // the smallest normal
static_assert(half(0x1p-24f).bits() == 0x0001);                 // the smallest subnormal
static_assert(half(0x1p-25f).bits() == 0x0000);                 // a tie between 0 and 2^-24: even
static_assert(half(0x1.8p-25f).bits() == 0x0001);               // above the tie
static_assert(half(1.0f + 0x1p-11f).bits() == 0x3c00);          // tie between 1 and 1 + 2^-10: even
static_assert(half(1.0f + 3 * 0x1p-11f).bits() == 0x3c02);      // tie between odd and even: up
static_assert(half(std::numeric_limits<float>::infinity()).bits() == 0x7c00);
static_assert(float(half::from_bits(0x0001)) == 0x1p-24f);
static_assert(float(half::from_bits(0x3555)) == 0x1.554p-2f);
static_assert(float(-half(3.0f)) == -3.0f);
static_assert(float(half(0.1f) + half(0.2f)) == float(half(float(half(0.1f)) + float(half(0.2f)))));
static_assert(float(std::numeric_limits<half>::max()) == 65504.0f);
static_assert(float(std::numeric_limits<half>::epsilon()) == 0x1p-10f);
static_assert(sizeof(half) == 2);

bool same_or_both_nan(float a, float b) {
  return std::isnan(a) ? std::isnan(b) : std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b);
}

}  // namespace

TEST_CASE("a NaN stays a NaN, and the sign of zero is kept") {
  CHECK(std::isnan(float(half(std::numeric_limits<float>::quiet_NaN()))));
  CHECK(std::isnan(float(std::numeric_limits<half>::quiet_NaN())));
  CHECK(half(-0.0f).bits() == 0x8000);
  CHECK(std::signbit(float(half::from_bits(0x8000))));
}

#if defined(__F16C__)
TEST_CASE("every binary16 value widens as vcvtph2ps widens it") {
  for (std::uint32_t h = 0; h <= 0xffff; ++h) {
    const float expected = _cvtsh_ss(static_cast<unsigned short>(h));
    const float got = float_from_half_bits(static_cast<std::uint16_t>(h));
    if (!same_or_both_nan(got, expected)) FAIL("binary16 0x" << std::hex << h << ": " << got << ", expected " << expected);
  }
}

TEST_CASE("f32 values narrow as vcvtps2ph narrows them, rounding to nearest even") {
  std::int64_t checked = 0;
  const auto check = [&](std::uint32_t bits) {
    const float f = std::bit_cast<float>(bits);
    const auto expected = static_cast<std::uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
    const std::uint16_t got = half_bits_from_float(f);
    ++checked;
    if (std::isnan(f) ? (got & 0x7fffu) <= 0x7c00u : got != expected)
      FAIL("f32 0x" << std::hex << bits << " (" << f << "): 0x" << got << ", expected 0x" << expected);
  };
  // Every f32 from 2^-26 up to 2^-14, the subnormal binary16 range, both signs.
  for (std::uint32_t bits = 0x32800000u; bits < 0x38800000u; ++bits) {
    check(bits);
    check(bits | 0x80000000u);
  }
  // Every other exponent with the 13 dropped bits at the edges of rounding: zero, one ulp, just
  // below, at and above the half-way point, and all ones.
  for (std::uint32_t high = 0; high < (1u << 19); ++high)
    for (std::uint32_t low : {0x0000u, 0x0001u, 0x0fffu, 0x1000u, 0x1001u, 0x1fffu}) check(high << 13 | low);
  // And random bit patterns.
  std::mt19937 rng(2026);
  for (int k = 0; k < 1'000'000; ++k) check(rng());
  CHECK(checked > 200'000'000);
}
#endif

TEST_CASE("arithmetic on half is f32 arithmetic rounded once") {
  const half a(1.5f), b(0.1f);
  CHECK((a + b).bits() == half(float(a) + float(b)).bits());
  CHECK((a * b).bits() == half(float(a) * float(b)).bits());
  CHECK((a / b).bits() == half(float(a) / float(b)).bits());
  half c = a;
  c -= b;
  CHECK(c.bits() == half(float(a) - float(b)).bits());
}
