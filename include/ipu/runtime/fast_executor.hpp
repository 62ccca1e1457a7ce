#pragma once
/// \file
/// `runtime::fast_executor`: the fast mode of `ipu::engine`. The plan's steps over whole host
/// tensors (NHWC): each step runs its op's `fast` kernel (`ipu/ops/kernels/`), which cuts the
/// work into host-sized items that the threads take in turn; exchange is only accounted for.
/// With f32 partials, convolutions and dense layers run `kernels::packed_conv` (weights packed
/// once, at construction, by the kernel's `prepare`), and the batch norm, residual add and ReLU
/// that the plan fuses into a convolution (`node_plan::fused_into`) run in its epilogue: those
/// steps then do nothing of their own. Each output gets the arithmetic of the
/// faithful mode, each fused step rounded as its own step rounds, so the two modes agree bit
/// for bit, whatever the number of threads.

#include <ipu/core/aligned.hpp>
#include <ipu/core/dtype.hpp>
#include <ipu/runtime/execution.hpp>
#include <ipu/runtime/kernel_set.hpp>
#include <ipu/runtime/program.hpp>
#include <ipu/runtime/team.hpp>

#include <algorithm>
#include <any>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <utility>
#include <vector>

namespace ipu::runtime {

template <ElementType T, class Acc>
class fast_executor;

/// What an op's `fast` kernel is handed for one step: its node and plan, the host tensors
/// (every output in logical order, NHWC or NC) and the threads.
template <ElementType T, class Acc>
class fast_context : public step_context<T, Acc> {
 public:
  using step_context<T, Acc>::n;
  using step_context<T, Acc>::index;

  /// Step `j` of `e`.
  fast_context(fast_executor<T, Acc>& e, int j) : step_context<T, Acc>{e.prog_.at(j), e.prog_.plan_of(j), j}, e_(e) {}

  /// Node `k` of the program.
  const node& node_at(int k) const noexcept { return e_.prog_.at(k); }
  /// The host tensor of node `k`'s output (a node whose step writes it).
  T* host(int k) const { return e_.host_of(k).data(); }
  /// The step's output.
  T* output() const { return host(index); }
  /// The step's input `k` (0: the main input): the output of the node it reads, or what
  /// `fast_executor::read_input` set.
  const T* input(int k = 0) const {
    if (const T* v = e_.input_from(index, k)) return v;
    return host(n.inputs[static_cast<std::size_t>(k)]);
  }
  /// The batch the input step reads, as the input stream carries it (`ops::input`).
  const void* batch() const noexcept { return e_.input_; }
  /// What the op's kernel `prepare`d for node `k` (default: this step's node), as `P`.
  template <class P>
  const P& params(int k = -1) const {
    return std::any_cast<const P&>(e_.params_[static_cast<std::size_t>(k < 0 ? index : k)]);
  }
  /// Sets node `k`'s part of a convolution's epilogue `e`, `k` fused after node `previous`
  /// (its op's `fuse`).
  void fuse(kernels::epilogue<T>& e, int k, int previous) const {
    e_.kernels_[static_cast<std::size_t>(k)].fuse(e, *this, k, previous);
  }
  /// Runs `work(item)` for `items` items spread over the threads.
  template <class F>
  void parallel(std::int64_t items, F&& work) const {
    e_.parallel(items, work);
  }
  /// Runs `work(begin, end)` over `[0, count)` cut into parts, a few per thread (no more
  /// parts than the output has positions).
  template <class F>
  void parallel_ranges(std::int64_t count, F&& work) const {
    const std::int64_t parts_per_thread = 8;
    const std::int64_t positions = n.out.elements() / n.out.channels();
    const std::int64_t parts = std::max<std::int64_t>(1, std::min<std::int64_t>(positions, e_.team_.size() * parts_per_thread));
    e_.parallel(parts, [&](std::int64_t k) { work(k * count / parts, (k + 1) * count / parts); });
  }

