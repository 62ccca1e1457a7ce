#pragma once
/// \file
/// The kernel of `ops::add` and `ops::multiply`: `kernels::sum` or `kernels::product` of the
/// inputs, element by element in input order, a broadcast input's value repeated. In faithful
/// mode each input stored otherwise than the output, or broadcast, first arrives in the tile's
/// exchange buffer, in the output's order. In a
/// fused convolution's epilogue, an add sets the residual: its input other than the
/// convolution's chain. Training (`backward`): each input receives the output's gradient (an
/// add) or its product with the other inputs (a multiply), summed over the elements a
/// broadcast input's value was repeated to.

#include <ipu/kernels/simd.hpp>
#include <ipu/ops/add.hpp>
#include <ipu/ops/kernels/kernel.hpp>

#include <algorithm>
#include <array>
#include <cstdint>

namespace ipu::ops {

/// The kernel of `add` and `multiply` (see the file comment).
struct elementwise_join::kernel : kernel_base {
  /// The whole output, in parts over the threads, each part in runs that read consecutive
  /// elements of every input (one run when no input broadcasts); two inputs a vector at a time.
  template <class Ctx>
  static void fast(const Ctx& c) {
    using T = typename Ctx::value_type;
    const node& n = c.n;
    std::array<const T*, max_inputs> inputs{};
    std::array<shape, max_inputs> shapes{};
    std::int64_t run = n.out.elements();
    for (int k = 0; k < n.input_count; ++k) {
      const auto i = static_cast<std::size_t>(k);
      inputs[i] = c.input(k);
      shapes[i] = c.node_at(n.inputs[i]).out;
      run = std::min(run, broadcast_run(shapes[i], n.out));
    }
    T* y = c.output();
    c.parallel_ranges(n.out.elements(), [&](std::int64_t e0, std::int64_t e1) {
      std::array<const T*, max_inputs> from{};
      for (std::int64_t e = e0; e < e1;) {
        const std::int64_t count = std::min(e1, (e / run + 1) * run) - e;
        for (std::size_t i = 0; i < static_cast<std::size_t>(n.input_count); ++i)
          from[i] = inputs[i] + broadcast_index(shapes[i], n.out, e);
        if (n.input_count == 2) {
          apply_vectors(n.kind, from[0], from[1], y + e, count);
        } else {
          apply(n.kind, from.data(), n.input_count, y + e, count);
        }
        e += count;
      }
    });
  }

  /// Training: adds each input's gradient (see the file comment). An input broadcast along
  /// the first axis is summed over it in order, on one thread. As in the forward pass, the
  /// output's elements go in runs that read consecutive elements of every input and of the
  /// gradient added to (`add_gradient`, a vector at a time for two inputs); each element's
  /// terms are multiplied and added in the same order as one element at a time, with the
  /// same bits.
  template <class Ctx>
  static void backward(const Ctx& c) {
    using T = typename Ctx::value_type;
    const node& n = c.n;
    const float* dy = c.grad_output();
    const bool product = n.kind == op_of<multiply>;
    std::array<const T*, max_inputs> inputs{};
    std::array<shape, max_inputs> shapes{};
    std::int64_t run = n.out.elements();
    for (int k = 0; k < n.input_count; ++k) {
      const auto i = static_cast<std::size_t>(k);
      inputs[i] = c.input(k);
      shapes[i] = c.node_at(n.inputs[i]).out;
      run = std::min(run, broadcast_run(shapes[i], n.out));
    }
    for (int k = 0; k < n.input_count; ++k) {
      const shape& from = shapes[static_cast<std::size_t>(k)];
      if (from == n.out && !product) {  // each element written once: stored when nothing was added yet
        const auto [dx, assign] = c.grad_input_target(k);
        if (dx != nullptr)
          parallel_chunks(c, n.out.elements(),
                          [&](std::int64_t e0, std::int64_t e1) { kernels::add_scaled(dx + e0, 1.0f, dy + e0, e1 - e0, assign); });
        continue;
      }
      float* dx = c.grad_input(k);
      if (dx == nullptr) continue;
      const auto add_range = [&](std::int64_t e0, std::int64_t e1) {
        std::array<const T*, max_inputs> from_input{};
        for (std::int64_t e = e0; e < e1;) {
          const std::int64_t count = std::min(e1, (e / run + 1) * run) - e;
          for (std::size_t j = 0; j < static_cast<std::size_t>(n.input_count); ++j)
            from_input[j] = inputs[j] + broadcast_index(shapes[j], n.out, e);
          add_gradient(product ? from_input.data() : nullptr, n.input_count, k, dy + e, dx + broadcast_index(from, n.out, e), count);
          e += count;
        }
      };
      const std::int64_t per_first = n.out.elements() / n.out.dim[0];
      if (from == n.out) {
        parallel_chunks(c, n.out.elements(), add_range);
      } else if (from.dim[0] == n.out.dim[0]) {
        c.parallel(n.out.dim[0], [&](std::int64_t i) { add_range(i * per_first, (i + 1) * per_first); });
      } else {
        add_range(0, n.out.elements());
      }
    }
  }

