#pragma once
/// \file
/// `ipu::scalar` (also `nn::scalar`): a real number as a template argument.

#include <cstdint>

namespace ipu {

/// A real hyper-parameter as a template argument (`nn::leaky_relu<0.2>`, `nn::dropout<0.1>`):
/// C++20 takes class types as template arguments, and this one holds its value in millionths,
/// so that compilers without floating-point template arguments (clang 16) take it too.
struct scalar {
  std::int64_t millionths = 0;  ///< the value times 10^6, rounded to the nearest integer

  /// Zero.
  constexpr scalar() noexcept = default;
  /// `v` to the nearest millionth.
  consteval scalar(double v) noexcept  // NOLINT(google-explicit-constructor): written as a bare number
      : millionths(static_cast<std::int64_t>(v * 1e6 + (v < 0 ? -0.5 : 0.5))) {}
  /// The value, in double.
  constexpr double value() const noexcept { return static_cast<double>(millionths) / 1e6; }

  /// Equal when the millionths are.
  constexpr bool operator==(const scalar&) const = default;
};

namespace nn {
using ipu::scalar;
}  // namespace nn

}  // namespace ipu
