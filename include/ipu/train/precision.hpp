#pragma once
/// \file
/// Rounding as an IPU training step rounds: f32 values to f16, to the nearest (ties to even)
/// or stochastically, up or down with probabilities that make the result's expectation the
/// value (the IPU's stochastic rounding, `floating_point_behaviour.esr` in Graphcore's
/// TensorFlow). The random bits are a function of a seed and a position (step, tensor,
/// element), not of the order of the work, so a rounding gives the same bits on any number of
/// threads and again for the same seed.

#include <ipu/core/half.hpp>

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>

namespace ipu {

namespace detail {
/// The finaliser of SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number
/// generators", OOPSLA 2014; the constants of its published code): a bijection of 64-bit
/// words whose outputs for consecutive inputs pass BigCrush, used here as a counter-based
/// generator.
constexpr std::uint64_t mix64(std::uint64_t z) noexcept {
  z += 0x9e3779b97f4a7c15u;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

/// The f16 next to finite f16 `h` towards `up` (+infinity) or down (-infinity), as an f32.
constexpr float next_half(float h, bool up) noexcept {
  std::uint16_t bits = half(h).bits();
  const bool negative = (bits & 0x8000u) != 0;
  if ((bits & 0x7fffu) == 0) return up ? float_from_half_bits(0x0001u) : float_from_half_bits(0x8001u);  // +-0
  bits = static_cast<std::uint16_t>(up != negative ? bits + 1 : bits - 1);  // away from zero, or towards it
  return float_from_half_bits(bits);
}
}  // namespace detail

/// `x` rounded to an f16 value stochastically: of the two f16 values around it, `lo < x < hi`,
/// the result is `hi` with probability `(x - lo) / (hi - lo)`, decided by `random` (64 uniform
/// bits, of which the top 53 are used), so that its expectation is `x`. An f16 value, an
/// infinity or a NaN is returned as round-to-nearest returns it, and so is a value beyond the
/// largest f16 (it rounds to infinity).
inline float stochastic_round_to_half(float x, std::uint64_t random) noexcept {
  const float nearest = half(x);
  if (nearest == x || !std::isfinite(nearest) || std::isnan(x)) return nearest;
  const float other = detail::next_half(nearest, nearest < x);
  if (!std::isfinite(other)) return nearest;  // x between the largest f16 and the rounding boundary
  const float lo = nearest < x ? nearest : other, hi = nearest < x ? other : nearest;
  const double u = static_cast<double>(random >> 11) * 0x1p-53;  // uniform in [0, 1)
  const double up = (static_cast<double>(x) - lo) / (static_cast<double>(hi) - lo);
  return u < up ? hi : lo;
}

/// How f32 values are rounded to f16 where a training step stores them.
enum class rounding : std::uint8_t {
  nearest,     ///< to the nearest, ties to even
  stochastic,  ///< up or down, with the expectation the value (`stochastic_round_to_half`)
};

/// Rounds every value of `values` to f16 as `how` says; for stochastic rounding, element `i`
/// draws its bits from `detail::mix64(stream ^ detail::mix64(i))`, where `stream` names the
/// tensor and step (the caller mixes the seed into it).
inline void round_to_half(std::span<float> values, rounding how, std::uint64_t stream = 0) noexcept {
  if (how == rounding::nearest) {
    for (float& v : values) v = half(v);
    return;
  }
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = stochastic_round_to_half(values[i], detail::mix64(stream ^ detail::mix64(i)));
}

}  // namespace ipu
