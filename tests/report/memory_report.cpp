// The memory report against brute force over `plan::usage` (every tile at every step for small
// graphs, sampled tiles and steps for ResNeXt-101), and against the plan's own peaks.
#include <ipu/ipu.hpp>

#include <catch2/catch.hpp>

#include "support/targets.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace nn = ipu::nn;
using std::int64_t;
using report = ipu::memory_report_t;

namespace {
/// A Mk2 with 16 tiles per IPU, on `Ipus` IPUs.
template <int Ipus>
using tiny = ipu_test::small_target<16, Ipus>;

constexpr auto block = nn::conv<16, 1> | nn::batch_norm | nn::relu | nn::conv<16, 3> | nn::batch_norm;
constexpr auto small = ipu::input<ipu::f32, 2, 16, 16, 8> | nn::conv<16, 3> | nn::batch_norm | nn::relu |
                       nn::max_pool<3, 2> | nn::residual(block) | nn::relu | nn::global_avg_pool | nn::dense<10> |
                       nn::softmax;
using small_t = decltype(small);
// The second half on IPU 1: IPU 1 holds copies of IPU 0's outputs, IPU 0 has a send buffer.
constexpr auto split = ipu::input<ipu::f16, 2, 16, 16, 8> | nn::conv<16, 3> | nn::relu |
                       nn::residual(block, nn::conv<16, 1>) | nn::relu |
                       ipu::on<1>(nn::residual(block) | nn::relu | nn::global_avg_pool | nn::dense<10>);
using split_t = decltype(split);

using seed_t = ipu::models::resnext101_32x4d<ipu::f16, 4, 4>;
constexpr ipu::options seed_opts{.available_memory_proportion = {3, 10}};

template <class Plan>
bool on_ipu(const Plan& p, int ipu, int j) {
  return p.at(j).ipu == ipu;
}

/// A tile's peak over its IPU's steps by `usage` (earliest step on a tie); its always-live
/// bytes if the IPU runs no node.
template <class Plan>
report::tile_peak brute_tile_peak(const Plan& p, int ipu, int tile) {
  report::tile_peak best{tile, -1, p.always_live_on(ipu, tile)};
  for (int s = 0; s < static_cast<int>(Plan::size); ++s) {
    if (!on_ipu(p, ipu, s)) continue;
    const ipu::memory_bytes m = p.usage(ipu, tile, s);
    if (best.step < 0 || m.total() > best.bytes.total()) best = {tile, s, m};
  }
  return best;
}

/// The histogram bucket, from the percentage.
int bucket_by_percent(int64_t bytes, int64_t capacity) {
  if (bytes > capacity) return report::buckets;
  const double pct = 100.0 * static_cast<double>(bytes) / static_cast<double>(capacity);
  return std::min(report::buckets - 1, static_cast<int>(pct) / (100 / report::buckets));
}

void require_same(const report::tile_peak& got, const report::tile_peak& want) {
  CAPTURE(got.tile, got.step, want.step);
  REQUIRE(got.tile == want.tile);
  REQUIRE(got.step == want.step);
  REQUIRE(got.bytes == want.bytes);
}

/// What holds for any plan's report, whatever its size.
template <class Plan>
void check_structure(const Plan& p, const report& r) {
  REQUIRE(r.nodes.size() == Plan::size);
  REQUIRE(static_cast<int>(r.ipus.size()) == Plan::ipu_count);
  REQUIRE(r.fits == p.fits);
  REQUIRE(r.warnings() == p.warnings);
  for (const report::ipu_report& ir : r.ipus) {
    const int i = ir.ipu;
    CAPTURE(i);
    const ipu::ipu_memory& pm = p.ipus[static_cast<std::size_t>(i)];
    const auto tiles = static_cast<std::size_t>(p.chip.tiles);
    REQUIRE(ir.tiles.size() == tiles);

    // The most bytes in use are at most the plan's peak (the highest byte its allocation
    // reaches); without alignment or gaps at the peak, the same bytes, tile, step and breakdown.
    REQUIRE(ir.peak.bytes.total() <= pm.peak);
    if (pm.unused_at_peak() == 0) {
      REQUIRE(ir.peak.bytes.total() == pm.peak);
      REQUIRE(ir.peak.tile == pm.peak_tile);
      REQUIRE(ir.peak.step == pm.peak_step);
      if (pm.peak_step >= 0) REQUIRE(ir.peak.bytes == pm.at_peak);
    }
    for (const report::tile_peak& tp : ir.tiles) REQUIRE(tp.bytes.total() <= ir.peak.bytes.total());

    // Every tile in exactly one bucket, the one its percentage says.
    int counted = 0;
    std::vector<int> expected(report::buckets + 1, 0);
    for (const report::tile_peak& tp : ir.tiles)
      ++expected[static_cast<std::size_t>(bucket_by_percent(tp.bytes.total(), pm.capacity))];
    for (std::size_t b = 0; b < expected.size(); ++b) {
      CAPTURE(b);
      REQUIRE(ir.histogram[b] == expected[b]);
      counted += ir.histogram[b];
    }
    REQUIRE(counted == static_cast<int>(tiles));

    // The fullest tiles: sorted, the tiles' own peaks, and no other tile fuller.
    REQUIRE(ir.fullest.size() == std::min<std::size_t>(tiles, report::fullest_tiles));
    for (std::size_t k = 0; k < ir.fullest.size(); ++k) {
      const report::tile_peak& tp = ir.fullest[k];
      CAPTURE(k, tp.tile);
      require_same(tp, brute_tile_peak(p, i, tp.tile));
      if (k > 0) {
        const report::tile_peak& prev = ir.fullest[k - 1];
        REQUIRE(prev.bytes.total() >= tp.bytes.total());
        if (prev.bytes.total() == tp.bytes.total()) REQUIRE(prev.tile < tp.tile);
      }
    }
    for (const report::tile_peak& tp : ir.tiles) {
      const bool listed = std::any_of(ir.fullest.begin(), ir.fullest.end(),
                                      [&](const report::tile_peak& f) { return f.tile == tp.tile; });
      if (!listed) REQUIRE(tp.bytes.total() <= ir.fullest.back().bytes.total());
    }

    // One layer per node on the IPU, in step order, each at the usage of its tile.
    std::vector<int> on;
    for (int j = 0; j < static_cast<int>(Plan::size); ++j)
      if (on_ipu(p, i, j)) on.push_back(j);
    REQUIRE(ir.layers.size() == on.size());
    REQUIRE(static_cast<int>(ir.layers.size()) == pm.nodes);
    for (std::size_t k = 0; k < on.size(); ++k) {
      const report::layer_peak& lp = ir.layers[k];
      REQUIRE(lp.node == on[k]);
      REQUIRE(lp.bytes == p.usage(i, lp.tile, lp.node));
      REQUIRE(lp.bytes.total() <= ir.peak.bytes.total());
    }

    // Warnings for exactly the nodes over the bound.
    std::vector<int> over;
    for (int j : on)
      if (p.plan_of(j).over_bound) over.push_back(j);
    REQUIRE(ir.warnings.size() == over.size());
    for (std::size_t k = 0; k < over.size(); ++k) {
      const report::bound_warning& w = ir.warnings[k];
      const ipu::node_plan& np = p.plan_of(over[k]);
      REQUIRE(w.node == over[k]);
      REQUIRE(w.transient_bytes == np.transient_max.total());
      REQUIRE(w.bound == np.transient_bound);
      REQUIRE(w.transient_bytes > w.bound);
    }
  }
}

/// Every tile at every step, by `usage`: small graphs only.
template <class Plan>
void check_every_tile(const Plan& p, const report& r) {
  for (const report::ipu_report& ir : r.ipus) {
    const int i = ir.ipu;
    CAPTURE(i);
    for (int t = 0; t < p.chip.tiles; ++t) {
      CAPTURE(t);
      require_same(ir.tiles[static_cast<std::size_t>(t)], brute_tile_peak(p, i, t));
    }
    for (const report::layer_peak& lp : ir.layers) {
      CAPTURE(lp.node);
      int tile = -1;
      ipu::memory_bytes best{};
      for (int t = 0; t < p.chip.tiles; ++t) {
        const ipu::memory_bytes m = p.usage(i, t, lp.node);
        if (tile < 0 || m.total() > best.total()) tile = t, best = m;
      }
      REQUIRE(lp.tile == tile);
      REQUIRE(lp.bytes == best);
    }
  }
}

int count_of(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

/// The text names each IPU's peak layer, and warns about exactly the layers over the bound.
template <class Plan>
void check_text(const Plan& p, const report& r) {
  const std::string text = r.str();
  std::ostringstream streamed;
  streamed << r;
  REQUIRE(streamed.str() == text);
  for (const ipu::ipu_memory& pm : p.ipus)
    if (pm.peak_step >= 0) REQUIRE(text.find(std::string(p.at(pm.peak_step).path.view())) != std::string::npos);
  REQUIRE(count_of(text, "warning: ") == p.warnings);
  if (p.warnings == 0) REQUIRE(text.find("warning") == std::string::npos);
  for (const report::ipu_report& ir : r.ipus)
    for (const report::bound_warning& w : ir.warnings)
      REQUIRE(text.find("warning: " + std::string(r.path_of(w.node)) + ":") != std::string::npos);
}
}  // namespace

TEST_CASE("histogram buckets are tenths of capacity, full tiles in the last", "[report][memory]") {
  STATIC_REQUIRE(report::bucket_of(0, 1000) == 0);
  STATIC_REQUIRE(report::bucket_of(99, 1000) == 0);
  STATIC_REQUIRE(report::bucket_of(100, 1000) == 1);
  STATIC_REQUIRE(report::bucket_of(999, 1000) == report::buckets - 1);
  STATIC_REQUIRE(report::bucket_of(1000, 1000) == report::buckets - 1);
  STATIC_REQUIRE(report::bucket_of(1001, 1000) == report::buckets);
}

TEST_CASE("every tile's peak and every layer's peak match usage on one IPU", "[report][memory]") {
  using target = tiny<1>;
  constexpr auto& p = ipu::plan_v<small_t, target>;
  const report r = ipu::memory_report<small_t, target>();
  REQUIRE(r.target == "mk2-small");
  check_structure(p, r);
  check_every_tile(p, r);
  check_text(p, r);
}

TEST_CASE("the report follows copies across IPUs, and an IPU without nodes", "[report][memory]") {
  // Three IPUs, the graph on two: IPU 2 holds only the runtime.
  using target = tiny<3>;
  constexpr auto& p = ipu::plan_v<split_t, target>;
  STATIC_REQUIRE(p.ipus[2].nodes == 0);
  const report r = ipu::memory_report<split_t, target>();
  check_structure(p, r);
  check_every_tile(p, r);
  check_text(p, r);
  const report::ipu_report& idle = r.ipus[2];
  REQUIRE(idle.layers.empty());
  for (const report::tile_peak& tp : idle.tiles) {
    REQUIRE(tp.step == -1);
    REQUIRE(tp.bytes == p.always_live_on(2, tp.tile));
  }
}

TEST_CASE("a tiny available memory proportion warns about exactly the layers over it", "[report][memory]") {
  using target = tiny<2>;
  constexpr ipu::options opts{.available_memory_proportion = {1, 100000}};  // 6 bytes
  constexpr auto& p = ipu::plan_v<split_t, target, opts>;
  STATIC_REQUIRE(p.warnings > 0);
  const report r = ipu::memory_report<split_t, target, opts>();
  check_structure(p, r);
  check_every_tile(p, r);
  check_text(p, r);
  const std::string text = r.str();
  REQUIRE(text.find("the bound is doubled until one does") != std::string::npos);
  REQUIRE(text.find("1/100000") != std::string::npos);
}

TEST_CASE("with I/O tiles the report names them, and they hold only code", "[report][memory]") {
  using target = tiny<2>;
  constexpr ipu::options opts{.io_tiles = 3};
  constexpr auto& p = ipu::plan_v<split_t, target, opts>;
  const report r = ipu::memory_report<split_t, target, opts>();
  check_structure(p, r);
  check_every_tile(p, r);
  check_text(p, r);
  REQUIRE(r.str().find("(3 of them I/O tiles)") != std::string::npos);
  for (int i = 0; i < target::ipus; ++i)
    for (int t = target::chip.tiles - 3; t < target::chip.tiles; ++t) {
      INFO("IPU " << i << " tile " << t);
      CHECK(p.always_live_on(i, t).weights == 0);
      CHECK(p.extent_on(i, t) == p.dynamic_base(i, t));
    }
}

TEST_CASE("ResNeXt-101 32x4d on Mk2: the report's peaks are the plan's and usage's", "[report][memory]") {
  constexpr auto& p = ipu::plan_v<seed_t, ipu::mk2, seed_opts>;
  const report r = ipu::memory_report<seed_t, ipu::mk2, seed_opts>();
  check_structure(p, r);
  check_text(p, r);
  const report::ipu_report& ir = r.ipus[0];

  // Sampled tiles: first, last, the peak tile, a tile past every small tensor's mapping.
  for (int t : {0, 1, 17, 735, p.chip.tiles - 1, ir.peak.tile}) {
    CAPTURE(t);
    require_same(ir.tiles[static_cast<std::size_t>(t)], brute_tile_peak(p, 0, t));
  }
  // Sampled (tile, step) pairs: no usage beats the tile's peak or the layer's peak.
  for (const report::layer_peak& lp : {ir.layers.front(), ir.layers[ir.layers.size() / 2], ir.layers.back()})
    for (int t : {0, 3, 100, 1000, p.chip.tiles - 1}) {
      CAPTURE(lp.node, t);
      const ipu::memory_bytes m = p.usage(0, t, lp.node);
      REQUIRE(m.total() <= lp.bytes.total());
      REQUIRE(m.total() <= ir.tiles[static_cast<std::size_t>(t)].bytes.total());
    }
  // The layer at the peak peaks on the peak tile.
  const auto at_peak = std::find_if(ir.layers.begin(), ir.layers.end(),
                                    [&](const report::layer_peak& lp) { return lp.node == ir.peak.step; });
  REQUIRE(at_peak != ir.layers.end());
  REQUIRE(at_peak->tile == ir.peak.tile);
  REQUIRE(at_peak->bytes == ir.peak.bytes);
}
