#pragma once
/// \file
/// `runtime::faithful_training`: the faithful mode of `ipu::trainer`. Every tile of the IPU owns
/// a memory image of `bytes_per_tile`, and every buffer of the training plan
/// (`plan/training.hpp`) is placed where the plan places it: code, weights, master weights and
/// optimiser state from byte 0, always live; above the tile's dynamic base, each stashed,
/// recomputed or dropped-out activation, each gradient and each step's scratch from the step
/// the plan allocates it at until its last step. The steps run in the plan's order (forward;
/// recompute and backward, the loss in the last node's backward step; update), a recompute
/// step computing again an output that was not kept.
///
/// Every tensor a step reads comes from the tiles, and every tensor it writes goes back to them
/// before the next step: the activations and their gradients in the storage order of their
/// mapping, in the graph's element type; the weights' gradients in it too, held until their
/// update step; the master weights in f32 and the optimiser's state in the wider of the two
/// types. A step's kernels are the host's (`training_pass`): they compute over the tensors
/// gathered from the tiles, and a step's temporaries and exchange buffers are reserved as the
/// plan sizes them. Batch norm's batch statistics, a few values per channel, are kept on the
/// host from its forward (or recompute) step to its backward step.
///
/// Each allocation is checked against the buffers live on its tile: two live buffers sharing a
/// byte, or a buffer past the tile's memory, is an `execution_error` naming both. The bytes live
/// on each tile at each step (`measured_usage`) and the highest byte each tile reaches
/// (`measured_extent`) are measured from the allocations, to compare with the plan's.

#include <ipu/core/dtype.hpp>
#include <ipu/plan/training.hpp>
#include <ipu/runtime/execution.hpp>
#include <ipu/runtime/training_pass.hpp>
#include <ipu/runtime/weights.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace ipu::runtime {

/// Runs training plan `Plan`'s steps on every tile's memory image (see the file comment).
/// \tparam T    the graph's element type, `f32` or `f16`
/// \tparam Plan the training plan's type (`training_plan<N, S, Ipus>`)
template <ElementType T, class Plan>
class faithful_training {
 public:
  /// Allocates `bytes_per_tile` for every tile of IPU 0 and places the code and the always-live
  /// tensors for `plan`, whose steps `pass` computes; both must outlive this object. Throws
  /// `execution_error` if the plan places a buffer past a tile's memory or over another.
  faithful_training(const Plan& plan, training_pass<T>& pass)
      : plan_(plan), pass_(pass), tiles_(plan.chip().tiles), tile_bytes_(plan.chip().bytes_per_tile),
        memory_(new std::byte[static_cast<std::size_t>(tiles_) * static_cast<std::size_t>(tile_bytes_)]),
        live_(static_cast<std::size_t>(tiles_)), extent_(static_cast<std::size_t>(tiles_), 0),
        base_(static_cast<std::size_t>(tiles_), 0),
        trace_(Plan::step_count * static_cast<std::size_t>(tiles_)) {
    lay_out_always_live();
    plan.for_each_buffer([&](const training_buffer& b) {
      dynamic_.push_back({b, plan.placed_at(b), std::vector<std::int64_t>(static_cast<std::size_t>(tiles_), -1)});
    });
    starting_.resize(Plan::step_count);
    ending_.resize(Plan::step_count);
    for (std::size_t k = 0; k < dynamic_.size(); ++k) {
      starting_[static_cast<std::size_t>(dynamic_[k].b.first)].push_back(k);
      ending_[static_cast<std::size_t>(dynamic_[k].b.last)].push_back(k);
    }
  }
  faithful_training(const faithful_training&) = delete;
  faithful_training& operator=(const faithful_training&) = delete;

