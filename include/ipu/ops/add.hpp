#pragma once
/// \file
/// `ops::add` and `ops::multiply`: the element-wise sum and product of a join's inputs, summed
/// or multiplied in f32 in input order and rounded once (`kernels::sum`, `kernels::product`).
/// `nn::residual` closes with an add, `nn::add` and `nn::multiply` join branches. The output is
/// mapped as the first input; an input mapped otherwise is remapped through the exchange.

#include <ipu/ops/op.hpp>

namespace ipu::ops {

/// What the element-wise joins share: the plan (their shape rule is `op_base::infer_join`:
/// every input has the first one's shape).
struct elementwise_join : op_base {
  struct kernel;  ///< its kernel, defined in `ipu/ops/kernels/add.hpp`
  /// On the first input's tiles; each input mapped otherwise arrives through the exchange.
  static constexpr void plan(const plan_inputs& in, node_plan& np) noexcept {
    np.output = np.work = in.input();
    std::int64_t remapped = 0;
    for (int k = 1; k < in.n.input_count; ++k) remapped += in.input(k) == np.output ? 0 : 1;
    if (remapped > 0) {
      np.step.kind = step_kind::remap;
      np.step.block_channels = np.work.unit_elements;
      np.step.remapped = remapped;
    }
  }
};

/// Element-wise sum of the inputs (a residual block's body and shortcut, or `nn::add`'s branches).
struct add : elementwise_join {
  static constexpr std::string_view name = "add";  ///< as node paths name it
  static constexpr int epilogue_order = 2;  ///< after a batch norm in a convolution's epilogue (two inputs)
};

/// Element-wise product of the inputs (`nn::multiply`).
struct multiply : elementwise_join {
  static constexpr std::string_view name = "multiply";  ///< as `nn::multiply` names it
};

}  // namespace ipu::ops
