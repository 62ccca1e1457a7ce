#pragma once
/// \file
/// `ops::input`: the graph's input, always node 0. Its output is mapped element by element and
/// its step does no work; the executors copy the batch into it.

#include <ipu/ops/op.hpp>

namespace ipu::ops {

/// The graph input.
struct input : op_base {
  static constexpr std::string_view name = "input";  ///< as node paths and summaries print it
  struct kernel;  ///< its kernel, defined in `ipu/ops/kernels/input.hpp`
  /// Mapped element by element (as every output starts), no work.
  static constexpr void plan(const plan_inputs&, node_plan&) noexcept {}
};

}  // namespace ipu::ops
