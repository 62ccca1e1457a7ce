#pragma once
/// \file
/// `runtime::training_pass`: one forward and one backward pass of a program on the host, the
/// arithmetic of a training step. The forward pass is fast mode's (`fast_executor`), with every
/// output kept for the backward pass and nothing fused, except where an op's kernel computes
/// its training forward differently (`forward_training`: batch norm normalises with the batch's
/// statistics). The backward pass runs the nodes in reverse order, each op's `backward` adding
/// the gradients of its inputs and weights to f32 buffers: a node read by several others
/// receives the sum of their gradients, in the order of its readers from last to first. The
/// gradients are stored in the element type, as the training plan counts them: for an f16
/// graph, every gradient buffer a node's backward wrote to is rounded to f16 after it (the
/// loss's gradient before the first), so values beyond f16's range become infinite and those
/// below its smallest subnormal zero, which loss scaling is there to prevent.
///
/// A node's input with a dropout (`input_dropout`, from `nn::dropout`) is read dropped out:
/// before the node's forward step the pass draws the mask (`ipu/train/dropout.hpp`) and writes
/// the kept values, times `1 / (1 - rate)` and rounded to the element type, to a buffer of the
/// edge, which the step reads in place of the input. Before the node's backward step it draws
/// the same mask again, as the IPU does instead of storing it, and the backward writes the
/// gradient of the dropped input to a buffer of the edge, stored in the element type; the
/// input's gradient then receives it through the mask, times the same factor.
///
/// Each op's training kernels cut their work into items that do not depend on the number of
/// threads, and each item sums in a fixed order, so a pass gives the same bits on any number of
/// threads.

#include <ipu/core/dtype.hpp>
#include <ipu/ops/kernels/kernel.hpp>
#include <ipu/ops/op.hpp>
#include <ipu/runtime/execution.hpp>
#include <ipu/runtime/fast_executor.hpp>
#include <ipu/runtime/kernel_set.hpp>
#include <ipu/runtime/program.hpp>
#include <ipu/runtime/team.hpp>
#include <ipu/runtime/weights.hpp>
#include <ipu/train/dropout.hpp>
#include <ipu/train/precision.hpp>

#include <algorithm>
#include <any>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace ipu::runtime {

template <ElementType T>
class training_pass;

/// The nodes `[first, last]` of a program, in table order: a pipeline stage's. The default
/// holds every node.
struct node_range {
  int first = 0;                                  ///< the first node
  int last = std::numeric_limits<int>::max();     ///< the last node
  /// Whether node `j` is in the range.
  constexpr bool contains(int j) const noexcept { return first <= j && j <= last; }
};

/// What an op's training kernels (`forward_training`, `backward`) are handed for one node: its
/// forward values, the gradients, its layer's weights and their gradients, and the threads.
/// Values are in logical order (NHWC or NC), gradients in f32.
template <ElementType T>
class training_context : public step_context<T, float> {
 public:
  using step_context<T, float>::n;
  using step_context<T, float>::index;

  /// Node `j` of pass `e`.
  training_context(training_pass<T>& e, int j) : step_context<T, float>{e.prog_.at(j), e.prog_.plan_of(j), j}, e_(e) {}

