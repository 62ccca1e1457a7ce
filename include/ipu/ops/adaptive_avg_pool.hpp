#pragma once
/// \file
/// `ops::adaptive_avg_pool`: average pooling to a fixed output size, as PyTorch's
/// `nn.AdaptiveAvgPool2d((OH, OW))`. Output row `i` of `OH` averages input rows
/// `[floor(i * H / OH), ceil((i + 1) * H / OH))`, and columns likewise: bins that cover the
/// input, overlap by at most one cell, and differ in size by at most one where `OH` does not
/// divide `H`. `adaptive_avg_pool<1>` is the global average keeping `[N, 1, 1, C]`, which a
/// squeeze-and-excitation block multiplies back onto its input. Kernel:
/// `ops::adaptive_avg_pool::kernel`, the sum of each bin in f32, rows then columns, divided
/// by its cells; in faithful mode each output element receives its bin's cells. With one bin
/// per image it is planned and computed as `global_avg_pool`, a reduction in stages.

#include <ipu/core/arith.hpp>
#include <ipu/ops/global_avg_pool.hpp>
#include <ipu/ops/op.hpp>

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <utility>

namespace ipu::ops {

/// Input cells `[first, last)` of output cell `i` of `out` along an axis of `in` cells.
constexpr std::pair<std::int64_t, std::int64_t> adaptive_bin(std::int64_t i, std::int64_t in, std::int64_t out) noexcept {
  return {i * in / out, detail::div_up((i + 1) * in, out)};
}

/// Average pooling to a fixed size (`nn::adaptive_avg_pool<OH, OW>`); `kernel` holds the
/// output size `OH x OW`.
struct adaptive_avg_pool : op_base {
  struct kernel;  ///< its kernel, defined in `ipu/ops/kernels/adaptive_avg_pool.hpp`
  static constexpr std::string_view name = "adaptive_avg_pool";  ///< as `nn::adaptive_avg_pool` names it

  /// Whether the output has one bin per image: the global average, `[N, 1, 1, C]`.
  static constexpr bool global(const layer_params& p) noexcept { return p.kernel == hw{1, 1}; }
  /// NHWC in, `[N, OH, OW, C]` out.
  static constexpr inferred infer(const layer_params& p, const shape& in) noexcept {
    if (in.rank != 4) return failure(detail::graph_error_kind::needs_4d_input, in);
    return {nhwc(in.dim[0], p.kernel.h, p.kernel.w, in.channels()), 0, 0, {}};
  }
  /// One bin per image (`adaptive_avg_pool<1>`): the reduction in stages of the global
  /// poolings (`plan_reduction`). Otherwise output mapped element by element, each output
  /// receiving its bin's cells through the exchange.
  static constexpr void plan(const plan_inputs& in, node_plan& np) noexcept {
    if (global(in.n.layer)) return plan_reduction(in, np);
    const shape& x = in.n.in;
    const layer_params& p = in.n.layer;
    np.step.kind = step_kind::gather;
    np.step.reduce = std::min(x.dim[1], detail::div_up(x.dim[1], p.kernel.h) + 1) *
                     std::min(x.dim[2], detail::div_up(x.dim[2], p.kernel.w) + 1);  // the largest bin
  }
  /// `to 7x7`.
  static void describe(std::ostream& os, const layer_params& p) { os << " to " << p.kernel.h << 'x' << p.kernel.w; }
};

}  // namespace ipu::ops

namespace ipu::nn {

/// Average pooling to `[N, Height, Width, C]` (PyTorch's `nn.AdaptiveAvgPool2d`): see
/// `ops::adaptive_avg_pool` for the bins.
///
/// \tparam Height  output rows
/// \tparam Width   output columns
template <int Height, int Width = Height>
  requires(Height > 0 && Width > 0)
struct adaptive_avg_pool_t {
  using op_type = ops::adaptive_avg_pool;  ///< its op
  static constexpr layer_params params{.kernel = {Height, Width}};  ///< its hyper-parameters
};
/// `nn::adaptive_avg_pool<Height, Width = Height>`: see `adaptive_avg_pool_t`.
template <int Height, int Width = Height>
inline constexpr adaptive_avg_pool_t<Height, Width> adaptive_avg_pool{};

}  // namespace ipu::nn
