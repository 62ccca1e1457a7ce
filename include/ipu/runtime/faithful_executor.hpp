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
/// or phases repeats exchange and compute per phase, `step_model::phases`). The op's kernel (`ipu/ops/kernels/`) does both
/// phases' work on each tile, through a `tile_context`. Exchange is a copy between tile images; a vertex is
/// handed only pointers into its own tile, checked. An output read on another IPU is then
/// gathered into a send buffer and copied over the IPU-Link into the reading IPU's copy.
///
/// A step of an `ipu::on_host` block runs on the host with its op's fast kernel: what it
/// reads is read back from the tiles, and its output is written to the copies the plan places
/// on the IPUs that read it.

#include <ipu/core/arith.hpp>
#include <ipu/core/dtype.hpp>
#include <ipu/plan/memory.hpp>
#include <ipu/plan/model.hpp>
#include <ipu/runtime/execution.hpp>
#include <ipu/runtime/fast_executor.hpp>
#include <ipu/runtime/kernel_set.hpp>
#include <ipu/runtime/program.hpp>
#include <ipu/runtime/team.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace ipu::runtime {

template <ElementType T, class Acc>
class faithful_executor;

/// What an op's `exchange` and `compute` kernels are handed: one step on one tile. Every
/// pointer it gives is into the tile's own memory image, checked to lie inside it; other
/// tensors are read through the exchange (`read_storage`, `read_channels`).
template <ElementType T, class Acc>
class tile_context : public step_context<T, Acc> {
 public:
  using step_context<T, Acc>::n;
  using step_context<T, Acc>::p;
  using step_context<T, Acc>::index;
  const int tile;             ///< the tile
  const std::int64_t slice;   ///< the phase of a conv-like step (`step_model::phases`); else 0
  const std::int64_t first;  ///< the tile's first element of the output, in storage order
  const std::int64_t last;   ///< one past its last

  /// Step `j`, slice `s`, on tile `t` of the step's IPU, in `e`.
  tile_context(const faithful_executor<T, Acc>& e, int j, int t, std::int64_t s)
      : tile_context(e, j, t, s, e.segment(e.prog_.plan_of(j).output, t)) {}

  /// Node `k` of the program.
  const node& node_at(int k) const noexcept { return e_.prog_.at(k); }
  /// How node `src`'s output is mapped on the step's IPU.
  const tensor_mapping& mapping_of(int src) const noexcept { return e_.prog_.mapping_on(ipu_, src); }
  /// Where node `src`'s output lives on the step's IPU, for `read_channels`.
  const auto& input(int src) const noexcept { return e_.input_on(ipu_, src); }
  /// Where the node's device tensor `w` lives (in the order of its op's `device_tensors`).
  const auto& weights(std::size_t w) const noexcept {
    return e_.devices_[static_cast<std::size_t>(ipu_)].weights[static_cast<std::size_t>(index)][w];
  }
  /// Exchange: copies storage elements `[s, s + count)` of tensor `pl` to `dst`.
  template <class Placement>
  void read_storage(const Placement& pl, std::int64_t s, std::int64_t count, T* dst) const {
    e_.read_storage(ipu_, pl, s, count, dst);
  }
  /// Exchange: copies channels `[c, c + count)` of position `pos` of tensor `pl` to `dst`.
  template <class Placement>
  void read_channels(const Placement& pl, std::int64_t pos, std::int64_t c, std::int64_t count, T* dst) const {
    e_.read_channels(ipu_, pl, pos, c, count, dst);
  }
  /// Elements `[from, from + count)` of the tile's exchange buffer, as values of `U`; throws
  /// `execution_error` past the bytes the plan gives it.
  template <class U = T>
  U* exchange_buffer(std::int64_t from, std::int64_t count) const {
    return e_.template own_exchange<U>(ipu_, tile, from, count);
  }
  /// The tile's elements of the output.
  T* output() const { return e_.own_activation(ipu_, index, tile); }
  /// The tile's elements of node `src`'s output (mapped as this step's output).
  const T* operand(int src) const { return e_.own_activation(ipu_, src, tile); }
  /// `count` partials of type `U` in the tile's temporaries.
  template <class U = Acc>
  U* partials(std::int64_t count) const {
    return e_.template own<U>(ipu_, tile, e_.devices_[static_cast<std::size_t>(ipu_)].step[static_cast<std::size_t>(tile)].temporaries,
                              count);
  }
  /// Exchange: copies partials `[from, from + count)` (f32) of this step from the temporaries
  /// of tile `src` of the step's IPU, where an earlier phase left them, to `dst`.
  void read_partials(int src, std::int64_t from, std::int64_t count, float* dst) const {
    const auto& ts = e_.devices_[static_cast<std::size_t>(ipu_)].step[static_cast<std::size_t>(src)];
    if ((from + count) * static_cast<std::int64_t>(sizeof(float)) > ts.temporaries_bytes)
      throw execution_error("ipu: tile " + std::to_string(tile) + " reads partials past those tile " + std::to_string(src) +
                            " holds");
    std::memcpy(dst, e_.template own<float>(ipu_, src, ts.temporaries + from * static_cast<std::int64_t>(sizeof(float)), count),
                static_cast<std::size_t>(count) * sizeof(float));
  }
  /// The batch the input step reads, in logical order, as the input stream carries it
  /// (`ops::input`).
  const void* batch() const noexcept { return e_.input_; }

