// The memory plan: its peaks against a brute force over every tile and step, its totals
// against independent sums, and the fits and non-fits the planner must get right.
#include <ipu/ipu.hpp>

#include <catch2/catch.hpp>

#include "support/targets.hpp"

#include <cstdint>
#include <vector>

namespace nn = ipu::nn;
using std::int64_t;

namespace {

using tiny = ipu_test::small_target<16>;
using tiny2 = ipu::system<tiny, 2>;

constexpr ipu::options seed_options{.available_memory_proportion = {3, 10}};
using seed_t = ipu::models::resnext101_32x4d<ipu::f16, 4, 4>;

/// Every tile at every step: the largest `usage`, the first tile and step reaching it.
template <class Plan>
ipu::ipu_memory brute_force_usage_peak(const Plan& p, int ipu) {
  ipu::ipu_memory m;
  m.peak_step = -1;
  for (int s = 0; s < static_cast<int>(Plan::size); ++s) {
    if (p.at(s).ipu != ipu) continue;
    for (int t = 0; t < p.chip.tiles; ++t) {
      const int64_t bytes = p.usage(ipu, t, s).total();
      if (bytes > m.peak || m.peak_step < 0) m.peak = bytes, m.peak_tile = t, m.peak_step = s;
    }
  }
  return m;
}

/// One buffer of a tile as the plan places it: bytes `[begin, end)`, live during steps `[first, last]`.
struct placed_buffer {
  int64_t begin, end;
  int first, last;
};

/// Every buffer the plan places on `tile` of IPU `ipu`, with its bytes there.
template <class Plan>
std::vector<placed_buffer> buffers_on(const Plan& p, int ipu, int tile) {
  const int last = static_cast<int>(Plan::size) - 1;
  std::vector<placed_buffer> r;
  const auto add = [&](int64_t offset, int64_t bytes, int first, int until) {
    if (bytes > 0) r.push_back({offset, offset + bytes, first, until});
  };
  add(0, p.always_live_on(ipu, tile).code, 0, last);
  const int64_t base = p.always_layout(ipu, tile, [&](int j, int w, int64_t offset) {
    const ipu::node_plan& np = p.plan_of(j);
    add(offset, np.weights[static_cast<std::size_t>(w)].elements_on(tile) * np.weight_bytes[static_cast<std::size_t>(w)], 0, last);
  });
  for (int j = 0; j <= last; ++j) {
    if (p.held_to(ipu, j) >= j)
      add(base + p.activation_offset[static_cast<std::size_t>(ipu)][static_cast<std::size_t>(j)],
          p.activation_bytes_on(ipu, j, tile), j, p.held_to(ipu, j));
    if (p.at(j).ipu != ipu) continue;
    const ipu::node_plan& np = p.plan_of(j);
    const ipu::transient_bytes tr = ipu::transient_on(np.step, np.work.units.elements_on(tile));
    add(base + np.buffers.temporaries, tr.temporaries, j, j);
    add(base + np.buffers.exchange, tr.exchange, j, j);
    if (np.sends) add(base + np.buffers.send, np.copy.elements_on(tile) * ipu::size_of(p.at(j).type), j, j);
  }
  return r;
}

/// The allocation checked tile by tile: buffers live at a common step never share a byte,
/// every buffer starts aligned, and the peak is the highest (aligned) byte any tile reaches.
template <class Plan>
void check_against_brute_force(const Plan& p) {
  for (int i = 0; i < Plan::ipu_count; ++i) {
    const ipu::ipu_memory& got = p.ipus[static_cast<std::size_t>(i)];
    int64_t highest = 0;
    int highest_tile = -1;
    long overlaps = 0, misaligned = 0;
    for (int t = 0; t < p.chip.tiles; ++t) {
      const std::vector<placed_buffer> b = buffers_on(p, i, t);
      for (std::size_t x = 0; x < b.size(); ++x) {
        misaligned += b[x].begin % ipu::buffer_alignment != 0;
        const int64_t top = ipu::aligned(b[x].end);
        if (top > highest) highest = top, highest_tile = t;
        for (std::size_t y = x + 1; y < b.size(); ++y)
          overlaps += b[x].first <= b[y].last && b[y].first <= b[x].last && b[x].begin < b[y].end && b[y].begin < b[x].end;
      }
      CHECK(p.extent_on(i, t) <= got.peak);
    }
    CHECK(overlaps == 0);
    CHECK(misaligned == 0);
    CHECK(got.peak == highest);
    CHECK(p.extent_on(i, highest_tile) == highest);
    // At least the bytes in use; the rest is alignment and gaps.
    const ipu::ipu_memory in_use = brute_force_usage_peak(p, i);
    CHECK(got.peak >= in_use.peak);
    CHECK(got.peak_step >= 0);
    CHECK(got.at_peak == p.usage(i, got.peak_tile, got.peak_step));
    CHECK(got.unused_at_peak() == got.peak - got.at_peak.total());
    CHECK(got.fits == (got.peak <= p.chip.bytes_per_tile));
  }
}

constexpr auto small = ipu::input<ipu::f32, 2, 16, 16, 8> | nn::conv<32, 3, 2> | nn::batch_norm | nn::relu |
                       nn::residual(nn::conv<16, 1> | nn::conv<16, 3, 1, 4> | nn::relu | nn::conv<32, 1>) |
                       nn::max_pool<3, 2> | nn::avg_pool<2, 1> | nn::global_avg_pool | nn::dense<10> | nn::softmax;
using small_t = decltype(small);

}  // namespace

