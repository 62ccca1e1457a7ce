#pragma once
/// \file
/// `ops::conv`: 2-D convolution, optionally grouped, with TensorFlow's SAME padding or explicit
/// amounts (`ipu::padding`) and an optional bias. Weights HWIO `[kh, kw, in / groups, out]`
/// and `[out]`. Kernels: `kernels::packed_conv` (fast mode, f32
/// partials) and `kernels::conv` (faithful mode, and fast mode with f16 partials).
///
/// The plan (`plan_matmul`, shared with `ops::dense`): output channels in blocks (the groups
/// of a grouped conv, else the split with the fewest transient bytes), units of one position
/// x one block mapped linearly over the tiles; each working tile receives the weights of its
/// blocks and the input windows of its positions, and holds partials; serial slices halve a
/// tile's units until its transients meet `available_memory_proportion`, and where slices
/// alone cannot, serial phases over the kernel taps and the input channels shrink the weights
/// and windows each phase receives.

#include <ipu/core/arith.hpp>
#include <ipu/ops/op.hpp>

#include <algorithm>
#include <limits>

namespace ipu::ops {

struct matmul_kernel;  // the kernel of conv and dense: ipu/ops/kernels/conv.hpp

/// Sets the channel blocks of `s` (`split_channels`) and the fewest serial slices (1, 2, 4,
/// ...) whose transients meet `bound`, or one unit per slice; returns its mapping.
constexpr tensor_mapping fit_slices(step_model& s, std::int64_t filters, std::int64_t groups, std::int64_t bound,
                                    const chip_spec& chip) noexcept {
  const channel_blocks cb = split_channels(s, filters, groups, chip);
  s.blocks = cb.blocks;
  s.block_channels = cb.channels;
  s.blocks_apart = cb.apart;
  const tensor_mapping m = map_units(s, chip);
  const std::int64_t units = m.units.max_elements_per_tile();
  s.serial = 1;
  while (transient_on(s, units).total() > bound && s.serial < units) s.serial *= 2;
  return m;
}

/// Plans a conv-like step (`conv`, `dense`): `groups` blocks at least, the window of `window`
/// (its kernel, stride and dilation; a dense layer's is 1x1), a bias per output channel when
/// `bias`.
///
/// The search, in PopLibs' terms: output channel blocks (`split_channels`), then serial splits
/// of the output positions; when no such plan meets `available_memory_proportion`, also serial
/// splits of the kernel taps and of the input channels (`step_model::taps`, `in_parts`), which
/// shrink the weights and the window a phase receives. The plan with the fewest phases that
/// meets the bound wins (the fewest bytes among those). If none meets it, the plan warns and,
/// as PopLibs' planner does (`poplin::createPlan` in lib/poplin/ConvPlan.cpp, graphcore/poplibs
/// 7eac0f26: "retry doubling temp memory a few times before aiming at minimum cycles without
/// memory bound"), doubles the bound while it is below twice the tile's bytes, and then
/// drops it. Parallel splits of the input channels or the kernel, whose partial sums Poplar
/// reduces across tiles, would change the order of each output's sum, so the plan does not use
/// them (`plan/model.hpp`).
constexpr void plan_matmul(const plan_inputs& in, node_plan& np, std::int64_t groups, const layer_params& window,
                           bool bias) noexcept {
  const node& n = in.n;
  step_model& s = np.step;
  spatial_extents(s, n.in, n.out);
  s.kind = step_kind::conv;
  s.in_channels = n.in.channels() / groups;
  set_window(s, window);
  s.bias = bias;
  np.transient_bound = in.opts.available_memory_proportion.of(in.chip.bytes_per_tile);
  const std::int64_t filters = n.out.channels();
  const step_model unsplit = s;
  // The plan with the fewest phases whose fullest tile's transients meet `bound` (the fewest
  // bytes among those) into `s` and `np`; false, leaving them, if none does.
  const auto fastest_within = [&](std::int64_t bound) {
    step_model best{};
    tensor_mapping best_mapping{};
    std::int64_t best_bytes = -1;
    const auto consider = [&](std::int64_t taps, std::int64_t parts) {
      step_model c = unsplit;
      c.taps = taps;
      c.in_parts = parts;
      const tensor_mapping m = fit_slices(c, filters, groups, bound, in.chip);
      const std::int64_t bytes = transient_on(c, m.units.max_elements_per_tile()).total();
      if (bytes > bound) return;
      if (best_bytes < 0 || c.phases() < best.phases() || (c.phases() == best.phases() && bytes < best_bytes))
        best = c, best_mapping = m, best_bytes = bytes;
    };
    consider(1, 1);
    if (best_bytes < 0) {
      // Slices run as a loop over one compute set, as PopLibs' serial splits do, so they add
      // no vertex state. Channel parts need one tap per phase unless the kernel is 1x1, so a
      // larger kernel always runs one tap per phase here.
      const std::int64_t channels = unsplit.in_channels, taps = unsplit.kernel_taps;
      for (std::int64_t d = 1; d * d <= channels; ++d) {
        if (channels % d != 0) continue;
        if (taps > 1 || d > 1) consider(taps, d);
        if (d * d != channels) consider(taps, channels / d);
      }
    }
    if (best_bytes < 0) return false;
    s = best;
    np.output = np.work = best_mapping;
    return true;
  };
  np.over_bound = !fastest_within(np.transient_bound);
  if (np.over_bound) {
    bool met = false;
    std::int64_t bound = np.transient_bound;
    do {
      bound = std::max<std::int64_t>(bound, 1) * 2;
      met = fastest_within(bound);
    } while (!met && bound < 2 * in.chip.bytes_per_tile);
    if (!met) fastest_within(std::numeric_limits<std::int64_t>::max());
  }
}

/// 2-D convolution (`nn::conv<Filters, Kernel, Stride, Groups>`), optionally dilated.
struct conv : op_base {
  static constexpr std::string_view name = "conv";  ///< as `nn::conv` names it
  using kernel = matmul_kernel;  ///< its kernel, defined in `ipu/ops/kernels/conv.hpp`
  static constexpr bool epilogue_head = true;  ///< its epilogue absorbs a batch norm, an add and a ReLU

