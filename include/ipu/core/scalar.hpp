#pragma once
/// \file
/// `ipu::scalar` (also `nn::scalar`): a real number as a template argument.

#include <cstdint>

namespace ipu {

/// A real hyper-parameter as a template argument (`nn::leaky_relu<0.2>`, `nn::dropout<0.1>`,
/// an optimiser's `epsilon = 1e-8`): C++20 takes class types as template arguments, and this
/// one holds the double it is given exactly, as an integer times a power of two, so that
/// compilers without floating-point template arguments (clang 16) take it too.
struct scalar {
  std::int64_t significand = 0;  ///< the value is `significand * 2^exponent`
  int exponent = 0;              ///< the smallest exponent (0 or below) that makes `significand` whole

  /// Zero.
  constexpr scalar() noexcept = default;
  /// `v`, exactly (a finite double below 2^62 in magnitude).
  consteval scalar(double v) noexcept {  // NOLINT(google-explicit-constructor): written as a bare number
    while (v != static_cast<double>(static_cast<std::int64_t>(v))) {
      v *= 2;  // exact: doubling a double changes only its exponent
      --exponent;
    }
    significand = static_cast<std::int64_t>(v);
  }
  /// The value, in double.
  constexpr double value() const noexcept {
    double v = static_cast<double>(significand);
    for (int e = exponent; e < 0; ++e) v *= 0.5;  // exact, as the doublings were
    return v;
  }

  /// Equal when the values are (each value has one representation).
  constexpr bool operator==(const scalar&) const = default;
};

namespace nn {
using ipu::scalar;
}  // namespace nn

}  // namespace ipu
