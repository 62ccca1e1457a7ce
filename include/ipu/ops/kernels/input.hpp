#pragma once
/// \file
/// The kernel of `ops::input`: copies the batch into the graph's input tensor (in fast mode the
/// whole batch; in faithful mode each tile's elements, mapped in logical order).

#include <ipu/ops/input.hpp>
#include <ipu/ops/kernels/kernel.hpp>

#include <algorithm>

namespace ipu::ops {

/// The kernel of `input` (see the file comment).
struct input::kernel : kernel_base {
  /// The whole batch.
  template <class Ctx>
  static void fast(const Ctx& c) {
    std::copy_n(c.batch(), c.n.out.elements(), c.output());
  }
  /// The tile's elements of the batch.
  template <class Ctx>
  static void compute(const Ctx& c) {
    std::copy_n(c.batch() + c.first, c.last - c.first, c.output());
  }
};

}  // namespace ipu::ops
