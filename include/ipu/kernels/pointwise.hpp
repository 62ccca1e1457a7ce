#pragma once
/// \file
/// Element-wise kernels on runs of elements: ReLU, the residual add, the sum and product of a
/// join's inputs, and batch norm folded
/// into a per-channel scale and shift (`ops/batch_norm.hpp` folds it). Arithmetic in f32,
/// results rounded to `T`. And `add_scaled`, the multiply-add of the backward passes, and
/// ReLU's backward.

#include <ipu/kernels/simd.hpp>
#include <ipu/kernels/views.hpp>

#include <cstdint>

namespace ipu::kernels {

/// `y[i] = max(x[i], 0)` for `i < n` (`x` and `y` may be the same).
template <class T>
void relu(const T* x, T* y, std::int64_t n) noexcept {
  for (std::int64_t i = 0; i < n; ++i) y[i] = widen(x[i]) > 0.0f ? x[i] : T(0.0f);
}

/// `y[i] = a[i] + b[i]` for `i < n`.
template <class T>
void add(const T* a, const T* b, T* y, std::int64_t n) noexcept {
  for (std::int64_t i = 0; i < n; ++i) y[i] = static_cast<T>(widen(a[i]) + widen(b[i]));
}

/// `y[i]` = the sum of `x[0][i], ..., x[count - 1][i]` for `i < n`, added in f32 in that order
/// and rounded once (for two inputs, the same bits as `add`).
template <class T>
void sum(const T* const* x, int count, T* y, std::int64_t n) noexcept {
  for (std::int64_t i = 0; i < n; ++i) {
    float s = widen(x[0][i]);
    for (int k = 1; k < count; ++k) s += widen(x[k][i]);
    y[i] = static_cast<T>(s);
  }
}

/// `y[i]` = the product of `x[0][i], ..., x[count - 1][i]` for `i < n`, multiplied in f32 in
/// that order and rounded once.
template <class T>
void product(const T* const* x, int count, T* y, std::int64_t n) noexcept {
  for (std::int64_t i = 0; i < n; ++i) {
    float s = widen(x[0][i]);
    for (int k = 1; k < count; ++k) s *= widen(x[k][i]);
    y[i] = static_cast<T>(s);
  }
}

/// Batch norm folded for inference (`ops::batch_norm::fold`): `y[i] = madd(x[i], scale[i],
/// shift[i])` for `n` consecutive channels (`scale` and `shift` point at the first one).
template <class T, class W>
void affine(const T* x, T* y, std::int64_t n, const W* scale, const W* shift) noexcept {
  for (std::int64_t i = 0; i < n; ++i) y[i] = static_cast<T>(madd(widen(x[i]), widen(scale[i]), widen(shift[i])));
}

/// `y[i] = madd(a, x[i], y[i])` for `i < n`, a vector at a time: the same bits as the scalar
/// loop, whatever the instruction set. With `assign`, `y` is not read: its values are taken
/// to be +0 (the bits of adding to a cleared `y`).
inline void add_scaled(float* y, float a, const float* x, std::int64_t n, bool assign = false) noexcept {
  using simd::vec;
  const vec va = simd::splat(a);
  std::int64_t i = 0;
  for (; i + vec::width <= n; i += vec::width)
    simd::store(y + i, simd::madd(va, simd::load(x + i), assign ? simd::zero() : simd::load(y + i)));
  if (i < n) {
    const int rest = static_cast<int>(n - i);
    simd::store(y + i, simd::madd(va, simd::load(x + i, rest), assign ? simd::zero() : simd::load(y + i, rest)), rest);
  }
}

/// ReLU's backward: `dx[i] += x[i] > 0 ? dy[i] : 0` for `i < n`, a vector at a time (`x` the
/// forward input). With `assign`, `dx` is not read, as in `add_scaled`.
template <class T>
void relu_gradient(const T* x, const float* dy, float* dx, std::int64_t n, bool assign = false) noexcept {
  using simd::vec;
  for (std::int64_t i = 0; i < n; i += vec::width) {
    const int lanes = n - i < vec::width ? static_cast<int>(n - i) : vec::width;
    const vec g = simd::where_positive(simd::load_widened(x + i, lanes), simd::load(dy + i, lanes));
    simd::store(dx + i, simd::add(assign ? simd::zero() : simd::load(dx + i, lanes), g), lanes);
  }
}

}  // namespace ipu::kernels
