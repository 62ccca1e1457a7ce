#pragma once
/// \file
/// The training memory plan: `ipu::training<G, Opts>` names graph `G` trained with `Opts`, and
/// `ipu::plan_v`, `ipu::fits_v` and `ipu::require_fit` accept it wherever they accept a graph.
///
/// A training step runs, on the graph's IPU, a **forward** step per node (as inference does),
/// then a **backward** step per node in reverse order (every node but the input: the gradients
/// of its inputs and of its weights from the gradient of its output; the loss is part of the
/// last node's backward step), some preceded by **recompute** steps (`Opts.recompute`), then
/// an **update** step per node with trainable tensors (the optimiser). At step `s`, a tile holds
///
///   - **always live:** the weights (every tensor of `ipu::weights`, batch norm's running
///     statistics too, in the graph's element type, each mapped with the linear rule from tile
///     0); the **master weights**, an f32 copy of the trainable tensors, when `Opts.master_weights`
///     is wider than the graph's element type (Graphcore's "16.32"; none for "16.16" or an f32
///     graph); the **optimiser state**, `optimizer::state_tensors()` tensors per trainable tensor,
///     in the wider of the two types (with `Opts.shard_optimizer_state` on a target of `R`
///     replicas, `ipu::replicated<System, R>`, a replica's share of each: `ceil(E / R)` of its
///     `E` elements, so that the shares of the `R` replicas cover it, mapped with the linear
///     rule from tile 0); the **code**: inference's, plus a backward step's
///     (twice a forward step's vertices and worklists for a convolution or dense layer, whose
///     backward is two convolutions, the input's gradient and the weights'; once for the others),
///     an update vertex on every tile holding a trainable tensor, each op's codelets twice
///     (forward and backward) and the optimiser's once, and control per step;
///   - **activations** stashed for the backward pass: each kept node's output lives from its
///     forward step to its own backward step (the graph's input to the last backward step that
///     reads it). Without recomputation every output is kept, as the host executor keeps them
///     (`runtime::training_pass`); with `Opts.recompute`, the others live from their forward
///     step to their last forward reader's, as at inference;
///   - **recomputed** activations: a node whose output is not kept is computed again by a
///     **recompute** step, just before the backward step of the kept node that ends its segment
///     (the nodes since the previous kept one), and lives from there to its own backward step;
///   - **gradients:** of each node's output, in the graph's element type, from the backward step
///     that first adds to it (its last reader's) to its own backward step; of each trainable
///     tensor, from its node's backward step to its update step, or, when a step accumulates
///     micro-batches (`train_options::gradient_accumulation`), the sums of its micro-batches'
///     gradients in f32, from the first step to its update step (the plan is that of one
///     micro-batch's steps, the sums live across all of them);
///   - **dropped-out inputs** (`nn::dropout`, `input_dropout`): a node reading an input with a
///     dropout reads a dropped-out copy of it, mapped as the input, which its forward step
///     writes and reads (an activation live at that step); its recompute and backward steps
///     draw the mask again and write the copy again (a recomputed activation live at that
///     step), and its backward step writes the copy's gradient (a gradient live at that step).
///     The mask itself is never stored. These buffers count as the reading node's;
///   - the **temporaries** and **exchange** buffers of step `s`: a forward or recompute step's as
///     inference plans them; a backward step's as its forward step's, the model's assumption (a
///     convolution's backward runs two convolutions of the forward's size one after the other
///     in the same buffers); an update step's none (each tile updates its own shard in place).
///
/// As for inference the plan is an allocation: every dynamic buffer gets one offset on every
/// tile (`pack`), and a tile's peak is the highest byte its buffers reach.
///
/// A graph over several IPUs (`ipu::on<k>`) is planned IPU by IPU: each holds the tensors,
/// code and buffers of its nodes, over the same steps, and
///
///   - the **IPU-Link buffers:** a node whose output is read on another IPU has a send buffer
///     (`exchange`) in its forward step; each IPU reading it holds a copy (an activation) from
///     that step to the last backward step there reading it, and the copy's gradient from the
///     first to the last backward step there adding to it, sent back from a send buffer in the
///     last. As for inference, a copy goes straight to each IPU reading it;
///   - in a pipeline (`train_options::pipeline` grouped or interleaved), the **stash of the
///     micro-batches in flight:** stage `i` holds the activations of `pipeline_stash_depth`
///     micro-batches at once, so beside the buffers of one micro-batch it holds `depth - 1`
///     more copies of every activation it keeps from its forward to its backward pass (its
///     outputs held into the backward steps and the copies it receives), as stashed
///     activations laid out with the always-live tensors: in the steady state they never leave.
///
/// A block on the host is a compile error: the host runs no training steps.

#include <ipu/plan/pipeline_timing.hpp>
#include <ipu/plan/plan.hpp>
#include <ipu/train/options.hpp>
#include <ipu/train/stages.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>
#include <utility>

namespace ipu {

/// Graph `G` trained with `Opts`: pass it to `ipu::plan_v`, `ipu::fits_v` or `ipu::require_fit`
/// in place of the graph for the plan of a training step.
///
/// ```
/// using training_t = ipu::training<model_t, topts>;
/// static_assert(ipu::require_fit<training_t, ipu::mk2>);
/// ```
template <Graph G, train_options Opts = train_options{}>
struct training {
  using graph_type = std::remove_cvref_t<G>;     ///< the graph trained
  static constexpr train_options options = Opts;  ///< how
};

/// The memory categories of a tile in training. The first four are always live. The
/// enumerators are in this order, 0 to 7, so a category can index an array of
/// `training_category_count` entries.
enum class training_category : std::uint8_t {
  weights, master_weights, optimizer_state, code, activations, recomputed, gradients, temporaries, exchange
};

/// Number of enumerators in `training_category`.
inline constexpr int training_category_count = 9;

/// `"weights"`, `"master weights"`, `"optimiser state"`, `"code"`, `"stashed activations"`,
/// `"recomputed activations"`, `"gradients"`, `"temporaries"` or `"exchange"`.
constexpr std::string_view name_of(training_category c) noexcept {
  constexpr std::string_view names[training_category_count] = {
      "weights", "master weights", "optimiser state", "code", "stashed activations", "recomputed activations",
      "gradients", "temporaries", "exchange"};
  return names[static_cast<int>(c)];
}

/// Bytes of one tile (or one IPU) in training, by category.
struct training_bytes {
  std::int64_t weights = 0;          ///< every tensor of the layers, in the graph's element type
  std::int64_t master_weights = 0;   ///< the wider copy of the trainable tensors ("16.32")
  std::int64_t optimizer_state = 0;  ///< momentum, or Adam's and LAMB's two moments
  std::int64_t code = 0;             ///< code, vertex state and control of every step
  std::int64_t activations = 0;      ///< forward outputs live at the step (kept for the backward pass, or not yet read)
  std::int64_t recomputed = 0;       ///< outputs computed again in the backward pass, live at the step
  std::int64_t gradients = 0;        ///< gradients of outputs and of trainable tensors live at the step
  std::int64_t temporaries = 0;      ///< the step's partial sums
  std::int64_t exchange = 0;         ///< the step's received windows, weights and operands

