#pragma once
/// \file
/// The kernel of `ops::global_avg_pool` and `ops::global_max_pool` (and of
/// `adaptive_avg_pool<1>`): a reduction in the two stages the plan gives it
/// (`ops::plan_reduction`). Fast mode reduces each image on the host, summing a chunk at a time
/// (`kernels::staged_mean_pixels`; a maximum does not depend on the order,
/// `kernels::max_pixels`). Faithful mode runs the stages as two supersteps: in the first, each
/// tile receives the pixels of its chunks and leaves one f32 partial per chunk and channel in
/// its temporaries (`kernels::partial_pixels`); in the second, each tile receives the partials
/// of the output elements it holds from the tiles that computed them, and combines them in
/// chunk order (`kernels::reduce_partials`). Both modes give the same bits. Training
/// (`backward`): an average's gradient shared equally over the image's pixels, a maximum's
/// given to the first pixel that holds it; by image.

#include <ipu/ops/global_avg_pool.hpp>
#include <ipu/ops/kernels/kernel.hpp>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

namespace ipu::ops {

/// The kernel of the global poolings (see the file comment).
template <bool Max>
struct global_pool_kernel : kernel_base {
  /// One image per work item.
  template <class Ctx>
  static void fast(const Ctx& c) {
    const std::int64_t channels = c.n.out.channels(), hw = c.n.in.dim[1] * c.n.in.dim[2];
    const auto* x = c.input();
    auto* y = c.output();
    c.parallel(c.n.out.dim[0], [&](std::int64_t image) {
      if constexpr (Max) {
        kernels::max_pixels(x + image * hw * channels, channels, hw, y + image * channels);
      } else {
        kernels::staged_mean_pixels(x + image * hw * channels, channels, hw, c.p.step.reduce, y + image * channels);
      }
    });
  }

  /// Training: adds each output's gradient to the pixels it reduced (see the file comment).
  template <class Ctx>
  static void backward(const Ctx& c) {
    float* dx = c.grad_input();
    if (dx == nullptr) return;
    const std::int64_t channels = c.n.out.channels(), hw = c.n.in.dim[1] * c.n.in.dim[2];
    const auto* x = c.input();
    const float* dy = c.grad_output();
    c.parallel(c.n.out.dim[0], [&](std::int64_t image) {
      const auto* xi = x + image * hw * channels;
      float* dxi = dx + image * hw * channels;
      const float* dyi = dy + image * channels;
      if constexpr (Max) {
        for (std::int64_t k = 0; k < channels; ++k) {
          std::int64_t at = 0;
          for (std::int64_t q = 1; q < hw; ++q)
            if (kernels::widen(xi[q * channels + k]) > kernels::widen(xi[at * channels + k])) at = q;
          dxi[at * channels + k] += dyi[k];
        }
      } else {
        thread_local std::vector<float> share;
        share.resize(static_cast<std::size_t>(channels));
        for (std::int64_t k = 0; k < channels; ++k) share[static_cast<std::size_t>(k)] = dyi[k] / static_cast<float>(hw);
        for (std::int64_t q = 0; q < hw; ++q) kernels::add_scaled(dxi + q * channels, 1.0f, share.data(), channels);
      }
    });
  }

  /// Stage 1: the pixels of the tile's chunks, every channel, chunk after chunk. Stage 2: the
  /// partials of the tile's output elements, chunk after chunk (`[chunk][element]`), each
  /// from the tile that computed it.
  template <class Ctx>
  static void exchange(const Ctx& c) {
    const step_model& s = c.p.step;
    const std::int64_t channels = s.block_channels, pixels = c.n.in.dim[1] * c.n.in.dim[2];
    if (c.slice == 0) {
      const auto [u0, u1] = units_of(c);
      if (u0 == u1) return;
      auto* dst = c.exchange_buffer(0, (u1 - u0) * s.reduce * channels);
      const auto& in = c.input(c.n.input());
      for (std::int64_t u = u0; u < u1; ++u) {
        const std::int64_t image = u / s.chunks, first = u % s.chunks * s.reduce;
        for (std::int64_t q = first; q < std::min(pixels, first + s.reduce); ++q, dst += channels)
          c.read_channels(in, image * pixels + q, 0, channels, dst);
      }
      return;
    }
    const std::int64_t count = c.last - c.first;
    if (count == 0) return;
    float* dst = c.template exchange_buffer<float>(0, count * s.chunks);
    const linear_mapping& work = c.p.work.units;
    for (std::int64_t k = 0; k < s.chunks; ++k)
      for (std::int64_t e = c.first; e < c.last;) {  // a run of channels of one image
        const std::int64_t image = e / channels, channel = e % channels;
        const std::int64_t run = std::min(c.last - e, channels - channel);
        const std::int64_t u = image * s.chunks + k;
        const int from = work.tile_of(u);
        c.read_partials(from, (u - work.begin(from - work.first_tile)) * channels + channel, run,
                        dst + k * count + (e - c.first));
        e += run;
      }
  }

  /// Stage 1: each chunk's partials. Stage 2: each output element from its partials.
  template <class Ctx>
  static void compute(const Ctx& c) {
    const step_model& s = c.p.step;
    const std::int64_t channels = s.block_channels, pixels = c.n.in.dim[1] * c.n.in.dim[2];
    if (c.slice == 0) {
      const auto [u0, u1] = units_of(c);
      if (u0 == u1) return;
      const auto* x = c.exchange_buffer(0, (u1 - u0) * s.reduce * channels);
      float* partials = c.template partials<float>((u1 - u0) * channels);
      for (std::int64_t u = u0; u < u1; ++u) {
        const std::int64_t first = u % s.chunks * s.reduce, count = std::min(pixels, first + s.reduce) - first;
        kernels::partial_pixels<Max>(x, channels, count, partials + (u - u0) * channels);
        x += count * channels;
      }
      return;
    }
    const std::int64_t count = c.last - c.first;
    if (count == 0) return;
    const float* x = c.template exchange_buffer<float>(0, count * s.chunks);
    auto* y = c.output();
    using T = std::remove_cvref_t<decltype(*y)>;
    for (std::int64_t e = 0; e < count; ++e) y[e] = kernels::reduce_partials<Max, T>(x + e, count, s.chunks, pixels);
  }

 private:
  /// The chunks `[begin, end)` the tile reduces in stage 1.
  template <class Ctx>
  static std::pair<std::int64_t, std::int64_t> units_of(const Ctx& c) noexcept {
    const linear_mapping& work = c.p.work.units;
    const std::int64_t part = c.tile - work.first_tile;
    if (part < 0 || part >= work.parts) return {0, 0};
    return {work.begin(part), work.end(part)};
  }
};

}  // namespace ipu::ops
