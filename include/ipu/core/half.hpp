#pragma once
/// \file
/// `ipu::half`: IEEE-754 binary16 as a storage type, as the IPU stores f16: values are kept in
/// 16 bits and converted to f32 for arithmetic. Conversion from f32 rounds to nearest, ties
/// to even; conversion to f32 is exact. Both are `constexpr`, and use the F16C instructions
/// (`vcvtps2ph`, `vcvtph2ps`) at run time when the target has them, which give the same bits
/// for every value but NaN payloads.
///
/// It is the library's own type rather than `Eigen::half` (whose header cost about a second
/// of every compile) or `_Float16` (not ISO C++, and not a C++ type in g++ 12).

#include <bit>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace ipu {

namespace detail {
#if defined(__F16C__)
// F16C's scalar conversions through the compilers' builtins (what `_cvtss_sh` and `_cvtsh_ss`
// expand to), so that this header does not pull in <immintrin.h>, a third of a second of
// every compile.
using f16c_floats = float __attribute__((vector_size(16)));
using f16c_halves = short __attribute__((vector_size(16)));
inline std::uint16_t f16c_narrow(float f) noexcept {
  return static_cast<std::uint16_t>(__builtin_ia32_vcvtps2ph(f16c_floats{f, 0, 0, 0}, 0)[0]);  // 0: to nearest even
}
inline float f16c_widen(std::uint16_t h) noexcept {
  return __builtin_ia32_vcvtph2ps(f16c_halves{static_cast<short>(h), 0, 0, 0, 0, 0, 0, 0})[0];
}
#endif

/// The binary16 nearest to `f` (ties to even); infinities stay infinite, NaN becomes the
/// quiet NaN `0x7e00` with `f`'s sign.
constexpr std::uint16_t half_bits_from_float(float f) noexcept {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t magnitude = x & 0x7fffffffu;
  const auto rounded = [](std::uint32_t kept, std::uint32_t dropped, std::uint32_t half_way) {
    return kept + (dropped > half_way || (dropped == half_way && (kept & 1u) != 0) ? 1u : 0u);
  };
  if (magnitude > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u);   // NaN
  if (magnitude >= 0x47800000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // >= 2^16, or infinite
  if (magnitude >= 0x38800000u) {  // a normal binary16 (or 65504 rounding up to infinity)
    const std::uint32_t rebiased = magnitude - (112u << 23);  // exponent bias 127 -> 15
    return static_cast<std::uint16_t>(sign | rounded(rebiased >> 13, rebiased & 0x1fffu, 0x1000u));
  }
  if (magnitude < 0x33000000u) return sign;  // below 2^-25: rounds to zero
  // A subnormal binary16, in units of 2^-24 (the carry out of the top reaches the smallest normal).
  const std::uint32_t significand = (magnitude & 0x7fffffu) | 0x800000u;
  const std::uint32_t shift = 126u - (magnitude >> 23);  // 14 to 24
  return static_cast<std::uint16_t>(
      sign | rounded(significand >> shift, significand & ((1u << shift) - 1u), 1u << (shift - 1u)));
}

/// The f32 equal to binary16 `h`.
constexpr float float_from_half_bits(std::uint16_t h) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));  // infinity, NaN
  if (exponent == 0) {  // zero or subnormal: mantissa x 2^-24, exact in f32
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return sign != 0 ? -magnitude : magnitude;
  }
  return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}
}  // namespace detail

/// IEEE-754 binary16 storage; arithmetic happens in f32 (see the file comment).
class half {
 public:
  /// Zero.
  constexpr half() noexcept = default;
  /// `f` rounded to the nearest binary16, ties to even.
  constexpr explicit half(float f) noexcept : bits_(from_float(f)) {}
  /// The exact f32 value. Implicit, as for the built-in floating types: `half` takes part in
  /// f32 arithmetic and comparisons directly.
  constexpr operator float() const noexcept {  // NOLINT(google-explicit-constructor)
#if defined(__F16C__)
    if (!std::is_constant_evaluated()) return detail::f16c_widen(bits_);
#endif
    return detail::float_from_half_bits(bits_);
  }

  /// The half whose binary16 encoding is `bits`.
  static constexpr half from_bits(std::uint16_t bits) noexcept {
    half h;
    h.bits_ = bits;
    return h;
  }
  /// The binary16 encoding.
  constexpr std::uint16_t bits() const noexcept { return bits_; }

