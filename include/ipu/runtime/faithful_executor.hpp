#pragma once
/// \file
/// `runtime::faithful_executor`: the faithful mode of `ipu::engine`. Every tile owns a memory
/// image of `bytes_per_tile`, and every buffer is placed at the offset the plan gives it
/// (`plan/allocation.hpp`): code and weights from byte 0 (always live); activations,
/// temporaries and exchange buffers above the tile's dynamic base, from the step that
/// allocates them until their last reader has run. Every buffer has the size the plan gives
/// it, so a tile's live bytes per category at each step are measured (`measured_usage`) and
/// can be compared with `plan::usage`, and the highest byte reached (`measured_extent`) with
/// the plan's peak.
///
/// Each step is one BSP superstep on its IPU: an exchange phase that gathers what the step's
/// vertices read into the exchange buffers of the tiles that work, a sync, a compute phase in
/// which each tile computes the outputs mapped to it, and a sync (a conv with serial slices
/// repeats exchange and compute per slice). Exchange is a copy between tile images; a vertex is
/// handed only pointers into its own tile, checked. An output read on another IPU is then
/// gathered into a send buffer and copied over the IPU-Link into the reading IPU's copy.

#include <ipu/core/arith.hpp>
#include <ipu/core/dtype.hpp>
#include <ipu/kernels/conv.hpp>
#include <ipu/kernels/pointwise.hpp>
#include <ipu/kernels/pool.hpp>
#include <ipu/kernels/views.hpp>
#include <ipu/plan/memory.hpp>
#include <ipu/plan/model.hpp>
#include <ipu/runtime/execution.hpp>
#include <ipu/runtime/program.hpp>
#include <ipu/runtime/team.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace ipu::runtime {

/// Runs a `program`'s steps on every tile's memory image (see the file comment).
/// \tparam T   storage element type, `f32` or `f16`
/// \tparam Acc partials type, `f32` or `f16`: the scalar kernels accumulate in it
template <ElementType T, class Acc>
class faithful_executor {
 public:
  /// Allocates `bytes_per_tile` for every tile of every IPU of `prog` and places code and the
  /// weights `params` (one entry per node); `prog` and `threads` must outlive the executor.
  /// Throws `execution_error` if the plan places a buffer past a tile's memory (a plan that
  /// fits never does).
  faithful_executor(const program& prog, const parameter_set& params, team& threads)
      : prog_(prog), team_(threads), tiles_(prog.chip.tiles) {
    std::vector<std::vector<std::vector<T>>> device(params.size());
    for (std::size_t j = 0; j < params.size(); ++j)
      for (const auto& t : params[j]) {
        std::vector<T>& d = device[j].emplace_back(t.size());
        std::transform(t.begin(), t.end(), d.begin(), [](float x) { return static_cast<T>(x); });
      }
    prepare_devices(device);
  }

  /// Sets the batch the input step reads, with only the always-live buffers in place (also
  /// after a batch that failed part way).
  void begin(const T* input) {
    input_ = input;
    for (device& d : devices_) {
      d.live = d.always_live;
      std::fill(d.step.begin(), d.step.end(), tile_step{});
    }
    for (auto& per_ipu : placed_) std::fill(per_ipu.begin(), per_ipu.end(), placement{});
  }

  /// Reads the graph's output back from its tiles, in logical order.
  void end(T* output) { read_output(output); }

  /// The bytes tile `tile` of IPU `ipu` held, by category, while step `step` ran there
  /// (measured from the allocations of the last batch); zero for steps of other IPUs.
  memory_bytes measured_usage(int ipu, int tile, int step) const {
    if (prog_.at(step).ipu != ipu) return {};
    return devices_[static_cast<std::size_t>(ipu)].trace[static_cast<std::size_t>(step) * static_cast<std::size_t>(tiles_) +
                                                         static_cast<std::size_t>(tile)];
  }
  /// One past the highest byte any allocation of `tile` on `ipu` has reached since
  /// construction (each batch allocates the same way).
  std::int64_t measured_extent(int ipu, int tile) const {
    return devices_[static_cast<std::size_t>(ipu)].extent[static_cast<std::size_t>(tile)];
  }

