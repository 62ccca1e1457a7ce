#pragma once
/// \file
/// `ops::max_pool` and `ops::avg_pool`: pooling over `k x k` windows at a stride with SAME
/// padding (average pooling excludes the padding from the count, as TensorFlow's). Kernels:
/// `kernels::pool` and `kernels::pool_positions`. Each tile receives the input rows its
/// outputs' windows read.

#include <ipu/core/arith.hpp>
#include <ipu/ops/op.hpp>

namespace ipu::ops {

/// What the two pooling ops share.
struct pool_base : op_base {
  struct kernel;  ///< its kernel, defined in `ipu/ops/kernels/pool.hpp`
  /// NHWC in, `[N, ceil(H / stride), ceil(W / stride), C]` out; the window fits the input.
  static constexpr inferred infer(const layer_params& p, const shape& in) noexcept {
    using enum detail::graph_error_kind;
    if (in.rank != 4) return failure(needs_4d_input, in);
    if (p.kernel > in.dim[1] || p.kernel > in.dim[2]) return failure(pool_larger_than_input, in, p.kernel);
    return {nhwc(in.dim[0], detail::div_up(in.dim[1], p.stride), detail::div_up(in.dim[2], p.stride), in.channels()), 0, 0,
            {}};
  }
  /// Output mapped element by element; each tile's exchange holds its windows' input rows.
  static constexpr void plan(const plan_inputs& in, node_plan& np) noexcept {
    step_model& s = np.step;
    spatial_extents(s, in.n.in, in.n.out);
    s.kind = step_kind::window;
    s.block_channels = s.in_channels = in.n.out.channels();
    s.kernel = in.n.layer.kernel;
    s.stride = in.n.layer.stride;
  }
  /// `3x3/2`.
  static void describe(std::ostream& os, const layer_params& p) {
    os << ' ' << p.kernel << 'x' << p.kernel << '/' << p.stride;
  }
};

/// Max pooling (`nn::max_pool<Size, Stride>`).
struct max_pool : pool_base {
  static constexpr std::string_view name = "max_pool";  ///< as `nn::max_pool` names it
};

/// Average pooling (`nn::avg_pool<Size, Stride>`).
struct avg_pool : pool_base {
  static constexpr std::string_view name = "avg_pool";  ///< as `nn::avg_pool` names it
};

}  // namespace ipu::ops

namespace ipu::nn {

/// Max pooling over `Size x Size` windows with SAME padding.
///
/// \tparam Size    height and width of the window; must not exceed the input's (checked when
///                 the graph is lowered)
/// \tparam Stride  step along height and width; the output is `[N, ceil(H/Stride), ceil(W/Stride), C]`
template <int Size, int Stride>
  requires(Size > 0 && Stride > 0)
struct max_pool_t {
  using op_type = ops::max_pool;  ///< its op
  static constexpr layer_params params{0, Size, Stride};  ///< its hyper-parameters
};
/// `nn::max_pool<Size, Stride>`: see `max_pool_t`.
template <int Size, int Stride>
inline constexpr max_pool_t<Size, Stride> max_pool{};

/// Average pooling over `Size x Size` windows with SAME padding; padded positions are not
/// counted (as TensorFlow's `avg_pool` with SAME).
///
/// \tparam Size    height and width of the window; must not exceed the input's (checked when
///                 the graph is lowered)
/// \tparam Stride  step along height and width; the output is `[N, ceil(H/Stride), ceil(W/Stride), C]`
template <int Size, int Stride>
  requires(Size > 0 && Stride > 0)
struct avg_pool_t {
  using op_type = ops::avg_pool;  ///< its op
  static constexpr layer_params params{0, Size, Stride};  ///< its hyper-parameters
};
/// `nn::avg_pool<Size, Stride>`: see `avg_pool_t`.
template <int Size, int Stride>
inline constexpr avg_pool_t<Size, Stride> avg_pool{};

}  // namespace ipu::nn
