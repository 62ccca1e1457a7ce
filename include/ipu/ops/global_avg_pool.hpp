#pragma once
/// \file
/// `ops::global_avg_pool`: the mean over height and width, `[N, H, W, C]` to `[N, C]`
/// (`kernels::mean`, `kernels::mean_pixels`), and what it shares with `ops::global_max_pool`.
/// Each output element receives its H x W inputs.

#include <ipu/ops/op.hpp>

namespace ipu::ops {

/// The kernel of the global poolings: the mean (`Max` false) or the maximum of each image's
/// pixels per channel. Defined in `ipu/ops/kernels/global_avg_pool.hpp`.
template <bool Max>
struct global_pool_kernel;

/// What the global poolings share: the shape rule and the plan.
struct global_pool_base : op_base {
  /// NHWC in, NC out.
  static constexpr inferred infer(const layer_params&, const shape& in) noexcept {
    if (in.rank != 4) return failure(detail::graph_error_kind::needs_4d_input, in);
    return {nc(in.dim[0], in.channels()), 0, 0, {}};
  }
  /// Output mapped element by element; each output reads its H x W inputs through the exchange.
  static constexpr void plan(const plan_inputs& in, node_plan& np) noexcept {
    np.step.kind = step_kind::reduce;
    np.step.reduce = in.n.in.dim[1] * in.n.in.dim[2];
  }
};

/// Global average pooling (`nn::global_avg_pool`).
struct global_avg_pool : global_pool_base {
  using kernel = global_pool_kernel<false>;  ///< its kernel
  static constexpr std::string_view name = "global_avg_pool";  ///< as `nn::global_avg_pool` names it
};

}  // namespace ipu::ops

namespace ipu::nn {

/// Mean over height and width: `[N, H, W, C]` becomes `[N, C]`.
struct global_avg_pool_t {
  using op_type = ops::global_avg_pool;  ///< its op
};
/// `nn::global_avg_pool`: see `global_avg_pool_t`.
inline constexpr global_avg_pool_t global_avg_pool{};

}  // namespace ipu::nn