  /// Node `k` of the program.
  const node& node_at(int k) const noexcept { return e_.prog_.at(k); }
  /// The forward output of node `k`.
  T* value(int k) const { return e_.forward_.tensor(k); }
  /// The node's input `k` (0: the main input) as its forward step read it: the forward output
  /// of the node it names, dropped out where the input has a dropout.
  const T* input(int k = 0) const {
    if (const auto* d = e_.dropped(index, k)) return d->values.data();
    return value(n.inputs[static_cast<std::size_t>(k)]);
  }
  /// The node's forward output.
  T* output() const { return value(index); }
  /// The gradient of the loss with respect to the node's output.
  const float* grad_output() const { return e_.grad_of(index); }
  /// The gradient of the loss with respect to input `k` (as `input(k)` gives it), to add to;
  /// null where none is wanted (the graph's input). Call it outside `parallel`: the first
  /// call in a backward pass for a node's gradient clears it.
  float* grad_input(int k = 0) const {
    float* g = e_.cleared_grad(n.inputs[static_cast<std::size_t>(k)]);
    if (auto* d = e_.dropped(index, k); d != nullptr && g != nullptr) return d->grad.data();
    return g;
  }
  /// Where a kernel that writes every element of input `k`'s gradient writes it.
  struct gradient_target {
    float* data;  ///< as `grad_input(k)` gives it
    bool assign;  ///< nothing added to it yet in this pass: store, as if adding to zeros
  };
  /// Input `k`'s gradient for a kernel that writes every element of it: when nothing has
  /// been added to it yet in this backward pass, it is not cleared, and the kernel stores its
  /// values (`assign`) with the bits that adding them to zeros gives. Call it outside
  /// `parallel`.
  gradient_target grad_input_target(int k = 0) const {
    if (e_.dropped(index, k) == nullptr)
      if (float* g = e_.unstarted_grad(n.inputs[static_cast<std::size_t>(k)])) return {g, true};
    return {grad_input(k), false};
  }
  /// The values of the layer's weight tensor `name` as the forward pass used them (rounded to
  /// `T`).
  std::span<const float> weight(std::string_view name) const { return e_.compute_weight(index, name); }
  /// The gradient of the layer's weight tensor `name`, to add to.
  std::span<float> weight_grad(std::string_view name) const { return e_.weight_grad(index, name); }
  /// The layer's tensor `name` that the forward pass updates (a batch norm's running
  /// statistics), in f32.
  std::span<float> running(std::string_view name) const { return e_.master_weight(index, name); }
  /// What the node's `forward_training` kept for its `backward` (a batch norm's statistics).
  std::any& saved() const { return e_.saved_[static_cast<std::size_t>(index)]; }
  /// Runs `work(item)` for `items` items spread over the threads.
  template <class F>
  void parallel(std::int64_t items, F&& work) const {
    e_.forward_.parallel(items, work);
  }

 private:
  training_pass<T>& e_;
};

/// An op's training kernels, as function pointers: `Op::kernel::forward_training` (null where
/// the training forward is the inference one) and `Op::kernel::backward` (null for an op
/// without gradients).
template <ElementType T>
struct training_kernel {
  op kind{};                                                     ///< the op
  void (*forward_training)(const training_context<T>&) = nullptr;  ///< `Op::kernel::forward_training`
  void (*backward)(const training_context<T>&) = nullptr;          ///< `Op::kernel::backward`

  /// The training kernels of op struct `Op`.
  template <class Op>
  static training_kernel of() noexcept {
    using K = typename Op::kernel;
    training_kernel k;
    k.kind = op_of<Op>;
    if constexpr (requires(const training_context<T>& c) { K::forward_training(c); })
      k.forward_training = &K::template forward_training<training_context<T>>;
    if constexpr (requires(const training_context<T>& c) { K::backward(c); })
      k.backward = &K::template backward<training_context<T>>;
    return k;
  }
};

/// The training kernels of a set of ops, found by op.
template <ElementType T>
using training_kernel_set = kernels_by_op<training_kernel<T>>;

/// One training pass over a program (see the file comment). The program's fusion is dropped;
/// the weights are the caller's `layer_weights`, f32 masters that the pass rounds to `T` at
/// the start of each forward pass. Movable only by pointer (its contexts refer to it).
template <ElementType T>
class training_pass {
 public:
  /// A pass over `prog` (taken over) with `kernels` (the inference kernels, one per node) and
  /// `training` (one per node), on `threads`, for weights laid out as `layers` (their values
  /// are read by `forward`). Throws `execution_error` naming the first node whose op has no
  /// backward.
  training_pass(program prog, std::vector<op_kernel<T, float>> kernels, std::vector<training_kernel<T>> training,
                team& threads, std::span<const layer_weights> layers)
      : prog_(unfused(std::move(prog))),
        training_(std::move(training)),
        forward_(prog_, device_parameters(layers, static_cast<std::size_t>(prog_.size())), std::move(kernels), threads,
                 step_selection{}, true) {
    for (int j = 1; j < prog_.size(); ++j)
      if (training_[static_cast<std::size_t>(j)].backward == nullptr)
        throw execution_error("ipu::trainer: " + std::string(prog_.at(j).path.view()) + " (" +
                              std::string(name_of(prog_.at(j).kind)) + ") has no backward pass");
    layer_of_.assign(static_cast<std::size_t>(prog_.size()), -1);
    for (std::size_t l = 0; l < layers.size(); ++l) layer_of_[static_cast<std::size_t>(layers[l].node_index())] = static_cast<int>(l);
    prepare_dropouts();
    saved_.resize(static_cast<std::size_t>(prog_.size()));
    compute_.resize(static_cast<std::size_t>(prog_.size()));
    grads_.resize(static_cast<std::size_t>(prog_.size()));
    forward_seconds_.assign(static_cast<std::size_t>(prog_.size()), 0.0);
    recompute_seconds_.assign(static_cast<std::size_t>(prog_.size()), 0.0);
    backward_seconds_.assign(static_cast<std::size_t>(prog_.size()), 0.0);
    for (int j = 1; j < prog_.size(); ++j)
      if (prog_.at(j).kind != prog_.at(0).kind)  // the input needs no gradient
        grads_[static_cast<std::size_t>(j)].resize(static_cast<std::size_t>(prog_.at(j).out.elements()));
  }
  training_pass(const training_pass&) = delete;
  training_pass& operator=(const training_pass&) = delete;

