#pragma once
/// \file
/// The kernel of `ops::batch_norm`: `kernels::affine` with the folded scale and shift, over
/// each position's channels (fast mode), or over a tile's storage runs with the scale and shift
/// of the channels it holds gathered into its exchange buffer (faithful mode). In a fused
/// convolution's epilogue it sets the epilogue's scale and shift.
///
/// Training: the forward pass normalises with the batch's mean and (biased) variance per
/// channel, `y = (x - mean) / sqrt(variance + epsilon) * scale + shift`, and updates the running
/// statistics; the backward pass gives `d shift = sum dy`, `d scale = sum dy * xhat` and
/// `dx = scale / sqrt(variance + epsilon) * (dy - d shift / m - xhat * d scale / m)` over the
/// `m` values of each channel (Ioffe and Szegedy, 2015, section 3). Sums over a channel run in
/// double, in chunks of positions, then the chunks in order.

#include <ipu/ops/batch_norm.hpp>
#include <ipu/ops/kernels/kernel.hpp>

#include <algorithm>
#include <any>
#include <cmath>
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

  /// Training: the batch's statistics per channel, kept for the backward pass.
  struct batch_statistics {
    std::vector<float> mean;     ///< the batch mean
    std::vector<float> inv_std;  ///< `1 / sqrt(variance + epsilon)`, the batch's biased variance
  };

  /// Training: normalises with the batch's statistics, and updates the running ones.
  template <class Ctx>
  static void forward_training(const Ctx& c) {
    using T = typename Ctx::value_type;
    const std::int64_t channels = c.n.out.channels();
    const double m = static_cast<double>(c.n.out.elements() / channels);
    const T* x = c.input();
    std::vector<double> mean = channel_sums(c, [&](std::int64_t e, std::int64_t) { return static_cast<double>(kernels::widen(x[e])); });
    for (double& v : mean) v /= m;
    std::vector<double> variance = channel_sums(c, [&](std::int64_t e, std::int64_t ch) {
      const double d = kernels::widen(x[e]) - mean[static_cast<std::size_t>(ch)];
      return d * d;
    });
    batch_statistics s{std::vector<float>(mean.size()), std::vector<float>(mean.size())};
    const auto running_mean = c.running("mean"), running_variance = c.running("variance");
    for (std::size_t ch = 0; ch < mean.size(); ++ch) {
      variance[ch] /= m;
      s.mean[ch] = static_cast<float>(mean[ch]);
      s.inv_std[ch] = static_cast<float>(1.0 / std::sqrt(variance[ch] + batch_norm_epsilon));
      const double unbiased = m > 1 ? variance[ch] * m / (m - 1) : variance[ch];
      running_mean[ch] = static_cast<float>(batch_norm_momentum * running_mean[ch] + (1 - batch_norm_momentum) * mean[ch]);
      running_variance[ch] =
          static_cast<float>(batch_norm_momentum * running_variance[ch] + (1 - batch_norm_momentum) * unbiased);
    }
    const auto scale = c.weight("scale"), shift = c.weight("shift");
    T* y = c.output();
    parallel_chunks(c, c.n.out.elements(), [&](std::int64_t e0, std::int64_t e1) {
      for (std::int64_t e = e0; e < e1; ++e) {
        const auto ch = static_cast<std::size_t>(e % channels);
        y[e] = static_cast<T>((kernels::widen(x[e]) - s.mean[ch]) * s.inv_std[ch] * scale[ch] + shift[ch]);
      }
    });
    c.saved() = std::move(s);
  }

  /// Training: the gradients of the scale, the shift and the input.
  template <class Ctx>
  static void backward(const Ctx& c) {
    const auto& s = std::any_cast<const batch_statistics&>(c.saved());
    const std::int64_t channels = c.n.out.channels();
    const double m = static_cast<double>(c.n.out.elements() / channels);
    const auto* x = c.input();
    const float* dy = c.grad_output();
    const auto xhat = [&](std::int64_t e, std::int64_t ch) {
      const auto k = static_cast<std::size_t>(ch);
      return (kernels::widen(x[e]) - s.mean[k]) * s.inv_std[k];
    };
    const std::vector<double> d_shift = channel_sums(c, [&](std::int64_t e, std::int64_t) { return static_cast<double>(dy[e]); });
    const std::vector<double> d_scale =
        channel_sums(c, [&](std::int64_t e, std::int64_t ch) { return static_cast<double>(dy[e]) * xhat(e, ch); });
    const auto g_scale = c.weight_grad("scale"), g_shift = c.weight_grad("shift");
    const auto scale = c.weight("scale");
    std::vector<float> gain(d_shift.size()), mean_shift(d_shift.size()), mean_scale(d_shift.size());
    for (std::size_t ch = 0; ch < d_shift.size(); ++ch) {
      g_scale[ch] += static_cast<float>(d_scale[ch]);
      g_shift[ch] += static_cast<float>(d_shift[ch]);
      gain[ch] = scale[ch] * s.inv_std[ch];
      mean_shift[ch] = static_cast<float>(d_shift[ch] / m);
      mean_scale[ch] = static_cast<float>(d_scale[ch] / m);
    }
    float* dx = c.grad_input();
    if (dx == nullptr) return;
    parallel_chunks(c, c.n.out.elements(), [&](std::int64_t e0, std::int64_t e1) {
      for (std::int64_t e = e0; e < e1; ++e) {
        const std::int64_t ch = e % channels;
        const auto k = static_cast<std::size_t>(ch);
        dx[e] += gain[k] * (dy[e] - mean_shift[k] - xhat(e, ch) * mean_scale[k]);
      }
    });
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
  /// Per channel, the sum over the positions of `term(element, channel)`, in double: chunks
  /// of positions in parallel, then the chunks' sums in order.
  template <class Ctx, class F>
  static std::vector<double> channel_sums(const Ctx& c, F&& term) {
    const std::int64_t channels = c.n.out.channels(), positions = c.n.out.elements() / channels;
    constexpr std::int64_t chunk = 256;  // positions per work item
    const std::int64_t items = (positions + chunk - 1) / chunk;
    std::vector<double> partial(static_cast<std::size_t>(items * channels));
    c.parallel(items, [&](std::int64_t k) {
      double* acc = partial.data() + k * channels;
      for (std::int64_t pos = k * chunk; pos < std::min(positions, (k + 1) * chunk); ++pos)
        for (std::int64_t ch = 0; ch < channels; ++ch) acc[ch] += term(pos * channels + ch, ch);
    });
    std::vector<double> sum(static_cast<std::size_t>(channels));
    for (std::int64_t k = 0; k < items; ++k)
      for (std::int64_t ch = 0; ch < channels; ++ch) sum[static_cast<std::size_t>(ch)] += partial[static_cast<std::size_t>(k * channels + ch)];
    return sum;
  }

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
