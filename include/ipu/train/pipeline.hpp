#pragma once
/// \file
/// Pipelined training: the schedules of Graphcore's TensorFlow (`PipelineSchedule`), the order
/// in which each stage runs its passes, the micro-batches a stage holds at once, and the
/// rule that ties the gradient accumulation count to the schedule.
///
/// A graph placed on `N` IPUs (`ipu::on<k>`) trains as a pipeline of `N` stages, one per IPU.
/// TensorFlow's backend lists them as `2N` stages, the forward stages then the backward
/// stages in reverse, `[0, 1, ..., N-1, N-1, ..., 1, 0]` (graphcore/tensorflow,
/// tensorflow/compiler/plugin/poplar/driver/visitors/pipeline_visitor.cc), and runs them in
/// time slots. A schedule is a set of offsets of that list (pipeline_visitor_utils.h,
/// `ScheduleOffsets`): **grouped** takes all `2N` rotations, so that in every slot every IPU
/// runs a forward pass, then a backward pass, of different micro-batches; **interleaved** takes
/// the `N` rotations that never put two passes on one IPU in a slot, so each IPU alternates
/// between a forward and a backward pass; **sequential** takes one, no overlap, "as if it were a
/// sharded model". The number of offsets is the schedule's *overlap*: `2N`, `N` or `1`.
///
/// Here, with period `p = 2N / overlap` (1, 2 or `2N`), stage `s` runs the forward pass of
/// micro-batch `m` in slot `p m + s` and its backward pass in slot `p m + 2N - 1 - s`, the
/// forward before the backward within a slot. "The number of iterations of the pipeline must be
/// a multiple of `overlap_length`" and "at least" it (pipeline_visitor.cc): the gradient
/// accumulation count of grouped training is a positive multiple of `2N`, of interleaved
/// training a positive multiple of `N`, and any count for the sequential schedule.

#include <cstdint>
#include <string_view>

namespace ipu {

/// The most stages a pipeline has: the host executor's links between stages hold `2 x 16`
/// micro-batches, the most the grouped schedule keeps in flight on a stage.
inline constexpr int max_pipeline_stages = 16;

/// How the stages of a pipeline overlap their passes (see the file comment).
enum class pipeline_schedule : std::uint8_t {
  sequential,  ///< one micro-batch at a time through all stages: a sharded model (TensorFlow's debug schedule)
  grouped,     ///< every slot: each stage's forward pass, then each stage's backward pass (TensorFlow's default)
  interleaved, ///< each stage alternates one forward and one backward pass (less memory, slower)
};

/// `"sequential"`, `"grouped"` or `"interleaved"`.
constexpr std::string_view name_of(pipeline_schedule s) noexcept {
  return s == pipeline_schedule::grouped ? "grouped" : s == pipeline_schedule::interleaved ? "interleaved" : "sequential";
}

/// How the gradients of the micro-batches of an accumulation window are combined before the
/// update.
enum class gradient_reduction : std::uint8_t {
  /// Their mean: the gradient of the mean loss over the window's samples, as one batch of
  /// `micro-batch x accumulation` samples gives it (PopTorch's default).
  mean,
  /// Their sum (TensorFlow's `GradientAccumulationReductionMethod.SUM`, its default): scale the
  /// learning rate down by the accumulation count for the same step.
  sum,
};

/// The overlap of `schedule` over `stages` stages: the micro-batches of its repeating block,
/// of which the gradient accumulation count must be a positive multiple.
constexpr std::int64_t pipeline_overlap(pipeline_schedule schedule, int stages) noexcept {
  return schedule == pipeline_schedule::grouped ? 2 * stages : schedule == pipeline_schedule::interleaved ? stages : 1;
}

/// Whether `schedule` over `stages` stages can run `accumulation` micro-batches per update:
/// a positive multiple of the overlap.
constexpr bool pipeline_accepts(pipeline_schedule schedule, int stages, std::int64_t accumulation) noexcept {
  const std::int64_t overlap = pipeline_overlap(schedule, stages);
  return accumulation >= overlap && accumulation % overlap == 0;
}

/// One pass of a pipeline stage: the forward or the backward pass of micro-batch `micro`, in
/// time slot `slot`.
struct stage_pass {
  bool backward = false;     ///< the backward pass (else the forward)
  std::int64_t micro = 0;    ///< the micro-batch, from 0
  std::int64_t slot = 0;     ///< the time slot, from 0
  /// Equal when every field is.
  constexpr bool operator==(const stage_pass&) const = default;
};

/// Time slots of a window of `accumulation` micro-batches: `p (accumulation - 1) + 2 stages`,
/// with `p = 2 stages / overlap`. The first `2 stages - 1` fill the pipeline, the last as many
/// drain it.
constexpr std::int64_t pipeline_slots(pipeline_schedule schedule, int stages, std::int64_t accumulation) noexcept {
  const std::int64_t period = 2 * stages / pipeline_overlap(schedule, stages);
  return period * (accumulation - 1) + 2 * stages;
}

/// The micro-batch whose forward pass (or backward pass, with `backward`) stage `stage` of
/// `stages` runs in slot `slot` of a window of `accumulation`; -1 for none.
constexpr std::int64_t pipeline_micro_at(pipeline_schedule schedule, int stages, int stage, std::int64_t accumulation,
                                         std::int64_t slot, bool backward) noexcept {
  const std::int64_t period = 2 * stages / pipeline_overlap(schedule, stages);
  const std::int64_t d = slot - (backward ? 2 * stages - 1 - stage : stage);
  return d >= 0 && d % period == 0 && d / period < accumulation ? d / period : -1;
}

/// Calls `f(stage_pass)` for each pass stage `stage` of `stages` runs in a window of
/// `accumulation` micro-batches, in the order it runs them (see the file comment).
template <class F>
constexpr void for_each_stage_pass(pipeline_schedule schedule, int stages, int stage, std::int64_t accumulation, F&& f) {
  const std::int64_t slots = pipeline_slots(schedule, stages, accumulation);
  for (std::int64_t t = 0; t < slots; ++t)
    for (const bool backward : {false, true})
      if (const std::int64_t m = pipeline_micro_at(schedule, stages, stage, accumulation, t, backward); m >= 0)
        f(stage_pass{backward, m, t});
}

/// The micro-batches stage `stage` of `stages` holds at once in a window of `accumulation`:
/// the most whose forward pass it has run and whose backward pass it has not. Grouped:
/// `2 (stages - stage)`; interleaved: `stages - stage`; sequential: 1 (for windows of at least
/// that many micro-batches). TensorFlow's first-in first-out stash between a forward stage and
/// its backward stage holds `2 (N - 1 - s)` (grouped) or `N - 1 - s` (interleaved) of them
/// (driver/passes/pipeline_fifo_inserter.cc, `GetFifoDepthMultiplier`); the others are the
/// micro-batches the stage is computing and the one it has just sent on.
constexpr int pipeline_stash_depth(pipeline_schedule schedule, int stages, int stage, std::int64_t accumulation) {
  int held = 0, most = 0;
  for_each_stage_pass(schedule, stages, stage, accumulation, [&](const stage_pass& p) {
    held += p.backward ? -1 : 1;
    most = held > most ? held : most;
  });
  return most;
}

}  // namespace ipu
