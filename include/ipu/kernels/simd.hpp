#pragma once
/// \file
/// The vector instructions the fast kernels use, chosen at compile time from the target flags:
/// AVX-512 (`-mavx512f`, 16 floats), AVX2 with FMA (`-mavx2 -mfma`, 8 floats), or portable C++
/// (4 floats in an array the compiler vectorises as it can).
///
/// Override the choice by defining `IPU_SIMD` before the first include of an ipu header, to
/// `IPU_SIMD_AVX512`, `IPU_SIMD_AVX2` or `IPU_SIMD_PORTABLE`; asking for more than the target
/// flags allow is an `#error`. Every translation unit of a program must see the same choice.
///
/// **Arithmetic does not depend on the choice.** Every multiply-add of every kernel, vector or
/// scalar, goes through `madd`: one fused multiply-add (a single rounding) when the target has
/// FMA instructions (`IPU_FMA` is 1, e.g. `-march=x86-64-v3` and above), a multiply then an add
/// otherwise (`-march=x86-64-v2`). So all three instruction sets, and the scalar kernels of the
/// faithful executor, give the same bits for the same target flags.

#include <ipu/core/dtype.hpp>
#include <ipu/core/lanes.hpp>

#include <cmath>
#include <concepts>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <utility>

#if defined(__AVX512F__) || defined(__AVX2__) || defined(__F16C__)
#include <immintrin.h>
#endif

/// Value of `IPU_SIMD` that selects the portable kernels: plain C++ on vectors of 4 floats,
/// for any target. The three values are ordered, narrowest set first, and none is 0: `#if`
/// reads an undefined name as 0, so a misspelt `IPU_SIMD` is an error, not the portable set.
#define IPU_SIMD_PORTABLE 1
/// Value of `IPU_SIMD` that selects the AVX2 kernels: vectors of 8 floats. Needs `-mavx2
/// -mfma` (e.g. `-march=x86-64-v3`).
#define IPU_SIMD_AVX2 2
/// Value of `IPU_SIMD` that selects the AVX-512 kernels: vectors of 16 floats. Needs
/// `-mavx512f` (e.g. `-march=x86-64-v4`).
#define IPU_SIMD_AVX512 3

/// \def IPU_SIMD_TARGET
/// The widest instruction set the target flags enable: `IPU_SIMD_AVX512` when the compiler
/// defines `__AVX512F__`, else `IPU_SIMD_AVX2` when it defines both `__AVX2__` and `__FMA__`,
/// else `IPU_SIMD_PORTABLE`. Set by this header from the compiler's predefined macros; do not
/// define it.
#if defined(__AVX512F__)
#define IPU_SIMD_TARGET IPU_SIMD_AVX512
#elif defined(__AVX2__) && defined(__FMA__)
#define IPU_SIMD_TARGET IPU_SIMD_AVX2
#else
#define IPU_SIMD_TARGET IPU_SIMD_PORTABLE
#endif

/// \def IPU_SIMD
/// The instruction set the fast kernels are compiled for: `IPU_SIMD_AVX512`, `IPU_SIMD_AVX2`
/// or `IPU_SIMD_PORTABLE`; by default `IPU_SIMD_TARGET`, the widest the target flags enable.
///
/// To choose a narrower set, define it before the first include of an ipu header, e.g.
/// `-DIPU_SIMD=IPU_SIMD_AVX2`. The value is evaluated only after this header has defined the
/// three values and `IPU_SIMD_TARGET`, so it may refer to them. A set above `IPU_SIMD_TARGET`,
/// or anything that is none of the three (a misspelt name included), is an `#error`. Build every
/// translation unit of a program with the same value (see `IPU_SIMD_NAMESPACE`).
#ifndef IPU_SIMD
#define IPU_SIMD IPU_SIMD_TARGET
#elif IPU_SIMD != IPU_SIMD_PORTABLE && IPU_SIMD != IPU_SIMD_AVX2 && IPU_SIMD != IPU_SIMD_AVX512
#error "ipu: IPU_SIMD must be IPU_SIMD_AVX512, IPU_SIMD_AVX2 or IPU_SIMD_PORTABLE"
#elif IPU_SIMD > IPU_SIMD_TARGET
#error "ipu: IPU_SIMD asks for instructions the target flags do not enable (see -march)"
#endif

