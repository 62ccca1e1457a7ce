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
/// double, in chunks of positions, then the chunks in order. The variance is summed about each
/// chunk's own mean while the chunk is in cache, and the chunks' sums moved to the batch's mean
/// (`channel_moments`): the forward pass reads its input twice from memory, not three times.

#include <ipu/ops/batch_norm.hpp>
#include <ipu/ops/kernels/kernel.hpp>

#include <algorithm>
#include <any>
#include <array>
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
  static std::any prepare(const node&, const node_plan&, device_values tensors, std::any) {
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
    using kernels::simd::vec;
    namespace simd = kernels::simd;
    const std::int64_t channels = c.n.out.channels();
    const double m = static_cast<double>(c.n.out.elements() / channels);
    const T* x = c.input();
    const auto [sum, squares] = channel_moments(c, x);  // about the mean
    batch_statistics s{std::vector<float>(sum.size()), std::vector<float>(sum.size())};
    for (std::size_t ch = 0; ch < sum.size(); ++ch) s.mean[ch] = static_cast<float>(sum[ch] / m);
    const float* mean = s.mean.data();
    const auto running_mean = c.running("mean"), running_variance = c.running("variance");
    for (std::size_t ch = 0; ch < sum.size(); ++ch) {
      const double variance = squares[ch] / m, unbiased = m > 1 ? squares[ch] / (m - 1) : variance;
      s.inv_std[ch] = static_cast<float>(1.0 / std::sqrt(variance + batch_norm_epsilon));
      running_mean[ch] = static_cast<float>(batch_norm_momentum * running_mean[ch] + (1 - batch_norm_momentum) * sum[ch] / m);
      running_variance[ch] =
          static_cast<float>(batch_norm_momentum * running_variance[ch] + (1 - batch_norm_momentum) * unbiased);
    }
    const float *scale = c.weight("scale").data(), *shift = c.weight("shift").data(), *inv_std = s.inv_std.data();
    T* y = c.output();
    for_each_vector(c, [&](std::int64_t e, std::int64_t ch, int lanes) {
      const vec xhat = simd::mul(simd::sub(simd::load_widened(x + e, lanes), simd::load(mean + ch, lanes)), simd::load(inv_std + ch, lanes));
      simd::store_rounded(y + e, simd::madd(xhat, simd::load(scale + ch, lanes), simd::load(shift + ch, lanes)), lanes);
    });
    c.saved() = std::move(s);
  }

  /// Training: the gradients of the scale, the shift and the input.
  template <class Ctx>
  static void backward(const Ctx& c) {
    using kernels::simd::vec;
    namespace simd = kernels::simd;
    const auto& s = std::any_cast<const batch_statistics&>(c.saved());
    const std::int64_t channels = c.n.out.channels();
    const double m = static_cast<double>(c.n.out.elements() / channels);
    const auto* x = c.input();
    const float* dy = c.grad_output();
    const float *mean = s.mean.data(), *inv_std = s.inv_std.data();
    const auto xhat = [&](std::int64_t e, std::int64_t ch, int lanes) {
      return simd::mul(simd::sub(simd::load_widened(x + e, lanes), simd::load(mean + ch, lanes)), simd::load(inv_std + ch, lanes));
    };
    const auto [d_shift, d_scale] = channel_sums<2>(c, [&](std::int64_t e, std::int64_t ch, int lanes, vec* a, vec* b) {
      a[0] = a[1] = simd::load(dy + e, lanes);
      b[0] = simd::splat(1.0f), b[1] = xhat(e, ch, lanes);
    });
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
    const auto [dx, assign] = c.grad_input_target();
    if (dx == nullptr) return;
    for_each_vector(c, [&](std::int64_t e, std::int64_t ch, int lanes) {
      const vec centred = simd::sub(simd::load(dy + e, lanes), simd::load(mean_shift.data() + ch, lanes));
      const vec t = simd::sub(centred, simd::mul(xhat(e, ch, lanes), simd::load(mean_scale.data() + ch, lanes)));
      simd::store(dx + e, simd::madd(simd::load(gain.data() + ch, lanes), t, assign ? simd::zero() : simd::load(dx + e, lanes)), lanes);
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
  /// Positions per work item of `channel_sums` and `channel_moments`, and per f32 sum.
  static constexpr std::int64_t chunk = 256, run = 8;

  /// `Terms` sums per channel over the positions, in double: per chunk of positions in
  /// parallel (`add_chunk`), then the chunks' sums in order. `terms(e, ch, lanes, a, b)` sets
  /// term `i` of the `lanes` elements from `e` (channels `ch` on, of one position) to
  /// `a[i] * b[i]`.
  template <int Terms, class Ctx, class F>
  static std::array<std::vector<double>, Terms> channel_sums(const Ctx& c, F&& terms) {
    const std::int64_t channels = c.n.out.channels(), positions = c.n.out.elements() / channels;
    const std::int64_t items = (positions + chunk - 1) / chunk;
    std::vector<double> partial(static_cast<std::size_t>(items * Terms * channels));
    c.parallel(items, [&](std::int64_t k) {
      add_chunk<Terms>(k * chunk, std::min(positions, (k + 1) * chunk), channels, terms, partial.data() + k * Terms * channels);
    });
    std::array<std::vector<double>, Terms> sum;
    for (int i = 0; i < Terms; ++i) {
      sum[static_cast<std::size_t>(i)].assign(static_cast<std::size_t>(channels), 0.0);
      for (std::int64_t k = 0; k < items; ++k)
        for (std::int64_t ch = 0; ch < channels; ++ch)
          sum[static_cast<std::size_t>(i)][static_cast<std::size_t>(ch)] += partial[static_cast<std::size_t>((k * Terms + i) * channels + ch)];
    }
    return sum;
  }

  /// Adds to `acc` (`Terms` runs of `channels` doubles) the terms of positions `[p0, end)`
  /// (see `channel_sums`). A run of `run` positions is summed in f32 registers, and the run's
  /// sum added in double (`simd::madd_widened`): a sum's rounding errors are those of 8 terms
  /// in f32, and the widening (the costly part on a vector unit) is done once per run, not per
  /// position.
  template <int Terms, class F>
  static void add_chunk(std::int64_t p0, std::int64_t end, std::int64_t channels, F& terms, double* acc) {
    using kernels::simd::vec;
    for (; p0 < end; p0 += run)
      for (std::int64_t ch = 0; ch < channels; ch += vec::width) {
        const int lanes = kernels::simd::lanes_from(channels - ch);
        vec sum[Terms];
        for (int i = 0; i < Terms; ++i) sum[i] = kernels::simd::zero();
        for (std::int64_t pos = p0; pos < std::min(end, p0 + run); ++pos) {
          vec a[Terms], b[Terms];
          terms(pos * channels + ch, ch, lanes, a, b);
          for (int i = 0; i < Terms; ++i) sum[i] = kernels::simd::madd(a[i], b[i], sum[i]);
        }
        for (int i = 0; i < Terms; ++i) kernels::simd::madd_widened(acc + i * channels + ch, sum[i], kernels::simd::splat(1.0f), lanes);
      }
  }

  /// Per channel, the sum of the values of `x` (the node's input) and the sum of their squares
  /// about the channel's mean, in double, with `x` read once from memory. Each chunk of
  /// `chunk` positions is summed, then its squares about its own mean `c` (rounded to f32)
  /// are summed while the chunk is still in cache. The chunks' sums are added in order, as
  /// `channel_sums` adds them, which gives the mean; then each chunk's sum of squares is moved
  /// to the mean: over the chunk's `n` values, `sum (x - mean)^2 = sum (x - c)^2 + 2 d sum (x -
  /// c) + n d^2` with `d = c - mean`, as Chan, Golub and LeVeque's pairwise update combines
  /// the variances of parts ("Algorithms for computing the sample variance", 1983). Two passes
  /// over the whole input, one for the mean and one for the squares about it, read it from
  /// memory twice: a batch norm's training forward, bound by memory, read its input three
  /// times with its normalising pass.
  template <class Ctx, class T>
  static std::array<std::vector<double>, 2> channel_moments(const Ctx& c, const T* x) {
    using kernels::simd::vec;
    namespace simd = kernels::simd;
    const std::int64_t channels = c.n.out.channels(), positions = c.n.out.elements() / channels;
    const std::int64_t items = (positions + chunk - 1) / chunk;
    const auto per_item = static_cast<std::size_t>(items * channels);
    std::vector<double> sums(per_item), squares(per_item);
    std::vector<float> centres(per_item);
    c.parallel(items, [&](std::int64_t k) {
      const std::int64_t p0 = k * chunk, end = std::min(positions, p0 + chunk);
      double* sum = sums.data() + k * channels;
      float* centre = centres.data() + k * channels;
      auto values = [&](std::int64_t e, std::int64_t, int lanes, vec* a, vec* b) {
        a[0] = simd::load_widened(x + e, lanes), b[0] = simd::splat(1.0f);
      };
      add_chunk<1>(p0, end, channels, values, sum);
      for (std::int64_t ch = 0; ch < channels; ++ch) centre[ch] = static_cast<float>(sum[ch] / static_cast<double>(end - p0));
      auto deviations = [&](std::int64_t e, std::int64_t ch, int lanes, vec* a, vec* b) {
        a[0] = b[0] = simd::sub(simd::load_widened(x + e, lanes), simd::load(centre + ch, lanes));
      };
      add_chunk<1>(p0, end, channels, deviations, squares.data() + k * channels);
    });
    std::array<std::vector<double>, 2> out{std::vector<double>(static_cast<std::size_t>(channels)),
                                           std::vector<double>(static_cast<std::size_t>(channels))};
    auto& [sum, square] = out;
    for (std::size_t e = 0; e < per_item; ++e) sum[e % static_cast<std::size_t>(channels)] += sums[e];
    for (std::int64_t k = 0; k < items; ++k) {
      const auto n = static_cast<double>(std::min(positions, (k + 1) * chunk) - k * chunk);
      for (std::int64_t ch = 0; ch < channels; ++ch) {
        const auto e = static_cast<std::size_t>(k * channels + ch), at = static_cast<std::size_t>(ch);
        const double centre = centres[e], d = centre - sum[at] / static_cast<double>(positions);
        square[at] += squares[e] + 2 * d * (sums[e] - n * centre) + n * d * d;
      }
    }
    return out;
  }

  /// `f(e, ch, lanes)` for each vector of channels of each position (`lanes` elements from
  /// element `e`, channels `ch` on), in chunks of positions over the threads.
  template <class Ctx, class F>
  static void for_each_vector(const Ctx& c, F&& f) {
    using kernels::simd::vec;
    const std::int64_t channels = c.n.out.channels();
    parallel_chunks(
        c, c.n.out.elements() / channels,
        [&](std::int64_t p0, std::int64_t p1) {
          for (std::int64_t pos = p0; pos < p1; ++pos)
            for (std::int64_t ch = 0; ch < channels; ch += vec::width)
              f(pos * channels + ch, ch, kernels::simd::lanes_from(channels - ch));
        },
        std::max<std::int64_t>(1, training_chunk / channels));
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