  /// Bytes of category \p c.
  constexpr std::int64_t operator[](training_category c) const noexcept { return this->*member(c); }
  /// Bytes of category \p c, to add to.
  constexpr std::int64_t& operator[](training_category c) noexcept { return this->*member(c); }
  /// Bytes that stay for the whole program: weights, master weights, optimiser state, code.
  constexpr std::int64_t always_live() const noexcept { return weights + master_weights + optimizer_state + code; }
  /// Bytes that come and go with the steps.
  constexpr std::int64_t not_always_live() const noexcept {
    return activations + recomputed + gradients + temporaries + exchange;
  }
  /// All nine categories.
  constexpr std::int64_t total() const noexcept { return always_live() + not_always_live(); }
  /// The category with the most bytes (the first one on a tie).
  constexpr training_category largest() const noexcept {
    training_category best = training_category::weights;
    for (int c = 1; c < training_category_count; ++c)
      if ((*this)[training_category{static_cast<std::uint8_t>(c)}] > (*this)[best]) best = training_category{static_cast<std::uint8_t>(c)};
    return best;
  }
  /// Adds the bytes of \p o category by category; returns `*this`.
  constexpr training_bytes& operator+=(const training_bytes& o) noexcept {
    weights += o.weights, master_weights += o.master_weights, optimizer_state += o.optimizer_state, code += o.code;
    activations += o.activations, recomputed += o.recomputed, gradients += o.gradients;
    temporaries += o.temporaries, exchange += o.exchange;
    return *this;
  }
  /// Subtracts the bytes of \p o category by category; returns `*this`.
  constexpr training_bytes& operator-=(const training_bytes& o) noexcept {
    weights -= o.weights, master_weights -= o.master_weights, optimizer_state -= o.optimizer_state, code -= o.code;
    activations -= o.activations, recomputed -= o.recomputed, gradients -= o.gradients;
    temporaries -= o.temporaries, exchange -= o.exchange;
    return *this;
  }
  /// Equal when every category holds the same bytes.
  constexpr bool operator==(const training_bytes&) const = default;

 private:
  static constexpr std::int64_t training_bytes::*member(training_category c) noexcept {
    constexpr std::int64_t training_bytes::*members[training_category_count] = {
        &training_bytes::weights, &training_bytes::master_weights, &training_bytes::optimizer_state,
        &training_bytes::code, &training_bytes::activations, &training_bytes::recomputed, &training_bytes::gradients,
        &training_bytes::temporaries, &training_bytes::exchange};
    return members[static_cast<int>(c)];
  }
};

/// One tensor of a layer in training: where it lives and whether training updates it.
struct training_tensor {
  tensor_mapping mapping{};  ///< mapped with the linear rule from tile 0
  bool trainable = false;    ///< updated by its gradient (`ops::tensor_spec::trainable`)
  /// Each of its optimiser state tensors on one replica: `mapping`, or with the state sharded
  /// over `R` replicas (`training_plan::state_shards`) a share of `ceil(elements / R)` elements,
  /// mapped with the linear rule from tile 0.
  tensor_mapping state{};
};

/// One dynamic buffer of a training step on an IPU: what it holds, whose it is, and the steps
/// `[first, last]` it lives over. A tensor's bytes on a tile follow its mapping; a step's
/// scratch (`temporaries`: its temporaries, then its exchange buffers) follows the step's work.
struct training_buffer {
  training_category category = training_category::activations;  ///< activations, recomputed, gradients, temporaries (a step's scratch) or exchange (a send buffer)
  int node = 0;    ///< whose
  int tensor = -1; ///< a weight gradient's tensor (in the order of `ipu::weights`); -1 otherwise
  int input = -1;  ///< the input whose dropped-out copy (or its gradient) it is; -1 otherwise
  int first = 0;   ///< the first step it is live
  int last = 0;    ///< the last step it is live
  const tensor_mapping* mapping = nullptr;  ///< a tensor's mapping; null for a step's scratch
  std::int64_t element_bytes = 0;           ///< a tensor's bytes per element
  /// The IPU of the copy of `node`'s output it is (or holds the gradient of, or sends the
  /// gradient of back); -1 for the buffers of `node` on its own IPU.
  int copy_ipu = -1;
};

/// The plan of one node in training: its steps, its tensors, how long its output and its
/// gradients live, and where each of its dynamic buffers is (bytes from the tile's dynamic
/// base, the same on every tile; -1 for a buffer it does not have).
struct training_node {
  std::array<training_tensor, 4> tensors{};  ///< in the order of `ipu::weights`
  int tensor_count = 0;                      ///< entries of `tensors` in use
  int forward = -1;     ///< its forward step
  int backward = -1;    ///< its backward step; -1 for the graph's input
  int update = -1;      ///< its update step; -1 without trainable tensors
  int recompute = -1;   ///< its recompute step; -1 when its output is kept
  /// The last step its forward output is held: its backward step when kept (for the input, the
  /// last backward step reading it), its last forward reader's when recomputed.
  int output_last = -1;
  int grad_first = -1;  ///< the step that first adds to its output's gradient; -1 for the input
  std::int64_t output_offset = -1;  ///< its output
  std::int64_t recomputed_offset = -1;  ///< its recomputed output
  std::int64_t grad_offset = -1;    ///< its output's gradient
  std::array<std::int64_t, 4> weight_grad_offset{-1, -1, -1, -1};  ///< each trainable tensor's gradient
  /// Each dropped-out input's copy: in the forward step, in the recompute step, in the backward
  /// step; and its gradient in the backward step.
  std::array<std::int64_t, max_inputs> dropped_offset{-1, -1, -1, -1};
  std::array<std::int64_t, max_inputs> dropped_recomputed_offset{-1, -1, -1, -1};  ///< see `dropped_offset`
  std::array<std::int64_t, max_inputs> dropped_backward_offset{-1, -1, -1, -1};    ///< see `dropped_offset`
  std::array<std::int64_t, max_inputs> dropped_grad_offset{-1, -1, -1, -1};        ///< see `dropped_offset`
  std::int64_t send_offset = -1;    ///< the send buffer of its output, read on a later IPU
  step_buffers forward_buffers{};   ///< its forward step's temporaries and exchange buffers
  step_buffers backward_buffers{};  ///< its backward step's
  step_buffers recompute_buffers{};  ///< its recompute step's
};

/// The copy of a node's output on another IPU that reads it (a pipeline's IPU-Link transfer),
/// and its gradient there, summed over the IPU's readers and sent back. Its steps are those of
/// the training step (`training_plan::steps`); offsets are from the tile's dynamic base.
struct training_copy {
  int first = -1;       ///< the step it arrives: its node's forward step; -1 when the IPU holds no copy
  int last = -1;        ///< the last backward step on the IPU that reads it
  int grad_first = -1;  ///< the first backward step on the IPU adding to its gradient; -1 for the graph's input
  int grad_last = -1;   ///< the last; its gradient is sent back from a send buffer in that step
  std::int64_t offset = -1;       ///< the copy
  std::int64_t grad_offset = -1;  ///< its gradient
  std::int64_t send_offset = -1;  ///< the send buffer of its gradient
};

/// The training plan of one IPU.
struct training_memory {
  std::int64_t capacity = 0;  ///< bytes per tile
  std::int64_t peak = 0;      ///< the highest byte the allocation reaches on any tile: what must fit
  int peak_tile = -1;         ///< the tile of the peak
  /// Of the steps the buffer reaching the peak lives through, the one with the most bytes in
  /// use on the peak tile; -1 if the peak is always-live memory.
  int peak_step = -1;
  /// Of the buffers in use on the peak tile at the peak step, the category with the most bytes
  /// (activations, with a pipeline stage's stash of the micro-batches in flight; gradients; or
  /// `temporaries` for the steps' temporaries, exchange and send buffers together), and the
  /// node whose buffer of it is the largest (`peak_node`; -1 when the peak is always-live
  /// memory, whose largest category `at_peak.largest()` gives).
  training_category peak_category = training_category::code;
  int peak_node = -1;          ///< the node of that buffer
  training_bytes at_peak{};    ///< the peak tile's bytes in use at the peak step, by category
  /// Summed over the IPU's tiles: the always-live categories; for the others, the largest sum
  /// over the steps.
  training_bytes totals{};
  std::int64_t max_always_live = 0;  ///< the largest always-live bytes of a tile
  bool fits = true;                  ///< `peak <= capacity`
  /// Bytes of the peak that no buffer uses at the peak step: alignment and gaps.
  constexpr std::int64_t unused_at_peak() const noexcept { return peak - at_peak.total(); }
};

/// The plan of a training step of a graph of `N` nodes in `S` steps on a target of `Ipus` IPUs.
/// Obtain it as `ipu::plan_v<ipu::training<G, Opts>, Target, Options>`. Node `j`'s steps are
/// `node_of(j).forward`, `.backward` and `.update`; `steps[s]` says what step `s` does, and
/// `cycles(s)` how long the cycle model estimates it takes.
template <std::size_t N, std::size_t S, int Ipus>
struct training_plan {
  const plan<N, Ipus>* inference = nullptr;  ///< the inference plan: outputs' mappings, steps' work
  train_options train{};                     ///< the training options
  std::array<training_node, N> nodes{};      ///< indexed as the node table
  std::array<plan_step, S> steps{};          ///< forward steps, backward steps, update steps
  std::array<training_memory, static_cast<std::size_t>(Ipus)> ipus{};  ///< by IPU
  /// `copy_of(j, i)`: the copy of node `j`'s output on IPU `i`.
  std::array<training_copy, N * static_cast<std::size_t>(Ipus)> copies{};
  /// By IPU: the micro-batches whose stashed activations it holds at once
  /// (`pipeline_stash_depth` of its stage in a pipeline; 1 otherwise).
  std::array<int, static_cast<std::size_t>(Ipus)> stash_depth{};
  /// The replicas sharing out the optimiser state (`train_options::shard_optimizer_state` on a
  /// replicated target); 1 when each replica holds all of it.
  int state_shards = 1;
  bool fits = true;    ///< every IPU fits
  plan_error error{};  ///< why the graph cannot be planned for training; `kind == none` if it can