  /// Starts a pass over `input` (as the input stream carries it) with weights `masters` (their
  /// running statistics updated in place by the forward steps) and their gradients to be
  /// `grads`: rounds the weights to `T` and prepares each layer's device tensors. The dropouts
  /// draw their masks for `seed` and `step` (`dropout_stream`), in this pass's forward steps and
  /// in the backward steps that follow them. With `nodes`, only the layers of the nodes in
  /// `[nodes.first, nodes.last]` are read: a pipeline stage's pass, which runs only those steps.
  void begin(const void* input, std::span<layer_weights> masters, std::span<layer_weights> grads, std::uint64_t seed = 0,
             std::int64_t step = 0, node_range nodes = {}) {
    masters_ = masters;
    weight_grads_ = grads;
    // Layer by layer over the threads, each layer's in the storage of the step before.
    forward_.parallel(static_cast<std::int64_t>(masters.size()), [&](std::int64_t l) {
      const layer_weights& layer = masters[static_cast<std::size_t>(l)];
      const int j = layer.node_index();
      if (!nodes.contains(j)) return;
      auto& compute = compute_[static_cast<std::size_t>(j)];
      compute.resize(layer.tensors().size());
      for (std::size_t k = 0; k < compute.size(); ++k) ops::assign_rounded<T>(compute[k], layer.tensors()[k].values);
      forward_.set_parameters(j, device_tensors(layer, [&](std::size_t k) { return std::span<const float>(compute[k]); }));
    });
    for (dropped_input& d : dropped_) {
      d.stream = dropout_stream(seed, step, d.dropout.site);
      d.scale = dropout_scale(d.dropout.rate);
    }
    forward_.begin(input);
  }

  /// Node `j`'s forward step: draws its inputs' dropout masks and computes its output. A
  /// recompute step (`recompute`, in the backward pass) computes the same values and leaves
  /// the running statistics as the forward step updated them.
  void forward_step(int j, bool recompute = false) {
    const auto start = std::chrono::steady_clock::now();
    recomputing_ = recompute;
    scratch_.clear();
    draw_dropouts(j);
    if (const auto f = training_[static_cast<std::size_t>(j)].forward_training) {
      f(training_context<T>{*this, j});
    } else {
      forward_.step(j);
    }
    recomputing_ = false;
    (recompute ? recompute_seconds_ : forward_seconds_)[static_cast<std::size_t>(j)] += seconds_since(start);
  }

  /// The forward pass: `begin`, then every node's forward step.
  void forward(const void* input, std::span<layer_weights> masters, std::span<layer_weights> grads, std::uint64_t seed = 0,
               std::int64_t step = 0) {
    begin(input, masters, grads, seed, step);
    for (const plan_step& s : prog_.steps) forward_step(s.node);
  }

  /// The output of node `j` in the last forward pass, in logical order.
  T* value(int j) { return forward_.tensor(j); }
  /// The gradient buffer of node `j`'s output (f32, logical order); null for the input.
  float* grad_of(int j) {
    auto& g = grads_[static_cast<std::size_t>(j)];
    return g.empty() ? nullptr : g.data();
  }