  /// Writes node `j`'s weight tensor `w` (`values` in f32) in the graph's element type.
  void write_weights(int j, int w, std::span<const float> values) { write_tensor(weights_of(j, w).weights, values.data()); }
  /// Writes the values the update of node `j`'s tensor `w` reads and writes: its master copy
  /// ("16.32"), or without one the weights themselves.
  void write_master(int j, int w, std::span<const float> values) {
    layer_tensor& t = weights_of(j, w);
    write_tensor(t.master.mapping ? t.master : t.weights, values.data());
  }
  /// Writes slot `slot` of the optimiser's state of node `j`'s tensor `w`, in its type.
  void write_state(int j, int w, int slot, std::span<const float> values) {
    write_tensor(weights_of(j, w).state[static_cast<std::size_t>(slot)], values.data());
  }
  /// Reads what `write_master` wrote into `values`.
  void read_master(int j, int w, std::span<float> values) const {
    const auto& t = weights_of(j, w);
    read_tensor(t.master.mapping ? t.master : t.weights, values.data());
  }
  /// Reads what `write_state` wrote into `values`.
  void read_state(int j, int w, int slot, std::span<float> values) const {
    read_tensor(weights_of(j, w).state[static_cast<std::size_t>(slot)], values.data());
  }

  /// Runs the forward steps of the plan, with the pass begun (`training_pass::begin`): with
  /// only the always-live buffers in place (also after a step that failed or skipped its
  /// update), the layers' weights in the graph's element type are written to the tiles first.
  void forward() {
    for (int tile = 0; tile < tiles_; ++tile) live_[static_cast<std::size_t>(tile)].resize(always_intervals_[static_cast<std::size_t>(tile)]);
    now_ = always_;
    for (dynamic_buffer& d : dynamic_) std::fill(d.offset.begin(), d.offset.end(), -1);
    for (int j = 0; j < static_cast<int>(Plan::size); ++j)
      if (const layer_weights* l = pass_.weights_of(j))
        for (std::size_t w = 0; w < l->tensors().size(); ++w) write_weights(j, static_cast<int>(w), pass_.rounded_weight(j, w));
    for (int s = 0; s < static_cast<int>(Plan::step_count); ++s)
      if (plan_.steps[static_cast<std::size_t>(s)].phase == step_phase::forward) run(s);
  }

  /// Runs the recompute and backward steps. In the last node's backward step, `loss()` is called
  /// with the output of node `from` read from the tiles (`training_pass::value`): it sets
  /// `training_pass::grad_of(from)`, and the steps of `from` and the nodes before it follow.
  /// Then reads every weight gradient back from the tiles into the pass's gradients, where they
  /// live until their update step.
  template <class Loss>
  void backward(int from, Loss&& loss) {
    from_ = from;
    for (int s = 0; s < static_cast<int>(Plan::step_count); ++s) {
      const step_phase ph = plan_.steps[static_cast<std::size_t>(s)].phase;
      if (ph == step_phase::recompute || ph == step_phase::backward) run(s, loss);
    }
    for (int j = 0; j < static_cast<int>(Plan::size); ++j)
      if (layer_weights* g = pass_.weight_grads_of(j)) read_weight_grads(j, *g);
  }

  /// Runs the update steps: `update(j)` for each node with trainable tensors, in the plan's
  /// order, reading its gradients from the pass and its master weights and state through
  /// `read_master` and `read_state`, and writing them back with `write_master` and `write_state`.
  template <class Update>
  void update(Update&& update) {
    for (int s = 0; s < static_cast<int>(Plan::step_count); ++s)
      if (plan_.steps[static_cast<std::size_t>(s)].phase == step_phase::update) {
        begin_step(s);
        update(plan_.steps[static_cast<std::size_t>(s)].node);
        end_step(s);
      }
  }

  /// The bytes `tile` held, by category, while step `step` ran (measured from the allocations
  /// of the last training step).
  training_bytes measured_usage(int tile, int step) const {
    check_tile(tile);
    if (step < 0 || step >= static_cast<int>(Plan::step_count))
      throw std::out_of_range("ipu::trainer: step " + std::to_string(step) + " of a training step of " +
                              std::to_string(Plan::step_count));
    return trace_[static_cast<std::size_t>(step) * static_cast<std::size_t>(tiles_) + static_cast<std::size_t>(tile)];
  }
  /// One past the highest byte any buffer of `tile` has reached, its size aligned to
  /// `buffer_alignment` as the plan counts it.
  std::int64_t measured_extent(int tile) const {
    check_tile(tile);
    return extent_[static_cast<std::size_t>(tile)];
  }