namespace ipu::kernels {

/// \def IPU_SIMD_NAMESPACE
/// The name of the inline namespace inside `ipu::kernels` that holds `simd`, `packed_conv`
/// and the vectorised pooling: `avx512`, `avx2` or `portable`, after `IPU_SIMD` (so
/// `ipu::kernels::packed_conv` is `ipu::kernels::avx512::packed_conv` in an AVX-512 build).
/// Set by this header; do not define it.
#if IPU_SIMD == IPU_SIMD_AVX512
#define IPU_SIMD_NAMESPACE avx512
#elif IPU_SIMD == IPU_SIMD_AVX2
#define IPU_SIMD_NAMESPACE avx2
#else
#define IPU_SIMD_NAMESPACE portable
#endif

/// The fast kernels live in an inline namespace named after the instruction set, so that
/// translation units built for different ones (the kernel tests do) hold distinct functions.
inline namespace IPU_SIMD_NAMESPACE {
/// The vector type `vec` and the operations the fast kernels are written in, for the
/// instruction set `IPU_SIMD` selects; each operation works lane by lane unless it says
/// otherwise.
namespace simd {

/// The instruction sets the kernels can be compiled for; `compiled_isa` is the one they were
/// compiled for.
enum class isa : std::uint8_t { portable, avx2, avx512 };

/// The instruction set of this build, after `IPU_SIMD`.
inline constexpr isa compiled_isa = IPU_SIMD == IPU_SIMD_AVX512 ? isa::avx512
                                    : IPU_SIMD == IPU_SIMD_AVX2  ? isa::avx2
                                                                 : isa::portable;

/// `"avx512"`, `"avx2"` or `"portable"`: also the name of the set's inline namespace.
constexpr std::string_view name_of(isa i) noexcept {
  return i == isa::avx512 ? "avx512" : i == isa::avx2 ? "avx2" : "portable";
}

/// The lane that lane `i` of `transpose<Rows, Cols>` reads: `i % Rows * Cols + i / Rows`.
template <int Rows, int Cols>
constexpr int transposed_lane(int i) noexcept {
  return i % Rows * Cols + i / Rows;
}

#if IPU_SIMD == IPU_SIMD_AVX512

/// A vector of `width` floats, passed by value.
struct vec {
  static constexpr int width = 16;  ///< lanes: 16 with AVX-512, 8 with AVX2, 4 portable
  __m512 v;                         ///< the lanes, in one AVX-512 register
};
/// The zero-masked forms with every lane selected: GCC 12's unmasked forms start from
/// `_mm512_undefined_ps()`, which -Wmaybe-uninitialized reports once inlined.
inline constexpr __mmask16 all = 0xFFFF;

/// Every lane +0.
inline vec zero() noexcept { return {_mm512_setzero_ps()}; }
/// Every lane `x`.
inline vec splat(float x) noexcept { return {_mm512_set1_ps(x)}; }
/// The `width` floats at `p` (any alignment).
inline vec load(const float* p) noexcept { return {_mm512_loadu_ps(p)}; }
/// The first `n` lanes from `p`, zeros above (`0 <= n <= width`).
inline vec load(const float* p, int n) noexcept {
  return {_mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << n) - 1), p)};
}
/// Writes all `width` lanes to `p` (any alignment).
inline void store(float* p, vec x) noexcept { _mm512_storeu_ps(p, x.v); }
/// Writes the first `n` lanes to `p` (`0 <= n <= width`), nothing past `p[n - 1]`.
inline void store(float* p, vec x, int n) noexcept {
  _mm512_mask_storeu_ps(p, static_cast<__mmask16>((1u << n) - 1), x.v);
}
/// `a * b + c` lane by lane, fused (one rounding), as the scalar `kernels::madd`.
inline vec madd(vec a, vec b, vec c) noexcept { return {_mm512_fmadd_ps(a.v, b.v, c.v)}; }
/// `a + b` lane by lane.
inline vec add(vec a, vec b) noexcept { return {_mm512_add_ps(a.v, b.v)}; }
/// `a - b` lane by lane.
inline vec sub(vec a, vec b) noexcept { return {_mm512_sub_ps(a.v, b.v)}; }
/// `a * b` lane by lane.
inline vec mul(vec a, vec b) noexcept { return {_mm512_mul_ps(a.v, b.v)}; }
/// `x > 0 ? v : +0` lane by lane (NaN in `x` gives 0): ReLU's gradient `v` at its input `x`.
inline vec where_positive(vec x, vec v) noexcept {
  return {_mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x.v, _mm512_setzero_ps(), _CMP_GT_OQ), v.v)};
}
/// `a > b ? x : y` lane by lane (false where either of `a` and `b` is NaN).
inline vec where_greater(vec a, vec b, vec x, vec y) noexcept {
  return {_mm512_mask_blend_ps(_mm512_cmp_ps_mask(a.v, b.v, _CMP_GT_OQ), y.v, x.v)};
}
/// `acc[i] += double(a[i]) * double(b[i])` for `i < n` (`0 <= n <= width`): sums in double of
/// f32 products, each exact in double, so each sum is rounded once.
inline void madd_widened(double* acc, vec a, vec b, int n) noexcept {
  const auto half = [](__m512 x, int h) {  // masked forms: GCC's unmasked ones read an undefined register
    const __m256d bits = h == 0 ? _mm512_maskz_extractf64x4_pd(0xF, _mm512_castps_pd(x), 0)
                                : _mm512_maskz_extractf64x4_pd(0xF, _mm512_castps_pd(x), 1);
    return _mm512_maskz_cvtps_pd(0xFF, _mm256_castpd_ps(bits));
  };
  for (int h = 0; h < 2; ++h) {
    const int lanes = n - 8 * h < 0 ? 0 : n - 8 * h > 8 ? 8 : n - 8 * h;
    const auto m = static_cast<__mmask8>((1u << lanes) - 1);
    _mm512_mask_storeu_pd(acc + 8 * h, m, _mm512_fmadd_pd(half(a.v, h), half(b.v, h), _mm512_maskz_loadu_pd(m, acc + 8 * h)));
  }
}
/// `x > 0 ? x : +0` lane by lane (NaN gives 0), as `kernels::relu`.
inline vec relu(vec x) noexcept { return {_mm512_maskz_max_ps(all, x.v, _mm512_setzero_ps())}; }
/// `a > b ? a : b` lane by lane, as `std::max(b, a)`.
inline vec max(vec a, vec b) noexcept { return {_mm512_maskz_max_ps(all, a.v, b.v)}; }
/// `a < b ? a : b` lane by lane, as `std::min(b, a)`.
inline vec min(vec a, vec b) noexcept { return {_mm512_maskz_min_ps(all, a.v, b.v)}; }
/// `2^n` lane by lane for integers `n` in `[-126, 127]`, as `scalar_lanes::pow2`.
inline vec pow2(vec n) noexcept {
  const __m512 c = _mm512_maskz_min_ps(all, _mm512_maskz_max_ps(all, n.v, _mm512_set1_ps(-126.0f)), _mm512_set1_ps(127.0f));
  const __m512i e = _mm512_maskz_add_epi32(all, _mm512_maskz_cvtps_epi32(all, c), _mm512_set1_epi32(127));
  return {_mm512_castsi512_ps(_mm512_maskz_slli_epi32(all, e, 23))};
}
/// `a / b` lane by lane.
inline vec div(vec a, vec b) noexcept { return {_mm512_div_ps(a.v, b.v)}; }