TEST_CASE("the plan allocates every buffer without overlap, and its peak is the highest byte reached") {
  check_against_brute_force(ipu::plan_v<small_t, tiny>);
  check_against_brute_force(ipu::plan_v<small_t, ipu::mk2>);
  check_against_brute_force(ipu::plan_v<small_t, tiny, ipu::options{.available_memory_proportion = {1, 100}}>);
  check_against_brute_force(ipu::plan_v<small_t, tiny, ipu::options{.io_tiles = 5}>);
  check_against_brute_force(ipu::plan_v<ipu::models::resnext<ipu::f32, 1, 50, 1, 64, 3, 10, 64>, tiny>);
}

TEST_CASE("a placement over two IPUs is planned per IPU with copies on both sides") {
  constexpr auto g = ipu::input<ipu::f32, 2, 16, 16, 8> | ipu::on<0>(nn::conv<16, 3> | nn::relu) |
                     ipu::on<1>(nn::residual(nn::conv<16, 3>) | nn::global_avg_pool | nn::dense<4>);
  constexpr auto& p = ipu::plan_v<decltype(g), tiny2>;
  check_against_brute_force(p);
  // The relu output crosses: a send buffer on IPU 0 at its step, a copy on IPU 1 until its last reader.
  const int relu = ipu::find_node(*p.table, "relu1");
  REQUIRE(relu > 0);
  CHECK(p.plan_of(relu).sends);
  int64_t copy = 0, send = 0;
  for (int t = 0; t < tiny::chip.tiles; ++t) {
    copy += p.activation_bytes_on(1, relu, t);
    send += p.step_transients_on(relu, t).exchange;
  }
  CHECK(copy == 2 * 16 * 16 * 16 * 4);
  CHECK(send == copy);
  CHECK(p.held_to(1, relu) > relu);
  // Each IPU holds only its own nodes' weights.
  CHECK(p.ipus[0].totals.weights == 3 * 3 * 8 * 16 * 4);
  CHECK(p.ipus[1].totals.weights == (3 * 3 * 16 * 16 + 16 * 4 + 4) * 4);
}

TEST_CASE("the seed's ResNeXt-101 fits one Mk2 at available_memory_proportion 0.3") {
  static_assert(ipu::require_fit<seed_t, ipu::mk2, seed_options>);
  static_assert(ipu::fits_v<seed_t, ipu::mk2, seed_options>);
  constexpr auto& p = ipu::plan_v<seed_t, ipu::mk2, seed_options>;
  const ipu::ipu_memory& m = p.ipus[0];
  CHECK(m.peak <= 638976);
  CHECK(p.warnings == 0);
  // No tile exceeds the peak at the peak step, the peak tile never exceeds it, and the
  // allocation reaches it (with less than one alignment unit of padding, on this network).
  for (int t = 0; t < ipu::mk2::chip.tiles; t += 7) CHECK(p.usage(0, t, m.peak_step).total() <= m.peak);
  for (int s = 0; s < static_cast<int>(p.size); s += 3) CHECK(p.usage(0, m.peak_tile, s).total() <= m.peak);
  CHECK(p.extent_on(0, m.peak_tile) == m.peak);
  CHECK(m.unused_at_peak() < ipu::buffer_alignment);
}

