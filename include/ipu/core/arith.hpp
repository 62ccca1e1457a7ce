#pragma once
/// \file
/// Integer arithmetic shared by the plan, the cycle model and the executors: `div_up` and the
/// overflow-free `mul_div_up`.

#include <cstdint>

namespace ipu::detail {

/// `ceil(a / b)` for `a >= 0`, `b > 0`.
constexpr std::int64_t div_up(std::int64_t a, std::int64_t b) noexcept { return (a + b - 1) / b; }

/// `ceil(a * b / c)` without forming `a * b`, for `a, b >= 0` and `0 < c < 2^54`.
constexpr std::int64_t mul_div_up(std::int64_t a, std::int64_t b, std::int64_t c) noexcept {
  // a b / c = (a / c) b + (a % c) b / c. The second term is long division over the bytes of b:
  // each partial dividend stays below c * 2^9.
  const std::int64_t r = a % c;
  std::int64_t quotient = 0, remainder = 0;
  for (int shift = 56; shift >= 0; shift -= 8) {
    const std::int64_t t = remainder * 256 + r * ((b >> shift) & 0xFF);
    quotient = quotient * 256 + t / c;
    remainder = t % c;
  }
  return a / c * b + quotient + (remainder != 0 ? 1 : 0);
}

}  // namespace ipu::detail