/// Lane `i` gets lane `i / Group * Group + J` of `x`: element `J` of each group of `Group`
/// consecutive lanes, spread over its group.
template <int Group, int J>
inline vec spread(vec x) noexcept {
  static_assert(vec::width % Group == 0 && J < Group);
  if constexpr (Group == 1) {
    return x;
  } else if constexpr (Group == 2) {
    return {_mm512_maskz_permute_ps(all, x.v, J == 0 ? 0xA0 : 0xF5)};
  } else if constexpr (Group == 4) {
    return {_mm512_maskz_permute_ps(all, x.v, J * 0x55)};
  } else {
    const __m512i lanes = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    const __m512i index = _mm512_add_epi32(_mm512_and_si512(lanes, _mm512_set1_epi32(~(Group - 1))),
                                           _mm512_set1_epi32(J));
    return {_mm512_maskz_permutexvar_ps(all, index, x.v)};
  }
}

/// The `Chunk` floats at `p` repeated over the vector: lane `i` gets `p[i % Chunk]`. One load
/// (`vbroadcastss`, `vbroadcastsd`, `vbroadcastf32x4`, `vbroadcastf64x4`), no shuffle.
///
/// \tparam Chunk  1, 2, 4 or 8
template <int Chunk>
inline vec broadcast(const float* p) noexcept {
  static_assert(Chunk == 1 || Chunk == 2 || Chunk == 4 || Chunk == 8);
  if constexpr (Chunk == 1) {
    return {_mm512_set1_ps(*p)};
  } else if constexpr (Chunk == 2) {
    double pair;  // two floats, one 64-bit element: `vbroadcastsd` from memory
    std::memcpy(&pair, p, sizeof pair);
    return {_mm512_castpd_ps(_mm512_set1_pd(pair))};
  } else if constexpr (Chunk == 4) {
    return {_mm512_maskz_broadcast_f32x4(all, _mm_loadu_ps(p))};
  } else {
    return {_mm512_castpd_ps(_mm512_maskz_broadcast_f64x4(0xFF, _mm256_castps_pd(_mm256_loadu_ps(p))))};
  }
}