  /// Runs step `j`: its exchange and compute phases on every tile, and its IPU-Link copies.
  void step(int j) {
    const node& n = prog_.at(j);
    const node_plan& p = prog_.plan_of(j);
    const int ipu = n.ipu;
    for (int b = 0; b < prog_.ipus; ++b)  // where the output (and its copies) will live
      if (b == ipu || prog_.copies(b, j)) {
        const tensor_mapping& m = prog_.mapping_on(b, j);
        placed_[static_cast<std::size_t>(b)][static_cast<std::size_t>(j)] =
            placement{&m, storage_order::of(m, n.out), std::vector<std::int64_t>(static_cast<std::size_t>(tiles_), -1)};
      }
    // Phase 1: release what step j - 1 left behind, allocate step j, exchange (slice 0).
    team_.run([&](unsigned k) {
      for (int i = 0; i < prog_.ipus; ++i)
        for_owned_tiles(k, tiles_, [&](int t) { end_of_step(i, j - 1, t); });
      for_owned_tiles(k, tiles_, [&](int t) {
        begin_step(j, t);
        exchange(j, t, 0);
      });
    });
    const std::int64_t slices = p.step.kind == step_kind::conv ? p.step.serial : 1;
    for (std::int64_t s = 0; s < slices; ++s) {
      if (s > 0) team_.run([&](unsigned k) { for_owned_tiles(k, tiles_, [&](int t) { exchange(j, t, s); }); });
      team_.run([&](unsigned k) { for_owned_tiles(k, tiles_, [&](int t) { compute(j, t, s); }); });
    }
    if (p.sends) {
      // The send buffer: this tile's share of the output in logical order, for the IPU-Link.
      team_.run([&](unsigned k) {
        for_owned_tiles(k, p.copy.tiles(), [&](int t) {
          const auto [e0, e1] = segment(p.copy, t);
          T* dst = own(ipu, t, devices_[static_cast<std::size_t>(ipu)].step[static_cast<std::size_t>(t)].send, e1 - e0);
          const placement& out = placed_[static_cast<std::size_t>(ipu)][static_cast<std::size_t>(j)];
          const std::int64_t c = n.out.channels();
          for (std::int64_t e = e0; e < e1;) {
            const std::int64_t len = std::min(e1 - e, c - e % c);
            read_channels(ipu, out, e / c, e % c, len, dst + (e - e0));
            e += len;
          }
        });
      });
      team_.run([&](unsigned k) {
        for (int b = 0; b < prog_.ipus; ++b) {
          if (!prog_.copies(b, j)) continue;
          for_owned_tiles(k, p.copy.tiles(), [&](int t) {
            place_activation(b, j, t);
            const std::int64_t count = p.copy.elements_on(t);
            std::memcpy(own(b, t, placed_[static_cast<std::size_t>(b)][static_cast<std::size_t>(j)].offset[static_cast<std::size_t>(t)], count),
                        own(ipu, t, devices_[static_cast<std::size_t>(ipu)].step[static_cast<std::size_t>(t)].send, count),
                        static_cast<std::size_t>(count) * sizeof(T));
          });
        }
      });
    }
    if (j + 1 == prog_.size())
      team_.run([&](unsigned k) {
        for (int i = 0; i < prog_.ipus; ++i) for_owned_tiles(k, tiles_, [&](int t) { end_of_step(i, j, t); });
      });
  }

 private:
  /// Where one tensor lives on one IPU: its mapping, storage order and offset per tile.
  struct placement {
    const tensor_mapping* mapping = nullptr;
    storage_order order{};
    std::vector<std::int64_t> offset;  // per tile; -1 where the tensor has no elements
    bool present() const noexcept { return mapping != nullptr; }
  };

  /// The transient buffers of the running step on one tile.
  struct tile_step {
    std::int64_t temporaries = -1, exchange = -1, send = -1;  // offsets
    std::int64_t temporaries_bytes = 0, exchange_bytes = 0, send_bytes = 0;
  };

  struct device {
    std::unique_ptr<std::byte[]> memory;
    std::vector<memory_bytes> always_live, live;
    std::vector<memory_bytes> trace;      // [step][tile]
    std::vector<std::int64_t> extent;     // per tile: highest byte reached
    std::vector<tile_step> step;          // per tile: the running step's transients
    std::vector<std::vector<placement>> weights;  // [node][tensor]
  };

  std::byte* image(int ipu, int tile) const noexcept {
    return devices_[static_cast<std::size_t>(ipu)].memory.get() +
           static_cast<std::size_t>(tile) * static_cast<std::size_t>(prog_.chip.bytes_per_tile);
  }

  /// Owned tiles of thread `k`: `k, k + threads, ...`.
  template <class F>
  void for_owned_tiles(unsigned k, int tiles, F&& f) {
    for (int t = static_cast<int>(k); t < tiles; t += static_cast<int>(team_.size())) f(t);
  }