 private:
  /// A tensor placed on the tiles: its mapping, bytes per element, category and where it
  /// starts on each tile (-1 where it has no elements).
  struct placed_tensor {
    const tensor_mapping* mapping = nullptr;
    std::int64_t element_bytes = 0;
    training_category category{};
    std::vector<std::int64_t> offset;
  };
  /// A layer tensor's always-live copies.
  struct layer_tensor {
    placed_tensor weights, master;
    std::vector<placed_tensor> state;
  };
  /// A dynamic buffer of the plan, where the plan places it, and where it is while live.
  struct dynamic_buffer {
    training_buffer b;
    std::pair<std::int64_t, std::int64_t> at;  // from the dynamic base: a tensor's, -1; a scratch's temporaries, exchange
    std::vector<std::int64_t> offset;           // per tile while live; -1 otherwise
  };
  /// A live allocation on a tile: `[begin, end)` and what it holds.
  struct interval {
    std::int64_t begin = 0, end = 0;
    std::string what;
  };

  std::byte* image(int tile) const noexcept {
    return memory_.get() + static_cast<std::size_t>(tile) * static_cast<std::size_t>(tile_bytes_);
  }
  void check_tile(int tile) const {
    if (tile < 0 || tile >= tiles_)
      throw std::out_of_range("ipu::trainer: tile " + std::to_string(tile) + " of " + std::to_string(tiles_));
  }

  /// What buffer `b` holds, for errors: `"the gradient of stage1.conv"`, or for a step's
  /// scratch the step: `"the backward step of stage1.conv"`.
  std::string describe(const training_buffer& b) const {
    const std::string path(plan_.at(b.node).path.view());
    switch (b.category) {
      case training_category::activations: return (b.input >= 0 ? "the dropped-out input of " : "the output of ") + path;
      case training_category::recomputed: return (b.input >= 0 ? "the dropped-out input, again, of " : "the recomputed output of ") + path;
      case training_category::gradients:
        return (b.input >= 0 ? "the gradient of the dropped-out input of " : b.tensor >= 0 ? "a weight gradient of " : "the gradient of ") + path;
      default: {
        const step_phase ph = plan_.steps[static_cast<std::size_t>(b.first)].phase;
        return std::string(ph == step_phase::forward ? "the forward" : ph == step_phase::backward ? "the backward" : "the recompute") +
               " step of " + path;
      }
    }
  }

  /// Takes `bytes` of `category` at `at` on `tile` (`at` from byte 0); returns `at`, or -1 for
  /// no bytes. Throws if the bytes reach past the tile or over a live allocation.
  std::int64_t allocate(int tile, std::int64_t at, std::int64_t bytes, training_category category, std::string what) {
    if (bytes <= 0) return -1;
    if (at < 0 || at + bytes > tile_bytes_)
      throw execution_error("ipu::trainer: the training plan places " + std::to_string(bytes) + " bytes of " + what +
                            " at byte " + std::to_string(at) + " of tile " + std::to_string(tile) + ", past its " +
                            std::to_string(tile_bytes_) + " bytes");
    auto& on = live_[static_cast<std::size_t>(tile)];
    for (const interval& i : on)
      if (at < i.end && i.begin < at + bytes)
        throw execution_error("ipu::trainer: the training plan places " + what + " over " + i.what + " on tile " +
                              std::to_string(tile) + " (bytes " + std::to_string(std::max(at, i.begin)) + " to " +
                              std::to_string(std::min(at + bytes, i.end)) + ")");
    on.push_back({at, at + bytes, std::move(what)});
    now_[static_cast<std::size_t>(tile)][category] += bytes;
    std::int64_t& e = extent_[static_cast<std::size_t>(tile)];
    e = std::max(e, at + aligned(bytes));
    return at;
  }
  void release(int tile, std::int64_t at, std::int64_t bytes, training_category category) {
    if (at < 0) return;
    auto& on = live_[static_cast<std::size_t>(tile)];
    on.erase(std::find_if(on.begin(), on.end(), [&](const interval& i) { return i.begin == at; }));
    now_[static_cast<std::size_t>(tile)][category] -= bytes;
  }

