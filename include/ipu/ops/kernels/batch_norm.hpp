#pragma once
/// \file
/// The kernel of `ops::batch_norm`: `kernels::affine` with the folded scale and shift, over
/// each position's channels (fast mode), or over a tile's storage runs with the scale and shift
/// of the channels it holds gathered into its exchange buffer (faithful mode). In a fused
/// convolution's epilogue it sets the epilogue's scale and shift.

#include <ipu/ops/batch_norm.hpp>
#include <ipu/ops/kernels/kernel.hpp>

#include <algorithm>
#include <any>
#include <cstdint>
#include <utility>
#include <vector>

namespace ipu::ops {

/// The kernel of `batch_norm` (see the file comment).
struct batch_norm::kernel : kernel_base {
  /// The device tensors by name.
  static constexpr std::size_t scale_tensor = device_index<batch_norm>("scale");
  /// \copydoc scale_tensor
  static constexpr std::size_t shift_tensor = device_index<batch_norm>("shift");

  /// Fast mode: the folded scale and shift, rounded to the element type.
  struct affine {
    std::vector<float> scale;  ///< per channel
    std::vector<float> shift;  ///< per channel
  };

  /// `affine`.
  template <ElementType T, class Acc>
  static std::any prepare(const node&, const node_plan&, device_values tensors) {
    return affine{rounded<T>(tensors[scale_tensor]), rounded<T>(tensors[shift_tensor])};
  }

  /// Each position's channels, in parts over the threads.
  template <class Ctx>
  static void fast(const Ctx& c) {
    const auto& q = c.template params<affine>();
    const std::int64_t channels = c.n.out.channels();
    const auto* x = c.input();
    auto* y = c.output();
    c.parallel_ranges(c.n.out.elements() / channels, [&](std::int64_t p0, std::int64_t p1) {
      for (std::int64_t pos = p0; pos < p1; ++pos)
        kernels::affine(x + pos * channels, y + pos * channels, channels, q.scale.data(), q.shift.data());
    });
  }

  /// Node `k`, fused after node `previous`: the epilogue's scale and shift.
  template <class T, class Ctx>
  static void fuse(kernels::epilogue<T>& e, const Ctx& c, int k, int) {
    const auto& q = c.template params<affine>(k);
    e.scale = q.scale.data();
    e.shift = q.shift.data();
  }

  /// The scales, then the shifts, of the channels the tile holds (`channels_on`).
  template <class Ctx>
  static void exchange(const Ctx& c) {
    const storage_order o = storage_order::of(c.p.output, c.n.out);
    const auto [first, count] = channels_on(o, c.first, c.last);
    auto* dst = c.exchange_buffer(0, 2 * count);
    for (const std::size_t t : {scale_tensor, shift_tensor}) {
      auto* to = dst + (t == scale_tensor ? 0 : count);
      const std::int64_t head = std::min(count, o.channels - first);
      c.read_storage(c.weights(t), first, head, to);
      if (head < count) c.read_storage(c.weights(t), 0, count - head, to + head);
    }
  }

  /// `kernels::affine` over each run of one position's channels in storage.
  template <class Ctx>
  static void compute(const Ctx& c) {
    const storage_order o = storage_order::of(c.p.output, c.n.out);
    const auto [first, count] = channels_on(o, c.first, c.last);
    const auto* params = c.exchange_buffer(0, 2 * count);
    const auto* x = c.operand(c.n.input());
    auto* y = c.output();
    for (std::int64_t q = c.first; q < c.last;) {
      const auto [pos, ch] = o.locate(q);
      const std::int64_t len = std::min(c.last - q, o.run(ch, o.channels - ch));
      const std::int64_t at = (ch - first + o.channels) % o.channels;
      kernels::affine(x + (q - c.first), y + (q - c.first), len, params + at, params + count + at);
      q += len;
    }
  }

 private:
  /// The channels whose parameters a tile holding storage `[s0, s1)` receives:
  /// `(first channel, count)`; index `k` of the buffer holds channel `(first + k) % channels`.
  static std::pair<std::int64_t, std::int64_t> channels_on(const storage_order& o, std::int64_t s0, std::int64_t s1) noexcept {
    if (o.blocks > 1) {
      const std::int64_t per_block = o.positions * o.block_channels;
      return {s0 / per_block * o.block_channels, ((s1 - 1) / per_block - s0 / per_block + 1) * o.block_channels};
    }
    const std::int64_t n = std::min(o.channels, s1 - s0);
    return {n == o.channels ? 0 : s0 % o.channels, n};
  }
};

}  // namespace ipu::ops