  /// Node `k` (an add), fused after node `previous`: the residual is its other input.
  template <class T, class Ctx>
  static void fuse(kernels::epilogue<T>& e, const Ctx& c, int k, int previous) {
    const node& n = c.node_at(k);
    e.residual = c.host(n.inputs[0] == previous ? n.inputs[1] : n.inputs[0]);
  }

  /// Each input mapped otherwise than the output, or broadcast: the tile's share of the
  /// output's elements, in the output's order (a broadcast value once per element reading it).
  template <class Ctx>
  static void exchange(const Ctx& c) {
    const node& n = c.n;
    if (c.p.step.kind != step_kind::remap) return;
    const storage_order o = storage_order::of(c.p.output, n.out);
    std::int64_t at = 0;
    for (int src : n.sources().subspan(1)) {
      if (c.mapping_of(src) == c.p.output) continue;
      const auto& in = c.input(src);
      const shape from = c.node_at(src).out;
      const std::int64_t from_channels = from.channels();
      auto* dst = c.exchange_buffer(at, c.last - c.first);
      for (std::int64_t q = c.first; q < c.last;) {
        const auto [pos, ch] = o.locate(q);
        const std::int64_t i = broadcast_index(from, n.out, pos * o.channels + ch);
        const std::int64_t len = from_channels == o.channels ? std::min(c.last - q, o.run(ch, o.channels - ch)) : 1;
        c.read_channels(in, i / from_channels, i % from_channels, len, dst + (q - c.first));
        q += len;
      }
      at += c.last - c.first;
    }
  }

  /// The tile's elements, each input read in place or from the exchange buffer.
  template <class Ctx>
  static void compute(const Ctx& c) {
    using T = typename Ctx::value_type;
    const node& n = c.n;
    const std::int64_t count = c.last - c.first;
    std::array<const T*, max_inputs> inputs{};
    std::int64_t at = 0;  // the exchange holds the remapped inputs in order
    for (int k = 0; k < n.input_count; ++k) {
      const int src = n.inputs[static_cast<std::size_t>(k)];
      const bool local = k == 0 || c.mapping_of(src) == c.p.output;
      inputs[static_cast<std::size_t>(k)] = local ? c.operand(src) : c.exchange_buffer(at, count);
      at += local ? 0 : count;
    }
    apply(n.kind, inputs.data(), n.input_count, c.output(), count);
  }

 private:
  /// The sum or the product of `inputs` arrays of `count` elements.
  template <class T>
  static void apply(op kind, const T* const* inputs, int inputs_count, T* y, std::int64_t count) {
    if (kind == op_of<add>) {
      kernels::sum(inputs, inputs_count, y, count);
    } else {
      kernels::product(inputs, inputs_count, y, count);
    }
  }
  /// One run of input `k`'s gradient: `dx[i] += dy[i]` for `i < count` (an add's, `x` null),
  /// or `dx[i] += dy[i] * x[j][i] * ...` over the inputs `j` other than `k` in order (a
  /// product of `inputs_count` inputs, `x[j]` pointing at input `j`'s elements of the run):
  /// one f32 product per factor, then one f32 sum. A vector at a time for an add and for a
  /// product of two.
  template <class T>
  static void add_gradient(const T* const* x, int inputs_count, int k, const float* dy, float* dx, std::int64_t count) {
    namespace simd = kernels::simd;
    if (x == nullptr || inputs_count == 2) {
      const T* other = x == nullptr ? nullptr : x[1 - k];
      for (std::int64_t i = 0; i < count; i += simd::vec::width) {
        const int lanes = simd::lanes_from(count - i);
        simd::vec g = simd::load(dy + i, lanes);
        if (other != nullptr) g = simd::mul(g, simd::load_widened(other + i, lanes));
        simd::store(dx + i, simd::add(simd::load(dx + i, lanes), g), lanes);
      }
      return;
    }
    for (std::int64_t i = 0; i < count; ++i) {
      float g = dy[i];
      for (int j = 0; j < inputs_count; ++j)
        if (j != k) g *= kernels::widen(x[j][i]);
      dx[i] += g;
    }
  }
  /// `apply` to two inputs `a` and `b`, a vector at a time: the same bits, one f32 sum or
  /// product per element rounded once to `T`.
  template <class T>
  static void apply_vectors(op kind, const T* a, const T* b, T* y, std::int64_t count) {
    namespace simd = kernels::simd;
    const bool product = kind == op_of<multiply>;
    for (std::int64_t i = 0; i < count; i += simd::vec::width) {
      const int lanes = simd::lanes_from(count - i);
      const simd::vec u = simd::load_widened(a + i, lanes), v = simd::load_widened(b + i, lanes);
      simd::store_rounded(y + i, product ? simd::mul(u, v) : simd::add(u, v), lanes);
    }
  }
};

}  // namespace ipu::ops
