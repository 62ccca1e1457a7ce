#pragma once
/// \file
/// The kernel of `ops::relu6`: `ops::unary_kernel`'s, and in a fused convolution's epilogue the
/// epilogue's last operation (`kernels::activation_kind::relu6`), with the same bits.

#include <ipu/ops/kernels/kernel.hpp>
#include <ipu/ops/relu6.hpp>
#include <ipu/ops/unary.hpp>

namespace ipu::ops {

/// The kernel of `relu6` (see the file comment).
struct relu6::kernel : unary_kernel<relu6> {
  /// Node `k` fused into a convolution's epilogue: ReLU6 last.
  template <class T, class Ctx>
  static void fuse(kernels::epilogue<T>& e, const Ctx&, int, int) {
    e.activation = kernels::activation_kind::relu6;
  }
};

}  // namespace ipu::ops