/// The lanes of `x`, read as `Rows` rows of `Cols`, transposed: lane `c * Rows + r` gets lane
/// `r * Cols + c`. One in-register permute (none when `Rows` or `Cols` is 1).
template <int Rows, int Cols>
inline vec transpose(vec x) noexcept {
  static_assert(Rows * Cols == vec::width);
  if constexpr (Rows == 1 || Cols == 1) {
    return x;
  } else {
    const __m512i index = [&]<int... I>(std::integer_sequence<int, I...>) {
      return _mm512_set_epi32(transposed_lane<Rows, Cols>(vec::width - 1 - I)...);  // lane 15 first
    }(std::make_integer_sequence<int, vec::width>{});
    return {_mm512_maskz_permutexvar_ps(all, index, x.v)};
  }
}

/// Stores `x` rounded to f16 (to nearest even) at `p`: `width` values.
inline void store(f16* p, vec x) noexcept {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_maskz_cvtps_ph(all, x.v, _MM_FROUND_TO_NEAREST_INT));
}
/// The `width` f16 values at `p`, widened to f32 (exactly).
inline vec load(const f16* p) noexcept {
  return {_mm512_maskz_cvtph_ps(all, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)))};
}

#elif IPU_SIMD == IPU_SIMD_AVX2

/// A vector of `width` floats, passed by value.
struct vec {
  static constexpr int width = 8;  ///< lanes: 16 with AVX-512, 8 with AVX2, 4 portable
  __m256 v;                        ///< the lanes, in one AVX register
};
namespace detail {
inline __m256i first_lanes(int n) noexcept {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_set_epi32(7, 6, 5, 4, 3, 2, 1, 0));
}
}  // namespace detail
/// Every lane +0.
inline vec zero() noexcept { return {_mm256_setzero_ps()}; }
/// Every lane `x`.
inline vec splat(float x) noexcept { return {_mm256_set1_ps(x)}; }
/// The `width` floats at `p` (any alignment).
inline vec load(const float* p) noexcept { return {_mm256_loadu_ps(p)}; }
/// The first `n` lanes from `p`, zeros above (`0 <= n <= width`).
inline vec load(const float* p, int n) noexcept { return {_mm256_maskload_ps(p, detail::first_lanes(n))}; }
/// Writes all `width` lanes to `p` (any alignment).
inline void store(float* p, vec x) noexcept { _mm256_storeu_ps(p, x.v); }
/// Writes the first `n` lanes to `p` (`0 <= n <= width`), nothing past `p[n - 1]`.
inline void store(float* p, vec x, int n) noexcept { _mm256_maskstore_ps(p, detail::first_lanes(n), x.v); }
/// `a * b + c` lane by lane, fused (one rounding), as the scalar `kernels::madd`.
inline vec madd(vec a, vec b, vec c) noexcept { return {_mm256_fmadd_ps(a.v, b.v, c.v)}; }
/// `a + b` lane by lane.
inline vec add(vec a, vec b) noexcept { return {_mm256_add_ps(a.v, b.v)}; }
/// `a - b` lane by lane.
inline vec sub(vec a, vec b) noexcept { return {_mm256_sub_ps(a.v, b.v)}; }
/// `a * b` lane by lane.
inline vec mul(vec a, vec b) noexcept { return {_mm256_mul_ps(a.v, b.v)}; }
/// `x > 0 ? v : +0` lane by lane (NaN in `x` gives 0): ReLU's gradient `v` at its input `x`.
inline vec where_positive(vec x, vec v) noexcept {
  return {_mm256_and_ps(_mm256_cmp_ps(x.v, _mm256_setzero_ps(), _CMP_GT_OQ), v.v)};
}
/// `a > b ? x : y` lane by lane (false where either of `a` and `b` is NaN).
inline vec where_greater(vec a, vec b, vec x, vec y) noexcept {
  return {_mm256_blendv_ps(y.v, x.v, _mm256_cmp_ps(a.v, b.v, _CMP_GT_OQ))};
}
/// `acc[i] += double(a[i]) * double(b[i])` for `i < n` (`0 <= n <= width`): sums in double of
/// f32 products, each exact in double, so each sum is rounded once.
inline void madd_widened(double* acc, vec a, vec b, int n) noexcept {
  if (n == vec::width) {
    for (int h = 0; h < 2; ++h) {
      const __m256d ah = _mm256_cvtps_pd(h == 0 ? _mm256_castps256_ps128(a.v) : _mm256_extractf128_ps(a.v, 1));
      const __m256d bh = _mm256_cvtps_pd(h == 0 ? _mm256_castps256_ps128(b.v) : _mm256_extractf128_ps(b.v, 1));
      _mm256_storeu_pd(acc + 4 * h, _mm256_fmadd_pd(ah, bh, _mm256_loadu_pd(acc + 4 * h)));
    }
    return;
  }
  float fa[vec::width], fb[vec::width];
  store(fa, a), store(fb, b);
  for (int i = 0; i < n; ++i) acc[i] = std::fma(static_cast<double>(fa[i]), static_cast<double>(fb[i]), acc[i]);
}
/// `x > 0 ? x : +0` lane by lane (NaN gives 0), as `kernels::relu`.
inline vec relu(vec x) noexcept { return {_mm256_max_ps(x.v, _mm256_setzero_ps())}; }
/// `a > b ? a : b` lane by lane, as `std::max(b, a)`.
inline vec max(vec a, vec b) noexcept { return {_mm256_max_ps(a.v, b.v)}; }
/// `a < b ? a : b` lane by lane, as `std::min(b, a)`.
inline vec min(vec a, vec b) noexcept { return {_mm256_min_ps(a.v, b.v)}; }
/// `2^n` lane by lane for integers `n` in `[-126, 127]`, as `scalar_lanes::pow2`.
inline vec pow2(vec n) noexcept {
  const __m256 c = _mm256_min_ps(_mm256_max_ps(n.v, _mm256_set1_ps(-126.0f)), _mm256_set1_ps(127.0f));
  const __m256i e = _mm256_add_epi32(_mm256_cvtps_epi32(c), _mm256_set1_epi32(127));
  return {_mm256_castsi256_ps(_mm256_slli_epi32(e, 23))};
}
/// `a / b` lane by lane.
inline vec div(vec a, vec b) noexcept { return {_mm256_div_ps(a.v, b.v)}; }