  /// Takes `bytes` of `category` at `offset` from the dynamic base of `tile` on `ipu` (from
  /// byte 0 for always-live buffers, `dynamic = false`); returns the offset in the tile's
  /// image, or -1 for no bytes.
  std::int64_t allocate(int ipu, int tile, std::int64_t offset, std::int64_t bytes, memory_category category,
                        const char* what, bool dynamic = true) {
    if (bytes <= 0) return -1;
    device& d = devices_[static_cast<std::size_t>(ipu)];
    const std::int64_t at =
        offset + (dynamic ? prog_.dynamic_base[static_cast<std::size_t>(ipu)][static_cast<std::size_t>(tile)] : 0);
    if (offset < 0 || at + bytes > prog_.chip.bytes_per_tile)
      throw execution_error("ipu: the plan places " + std::to_string(bytes) + " bytes of " + what + " (" +
                            std::string(name_of(category)) + ") at byte " + std::to_string(at) + " of tile " +
                            std::to_string(tile) + " of IPU " + std::to_string(ipu) + ", past its " +
                            std::to_string(prog_.chip.bytes_per_tile) + " bytes");
    memory_bytes& live = d.live[static_cast<std::size_t>(tile)];
    switch (category) {
      case memory_category::weights: live.weights += bytes; break;
      case memory_category::code: live.code += bytes; break;
      case memory_category::activations: live.activations += bytes; break;
      case memory_category::temporaries: live.temporaries += bytes; break;
      case memory_category::exchange: live.exchange += bytes; break;
    }
    std::int64_t& extent = d.extent[static_cast<std::size_t>(tile)];
    extent = std::max(extent, at + bytes);
    return at;
  }
  void release(int ipu, int tile, std::int64_t offset, std::int64_t bytes, memory_category category) {
    if (offset < 0) return;
    memory_bytes& live = devices_[static_cast<std::size_t>(ipu)].live[static_cast<std::size_t>(tile)];
    (category == memory_category::activations ? live.activations
     : category == memory_category::temporaries ? live.temporaries
                                                : live.exchange) -= bytes;
  }

  /// Places node `j`'s output (or copy) on tile `tile` of `ipu`.
  void place_activation(int ipu, int j, int tile) {
    placement& pl = placed_[static_cast<std::size_t>(ipu)][static_cast<std::size_t>(j)];
    const tensor_mapping& m = prog_.mapping_on(ipu, j);
    pl.offset[static_cast<std::size_t>(tile)] =
        allocate(ipu, tile, prog_.activation_offset[static_cast<std::size_t>(ipu)][static_cast<std::size_t>(j)],
                 m.elements_on(tile) * static_cast<std::int64_t>(sizeof(T)), memory_category::activations, "an activation");
  }

  /// Places code and weights (`params`, each tensor as the tiles store it) on every tile.
  void prepare_devices(const std::vector<std::vector<std::vector<T>>>& params) {
    const std::int64_t bytes = prog_.chip.bytes_per_tile;
    devices_.resize(static_cast<std::size_t>(prog_.ipus));
    dies_.assign(static_cast<std::size_t>(prog_.ipus), std::vector<std::vector<int>>(static_cast<std::size_t>(prog_.size())));
    for (int i = 0; i < prog_.ipus; ++i)
      for (int j = 0; j < prog_.size(); ++j)
        if (prog_.held_to(i, j) >= 0) dies_[static_cast<std::size_t>(i)][static_cast<std::size_t>(prog_.held_to(i, j))].push_back(j);
    placed_.assign(static_cast<std::size_t>(prog_.ipus), std::vector<placement>(static_cast<std::size_t>(prog_.size())));
    for (int i = 0; i < prog_.ipus; ++i) {
      device& d = devices_[static_cast<std::size_t>(i)];
      d.memory = std::make_unique<std::byte[]>(static_cast<std::size_t>(bytes * tiles_));
      d.live.assign(static_cast<std::size_t>(tiles_), {});
      d.extent.assign(static_cast<std::size_t>(tiles_), 0);
      d.step.assign(static_cast<std::size_t>(tiles_), {});
      d.trace.assign(static_cast<std::size_t>(prog_.size()) * static_cast<std::size_t>(tiles_), {});
      d.weights.resize(static_cast<std::size_t>(prog_.size()));
      for (int j = 0; j < prog_.size(); ++j)
        if (prog_.at(j).ipu == i)
          for (int w = 0; w < prog_.plan_of(j).weight_tensors; ++w) {
            const tensor_mapping& m = prog_.plan_of(j).weights[static_cast<std::size_t>(w)];
            d.weights[static_cast<std::size_t>(j)].push_back(
                {&m, storage_order{m.elements(), 1, 1, 1}, std::vector<std::int64_t>(static_cast<std::size_t>(tiles_), -1)});
          }
      for (int t = 0; t < tiles_; ++t) {  // code (the plan's bytes, reserved), then the weights
        allocate(i, t, 0, prog_.always[static_cast<std::size_t>(i)][static_cast<std::size_t>(t)].code, memory_category::code,
                 "code", false);
        prog_.always_layout(i, t, [&](int j, int w, std::int64_t offset) {
          placement& pl = d.weights[static_cast<std::size_t>(j)][static_cast<std::size_t>(w)];
          const std::int64_t count = pl.mapping->elements_on(t);
          const std::int64_t at = allocate(i, t, offset, count * static_cast<std::int64_t>(sizeof(T)),
                                           memory_category::weights, "weights", false);
          if (at < 0) return;
          pl.offset[static_cast<std::size_t>(t)] = at;
          const std::vector<T>& values = params[static_cast<std::size_t>(j)][static_cast<std::size_t>(w)];
          std::memcpy(image(i, t) + at, values.data() + pl.mapping->units.begin(t), static_cast<std::size_t>(count) * sizeof(T));
        });
      }
      d.always_live = d.live;
    }
  }

