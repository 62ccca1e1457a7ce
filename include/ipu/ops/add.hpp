#pragma once
/// \file
/// `ops::add`: the element-wise sum that closes `nn::residual` (`kernels::add`). The output is
/// mapped as the main branch; a shortcut mapped otherwise is remapped through the exchange.

#include <ipu/ops/op.hpp>

namespace ipu::ops {

/// Element-wise sum of the residual body's output (the main input) and the shortcut.
struct add : op_base {
  static constexpr op kind = op::add;              ///< the node tag
  static constexpr std::string_view name = "add";  ///< as node paths name it
  static constexpr int epilogue_order = 2;  ///< after a batch norm in a convolution's epilogue

  using op_base::infer;
  /// Both operands must have the same shape.
  static constexpr inferred infer(const shape& main, const shape& shortcut) noexcept {
    inferred r{main, 0, 0, {}};
    if (!(main == shortcut)) r.error = {detail::graph_error_kind::residual_shapes_differ, {}, main, shortcut};
    return r;
  }

  /// On the main input's tiles; a shortcut mapped differently arrives through the exchange.
  static constexpr void plan(const plan_inputs& in, node_plan& np) noexcept {
    np.output = np.work = in.input();
    if (!(in.input(1) == np.output)) {
      np.step.kind = step_kind::remap;
      np.step.block_channels = np.work.unit_elements;
    }
  }
};

}  // namespace ipu::ops
