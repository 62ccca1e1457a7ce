#pragma once
/// \file
/// Planning options, as a structural type usable as a template argument:
/// `ipu::plan_v<G, ipu::mk2, ipu::options{.available_memory_proportion = {3, 10}}>`.

#include <ipu/core/dtype.hpp>

#include <cstdint>

namespace ipu {

/// A proportion `num / den` (clang 16 has no floating-point template arguments).
struct ratio {
  std::int64_t num = 0;  ///< numerator
  std::int64_t den = 1;  ///< denominator; a valid proportion needs `den > 0`

  /// `bytes * num / den`, rounded down.
  constexpr std::int64_t of(std::int64_t bytes) const noexcept { return bytes * num / den; }
  /// True for a proportion in (0, 1].
  constexpr bool valid_proportion() const noexcept { return den > 0 && num > 0 && num <= den; }
  /// Equal when numerators and denominators are equal (`{1, 2} != {2, 4}`).
  constexpr bool operator==(const ratio&) const = default;
};

/// Per-tile fixed costs of a program: code, vertex state and control. Poplar publishes no
/// formula for these; the defaults are round figures of the right order for a Poplar program
/// (a few KiB of runtime, a few KiB per codelet, tens of bytes per vertex), not measurements.
/// Override them with the numbers of a real profile (`popvision` "always-live" code and vertex
/// state) to make the plan match a given SDK. All are always-live.
struct fixed_costs {
  std::int64_t runtime_bytes = 8'192;     ///< every tile: supervisor runtime and program skeleton
  std::int64_t codelet_bytes = 2'048;     ///< every tile, per distinct op kind placed on the IPU
  std::int64_t vertex_state_bytes = 32;   ///< per vertex; a working tile runs one vertex per worker
  std::int64_t control_bytes = 32;        ///< every tile, per step of its IPU: program and sync entries
  std::int64_t exchange_code_bytes = 64;  ///< per working tile and step: exchange code

  /// Equal when every cost is equal.
  constexpr bool operator==(const fixed_costs&) const = default;
};

/// The costs of the cycle model that Graphcore does not publish. The default is an assumption
/// of the right order (an IPU-wide sync is a hardware barrier over all tiles, a few hundred
/// cycles at most), not a measurement; override it with the "sync" cycles of a real profile.
struct cycle_costs {
  std::int64_t sync_cycles = 150;  ///< one IPU-wide sync between a compute and an exchange phase

  /// Equal when every cost is equal.
  constexpr bool operator==(const cycle_costs&) const = default;
};

/// Options that change a plan.
struct options {
  /// Per-tile bound on the transient memory (temporaries and exchange buffers) of conv and
  /// dense steps, as a proportion of `bytes_per_tile` (PopLibs' `availableMemoryProportion`,
  /// default 0.6). Must be in (0, 1]; otherwise planning is a compile error.
  ratio available_memory_proportion{3, 5};
  /// Type of the partial sums of convolutions and matmuls (f32 by default, as on the IPU).
  dtype partials = dtype::f32;
  /// Tiles of each IPU set aside for streaming data to and from the host, so that transfers
  /// overlap compute (PopTorch's `TensorLocations.numIOTiles`, the `--num-io-tiles` of
  /// Graphcore's examples); every tensor and step of the model is mapped over the other tiles,
  /// the first `tiles - io_tiles`. The I/O tiles hold the runtime's code only: the stream
  /// buffers on them are not modelled. Must be in `[0, tiles)`; otherwise planning is a
  /// compile error.
  int io_tiles = 0;
  /// The fixed-cost model: code, vertex state and control tables per tile.
  fixed_costs fixed{};
  /// The unpublished costs of the cycle model.
  cycle_costs cycles{};

  /// Equal when every option is equal.
  constexpr bool operator==(const options&) const = default;
};

}  // namespace ipu
