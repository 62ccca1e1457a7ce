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

#include <cmath>
#include <concepts>
#include <cstdint>
#include <string_view>

#if defined(__AVX512F__) || defined(__AVX2__) || defined(__F16C__)
#include <immintrin.h>
#endif

#define IPU_SIMD_PORTABLE 0
#define IPU_SIMD_AVX2 2
#define IPU_SIMD_AVX512 3

#if defined(__AVX512F__)
#define IPU_SIMD_TARGET IPU_SIMD_AVX512
#elif defined(__AVX2__) && defined(__FMA__)
#define IPU_SIMD_TARGET IPU_SIMD_AVX2
#else
#define IPU_SIMD_TARGET IPU_SIMD_PORTABLE
#endif

#ifndef IPU_SIMD
#define IPU_SIMD IPU_SIMD_TARGET
#elif IPU_SIMD != IPU_SIMD_PORTABLE && IPU_SIMD != IPU_SIMD_AVX2 && IPU_SIMD != IPU_SIMD_AVX512
#error "ipu: IPU_SIMD must be IPU_SIMD_AVX512, IPU_SIMD_AVX2 or IPU_SIMD_PORTABLE"
#elif IPU_SIMD > IPU_SIMD_TARGET
#error "ipu: IPU_SIMD asks for instructions the target flags do not enable (see -march)"
#endif

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

#if IPU_SIMD == IPU_SIMD_AVX512
#define IPU_SIMD_NAMESPACE avx512
#elif IPU_SIMD == IPU_SIMD_AVX2
#define IPU_SIMD_NAMESPACE avx2
#else
#define IPU_SIMD_NAMESPACE portable
#endif

// The fast kernels live in an inline namespace named after the instruction set, so that
// translation units built for different ones (the kernel tests do) hold distinct functions.
inline namespace IPU_SIMD_NAMESPACE {
namespace simd {

/// The instruction set the kernels were compiled for.
enum class isa : std::uint8_t { portable, avx2, avx512 };

inline constexpr isa compiled_isa = IPU_SIMD == IPU_SIMD_AVX512 ? isa::avx512
                                    : IPU_SIMD == IPU_SIMD_AVX2  ? isa::avx2
                                                                 : isa::portable;

constexpr std::string_view name_of(isa i) noexcept {
  return i == isa::avx512 ? "avx512" : i == isa::avx2 ? "avx2" : "portable";
}

#if IPU_SIMD == IPU_SIMD_AVX512

/// A vector of `width` floats.
struct vec {
  static constexpr int width = 16;
  __m512 v;
};
// The zero-masked forms with every lane selected: GCC 12's unmasked forms start from
// `_mm512_undefined_ps()`, which -Wmaybe-uninitialized reports once inlined.
inline constexpr __mmask16 all = 0xFFFF;

inline vec zero() noexcept { return {_mm512_setzero_ps()}; }
inline vec splat(float x) noexcept { return {_mm512_set1_ps(x)}; }
inline vec load(const float* p) noexcept { return {_mm512_loadu_ps(p)}; }
/// The first `n` lanes from `p`, zeros above (`0 <= n <= width`).
inline vec load(const float* p, int n) noexcept {
  return {_mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << n) - 1), p)};
}
inline void store(float* p, vec x) noexcept { _mm512_storeu_ps(p, x.v); }
inline void store(float* p, vec x, int n) noexcept {
  _mm512_mask_storeu_ps(p, static_cast<__mmask16>((1u << n) - 1), x.v);
}
inline vec madd(vec a, vec b, vec c) noexcept { return {_mm512_fmadd_ps(a.v, b.v, c.v)}; }
inline vec add(vec a, vec b) noexcept { return {_mm512_add_ps(a.v, b.v)}; }
/// `x > 0 ? x : +0` lane by lane (NaN gives 0), as `kernels::relu`.
inline vec relu(vec x) noexcept { return {_mm512_maskz_max_ps(all, x.v, _mm512_setzero_ps())}; }
/// `a > b ? a : b` lane by lane, as `std::max(b, a)`.
inline vec max(vec a, vec b) noexcept { return {_mm512_maskz_max_ps(all, a.v, b.v)}; }
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