  /// Copies storage elements `[s, s + n)` of `pl` (on `ipu`) to `dst`: an exchange read.
  void read_storage(int ipu, const placement& pl, std::int64_t s, std::int64_t n, T* dst) const {
    const tensor_mapping& m = *pl.mapping;
    const std::int64_t unit = m.unit_elements;
    while (n > 0) {
      const int tile = m.units.tile_of(s / unit);
      const std::int64_t begin = m.units.begin(tile) * unit, end = m.units.end(tile) * unit;
      const std::int64_t k = std::min(n, end - s);
      std::memcpy(dst, image(ipu, tile) + pl.offset[static_cast<std::size_t>(tile)] + (s - begin) * static_cast<std::int64_t>(sizeof(T)),
                  static_cast<std::size_t>(k) * sizeof(T));
      dst += k, s += k, n -= k;
    }
  }
  /// Copies channels `[c, c + n)` of position `pos` of `pl` to `dst`.
  void read_channels(int ipu, const placement& pl, std::int64_t pos, std::int64_t c, std::int64_t n, T* dst) const {
    while (n > 0) {
      const std::int64_t k = pl.order.run(c, n);
      read_storage(ipu, pl, pl.order.index(pos, c), k, dst);
      dst += k, c += k, n -= k;
    }
  }

  /// `[begin, end)` of tile `tile` in storage elements of mapping `m`.
  static std::pair<std::int64_t, std::int64_t> segment(const tensor_mapping& m, int tile) noexcept {
    if (tile >= m.tiles()) return {0, 0};
    return {m.units.begin(tile) * m.unit_elements, m.units.end(tile) * m.unit_elements};
  }

  /// A pointer into tile `tile`'s own image, checked to lie inside it.
  template <class U = T>
  U* own(int ipu, int tile, std::int64_t offset, std::int64_t count) const {
    const std::int64_t bytes = count * static_cast<std::int64_t>(sizeof(U));
    if (offset < 0 || offset + bytes > prog_.chip.bytes_per_tile)
      throw execution_error("ipu: a vertex on tile " + std::to_string(tile) + " reached outside its tile");
    return reinterpret_cast<U*>(image(ipu, tile) + offset);
  }
  T* own_exchange(int ipu, int tile, std::int64_t from, std::int64_t count) const {
    const tile_step& ts = devices_[static_cast<std::size_t>(ipu)].step[static_cast<std::size_t>(tile)];
    if ((from + count) * static_cast<std::int64_t>(sizeof(T)) > ts.exchange_bytes)
      throw execution_error("ipu: tile " + std::to_string(tile) + " needs more exchange memory than the plan gives it");
    return own(ipu, tile, ts.exchange + from * static_cast<std::int64_t>(sizeof(T)), count);
  }
  T* own_activation(int ipu, int j, int tile) const {
    const placement& pl = placed_[static_cast<std::size_t>(ipu)][static_cast<std::size_t>(j)];
    return own(ipu, tile, pl.offset[static_cast<std::size_t>(tile)], pl.mapping->elements_on(tile));
  }