  /// Starts the backward pass from node `from`, whose output's gradient the caller has set
  /// (`grad_of(from)`): stores that gradient in `T`. No other gradient is cleared here: the
  /// first backward step to write one either stores all of it
  /// (`training_context::grad_input_target`) or has it cleared on the threads before adding
  /// to it (`training_context::grad_input`), and a step whose own gradient nothing wrote
  /// clears it before reading it. With `clear_now`, all of them are cleared here instead (for
  /// a caller that reads or writes the buffers between steps itself). Weight gradients are
  /// added to the `grads` of `begin`, which the caller clears.
  void begin_backward(int from, bool clear_now = false) {
    cleared_.assign(grads_.size(), clear_now);
    cleared_[static_cast<std::size_t>(from)] = true;
    if (clear_now)
      for (int j = 0; j < from; ++j) std::fill(grads_[static_cast<std::size_t>(j)].begin(), grads_[static_cast<std::size_t>(j)].end(), 0.0f);
    store(grads_[static_cast<std::size_t>(from)]);
  }
  /// Starts the backward pass of a pipeline stage that does not hold the loss: no gradient is
  /// started yet; those the later stages computed come in through `receive_gradient`.
  void begin_backward() { cleared_.assign(grads_.size(), false); }
  /// Sets the gradient of node `j`'s output to `g`, as the later stages' backward steps left it
  /// (stored in `T`), and counts it as started: this stage's steps add to it.
  void receive_gradient(int j, std::span<const float> g) {
    std::copy(g.begin(), g.end(), grads_[static_cast<std::size_t>(j)].begin());
    cleared_[static_cast<std::size_t>(j)] = true;
  }
  /// The gradient of node `j`'s output as this backward pass has summed it so far: zero if no
  /// step has added to it (null for the input). What a pipeline stage sends to the stage
  /// before it.
  const float* summed_grad(int j) { return cleared_grad(j); }

  /// Node `j`'s backward step: adds the gradients of its inputs and of its weights, through
  /// its inputs' dropout masks drawn again, and stores those it wrote in `T`.
  void backward_step(int j) {
    const auto start = std::chrono::steady_clock::now();
    cleared_grad(j);  // a gradient no step added to is zero
    draw_dropouts(j);
    for (const int d : dropped_of_[static_cast<std::size_t>(j)])
      if (d >= 0 && grad_of(dropped_[static_cast<std::size_t>(d)].producer) != nullptr)
        std::fill(dropped_[static_cast<std::size_t>(d)].grad.begin(), dropped_[static_cast<std::size_t>(d)].grad.end(), 0.0f);
    training_[static_cast<std::size_t>(j)].backward(training_context<T>{*this, j});
    for (const int d : dropped_of_[static_cast<std::size_t>(j)])
      if (d >= 0) back_through_dropout(dropped_[static_cast<std::size_t>(d)]);
    for (const int k : prog_.at(j).sources()) store(grads_[static_cast<std::size_t>(k)]);
    if (const int l = layer_of_[static_cast<std::size_t>(j)]; l >= 0)
      for (const weight_tensor& t : weight_grads_[static_cast<std::size_t>(l)].tensors())
        store(weight_grads_[static_cast<std::size_t>(l)][t.name]);
    backward_seconds_[static_cast<std::size_t>(j)] += seconds_since(start);
  }

  /// The backward pass from node `from` (see `begin_backward`): the backward step of `from`
  /// and of each node before it, last first.
  void backward(int from) {
    begin_backward(from);
    for (int j = from; j >= 1; --j)
      if (!grads_[static_cast<std::size_t>(j)].empty()) backward_step(j);
  }

  /// The values of node `j`'s input `k` dropped out, as its last forward, recompute or backward
  /// step drew them; empty if the input has no dropout.
  std::span<T> dropped_values(int j, int k) noexcept {
    dropped_input* d = dropped(j, k);
    return d == nullptr ? std::span<T>{} : std::span<T>(d->values);
  }
  /// Their gradient, as node `j`'s last backward step gave it; empty if the input has no
  /// dropout.
  std::span<float> dropped_grad(int j, int k) noexcept {
    dropped_input* d = dropped(j, k);
    return d == nullptr ? std::span<float>{} : std::span<float>(d->grad);
  }
  /// The gradients of node `j`'s layer's weights, in the order of its tensors (those of `begin`).
  layer_weights* weight_grads_of(int j) noexcept {
    const int l = layer_of_[static_cast<std::size_t>(j)];
    return l < 0 ? nullptr : &weight_grads_[static_cast<std::size_t>(l)];
  }
  /// The weights of node `j`'s layer (those of `begin`); null for a node without weights.
  const layer_weights* weights_of(int j) const noexcept {
    const int l = layer_of_[static_cast<std::size_t>(j)];
    return l < 0 ? nullptr : &masters_[static_cast<std::size_t>(l)];
  }
  /// The values of node `j`'s layer's tensor `w` as the forward pass computes with them
  /// (rounded to `T`).
  std::span<const float> rounded_weight(int j, std::size_t w) const noexcept { return compute_[static_cast<std::size_t>(j)][w]; }