/// Stores `x` rounded to f16.
inline void store(f16* p, vec x) noexcept {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_maskz_cvtps_ph(all, x.v, _MM_FROUND_TO_NEAREST_INT));
}
inline vec load(const f16* p) noexcept {
  return {_mm512_maskz_cvtph_ps(all, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)))};
}

#elif IPU_SIMD == IPU_SIMD_AVX2

struct vec {
  static constexpr int width = 8;
  __m256 v;
};
namespace detail {
inline __m256i first_lanes(int n) noexcept {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_set_epi32(7, 6, 5, 4, 3, 2, 1, 0));
}
}  // namespace detail
inline vec zero() noexcept { return {_mm256_setzero_ps()}; }
inline vec splat(float x) noexcept { return {_mm256_set1_ps(x)}; }
inline vec load(const float* p) noexcept { return {_mm256_loadu_ps(p)}; }
inline vec load(const float* p, int n) noexcept { return {_mm256_maskload_ps(p, detail::first_lanes(n))}; }
inline void store(float* p, vec x) noexcept { _mm256_storeu_ps(p, x.v); }
inline void store(float* p, vec x, int n) noexcept { _mm256_maskstore_ps(p, detail::first_lanes(n), x.v); }
inline vec madd(vec a, vec b, vec c) noexcept { return {_mm256_fmadd_ps(a.v, b.v, c.v)}; }
inline vec add(vec a, vec b) noexcept { return {_mm256_add_ps(a.v, b.v)}; }
inline vec relu(vec x) noexcept { return {_mm256_max_ps(x.v, _mm256_setzero_ps())}; }
inline vec max(vec a, vec b) noexcept { return {_mm256_max_ps(a.v, b.v)}; }
inline vec div(vec a, vec b) noexcept { return {_mm256_div_ps(a.v, b.v)}; }

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

#if defined(__F16C__)
inline void store(f16* p, vec x) noexcept {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(x.v, _MM_FROUND_TO_NEAREST_INT));
}
inline vec load(const f16* p) noexcept { return {_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)))}; }
#endif

#else  // portable

struct vec {
  static constexpr int width = 4;
  float v[width];
};
inline vec zero() noexcept { return {}; }
inline vec splat(float x) noexcept { return {{x, x, x, x}}; }
inline vec load(const float* p) noexcept { return {{p[0], p[1], p[2], p[3]}}; }
inline vec load(const float* p, int n) noexcept {
  vec r{};
  for (int i = 0; i < n; ++i) r.v[i] = p[i];
  return r;
}
inline void store(float* p, vec x) noexcept {
  for (int i = 0; i < vec::width; ++i) p[i] = x.v[i];
}
inline void store(float* p, vec x, int n) noexcept {
  for (int i = 0; i < n; ++i) p[i] = x.v[i];
}
inline vec madd(vec a, vec b, vec c) noexcept {
  for (int i = 0; i < vec::width; ++i) c.v[i] = kernels::madd(a.v[i], b.v[i], c.v[i]);
  return c;
}
inline vec add(vec a, vec b) noexcept {
  for (int i = 0; i < vec::width; ++i) a.v[i] += b.v[i];
  return a;
}
inline vec relu(vec x) noexcept {
  for (float& e : x.v) e = e > 0.0f ? e : 0.0f;
  return x;
}
inline vec max(vec a, vec b) noexcept {
  for (int i = 0; i < vec::width; ++i) a.v[i] = a.v[i] > b.v[i] ? a.v[i] : b.v[i];
  return a;
}
inline vec div(vec a, vec b) noexcept {
  for (int i = 0; i < vec::width; ++i) a.v[i] /= b.v[i];
  return a;
}
template <int Group, int J>
inline vec spread(vec x) noexcept {
  static_assert(vec::width % Group == 0 && J < Group);
  vec r;
  for (int i = 0; i < vec::width; ++i) r.v[i] = x.v[i / Group * Group + J];
  return r;
}

#endif

/// Loads `n` (`0 <= n <= width`) elements of any element type, widened to f32, zeros above.
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

/// Stores the first `n` lanes of `x` rounded to `T`.
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

}  // namespace simd
}  // namespace IPU_SIMD_NAMESPACE
}  // namespace ipu::kernels
