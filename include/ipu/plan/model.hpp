#pragma once
/// \file
/// The memory model of one step: where a node's output lives, how its work is split over the
/// tiles, and what transient memory (temporaries and exchange buffers) a tile needs while the
/// step runs. Everything here is a pure function of one node and the chip; `plan.hpp` puts
/// the steps together.
///
/// **Work units.** A conv or dense layer splits its output into units of one output position
/// (`n, h, w`) times one block of output channels: one group's channels for a grouped conv
/// (groups are split across tiles, as PopLibs' `convGroupSplit` does), otherwise the number of
/// equal channel blocks (a divisor of the filters) that minimises the fullest tile's transients
/// (`split_channels`). Units are ordered block-major (all positions of block 0, then block 1,
/// ...) and mapped to tiles with PopLibs' linear rule, so a tile computes a contiguous run of
/// units and needs the weights of only the blocks its run touches. The output lives where it is
/// computed. Pooling and softmax map their output linearly element by element; batch norm,
/// relu and add keep the mapping of their input, as Poplar's element-wise ops clone theirs.
///
/// **Reductions in stages.** Global pooling reduces each image's `H x W` pixels per channel in
/// two stages, as PopLibs reduces over tiles (lib/popops/reduction/ReductionStages.hpp: input
/// to intermediate, intermediate to output): its units are `chunks` contiguous chunks of
/// `reduce` pixels of each image (all channels), mapped linearly; stage 1 receives a unit's
/// pixels and leaves its partials (f32) in the tile's temporaries; stage 2 maps the output
/// element by element over the tiles that worked in stage 1, and each output receives its
/// `chunks` partials. No tile ever holds a whole image, so the step's memory shrinks with the
/// batch and spreads over the tiles like any other.
///
/// **Transients.** While a step runs, a working tile holds (a) exchange buffers: the input
/// window its outputs read (whole rows, halos included, gathered into one contiguous buffer the
/// way the vertices read it); for conv and dense, the weights (and a dense layer's bias) of the
/// channel blocks it computes; for batch norm, the scale and shift of the channels it holds;
/// for an add whose operands are stored differently, its share of the shortcut; for the input
/// from an 8-bit stream, the streamed bytes of the elements it holds; (b)
/// temporaries: the partial sums of the outputs it is computing, in the partials type. Both
/// are upper bounds written as functions of the number of units the tile holds, so the fullest
/// tile is the one with the most units.
///
/// **Serial splits.** A conv may run its units in `serial` slices, dividing the window and the
/// partials (not the weights) by up to `serial`; and each slice in `taps x in_parts` phases,
/// as PopLibs' serial splits of the kernel and the input channels: phase `(tap, part)` receives
/// the weights of one kernel tap (of all taps when `taps` is 1) and one part of the input
/// channels, and the input those read, and adds their products to the partials, which stay on
/// the tile from the first phase to the last. One tap's input is one pixel per output position,
/// so the window of a phase of one tap (and of any 1x1 conv or dense layer) is `positions x
/// channels`, with no halo and no rows skipped by a stride.
/// The phases run in the order each output's sum is defined in (kernel row, kernel column,
/// input channel, `kernels/conv.hpp`), so a split changes memory and time but not one bit of
/// the result: channel parts need one tap per phase unless the kernel is 1x1.

#include <ipu/core/dtype.hpp>
#include <ipu/graph/node.hpp>
#include <ipu/plan/memory.hpp>
#include <ipu/target/chip.hpp>
#include <ipu/target/layout.hpp>
#include <ipu/target/mapping.hpp>

#include <algorithm>
#include <cstdint>
#include <string_view>