 private:
  tile_context(const faithful_executor<T, Acc>& e, int j, int t, std::int64_t s, std::pair<std::int64_t, std::int64_t> out)
      : step_context<T, Acc>{e.prog_.at(j), e.prog_.plan_of(j), j}, tile(t), slice(s), first(out.first),
        last(out.second), e_(e), ipu_(e.prog_.at(j).ipu) {}
  const faithful_executor<T, Acc>& e_;
  int ipu_;
};

/// Runs a `program`'s steps on every tile's memory image (see the file comment).
/// \tparam T   storage element type, `f32` or `f16`
/// \tparam Acc partials type, `f32` or `f16`: the scalar kernels accumulate in it
template <ElementType T, class Acc>
class faithful_executor {
 public:
  /// Allocates `bytes_per_tile` for every tile of every IPU of `prog` and places code and the
  /// weights `params` (one entry per node), to run with `kernels` (one per node); `prog` and
  /// `threads` must outlive the executor.
  /// Throws `execution_error` if the plan places a buffer past a tile's memory (a plan that
  /// fits never does).
  faithful_executor(const program& prog, const parameter_set& params, std::vector<op_kernel<T, Acc>> kernels,
                    team& threads)
      : prog_(prog), team_(threads), kernels_(std::move(kernels)), tiles_(prog.chip.tiles) {
    if (std::any_of(prog.nodes.begin(), prog.nodes.end(), [](const node& n) { return n.on_host(); }))
      host_ = std::make_unique<fast_executor<T, Acc>>(prog, params, kernels_, threads, step_selection{.host_only = true});
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
  void begin(const void* input) {
    input_ = input;
    if (host_) host_->begin(input);
    for (device& d : devices_) {
      d.live = d.always_live;
      std::fill(d.step.begin(), d.step.end(), tile_step{});
    }
    for (auto& per_ipu : placed_) std::fill(per_ipu.begin(), per_ipu.end(), placement{});
  }

  /// Reads the graph's output back from its tiles, in logical order.
  void end(T* output) { read_output(output); }

  /// Reads node `j`'s output, just computed by its step, into `out`, in logical order: from
  /// the tiles of its IPU, or from the host for a host step.
  void output_of(int j, std::vector<T>& out) const {
    const node& n = prog_.at(j);
    out.resize(static_cast<std::size_t>(n.out.elements()));
    read_tensor(j, out.data());
  }

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
    if (n.on_host()) {
      host_step(j);
      return;
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
    const std::int64_t slices = p.step.phases();
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
    if (j + 1 == prog_.size()) end_of_program(j);
  }

 private:
  /// Runs host step `j` (`ipu::on_host`): reads what it reads from the IPUs' tiles back to the
  /// host, runs its op's host kernel, and writes its output to each IPU that reads it, where
  /// the plan holds the copy.
  void host_step(int j) {
    const node& n = prog_.at(j);
    team_.run([&](unsigned k) {
      for (int i = 0; i < prog_.ipus; ++i) for_owned_tiles(k, tiles_, [&](int t) { end_of_step(i, j - 1, t); });
    });
    for (int src : n.sources())
      if (!prog_.at(src).on_host()) read_tensor(src, host_->tensor(src));
    host_->step(j);
    bool copied = false;  // a node fused into an earlier host step has no output of its own
    for (int b = 0; b < prog_.ipus; ++b) copied = copied || prog_.copies(b, j);
    if (copied) write_host_output(j);
    if (j + 1 == prog_.size()) end_of_program(j);
  }

  /// Writes host step `j`'s output to each IPU that reads it, where the plan holds the copy.
  void write_host_output(int j) {
    const tensor_mapping& copy = prog_.plan_of(j).copy;  // element by element: logical order
    const T* out = host_->tensor(j);
    team_.run([&](unsigned k) {
      for (int b = 0; b < prog_.ipus; ++b) {
        if (!prog_.copies(b, j)) continue;
        for_owned_tiles(k, copy.tiles(), [&](int t) {
          place_activation(b, j, t);
          const auto [e0, e1] = segment(copy, t);
          std::memcpy(own(b, t, placed_[static_cast<std::size_t>(b)][static_cast<std::size_t>(j)].offset[static_cast<std::size_t>(t)], e1 - e0),
                      out + e0, static_cast<std::size_t>(e1 - e0) * sizeof(T));
        });
      }
    });
  }

  /// Releases what the last step `j` leaves behind on every IPU.
  void end_of_program(int j) {
    team_.run([&](unsigned k) {
      for (int i = 0; i < prog_.ipus; ++i) for_owned_tiles(k, tiles_, [&](int t) { end_of_step(i, j, t); });
    });
  }

  friend class tile_context<T, Acc>;

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
  template <class U = T>
  U* own_exchange(int ipu, int tile, std::int64_t from, std::int64_t count) const {
    const tile_step& ts = devices_[static_cast<std::size_t>(ipu)].step[static_cast<std::size_t>(tile)];
    if ((from + count) * static_cast<std::int64_t>(sizeof(U)) > ts.exchange_bytes)
      throw execution_error("ipu: tile " + std::to_string(tile) + " needs more exchange memory than the plan gives it");
    return own<U>(ipu, tile, ts.exchange + from * static_cast<std::int64_t>(sizeof(U)), count);
  }
  T* own_activation(int ipu, int j, int tile) const {
    const placement& pl = placed_[static_cast<std::size_t>(ipu)][static_cast<std::size_t>(j)];
    return own(ipu, tile, pl.offset[static_cast<std::size_t>(tile)], pl.mapping->elements_on(tile));
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

  /// Whether `tile` takes part in step `j`: it holds part of the output, or units of the
  /// step's work where that is mapped apart from the output (a conv-like step's and a
  /// reduction's are).
  bool works(const tile_context<T, Acc>& c) const noexcept {
    return c.first < c.last || (c.p.step.kind != step_kind::none && c.p.work.units.elements_on(c.tile) > 0);
  }

  /// Exchange phase of step `j` (slice `s`) for `tile`: its op's `exchange` kernel gathers
  /// what the tile's vertices read.
  void exchange(int j, int tile, std::int64_t s) {
    const tile_context<T, Acc> c{*this, j, tile, s};
    if (works(c)) kernels_[static_cast<std::size_t>(j)].exchange(c);
  }

  /// Compute phase of step `j` (slice `s`) on `tile`: its op's `compute` kernel, reading only
  /// the tile's memory.
  void compute(int j, int tile, std::int64_t s) {
    const tile_context<T, Acc> c{*this, j, tile, s};
    if (works(c)) kernels_[static_cast<std::size_t>(j)].compute(c);
  }

  /// Reads the graph's output back from its tiles (or from the host, after a host step), in
  /// logical order.
  void read_output(T* output) const { read_tensor(prog_.size() - 1, output); }

  /// Reads node `j`'s output (held on its IPU, or made on the host) into `dst`, in logical order.
  void read_tensor(int j, T* dst) const {
    const node& n = prog_.at(j);
    if (n.on_host()) {
      std::copy_n(host_->tensor(j), n.out.elements(), dst);
      return;
    }
    const placement& pl = placed_[static_cast<std::size_t>(n.ipu)][static_cast<std::size_t>(j)];
    const std::int64_t c = n.out.channels();
    for (std::int64_t pos = 0; pos < n.out.elements() / c; ++pos) read_channels(n.ipu, pl, pos, 0, c, dst + pos * c);
  }

  const program& prog_;
  team& team_;
  std::vector<op_kernel<T, Acc>> kernels_;  // per node
  std::unique_ptr<fast_executor<T, Acc>> host_;  // the host steps', if the program has any
  int tiles_;
  const void* input_ = nullptr;  // the batch, as the input stream carries it
  std::vector<device> devices_;
  std::vector<std::vector<placement>> placed_;       // [ipu][node]
  std::vector<std::vector<std::vector<int>>> dies_;  // [ipu][step]: outputs whose last reader there it is
};

}  // namespace ipu::runtime