TEST_CASE("totals are consistent: tiles sum to the IPU, weights to the parameters") {
  constexpr auto& p = ipu::plan_v<seed_t, ipu::mk2, seed_options>;
  ipu::memory_bytes sum;
  for (int t = 0; t < ipu::mk2::chip.tiles; ++t) sum += p.always_live_on(0, t);
  CHECK(sum.weights == p.ipus[0].totals.weights);
  CHECK(sum.weights == ipu::param_count_v<seed_t> * 2);  // f16 weights, batch norm folded to scale and shift
  CHECK(sum.code == p.ipus[0].totals.code);
  // Activations summed over the tiles at each step equal the liveness of the node table.
  const auto liveness = ipu::activation_liveness_on(*p.table, 0);
  for (int s : {1, 10, 100, 200, 344}) {
    int64_t live = 0;
    for (int t = 0; t < ipu::mk2::chip.tiles; ++t) live += p.usage(0, t, s).activations;
    CHECK(live == liveness.live_bytes[static_cast<std::size_t>(s)]);
  }
  CHECK(p.ipus[0].totals.activations == liveness.peak_bytes);
}

TEST_CASE("group convolutions split groups across tiles") {
  constexpr auto& p = ipu::plan_v<seed_t, ipu::mk2, seed_options>;
  const int conv2 = ipu::find_node(*p.table, "stage3.block5.conv2");
  REQUIRE(conv2 > 0);
  const ipu::node_plan& np = p.plan_of(conv2);
  CHECK(np.step.blocks == 32);
  CHECK(np.step.block_channels == 512 / 32);
  CHECK(np.step.in_channels == 512 / 32);
  // The output of a conv lives where it is computed: every element on exactly one tile.
  int64_t elements = 0;
  for (int t = 0; t < ipu::mk2::chip.tiles; ++t) elements += np.output.elements_on(t);
  CHECK(elements == p.at(conv2).out.elements());
}

TEST_CASE("a conv's channel blocks each on their own tiles: no tile computes two blocks") {
  constexpr auto& p = ipu::plan_v<seed_t, ipu::mk2, seed_options>;
  int apart = 0;
  for (int j = 0; j < static_cast<int>(p.size); ++j) {
    const ipu::node_plan& np = p.plan_of(j);
    if (np.step.kind != ipu::step_kind::conv || !np.step.blocks_apart) continue;
    ++apart;
    const ipu::linear_mapping& u = np.work.units;
    CHECK(u.segments == np.step.blocks);
    for (int t = 0; t < np.work.tiles(); ++t)
      if (u.elements_on(t) > 0) CHECK(u.begin(t) / np.step.positions == (u.end(t) - 1) / np.step.positions);
  }
  CHECK(apart > 0);  // the grouped convs: 32 groups over 46 tiles each
}

TEST_CASE("channel blocks go apart when that leaves the fullest tile fewer transients") {
  // ResNet-50's stage2.block1.shortcut.conv1 at batch 90: 1x1, stride 2, 256 to 512 channels
  // over 90 x 28 x 28 positions, f16 with half partials. Together, a tile whose run of units
  // crosses from one block into the next receives the weights and input of both.
  ipu::step_model s;
  s.kind = ipu::step_kind::conv;
  s.positions = 90 * 28 * 28;
  s.images = 90;
  s.out_height = s.out_width = 28;
  s.in_height = s.in_width = 56;
  s.in_channels = 256;
  s.row_stride = 2;
  s.element_bytes = s.partial_bytes = 2;
  const ipu::channel_blocks cb = ipu::split_channels(s, 512, 1, ipu::mk2::chip);
  CHECK(cb.apart);
  const auto fullest = [&](int64_t blocks, bool apart) {
    ipu::step_model c = s;
    c.blocks = blocks, c.block_channels = 512 / blocks, c.blocks_apart = apart;
    return ipu::transient_on(c, ipu::map_units(c, ipu::mk2::chip).units.max_elements_per_tile()).total();
  };
  const int64_t chosen = fullest(cb.blocks, true);
  for (int64_t blocks = 1; blocks <= 512; blocks *= 2) {
    CAPTURE(blocks);
    CHECK(chosen <= fullest(blocks, false));
    CHECK(chosen <= fullest(blocks, true));
  }
  CHECK(chosen < fullest(1, false));
}