  /// Code from byte 0 (the plan's bytes, reserved), then each always-live tensor in the order
  /// of `for_each_always_live_tensor`, each part aligned; the dynamic base follows.
  void lay_out_always_live() {
    now_.assign(static_cast<std::size_t>(tiles_), {});
    layers_.resize(Plan::size);
    for (int j = 0; j < static_cast<int>(Plan::size); ++j) {
      const training_node& t = plan_.node_of(j);
      for (int w = 0; w < t.tensor_count; ++w) {
        layer_tensor& l = layers_[static_cast<std::size_t>(j)].emplace_back();
        const tensor_mapping* m = &t.tensors[static_cast<std::size_t>(w)].mapping;
        l.weights = {m, static_cast<std::int64_t>(sizeof(T)), training_category::weights, {}};
        if (!t.tensors[static_cast<std::size_t>(w)].trainable) continue;
        const std::int64_t ub = plan_.update_bytes(j);
        if (ub > static_cast<std::int64_t>(sizeof(T))) l.master = {m, ub, training_category::master_weights, {}};
        l.state.assign(static_cast<std::size_t>(plan_.train.optimizer.state_tensors()),
                       placed_tensor{m, ub, training_category::optimizer_state, {}});
      }
    }
    for (int tile = 0; tile < tiles_; ++tile) {
      std::int64_t at = 0;
      const auto place = [&](placed_tensor& p, const std::string& what) {
        p.offset.resize(static_cast<std::size_t>(tiles_), -1);
        const std::int64_t bytes = p.mapping->elements_on(tile) * p.element_bytes;
        p.offset[static_cast<std::size_t>(tile)] = allocate(tile, at, bytes, p.category, what);
        at += aligned(bytes);
      };
      const std::int64_t code = plan_.code_on(tile);
      allocate(tile, 0, code, training_category::code, "code");
      at = aligned(code);
      for (int j = 0; j < static_cast<int>(Plan::size); ++j) {
        const std::string path(plan_.at(j).path.view());
        for (layer_tensor& l : layers_[static_cast<std::size_t>(j)]) {
          place(l.weights, "weights of " + path);
          if (l.master.mapping) place(l.master, "master weights of " + path);
          for (placed_tensor& s : l.state) place(s, "optimiser state of " + path);
        }
      }
      base_[static_cast<std::size_t>(tile)] = at;
      always_intervals_.push_back(live_[static_cast<std::size_t>(tile)].size());
    }
    always_ = now_;
  }

  layer_tensor& weights_of(int j, int w) { return layers_[static_cast<std::size_t>(j)][static_cast<std::size_t>(w)]; }
  const layer_tensor& weights_of(int j, int w) const { return layers_[static_cast<std::size_t>(j)][static_cast<std::size_t>(w)]; }

  /// Calls `f(tile, first, count)` for each tile's elements `[first, first + count)` of `m`, in
  /// its storage order.
  template <class F>
  static void for_each_tile(const tensor_mapping& m, F&& f) {
    for (int p = 0; p < m.tiles(); ++p) {
      const int tile = m.units.first_tile + p;
      if (const std::int64_t count = m.elements_on(tile); count > 0) f(tile, m.units.begin(p) * m.unit_elements, count);
    }
  }

