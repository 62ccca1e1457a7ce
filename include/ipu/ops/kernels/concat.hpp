#pragma once
/// \file
/// The kernel of `ops::concat`: each position's channels copied from the inputs in order (fast
/// mode); in faithful mode each tile gathers its elements, in logical order, from the inputs
/// through the exchange and copies them into place. Training (`backward`): each input's
/// channels of the output's gradient added to its own.

#include <ipu/ops/concat.hpp>
#include <ipu/ops/kernels/kernel.hpp>

#include <algorithm>
#include <array>
#include <cstdint>

namespace ipu::ops {

/// The kernel of `concat` (see the file comment).
struct concat::kernel : kernel_base {
  /// Each position's channels, input by input.
  template <class Ctx>
  static void fast(const Ctx& c) {
    using T = typename Ctx::value_type;
    const std::int64_t channels = c.n.out.channels();
    std::array<const T*, max_inputs> inputs{};
    std::array<std::int64_t, max_inputs> input_channels{};
    for (int k = 0; k < c.n.input_count; ++k) {
      inputs[static_cast<std::size_t>(k)] = c.input(k);
      input_channels[static_cast<std::size_t>(k)] = c.node_at(c.n.inputs[static_cast<std::size_t>(k)]).out.channels();
    }
    T* y = c.output();
    c.parallel_ranges(c.n.out.elements() / channels, [&](std::int64_t p0, std::int64_t p1) {
      for (std::int64_t pos = p0; pos < p1; ++pos) {
        T* to = y + pos * channels;
        for (std::size_t k = 0; k < static_cast<std::size_t>(c.n.input_count); ++k)
          to = std::copy_n(inputs[k] + pos * input_channels[k], input_channels[k], to);
      }
    });
  }

  /// Training: adds each input's channels of the output's gradient.
  template <class Ctx>
  static void backward(const Ctx& c) {
    const std::int64_t channels = c.n.out.channels(), positions = c.n.out.elements() / channels;
    const float* dy = c.grad_output();
    std::int64_t first = 0;  // input k's first channel in the output
    for (int k = 0; k < c.n.input_count; ++k) {
      const std::int64_t ch = c.node_at(c.n.inputs[static_cast<std::size_t>(k)]).out.channels();
      if (float* dx = c.grad_input(k)) {
        parallel_chunks(c, positions, [&](std::int64_t p0, std::int64_t p1) {
          for (std::int64_t pos = p0; pos < p1; ++pos)
            for (std::int64_t i = 0; i < ch; ++i) dx[pos * ch + i] += dy[pos * channels + first + i];
        }, training_chunk / channels + 1);
      }
      first += ch;
    }
  }

  /// The tile's elements, each run of channels from the input that holds it.
  template <class Ctx>
  static void exchange(const Ctx& c) {
    const node& n = c.n;
    const std::int64_t channels = n.out.channels();
    auto* dst = c.exchange_buffer(0, c.last - c.first);
    for (std::int64_t e = c.first; e < c.last;) {
      const std::int64_t pos = e / channels, ch = e % channels;
      std::int64_t first = 0;  // the input holding channel ch, and its first channel
      int src = n.input();
      for (int s : n.sources()) {
        src = s;
        if (ch < first + c.node_at(s).out.channels()) break;
        first += c.node_at(s).out.channels();
      }
      const std::int64_t len = std::min(c.last - e, first + c.node_at(src).out.channels() - ch);
      c.read_channels(c.input(src), pos, ch - first, len, dst + (e - c.first));
      e += len;
    }
  }

  /// Copies the gathered elements into place.
  template <class Ctx>
  static void compute(const Ctx& c) {
    std::copy_n(c.exchange_buffer(0, c.last - c.first), c.last - c.first, c.output());
  }
};

}  // namespace ipu::ops
