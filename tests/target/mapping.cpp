// The linear tile mapping against a transcription of PopLibs' splitRegions written here: it
// walks the elements region by region and builds each tile's intervals, as PopLibs does,
// instead of using the closed forms of ipu::linear_mapping.
#include <ipu/target/mapping.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

using std::int64_t;

namespace {
using interval = std::pair<int64_t, int64_t>;

// splitRegions(regions = {[0, n)}, grainSize, maxPartitions, minElementsPerPartition).
std::vector<std::vector<interval>> split_regions(int64_t n, int64_t grain, int64_t max_partitions,
                                                 int64_t min_elements) {
  std::vector<std::vector<interval>> out;
  if (n == 0) return out;
  auto udiv = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  const int64_t num_grains = udiv(n, grain);
  int64_t max_grains_per_partition = udiv(num_grains, max_partitions);
  if (min_elements != 0) {
    const int64_t min_grains = udiv(min_elements, grain);
    const int64_t max_vertices = std::max<int64_t>(1, num_grains / min_grains);
    max_grains_per_partition = std::max(max_grains_per_partition, udiv(num_grains, max_vertices));
  }
  const int64_t vertices = udiv(num_grains, max_grains_per_partition);
  out.resize(static_cast<std::size_t>(vertices));
  int64_t cursor = 0;
  for (int64_t v = 0; v < vertices; ++v) {
    const int64_t elem_begin = (v * num_grains) / vertices * grain;
    const int64_t elem_end = std::min(n, ((v + 1) * num_grains) / vertices * grain);
    REQUIRE(elem_begin == cursor);
    if (elem_end > elem_begin) out[static_cast<std::size_t>(v)].push_back({elem_begin, elem_end});
    cursor = elem_end;
  }
  REQUIRE(cursor == n);
  return out;
}

void check_against_reference(int64_t n, int64_t element_bytes, const ipu::chip_spec& chip) {
  CAPTURE(n, element_bytes, chip.tiles);
  const auto m = ipu::map_linearly(n, element_bytes, chip);
  const int64_t grain = chip.vector_bytes / element_bytes;
  const auto ref = split_regions(n, grain, chip.tiles, (128 + element_bytes - 1) / element_bytes);
  REQUIRE(m.parts == static_cast<int64_t>(ref.size()));
  REQUIRE(m.parts <= chip.tiles);
  int64_t most = 0;
  for (int t = 0; t < chip.tiles; ++t) {
    const std::size_t p = static_cast<std::size_t>(t);
    const int64_t expected = p < ref.size() && !ref[p].empty() ? ref[p][0].second - ref[p][0].first : 0;
    REQUIRE(m.elements_on(t) == expected);
    most = std::max(most, expected);
    if (expected > 0) {
      REQUIRE(m.begin(t) == ref[p][0].first);
      REQUIRE(m.part_elements(t) == expected);
      REQUIRE(m.tile_of(ref[p][0].first) == t);
      REQUIRE(m.tile_of(ref[p][0].second - 1) == t);
    }
  }
  REQUIRE(m.max_elements_per_tile() == most);
}
}  // namespace

TEST_CASE("linear mapping matches PopLibs' splitRegions on Mk2 and Mk1", "[target][mapping]") {
  for (const auto& chip : {ipu::mk2::chip, ipu::mk1::chip, ipu::with_tiles(ipu::mk2::chip, 16)})
    for (int64_t bytes : {2, 4})
      for (int64_t n : {int64_t{1}, int64_t{3}, int64_t{63}, int64_t{64}, int64_t{65}, int64_t{1000}, int64_t{4097},
                        int64_t{188'417}, int64_t{802'816}, int64_t{4 * 56 * 56 * 256}, int64_t{9'999'991}})
        check_against_reference(n, bytes, chip);
}

