#pragma once
/// \file
/// `runtime::executor`: what `ipu::engine` runs a batch with. It owns the program and the
/// host threads, and runs the plan's steps (`plan::steps`) in order in one of two modes:
///
/// - **fast** (`fast_executor.hpp`): whole host tensors, the plan's fusion, exchange only
///   accounted for;
/// - **faithful** (`faithful_executor.hpp`): every tile's memory image, real exchange between
///   images, memory measured against the plan.
///
/// Both give the same bits for every output (see the two headers).

#include <ipu/core/dtype.hpp>
#include <ipu/plan/memory.hpp>
#include <ipu/runtime/execution.hpp>
#include <ipu/runtime/faithful_executor.hpp>
#include <ipu/runtime/fast_executor.hpp>
#include <ipu/runtime/inference_pipeline.hpp>
#include <ipu/runtime/kernel_set.hpp>
#include <ipu/runtime/program.hpp>
#include <ipu/runtime/team.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace ipu::runtime {

/// Runs a `program` on the host, one batch at a time, in fast or faithful mode (see the file
/// comment); `ipu::engine` owns one. Movable; one call at a time: `run` is not reentrant.
/// \tparam T   storage element type, `f32` or `f16`
/// \tparam Acc partials type, `f32` or `f16`. With `f32` the fast mode runs convolutions with
///             `kernels::packed_conv`; otherwise, and always in faithful mode, the scalar
///             kernels accumulate in `Acc`
template <ElementType T, class Acc>
class executor {
 public:
  /// Takes over `prog` and lays out `params` (one entry per node, empty for nodes without
  /// parameters) for `mode`, to run each node with its op's kernel from `kernels`, on
  /// `threads` host threads (0: one per hardware thread). Throws `execution_error` if
  /// `kernels` lacks an op of `prog`. In
  /// faithful mode, allocates `bytes_per_tile` for every tile of every IPU and places code and
  /// weights; throws `execution_error` if a tile has no room for them. With `check_finite`,
  /// `run` checks every step's output (see `run`), and fast mode fuses nothing, so that every
  /// step has an output of its own. `pipelined` in fast mode, for a program whose steps are on
  /// several IPUs: an `inference_pipeline` of its stages sharing the `threads`, instead of one
  /// executor of all the steps; throws `execution_error` if the program cannot be pipelined,
  /// `std::invalid_argument` in faithful mode.
  executor(program prog, const parameter_set& params, const kernel_set<T, Acc>& kernels, execution_mode mode,
           unsigned threads, bool check_finite = false, bool pipelined = false)
      : prog_(std::make_unique<program>(std::move(prog))), mode_(mode),
        team_(std::make_unique<team>(pipelined && on_several_ipus(*prog_) ? 1 : threads)), check_finite_(check_finite) {
    if (check_finite_)
      for (int j = 0; j < prog_->size(); ++j) {
        node_plan& p = prog_->plans[static_cast<std::size_t>(j)];
        p.fused_into = -1;
        p.fused_end = j;
      }
    if (pipelined && mode_ == execution_mode::faithful)
      throw std::invalid_argument("ipu::engine: a pipelined engine runs in fast mode; the faithful mode runs one batch at a time");
    if (mode_ == execution_mode::faithful) {
      faithful_ = std::make_unique<faithful_executor<T, Acc>>(*prog_, params, kernels.per_node(prog_->nodes), *team_);
    } else if (pipelined && on_several_ipus(*prog_)) {
      pipeline_ = std::make_unique<inference_pipeline<T, Acc>>(*prog_, params, kernels.per_node(prog_->nodes), threads,
                                                               check_finite_);
    } else {
      fast_ = std::make_unique<fast_executor<T, Acc>>(*prog_, params, kernels.per_node(prog_->nodes), *team_);
    }
  }

  /// The mode the executor runs in.
  execution_mode mode() const noexcept { return mode_; }
  /// Whether `run` checks that every step's output is finite.
  bool checks_finite() const noexcept { return check_finite_; }
  /// The host threads it runs on, the calling thread included (a pipeline's: every stage's).
  unsigned threads() const noexcept {
    return pipeline_ ? pipeline_->threads_per_stage() * static_cast<unsigned>(pipeline_->stages()) : team_->size();
  }
  /// The pipeline of its stages, if it runs one (else null).
  inference_pipeline<T, Acc>* pipeline() noexcept { return pipeline_.get(); }
  /// The program it runs.
  const program& prog() const noexcept { return *prog_; }