  /// The slices of tile `tile`'s units in a conv step: `[begin, end)` of slice `k`.
  static std::pair<std::int64_t, std::int64_t> slice(const node_plan& p, int tile, std::int64_t k) noexcept {
    const std::int64_t begin = p.work.units.begin(tile), end = p.work.units.end(tile);
    const std::int64_t len = detail::div_up(end - begin, p.step.serial);
    return {std::min(end, begin + k * len), std::min(end, begin + (k + 1) * len)};
  }

  /// Calls `f(block, first position, last position, first unit)` for each block run of units `[u0, u1)`.
  template <class F>
  static void block_runs(const node_plan& p, std::int64_t u0, std::int64_t u1, F&& f) {
    const std::int64_t positions = p.step.positions;
    for (std::int64_t u = u0; u < u1;) {
      const std::int64_t b = u / positions, end = std::min(u1, (b + 1) * positions);
      f(b, u - b * positions, end - b * positions, u);
      u = end;
    }
  }

  /// Releases step `j`'s transients on its IPU and, on IPU `ipu`, the activations whose last
  /// reader there was step `j` (the graph's output excepted: it is read back after the run).
  void end_of_step(int ipu, int j, int tile) {
    if (j < 0) return;
    device& d = devices_[static_cast<std::size_t>(ipu)];
    if (prog_.at(j).ipu == ipu) {
      tile_step& ts = d.step[static_cast<std::size_t>(tile)];
      release(ipu, tile, ts.temporaries, ts.temporaries_bytes, memory_category::temporaries);
      release(ipu, tile, ts.exchange, ts.exchange_bytes, memory_category::exchange);
      release(ipu, tile, ts.send, ts.send_bytes, memory_category::exchange);
      ts = {};
    }
    if (j + 1 == prog_.size()) return;
    for (int src : dies_[static_cast<std::size_t>(ipu)][static_cast<std::size_t>(j)]) {
      placement& pl = placed_[static_cast<std::size_t>(ipu)][static_cast<std::size_t>(src)];
      if (!pl.present()) continue;
      release(ipu, tile, pl.offset[static_cast<std::size_t>(tile)], pl.mapping->elements_on(tile) * static_cast<std::int64_t>(sizeof(T)),
              memory_category::activations);
      pl.offset[static_cast<std::size_t>(tile)] = -1;
    }
  }

  /// Allocates step `j`'s output and transients on `tile` and records the tile's bytes.
  void begin_step(int j, int tile) {
    const node& n = prog_.at(j);
    const node_plan& p = prog_.plan_of(j);
    const int ipu = n.ipu;
    device& d = devices_[static_cast<std::size_t>(ipu)];
    if (tile < p.output.tiles()) place_activation(ipu, j, tile);
    const transient_bytes tr = transient_on(p.step, p.work.units.elements_on(tile));
    tile_step& ts = d.step[static_cast<std::size_t>(tile)];
    ts.temporaries_bytes = tr.temporaries;
    ts.exchange_bytes = tr.exchange;
    ts.send_bytes = p.sends ? p.copy.elements_on(tile) * static_cast<std::int64_t>(sizeof(T)) : 0;
    ts.temporaries = allocate(ipu, tile, p.buffers.temporaries, ts.temporaries_bytes, memory_category::temporaries, "partials");
    ts.exchange = allocate(ipu, tile, p.buffers.exchange, ts.exchange_bytes, memory_category::exchange, "exchange buffers");
    ts.send = allocate(ipu, tile, p.buffers.send, ts.send_bytes, memory_category::exchange, "a send buffer");
    d.trace[static_cast<std::size_t>(j) * static_cast<std::size_t>(tiles_) + static_cast<std::size_t>(tile)] =
        d.live[static_cast<std::size_t>(tile)];
  }

  /// The placement of node `src`'s output as read on `ipu`.
  const placement& input_on(int ipu, int src) const { return placed_[static_cast<std::size_t>(ipu)][static_cast<std::size_t>(src)]; }

  /// The channels of a batch norm's exchange buffer on a tile holding storage `[s0, s1)`:
  /// `(first channel, count)`; buffer index `k` holds channel `(first + k) % channels`.
  static std::pair<std::int64_t, std::int64_t> norm_channels(const storage_order& o, std::int64_t s0, std::int64_t s1) noexcept {
    if (o.blocks > 1) {
      const std::int64_t per_block = o.positions * o.block_channels;
      return {s0 / per_block * o.block_channels, ((s1 - 1) / per_block - s0 / per_block + 1) * o.block_channels};
    }
    const std::int64_t n = std::min(o.channels, s1 - s0);
    return {n == o.channels ? 0 : s0 % o.channels, n};
  }