  static constexpr std::size_t size = N;        ///< nodes of the graph
  static constexpr std::size_t step_count = S;  ///< steps of a training step
  static constexpr int ipu_count = Ipus;        ///< IPUs of the target

  /// Node \p j of the table.
  constexpr const node& at(int j) const noexcept { return inference->at(j); }
  /// The training plan of node \p j.
  constexpr const training_node& node_of(int j) const noexcept { return nodes[static_cast<std::size_t>(j)]; }
  /// The chip of the target's IPUs.
  constexpr const chip_spec& chip() const noexcept { return inference->chip; }
  /// Bytes per element of the graph's tensors at node \p j.
  constexpr std::int64_t element_bytes(int j) const noexcept { return size_of(at(j).type); }
  /// Bytes per element of node \p j's master weights and optimiser state: the wider of
  /// `master_weights` and the graph's type.
  constexpr std::int64_t update_bytes(int j) const noexcept { return std::max(size_of(train.master_weights), element_bytes(j)); }

  /// Whether a step accumulates the gradients of several micro-batches
  /// (`train_options::gradient_accumulation`).
  constexpr bool accumulates() const noexcept { return train.gradient_accumulation > 1; }
  /// Bytes per element of node `j`'s weights' gradients: the graph's type, or f32 for the sums
  /// of an accumulating step.
  constexpr std::int64_t weight_grad_bytes(int j) const noexcept {
    return accumulates() ? std::max(element_bytes(j), size_of(dtype::f32)) : element_bytes(j);
  }

  /// The IPU of node \p j.
  constexpr int ipu_of(int j) const noexcept { return at(j).ipu; }
  /// The copy of node \p j's output on IPU \p ipu (`first < 0` when the IPU holds none).
  constexpr const training_copy& copy_of(int j, int ipu) const noexcept {
    return copies[static_cast<std::size_t>(j) * static_cast<std::size_t>(Ipus) + static_cast<std::size_t>(ipu)];
  }
  /// How node \p j's output is mapped on IPU \p ipu: its own mapping on its IPU, its copy's on
  /// another.
  constexpr const tensor_mapping& mapping_on(int ipu, int j) const noexcept {
    return ipu_of(j) == ipu ? inference->plan_of(j).output : inference->plan_of(j).copy;
  }
  /// Whether node \p j's output is held from its forward step into the backward steps: the
  /// activations a pipeline stage stashes for each micro-batch in flight.
  constexpr bool stashed(int j) const noexcept { return node_of(j).output_last >= static_cast<int>(N); }

