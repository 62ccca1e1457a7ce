#pragma once
/// \file
/// `ops::softmax`: softmax over the last axis (`kernels::softmax_row`). Each tile receives the
/// whole rows its outputs belong to.

#include <ipu/ops/op.hpp>

namespace ipu::ops {

/// Softmax over the last axis.
struct softmax : op_base {
  struct kernel;  ///< its kernel, defined in `ipu/ops/kernels/softmax.hpp`
  static constexpr std::string_view name = "softmax";  ///< as `nn::softmax` names it

  /// Output mapped element by element; each tile's exchange holds the rows it touches.
  static constexpr void plan(const plan_inputs& in, node_plan& np) noexcept {
    step_model& s = np.step;
    s.kind = step_kind::rows;
    s.positions = in.n.in.elements() / in.n.in.channels();
    s.block_channels = in.n.in.channels();
  }
};

}  // namespace ipu::ops

namespace ipu::nn {

/// Softmax over the last axis.
struct softmax_t {
  using op_type = ops::softmax;  ///< its op
};
/// `nn::softmax`: see `softmax_t`.
inline constexpr softmax_t softmax{};

}  // namespace ipu::nn
