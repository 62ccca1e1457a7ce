#pragma once
/// \file
/// PopLibs' linear tile mapping (`poputil::calcLinearTileMapping`), reproduced exactly: a
/// tensor flattened to `n` elements is cut into grains of one vector (`vector_bytes / element
/// bytes` elements); each tile holds at least `min_bytes_per_tile` (128) bytes when the tensor
/// has that many (the last tile up to a grain less, as the tensor may end inside a grain); the
/// grains are split into `parts` contiguous parts of `floor` or `ceil(grains / parts)` grains,
/// part `p` covering grains `[p * grains / parts, (p + 1) * grains / parts)`, mapped to
/// ascending tiles.
///
/// Every query is O(1), so per-tile accounting never materialises the element intervals.

#include <ipu/core/arith.hpp>
#include <ipu/target/chip.hpp>

#include <algorithm>
#include <cstdint>

namespace ipu {

/// Where the elements of one linearly mapped tensor live.
struct linear_mapping {
  std::int64_t elements = 0;    ///< elements of the tensor
  std::int64_t grain = 1;       ///< elements per grain
  std::int64_t grains = 0;      ///< ceil(elements / grain)
  std::int64_t parts = 0;       ///< number of tiles that hold elements
  int first_tile = 0;           ///< the tile of part 0; part p is on tile first_tile + p

  /// First element of part `p`.
  constexpr std::int64_t begin(std::int64_t p) const noexcept {
    return std::min(elements, p * grains / parts * grain);
  }
  /// One past the last element of part `p`.
  constexpr std::int64_t end(std::int64_t p) const noexcept {
    return std::min(elements, (p + 1) * grains / parts * grain);
  }
  /// Elements held by `tile` (zero for tiles outside the mapping).
  constexpr std::int64_t elements_on(int tile) const noexcept {
    const std::int64_t p = tile - first_tile;
    return p < 0 || p >= parts ? 0 : end(p) - begin(p);
  }
  /// Most elements held by any one tile.
  constexpr std::int64_t max_elements_per_tile() const noexcept {
    if (parts == 0) return 0;
    // The last part always has ceil(grains / parts) grains but may end in a partial grain;
    // another part has that many too unless exactly one part is large (grains % parts == 1).
    const std::int64_t last = end(parts - 1) - begin(parts - 1);
    if (parts == 1) return last;
    const std::int64_t q = grains / parts, r = grains % parts;
    return std::max(last, (r >= 2 ? q + 1 : q) * grain);
  }
  /// The tile holding element `i` (`0 <= i < elements`).
  constexpr int tile_of(std::int64_t i) const noexcept {
    const std::int64_t g = i / grain;  // part p holds grain g iff p*G/P <= g < (p+1)*G/P
    std::int64_t p = ((g + 1) * parts - 1) / grains;
    return first_tile + static_cast<int>(p);
  }
  /// Equal when every field is equal (then the same elements live on the same tiles).
  constexpr bool operator==(const linear_mapping&) const = default;
};

/// The linear mapping of `elements` elements of `element_bytes` bytes over the tiles of `chip`,
/// starting at `first_tile`, with at least `min_bytes_per_tile` bytes per tile.
constexpr linear_mapping map_linearly(std::int64_t elements, std::int64_t element_bytes, const chip_spec& chip,
                                      int first_tile = 0, std::int64_t min_bytes_per_tile = 128) noexcept {
  linear_mapping m;
  m.elements = elements;
  m.first_tile = first_tile;
  m.grain = chip.grain(element_bytes);
  if (elements <= 0) return m;
  m.grains = detail::div_up(elements, m.grain);
  const std::int64_t tiles = std::max(1, chip.tiles - first_tile);
  std::int64_t max_grains_per_part = detail::div_up(m.grains, tiles);
  const std::int64_t min_elements = detail::div_up(min_bytes_per_tile, element_bytes);
  if (min_elements > 0) {
    const std::int64_t min_grains = detail::div_up(min_elements, m.grain);
    const std::int64_t max_parts = std::max<std::int64_t>(1, m.grains / min_grains);
    max_grains_per_part = std::max(max_grains_per_part, detail::div_up(m.grains, max_parts));
  }
  m.parts = detail::div_up(m.grains, max_grains_per_part);
  return m;
}

}  // namespace ipu