  /// Calls `f(mapping, bytes_per_element, count, category)` for the always-live tensors of IPU
  /// \p ipu but the code: `count` tensors of `mapping` of `category`. Each layer tensor is one
  /// tensor of weights; a trainable one also has its master weights (when `update_bytes` is
  /// wider) and `state_tensors()` tensors of optimiser state, each of `training_tensor::state`
  /// (a replica's share when `state_shards > 1`). A pipeline stage holding the
  /// activations of `stash_depth[ipu]` micro-batches at once also has, as stashed activations,
  /// `stash_depth[ipu] - 1` copies of each output and received copy it keeps for the backward
  /// pass: those of the other micro-batches in flight, which in the steady state never leave.
  template <class F>
  constexpr void for_each_always_live_tensor(int ipu, F&& f) const {
    const int state = train.optimizer.state_tensors();
    for (int j = 0; j < static_cast<int>(N); ++j) {
      if (ipu_of(j) != ipu) continue;
      const training_node& t = node_of(j);
      const std::int64_t eb = element_bytes(j), ub = update_bytes(j);
      for (int w = 0; w < t.tensor_count; ++w) {
        const training_tensor& tt = t.tensors[static_cast<std::size_t>(w)];
        f(tt.mapping, eb, 1, training_category::weights);
        if (!tt.trainable) continue;
        if (ub > eb) f(tt.mapping, ub, 1, training_category::master_weights);
        f(tt.state, ub, state, training_category::optimizer_state);
      }
    }
    const int in_flight = stash_depth[static_cast<std::size_t>(ipu)] - 1;
    if (in_flight <= 0) return;
    for (int j = 0; j < static_cast<int>(N); ++j)
      if ((ipu_of(j) == ipu && stashed(j)) || copy_of(j, ipu).first >= 0)
        f(mapping_on(ipu, j), element_bytes(j), in_flight, training_category::activations);
  }
  /// Always-live bytes of `tile` on IPU \p ipu but its code, by category.
  constexpr training_bytes tensors_on(int ipu, int tile) const noexcept {
    training_bytes m;
    for_each_always_live_tensor(ipu, [&](const tensor_mapping& map, std::int64_t bytes, int count, training_category c) {
      m[c] += count * map.elements_on(tile) * bytes;
    });
    return m;
  }
  /// `tensors_on(0, tile)`.
  constexpr training_bytes tensors_on(int tile) const noexcept { return tensors_on(0, tile); }
  /// Calls `f(buffer)` for each dynamic buffer of IPU \p ipu (a `training_buffer`), node by node
  /// for the nodes on it: its output (stashed or not), its recomputed output, its output's
  /// gradient, its trainable tensors' gradients, its dropped-out inputs' copies and their
  /// gradients, the scratch of its forward, backward and recompute steps, and the send buffer
  /// of its output when a later IPU reads it; then for each copy the IPU receives, the copy,
  /// its gradient and the buffer that sends the gradient back.
  template <class F>
  constexpr void for_each_buffer(int ipu, F&& f) const {
    for (int j = 0; j < static_cast<int>(N); ++j) {
      if (ipu_of(j) != ipu) continue;
      const training_node& t = node_of(j);
      const node_plan& np = inference->plan_of(j);
      const std::int64_t eb = element_bytes(j);
      f(training_buffer{training_category::activations, j, -1, -1, t.forward, t.output_last, &np.output, eb});
      if (t.recompute >= 0) f(training_buffer{training_category::recomputed, j, -1, -1, t.recompute, t.backward, &np.output, eb});
      if (t.grad_first >= 0) f(training_buffer{training_category::gradients, j, -1, -1, t.grad_first, t.backward, &np.output, eb});
      for (int w = 0; w < t.tensor_count; ++w)
        if (t.tensors[static_cast<std::size_t>(w)].trainable)
          f(training_buffer{training_category::gradients, j, w, -1, accumulates() ? 0 : t.backward, t.update,
                            &t.tensors[static_cast<std::size_t>(w)].mapping, weight_grad_bytes(j)});
      const node& n = at(j);
      for (int k = 0; k < n.input_count; ++k) {
        if (!n.dropout[static_cast<std::size_t>(k)].active()) continue;
        const int src = n.inputs[static_cast<std::size_t>(k)];
        const tensor_mapping* in = &mapping_on(ipu, src);
        const std::int64_t ib = element_bytes(src);
        f(training_buffer{training_category::activations, j, -1, k, t.forward, t.forward, in, ib});
        if (t.recompute >= 0) f(training_buffer{training_category::recomputed, j, -1, k, t.recompute, t.recompute, in, ib});
        f(training_buffer{training_category::recomputed, j, -1, k, t.backward, t.backward, in, ib});
        if (node_of(src).backward >= 0) f(training_buffer{training_category::gradients, j, -1, k, t.backward, t.backward, in, ib});
      }
      for (int s : {t.forward, t.backward, t.recompute})
        if (s >= 0) f(training_buffer{training_category::temporaries, j, -1, -1, s, s, nullptr, 0});
      if (np.sends) f(training_buffer{training_category::exchange, j, -1, -1, t.forward, t.forward, &np.copy, eb});
    }
    for (int j = 0; j < static_cast<int>(N); ++j) {
      const training_copy& c = copy_of(j, ipu);
      if (c.first < 0) continue;
      const tensor_mapping* m = &inference->plan_of(j).copy;
      const std::int64_t eb = element_bytes(j);
      f(training_buffer{training_category::activations, j, -1, -1, c.first, c.last, m, eb, ipu});
      if (c.grad_first < 0) continue;
      f(training_buffer{training_category::gradients, j, -1, -1, c.grad_first, c.grad_last, m, eb, ipu});
      f(training_buffer{training_category::exchange, j, -1, -1, c.grad_last, c.grad_last, m, eb, ipu});
    }
  }
  /// `for_each_buffer(0, f)`.
  template <class F>
  constexpr void for_each_buffer(F&& f) const {
    for_each_buffer(0, std::forward<F>(f));
  }
  /// Where buffer `b` (one of `for_each_buffer`'s) starts on every tile of its IPU, in bytes
  /// from the tile's dynamic base: a tensor's offset and -1; a step's scratch, the offsets of its
  /// temporaries and of its exchange buffers (-1 for none).
  constexpr std::pair<std::int64_t, std::int64_t> placed_at(const training_buffer& b) const noexcept {
    if (b.mapping) return {*offset_of(*this, b), -1};
    const step_buffers& sb = scratch_of(node_of(b.node), b.first);
    return {sb.temporaries, sb.exchange};
  }
  /// Where the offset of tensor buffer `b` of `self` (a training plan, const or not) is kept.
  template <class Self>
  static constexpr auto* offset_of(Self& self, const training_buffer& b) noexcept {
    auto& t = self.nodes[static_cast<std::size_t>(b.node)];
    const std::size_t k = static_cast<std::size_t>(std::max(b.input, 0));
    if (b.copy_ipu >= 0) {
      auto& c = self.copies[static_cast<std::size_t>(b.node) * static_cast<std::size_t>(Ipus) + static_cast<std::size_t>(b.copy_ipu)];
      return b.category == training_category::activations ? &c.offset
             : b.category == training_category::gradients ? &c.grad_offset
                                                           : &c.send_offset;
    }
    if (b.category == training_category::exchange) return &t.send_offset;
    if (b.input >= 0) {
      if (b.category == training_category::activations) return &t.dropped_offset[k];
      if (b.category == training_category::gradients) return &t.dropped_grad_offset[k];
      return &(b.first == t.backward ? t.dropped_backward_offset : t.dropped_recomputed_offset)[k];
    }
    if (b.category == training_category::activations) return &t.output_offset;
    if (b.category == training_category::recomputed) return &t.recomputed_offset;
    return b.tensor < 0 ? &t.grad_offset : &t.weight_grad_offset[static_cast<std::size_t>(b.tensor)];
  }
  /// The scratch of node `t`'s step `step` (its forward, backward or recompute step).
  template <class Node>
  static constexpr auto& scratch_of(Node& t, int step) noexcept {
    return step == t.forward ? t.forward_buffers : step == t.backward ? t.backward_buffers : t.recompute_buffers;
  }
  /// Where `tile`'s dynamic region starts on IPU \p ipu: after its code and its always-live
  /// tensors, each aligned to `buffer_alignment`, in the order of `for_each_always_live_tensor`.
  constexpr std::int64_t dynamic_base(int ipu, int tile) const noexcept {
    std::int64_t base = aligned(code_on(ipu, tile));
    for_each_always_live_tensor(ipu, [&](const tensor_mapping& m, std::int64_t bytes, int count, training_category) {
      base += count * aligned(m.elements_on(tile) * bytes);
    });
    return base;
  }
  /// `dynamic_base(0, tile)`.
  constexpr std::int64_t dynamic_base(int tile) const noexcept { return dynamic_base(0, tile); }
  /// One past the highest byte of `tile` on IPU \p ipu that any buffer of the plan reaches (its
  /// size aligned, from its offset); the largest over the tiles is the IPU's
  /// `training_memory::peak`.
  constexpr std::int64_t extent_on(int ipu, int tile) const noexcept {
    const std::int64_t base = dynamic_base(ipu, tile);
    std::int64_t extent = base;
    for_each_buffer(ipu, [&](const training_buffer& b) {
      const auto [first, second] = placed_at(b);
      const training_bytes bytes = bytes_on(b, tile);
      const std::int64_t main = b.mapping ? bytes[b.category] : bytes.temporaries;
      if (main > 0) extent = std::max(extent, base + first + aligned(main));
      if (!b.mapping && bytes.exchange > 0) extent = std::max(extent, base + second + aligned(bytes.exchange));
    });
    return extent;
  }
  /// `extent_on(0, tile)`.
  constexpr std::int64_t extent_on(int tile) const noexcept { return extent_on(0, tile); }
  /// Elements of node `j`'s dropped-out inputs on the tile holding most of each: what a step of
  /// `j` reads to draw their masks, as the cycle model counts it.
  constexpr std::int64_t dropped_elements_per_tile(int j) const noexcept {
    const node& n = at(j);
    std::int64_t elements = 0;
    for (int k = 0; k < n.input_count; ++k)
      if (n.dropout[static_cast<std::size_t>(k)].active())
        elements += mapping_on(ipu_of(j), n.inputs[static_cast<std::size_t>(k)]).max_elements_per_tile();
    return elements;
  }
  /// The bytes of buffer `b` on `tile`, in its category (a step's scratch in `temporaries` and
  /// `exchange`).
  constexpr training_bytes bytes_on(const training_buffer& b, int tile) const noexcept {
    training_bytes m;
    if (b.mapping) {
      m[b.category] = b.mapping->elements_on(tile) * b.element_bytes;
    } else {
      const node_plan& np = inference->plan_of(b.node);
      const transient_bytes tr = transient_on(np.step, np.work.units.elements_on(tile));
      m.temporaries = tr.temporaries, m.exchange = tr.exchange;
    }
    return m;
  }
  /// Bytes of `tile` on IPU \p ipu while step `step` runs, by category.
  constexpr training_bytes usage(int ipu, int tile, int step) const noexcept {
    training_bytes m = tensors_on(ipu, tile);
    m.code = code_on(ipu, tile);
    for_each_buffer(ipu, [&](const training_buffer& b) {
      if (b.first <= step && step <= b.last) m += bytes_on(b, tile);
    });
    return m;
  }
  /// `usage(0, tile, step)`.
  constexpr training_bytes usage(int tile, int step) const noexcept { return usage(0, tile, step); }