 private:
  fast_executor<T, Acc>& e_;
};

/// The steps a `fast_executor` runs: by default all of them; the faithful mode's the steps of
/// `ipu::on_host` blocks (`host_only`); a pipeline stage's the nodes `first` to `last`.
struct step_selection {
  bool host_only = false;                        ///< only the steps of `on_host` blocks
  int first = 0;                                 ///< the first node whose step runs
  int last = std::numeric_limits<int>::max();    ///< the last node whose step runs
  /// Whether node `n`, the `j`-th, is selected.
  constexpr bool contains(const node& n, int j) const noexcept { return (!host_only || n.on_host()) && first <= j && j <= last; }
};

/// Runs a `program`'s steps over host tensors (see the file comment).
/// \tparam T   storage element type, `f32` or `f16`
/// \tparam Acc partials type: with `f32`, convolutions run `kernels::packed_conv` with the
///             plan's fusion; with `f16`, the scalar kernels accumulate in f16
template <ElementType T, class Acc>
class fast_executor {
 public:
  /// Lays out `params` (one entry per node) for `prog`, run on `threads` by `kernels` (one
  /// per node); `prog` and `threads` must outlive the executor. With a `selection` of some
  /// steps, only for those, with buffers for their outputs and what they read, which the
  /// caller gives them (`tensor`): the faithful mode runs the steps of `ipu::on_host` blocks
  /// with it, and a pipeline runs a stage's. With `keep_outputs`, every output keeps its own
  /// buffer to the end of the batch, as training's backward pass reads them (`training_pass`).
  fast_executor(const program& prog, const parameter_set& params, std::vector<op_kernel<T, Acc>> kernels, team& threads,
                step_selection selection = {}, bool keep_outputs = false)
      : prog_(prog), team_(threads), kernels_(std::move(kernels)), selection_(selection), keep_outputs_(keep_outputs) {
    prepare_parameters(params);
    prepare_host_buffers();
  }

  /// Sets the batch the input step reads.
  void begin(const void* input) noexcept { input_ = input; }

  /// Prepares node `j`'s device tensors `values` again (its op's `prepare`, handed what it
  /// prepared before), as training does after each update of the weights.
  void set_parameters(int j, ops::device_values values) {
    std::any& params = params_[static_cast<std::size_t>(j)];
    params = kernels_[static_cast<std::size_t>(j)].prepare(prog_.at(j), prog_.plan_of(j), values, std::move(params));
  }
  /// Runs `work(item)` for `items` items spread over the threads (`team::run_items`).
  template <class F>
  void parallel(std::int64_t items, F&& work) {
    team_.run_items(items, work);
  }

  /// Makes step `j` read its input `k` from `values` (logical order, the input's elements)
  /// instead of the output of the node it names, as a training pass reads a dropped-out input;
  /// null reads the node's output again.
  void read_input(int j, int k, const T* values) {
    if (inputs_from_.empty()) inputs_from_.resize(static_cast<std::size_t>(prog_.size()));
    inputs_from_[static_cast<std::size_t>(j)][static_cast<std::size_t>(k)] = values;
  }

  /// Runs step `j` over whole host tensors: its op's `fast` kernel, unless a convolution's
  /// epilogue computes it.
  void step(int j) {
    if (prog_.plan_of(j).fused_into >= 0) return;
    kernels_[static_cast<std::size_t>(j)].fast(fast_context<T, Acc>{*this, j});
  }

  /// Copies the graph's output, in logical order, to `output`.
  void end(T* output) {
    const int last = prog_.size() - 1;
    std::copy_n(host_of(last).begin(), prog_.at(last).out.elements(), output);
  }

  /// Copies node `j`'s output, just computed by its step (not fused away), to `out`, in
  /// logical order.
  void output_of(int j, std::vector<T>& out) {
    const aligned_vector<T>& y = host_of(j);
    out.assign(y.begin(), y.begin() + prog_.at(j).out.elements());
  }

  /// The host tensor of node `j`'s output, in logical order: one a selected step writes or
  /// reads.
  T* tensor(int j) { return host_of(j).data(); }

 private:
  friend class fast_context<T, Acc>;

  /// What step `j` reads as its input `k` in place of a node's output (`read_input`); null for none.
  const T* input_from(int j, int k) const noexcept {
    return inputs_from_.empty() ? nullptr : inputs_from_[static_cast<std::size_t>(j)][static_cast<std::size_t>(k)];
  }

  /// Whether node `j`'s step runs here.
  bool runs(int j) const noexcept { return selection_.contains(prog_.at(j), j); }

  /// What each node's kernel prepared (`prepare`), by node.
  void prepare_parameters(const parameter_set& params) {
    params_.resize(static_cast<std::size_t>(prog_.size()));
    for (int j = 0; j < prog_.size(); ++j)
      if (runs(j))
        params_[static_cast<std::size_t>(j)] = kernels_[static_cast<std::size_t>(j)].prepare(
            prog_.at(j), prog_.plan_of(j), params[static_cast<std::size_t>(j)], std::any());
  }

