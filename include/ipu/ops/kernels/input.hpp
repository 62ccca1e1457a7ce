#pragma once
/// \file
/// The kernel of `ops::input`: copies the batch into the graph's input tensor (in fast mode the
/// whole batch; in faithful mode each tile's elements, mapped in logical order). From an
/// 8-bit stream it converts each value `x` of channel `c` to `x * scale[c] - shift[c]` in f32,
/// rounded once to the element type (`input_stream`); in faithful mode each tile first
/// receives its bytes into its exchange buffer, as the IPU receives the stream.

#include <ipu/ops/input.hpp>
#include <ipu/ops/kernels/kernel.hpp>

#include <algorithm>
#include <array>
#include <cstdint>

namespace ipu::ops {

/// The kernel of `input` (see the file comment).
struct input::kernel : kernel_base {
  /// The whole batch.
  template <class Ctx>
  static void fast(const Ctx& c) {
    load(c, 0, c.n.out.elements(), c.output());
  }
  /// From an 8-bit stream: the tile's bytes of the batch, into its exchange buffer.
  template <class Ctx>
  static void exchange(const Ctx& c) {
    if (!c.n.layer.stream.eight_bit) return;
    std::copy_n(static_cast<const std::uint8_t*>(c.batch()) + c.first, c.last - c.first,
                c.template exchange_buffer<std::uint8_t>(0, c.last - c.first));
  }
  /// The tile's elements of the batch: copied, or converted from the bytes it received.
  template <class Ctx>
  static void compute(const Ctx& c) {
    if (c.n.layer.stream.eight_bit) {
      normalise(c.n.layer.stream, c.n.out.channels(), c.template exchange_buffer<std::uint8_t>(0, c.last - c.first),
                c.first, c.last, c.output());
    } else {
      load(c, c.first, c.last, c.output());
    }
  }

  /// `y[e - first] = x[e] * scale[c] - shift[c]` for elements `[first, last)` of the batch in
  /// logical order, `c` each element's channel (`e % channels`).
  template <class T>
  static void normalise(const input_stream& s, std::int64_t channels, const std::uint8_t* x, std::int64_t first,
                        std::int64_t last, T* y) noexcept {
    std::array<float, input_stream::max_channels> scale{}, shift{};
    for (std::int64_t k = 0; k < channels; ++k) {
      scale[static_cast<std::size_t>(k)] = s.scale(k);
      shift[static_cast<std::size_t>(k)] = s.shift(k);
    }
    for (std::int64_t e = first; e < last; ++e) {
      const auto k = static_cast<std::size_t>(e % channels);
      y[e - first] = static_cast<T>(static_cast<float>(x[e - first]) * scale[k] - shift[k]);
    }
  }

 private:
  /// Elements `[first, last)` of the batch into `y`, converted from an 8-bit stream.
  template <class Ctx, class T>
  static void load(const Ctx& c, std::int64_t first, std::int64_t last, T* y) {
    if (c.n.layer.stream.eight_bit) {
      normalise(c.n.layer.stream, c.n.out.channels(), static_cast<const std::uint8_t*>(c.batch()) + first, first, last, y);
    } else {
      std::copy_n(static_cast<const T*>(c.batch()) + first, last - first, y);
    }
  }
};

}  // namespace ipu::ops
