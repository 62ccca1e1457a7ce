#pragma once
/// \file
/// Planning options, as a structural type usable as a template argument:
/// `ipu::plan_v<G, ipu::mk2, ipu::options{.available_memory_proportion = {3, 10}}>`.

#include <ipu/core/dtype.hpp>

#include <cstdint>

namespace ipu {

/// A proportion `num / den` (clang 16 has no floating-point template arguments).
struct ratio {
  std::int64_t num = 0;
  std::int64_t den = 1;

  /// `bytes * num / den`, rounded down.
  constexpr std::int64_t of(std::int64_t bytes) const noexcept { return bytes * num / den; }
  /// True for a proportion in (0, 1].
  constexpr bool valid_proportion() const noexcept { return den > 0 && num > 0 && num <= den; }
  constexpr bool operator==(const ratio&) const = default;
};

/// Options that change a plan.
struct options {
  /// Per-tile bound on the temporary memory of convolutions and matmuls, as a proportion of
  /// `bytes_per_tile` (PopLibs' `availableMemoryProportion`, default 0.6).
  ratio available_memory_proportion{3, 5};
  /// Type of the partial sums of convolutions and matmuls (f32 by default, as on the IPU).
  dtype partials = dtype::f32;

  constexpr bool operator==(const options&) const = default;
};

}  // namespace ipu