  /// A working conv tile's exchange layout: each block it computes has `per_block` elements
  /// of weights (and bias) at the start of the buffer, blocks `[first, last]`; the input
  /// windows follow them.
  struct conv_block_layout {
    std::int64_t per_block, first, last;
  };
  static conv_block_layout conv_blocks(const node_plan& p, int tile) noexcept {
    const std::int64_t k = p.step.kernel;
    const std::int64_t per_block = (k * k * p.step.in_channels + (p.step.bias ? 1 : 0)) * p.step.block_channels;
    return {per_block, p.work.units.begin(tile) / p.step.positions, (p.work.units.end(tile) - 1) / p.step.positions};
  }

  /// A pooling's geometry and the input rows `[first, last)` its output elements `[o0, o1)` read.
  std::tuple<kernels::window_geometry, std::int64_t, std::int64_t> pooling_window(const node& n, std::int64_t o0,
                                                                                   std::int64_t o1) const noexcept {
    const kernels::window_geometry g = geometry_of(n);
    const std::int64_t c = n.out.channels();
    const auto [first, last] = g.input_rows(o0 / c, (o1 - 1) / c + 1);
    return {g, first, last};
  }

  /// Exchange phase of step `j` (slice `s`) for `tile`: gathers what its vertices read.
  void exchange(int j, int tile, std::int64_t s) {
    const node& n = prog_.at(j);
    const node_plan& p = prog_.plan_of(j);
    const int ipu = n.ipu;
    const auto [o0, o1] = segment(p.output, tile);
    if (o0 == o1 && n.kind != op::conv && n.kind != op::dense) return;
    switch (n.kind) {
      case op::input: break;
      case op::conv:
      case op::dense: {
        if (tile >= p.work.tiles() || p.work.units.elements_on(tile) == 0) return;
        const std::int64_t bc = p.step.block_channels, cin = p.step.in_channels, k = p.step.kernel;
        const auto [per_block, b_first, b_last] = conv_blocks(p, tile);
        const device& d = devices_[static_cast<std::size_t>(ipu)];
        const auto& w = d.weights[static_cast<std::size_t>(j)];
        if (s == 0) {  // the weights (and bias) of every block the tile computes
          for (std::int64_t b = b_first; b <= b_last; ++b) {
            T* dst = own_exchange(ipu, tile, (b - b_first) * per_block, per_block);
            for (std::int64_t r = 0; r < k * k * cin; ++r) read_storage(ipu, w[kernel_tensor], r * n.out.channels() + b * bc, bc, dst + r * bc);
            if (p.step.bias) read_storage(ipu, w[bias_tensor], b * bc, bc, dst + k * k * cin * bc);
          }
        }
        const auto [a, e] = slice(p, tile, s);
        const kernels::window_geometry g = geometry_of(n);
        const placement& in = input_on(ipu, n.input());
        const bool grouped = n.kind == op::conv && n.layer.groups > 1;
        std::int64_t at = (b_last - b_first + 1) * per_block;  // the windows follow the weights
        block_runs(p, a, e, [&](std::int64_t b, std::int64_t p0, std::int64_t p1, std::int64_t) {
          const auto [r0, r1] = g.input_rows(p0, p1);
          T* dst = own_exchange(ipu, tile, at, (r1 - r0) * g.in_width * cin);
          for (std::int64_t r = r0; r < r1; ++r)
            for (std::int64_t x = 0; x < g.in_width; ++x, dst += cin)
              read_channels(ipu, in, r * g.in_width + x, grouped ? b * cin : 0, cin, dst);
          at += (r1 - r0) * g.in_width * cin;
        });
        break;
      }
      case op::batch_norm: {
        const storage_order o = storage_order::of(p.output, n.out);
        const auto [first, count] = norm_channels(o, o0, o1);
        const auto& w = devices_[static_cast<std::size_t>(ipu)].weights[static_cast<std::size_t>(j)];
        T* dst = own_exchange(ipu, tile, 0, 2 * count);
        for (const std::size_t t : {scale_tensor, shift_tensor}) {  // scales first, then shifts
          T* to = dst + (t == scale_tensor ? 0 : count);
          const std::int64_t head = std::min(count, o.channels - first);
          read_storage(ipu, w[t], first, head, to);
          if (head < count) read_storage(ipu, w[t], 0, count - head, to + head);
        }
        break;
      }
      case op::add:
      case op::multiply: {
        if (p.step.kind != step_kind::remap) break;
        // Each input stored otherwise than the output: this tile's share, in the output's order.
        const storage_order o = storage_order::of(p.output, n.out);
        std::int64_t at = 0;
        for (int src : n.sources().subspan(1)) {
          if (prog_.mapping_on(ipu, src) == p.output) continue;
          const placement& in = input_on(ipu, src);
          T* dst = own_exchange(ipu, tile, at, o1 - o0);
          for (std::int64_t q = o0; q < o1;) {
            const auto [pos, c] = o.locate(q);
            const std::int64_t len = std::min(o1 - q, o.run(c, o.channels - c));
            read_channels(ipu, in, pos, c, len, dst + (q - o0));
            q += len;
          }
          at += o1 - o0;
        }
        break;
      }
      case op::concat: {  // the output is stored in logical order: gather each run from its input
        const std::int64_t channels = n.out.channels();
        T* dst = own_exchange(ipu, tile, 0, o1 - o0);
        for (std::int64_t e = o0; e < o1;) {
          const std::int64_t pos = e / channels, c = e % channels;
          std::int64_t first = 0;  // the input holding channel c, and its first channel
          int src = n.input();
          for (int s : n.sources()) {
            src = s;
            if (c < first + prog_.at(s).out.channels()) break;
            first += prog_.at(s).out.channels();
          }
          const std::int64_t len = std::min(o1 - e, first + prog_.at(src).out.channels() - c);
          read_channels(ipu, input_on(ipu, src), pos, c - first, len, dst + (e - o0));
          e += len;
        }
        break;
      }
      case op::max_pool:
      case op::avg_pool: {
        const auto [g, r0, r1] = pooling_window(n, o0, o1);
        const std::int64_t c = n.out.channels();
        T* dst = own_exchange(ipu, tile, 0, (r1 - r0) * g.in_width * c);
        const placement& in = input_on(ipu, n.input());
        for (std::int64_t r = r0; r < r1; ++r)
          for (std::int64_t x = 0; x < g.in_width; ++x, dst += c) read_channels(ipu, in, r * g.in_width + x, 0, c, dst);
        break;
      }
      case op::global_avg_pool: {
        const std::int64_t c = n.out.channels(), hw = n.in.dim[1] * n.in.dim[2];
        T* dst = own_exchange(ipu, tile, 0, (o1 - o0) * hw);
        const placement& in = input_on(ipu, n.input());
        for (std::int64_t e = o0; e < o1; ++e)
          for (std::int64_t q = 0; q < hw; ++q) read_channels(ipu, in, e / c * hw + q, e % c, 1, dst++);
        break;
      }
      case op::softmax: {
        const std::int64_t c = n.out.channels();
        const std::int64_t r0 = o0 / c, r1 = (o1 - 1) / c + 1;
        T* dst = own_exchange(ipu, tile, 0, (r1 - r0) * c);
        const placement& in = input_on(ipu, n.input());
        for (std::int64_t r = r0; r < r1; ++r) read_channels(ipu, in, r, 0, c, dst + (r - r0) * c);
        break;
      }
      case op::relu: break;
    }
  }