  /// The estimated cycles of step `s`, by the library's cycle model (`detail::cycles_of`): a
  /// forward or recompute step's are the inference plan's of its node; a backward step's its
  /// forward step's, twice for a convolution or dense layer (its two convolutions, the input's
  /// gradient and the kernel's, of the forward's size), the model's assumption as for memory; an
  /// update step reads, on the tile holding most of each trainable tensor, its weights, its
  /// gradient and the optimiser's state tensors, one vector per cycle per value read (as the
  /// model counts an element-wise op), in one compute phase ended by a sync. A step of a node
  /// with dropped-out inputs also reads each such input once to drop it out (forward and
  /// recompute steps), or twice (backward steps: to drop it out again, and its gradient through
  /// the mask), one vector per cycle.
  constexpr step_cycles cycles(int s) const noexcept {
    const plan_step& st = steps[static_cast<std::size_t>(s)];
    const step_cycles& fwd = inference->plan_of(st.node).cycles;
    const std::int64_t dropout = detail::div_up(dropped_elements_per_tile(st.node), chip().grain(element_bytes(st.node)));
    if (st.phase == step_phase::forward || st.phase == step_phase::recompute) {
      step_cycles c = fwd;
      c.compute += dropout;
      return c;
    }
    if (st.phase == step_phase::backward) {
      const std::int64_t copies = backward_code_copies(st.node);
      return {copies * fwd.compute + 2 * dropout, copies * fwd.exchange, copies * fwd.sync, 0, 0};
    }
    step_cycles c;
    const training_node& t = node_of(st.node);
    const std::int64_t values_read = 2 + train.optimizer.state_tensors();
    for (int w = 0; w < t.tensor_count; ++w)
      if (t.tensors[static_cast<std::size_t>(w)].trainable)
        c.compute += detail::div_up(t.tensors[static_cast<std::size_t>(w)].mapping.max_elements_per_tile() * values_read,
                            chip().grain(update_bytes(st.node)));
    c.sync = inference->opts.cycles.sync_cycles;
    return c;
  }
  /// The estimated cycles of a training step's steps of each phase (indexed by `step_phase`).
  constexpr std::array<step_cycles, 4> phase_cycles() const noexcept {
    std::array<step_cycles, 4> by{};
    for (int s = 0; s < static_cast<int>(S); ++s) {
      step_cycles& c = by[static_cast<std::size_t>(steps[static_cast<std::size_t>(s)].phase)];
      const step_cycles d = cycles(s);
      c.compute += d.compute, c.exchange += d.exchange, c.sync += d.sync;
    }
    return by;
  }
  /// The estimated cycles of a whole training step.
  constexpr std::int64_t total_cycles() const noexcept {
    std::int64_t total = 0;
    for (const step_cycles& c : phase_cycles()) total += c.total();
    return total;
  }

  /// The cycle model of a training window, the `gradient_accumulation` micro-batches of an
  /// update, over the IPUs of the graph (`ipu::pipeline_timing`): each stage's forward,
  /// backward (with recompute) and update steps as `cycles` estimates them, in the slots of
  /// `train.pipeline` (the sequential schedule's for a graph on one IPU); an empty window, no
  /// slots and no cycles, for a plan with an `error`.
  constexpr pipeline_timing<Ipus> timing() const noexcept {
    pipeline_timing<Ipus> t;
    if (error.kind != plan_error_kind::none) return t;
    for (int j = 0; j < static_cast<int>(N); ++j) t.stages = std::max(t.stages, ipu_of(j) + 1);
    t.schedule = t.stages > 1 ? train.pipeline : pipeline_schedule::sequential;
    t.micro_batches = train.gradient_accumulation;
    t.samples = at(0).out.dim[0] * t.micro_batches;
    t.clock_hz = chip().clock_hz;
    for (int s = 0; s < static_cast<int>(S); ++s) {
      const plan_step& st = steps[static_cast<std::size_t>(s)];
      const std::size_t i = static_cast<std::size_t>(ipu_of(st.node));
      const std::int64_t c = cycles(s).total();
      if (st.phase == step_phase::forward) t.forward[i] += c;
      else if (st.phase == step_phase::update) t.update[i] += c;
      else t.backward[i] += c;
    }
    t.time_slots();
    return t;
  }

