#pragma once
/// \file
/// The kernel of `ops::relu`: `kernels::relu` over the output's elements, in parts over the
/// threads (fast mode) or on each tile's own elements (faithful mode); in a fused
/// convolution's epilogue, the epilogue's last operation.

#include <ipu/ops/kernels/kernel.hpp>
#include <ipu/ops/relu.hpp>

#include <cstdint>

namespace ipu::ops {

/// The kernel of `relu` (see the file comment).
struct relu::kernel : kernel_base {
  /// The whole output.
  template <class Ctx>
  static void fast(const Ctx& c) {
    const auto* x = c.input();
    auto* y = c.output();
    c.parallel_ranges(c.n.out.elements(), [&](std::int64_t e0, std::int64_t e1) { kernels::relu(x + e0, y + e0, e1 - e0); });
  }
  /// Node `k` fused into a convolution's epilogue: ReLU last.
  template <class T, class Ctx>
  static void fuse(kernels::epilogue<T>& e, const Ctx&, int, int) {
    e.activation = kernels::activation_kind::relu;
  }
  /// Training: `dx += x > 0 ? dy : 0` (`kernels::relu_gradient`), `x` the forward input.
  template <class Ctx>
  static void backward(const Ctx& c) {
    const auto [dx, assign] = c.grad_input_target();
    if (dx == nullptr) return;
    const auto* x = c.input();
    const float* dy = c.grad_output();
    parallel_chunks(c, c.n.out.elements(),
                    [&](std::int64_t e0, std::int64_t e1) { kernels::relu_gradient(x + e0, dy + e0, dx + e0, e1 - e0, assign); });
  }
  /// The tile's elements, read where the input lives (mapped as the output).
  template <class Ctx>
  static void compute(const Ctx& c) {
    kernels::relu(c.operand(c.n.input()), c.output(), c.last - c.first);
  }
};

}  // namespace ipu::ops
