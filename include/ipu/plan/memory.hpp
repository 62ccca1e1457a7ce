#pragma once
/// \file
/// Bytes by memory category, the plan of one IPU, and what makes a graph unplannable.

#include <cstdint>
#include <string_view>

namespace ipu {

/// The memory categories of a tile. Weights and code are always live; activations,
/// temporaries and exchange buffers are not, and share addresses when their lifetimes don't
/// overlap. The enumerators are in this order, 0 to 4, so a category can index an array of
/// `memory_category_count` entries.
enum class memory_category : std::uint8_t { weights, code, activations, temporaries, exchange };

/// Number of enumerators in `memory_category`.
inline constexpr int memory_category_count = 5;

/// `"weights"`, `"code"`, `"activations"`, `"temporaries"` or `"exchange"`.
constexpr std::string_view name_of(memory_category c) noexcept {
  constexpr std::string_view names[memory_category_count] = {"weights", "code", "activations", "temporaries",
                                                             "exchange"};
  return names[static_cast<int>(c)];
}

/// Bytes of one tile (or one IPU), by category.
struct memory_bytes {
  std::int64_t weights = 0;      ///< weight tensors of the nodes on the IPU (batch norm folded to scale and shift)
  std::int64_t code = 0;         ///< code, vertex state and control tables
  std::int64_t activations = 0;  ///< node outputs, and copies of outputs from other IPUs, live at the step
  std::int64_t temporaries = 0;  ///< partial sums of conv and dense layers
  std::int64_t exchange = 0;     ///< a step's received windows, weights and operands, and its send buffer

  /// Bytes that stay for the whole program: `weights + code`.
  constexpr std::int64_t always_live() const noexcept { return weights + code; }
  /// Bytes that come and go with the steps: `activations + temporaries + exchange`.
  constexpr std::int64_t not_always_live() const noexcept { return activations + temporaries + exchange; }
  /// Bytes of all five categories together.
  constexpr std::int64_t total() const noexcept { return always_live() + not_always_live(); }
  /// Bytes of category \p c.
  constexpr std::int64_t operator[](memory_category c) const noexcept {
    switch (c) {
      case memory_category::weights: return weights;
      case memory_category::code: return code;
      case memory_category::activations: return activations;
      case memory_category::temporaries: return temporaries;
      default: return exchange;
    }
  }
  /// The category with the most bytes (the first one on a tie).
  constexpr memory_category largest() const noexcept {
    memory_category best = memory_category::weights;
    for (int c = 1; c < memory_category_count; ++c)
      if ((*this)[memory_category{static_cast<std::uint8_t>(c)}] > (*this)[best])
        best = memory_category{static_cast<std::uint8_t>(c)};
    return best;
  }
  /// Adds the bytes of \p o category by category; returns `*this`.
  constexpr memory_bytes& operator+=(const memory_bytes& o) noexcept {
    weights += o.weights, code += o.code, activations += o.activations;
    temporaries += o.temporaries, exchange += o.exchange;
    return *this;
  }
  /// Equal when every category holds the same bytes.
  constexpr bool operator==(const memory_bytes&) const = default;
};

/// The plan of one IPU.
struct ipu_memory {
  std::int64_t capacity = 0;     ///< bytes per tile
  /// The highest byte the plan's allocation reaches on any tile: what must fit. At least the
  /// most bytes in use on any tile at any step; the rest is alignment and gaps between buffers.
  std::int64_t peak = 0;
  int peak_tile = -1;            ///< the tile of the peak (lowest of those reaching it first)
  /// Of the steps of this IPU that the buffer reaching the peak lives through, the one with the
  /// most bytes in use on the peak tile (the earliest on a tie); -1 if the peak is always-live
  /// memory.
  int peak_step = -1;
  memory_bytes at_peak{};        ///< the peak tile's bytes in use at the peak step, by category
  /// Summed over the IPU's tiles: weights and code; for the not-always-live categories, the
  /// largest sum over the IPU's steps.
  memory_bytes totals{};
  std::int64_t max_always_live = 0;  ///< the largest always-live bytes of a tile
  int nodes = 0;                 ///< nodes placed on the IPU
  std::int64_t cycles = 0;       ///< estimated cycles of the IPU's steps
  bool fits = true;              ///< `peak <= capacity`
  /// Bytes of the peak that no buffer uses at the peak step: alignment and gaps.
  constexpr std::int64_t unused_at_peak() const noexcept { return peak - at_peak.total(); }
};

/// What makes a graph unplannable on a target: `none` (it is plannable), `ipu_outside_system`
/// (a node is placed with `on<I>` on an IPU the target does not have), `bad_memory_proportion`
/// (`options::available_memory_proportion` is not in (0, 1]), `tile_bytes_not_aligned` (the
/// chip's `bytes_per_tile` is not a multiple of `buffer_alignment`) or `bad_io_tiles`
/// (`options::io_tiles` is not in `[0, tiles)`), `training_on_the_host` (a graph trained with
/// `ipu::training` has a block on the host).
enum class plan_error_kind : std::uint8_t {
  none, ipu_outside_system, bad_memory_proportion, tile_bytes_not_aligned, bad_io_tiles, training_on_the_host
};

/// Why a graph cannot be planned on a target, with the numbers its compile-time diagnostic
/// prints (`diagnostics.hpp`).
struct plan_error {
  plan_error_kind kind = plan_error_kind::none;  ///< the error; `none` when the plan is valid
  int node = -1;   ///< the node at fault; -1 when no node is (`bad_memory_proportion`)
  /// `x`: the node's IPU index (`ipu_outside_system`), the ratio's numerator
  /// (`bad_memory_proportion`), the bytes per tile (`tile_bytes_not_aligned`) or the I/O tiles
  /// (`bad_io_tiles`), or -1, the host (`training_on_the_host`).
  std::int64_t x = 0, y = 0;  ///< `y`: the target's number of IPUs, the ratio's denominator, the alignment, or the tiles per IPU
};

}  // namespace ipu