namespace ipu {

/// What a step needs besides the tensors it reads and writes.
enum class step_kind : std::uint8_t {
  none,     ///< no transients (input, relu, add on matching mappings)
  conv,     ///< conv or dense: window + weight blocks (and bias) in exchange, partials in temporaries
  channels, ///< batch norm: the scale and shift of the channels the tile holds, in exchange
  window,   ///< max or average pooling: input window in exchange
  reduce,   ///< global pooling in two stages: partials of chunks of pixels, then their reduction
  gather,   ///< adaptive pooling: each output element receives `reduce` inputs
  rows,     ///< softmax: each output reads its whole row
  remap,    ///< a join whose inputs live elsewhere: the tile receives its share of `remapped` of them
  stream,   ///< the input from an 8-bit stream: the tile receives its values, `element_bytes` each, before converting them
};

/// The shape of a step's work, enough to bound its transients on a tile from the number of
/// units the tile computes.
struct step_model {
  step_kind kind = step_kind::none;  ///< what the step needs, and so which fields below apply
  std::int64_t positions = 1;       ///< output positions (N * Ho * Wo), or rows for softmax
  std::int64_t blocks = 1;          ///< output channel blocks (conv, dense)
  /// Each block mapped over its own tiles (`linear_mapping::segments`), so that no tile
  /// computes, or holds, outputs of two blocks (conv, dense, and batch norm on their output).
  bool blocks_apart = false;
  /// Output channels per block (conv, dense); channels per position (pooling) or per row
  /// (softmax); elements per unit of the input's mapping (batch norm, remap).
  std::int64_t block_channels = 1;
  std::int64_t in_channels = 1;     ///< input channels one block reads; all channels for pooling and batch norm
  /// Output rows of one image (1 for a rank-2 output).
  std::int64_t out_height = 1, out_width = 1;  ///< output columns of one image (1 for a rank-2 output)
  /// Input rows of one image (1 for a rank-2 input).
  std::int64_t in_height = 1, in_width = 1;    ///< input columns of one image (1 for a rank-2 input)
  std::int64_t images = 1;          ///< images in the batch (N)
  std::int64_t kernel_taps = 1;     ///< taps of the kernel or pooling window, rows x columns (1 for dense)
  /// Input rows one output row's window spans: the kernel's rows, dilated (1 for dense).
  std::int64_t window_rows = 1;
  std::int64_t row_stride = 1;      ///< input rows from one output row's window to the next (1 for dense)
  /// Pixels of one chunk (reduce): the inputs one partial of stage 1 reads; inputs of one
  /// output element (gather).
  std::int64_t reduce = 1;
  std::int64_t chunks = 1;          ///< chunks of each image, the partials of one output (reduce)
  std::int64_t outputs = 1;         ///< most output elements on a tile that works in the step (reduce)
  std::int64_t remapped = 1;        ///< inputs a join receives through the exchange (remap)
  std::int64_t element_bytes = 2;   ///< bytes of one element of the step's element type
  std::int64_t partial_bytes = 4;   ///< bytes of one partial sum, in `options::partials`
  std::int64_t serial = 1;          ///< serial slices a tile's units run in (conv, dense)
  /// Kernel taps split into phases (conv): 1 (all taps in each phase) or `kernel_taps` (one
  /// tap per phase).
  std::int64_t taps = 1;
  std::int64_t in_parts = 1;        ///< equal parts of `in_channels`, one per phase (conv, dense)
  bool bias = false;                ///< dense: each block also receives its bias

  /// Phases of each serial slice: `taps * in_parts`.
  constexpr std::int64_t phases_per_slice() const noexcept { return taps * in_parts; }
  /// Exchange and compute phases of the step: `serial * taps * in_parts` for a conv, the two
  /// stages of a reduction, else 1.
  constexpr std::int64_t phases() const noexcept {
    return kind == step_kind::conv ? serial * phases_per_slice() : kind == step_kind::reduce ? 2 : 1;
  }
  /// Compute sets a working tile runs: the two stages of a reduction, else one (a conv's
  /// serial phases repeat one compute set).
  constexpr std::int64_t compute_sets() const noexcept { return kind == step_kind::reduce ? 2 : 1; }
  /// Input channels one phase reads: `in_channels / in_parts`.
  constexpr std::int64_t phase_channels() const noexcept { return in_channels / in_parts; }
  /// Kernel taps one phase applies: `kernel_taps / taps`.
  constexpr std::int64_t phase_taps() const noexcept { return kernel_taps / taps; }
  /// True when a phase applies one tap (a 1x1 kernel, or one tap per phase): its window is
  /// then one pixel per output position, the pixel the tap reads; otherwise whole input rows.
  constexpr bool pixel_window() const noexcept { return phase_taps() == 1; }