  /// The code every tile of IPU \p ipu holds: the runtime, the codelets of each op with a step
  /// there for both passes and the optimiser's, control per step of its nodes.
  constexpr std::int64_t shared_code(int ipu = 0) const noexcept {
    const fixed_costs& f = inference->opts.fixed;
    const int codelet_sets = 2 * inference->codelets[static_cast<std::size_t>(ipu)] + 1;
    std::int64_t own_steps = 0;
    for (const plan_step& st : steps) own_steps += ipu_of(st.node) == ipu ? 1 : 0;
    return f.runtime_bytes + codelet_sets * f.codelet_bytes + own_steps * f.control_bytes;
  }
  /// How many times a backward step of node `j` holds its forward step's vertices and worklists:
  /// twice for a convolution or dense layer (the input's and the kernel's gradients), once for
  /// the others, none for the input. A recompute step runs the forward step's code again.
  constexpr int backward_code_copies(int j) const noexcept {
    if (node_of(j).backward < 0) return 0;
    return inference->plan_of(j).step.kind == step_kind::conv ? 2 : 1;
  }
  /// The tiles that hold node `j`'s update vertex: those holding its trainable tensors.
  constexpr int update_tiles(int j) const noexcept {
    int tiles = 0;
    const training_node& t = node_of(j);
    for (int w = 0; w < t.tensor_count; ++w)
      if (t.tensors[static_cast<std::size_t>(w)].trainable) tiles = std::max(tiles, t.tensors[static_cast<std::size_t>(w)].mapping.tiles());
    return tiles;
  }
  /// Bytes of an update vertex on a tile (a vertex and its exchange code).
  constexpr std::int64_t update_code() const noexcept {
    return inference->opts.fixed.vertex_state_bytes + inference->opts.fixed.exchange_code_bytes;
  }
  /// The code of `tile` on IPU \p ipu: `shared_code(ipu)`, and each of its steps' vertex
  /// state, worklists and exchange code where the tile works in it.
  constexpr std::int64_t code_on(int ipu, int tile) const noexcept {
    std::int64_t code = shared_code(ipu);
    for (int j = 0; j < static_cast<int>(N); ++j) {
      if (ipu_of(j) != ipu) continue;
      code += (1 + backward_code_copies(j)) * inference->step_code_on(j, tile);
      if (node_of(j).update >= 0 && tile < update_tiles(j)) code += update_code();
    }
    return code;
  }
  /// `code_on(0, tile)`.
  constexpr std::int64_t code_on(int tile) const noexcept { return code_on(0, tile); }
};

namespace detail {

template <Graph G, train_options O>
struct is_training_spec<training<G, O>> : std::true_type {};

/// Whether node `n`'s layer has a tensor that training updates.
constexpr bool has_trainable(const node& n) noexcept {
  const ops::tensor_specs specs = n.kind.info->tensors(n);
  for (const ops::tensor_spec& t : specs.view())
    if (t.trainable) return true;
  return false;
}

/// Whether a training step with `r` keeps each node's output for the backward pass
/// (`ipu::recompute`): the input and the output always; with `per_block`, each node no earlier
/// node's output is read beyond; with `checkpoints`, each node marked with `nn::checkpoint`;
/// then any node read beyond the next kept one.
template <std::size_t N>
constexpr std::array<bool, N> kept_outputs(const std::array<node, N>& table, recompute r) noexcept {
  std::array<bool, N> kept{};
  const std::array<int, N> last = last_use(table);
  int crossing = 0;  // the last reader of the nodes before j
  for (std::size_t j = 0; j < N; ++j) {
    const bool boundary = r == recompute::per_block ? crossing <= static_cast<int>(j) : table[j].checkpoint;
    kept[j] = r == recompute::none || j == 0 || j + 1 == N || boundary;
    crossing = std::max(crossing, last[j]);
  }
  int end = static_cast<int>(N) - 1;  // the first kept node after j
  for (int j = static_cast<int>(N) - 1; j >= 0; --j) {
    if (!kept[static_cast<std::size_t>(j)] && last[static_cast<std::size_t>(j)] > end) kept[static_cast<std::size_t>(j)] = true;
    if (kept[static_cast<std::size_t>(j)]) end = j;
  }
  return kept;
}

/// Steps of a training step of `table` with `r`: a forward step per node, a backward step per
/// node but the input, a recompute step per node whose output is not kept, an update step per
/// node with trainable tensors.
template <std::size_t N>
constexpr std::size_t training_steps(const std::array<node, N>& table, recompute r) noexcept {
  const std::array<bool, N> kept = kept_outputs(table, r);
  std::size_t s = 0;
  for (std::size_t j = 0; j < N; ++j) {
    const node& n = table[j];
    s += 1 + (n.kind == op_of<ops::input> ? 0 : 1) + (has_trainable(n) ? 1 : 0) + (kept[j] ? 0 : 1);
  }
  return s;
}

/// The inputs of `table`'s nodes that have a dropout.
template <std::size_t N>
constexpr std::size_t dropped_inputs(const std::array<node, N>& table) noexcept {
  std::size_t count = 0;
  for (const node& n : table)
    for (int k = 0; k < n.input_count; ++k) count += n.dropout[static_cast<std::size_t>(k)].active() ? 1 : 0;
  return count;
}

/// The tiles `[first, end)` a mapping's units are on.
constexpr std::pair<int, int> tiles_of(const linear_mapping& u) noexcept {
  return {u.first_tile, u.first_tile + static_cast<int>(u.parts)};
}

/// The training plan's memory of IPU `ipu`: always-live bytes per tile, the dynamic buffers and
/// their offsets (`pack`), the peak, as `plan_ipu` finds them for inference.
template <std::size_t N, std::size_t S, int Ipus, int Tiles, std::size_t Dropped>
constexpr void plan_training_memory(training_plan<N, S, Ipus>& p, int ipu) {
  constexpr std::size_t T = static_cast<std::size_t>(Tiles);
  const plan<N, Ipus>& inf = *p.inference;
  training_memory& im = p.ipus[static_cast<std::size_t>(ipu)];
  im.capacity = inf.chip.bytes_per_tile;

  // Always live: code, a difference array over tiles; the tensors, each distinct mapping and
  // element size once, `count` tensors of it (a pipeline stage's stashes of the micro-batches
  // in flight among them).
  std::array<std::int64_t, T + 1> code_steps{};
  std::array<weight_term, 14 * N + 1> distinct{};
  int distinct_count = 0;
  const auto code_on_tiles = [&](std::int64_t bytes, int tiles) {
    code_steps[0] += bytes;
    code_steps[static_cast<std::size_t>(std::min(Tiles, tiles))] -= bytes;
  };
  for (int j = 0; j < static_cast<int>(N); ++j) {
    if (p.ipu_of(j) != ipu) continue;
    code_on_tiles((1 + p.backward_code_copies(j)) * inf.step_code_on(j, 0), inf.plan_of(j).work.tiles());
    if (p.node_of(j).update >= 0) code_on_tiles(p.update_code(), p.update_tiles(j));
  }
  p.for_each_always_live_tensor(ipu, [&](const tensor_mapping& m, std::int64_t bytes, int count, training_category c) {
    if (count > 0 && bytes > 0) add_weight_term(distinct, distinct_count, m, bytes, count);
    im.totals[c] += count * m.elements() * bytes;
  });
  const always_live_region<T> region = lay_out_always_live_region<T>(distinct, distinct_count, code_steps, p.shared_code(ipu));
  im.totals.code = region.code_total;
  im.max_always_live = region.max_always;

  // The dynamic buffers, in order of their first step (as `pack` wants them). Each is as large
  // as on its fullest tile; a step's scratch holds its temporaries, then its exchange buffers.
  // An output, it recomputed, its gradient, four tensors' gradients, three steps' scratch, a
  // send buffer; four buffers per dropped-out input; a received copy, its gradient and the
  // gradient's send buffer.
  constexpr std::size_t M = 14 * N + 4 * Dropped;
  std::array<training_buffer, M> made{};
  std::array<buffer_request, M> made_requests{};
  int count = 0;
  std::array<std::int64_t, training_category_count * (S + 1)> ipu_wide{};  // bytes by category, difference arrays over steps
  p.for_each_buffer(ipu, [&](const training_buffer& b) {
    std::int64_t bytes = 0;
    if (b.mapping) {
      bytes = aligned(b.mapping->max_elements_per_tile() * b.element_bytes);
      const std::size_t c = static_cast<std::size_t>(b.category) * (S + 1);
      ipu_wide[c + static_cast<std::size_t>(b.first)] += b.mapping->elements() * b.element_bytes;
      ipu_wide[c + static_cast<std::size_t>(b.last) + 1] -= b.mapping->elements() * b.element_bytes;
    } else {
      const transient_bytes& most = inf.plan_of(b.node).transient_max;
      bytes = aligned(most.temporaries) + aligned(most.exchange);
    }
    if (bytes <= 0) return;
    made[static_cast<std::size_t>(count)] = b;
    made_requests[static_cast<std::size_t>(count++)] = {b.first, b.last, bytes};
  });
  std::array<std::int64_t, M> order_keys{};
  for (int k = 0; k < count; ++k)
    order_keys[static_cast<std::size_t>(k)] = std::int64_t{made_requests[static_cast<std::size_t>(k)].first} << 32 | k;
  std::sort(order_keys.begin(), order_keys.begin() + count);
  std::array<training_buffer, M> buffers{};
  std::array<buffer_request, M> requests{};
  for (int k = 0; k < count; ++k) {
    const int from = static_cast<int>(order_keys[static_cast<std::size_t>(k)] & 0xffffffff);
    buffers[static_cast<std::size_t>(k)] = made[static_cast<std::size_t>(from)];
    requests[static_cast<std::size_t>(k)] = made_requests[static_cast<std::size_t>(from)];
  }
  const std::array<std::int64_t, M> offset = pack(requests, count);
  for (int k = 0; k < count; ++k) {
    const training_buffer& b = buffers[static_cast<std::size_t>(k)];
    const std::int64_t at = offset[static_cast<std::size_t>(k)];
    if (b.mapping) {
      *training_plan<N, S, Ipus>::offset_of(p, b) = at;
      continue;
    }
    const node_plan& np = inf.plan_of(b.node);
    step_buffers& sb = training_plan<N, S, Ipus>::scratch_of(p.nodes[static_cast<std::size_t>(b.node)], b.first);
    if (np.transient_max.temporaries > 0) sb.temporaries = at;
    if (np.transient_max.exchange > 0) sb.exchange = at + aligned(np.transient_max.temporaries);
  }

  // IPU-wide totals of the categories that come and go: the largest sum over the steps (beside
  // the stashes of the micro-batches in flight, which stay).
  for (training_category c : {training_category::activations, training_category::recomputed, training_category::gradients}) {
    std::int64_t live = 0, most = 0;
    for (std::size_t s = 0; s < S; ++s) {
      live += ipu_wide[static_cast<std::size_t>(c) * (S + 1) + s];
      most = std::max(most, live);
    }
    im.totals[c] += most;
  }
  for (int j = 0; j < static_cast<int>(N); ++j) {
    if (p.ipu_of(j) != ipu) continue;
    const node_plan& np = inf.plan_of(j);
    const transient_bytes sum = transient_sum(np.step, np.work.units);
    im.totals.temporaries = std::max(im.totals.temporaries, sum.temporaries);
    im.totals.exchange = std::max(im.totals.exchange, sum.exchange);
  }

  // The peak, as `plan_ipu` finds it.
  const int top = find_peak(
      region, offset, requests, count,
      [&](int k) {
        const training_buffer& b = buffers[static_cast<std::size_t>(k)];
        return tiles_of(b.mapping ? b.mapping->units : inf.plan_of(b.node).work.units);
      },
      [&](int k, auto&& consider) {
        const training_buffer& b = buffers[static_cast<std::size_t>(k)];
        const std::int64_t at = offset[static_cast<std::size_t>(k)];
        if (b.mapping) {
          const tensor_mapping& m = *b.mapping;
          for_each_part(m.units, [&](int tile, std::int64_t units) { consider(tile, at, units * m.unit_elements * b.element_bytes); });
          return;
        }
        const node_plan& np = inf.plan_of(b.node);
        const std::int64_t temporaries_room = aligned(np.transient_max.temporaries);
        std::int64_t cached_units = -1;
        transient_bytes tr{};
        for_each_part(np.work.units, [&](int tile, std::int64_t units) {
          if (units != cached_units) cached_units = units, tr = transient_on(np.step, units);
          consider(tile, at, tr.temporaries);
          consider(tile, at + temporaries_room, tr.exchange);
        });
      },
      im.peak, im.peak_tile);
  // The peak's step: of the steps the highest buffer lives through, the one with the most
  // bytes in use on the peak tile.
  // Then the category with the most bytes in use there and its largest buffer: what the error names.
  if (top >= 0) {
    const int tile = im.peak_tile;
    std::array<std::int64_t, M> bytes_on_tile{};
    std::array<std::int64_t, S + 1> in_use{};
    for (int k = 0; k < count; ++k) {
      const training_buffer& o = buffers[static_cast<std::size_t>(k)];
      const std::int64_t bytes = p.bytes_on(o, tile).not_always_live();
      bytes_on_tile[static_cast<std::size_t>(k)] = bytes;
      in_use[static_cast<std::size_t>(o.first)] += bytes;
      in_use[static_cast<std::size_t>(o.last) + 1] -= bytes;
    }
    const buffer_request& r = requests[static_cast<std::size_t>(top)];
    std::int64_t running_use = 0, most = -1;
    for (int s = 0; s <= r.last; ++s) {
      running_use += in_use[static_cast<std::size_t>(s)];
      if (s >= r.first && running_use > most) most = running_use, im.peak_step = s;
    }
    const auto live = [&](int k) {
      const buffer_request& q = requests[static_cast<std::size_t>(k)];
      return q.first <= im.peak_step && im.peak_step <= q.last && bytes_on_tile[static_cast<std::size_t>(k)] > 0;
    };
    std::array<std::int64_t, training_category_count> by_category{};
    by_category[static_cast<std::size_t>(training_category::activations)] = p.tensors_on(ipu, tile).activations;  // micro-batches in flight
    // A send buffer counts with the steps' scratch, as `temporaries`.
    const auto counted_as = [](training_category c) { return c == training_category::exchange ? training_category::temporaries : c; };
    for (int k = 0; k < count; ++k)
      if (live(k)) by_category[static_cast<std::size_t>(counted_as(buffers[static_cast<std::size_t>(k)].category))] += bytes_on_tile[static_cast<std::size_t>(k)];
    for (training_category c : {training_category::activations, training_category::recomputed, training_category::gradients,
                                training_category::temporaries})
      if (by_category[static_cast<std::size_t>(c)] > by_category[static_cast<std::size_t>(im.peak_category)]) im.peak_category = c;
    std::int64_t largest = 0;
    for (int k = 0; k < count; ++k)
      if (live(k) && counted_as(buffers[static_cast<std::size_t>(k)].category) == im.peak_category && bytes_on_tile[static_cast<std::size_t>(k)] > largest) {
        largest = bytes_on_tile[static_cast<std::size_t>(k)];
        im.peak_node = buffers[static_cast<std::size_t>(k)].node;
      }
  }
  im.at_peak = im.peak_step >= 0 ? p.usage(ipu, im.peak_tile, im.peak_step) : p.tensors_on(ipu, im.peak_tile);
  im.at_peak.code = p.code_on(ipu, im.peak_tile);
  im.fits = im.peak <= im.capacity;
}

/// The training plan of `inf`'s graph with `topts`: its steps, tensors, lifetimes and memory.
/// On a target of `replicas` replicas, each holds a share of the optimiser state when
/// `topts.shard_optimizer_state` says so.
template <std::size_t N, std::size_t S, int Ipus, int Tiles, std::size_t Dropped>
constexpr training_plan<N, S, Ipus> make_training_plan(const plan<N, Ipus>& inf, const train_options& topts, int replicas) {
  training_plan<N, S, Ipus> p;
  p.inference = &inf;
  p.train = topts;
  p.state_shards = topts.shard_optimizer_state ? replicas : 1;
  for (training_memory& m : p.ipus) m.capacity = inf.chip.bytes_per_tile;
  p.error = inf.error;
  for (int j = 0; p.error.kind == plan_error_kind::none && j < static_cast<int>(N); ++j)
    if (inf.at(j).on_host()) p.error = {plan_error_kind::training_on_the_host, j, inf.at(j).ipu, 0};
  if (p.error.kind != plan_error_kind::none) {
    p.fits = false;
    return p;
  }
  // The steps: forward in table order; backward in reverse, each kept node's preceded by the
  // recompute steps of the nodes since the previous kept one; updates in table order.
  const std::array<bool, N> kept = kept_outputs(*inf.table, topts.recompute);
  int s = 0;
  for (int j = 0; j < static_cast<int>(N); ++j) {
    p.nodes[static_cast<std::size_t>(j)].forward = s;
    p.steps[static_cast<std::size_t>(s++)] = {j, step_phase::forward, 0};
  }
  for (int j = static_cast<int>(N) - 1; j >= 0; --j) {
    if (kept[static_cast<std::size_t>(j)]) {
      int first = j;
      while (first > 0 && !kept[static_cast<std::size_t>(first - 1)]) --first;
      for (int k = first; k < j; ++k) {
        p.nodes[static_cast<std::size_t>(k)].recompute = s;
        p.steps[static_cast<std::size_t>(s++)] = {k, step_phase::recompute, 0};
      }
    }
    if (!(inf.at(j).kind == op_of<ops::input>)) {
      p.nodes[static_cast<std::size_t>(j)].backward = s;
      p.steps[static_cast<std::size_t>(s++)] = {j, step_phase::backward, 0};
    }
  }
  for (int j = 0; j < static_cast<int>(N); ++j)
    if (has_trainable(inf.at(j))) {
      p.nodes[static_cast<std::size_t>(j)].update = s;
      p.steps[static_cast<std::size_t>(s++)] = {j, step_phase::update, 0};
    }
  // The tensors, mapped as inference maps weights, and the lifetimes: each output lives to its
  // last reader, kept for the backward pass to the last backward step of its readers (found in
  // one pass over the nodes' inputs; a node reads only nodes before it).
  std::array<int, N> last_reader{}, readers_backward{};
  last_reader.fill(-1), readers_backward.fill(-1);
  for (int k = 0; k < static_cast<int>(N); ++k)
    for (int src : inf.at(k).sources()) {
      int& last = last_reader[static_cast<std::size_t>(src)];
      int& backward = readers_backward[static_cast<std::size_t>(src)];
      last = std::max(last, k);
      backward = std::max(backward, p.node_of(k).backward);
    }
  const chip_spec chip = with_tiles(inf.chip, inf.chip.tiles - inf.opts.io_tiles);
  for (int j = 0; j < static_cast<int>(N); ++j) {
    const node& n = inf.at(j);
    training_node& t = p.nodes[static_cast<std::size_t>(j)];
    const ops::tensor_specs specs = n.kind.info->tensors(n);
    for (const ops::tensor_spec& spec : specs.view()) {
      const tensor_mapping m = map_elements(spec.elements(), size_of(n.type), chip);
      const tensor_mapping state =
          p.state_shards > 1 ? map_elements(detail::div_up(spec.elements(), std::int64_t{p.state_shards}), size_of(n.type), chip) : m;
      t.tensors[static_cast<std::size_t>(t.tensor_count++)] = {m, spec.trainable, state};
    }
    const bool keep = kept[static_cast<std::size_t>(j)];
    t.output_last = keep && t.backward >= 0 ? t.backward : inf.held_to(n.ipu, j);
    if (keep && t.backward < 0) t.output_last = std::max(t.output_last, readers_backward[static_cast<std::size_t>(j)]);
    const int read_last = j + 1 == static_cast<int>(N) ? j : last_reader[static_cast<std::size_t>(j)];
    if (t.backward >= 0) t.grad_first = p.node_of(read_last >= 0 ? read_last : j).backward;
  }
  // The copies: of each output read on another IPU, on that IPU, from the output's forward step
  // to the last backward step there that reads it; its gradient from the first to the last
  // backward step there that adds to it.
  // Every element written, not left to the array's value-initialisation: g++ 12 otherwise
  // stores some elements the loop below does not touch as zeros, not as their -1 defaults.
  for (training_copy& c : p.copies) c = training_copy{};
  for (int k = 0; k < static_cast<int>(N); ++k) {
    const node& n = inf.at(k);
    for (int src : n.sources()) {
      if (inf.at(src).ipu == n.ipu) continue;
      training_copy& c = p.copies[static_cast<std::size_t>(src) * static_cast<std::size_t>(Ipus) + static_cast<std::size_t>(n.ipu)];
      const int read_at = p.node_of(k).backward;
      c.first = p.node_of(src).forward;
      c.last = std::max(c.last, read_at);
      if (p.node_of(src).backward < 0) continue;
      c.grad_first = c.grad_first < 0 ? read_at : std::min(c.grad_first, read_at);
      c.grad_last = std::max(c.grad_last, read_at);
    }
  }
  // The stash depths: each IPU of a pipeline is a stage.
  int stages = 1;
  for (const node& n : *inf.table) stages = std::max(stages, n.ipu + 1);
  for (int i = 0; i < Ipus; ++i)
    p.stash_depth[static_cast<std::size_t>(i)] =
        stages > 1 && i < stages ? pipeline_stash_depth(topts.pipeline, stages, i, topts.gradient_accumulation) : 1;
  for (int i = 0; i < Ipus; ++i) {
    bool holds = false;
    for (const node& n : *inf.table) holds = holds || n.ipu == i;
    if (holds) plan_training_memory<N, S, Ipus, Tiles, Dropped>(p, i);
  }
  for (const training_memory& m : p.ipus) p.fits = p.fits && m.fits;
  return p;
}

template <Graph G, train_options O, class Target, options Opts>
struct plan_info<training<G, O>, Target, Opts> {
  using inference_t = plan_info<G, Target, Opts>;
  static constexpr std::size_t size = inference_t::size;
  static constexpr std::size_t steps = training_steps(graph_info<typename training<G, O>::graph_type>::nodes, O.recompute);
  static constexpr training_plan<size, steps, Target::ipus> value =
      make_training_plan<size, steps, Target::ipus, Target::chip.tiles, dropped_inputs(graph_info<typename training<G, O>::graph_type>::nodes)>(
          inference_t::base, O, replicas_v<Target>);
  /// The diagnostic of the plan's error, if it has one (a compile error; see `plan_info`).
  using checked = decltype(report_plan_error<value.error, value.error.node >= 0 ? value.at(value.error.node).path : path_string{}>());
};

}  // namespace detail

namespace diag {

/// The category at a training plan's peak with the most bytes, as a type both compilers print.
struct stashed_activations_of {};
struct recomputed_activations_of {};
struct gradients_of {};
struct temporaries_and_exchange_of {};
/// The category at the peak with the most bytes (`What`) and the layer of its largest buffer;
/// `always_live_memory` when no buffer reaches above the always-live region.
template <class What, auto Layer>
struct largest_is {};
struct always_live_memory {};
/// The phase of the step at the peak.
struct forward_step {};
struct backward_step {};
struct update_step {};
struct recompute_step {};
/// The step at the peak: its phase and layer.
template <class Phase, auto Layer>
struct during {};
struct master_weights { std::int64_t bytes; };
struct optimizer_state { std::int64_t bytes; };
struct stashed_activations { std::int64_t bytes; };
struct recomputed_activations { std::int64_t bytes; };
struct gradients { std::int64_t bytes; };

template <on_ipu Ipu, on_tile Tile, class Buffer, class Step, bytes_needed Needed, bytes_available Available, weights W,
          master_weights MW, optimizer_state OS, code C, stashed_activations A, recomputed_activations R, gradients G,
          temporaries T, exchange E>
struct training_tile_out_of_memory {
  static_assert(Needed.value <= Available.value,
                "ipu: a tile needs more memory than it has for a training step; lower the micro-batch, train in "
                "16.16 (train_options::master_weights = ipu::dtype::f16), use an optimiser keeping less state "
                "(SGD without momentum keeps none), or share the state out over replicas "
                "(train_options::shard_optimizer_state on an ipu::replicated target)");
  static constexpr bool value = false;
};

}  // namespace diag

namespace detail {

/// The category with the most bytes at a training plan's peak and the layer of its largest
/// buffer, as the diagnostic prints them.
template <bool AlwaysLive, training_category C, auto Layer>
consteval auto largest_at_peak() {
  if constexpr (AlwaysLive) return diag::always_live_memory{};
  else if constexpr (C == training_category::activations) return diag::largest_is<diag::stashed_activations_of, Layer>{};
  else if constexpr (C == training_category::recomputed) return diag::largest_is<diag::recomputed_activations_of, Layer>{};
  else if constexpr (C == training_category::gradients) return diag::largest_is<diag::gradients_of, Layer>{};
  else return diag::largest_is<diag::temporaries_and_exchange_of, Layer>{};
}

/// The step at a training plan's peak, as the diagnostic prints it.
template <step_phase Phase, auto Layer>
consteval auto step_at_peak() {
  if constexpr (Phase == step_phase::forward) return diag::during<diag::forward_step, Layer>{};
  else if constexpr (Phase == step_phase::backward) return diag::during<diag::backward_step, Layer>{};
  else if constexpr (Phase == step_phase::recompute) return diag::during<diag::recompute_step, Layer>{};
  else return diag::during<diag::update_step, Layer>{};
}

/// Instantiates the training out-of-memory diagnostic for the peak `M` of IPU `Ipu`: the category
/// with the most bytes there and the layer of its largest buffer (`Buffer`), and the step at
/// the peak (`Phase` of `Step`).
template <int Ipu, training_memory M, path_string Buffer, step_phase Phase, path_string Step>
consteval auto report_training_out_of_memory() {
  constexpr auto buffer_layer = diag::in_layer<Buffer.length + 1>{Buffer};
  constexpr auto step_layer = diag::in_layer<Step.length + 1>{Step};
  using buffer = decltype(largest_at_peak<M.peak_node < 0, M.peak_category, buffer_layer>());
  using step = decltype(step_at_peak<Phase, step_layer>());
  constexpr training_bytes a = M.at_peak;
  return diag::training_tile_out_of_memory<
      diag::on_ipu{Ipu}, diag::on_tile{M.peak_tile}, buffer, step, diag::bytes_needed{M.peak}, diag::bytes_available{M.capacity},
      diag::weights{a.weights}, diag::master_weights{a.master_weights}, diag::optimizer_state{a.optimizer_state},
      diag::code{a.code}, diag::stashed_activations{a.activations}, diag::recomputed_activations{a.recomputed},
      diag::gradients{a.gradients},
      diag::temporaries{a.temporaries}, diag::exchange{a.exchange}>::value;
}

/// The out-of-memory diagnostic of a training plan `P`, if it does not fit (a compile error): of
/// the first IPU that does not.
template <const auto& P>
consteval auto report_training_fit() {
  if constexpr (P.fits) {
    return true;
  } else if constexpr (P.error.kind != plan_error_kind::none) {
    return report_plan_error<P.error, P.error.node >= 0 ? P.at(P.error.node).path : path_string{}>();
  } else {
    constexpr int ipu = [] {
      int i = 0;
      while (P.ipus[static_cast<std::size_t>(i)].fits) ++i;
      return i;
    }();
    constexpr training_memory m = P.ipus[static_cast<std::size_t>(ipu)];
    return report_training_out_of_memory<ipu, m, m.peak_node >= 0 ? P.at(m.peak_node).path : path_string("always-live"),
                                         m.peak_step >= 0 ? P.steps[static_cast<std::size_t>(m.peak_step)].phase : step_phase::forward,
                                         m.peak_step >= 0 ? P.at(P.steps[static_cast<std::size_t>(m.peak_step)].node).path : path_string("always-live")>();
  }
}

template <Graph G, train_options O, class Target, options Opts>
struct fit_check<training<G, O>, Target, Opts> {
  using pipeline_checked = decltype(check_pipeline<G, O>());  // a pipeline's rules first
  using checked = decltype(report_training_fit<plan_info<training<G, O>, Target, Opts>::value>());
  static constexpr bool value = true;
};

}  // namespace detail

}  // namespace ipu