  /// Host seconds spent in node `j`'s forward step, summed over the passes run.
  double forward_seconds(int j) const noexcept { return forward_seconds_[static_cast<std::size_t>(j)]; }
  /// Host seconds spent in node `j`'s recompute step, summed over the passes run.
  double recompute_seconds(int j) const noexcept { return recompute_seconds_[static_cast<std::size_t>(j)]; }
  /// Host seconds spent in node `j`'s backward (its gradients' rounding included), summed.
  double backward_seconds(int j) const noexcept { return backward_seconds_[static_cast<std::size_t>(j)]; }


  /// The program the pass runs (fusion dropped).
  const program& prog() const noexcept { return prog_; }

 private:
  friend class training_context<T>;

  /// Rounds a gradient to `T`, as the step stores it (nothing to do for f32): after each
  /// node's backward, its inputs' gradients (sums so far) and its weights' gradients.
  static void store(std::span<float> g) noexcept {
    if constexpr (std::is_same_v<T, f16>) round_to_half(g, rounding::nearest);
  }

  /// An input read dropped out (`input_dropout`): its values as the reader reads them, and the
  /// gradient the reader's backward gives them.
  struct dropped_input {
    int producer = 0;          // the node whose output is dropped out
    input_dropout dropout{};   // the rate and the site
    std::vector<T> values;     // the dropped-out values
    std::vector<float> grad;   // their gradient, during the reader's backward step
    std::uint64_t stream = 0;  // this pass's mask: `dropout_stream` of its seed, step and site
    float scale = 1;           // `dropout_scale(dropout.rate)`
  };

  /// The dropped input `k` of node `j`; null if the input has no dropout.
  dropped_input* dropped(int j, int k) noexcept {
    const int d = dropped_of_[static_cast<std::size_t>(j)][static_cast<std::size_t>(k)];
    return d < 0 ? nullptr : &dropped_[static_cast<std::size_t>(d)];
  }

  /// A buffer per input with a dropout, which the forward steps read in place of the input.
  void prepare_dropouts() {
    dropped_of_.assign(static_cast<std::size_t>(prog_.size()), {-1, -1, -1, -1});
    for (int j = 1; j < prog_.size(); ++j) {
      const node& n = prog_.at(j);
      for (int k = 0; k < n.input_count; ++k) {
        const input_dropout& d = n.dropout[static_cast<std::size_t>(k)];
        if (!d.active()) continue;
        const std::size_t size = static_cast<std::size_t>(prog_.at(n.inputs[static_cast<std::size_t>(k)]).out.elements());
        dropped_of_[static_cast<std::size_t>(j)][static_cast<std::size_t>(k)] = static_cast<int>(dropped_.size());
        dropped_.push_back({n.inputs[static_cast<std::size_t>(k)], d, std::vector<T>(size), std::vector<float>(size), 0, 1});
      }
    }
    for (int j = 1; j < prog_.size(); ++j)
      for (int k = 0; k < max_inputs; ++k)
        if (const int d = dropped_of_[static_cast<std::size_t>(j)][static_cast<std::size_t>(k)]; d >= 0)
          forward_.read_input(j, k, dropped_[static_cast<std::size_t>(d)].values.data());
  }

  /// Draws the masks of node `j`'s dropped inputs and writes their dropped-out values.
  void draw_dropouts(int j) {
    for (const int index : dropped_of_[static_cast<std::size_t>(j)]) {
      if (index < 0) continue;
      dropped_input& d = dropped_[static_cast<std::size_t>(index)];
      const T* x = value(d.producer);
      parallel_chunks(static_cast<std::int64_t>(d.values.size()), [&](std::int64_t i0, std::int64_t i1) {
        for (std::int64_t i = i0; i < i1; ++i)
          d.values[static_cast<std::size_t>(i)] = dropout_keeps(d.stream, i, d.dropout.rate) ? static_cast<T>(kernels::widen(x[i]) * d.scale) : T{};
      });
    }
  }