  /// NHWC in, `[N, OH, OW, filters]` out (`padding::out_height`, `out_width`: with SAME
  /// padding `ceil(H / stride.h)` and `ceil(W / stride.w)`); groups divide both the input
  /// channels and the filters; explicit padding is below the (dilated) kernel on each side.
  static constexpr inferred infer(const layer_params& p, const shape& in) noexcept {
    using enum detail::graph_error_kind;
    if (in.rank != 4) return failure(needs_4d_input, in);
    const std::int64_t c = in.channels();
    if (c % p.groups != 0 || p.filters % p.groups != 0) return failure(groups_do_not_divide_channels, in, p.filters, p.groups);
    if (!p.pad.valid_for(in.dim[1], in.dim[2], p.extent())) return padding_failure(p, in);
    inferred r;
    r.out = nhwc(in.dim[0], p.pad.out_height(in.dim[1], p.extent(), p.stride),
                 p.pad.out_width(in.dim[2], p.extent(), p.stride), p.filters);
    r.params = p.kernel.area() * (c / p.groups) * p.filters + (p.bias ? p.filters : 0);
    r.macs = r.out.elements() * p.kernel.area() * (c / p.groups);
    return r;
  }

  /// `kernel`, HWIO, and with a bias `bias` `[filters]`; a fresh set is zero, a random kernel
  /// variance scaling (the seed's initialiser), a random bias uniform in [-0.1, 0.1] (as a
  /// dense layer's).
  static constexpr tensor_specs tensors(const node& n) noexcept {
    const layer_params& p = n.layer;
    const std::int64_t out = n.out.channels();
    return {{tensor_spec{"kernel", 4, {p.kernel.h, p.kernel.w, n.in.channels() / p.groups, out}, 0,
                         {initializer::kind::variance_scaling}},
             tensor_spec{"bias", 1, {out}, 0, {initializer::kind::uniform, -0.1, 0.1}}},
            p.bias ? 2 : 1};
  }
  /// The device holds the kernel and the bias as given; a conv without a bias has an empty one.
  static constexpr std::array<std::string_view, 2> device_tensors{"kernel", "bias"};

  /// See the file comment.
  static constexpr void plan(const plan_inputs& in, node_plan& np) noexcept {
    const layer_params& p = in.n.layer;
    plan_matmul(in, np, p.groups, p, p.bias);
    add_weights(np, in.n.params - (p.bias ? in.n.out.channels() : 0), in.chip);
    if (p.bias) add_weights(np, in.n.out.channels(), in.chip);
  }

  /// `3x3/2`, the dilation when dilated (` dil 2`), the padding when explicit (` pad 1,1,1,1`:
  /// top, bottom, left, right), then ` g32` when grouped and ` +bias` with a bias.
  static void describe(std::ostream& os, const layer_params& p) {
    describe_window(os, p);
    if (p.groups > 1) os << " g" << p.groups;
    if (p.bias) os << " +bias";
  }
};

}  // namespace ipu::ops