  /// Equal when every field is equal, so the two steps need the same transients.
  constexpr bool operator==(const step_model&) const = default;
};

/// Transient bytes of one tile during a step.
struct transient_bytes {
  std::int64_t temporaries = 0;  ///< partial sums, in the partials type
  std::int64_t exchange = 0;     ///< buffers receiving the input window, weights, scale and shift or shortcut
  /// `temporaries + exchange`: all the tile's transients during the step.
  constexpr std::int64_t total() const noexcept { return temporaries + exchange; }
};

namespace detail {
/// Most runs of `period` a contiguous range of `count` items can touch (`count >= 1`).
constexpr std::int64_t runs_touched(std::int64_t count, std::int64_t period) noexcept {
  return (count + period - 2) / period + 1;
}

/// Input rows (of all images together) that `rows` consecutive output rows read, counted as
/// the contiguous range from the first row read to the last, as a vertex's window holds them
/// (with a stride larger than the kernel, the rows skipped between outputs are inside it).
/// Within one image the range is `(rows - 1) * row_stride + window_rows` rows; crossing into
/// the next image moves `out_height * row_stride` output-row strides on but only `in_height`
/// input rows, and SAME padding has `out_height * row_stride >= in_height`, so the bound holds
/// across images too.
constexpr std::int64_t input_rows(const step_model& s, std::int64_t rows) noexcept {
  const std::int64_t images = std::min(s.images, runs_touched(rows, s.out_height));
  return std::min((rows - 1) * s.row_stride + s.window_rows, images * s.in_height);
}

/// Input elements of the window read by `positions` consecutive output positions of one block.
constexpr std::int64_t window_elements(const step_model& s, std::int64_t positions) noexcept {
  const std::int64_t rows = std::min(s.images * s.out_height, runs_touched(positions, s.out_width));
  return input_rows(s, rows) * s.in_width * s.in_channels;
}
}  // namespace detail

/// Bytes of one partial of a reduction carried from stage 1 to stage 2: f32, whatever the
/// element type, as PopLibs' reductions carry float partials between stages for half data
/// (`popops::ContinuousReduce<ReduceAdd, float, half>`, lib/popops/codelets/ContinuousReduce.cpp).
inline constexpr std::int64_t reduction_partial_bytes = 4;

/// Bytes a tile working in reduction `s` with `units` chunks receives in each stage: stage 1
/// the chunks' pixels (every channel), stage 2 the partials of the (at most `s.outputs`)
/// output elements it holds, one per chunk.
struct reduce_exchange {
  std::int64_t stage1 = 0;  ///< bytes received in stage 1: the chunks' pixels
  std::int64_t stage2 = 0;  ///< bytes received in stage 2: the partials of the tile's outputs
};
/// See `reduce_exchange`; zero for a tile without work.
constexpr reduce_exchange reduce_stages(const step_model& s, std::int64_t units) noexcept {
  if (units <= 0) return {};
  return {units * s.reduce * s.block_channels * s.element_bytes, s.outputs * s.chunks * reduction_partial_bytes};
}

/// Transients of a tile computing `units` units of step `s` (elements for element-wise
/// mappings). Non-decreasing in `units`; zero for a tile without work.
constexpr transient_bytes transient_on(const step_model& s, std::int64_t units) noexcept {
  using detail::runs_touched;
  if (units <= 0) return {};
  switch (s.kind) {
    case step_kind::conv: {
      // div_up, std::min and the step's accessors written out: the plan's search evaluates
      // this for every candidate, and the constant evaluator pays per call.
      const std::int64_t slice = (units + s.serial - 1) / s.serial;
      const std::int64_t units_blocks = runs_touched(units, s.positions);
      const std::int64_t blocks = s.blocks_apart ? 1 : s.blocks < units_blocks ? s.blocks : units_blocks;
      const std::int64_t slice_runs = runs_touched(slice, s.positions);
      const std::int64_t slice_blocks = blocks < slice_runs ? blocks : slice_runs;
      const std::int64_t slice_positions = slice < s.positions ? slice : s.positions;
      const std::int64_t channels = s.in_channels / s.in_parts, phase_taps = s.kernel_taps / s.taps;
      const std::int64_t weights = blocks * (phase_taps * channels + (s.bias ? 1 : 0)) * s.block_channels;
      const std::int64_t window =
          slice_blocks * (phase_taps == 1 ? slice_positions * channels
                                          : detail::window_elements(s, slice_positions) / s.in_channels * channels);
      return {slice * s.block_channels * s.partial_bytes, (weights + window) * s.element_bytes};
    }
    case step_kind::window: {
      const std::int64_t positions = std::min(s.positions, runs_touched(units, s.block_channels));
      return {0, detail::window_elements(s, positions) * s.element_bytes};
    }
    case step_kind::reduce: {
      // Stage 1's partials live until stage 2 has read them; one exchange buffer serves both
      // stages, stage 1's pixels being dead once its partials are computed.
      const reduce_exchange x = reduce_stages(s, units);
      return {units * s.block_channels * reduction_partial_bytes, std::max(x.stage1, x.stage2)};
    }
    case step_kind::gather: return {0, units * s.reduce * s.element_bytes};
    case step_kind::rows:
      return {0, std::min(s.positions, runs_touched(units, s.block_channels)) * s.block_channels * s.element_bytes};
    case step_kind::channels: {
      // Block-major storage: a run of units touches a few blocks (one when each block has its
      // own tiles); otherwise a run of `units * block_channels` elements, channels innermost.
      const std::int64_t touched = s.blocks == 1 ? units * s.block_channels
                                   : s.blocks_apart ? s.block_channels
                                                    : runs_touched(units, s.positions) * s.block_channels;
      return {0, 2 * std::min(s.in_channels, touched) * s.element_bytes};
    }
    case step_kind::remap: return {0, s.remapped * units * s.block_channels * s.element_bytes};
    case step_kind::stream: return {0, units * s.element_bytes};
    default: return {};
  }
}

/// How a conv or dense layer splits its output channels: `blocks` blocks of `channels`.
struct channel_blocks {
  std::int64_t blocks = 1;    ///< number of blocks (the groups, for a grouped conv)
  std::int64_t channels = 1;  ///< output channels per block
  bool apart = false;         ///< each block mapped over its own tiles (`step_model::blocks_apart`)
};

/// The units of `s` (with `s.blocks`, `s.block_channels` and `s.blocks_apart` set) mapped
/// over `chip`: linearly over all its tiles, or block by block over equal shares of them.
constexpr tensor_mapping map_units(const step_model& s, const chip_spec& chip) noexcept {
  return {map_linearly(s.blocks * s.positions, s.block_channels * s.element_bytes, chip, 0, 128,
                       s.blocks_apart ? s.blocks : 1),
          s.block_channels, s.blocks};
}

/// One block per group for a grouped conv; otherwise the equal blocks (a divisor of the
/// filters) that minimise the fullest tile's transients: more blocks mean fewer weights per
/// tile but longer input windows. Either way, the blocks mapped together over all the tiles
/// or each over its own share of them (as PopLibs maps each part of a parallel split of the
/// output channels or the groups), whichever leaves the fullest tile fewer transients:
/// together, a tile whose run of units crosses a block receives the weights and windows of
/// both; apart, the tiles that are not a multiple of the blocks stay idle.
constexpr channel_blocks split_channels(step_model s, std::int64_t filters, std::int64_t groups,
                                        const chip_spec& chip) noexcept {
  channel_blocks best{1, filters};
  std::int64_t best_bytes = -1;
  const auto consider = [&](std::int64_t blocks, bool apart) {
    s.blocks = blocks;
    s.block_channels = filters / blocks;
    s.blocks_apart = apart;
    const std::int64_t bytes = transient_on(s, map_units(s, chip).units.max_elements_per_tile()).total();
    if (best_bytes < 0 || bytes < best_bytes) best = {blocks, filters / blocks, apart}, best_bytes = bytes;
  };
  const auto consider_both = [&](std::int64_t blocks) {
    consider(blocks, false);
    if (blocks > 1 && blocks <= chip.tiles) consider(blocks, true);
  };
  if (groups > 1) {
    consider_both(groups);
    return best;
  }
  for (std::int64_t d = 1; d * d <= filters; ++d) {
    if (filters % d != 0) continue;
    consider_both(d);
    if (d * d != filters) consider_both(filters / d);
  }
  return best;
}

}  // namespace ipu
