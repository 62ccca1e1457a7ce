#pragma once
/// \file
/// `ops::concat`: a join's inputs concatenated along the last axis (channels), in input order.
/// The output is mapped element by element; each tile receives its elements from the inputs
/// through the exchange and copies them into place.

#include <ipu/ops/op.hpp>

namespace ipu::ops {

/// Concatenation along the last axis (`nn::concat`).
struct concat : op_base {
  static constexpr std::string_view name = "concat";  ///< as `nn::concat` names it
  struct kernel;  ///< its kernel, defined in `ipu/ops/kernels/concat.hpp`

  /// Inputs of one rank that agree in every extent but the last; the output's last extent is
  /// the sum of theirs.
  static constexpr inferred infer_join(std::span<const shape> inputs) noexcept {
    inferred r{inputs[0], 0, 0, {}};
    const int last = inputs[0].rank - 1;
    for (std::size_t k = 1; k < inputs.size(); ++k) {
      shape a = inputs[0], b = inputs[k];
      a.dim[static_cast<std::size_t>(last)] = b.dim[static_cast<std::size_t>(last)] = 0;
      if (!(a == b)) {
        r.error = {detail::graph_error_kind::concat_shapes_differ, {}, inputs[0], inputs[k], static_cast<std::int64_t>(k + 1)};
        return r;
      }
      r.out.dim[static_cast<std::size_t>(last)] += inputs[k].dim[static_cast<std::size_t>(last)];
    }
    return r;
  }

  /// Output mapped element by element (as every output starts); each tile receives all of
  /// its elements through the exchange.
  static constexpr void plan(const plan_inputs&, node_plan& np) noexcept {
    np.step.kind = step_kind::remap;
    np.step.block_channels = 1;
  }
};

}  // namespace ipu::ops