  /// Copies `src` (`elements()` values in storage order) into a placed tensor, converted to its
  /// element type.
  template <class U>
  void write_tensor(const placed_tensor& p, const U* src) {
    for_each_tile(*p.mapping, [&](int tile, std::int64_t first, std::int64_t count) {
      store(image(tile) + p.offset[static_cast<std::size_t>(tile)], p.element_bytes, src + first, count);
    });
  }
  template <class U>
  void read_tensor(const placed_tensor& p, U* dst) const {
    for_each_tile(*p.mapping, [&](int tile, std::int64_t first, std::int64_t count) {
      load(image(tile) + p.offset[static_cast<std::size_t>(tile)], p.element_bytes, dst + first, count);
    });
  }
  /// `count` values of `src` stored at `to` in elements of `bytes` bytes (f16 or f32).
  template <class U>
  static void store(std::byte* to, std::int64_t bytes, const U* src, std::int64_t count) {
    if (bytes == 2) {
      for (std::int64_t i = 0; i < count; ++i) {
        const f16 v = static_cast<f16>(static_cast<float>(src[i]));
        std::memcpy(to + i * 2, &v, 2);
      }
    } else {
      for (std::int64_t i = 0; i < count; ++i) {
        const float v = static_cast<float>(src[i]);
        std::memcpy(to + i * 4, &v, 4);
      }
    }
  }
  template <class U>
  static void load(const std::byte* from, std::int64_t bytes, U* dst, std::int64_t count) {
    for (std::int64_t i = 0; i < count; ++i) {
      float v;
      if (bytes == 2) {
        f16 h;
        std::memcpy(&h, from + i * 2, 2);
        v = static_cast<float>(h);
      } else {
        std::memcpy(&v, from + i * 4, 4);
      }
      dst[i] = static_cast<U>(v);
    }
  }

  /// The bytes of buffer `b` on `tile`: a tensor's elements there in the graph's element type,
  /// a step's scratch as the plan sizes it (`transient_on`).
  training_bytes bytes_of(const training_buffer& b, int tile) const {
    training_bytes m;
    if (b.mapping) {
      m[b.category] = b.mapping->elements_on(tile) * static_cast<std::int64_t>(sizeof(T));
    } else {
      const node_plan& np = plan_.inference->plan_of(b.node);
      const transient_bytes tr = transient_on(np.step, np.work.units.elements_on(tile));
      m.temporaries = tr.temporaries, m.exchange = tr.exchange;
    }
    return m;
  }

  /// Allocates the buffers the plan starts at step `s`, zeroing gradients, and records each
  /// tile's bytes.
  void begin_step(int s) {
    for (const std::size_t k : starting_[static_cast<std::size_t>(s)]) {
      dynamic_buffer& d = dynamic_[k];
      const std::string what = describe(d.b);
      for (int tile = 0; tile < tiles_; ++tile) {
        const training_bytes bytes = bytes_of(d.b, tile);
        const std::int64_t base = base_[static_cast<std::size_t>(tile)];
        if (d.b.mapping) {
          const std::int64_t at = allocate(tile, base + d.at.first, bytes[d.b.category], d.b.category, what);
          d.offset[static_cast<std::size_t>(tile)] = at;
          if (at >= 0 && d.b.category == training_category::gradients)
            std::memset(image(tile) + at, 0, static_cast<std::size_t>(bytes[d.b.category]));
        } else {
          d.offset[static_cast<std::size_t>(tile)] =
              allocate(tile, base + d.at.first, bytes.temporaries, training_category::temporaries, "temporaries of " + what);
          allocate(tile, base + d.at.second, bytes.exchange, training_category::exchange, "exchange buffers of " + what);
        }
      }
    }
    std::copy(now_.begin(), now_.end(), trace_.begin() + static_cast<std::ptrdiff_t>(s) * tiles_);
  }
  /// Releases the buffers whose last step is `s`.
  void end_step(int s) {
    for (const std::size_t k : ending_[static_cast<std::size_t>(s)]) {
      dynamic_buffer& d = dynamic_[k];
      for (int tile = 0; tile < tiles_; ++tile) {
        const training_bytes bytes = bytes_of(d.b, tile);
        if (d.b.mapping) {
          release(tile, d.offset[static_cast<std::size_t>(tile)], bytes[d.b.category], d.b.category);
        } else {
          release(tile, d.offset[static_cast<std::size_t>(tile)], bytes.temporaries, training_category::temporaries);
          release(tile, bytes.exchange > 0 ? base_[static_cast<std::size_t>(tile)] + d.at.second : -1, bytes.exchange,
                  training_category::exchange);
        }
        d.offset[static_cast<std::size_t>(tile)] = -1;
      }
    }
  }