namespace ipu::nn {

/// What a convolution may add to its filters, kernel, stride and groups: a bias, explicit
/// padding and dilation. Set through `conv_t`'s `with_bias()`, `padded(nn::pad<...>)`,
/// `valid()` and `dilated(nn::dilation<...>)`.
struct conv_options {
  bool bias = false;  ///< a bias per output channel
  padding pad{};      ///< TensorFlow's SAME unless explicit (`ipu::padding`)
  hw dilation = 1;    ///< cells between taps along height and width
};

/// The tag `conv_t::dilated` takes: `nn::dilation<2>`, or `nn::dilation<hw{2, 1}>` for rows
/// and columns apart.
template <hw D>
  requires(D.h > 0 && D.w > 0)
struct dilation_t {};
/// `nn::dilation<D>`: see `dilation_t`.
template <hw D>
inline constexpr dilation_t<D> dilation{};

/// 2-D convolution, TensorFlow's SAME padding, no bias and no dilation unless `Options` say
/// otherwise. Weights are HWIO: `[Kernel.h, Kernel.w, in_channels / Groups, Filters]`, and
/// `[Filters]` for the bias.
///
/// \tparam Filters  output channels
/// \tparam Kernel   height and width of the kernel: one number for a square (`3`), else
///                  `hw{rows, columns}` (`hw{1, 7}`)
/// \tparam Stride   step along height and width, likewise; with SAME padding the output is
///                  `[N, ceil(H/Stride.h), ceil(W/Stride.w), Filters]`
/// \tparam Groups   groups (cardinality); must divide both the input channels and `Filters`,
///                  which is checked when the graph is lowered
/// \tparam Options  bias, padding and dilation, set by the member functions below
template <int Filters, hw Kernel, hw Stride = 1, int Groups = 1, conv_options Options = conv_options{}>
  requires(Filters > 0 && Kernel.h > 0 && Kernel.w > 0 && Stride.h > 0 && Stride.w > 0 && Groups > 0)
struct conv_t {
  using op_type = ops::conv;  ///< its op
  /// Its hyper-parameters.
  static constexpr layer_params params{.filters = Filters,
                                       .kernel = Kernel,
                                       .stride = Stride,
                                       .dilation = Options.dilation,
                                       .groups = Groups,
                                       .pad = Options.pad,
                                       .bias = Options.bias};

  /// The same convolution adding a bias per output channel (`y = conv(x) + bias`), as
  /// PyTorch's `bias=True` and Keras' `use_bias=True`.
  constexpr auto with_bias() const noexcept {
    return conv_t<Filters, Kernel, Stride, Groups, conv_options{true, Options.pad, Options.dilation}>{};
  }
  /// The same convolution with explicit padding (`nn::pad<Top, Bottom, Left, Right>`, each
  /// below the kernel's extent along its axis, checked when the graph is lowered):
  /// `padded(nn::pad<3>)` is PyTorch's `padding=3`; the output has
  /// `floor((H + Top + Bottom - extent.h) / Stride.h) + 1` rows, `extent` being the kernel
  /// (`dilated_extent` when dilated).
  template <padding P>
  constexpr auto padded(pad_t<P>) const noexcept {
    return conv_t<Filters, Kernel, Stride, Groups, conv_options{Options.bias, P, Options.dilation}>{};
  }
  /// The same convolution without padding (TensorFlow's VALID, PyTorch's `padding=0`).
  constexpr auto valid() const noexcept { return padded(pad<0>); }
  /// The same convolution with its taps `D` cells apart (`nn::dilation<2>`; PyTorch's
  /// `dilation=`, Keras' `dilation_rate=`): tap `(kh, kw)` of output `(oh, ow)` reads input
  /// `(oh * Stride.h - top + kh * D.h, ow * Stride.w - left + kw * D.w)`, and the kernel spans
  /// `D * (Kernel - 1) + 1` cells along each axis. SAME padding pads for that span, as
  /// TensorFlow's does.
  template <hw D>
  constexpr auto dilated(dilation_t<D>) const noexcept {
    return conv_t<Filters, Kernel, Stride, Groups, conv_options{Options.bias, Options.pad, D}>{};
  }
};
/// `nn::conv<Filters, Kernel, Stride = 1, Groups = 1>`: see `conv_t`.
template <int Filters, hw Kernel, hw Stride = 1, int Groups = 1>
inline constexpr conv_t<Filters, Kernel, Stride, Groups> conv{};

}  // namespace ipu::nn
