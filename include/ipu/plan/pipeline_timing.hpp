#pragma once
/// \file
/// `ipu::pipeline_timing`: the cycle model of a training window, the `gradient_accumulation`
/// micro-batches of one update, over the stages of a pipeline (one per IPU; a graph on one IPU
/// is a pipeline of one stage).
///
/// The stages run their passes in the schedule's time slots (`ipu/train/pipeline.hpp`): in
/// slot `t` stage `s` runs the forward pass of a micro-batch, its backward pass, both (the
/// grouped schedule) or nothing. The IPUs run a slot at once and exchange what crosses between
/// them at its end, so a slot lasts as long as its busiest stage: the cycles of the passes it
/// runs there. The window ends with every stage's update, at once, as long as the longest.
/// Each pass lasts as long as the training plan's steps of it on the stage's IPU
/// (`training_plan::cycles`: a forward pass its forward steps, a backward pass its recompute and
/// backward steps), the IPU-Link transfers of the outputs it sends included.
///
/// The window's slots fall in three parts: the **ramp-up**, before every stage is busy in a
/// slot; the **steady state**, from the first slot in which every stage is busy to the last;
/// the **ramp-down**, after it. With one stage every slot is steady; with the sequential
/// schedule over several, no slot is, and the window is all ramp-up.
///
/// Not modelled: the host's exchanges with the infeed and outfeed, and the reduction of
/// gradients over replicas.

#include <ipu/train/pipeline.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

namespace ipu {

/// The cycle model of a training window over at most `Ipus` stages (see the file comment).
template <int Ipus>
struct pipeline_timing {
  pipeline_schedule schedule = pipeline_schedule::sequential;  ///< how the stages overlap
  int stages = 1;                  ///< the IPUs holding layers, one stage each
  std::int64_t micro_batches = 1;  ///< of a window: the gradient accumulation count
  std::int64_t samples = 0;        ///< of a window: the micro-batch times `micro_batches`
  std::int64_t clock_hz = 0;       ///< the IPUs' clock
  std::array<std::int64_t, static_cast<std::size_t>(Ipus)> forward{};   ///< by stage: a micro-batch's forward pass
  std::array<std::int64_t, static_cast<std::size_t>(Ipus)> backward{};  ///< by stage: its backward pass, recomputation included
  std::array<std::int64_t, static_cast<std::size_t>(Ipus)> update{};    ///< by stage: the update
  std::int64_t slots = 0;            ///< time slots of the window (`pipeline_slots`)
  std::int64_t ramp_up_slots = 0;    ///< before every stage is busy in a slot
  std::int64_t steady_slots = 0;     ///< from the first slot with every stage busy to the last
  std::int64_t ramp_down_slots = 0;  ///< after it
  std::int64_t ramp_up = 0;          ///< cycles of the ramp-up's slots
  std::int64_t steady = 0;           ///< cycles of the steady state's slots
  std::int64_t ramp_down = 0;        ///< cycles of the ramp-down's slots
  std::int64_t update_cycles = 0;    ///< the update, every stage's at once: the longest

  /// Whether stage `stage` runs the forward pass (`backward` false) or the backward pass of a
  /// micro-batch in slot `slot`.
  constexpr bool runs(int stage, std::int64_t slot, bool backward) const noexcept {
    return pipeline_micro_at(schedule, stages, stage, micro_batches, slot, backward) >= 0;
  }
  /// Cycles stage `stage` computes in slot `slot`.
  constexpr std::int64_t stage_cycles(int stage, std::int64_t slot) const noexcept {
    const std::size_t s = static_cast<std::size_t>(stage);
    return (runs(stage, slot, false) ? forward[s] : 0) + (runs(stage, slot, true) ? backward[s] : 0);
  }
  /// Cycles of slot `slot`: its busiest stage's.
  constexpr std::int64_t slot_cycles(std::int64_t slot) const noexcept {
    std::int64_t most = 0;
    for (int s = 0; s < stages; ++s) most = std::max(most, stage_cycles(s, slot));
    return most;
  }
  /// What stage `stage` does in slot `slot`: `'F'` a forward pass, `'B'` a backward pass, `'X'`
  /// both, `'.'` nothing.
  constexpr char activity(int stage, std::int64_t slot) const noexcept {
    const bool f = runs(stage, slot, false), b = runs(stage, slot, true);
    return f && b ? 'X' : f ? 'F' : b ? 'B' : '.';
  }
  /// Cycles of the window: its slots and the update.
  constexpr std::int64_t total() const noexcept { return ramp_up + steady + ramp_down + update_cycles; }
  /// Cycles stage `stage` computes in a window.
  constexpr std::int64_t busy(int stage) const noexcept {
    const std::size_t s = static_cast<std::size_t>(stage);
    return micro_batches * (forward[s] + backward[s]) + update[s];
  }
  /// The fraction of the window stage `stage` computes.
  constexpr double utilisation(int stage) const noexcept {
    return total() > 0 ? static_cast<double>(busy(stage)) / static_cast<double>(total()) : 0;
  }
  /// Samples per second on the target: `samples` per window.
  constexpr double samples_per_second() const noexcept {
    return total() > 0 ? static_cast<double>(samples) * static_cast<double>(clock_hz) / static_cast<double>(total()) : 0;
  }

  /// Fills the slots' fields from the schedule, the stages and the passes' cycles.
  constexpr void time_slots() noexcept {
    slots = pipeline_slots(schedule, stages, micro_batches);
    std::int64_t first_full = -1, last_full = -1;
    for (std::int64_t t = 0; t < slots; ++t) {
      bool full = true;
      for (int s = 0; s < stages; ++s) full = full && (runs(s, t, false) || runs(s, t, true));
      if (full && first_full < 0) first_full = t;
      if (full) last_full = t;
    }
    if (first_full < 0) first_full = last_full = slots;  // never full: all ramp-up
    ramp_up_slots = first_full;
    steady_slots = last_full < slots ? last_full - first_full + 1 : 0;
    ramp_down_slots = slots - ramp_up_slots - steady_slots;
    ramp_up = steady = ramp_down = 0;
    for (std::int64_t t = 0; t < slots; ++t)
      (t < first_full ? ramp_up : t <= last_full ? steady : ramp_down) += slot_cycles(t);
    update_cycles = 0;
    for (int s = 0; s < stages; ++s) update_cycles = std::max(update_cycles, update[static_cast<std::size_t>(s)]);
  }
};

}  // namespace ipu