// The fewest phases of a split of conv-like node `j` whose fullest tile's transients meet
// `bound`, or -1: every split the planner may use (one tap per phase or all taps; the input
// channels in any number of equal parts, with one tap per phase unless the kernel is 1x1),
// each with the fewest serial slices meeting the bound.
template <class Plan, class Target>
int64_t fewest_phases_within(const Plan& p, int j, int64_t bound) {
  const ipu::node_plan& np = p.plan_of(j);
  const int64_t filters = p.at(j).out.channels(), channels = np.step.in_channels;
  const int64_t groups = p.at(j).in.channels() / channels, taps = np.step.kernel_taps;
  int64_t fewest = -1;
  for (const int64_t t : {int64_t{1}, taps})
    for (int64_t parts = 1; parts <= channels; ++parts) {
      if (channels % parts != 0 || (parts > 1 && t != taps && taps > 1)) continue;
      ipu::step_model c = np.step;
      c.taps = t;
      c.in_parts = parts;
      c.serial = 1;
      const ipu::tensor_mapping m = ipu::ops::fit_slices(c, filters, groups, bound, Target::chip);
      if (ipu::transient_on(c, m.units.max_elements_per_tile()).total() > bound) continue;
      if (fewest < 0 || c.phases() < fewest) fewest = c.phases();
    }
  return fewest;
}

TEST_CASE("a proportion no split can meet warns, and the bound doubles until a split meets it, as in PopLibs") {
  // 6 bytes: less than one partial sum and its weights, whatever the split.
  constexpr ipu::options starved{.available_memory_proportion = {1, 100000}};
  constexpr auto& p = ipu::plan_v<small_t, tiny, starved>;
  REQUIRE(p.warnings > 0);
  int warned = 0;
  for (int j = 0; j < static_cast<int>(p.size); ++j) {
    const ipu::node_plan& np = p.plan_of(j);
    if (!np.over_bound) continue;
    ++warned;
    const int64_t bytes = np.transient_max.total();
    CHECK(bytes > np.transient_bound);
    CHECK(np.transient_bound == 638976 / 100000);
    CHECK(fewest_phases_within<decltype(p), tiny>(p, j, np.transient_bound) == -1);
    // The first doubled bound the plan meets: no split meets the one before it, and the plan
    // is the fastest within it.
    int64_t bound = np.transient_bound;
    while (bound < bytes) bound *= 2;
    CAPTURE(j, bytes, bound);
    CHECK(fewest_phases_within<decltype(p), tiny>(p, j, bound / 2) == -1);
    CHECK(fewest_phases_within<decltype(p), tiny>(p, j, bound) == np.step.phases());
  }
  CHECK(warned == p.warnings);
  // The default proportion meets the bound everywhere in this small model.
  CHECK(ipu::plan_v<small_t, tiny>.warnings == 0);
}

TEST_CASE("obvious non-fits fail with the right numbers") {
  SECTION("a dense layer whose weights exceed an IPU") {
    constexpr auto g = ipu::input<ipu::f32, 4, 1, 1, 16384> | nn::global_avg_pool | nn::dense<16384>;
    constexpr auto& p = ipu::plan_v<decltype(g), ipu::mk2>;
    static_assert(!ipu::fits_v<decltype(g), ipu::mk2>);
    // 1 GiB of weights over 1472 tiles: at least 729444 bytes on the fullest tile.
    CHECK(p.ipus[0].max_always_live >= int64_t{16384} * 16384 * 4 / 1472);
    CHECK(p.ipus[0].peak > 638976);
  }
  SECTION("one activation too large for the tiles it maps to") {
    constexpr auto g = ipu::input<ipu::f32, 2, 1024, 1024, 64> | nn::relu;
    constexpr auto& p = ipu::plan_v<decltype(g), ipu::mk1>;
    static_assert(!ipu::fits_v<decltype(g), ipu::mk1>);
    CHECK(p.ipus[0].at_peak.largest() == ipu::memory_category::activations);
    // input and relu output, 512 MiB each, over 1216 tiles
    CHECK(p.ipus[0].at_peak.activations >= 2 * (int64_t{2} * 1024 * 1024 * 64 * 4 / 1216));
  }
  SECTION("the seed on Mk1, whose tiles have 256 KiB") {
    static_assert(!ipu::fits_v<seed_t, ipu::mk1, seed_options>);
    CHECK(ipu::plan_v<seed_t, ipu::mk1, seed_options>.ipus[0].peak > 262144);
  }
}