TEST_CASE("linear mapping keeps at least 128 bytes per tile and grains whole", "[target][mapping]") {
  // 1000 halves: 250 grains of 4; 128 bytes = 64 halves = 16 grains, so at most 250 / 16 = 15
  // parts of ceil(250 / 15) = 17 grains, and ceil(250 / 17) = 15 parts.
  constexpr auto m = ipu::map_linearly(1000, 2, ipu::mk2::chip);
  STATIC_REQUIRE(m.grain == 4);
  STATIC_REQUIRE(m.grains == 250);
  STATIC_REQUIRE(m.parts == 15);
  STATIC_REQUIRE(m.elements_on(0) * 2 >= 128);
  STATIC_REQUIRE(m.elements_on(static_cast<int>(m.parts)) == 0);
  // A large tensor spreads over the tiles in parts of ceil(802816 grains / 1472) = 546 grains;
  // ceil(802816 / 546) = 1471 parts, so the rule leaves the last tile empty.
  constexpr auto big = ipu::map_linearly(4 * 112 * 112 * 64, 2, ipu::mk2::chip);
  STATIC_REQUIRE(big.parts == 1471);
  STATIC_REQUIRE(big.elements_on(1471) == 0);
  STATIC_REQUIRE(big.max_elements_per_tile() == 546 * 4);
}

TEST_CASE("a mapping can start at a later tile", "[target][mapping]") {
  constexpr auto m = ipu::map_linearly(4096, 4, ipu::mk2::chip, 100);
  STATIC_REQUIRE(m.elements_on(99) == 0);
  STATIC_REQUIRE(m.elements_on(100) > 0);
  STATIC_REQUIRE(m.tile_of(0) == 100);
  STATIC_REQUIRE(m.tile_of(4095) == 100 + static_cast<int>(m.parts) - 1);
}

TEST_CASE("a mapping in segments maps each over its own tiles as PopLibs maps each alone", "[target][mapping]") {
  // Segment s is PopLibs' mapping of its elements over tiles / segments tiles, placed after the
  // tiles of segment s - 1: the reference builds each with splitRegions and lays them end to end.
  for (const auto& chip : {ipu::mk2::chip, ipu::with_tiles(ipu::mk2::chip, 16), ipu::with_tiles(ipu::mk2::chip, 7)})
    for (int64_t bytes : {2, 4, 256})
      for (int64_t segments : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{7}})
        for (int64_t per_segment : {int64_t{1}, int64_t{5}, int64_t{64}, int64_t{1001}, int64_t{70'560}}) {
          if (segments > chip.tiles) continue;
          CAPTURE(chip.tiles, bytes, segments, per_segment);
          const int64_t n = segments * per_segment;
          const auto m = ipu::map_linearly(n, bytes, chip, 0, 128, segments);
          const int64_t grain = std::max<int64_t>(1, chip.vector_bytes / bytes);
          const auto ref = split_regions(per_segment, grain, chip.tiles / segments, (128 + bytes - 1) / bytes);
          const int64_t parts = static_cast<int64_t>(ref.size());
          REQUIRE(m.parts == segments * parts);
          REQUIRE(m.segment_parts() == parts);
          int64_t most = 0;
          for (int t = 0; t < chip.tiles; ++t) {
            const int64_t s = t / parts, p = t % parts;
            const bool holds = s < segments && !ref[static_cast<std::size_t>(p)].empty();
            const interval local = holds ? ref[static_cast<std::size_t>(p)][0] : interval{0, 0};
            REQUIRE(m.elements_on(t) == local.second - local.first);
            most = std::max(most, local.second - local.first);
            if (!holds) continue;
            const int64_t first = s * per_segment + local.first, last = s * per_segment + local.second - 1;
            REQUIRE(m.begin(t) == first);
            REQUIRE(m.end(t) == last + 1);
            REQUIRE(m.part_elements(t) == last + 1 - first);
            REQUIRE(m.tile_of(first) == t);
            REQUIRE(m.tile_of(last) == t);
          }
          REQUIRE(m.max_elements_per_tile() == most);
        }
}