/// Lane `i` gets lane `i / Group * Group + J` of `x`: element `J` of each group of `Group`
/// consecutive lanes, spread over its group.
template <int Group, int J>
inline vec spread(vec x) noexcept {
  static_assert(vec::width % Group == 0 && J < Group);
  if constexpr (Group == 1) {
    return x;
  } else if constexpr (Group == 2) {
    return {_mm256_permute_ps(x.v, J == 0 ? 0xA0 : 0xF5)};
  } else if constexpr (Group == 4) {
    return {_mm256_permute_ps(x.v, J * 0x55)};
  } else {
    return {_mm256_permutevar8x32_ps(x.v, _mm256_set1_epi32(J))};
  }
}

/// The `Chunk` floats at `p` repeated over the vector: lane `i` gets `p[i % Chunk]`. One load
/// (`vbroadcastss`, `vbroadcastsd`, `vbroadcastf128`), no shuffle.
///
/// \tparam Chunk  1, 2 or 4
template <int Chunk>
inline vec broadcast(const float* p) noexcept {
  static_assert(Chunk == 1 || Chunk == 2 || Chunk == 4);
  if constexpr (Chunk == 1) {
    return {_mm256_set1_ps(*p)};
  } else if constexpr (Chunk == 2) {
    double pair;  // two floats, one 64-bit element: `vbroadcastsd` from memory
    std::memcpy(&pair, p, sizeof pair);
    return {_mm256_castpd_ps(_mm256_set1_pd(pair))};
  } else {
    return {_mm256_broadcast_ps(reinterpret_cast<const __m128*>(p))};
  }
}