  /// `-x`, exactly (the sign bit flipped).
  friend constexpr half operator-(half x) noexcept { return from_bits(static_cast<std::uint16_t>(x.bits_ ^ 0x8000u)); }
  /// Sum, difference, product and quotient, computed in f32 and rounded to binary16.
  friend constexpr half operator+(half a, half b) noexcept { return half(float(a) + float(b)); }
  /// \copydoc operator+(half, half)
  friend constexpr half operator-(half a, half b) noexcept { return half(float(a) - float(b)); }
  /// \copydoc operator+(half, half)
  friend constexpr half operator*(half a, half b) noexcept { return half(float(a) * float(b)); }
  /// \copydoc operator+(half, half)
  friend constexpr half operator/(half a, half b) noexcept { return half(float(a) / float(b)); }
  /// `a = a + b`, and so on.
  friend constexpr half& operator+=(half& a, half b) noexcept { return a = a + b; }
  /// \copydoc operator+=(half&, half)
  friend constexpr half& operator-=(half& a, half b) noexcept { return a = a - b; }
  /// \copydoc operator+=(half&, half)
  friend constexpr half& operator*=(half& a, half b) noexcept { return a = a * b; }
  /// \copydoc operator+=(half&, half)
  friend constexpr half& operator/=(half& a, half b) noexcept { return a = a / b; }

 private:
  static constexpr std::uint16_t from_float(float f) noexcept {
#if defined(__F16C__)
    if (!std::is_constant_evaluated()) return detail::f16c_narrow(f);
#endif
    return detail::half_bits_from_float(f);
  }

  std::uint16_t bits_ = 0;
};

}  // namespace ipu

namespace std {
/// The limits of binary16.
template <>
struct numeric_limits<ipu::half> {
  static constexpr bool is_specialized = true;  ///< yes
  static constexpr bool is_signed = true;       ///< yes
  static constexpr bool is_integer = false;     ///< no
  static constexpr bool is_exact = false;       ///< no
  static constexpr bool has_infinity = true;    ///< yes
  static constexpr bool has_quiet_NaN = true;   ///< yes
  static constexpr bool has_signaling_NaN = true;  ///< yes
  static constexpr bool is_iec559 = true;       ///< IEEE-754 binary16
  static constexpr bool is_bounded = true;      ///< yes
  static constexpr bool is_modulo = false;      ///< no
  static constexpr int digits = 11;             ///< significand bits, the implicit one included
  static constexpr int digits10 = 3;            ///< decimal digits kept
  static constexpr int max_digits10 = 5;        ///< decimal digits that tell all values apart
  static constexpr int radix = 2;               ///< binary
  static constexpr int min_exponent = -13;      ///< as for the built-in types
  static constexpr int min_exponent10 = -4;     ///< as for the built-in types
  static constexpr int max_exponent = 16;       ///< as for the built-in types
  static constexpr int max_exponent10 = 4;      ///< as for the built-in types
  static constexpr std::float_round_style round_style = std::round_to_nearest;  ///< conversions round to nearest even
  /// 2^-14, the smallest normal.
  static constexpr ipu::half min() noexcept { return ipu::half::from_bits(0x0400); }
  /// -65504.
  static constexpr ipu::half lowest() noexcept { return ipu::half::from_bits(0xfbff); }
  /// 65504.
  static constexpr ipu::half max() noexcept { return ipu::half::from_bits(0x7bff); }
  /// 2^-10.
  static constexpr ipu::half epsilon() noexcept { return ipu::half::from_bits(0x1400); }
  /// 0.5 ulp.
  static constexpr ipu::half round_error() noexcept { return ipu::half::from_bits(0x3800); }
  /// Positive infinity.
  static constexpr ipu::half infinity() noexcept { return ipu::half::from_bits(0x7c00); }
  /// A quiet NaN.
  static constexpr ipu::half quiet_NaN() noexcept { return ipu::half::from_bits(0x7e00); }
  /// A signalling NaN.
  static constexpr ipu::half signaling_NaN() noexcept { return ipu::half::from_bits(0x7d00); }
  /// 2^-24, the smallest subnormal.
  static constexpr ipu::half denorm_min() noexcept { return ipu::half::from_bits(0x0001); }
};
}  // namespace std
