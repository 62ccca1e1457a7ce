#pragma once
/// \file
/// The cycle model: the estimated cycles of each step, split into compute, exchange, sync,
/// IPU-Link and host link, in one place. The plan computes them once (`node_plan::cycles`); the profile, the
/// memory report and `auto_shard` read those numbers.

#include <ipu/core/arith.hpp>
#include <ipu/core/dtype.hpp>
#include <ipu/graph/node.hpp>
#include <ipu/plan/model.hpp>
#include <ipu/plan/node_plan.hpp>
#include <ipu/target/chip.hpp>
#include <ipu/target/options.hpp>

#include <algorithm>
#include <cstdint>

namespace ipu::detail {

/// Whole multiply-accumulates a tile retires per cycle in element type `t`.
constexpr std::int64_t macs_per_cycle(const chip_spec& chip, dtype t) noexcept {
  return t == dtype::f16 ? chip.f16_macs_per_cycle : chip.f32_macs_per_cycle;
}

/// Estimated cycles of the fullest tile's arithmetic in a step: conv and dense at the chip's
/// MACs per cycle per tile; other ops one vector per cycle per input value they read (the six
/// workers share the tile's issue slots round-robin, so a tile retires one worker instruction
/// per cycle).
constexpr std::int64_t compute_cycles(const node& n, const node_plan& p, const chip_spec& chip) noexcept {
  const std::int64_t units = p.work.units.max_elements_per_tile();
  const std::int64_t vector = chip.grain(size_of(n.type));
  switch (p.step.kind) {
    case step_kind::conv:
      return div_up(units * p.step.block_channels * p.step.kernel_taps * p.step.in_channels,
                    std::max<std::int64_t>(1, macs_per_cycle(chip, n.type)));
    case step_kind::window: return div_up(units * p.step.kernel_taps, vector);
    case step_kind::reduce:  // stage 1 reads its chunks' pixels, stage 2 its outputs' partials
      return div_up(units * p.step.reduce * p.step.block_channels, vector) + div_up(p.step.outputs * p.step.chunks, vector);
    case step_kind::gather: return div_up(units * p.step.reduce, vector);
    case step_kind::rows: return div_up(3 * units, vector);
    case step_kind::stream: return div_up(units, vector);  // the input's conversion from bytes
    default: return n.input_count == 0 ? 0 : div_up(p.output.max_elements_per_tile(), vector);
  }
}

/// Estimated cycles of the fullest tile's exchange in a step: the bytes it receives at its
/// share of the chip's exchange bandwidth.
constexpr std::int64_t exchange_cycles(std::int64_t bytes, const chip_spec& chip) noexcept {
  return chip.exchange_bytes_per_s > 0 ? mul_div_up(bytes, chip.clock_hz * chip.tiles, chip.exchange_bytes_per_s) : 0;
}

/// The cycles of node `n`'s step as planned in `p` (its mappings, step model and whether it
/// sends), on `chip` with `opts`: the one cycle model of the library. The plan stores it in
/// `node_plan::cycles`, and the profile reports those figures.
constexpr step_cycles cycles_of(const node& n, const node_plan& p, const chip_spec& chip, const options& opts) noexcept {
  step_cycles c;
  c.compute = compute_cycles(n, p, chip);
  // A step in phases over kernel taps or input channels receives a phase's buffers in each; a
  // reduction receives in each of its stages.
  if (p.step.kind == step_kind::reduce) {
    const reduce_exchange x = reduce_stages(p.step, p.work.units.max_elements_per_tile());
    c.exchange = exchange_cycles(x.stage1 + x.stage2, chip);
  } else if (p.step.kind != step_kind::stream) {  // a stream comes from the host, whose transfers of the input are not timed
    c.exchange = exchange_cycles(p.transient_max.exchange * (p.step.kind == step_kind::conv ? p.step.phases_per_slice() : 1), chip);
  }
  // A compute and an exchange phase per serial slice and phase, each ended by an IPU-wide sync.
  const std::int64_t phases = n.input_count == 0 && p.step.kind == step_kind::none ? 0 : p.step.phases();
  c.sync = 2 * phases * opts.cycles.sync_cycles;
  if (p.sends && chip.link_bytes_per_s > 0)
    c.link = mul_div_up(n.out.elements() * size_of(n.type), chip.clock_hz, chip.link_bytes_per_s);
  return c;
}

/// The cycles of a host step (`ipu::on_host`) that moves `bytes` over the host link: its
/// inputs held on IPUs to the host, then its output to each IPU that reads it, at
/// `chip_spec::host_bytes_per_s`; the IPUs wait, with a sync before and after. The host's own
/// arithmetic is not IPU time: the profile measures it.
constexpr step_cycles host_step_cycles(std::int64_t bytes, const chip_spec& chip, const options& opts) noexcept {
  step_cycles c;
  c.sync = 2 * opts.cycles.sync_cycles;
  if (chip.host_bytes_per_s > 0) c.host = mul_div_up(bytes, chip.clock_hz, chip.host_bytes_per_s);
  return c;
}

}  // namespace ipu::detail