/// The lanes of `x`, read as `Rows` rows of `Cols`, transposed: lane `c * Rows + r` gets lane
/// `r * Cols + c`. One in-register permute (none when `Rows` or `Cols` is 1).
template <int Rows, int Cols>
inline vec transpose(vec x) noexcept {
  static_assert(Rows * Cols == vec::width);
  if constexpr (Rows == 1 || Cols == 1) {
    return x;
  } else {
    const __m256i index = [&]<int... I>(std::integer_sequence<int, I...>) {
      return _mm256_set_epi32(transposed_lane<Rows, Cols>(vec::width - 1 - I)...);  // lane 7 first
    }(std::make_integer_sequence<int, vec::width>{});
    return {_mm256_permutevar8x32_ps(x.v, index)};
  }
}

#if defined(__F16C__)
/// Stores `x` rounded to f16 (to nearest even) at `p`: `width` values.
inline void store(f16* p, vec x) noexcept {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(x.v, _MM_FROUND_TO_NEAREST_INT));
}
/// The `width` f16 values at `p`, widened to f32 (exactly).
inline vec load(const f16* p) noexcept { return {_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)))}; }
#endif

#else  // portable

/// A vector of `width` floats, passed by value. The same interface on every instruction set;
/// only `width` and the representation of `v` differ.
struct vec {
  static constexpr int width = 4;  ///< lanes: 16 with AVX-512, 8 with AVX2, 4 portable
  float v[width];                  ///< the lanes, lane 0 first
};
/// Every lane +0.
inline vec zero() noexcept { return {}; }
/// Every lane `x`.
inline vec splat(float x) noexcept { return {{x, x, x, x}}; }
/// The `width` floats at `p` (any alignment).
inline vec load(const float* p) noexcept { return {{p[0], p[1], p[2], p[3]}}; }
/// The first `n` lanes from `p`, zeros above (`0 <= n <= width`); reads nothing past
/// `p[n - 1]`.
inline vec load(const float* p, int n) noexcept {
  vec r{};
  for (int i = 0; i < n; ++i) r.v[i] = p[i];
  return r;
}
/// Writes all `width` lanes to `p` (any alignment).
inline void store(float* p, vec x) noexcept {
  for (int i = 0; i < vec::width; ++i) p[i] = x.v[i];
}
/// Writes the first `n` lanes to `p` (`0 <= n <= width`), nothing past `p[n - 1]`.
inline void store(float* p, vec x, int n) noexcept {
  for (int i = 0; i < n; ++i) p[i] = x.v[i];
}
/// `a * b + c` lane by lane, by the scalar `kernels::madd`: fused (one rounding) when
/// `IPU_FMA` is 1, a multiply then an add otherwise. The AVX2 and AVX-512 forms always fuse
/// (those sets imply FMA).
inline vec madd(vec a, vec b, vec c) noexcept {
  for (int i = 0; i < vec::width; ++i) c.v[i] = kernels::madd(a.v[i], b.v[i], c.v[i]);
  return c;
}
/// `a + b` lane by lane.
inline vec add(vec a, vec b) noexcept {
  for (int i = 0; i < vec::width; ++i) a.v[i] += b.v[i];
  return a;
}
/// `a - b` lane by lane.
inline vec sub(vec a, vec b) noexcept {
  for (int i = 0; i < vec::width; ++i) a.v[i] -= b.v[i];
  return a;
}
/// `a * b` lane by lane.
inline vec mul(vec a, vec b) noexcept {
  for (int i = 0; i < vec::width; ++i) a.v[i] *= b.v[i];
  return a;
}
/// `x > 0 ? v : +0` lane by lane (NaN in `x` gives 0): ReLU's gradient `v` at its input `x`.
inline vec where_positive(vec x, vec v) noexcept {
  for (int i = 0; i < vec::width; ++i) v.v[i] = x.v[i] > 0.0f ? v.v[i] : 0.0f;
  return v;
}
/// `a > b ? x : y` lane by lane (false where either of `a` and `b` is NaN).
inline vec where_greater(vec a, vec b, vec x, vec y) noexcept {
  for (int i = 0; i < vec::width; ++i) y.v[i] = a.v[i] > b.v[i] ? x.v[i] : y.v[i];
  return y;
}
/// `acc[i] += double(a[i]) * double(b[i])` for `i < n` (`0 <= n <= width`): sums in double of
/// f32 products, each exact in double, so each sum is rounded once.
inline void madd_widened(double* acc, vec a, vec b, int n) noexcept {
  for (int i = 0; i < n; ++i) acc[i] = std::fma(static_cast<double>(a.v[i]), static_cast<double>(b.v[i]), acc[i]);
}
/// `x > 0 ? x : +0` lane by lane (NaN gives 0), as `kernels::relu`.
inline vec relu(vec x) noexcept {
  for (float& e : x.v) e = e > 0.0f ? e : 0.0f;
  return x;
}
/// `a > b ? a : b` lane by lane, as `std::max(b, a)`: `b` where either is NaN.
inline vec max(vec a, vec b) noexcept {
  for (int i = 0; i < vec::width; ++i) a.v[i] = a.v[i] > b.v[i] ? a.v[i] : b.v[i];
  return a;
}
/// `a < b ? a : b` lane by lane, as `std::min(b, a)`: `b` where either is NaN.
inline vec min(vec a, vec b) noexcept {
  for (int i = 0; i < vec::width; ++i) a.v[i] = a.v[i] < b.v[i] ? a.v[i] : b.v[i];
  return a;
}
/// `2^n` lane by lane for integers `n` in `[-126, 127]`, as `scalar_lanes::pow2`.
inline vec pow2(vec n) noexcept {
  for (float& e : n.v) e = scalar_lanes::pow2(e);
  return n;
}
/// `a / b` lane by lane.
inline vec div(vec a, vec b) noexcept {
  for (int i = 0; i < vec::width; ++i) a.v[i] /= b.v[i];
  return a;
}
/// Lane `i` gets lane `i / Group * Group + J` of `x`: element `J` of each group of `Group`
/// consecutive lanes, spread over its group. One in-register permute on AVX2 and AVX-512.
///
/// \tparam Group  lanes per group: a power of two that divides `width`
/// \tparam J      the element of each group to spread, `0 <= J < Group`
template <int Group, int J>
inline vec spread(vec x) noexcept {
  static_assert(vec::width % Group == 0 && J < Group);
  vec r;
  for (int i = 0; i < vec::width; ++i) r.v[i] = x.v[i / Group * Group + J];
  return r;
}
/// The `Chunk` floats at `p` repeated over the vector: lane `i` gets `p[i % Chunk]`. One load
/// on AVX2 and AVX-512, no shuffle.
///
/// \tparam Chunk  a power of two below `width`
template <int Chunk>
inline vec broadcast(const float* p) noexcept {
  static_assert(vec::width % Chunk == 0 && Chunk < vec::width);
  vec r;
  for (int i = 0; i < vec::width; ++i) r.v[i] = p[i % Chunk];
  return r;
}
/// The lanes of `x`, read as `Rows` rows of `Cols`, transposed: lane `c * Rows + r` gets lane
/// `r * Cols + c`. One in-register permute on AVX2 and AVX-512 (none when `Rows` or `Cols` is 1).
template <int Rows, int Cols>
inline vec transpose(vec x) noexcept {
  static_assert(Rows * Cols == vec::width);
  vec r;
  for (int i = 0; i < vec::width; ++i) r.v[i] = x.v[transposed_lane<Rows, Cols>(i)];
  return r;
}

