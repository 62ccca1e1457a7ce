#pragma once
/// \file
/// `ops::conv`: 2-D convolution with TensorFlow's SAME padding, no bias, optionally grouped.
/// Weights HWIO `[kh, kw, in / groups, out]`. Kernels: `kernels::packed_conv` (fast mode, f32
/// partials) and `kernels::conv` (faithful mode, and fast mode with f16 partials).
///
/// The plan (`plan_matmul`, shared with `ops::dense`): output channels in blocks (the groups
/// of a grouped conv, else the split with the fewest transient bytes), units of one position
/// x one block mapped linearly over the tiles; each working tile receives the weights of its
/// blocks and the input windows of its positions, and holds partials; serial slices halve a
/// tile's units until its transients meet `available_memory_proportion`.

#include <ipu/core/arith.hpp>
#include <ipu/ops/op.hpp>

#include <algorithm>

namespace ipu::ops {

struct matmul_kernel;  // the kernel of conv and dense: ipu/ops/kernels/conv.hpp

/// Plans a conv-like step (`conv`, `dense`): `groups` blocks at least, a `kernel` x `kernel`
/// window at `stride`, a bias per output channel when `bias`.
constexpr void plan_matmul(const plan_inputs& in, node_plan& np, std::int64_t groups, std::int64_t kernel,
                           std::int64_t stride, bool bias) noexcept {
  const node& n = in.n;
  step_model& s = np.step;
  spatial_extents(s, n.in, n.out);
  s.kind = step_kind::conv;
  s.in_channels = n.in.channels() / groups;
  s.kernel = kernel;
  s.stride = stride;
  s.bias = bias;
  const channel_blocks cb = split_channels(s, n.out.channels(), groups, in.chip);
  s.blocks = cb.blocks;
  s.block_channels = cb.channels;
  np.output = np.work = map_units(s, in.chip);
  // The fewest serial slices whose transients meet the bound; if none does, one unit per
  // slice, the fewest bytes. Slices run as a loop over one compute set, as PopLibs' serial
  // splits do, so they add no vertex state.
  np.transient_bound = in.opts.available_memory_proportion.of(in.chip.bytes_per_tile);
  const std::int64_t units = np.work.units.max_elements_per_tile();
  s.serial = 1;
  while (transient_on(s, units).total() > np.transient_bound && s.serial < units) s.serial *= 2;
  np.over_bound = transient_on(s, units).total() > np.transient_bound;
}

/// 2-D convolution (`nn::conv<Filters, Kernel, Stride, Groups>`).
struct conv : op_base {
  static constexpr std::string_view name = "conv";  ///< as `nn::conv` names it
  using kernel = matmul_kernel;  ///< its kernel, defined in `ipu/ops/kernels/conv.hpp`
  static constexpr bool epilogue_head = true;  ///< its epilogue absorbs a batch norm, an add and a ReLU

  /// NHWC in, `[N, ceil(H / stride), ceil(W / stride), filters]` out; groups divide both the
  /// input channels and the filters.
  static constexpr inferred infer(const layer_params& p, const shape& in) noexcept {
    using enum detail::graph_error_kind;
    if (in.rank != 4) return failure(needs_4d_input, in);
    const std::int64_t c = in.channels();
    if (c % p.groups != 0 || p.filters % p.groups != 0) return failure(groups_do_not_divide_channels, in, p.filters, p.groups);
    inferred r;
    r.out = nhwc(in.dim[0], detail::div_up(in.dim[1], p.stride), detail::div_up(in.dim[2], p.stride), p.filters);
    r.params = std::int64_t{p.kernel} * p.kernel * (c / p.groups) * p.filters;
    r.macs = r.out.elements() * p.kernel * p.kernel * (c / p.groups);
    return r;
  }

  /// `kernel`, HWIO; a fresh set is zero, a random one variance scaling (the seed's initialiser).
  static constexpr tensor_specs tensors(const node& n) noexcept {
    const layer_params& p = n.layer;
    return {{tensor_spec{"kernel", 4, {p.kernel, p.kernel, n.in.channels() / p.groups, n.out.channels()}, 0,
                         {initializer::kind::variance_scaling}}},
            1};
  }
  /// The device holds the kernel as given.
  static constexpr std::array<std::string_view, 1> device_tensors{"kernel"};

  /// See the file comment.
  static constexpr void plan(const plan_inputs& in, node_plan& np) noexcept {
    const layer_params& p = in.n.layer;
    plan_matmul(in, np, p.groups, p.kernel, p.stride, false);
    add_weights(np, in.n.params, in.chip);
  }

  /// `3x3/2`, and ` g32` when grouped.
  static void describe(std::ostream& os, const layer_params& p) {
    os << ' ' << p.kernel << 'x' << p.kernel << '/' << p.stride;
    if (p.groups > 1) os << " g" << p.groups;
  }
};

}  // namespace ipu::ops

namespace ipu::nn {

/// 2-D convolution with TensorFlow's SAME padding and no bias (a batch norm follows).
/// Weights are HWIO: `[Kernel, Kernel, in_channels / Groups, Filters]`.
///
/// \tparam Filters  output channels
/// \tparam Kernel   height and width of the kernel
/// \tparam Stride   step along height and width; the output is `[N, ceil(H/Stride), ceil(W/Stride), Filters]`
/// \tparam Groups   groups (cardinality); must divide both the input channels and `Filters`,
///                  which is checked when the graph is lowered
template <int Filters, int Kernel, int Stride = 1, int Groups = 1>
  requires(Filters > 0 && Kernel > 0 && Stride > 0 && Groups > 0)
struct conv_t {
  using op_type = ops::conv;  ///< its op
  static constexpr layer_params params{Filters, Kernel, Stride, Groups};  ///< its hyper-parameters
};
/// `nn::conv<Filters, Kernel, Stride = 1, Groups = 1>`: see `conv_t`.
template <int Filters, int Kernel, int Stride = 1, int Groups = 1>
inline constexpr conv_t<Filters, Kernel, Stride, Groups> conv{};

}  // namespace ipu::nn
