#pragma once
/// \file
/// Arithmetic written once for one float or a vector of them, so that the scalar kernels (the
/// faithful executor's) and the vector ones (the fast executor's) compute the same bits:
/// `IPU_FMA` and `kernels::madd`, the lane operations of one float (`scalar_lanes`; a vector's
/// are `kernels::simd::lanes`), and `exp`, `sigmoid` and `silu` over either.
///
/// Free of intrinsics and of the kernels, so that ops such as `ops::silu` define their
/// functions with it in the planning half of the library.

#include <bit>
#include <cmath>
#include <cstdint>

/// \def IPU_FMA
/// 1 when the target has fused multiply-add instructions (the compiler defines `__FMA__`, as
/// with `-mfma` or `-march=x86-64-v3` and above, or `__AVX512F__`), else 0. It decides how
/// `madd` rounds, whatever `IPU_SIMD` is, so builds with different values may differ in the
/// last bits. Set by this header from the target flags; do not define it.
#if defined(__FMA__) || defined(__AVX512F__)
#define IPU_FMA 1
#else
#define IPU_FMA 0
#endif

namespace ipu::kernels {

/// `a * b + c` as every kernel computes it: fused (one rounding) when the target has FMA
/// instructions, a multiply then an add otherwise.
inline float madd(float a, float b, float c) noexcept {
#if IPU_FMA
  return std::fma(a, b, c);
#else
  return a * b + c;
#endif
}

/// The lane operations of one float: what a function written over lanes `L` (`L::value`,
/// `L::splat`, `L::add`, ...) calls. `kernels::simd::lanes` has the same operations on a vector,
/// lane by lane, with the same results.
struct scalar_lanes {
  using value = float;  ///< one lane
  /// `c`.
  static float splat(float c) noexcept { return c; }
  /// `a + b`.
  static float add(float a, float b) noexcept { return a + b; }
  /// `a - b`.
  static float sub(float a, float b) noexcept { return a - b; }
  /// `a * b`.
  static float mul(float a, float b) noexcept { return a * b; }
  /// `a / b`.
  static float div(float a, float b) noexcept { return a / b; }
  /// `a * b + c` as `kernels::madd`.
  static float madd(float a, float b, float c) noexcept { return kernels::madd(a, b, c); }
  /// `a > b ? a : b`, as `std::max(b, a)`: `b` where either is NaN.
  static float max(float a, float b) noexcept { return a > b ? a : b; }
  /// `a < b ? a : b`, as `std::min(b, a)`: `b` where either is NaN.
  static float min(float a, float b) noexcept { return a < b ? a : b; }
  /// `a > b ? x : y` (`y` where either of `a` and `b` is NaN).
  static float where_greater(float a, float b, float x, float y) noexcept { return a > b ? x : y; }
  /// `2^n` for an integer `n` in `[-126, 127]`; a value in that range for any other `n`.
  static float pow2(float n) noexcept {
    const float c = n >= -126.0f ? (n <= 127.0f ? n : 127.0f) : -126.0f;  // NaN: -126
    return std::bit_cast<float>(static_cast<std::uint32_t>(static_cast<std::int32_t>(c) + 127) << 23);
  }
};

/// ReLU capped at 6 on lanes `L`: `min(max(x, 0), 6)` in the operand order of
/// `std::min(std::max(x, 0.0f), 6.0f)`, which keeps `x` where it is NaN (`ops::relu6`,
/// `ops::hard_sigmoid`, `ops::hard_swish`, and a convolution's epilogue that fuses ReLU6).
template <class L>
typename L::value relu6(typename L::value x) noexcept {
  return L::min(L::splat(6.0f), L::max(L::splat(0.0f), x));
}

/// `e^x` in f32 on lanes `L`, one sequence of operations for one float and for a vector (so
/// the bits are the same): Cephes' `expf` (S. L. Moshier, Cephes Math Library, `expf.c`; its
/// constants below), about one unit in the last place. `x = n ln 2 + r` with `n` rounded to the
/// nearest integer (adding 1.5 * 2^23 rounds, in the fused multiply-add with `log2(e)`), `ln 2`
/// in two parts so that `r` is exact, `|r| <= ln 2 / 2`; `e^r = 1 + r + r^2 P(r)` with P of degree
/// 5; then times `2^n`, built from its exponent bits.
///
/// Above 127.49 ln 2 (88.37), where `2^n` would leave the normal floats, the result is +inf;
/// below -126 ln 2 (-87.34) it is +0 (the results there are subnormal: f32's `std::exp` gives
/// at most 1.2e-38). A NaN gives NaN.
///
/// `exp`, `sigmoid` and `silu` are always inlined: a convolution's epilogue applies them to
/// each vector of a register tile, and a call there made the compiler store and reload the
/// tile's other accumulators around it (the x86-64 System V ABI preserves no vector register
/// across a call). A 1x1 convolution from 16 channels with SiLU ran 1.1 to 1.3 times faster.
template <class L>
[[gnu::always_inline]] inline typename L::value exp(typename L::value x) noexcept {
  using V = typename L::value;
  const V round = L::splat(12582912.0f);  // 1.5 * 2^23: a sum with it keeps no fraction
  const V t = L::madd(x, L::splat(1.44269504088896341f), round);
  const V n = L::sub(t, round);
  V r = L::madd(n, L::splat(-0.693359375f), x);  // ln 2 = 0.693359375 - 2.12194440e-4
  r = L::madd(n, L::splat(2.12194440e-4f), r);
  V p = L::splat(1.9875691500e-4f);
  p = L::madd(p, r, L::splat(1.3981999507e-3f));
  p = L::madd(p, r, L::splat(8.3334519073e-3f));
  p = L::madd(p, r, L::splat(4.1665795894e-2f));
  p = L::madd(p, r, L::splat(1.6666665459e-1f));
  p = L::madd(p, r, L::splat(5.0000001201e-1f));
  const V e = L::mul(L::add(L::madd(p, L::mul(r, r), r), L::splat(1.0f)), L::pow2(n));
  const V inf = L::splat(HUGE_VALF), zero = L::splat(0.0f);
  return L::where_greater(x, L::splat(88.37f), inf, L::where_greater(L::splat(-87.33654f), x, zero, e));
}

/// `e^x` of one float, as `exp<scalar_lanes>`.
inline float exp(float x) noexcept { return exp<scalar_lanes>(x); }

/// The logistic sigmoid on lanes `L`: `1 / (1 + e^-x)`, `e^x` as `exp<L>` (`ops::sigmoid`).
template <class L>
[[gnu::always_inline]] inline typename L::value sigmoid(typename L::value x) noexcept {
  const auto one = L::splat(1.0f);
  return L::div(one, L::add(one, exp<L>(L::sub(L::splat(0.0f), x))));
}

/// The sigmoid-weighted linear unit on lanes `L`: `x / (1 + e^-x)`, `e^x` as `exp<L>`
/// (`ops::silu`, and a convolution's epilogue that fuses it).
template <class L>
[[gnu::always_inline]] inline typename L::value silu(typename L::value x) noexcept {
  return L::div(x, L::add(L::splat(1.0f), exp<L>(L::sub(L::splat(0.0f), x))));
}

}  // namespace ipu::kernels