#endif

/// Loads `n` (`0 <= n <= width`) elements of any element type, widened to f32, zeros above.
/// Uses the set's f16 conversion instructions for a full f16 vector where it has them
/// (AVX-512, or AVX2 with F16C); converts element by element otherwise.
///
/// \tparam T  the element type at `p`: `float` or `ipu::f16`
template <class T>
inline vec load_widened(const T* p, int n) noexcept {
  if constexpr (std::same_as<T, float>) {
    return n == vec::width ? load(p) : load(p, n);
  } else {
    if constexpr (requires { load(p); }) {
      if (n == vec::width) return load(p);
    }
    float tmp[vec::width] = {};
    for (int i = 0; i < n; ++i) tmp[i] = static_cast<float>(p[i]);
    return load(tmp);
  }
}

/// Stores the first `n` lanes of `x` (`0 <= n <= width`) rounded to `T` (to nearest even), at
/// `p`; writes nothing past `p[n - 1]`.
///
/// \tparam T  the element type at `p`: `float` or `ipu::f16`
template <class T>
inline void store_rounded(T* p, vec x, int n) noexcept {
  if constexpr (std::same_as<T, float>) {
    if (n == vec::width) {
      store(p, x);
    } else {
      store(p, x, n);
    }
  } else {
    if constexpr (requires { store(p, x); }) {
      if (n == vec::width) return store(p, x);
    }
    float tmp[vec::width];
    store(tmp, x);
    for (int i = 0; i < n; ++i) p[i] = static_cast<T>(tmp[i]);
  }
}

