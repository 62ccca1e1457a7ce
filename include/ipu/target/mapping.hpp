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
///
/// The elements may be cut into `segments` equal segments, each mapped linearly by the rule
/// above over its own tiles: segment `s` over the `segment_parts()` tiles after segment `s - 1`'s.
/// A conv maps its output channel blocks so (`map_units`), as PopLibs gives each part of a
/// parallel split of the output channels its own tiles (`linearizeTileIndices` in
/// lib/poplin/Convolution.cpp, graphcore/poplibs 7eac0f26: `tile = tile * outChanSplit + oc`):
/// no tile then computes outputs of two blocks. With one segment (the default) the mapping is
/// PopLibs' linear mapping of the whole tensor.
struct linear_mapping {
  std::int64_t elements = 0;    ///< elements of the tensor
  std::int64_t grain = 1;       ///< elements per grain
  std::int64_t grains = 0;      ///< ceil(elements of one segment / grain)
  std::int64_t parts = 0;       ///< number of tiles that hold elements, over all segments
  int first_tile = 0;           ///< the tile of part 0; part p is on tile first_tile + p
  std::int64_t segments = 1;    ///< equal segments, each mapped over its own tiles

  /// Elements of one segment.
  constexpr std::int64_t segment_elements() const noexcept { return elements / segments; }
  /// Tiles holding elements of one segment.
  constexpr std::int64_t segment_parts() const noexcept { return parts / segments; }
  /// First element of part `p`.
  constexpr std::int64_t begin(std::int64_t p) const noexcept { return offset_in_segment(p, 0); }
  /// One past the last element of part `p`.
  constexpr std::int64_t end(std::int64_t p) const noexcept { return offset_in_segment(p, 1); }
  /// Elements held by part `p`: `end(p) - begin(p)`, in one call. (This and the queries below
  /// write their arithmetic out: the plan runs them per part and per candidate split, and the
  /// constant evaluator pays for each call; docs/contributing.md.)
  constexpr std::int64_t part_elements(std::int64_t p) const noexcept {
    const std::int64_t se = elements / segments, sp = parts / segments, k = p % sp;
    const std::int64_t first = k * grains / sp * grain, last = (k + 1) * grains / sp * grain;
    return (last < se ? last : se) - (first < se ? first : se);
  }
  /// Elements held by `tile` (zero for tiles outside the mapping).
  constexpr std::int64_t elements_on(int tile) const noexcept {
    const std::int64_t p = tile - first_tile;
    return p < 0 || p >= parts ? 0 : part_elements(p);
  }
  /// Most elements held by any one tile.
  constexpr std::int64_t max_elements_per_tile() const noexcept {
    if (parts == 0) return 0;
    // Every segment is mapped alike. Its last part always has ceil(grains / parts) grains but
    // may end in a partial grain; another part has that many too unless exactly one part is
    // large (grains % parts == 1).
    const std::int64_t sp = parts / segments;
    const std::int64_t last = part_elements(sp - 1);
    if (sp == 1) return last;
    const std::int64_t q = grains / sp, r = grains % sp, other = (r >= 2 ? q + 1 : q) * grain;
    return last > other ? last : other;
  }
  /// The tile holding element `i` (`0 <= i < elements`).
  constexpr int tile_of(std::int64_t i) const noexcept {
    const std::int64_t se = segment_elements(), sp = segment_parts();
    const std::int64_t g = i % se / grain;  // part p holds grain g iff p*G/P <= g < (p+1)*G/P
    const std::int64_t p = ((g + 1) * sp - 1) / grains;
    return first_tile + static_cast<int>(i / se * sp + p);
  }
  /// Equal when every field is equal (then the same elements live on the same tiles).
  constexpr bool operator==(const linear_mapping&) const = default;

 private:
  /// `begin(p)` (`next` 0) or `end(p)` (`next` 1).
  constexpr std::int64_t offset_in_segment(std::int64_t p, std::int64_t next) const noexcept {
    const std::int64_t se = elements / segments, sp = parts / segments, at = (p % sp + next) * grains / sp * grain;
    return p / sp * se + (at < se ? at : se);
  }
};

/// The linear mapping of `elements` elements of `element_bytes` bytes over the tiles of `chip`,
/// starting at `first_tile`, with at least `min_bytes_per_tile` bytes per tile; in `segments`
/// equal segments (which must divide `elements` and be at most the tiles), each mapped over
/// an equal share of the tiles.
constexpr linear_mapping map_linearly(std::int64_t elements, std::int64_t element_bytes, const chip_spec& chip,
                                      int first_tile = 0, std::int64_t min_bytes_per_tile = 128,
                                      std::int64_t segments = 1) noexcept {
  linear_mapping m;
  m.elements = elements;
  m.first_tile = first_tile;
  m.grain = chip.grain(element_bytes);
  m.segments = segments;
  if (elements <= 0) return m;
  // The rule, with each ceil(a / b) written out as (a + b - 1) / b: every candidate split of
  // every layer maps its units here, and the constant evaluator pays for each call.
  const std::int64_t segment = elements / segments;
  m.grains = (segment + m.grain - 1) / m.grain;
  const std::int64_t share = (chip.tiles - first_tile) / segments, tiles = share > 1 ? share : 1;
  std::int64_t max_grains_per_part = (m.grains + tiles - 1) / tiles;
  const std::int64_t min_elements = (min_bytes_per_tile + element_bytes - 1) / element_bytes;
  if (min_elements > 0) {
    const std::int64_t min_grains = (min_elements + m.grain - 1) / m.grain;
    const std::int64_t most_parts = m.grains / min_grains, max_parts = most_parts > 1 ? most_parts : 1;
    const std::int64_t fewest = (m.grains + max_parts - 1) / max_parts;
    if (fewest > max_grains_per_part) max_grains_per_part = fewest;
  }
  m.parts = (m.grains + max_grains_per_part - 1) / max_grains_per_part * segments;
  return m;
}

}  // namespace ipu
