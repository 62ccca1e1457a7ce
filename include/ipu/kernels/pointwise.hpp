#pragma once
/// \file
/// Element-wise kernels on runs of elements: ReLU, the residual add, and batch norm folded
/// into a per-channel scale and shift. Arithmetic in f32, results rounded to `T`.

#include <ipu/kernels/simd.hpp>
#include <ipu/kernels/views.hpp>

#include <cmath>
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

/// Batch norm folded for inference: `y[i] = madd(x[i], scale[i], shift[i])` for `n` consecutive
/// channels (`scale` and `shift` point at the first one).
template <class T, class W>
void affine(const T* x, T* y, std::int64_t n, const W* scale, const W* shift) noexcept {
  for (std::int64_t i = 0; i < n; ++i) y[i] = static_cast<T>(madd(widen(x[i]), widen(scale[i]), widen(shift[i])));
}

/// One channel's batch norm folded for inference: the scale and shift `affine` applies, as
/// `fold_batch_norm` computes them. The defaults are the identity.
struct folded_norm {
  /// \var scale
  /// The factor: `scale / sqrt(variance + epsilon)` of the batch norm's parameters.
  /// \var shift
  /// The term added after scaling: `shift - mean * scale'`, with `scale'` the factor above.
  double scale = 1, shift = 0;
};
/// Folds batch-norm statistics into the scale and shift `affine` applies:
/// `scale' = scale / sqrt(variance + epsilon)`, `shift' = shift - mean * scale'`, in double
/// precision, for one channel. `scale` and `shift` are the learned gamma and beta, `mean` and
/// `variance` the statistics the batch norm normalises with.
inline folded_norm fold_batch_norm(double scale, double shift, double mean, double variance, double epsilon) {
  const double s = scale / std::sqrt(variance + epsilon);
  return {s, shift - mean * s};
}

}  // namespace ipu::kernels
