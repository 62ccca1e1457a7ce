#pragma once
/// \file
/// `ops::input`: the graph's input, always node 0. Its output is mapped element by element.
/// From a stream in the graph's element type its step does no work: the executors copy the
/// batch into it. From an 8-bit stream (`input_stream::eight_bit`) each tile receives the bytes
/// of the elements it holds into an exchange buffer and converts them in one compute set,
/// `x * scale[c] - shift[c]` in f32, rounded once to the element type (`input_stream`).

#include <ipu/ops/op.hpp>

#include <ostream>

namespace ipu::ops {

/// The graph input.
struct input : op_base {
  static constexpr std::string_view name = "input";  ///< as node paths and summaries print it
  struct kernel;  ///< its kernel, defined in `ipu/ops/kernels/input.hpp`
  /// Mapped element by element (as every output starts); from an 8-bit stream, a tile
  /// receives a byte per element it holds (`step_kind::stream`).
  static constexpr void plan(const plan_inputs& in, node_plan& np) noexcept {
    if (!in.n.layer.stream.eight_bit) return;
    np.step.kind = step_kind::stream;
    np.step.element_bytes = in.n.layer.stream.value_bytes(in.n.type);
  }
  /// ` from an 8-bit stream` when it has one.
  static void describe(std::ostream& os, const layer_params& p) {
    if (p.stream.eight_bit) os << " from an 8-bit stream";
  }
};

}  // namespace ipu::ops