  /// Compute phase of step `j` (slice `s`) on `tile`: its vertices, reading only its memory.
  void compute(int j, int tile, std::int64_t s) {
    const node& n = prog_.at(j);
    const node_plan& p = prog_.plan_of(j);
    const int ipu = n.ipu;
    const auto [o0, o1] = segment(p.output, tile);
    if (o0 == o1) return;
    T* y = own_activation(ipu, j, tile);
    const auto operand = [&](int src) { return own_activation(ipu, src, tile); };
    switch (n.kind) {
      case op::input: std::copy_n(input_ + o0, o1 - o0, y); break;
      case op::conv:
      case op::dense: {
        const std::int64_t u_begin = p.work.units.begin(tile);
        const std::int64_t bc = p.step.block_channels, cin = p.step.in_channels, k = p.step.kernel;
        const auto [per_block, b_first, b_last] = conv_blocks(p, tile);
        const auto [a, e] = slice(p, tile, s);
        const kernels::window_geometry g = geometry_of(n);
        const tile_step& ts = devices_[static_cast<std::size_t>(ipu)].step[static_cast<std::size_t>(tile)];
        Acc* partials = own<Acc>(ipu, tile, ts.temporaries, (e - a) * bc);
        std::int64_t at = (b_last - b_first + 1) * per_block;
        block_runs(p, a, e, [&](std::int64_t b, std::int64_t p0, std::int64_t p1, std::int64_t u) {
          const auto [r0, r1] = g.input_rows(p0, p1);
          const std::int64_t window = (r1 - r0) * g.in_width * cin;
          const T* w = own_exchange(ipu, tile, (b - b_first) * per_block, per_block);
          const kernels::image_view<T> in{own_exchange(ipu, tile, at, window), r0, g.in_width * cin, cin};
          kernels::conv<T, Acc, T>(g, in, kernels::weight_view<T>{w, cin, bc}, bc, p.step.bias ? w + k * k * cin * bc : nullptr,
                                   p0, p1, partials, y + (u - u_begin) * bc, bc);
          at += window;
        });
        break;
      }
      case op::batch_norm: {
        const storage_order o = storage_order::of(p.output, n.out);
        const auto [first, count] = norm_channels(o, o0, o1);
        const T* params = own_exchange(ipu, tile, 0, 2 * count);
        const T* x = operand(n.input());
        for (std::int64_t q = o0; q < o1;) {
          const auto [pos, c] = o.locate(q);
          const std::int64_t len = std::min(o1 - q, o.run(c, o.channels - c));
          const std::int64_t at = (c - first + o.channels) % o.channels;
          kernels::affine(x + (q - o0), y + (q - o0), len, params + at, params + count + at);
          q += len;
        }
        break;
      }
      case op::relu: kernels::relu(operand(n.input()), y, o1 - o0); break;
      case op::add:
      case op::multiply: {
        std::array<const T*, max_inputs> inputs{};
        std::int64_t at = 0;  // the exchange holds the remapped inputs in order
        for (int k = 0; k < n.input_count; ++k) {
          const int src = n.inputs[static_cast<std::size_t>(k)];
          const bool local = k == 0 || prog_.mapping_on(ipu, src) == p.output;
          inputs[static_cast<std::size_t>(k)] = local ? operand(src) : own_exchange(ipu, tile, at, o1 - o0);
          at += local ? 0 : o1 - o0;
        }
        if (n.kind == op::add) {
          kernels::sum(inputs.data(), n.input_count, y, o1 - o0);
        } else {
          kernels::product(inputs.data(), n.input_count, y, o1 - o0);
        }
        break;
      }
      case op::concat: std::copy_n(own_exchange(ipu, tile, 0, o1 - o0), o1 - o0, y); break;
      case op::max_pool:
      case op::avg_pool: {
        const auto [g, r0, r1] = pooling_window(n, o0, o1);
        const std::int64_t c = n.out.channels();
        const kernels::image_view<T> in{own_exchange(ipu, tile, 0, (r1 - r0) * g.in_width * c), r0, g.in_width * c, c};
        kernels::pool(n.kind == op::max_pool ? kernels::pool_kind::max : kernels::pool_kind::average, g, in, c, o0, o1, y);
        break;
      }
      case op::global_avg_pool: {
        const std::int64_t hw = n.in.dim[1] * n.in.dim[2];
        const T* x = own_exchange(ipu, tile, 0, (o1 - o0) * hw);
        for (std::int64_t e = o0; e < o1; ++e) y[e - o0] = kernels::mean(x + (e - o0) * hw, 1, hw);
        break;
      }
      case op::softmax: {
        const std::int64_t c = n.out.channels();
        const std::int64_t r0 = o0 / c, r1 = (o1 - 1) / c + 1;
        const T* x = own_exchange(ipu, tile, 0, (r1 - r0) * c);
        for (std::int64_t r = r0; r < r1; ++r) {
          const std::int64_t c0 = std::max(o0, r * c) - r * c, c1 = std::min(o1, (r + 1) * c) - r * c;
          kernels::softmax_row(x + (r - r0) * c, c, c0, c1, y + (r * c + c0 - o0));
        }
        break;
      }
    }
  }

  /// Reads the graph's output back from its tiles, in logical order.
  void read_output(T* output) const {
    const int last = prog_.size() - 1;
    const node& n = prog_.at(last);
    const placement& pl = placed_[static_cast<std::size_t>(n.ipu)][static_cast<std::size_t>(last)];
    const std::int64_t c = n.out.channels();
    for (std::int64_t pos = 0; pos < n.out.elements() / c; ++pos) read_channels(n.ipu, pl, pos, 0, c, output + pos * c);
  }

  const program& prog_;
  team& team_;
  int tiles_;
  const T* input_ = nullptr;
  std::vector<device> devices_;
  std::vector<std::vector<placement>> placed_;       // [ipu][node]
  std::vector<std::vector<std::vector<int>>> dies_;  // [ipu][step]: outputs whose last reader there it is
};

}  // namespace ipu::runtime