TEST_CASE("sharding a model that does not fit makes it fit, and each IPU's peak drops") {
  using mk1x4 = ipu::system<ipu::mk1, 4>;
  using placed_t = ipu::auto_shard<seed_t, mk1x4>;
  static_assert(!ipu::fits_v<seed_t, ipu::mk1, seed_options>);
  static_assert(ipu::require_fit<placed_t, mk1x4, seed_options>);
  constexpr auto& one = ipu::plan_v<seed_t, ipu::mk1, seed_options>;
  constexpr auto& four = ipu::plan_v<placed_t, mk1x4, seed_options>;
  // The placed graph is the same graph: same nodes, same paths, now over several IPUs.
  STATIC_REQUIRE(ipu::node_count_v<placed_t> == ipu::node_count_v<seed_t>);
  for (std::size_t j = 0; j < four.size; ++j) CHECK(four.at(static_cast<int>(j)).path == one.at(static_cast<int>(j)).path);
  // The IPUs it uses come first; each holds part of the model and peaks below the whole.
  int used = 0;
  while (used < 4 && four.ipus[static_cast<std::size_t>(used)].nodes > 0) ++used;
  CHECK(used >= 2);
  for (int i = 0; i < 4; ++i) {
    const ipu::ipu_memory& m = four.ipus[static_cast<std::size_t>(i)];
    if (i < used) CHECK(m.peak < one.ipus[0].peak);
    else CHECK(m.nodes == 0);
  }
  // Placement is in order: IPU indices never decrease along the table.
  for (std::size_t j = 1; j < four.size; ++j) CHECK(four.at(static_cast<int>(j)).ipu >= four.at(static_cast<int>(j - 1)).ipu);
  // Sharding by hand works the same way.
  constexpr auto by_hand = ipu::input<ipu::f32, 2, 16, 16, 8> | ipu::on<0>(nn::conv<64, 3> | nn::relu) |
                           ipu::on<1>(nn::conv<64, 3> | nn::relu);
  constexpr auto& split = ipu::plan_v<decltype(by_hand), tiny2>;
  using whole_t = decltype(ipu::input<ipu::f32, 2, 16, 16, 8> | nn::conv<64, 3> | nn::relu | nn::conv<64, 3> | nn::relu);
  constexpr auto& whole = ipu::plan_v<whole_t, tiny>;
  CHECK(split.ipus[0].max_always_live < whole.ipus[0].max_always_live);
  CHECK(split.ipus[1].max_always_live < whole.ipus[0].max_always_live);
}

TEST_CASE("auto_shard uses the fewest IPUs that hold the model, and balances cycles over them") {
  // The seed's model fits one Mk2: an IPU-M2000 runs it on IPU 0 alone, as planned for one Mk2.
  using mk2x4 = ipu::system<ipu::mk2, 4>;
  constexpr auto& whole = ipu::plan_v<ipu::auto_shard<seed_t, mk2x4>, mk2x4, seed_options>;
  constexpr auto& alone = ipu::plan_v<seed_t, ipu::mk2, seed_options>;
  CHECK(whole.ipus[0].nodes == static_cast<int>(whole.size));
  CHECK(whole.ipus[0].peak == alone.ipus[0].peak);
  for (int i = 1; i < 4; ++i) CHECK(whole.ipus[static_cast<std::size_t>(i)].nodes == 0);
  // It needs more than one Mk1: the split does not depend on how many more the target has.
  using mk1x3 = ipu::system<ipu::mk1, 3>;
  using mk1x4 = ipu::system<ipu::mk1, 4>;
  constexpr auto& three = ipu::plan_v<ipu::auto_shard<seed_t, mk1x3>, mk1x3, seed_options>;
  constexpr auto& four = ipu::plan_v<ipu::auto_shard<seed_t, mk1x4>, mk1x4, seed_options>;
  for (std::size_t j = 0; j < three.size; ++j) CHECK(three.at(static_cast<int>(j)).ipu == four.at(static_cast<int>(j)).ipu);
  CHECK(three.ipus[2].nodes == 0);
  CHECK(four.ipus[3].nodes == 0);
  CHECK(three.fits);
  // Over the two IPUs it uses, the busiest carries less than 60% of the work.
  int64_t total = 0, largest = 0;
  for (const ipu::ipu_memory& m : three.ipus) total += m.cycles, largest = std::max(largest, m.cycles);
  CHECK(largest * 10 < total * 6);
}