/// Lanes of a vector that a run of `rest` remaining elements fills: 0 to the vector's width.
inline int lanes_from(std::int64_t rest) noexcept {
  return static_cast<int>(rest < 0 ? 0 : rest < vec::width ? rest : vec::width);
}

/// `x` rounded to `T` and widened back: what storing it as `T` and reading it again gives.
template <class T>
inline vec rounded(vec x) noexcept {
  if constexpr (std::same_as<T, float>) {
    return x;
  } else {
    T tmp[vec::width];
    store_rounded(tmp, x, vec::width);
    return load_widened(tmp, vec::width);
  }
}

/// The lane operations of a vector, lane by lane with `scalar_lanes`' results: a function
/// written over lanes (`kernels::exp<L>`, `ops::silu::of<L>`) runs on vectors with them.
struct lanes {
  using value = vec;  ///< `width` lanes
  /// Every lane `c`.
  static vec splat(float c) noexcept { return simd::splat(c); }
  /// `a + b`.
  static vec add(vec a, vec b) noexcept { return simd::add(a, b); }
  /// `a - b`.
  static vec sub(vec a, vec b) noexcept { return simd::sub(a, b); }
  /// `a * b`.
  static vec mul(vec a, vec b) noexcept { return simd::mul(a, b); }
  /// `a / b`.
  static vec div(vec a, vec b) noexcept { return simd::div(a, b); }
  /// `a * b + c` as `kernels::madd`.
  static vec madd(vec a, vec b, vec c) noexcept { return simd::madd(a, b, c); }
  /// `a > b ? a : b`, as `scalar_lanes::max`.
  static vec max(vec a, vec b) noexcept { return simd::max(a, b); }
  /// `a < b ? a : b`, as `scalar_lanes::min`.
  static vec min(vec a, vec b) noexcept { return simd::min(a, b); }
  /// `a > b ? x : y` (`y` where either of `a` and `b` is NaN).
  static vec where_greater(vec a, vec b, vec x, vec y) noexcept { return simd::where_greater(a, b, x, y); }
  /// `2^n` for integers `n` in `[-126, 127]`, as `scalar_lanes::pow2`.
  static vec pow2(vec n) noexcept { return simd::pow2(n); }
};

}  // namespace simd

namespace detail {

/// `f(std::integral_constant<int, I>{})` for `I` in `[0, N)`, unrolled: register tiles stay in
/// registers only when every index into them is a constant. Always inlined, as its fold: clang
/// otherwise leaves a large tile's fold as a call, with the accumulators in memory.
template <int N, class F>
[[gnu::always_inline]] inline void unroll(F&& f) {
  [&]<int... I>(std::integer_sequence<int, I...>) __attribute__((always_inline)) {
    (f(std::integral_constant<int, I>{}), ...);
  }(std::make_integer_sequence<int, N>{});
}

/// `f(std::integral_constant<int, n>{})` for a run-time `n` in `[1, Max]`: a partial tile's
/// positions, or the vectors a pooling window has left.
template <int Max, class F>
inline void with_count(int n, F&& f) {
  [&]<int... I>(std::integer_sequence<int, I...>) {
    (void)((n == I + 1 ? (f(std::integral_constant<int, I + 1>{}), true) : false) || ...);
  }(std::make_integer_sequence<int, Max>{});
}

}  // namespace detail
}  // namespace IPU_SIMD_NAMESPACE
}  // namespace ipu::kernels