  /// The dynamic buffer of node `j` in `category`, for its output (`input` and `tensor` -1), a
  /// weight's gradient (`tensor`) or a dropped-out input (`input`), live at step `s`; throws if
  /// the plan holds none there.
  dynamic_buffer& live(int j, training_category category, int s, int input = -1, int tensor = -1) {
    for (dynamic_buffer& d : dynamic_)
      if (d.b.node == j && d.b.category == category && d.b.input == input && d.b.tensor == tensor && d.b.first <= s &&
          s <= d.b.last)
        return d;
    throw execution_error("ipu::trainer: step " + std::to_string(s) + " of the training plan reads a buffer of " +
                          std::string(plan_.at(j).path.view()) + " that it does not hold then");
  }
  /// Node `j`'s output as the tiles hold it at step `s`: stashed, or computed again.
  dynamic_buffer& value_at(int j, int s) {
    for (dynamic_buffer& d : dynamic_)
      if (d.b.node == j && d.b.input == -1 && d.b.first <= s && s <= d.b.last &&
          (d.b.category == training_category::activations || d.b.category == training_category::recomputed))
        return d;
    return live(j, training_category::activations, s);
  }

  /// Calls `f(logical, storage, count)` for each run of elements a tile holds of buffer `d`:
  /// `count` elements from logical index `logical`, at `storage` (a pointer into the tile).
  template <class F>
  void for_each_run(const dynamic_buffer& d, const shape& logical, F&& f) {
    const tensor_mapping& m = *d.b.mapping;
    const storage_order order = storage_order::of(m, logical);
    for_each_tile(m, [&](int tile, std::int64_t first, std::int64_t count) {
      std::byte* at = image(tile) + d.offset[static_cast<std::size_t>(tile)];
      if (order.blocks == 1) {
        f(first, at, count);
        return;
      }
      const std::int64_t block = order.positions * order.block_channels;
      for (std::int64_t e = first; e < first + count;) {  // runs of one position's channels of one block
        const std::int64_t b = e / block, pos = e % block / order.block_channels, c = e % order.block_channels;
        const std::int64_t run = std::min(first + count - e, order.block_channels - c);
        f(pos * order.channels + b * order.block_channels + c, at + (e - first) * static_cast<std::int64_t>(sizeof(T)), run);
        e += run;
      }
    });
  }
  /// Copies `src` (logical order, shape `s`) into buffer `d`, in `T`.
  template <class U>
  void scatter(dynamic_buffer& d, const shape& s, const U* src) {
    for_each_run(d, s, [&](std::int64_t e, std::byte* at, std::int64_t count) { store(at, sizeof(T), src + e, count); });
  }
  /// Copies buffer `d` to `dst` (logical order, shape `s`).
  template <class U>
  void gather(dynamic_buffer& d, const shape& s, U* dst) {
    for_each_run(d, s, [&](std::int64_t e, std::byte* at, std::int64_t count) { load(at, sizeof(T), dst + e, count); });
  }

  const shape& shape_of(int j) const noexcept { return plan_.at(j).out; }
  /// Reads the outputs node `j` reads at step `s` from the tiles, into the pass.
  void read_sources(int j, int s) {
    for (const int k : plan_.at(j).sources()) gather(value_at(k, s), shape_of(k), pass_.value(k));
  }
  /// Writes the dropped-out inputs of node `j`, as step `s` drew them, and in a backward step
  /// their gradients, to the tiles.
  void write_dropped(int j, int s, training_category category) {
    const node& n = plan_.at(j);
    for (int k = 0; k < n.input_count; ++k) {
      if (!n.dropout[static_cast<std::size_t>(k)].active()) continue;
      const int src = n.inputs[static_cast<std::size_t>(k)];
      scatter(live(j, category, s, k), shape_of(src), pass_.dropped_values(j, k).data());
      if (category == training_category::recomputed && plan_.node_of(j).backward == s && plan_.node_of(src).backward >= 0)
        scatter(live(j, training_category::gradients, s, k), shape_of(src), pass_.dropped_grad(j, k).data());
    }
  }
  /// Reads the gradients of node `j`'s weights from the tiles into `g`.
  void read_weight_grads(int j, layer_weights& g) {
    const training_node& t = plan_.node_of(j);
    for (int w = 0; w < t.tensor_count; ++w) {
      if (!t.tensors[static_cast<std::size_t>(w)].trainable) continue;
      const std::span<float> values = g[g.tensors()[static_cast<std::size_t>(w)].name];
      gather(live(j, training_category::gradients, t.update, -1, w), shape_of(j), values.data());
    }
  }