  /// The step that writes node `j`'s output, or -1 when no step does (fused away).
  int written_at(int j) const noexcept {
    const int head = prog_.plan_of(j).fused_into;
    if (head < 0) return j;
    return prog_.plan_of(head).fused_end == j ? head : -1;
  }

  /// Host buffers: each output a step writes gets a slot, from that step until its last
  /// reader has run (the graph's output: until the end), then the slot is reused; a step
  /// whose epilogue adds an operand that nothing reads afterwards writes over that operand
  /// (`in_place_slot`). Only the outputs of the selected steps and what they read.
  void prepare_host_buffers() {
    const int n = prog_.size();
    slot_.assign(static_cast<std::size_t>(n), -1);
    std::vector<int> last(static_cast<std::size_t>(n));
    std::vector<bool> needed(static_cast<std::size_t>(n), false);
    for (int j = 0; j < n; ++j) {
      last[static_cast<std::size_t>(j)] = j + 1 == n || keep_outputs_ ? n : j;
      for (int src : prog_.at(j).sources()) {
        last[static_cast<std::size_t>(src)] = std::max(last[static_cast<std::size_t>(src)], j);
        if (runs(j)) needed[static_cast<std::size_t>(src)] = true;
      }
      if (runs(j)) needed[static_cast<std::size_t>(j)] = true;
    }
    std::vector<int> order;  // the written outputs, by the step that writes them
    for (int j = 0; j < n; ++j)
      if (needed[static_cast<std::size_t>(j)] && written_at(j) >= 0) order.push_back(j);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return written_at(a) < written_at(b); });
    std::vector<int> busy_until;  // per slot
    std::vector<std::int64_t> sizes;
    for (int k : order) {
      const int j = written_at(k);
      const std::int64_t need = prog_.at(k).out.elements();
      const int in_place = in_place_slot(j, last);
      int best = in_place;
      for (int s = 0; in_place < 0 && s < static_cast<int>(busy_until.size()); ++s)
        if (busy_until[static_cast<std::size_t>(s)] < j && (best < 0 || sizes[static_cast<std::size_t>(s)] > sizes[static_cast<std::size_t>(best)]))
          best = s;
      if (best < 0) {
        best = static_cast<int>(busy_until.size());
        busy_until.push_back(0);
        sizes.push_back(0);
      }
      busy_until[static_cast<std::size_t>(best)] = last[static_cast<std::size_t>(k)];
      sizes[static_cast<std::size_t>(best)] = std::max(sizes[static_cast<std::size_t>(best)], need);
      slot_[static_cast<std::size_t>(k)] = best;
    }
    for (std::int64_t s : sizes) host_.emplace_back(static_cast<std::size_t>(s));
  }

  /// The slot of an operand that step `j`'s epilogue reads (a fused add's residual) and that
  /// nothing reads after the step, for the step's output to take; -1 for none. The epilogue
  /// reads such an operand element by element at the output element's own index, before the
  /// one thread computing that element stores it (`plan_fusion`), so writing over it changes
  /// nothing the step still reads, unless the step's own input is that buffer. In place, the
  /// step reads the operand and writes its output without a third stream of memory traffic for
  /// the output's lines.
  int in_place_slot(int j, const std::vector<int>& last) const {
    const int end = prog_.plan_of(j).fused_end;
    const std::span<const int> inputs = prog_.at(j).sources();
    for (int k = j + 1, previous = j; k <= end; previous = k++)
      for (int src : prog_.at(k).sources()) {
        const int slot = slot_[static_cast<std::size_t>(src)];
        if (src != previous && slot >= 0 && last[static_cast<std::size_t>(src)] <= end &&
            std::find(inputs.begin(), inputs.end(), src) == inputs.end())
          return slot;
      }
    return -1;
  }

  /// The host buffer of node `j`'s output.
  aligned_vector<T>& host_of(int j) { return host_[static_cast<std::size_t>(slot_[static_cast<std::size_t>(j)])]; }

  const program& prog_;
  team& team_;
  std::vector<op_kernel<T, Acc>> kernels_;  // per node
  step_selection selection_;
  bool keep_outputs_ = false;
  const void* input_ = nullptr;  // the batch, as the input stream carries it
  std::vector<std::any> params_;  // per node: what its kernel prepared
  std::vector<int> slot_;  // per node: the host buffer its output is written to
  std::vector<aligned_vector<T>> host_;  // on cache lines: the kernels' vector accesses never split
  std::vector<std::array<const T*, max_inputs>> inputs_from_;  // per node, once `read_input` is called
};

}  // namespace ipu::runtime