  /// Runs one batch: `input` holds the graph's input as its stream carries it (`T`, or
  /// `std::uint8_t` for an 8-bit stream, `input_stream`), `output` receives its output (both
  /// in logical NHWC or NC order). `step_seconds[j]` receives the host time of node `j`'s step.
  /// With `check_finite`, throws `non_finite_error` after the first step whose output holds
  /// a NaN or an infinity (the input step's included).
  void run(const void* input, T* output, std::vector<double>& step_seconds) {
    step_seconds.assign(static_cast<std::size_t>(prog_->size()), 0.0);
    if (pipeline_) {
      pipeline_->run(input, output, step_seconds);
    } else if (faithful_) {
      run_steps(*faithful_, input, output, step_seconds);
    } else {
      run_steps(*fast_, input, output, step_seconds);
    }
  }

  /// Faithful mode: the bytes tile `tile` of IPU `ipu` held, by category, while step `step`
  /// ran there (measured from the allocations of the last run). Zero for other modes and for
  /// steps of other IPUs. Throws `std::out_of_range` for an IPU, tile or step the program
  /// does not have.
  memory_bytes measured_usage(int ipu, int tile, int step) const {
    check_index("IPU", ipu, prog_->ipus);
    check_index("tile", tile, prog_->chip.tiles);
    check_index("step", step, prog_->size());
    return faithful_ ? faithful_->measured_usage(ipu, tile, step) : memory_bytes{};
  }
  /// Faithful mode: one past the highest byte any allocation of `tile` on `ipu` has reached
  /// since construction (each batch allocates the same way). Zero for other modes. Throws
  /// `std::out_of_range` for an IPU or tile the program does not have.
  std::int64_t measured_extent(int ipu, int tile) const {
    check_index("IPU", ipu, prog_->ipus);
    check_index("tile", tile, prog_->chip.tiles);
    return faithful_ ? faithful_->measured_extent(ipu, tile) : 0;
  }

 private:
  /// Whether the IPU steps of `p` are on more than one IPU: stages to pipeline.
  static bool on_several_ipus(const program& p) noexcept {
    int first = -1;
    for (const node& n : p.nodes) {
      if (n.on_host()) continue;
      if (first < 0) first = n.ipu;
      else if (n.ipu != first) return true;
    }
    return false;
  }

  static void check_index(const char* what, int index, int count) {
    if (index < 0 || index >= count)
      throw std::out_of_range("ipu::engine: " + std::string(what) + " " + std::to_string(index) + " is out of range; the program has " +
                              std::to_string(count) + " (0 to " + std::to_string(count - 1) + ")");
  }

  template <class Mode>
  void run_steps(Mode& m, const void* input, T* output, std::vector<double>& step_seconds) {
    m.begin(input);
    for (const plan_step& s : prog_->steps) {
      const auto start = std::chrono::steady_clock::now();
      m.step(s.node);
      step_seconds[static_cast<std::size_t>(s.node)] += seconds_since(start);
      if (check_finite_) check_output(m, s.node);
    }
    m.end(output);
  }

  /// Throws `non_finite_error` if node `j`'s output, just computed, holds a NaN or an infinity.
  template <class Mode>
  void check_output(Mode& m, int j) {
    m.output_of(j, checked_);
    check_finite_output(prog_->at(j), j, std::span<const T>(checked_));
  }

  // Held by pointer: the modes refer to the program and the team, and an executor (and an
  // engine) can move.
  std::unique_ptr<program> prog_;
  execution_mode mode_;
  std::unique_ptr<team> team_;
  std::unique_ptr<fast_executor<T, Acc>> fast_;
  std::unique_ptr<faithful_executor<T, Acc>> faithful_;
  std::unique_ptr<inference_pipeline<T, Acc>> pipeline_;
  bool check_finite_ = false;
  std::vector<T> checked_;  // the output being checked, in logical order
};

}  // namespace ipu::runtime
