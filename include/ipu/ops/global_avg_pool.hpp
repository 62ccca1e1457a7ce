#pragma once
/// \file
/// `ops::global_avg_pool`: the mean over height and width, `[N, H, W, C]` to `[N, C]`
/// (`kernels::staged_mean_pixels`), and what it shares with `ops::global_max_pool`: the plan of
/// a reduction in two stages over the tiles (`plan_reduction`), whose chunks also fix the
/// order of each output's sum in both modes.

#include <ipu/core/arith.hpp>
#include <ipu/ops/op.hpp>
#include <ipu/target/chip.hpp>
#include <ipu/target/layout.hpp>

#include <algorithm>
#include <cstdint>
#include <string_view>

namespace ipu::ops {

/// The kernel of the global poolings: the mean (`Max` false) or the maximum of each image's
/// pixels per channel. Defined in `ipu/ops/kernels/global_avg_pool.hpp`.
template <bool Max>
struct global_pool_kernel;

/// Plans the reduction of each image's pixels per channel, `[N, H, W, C]` to `N x C` outputs,
/// in two stages (`step_model`'s reductions in stages). Each image is cut into `chunks`
/// chunks of `reduce` pixels; the chunks are the step's units, mapped linearly, and the
/// output is mapped element by element over the tiles that hold chunks. Smaller chunks spread
/// stage 1 over more tiles but send more partials to each output in stage 2, so the chunk size
/// (a power of two, or one chunk per tile over the batch) is the one that minimises the fullest
/// tile's transients, as `split_channels` chooses a conv's channel blocks.
constexpr void plan_reduction(const plan_inputs& in, node_plan& np) noexcept {
  using detail::div_up;
  const shape& x = in.n.in;
  const std::int64_t images = x.dim[0], pixels = x.dim[1] * x.dim[2], channels = x.channels();
  step_model& s = np.step;
  s.kind = step_kind::reduce;
  s.images = images;
  s.block_channels = channels;
  std::int64_t best_bytes = -1;
  const auto consider = [&](std::int64_t chunk) {
    step_model c = s;
    c.reduce = chunk;
    c.chunks = div_up(pixels, chunk);
    const tensor_mapping work{map_linearly(images * c.chunks, chunk * channels * c.element_bytes, in.chip), channels};
    const tensor_mapping out = map_elements(in.n.out.elements(), c.element_bytes, with_tiles(in.chip, work.tiles()));
    c.outputs = out.max_elements_per_tile();
    const std::int64_t bytes = transient_on(c, work.units.max_elements_per_tile()).total();
    if (best_bytes >= 0 && bytes >= best_bytes) return;
    best_bytes = bytes, s = c, np.work = work, np.output = out;
  };
  consider(div_up(pixels, std::min(pixels, div_up(in.chip.tiles, images))));
  for (std::int64_t chunk = 1; chunk < pixels; chunk *= 2) consider(chunk);
  consider(pixels);
}

/// What the global poolings share: the shape rule and the plan.
struct global_pool_base : op_base {
  /// NHWC in, NC out.
  static constexpr inferred infer(const layer_params&, const shape& in) noexcept {
    if (in.rank != 4) return failure(detail::graph_error_kind::needs_4d_input, in);
    return {nc(in.dim[0], in.channels()), 0, 0, {}};
  }
  /// A reduction in two stages (`step_kind::reduce`): see `plan_reduction`.
  static constexpr void plan(const plan_inputs& in, node_plan& np) noexcept { plan_reduction(in, np); }
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
