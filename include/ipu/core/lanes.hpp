#pragma once
/// \file
/// Arithmetic written once for one float or a vector of them, so that the scalar kernels (the
/// faithful executor's) and the vector ones (the fast executor's) compute the same bits:
/// `IPU_FMA` and `kernels::madd`, the lane operations of one float (`scalar_lanes`; a vector's
/// are `kernels::simd::lanes`), and `exp`, `sigmoid`, `silu`, `tanh` and the normal
/// distribution's `normal_cdf` over either.
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

/// The logistic sigmoid `s` of a value and its complement `1 - s`.
template <class L>
struct sigmoid_parts {
  typename L::value s;           ///< `1 / (1 + e^-x)`
  typename L::value complement;  ///< `1 - s`
};

/// The logistic sigmoid of `x` on lanes `L`, `s` as `sigmoid<L>` (the same bits), and `1 - s`
/// to its own precision: `e^-x s` above 0, where `1 - s` would cancel (beyond x = 17, `s`
/// rounds to 1 and `1 - s` to 0), `1 - s` at and below 0, where `e^-x` may be +inf. The
/// derivatives of the sigmoid, SiLU and GELU's tanh form take it; the last two multiply `1 - s`
/// by a term that grows with `x`, and so would its error.
template <class L>
[[gnu::always_inline]] inline sigmoid_parts<L> sigmoid_with_complement(typename L::value x) noexcept {
  const auto one = L::splat(1.0f);
  const auto e = exp<L>(L::sub(L::splat(0.0f), x));
  const auto s = L::div(one, L::add(one, e));
  return {s, L::where_greater(x, L::splat(0.0f), L::mul(e, s), L::sub(one, s))};
}

/// The sigmoid-weighted linear unit on lanes `L`: `x / (1 + e^-x)`, `e^x` as `exp<L>`
/// (`ops::silu`, and a convolution's epilogue that fuses it).
template <class L>
[[gnu::always_inline]] inline typename L::value silu(typename L::value x) noexcept {
  return L::div(x, L::add(L::splat(1.0f), exp<L>(L::sub(L::splat(0.0f), x))));
}

/// The hyperbolic tangent on lanes `L`, as Cephes' `tanhf` (S. L. Moshier, Cephes Math Library,
/// `tanhf.c`; its constants below): `x + x^3 P(x^2)`, P of degree 4, where `|x| < 0.625`; else
/// `1 - 2 / (e^{2|x|} + 1)` with the sign of `x`, `e^x` as `exp<L>` (`ops::tanh`). Beyond
/// 44.2 the exponential is +inf and the result +-1; +-0 gives itself, a NaN gives NaN. Within
/// 1.3 units in the last place (measured against double precision over a 61st of the floats
/// in [-20, 20]; `tests/kernels/conv_cases.hpp` checks a grid).
template <class L>
[[gnu::always_inline]] inline typename L::value tanh(typename L::value x) noexcept {
  using V = typename L::value;
  const V one = L::splat(1.0f), zero = L::splat(0.0f);
  const V a = L::max(x, L::sub(zero, x));  // |x|; NaN where x is
  const V far = L::sub(one, L::div(L::splat(2.0f), L::add(exp<L>(L::add(a, a)), one)));
  const V s = L::mul(x, x);
  V p = L::splat(-5.70498872745e-3f);
  p = L::madd(p, s, L::splat(2.06390887954e-2f));
  p = L::madd(p, s, L::splat(-5.37397155531e-2f));
  p = L::madd(p, s, L::splat(1.33314422036e-1f));
  p = L::madd(p, s, L::splat(-3.33332819422e-1f));
  const V near = L::where_greater(a, zero, L::madd(L::mul(p, s), x, x), x);  // x itself at +-0
  return L::where_greater(L::splat(0.625f), a, near, L::where_greater(zero, x, L::sub(zero, far), far));
}

/// `e^{-x^2 / 2}` on lanes `L`, the standard normal density times `sqrt(2 pi)`: `x^2 / 2` is
/// taken in two parts, its rounded value `h` and (with fused multiply-add) the rounding error
/// `l`, and the result is `e^{-h} (1 - l)`, so that the rounding of `x^2` (relative 2^-24,
/// which the exponential multiplies by `x^2 / 2`: at `x = 9`, by 40) does not reach the tails.
/// Without fused multiply-add, `l` is 0.
template <class L>
[[gnu::always_inline]] inline typename L::value gauss(typename L::value x) noexcept {
  using V = typename L::value;
  const V half = L::splat(0.5f);
  const V h = L::mul(L::mul(x, x), half);
  const V l = L::mul(L::madd(x, x, L::sub(L::splat(0.0f), L::mul(x, x))), half);
  const V e = exp<L>(L::sub(L::splat(0.0f), h));
  // l is NaN where x^2 is infinite; e is 0 there (and from x^2 / 2 > 87.3 on).
  return L::where_greater(L::splat(100.0f), h, L::madd(e, L::sub(L::splat(0.0f), l), e), e);
}

