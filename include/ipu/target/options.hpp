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
/// formula for them; each default is a figure measured on, or counted in, a public source,
/// cited beside it (docs/memory-planning.md, "Fixed costs"). Override them with the numbers of a
/// profile of your SDK (PopVision's "Vertex Code", "Vertex Instances", "Control Code",
/// "Internal Exchange Code") to make the plan match it. All are always-live.
struct fixed_costs {
  /// Every tile: stack, program skeleton, host exchange code. The per-tile bytes, gaps
  /// excluded, of a near-empty program (3 additions, 4 compute sets) in the Poplar summary report
  /// of Graphcore's TensorFlow guide: 5,355,604 bytes over a Mk1's 1,216 tiles, of which 3,168
  /// per tile are stack (graphcore/tensorflow 11afbe6c,
  /// tensorflow/compiler/plugin/poplar/docs/logging.rst, "Reading the Poplar textual summary report").
  std::int64_t runtime_bytes = 4'404;
  /// Every tile, per distinct op kind placed on the IPU: the instructions (4 bytes each, as
  /// for `exchange_code_bytes`) of PopLibs' assembly convolution codelets, counted in
  /// graphcore/poplibs 7eac0f26 lib/poplin/codelets/asm: ConvPartialnx1's supervisor and half
  /// worker, 218 + 89, and
  /// ConvPartial1x1Out's, 226 + 44: 2,308 bytes for a conv, whose two codelets are the largest
  /// an op loads (pooling's, lib/popnn/codelets/asm/Pooling.S: 210 instructions, 840 bytes).
  std::int64_t codelet_bytes = 2'308;
  /// Per vertex; a working tile runs one per compute set of a step, as PopLibs creates one
  /// supervisor vertex per tile for a convolution, with a worklist per worker
  /// (lib/poplin/ConvVertices.cpp, 7eac0f26: `worklists(contextsPerVertex * numSubKernelPositions)`),
  /// and one multi-vertex for an element-wise op. The state of ConvPartialnx1, the largest:
  /// 50 bytes (lib/poplin/codelets/asm/conv_partial_nx1_supervisor.S, the DeltaNElements layout).
  std::int64_t vertex_state_bytes = 50;
  /// A conv's tile, per worker and kernel tap: one worklist entry of three 16-bit fields
  /// (`AMPWorkListEntry` in lib/poplin/ConvVertices.cpp; `PARTITION_ELEM_BYTES` 2 in
  /// lib/poplin/codelets/asm/conv_hzmac_common.h.S).
  std::int64_t worklist_entry_bytes = 6;
  /// Every tile, per step of its IPU: program and sync entries, 8 instructions of 4 bytes. No
  /// source gives control code per compute set; the near-empty program above has 700 bytes
  /// per tile for 4 compute sets and the program around them.
  std::int64_t control_bytes = 32;
  /// Per working tile and compute set: exchange code, 16 instructions of 4 bytes, as PopLibs'
  /// planners charge exchange code (`exchangeCodeBytes`: 4 bytes per exchange instruction,
  /// lib/popops/DynamicSlice.cpp, 7eac0f26).
  std::int64_t exchange_code_bytes = 64;

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