  /// Runs forward, recompute or backward step `s` (see `backward` for `loss`).
  template <class Loss = std::nullptr_t>
  void run(int s, Loss&& loss = nullptr) {
    const plan_step& st = plan_.steps[static_cast<std::size_t>(s)];
    const int j = st.node;
    begin_step(s);
    if (st.phase == step_phase::forward || st.phase == step_phase::recompute) {
      read_sources(j, s);
      pass_.forward_step(j, st.phase == step_phase::recompute);
      const training_category c = st.phase == step_phase::forward ? training_category::activations : training_category::recomputed;
      scatter(live(j, c, s), shape_of(j), pass_.value(j));
      write_dropped(j, s, c);
    } else if constexpr (!std::is_same_v<std::remove_cvref_t<Loss>, std::nullptr_t>) {
      if (j + 1 == static_cast<int>(Plan::size)) {
        gather(value_at(from_, s), shape_of(from_), pass_.value(from_));
        loss();
        pass_.begin_backward(from_, true);  // the tiles' copies are gathered around each step
        scatter(live(from_, training_category::gradients, s), shape_of(from_), pass_.grad_of(from_));
      }
      if (j <= from_) {
        const node& n = plan_.at(j);
        gather(value_at(j, s), shape_of(j), pass_.value(j));
        read_sources(j, s);
        gather(live(j, training_category::gradients, s), shape_of(j), pass_.grad_of(j));
        for (const int k : n.sources())
          if (plan_.node_of(k).backward >= 0) gather(live(k, training_category::gradients, s), shape_of(k), pass_.grad_of(k));
        layer_weights* g = pass_.weight_grads_of(j);
        if (g) read_weight_grads(j, *g);
        pass_.backward_step(j);
        for (const int k : n.sources())
          if (plan_.node_of(k).backward >= 0) scatter(live(k, training_category::gradients, s), shape_of(k), pass_.grad_of(k));
        if (g) write_weight_grads(j, *g, s);
        write_dropped(j, s, training_category::recomputed);
      }
    }
    end_step(s);
  }
  /// Writes the gradients of node `j`'s weights, as its backward step `s` added to them, to the
  /// tiles.
  void write_weight_grads(int j, const layer_weights& g, int s) {
    const training_node& t = plan_.node_of(j);
    for (int w = 0; w < t.tensor_count; ++w) {
      if (!t.tensors[static_cast<std::size_t>(w)].trainable) continue;
      const std::span<const float> values = g.tensors()[static_cast<std::size_t>(w)].values;
      scatter(live(j, training_category::gradients, s, -1, w), shape_of(j), values.data());
    }
  }

  const Plan& plan_;
  training_pass<T>& pass_;
  int tiles_;
  std::int64_t tile_bytes_;
  std::unique_ptr<std::byte[]> memory_;                // every tile's image, uninitialised
  std::vector<std::vector<interval>> live_;            // per tile: its live allocations
  std::vector<std::int64_t> extent_;                   // per tile: the highest byte reached, aligned
  std::vector<std::int64_t> base_;                     // per tile: its dynamic base
  std::vector<training_bytes> trace_;                  // [step][tile]: bytes live while the step ran
  std::vector<training_bytes> now_, always_;           // per tile: bytes live now; always live
  std::vector<std::size_t> always_intervals_;          // per tile: its always-live allocations
  std::vector<std::vector<layer_tensor>> layers_;      // [node][tensor]: the always-live copies
  std::vector<dynamic_buffer> dynamic_;                // the plan's dynamic buffers
  std::vector<std::vector<std::size_t>> starting_, ending_;  // [step]: buffers that start, end there
  int from_ = 0;                                       // the node the backward pass starts from
};

}  // namespace ipu::runtime