/// The standard normal distribution `Phi(x) = (1 + erf(x / sqrt(2))) / 2` on lanes `L`, given
/// `e = gauss<L>(x)`, as Cephes' `ndtrf` (S. L. Moshier, Cephes Math Library, `ndtrf.c`; its
/// constants below). With `z = x / sqrt(2)`: where `|z| < 1`, `(1 + z T(z^2)) / 2`, T of degree
/// 6; else `c = e^{-z^2} q P(q^2) / 2` with `q = 1 / |z|`, P of degree 8 below `|z| = 2` and of
/// degree 7 (Cephes' R) above, which is `Phi(-|x|)` to its own precision however small, and
/// `Phi(x)` is `c` below 0 and `1 - c` above (`ops::gelu`). A NaN gives NaN. With fused
/// multiply-add, within 10 units in the last place near x = -1.4 (where `1 + z T` cancels),
/// 5.2 in the negative tail and 1 in the positive one; without it, `e` has the rounding of
/// `x^2` (66 units at x = -12.9). Measured against double precision over a 61st of the floats;
/// `tests/kernels/conv_cases.hpp` checks a grid.
template <class L>
[[gnu::always_inline]] inline typename L::value normal_cdf(typename L::value x, typename L::value e) noexcept {
  using V = typename L::value;
  const V one = L::splat(1.0f), half = L::splat(0.5f);
  const V z = L::mul(x, L::splat(0.70710678118654752f));
  const V s = L::mul(z, z);
  V t = L::splat(7.853861353153693e-5f);
  t = L::madd(t, s, L::splat(-8.010193625184903e-4f));
  t = L::madd(t, s, L::splat(5.188327685732524e-3f));
  t = L::madd(t, s, L::splat(-2.685381193529856e-2f));
  t = L::madd(t, s, L::splat(1.128358514861418e-1f));
  t = L::madd(t, s, L::splat(-3.761262582423300e-1f));
  t = L::madd(t, s, L::splat(1.128379165726710f));
  const V near = L::madd(L::mul(z, t), half, half);
  const V a = L::max(z, L::sub(L::splat(0.0f), z));  // |z|; NaN where x is
  const V q = L::div(one, a), y = L::mul(q, q);
  V p = L::splat(2.326819970068386e-2f);  // 1 <= |z| < 2
  p = L::madd(p, y, L::splat(-1.387039388740657e-1f));
  p = L::madd(p, y, L::splat(3.687424674597105e-1f));
  p = L::madd(p, y, L::splat(-5.824733027278666e-1f));
  p = L::madd(p, y, L::splat(6.210004621745983e-1f));
  p = L::madd(p, y, L::splat(-4.944515323274145e-1f));
  p = L::madd(p, y, L::splat(3.404879937665872e-1f));
  p = L::madd(p, y, L::splat(-2.741127028184656e-1f));
  p = L::madd(p, y, L::splat(5.638259427386472e-1f));
  V r = L::splat(-1.047766399936249e+1f);  // |z| >= 2
  r = L::madd(r, y, L::splat(1.297719955372516e+1f));
  r = L::madd(r, y, L::splat(-7.495518717768503f));
  r = L::madd(r, y, L::splat(2.921019019210786f));
  r = L::madd(r, y, L::splat(-1.015265279202700f));
  r = L::madd(r, y, L::splat(4.218463358204948e-1f));
  r = L::madd(r, y, L::splat(-2.820767439740514e-1f));
  r = L::madd(r, y, L::splat(5.641895067754075e-1f));
  const V c = L::mul(L::mul(L::mul(e, q), L::where_greater(L::splat(2.0f), a, p, r)), half);
  const V tail = L::where_greater(x, L::splat(0.0f), L::sub(one, c), c);
  return L::where_greater(one, a, near, tail);
}

/// The standard normal distribution `Phi(x)` on lanes `L` (see the overload with `e`).
template <class L>
[[gnu::always_inline]] inline typename L::value normal_cdf(typename L::value x) noexcept {
  return normal_cdf<L>(x, gauss<L>(x));
}

}  // namespace ipu::kernels