  /// Stores the gradient of dropped input `d` and adds it, through the mask and times the
  /// factor, to the gradient of the input.
  void back_through_dropout(dropped_input& d) {
    float* g = cleared_grad(d.producer);
    if (g == nullptr) return;
    store(d.grad);
    parallel_chunks(static_cast<std::int64_t>(d.grad.size()), [&](std::int64_t i0, std::int64_t i1) {
      for (std::int64_t i = i0; i < i1; ++i)
        if (dropout_keeps(d.stream, i, d.dropout.rate)) g[i] += d.grad[static_cast<std::size_t>(i)] * d.scale;
    });
  }

  /// `grad_of(j)` if this backward pass has not cleared it yet, now counted as started (its
  /// caller stores all of it); else null.
  float* unstarted_grad(int j) {
    float* g = grad_of(j);
    if (g == nullptr || cleared_[static_cast<std::size_t>(j)]) return nullptr;
    cleared_[static_cast<std::size_t>(j)] = true;
    return g;
  }

  /// `grad_of(j)`, cleared on the threads if this backward pass has not cleared it yet.
  float* cleared_grad(int j) {
    float* g = grad_of(j);
    if (g != nullptr && !cleared_[static_cast<std::size_t>(j)]) {
      parallel_chunks(prog_.at(j).out.elements(), [&](std::int64_t e0, std::int64_t e1) { std::fill(g + e0, g + e1, 0.0f); });
      cleared_[static_cast<std::size_t>(j)] = true;
    }
    return g;
  }

  /// Runs `work(begin, end)` over `[0, count)` in chunks of `ops::training_chunk` spread over the threads.
  template <class F>
  void parallel_chunks(std::int64_t count, F&& work) {
    const std::int64_t chunk = ops::training_chunk;
    forward_.parallel((count + chunk - 1) / chunk, [&](std::int64_t c) { work(c * chunk, std::min(count, (c + 1) * chunk)); });
  }

  static program unfused(program p) {
    for (int j = 0; j < p.size(); ++j) {
      p.plans[static_cast<std::size_t>(j)].fused_into = -1;
      p.plans[static_cast<std::size_t>(j)].fused_end = j;
    }
    return p;
  }

  /// Index of tensor `name` in node `j`'s layer; throws `weight_error` naming the layer's
  /// tensors if it has none.
  std::size_t tensor_index(int j, std::string_view name) const {
    return masters_[static_cast<std::size_t>(layer_of_[static_cast<std::size_t>(j)])].index_of(name);
  }
  std::span<const float> compute_weight(int j, std::string_view name) const {
    return compute_[static_cast<std::size_t>(j)][tensor_index(j, name)];
  }
  std::span<float> weight_grad(int j, std::string_view name) {
    return weight_grads_[static_cast<std::size_t>(layer_of_[static_cast<std::size_t>(j)])][name];
  }
  /// A layer's tensor that the forward step updates; in a recompute step, a copy of it, which
  /// the step updates in vain.
  std::span<float> master_weight(int j, std::string_view name) {
    std::span<float> t = masters_[static_cast<std::size_t>(layer_of_[static_cast<std::size_t>(j)])][name];
    if (!recomputing_) return t;
    return scratch_.emplace_back(t.begin(), t.end());
  }

  program prog_;
  std::vector<training_kernel<T>> training_;         // per node
  fast_executor<T, float> forward_;
  std::vector<int> layer_of_;                        // per node: its layer in the weights, or -1
  std::vector<std::any> saved_;                      // per node: what forward_training kept
  std::vector<std::vector<std::vector<float>>> compute_;  // per node: its weights rounded to T
  std::vector<std::vector<float>> grads_;            // per node: the gradient of its output
  std::vector<bool> cleared_;                        // per node: its gradient cleared, or stored whole, in this pass
  std::span<layer_weights> masters_, weight_grads_;
  std::vector<double> forward_seconds_, recompute_seconds_, backward_seconds_;  // per node, summed over the passes
  std::vector<dropped_input> dropped_;                // per input with a dropout
  std::vector<std::array<int, max_inputs>> dropped_of_;  // per node and input: its index in `dropped_`, or -1
  bool recomputing_ = false;    // in a recompute step
  std::vector<std::vector<float>> scratch_;  // a recompute step's copies of running statistics
};

}  // namespace ipu::runtime
