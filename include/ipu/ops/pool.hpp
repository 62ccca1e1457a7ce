#pragma once
/// \file
/// `ops::max_pool` and `ops::avg_pool`: pooling over `kh x kw` windows at a stride, with
/// TensorFlow's SAME padding or explicit amounts (`ipu::padding`); padded cells are never in a
/// window's maximum or sum. Average pooling divides by the window's cells inside the image (as
/// TensorFlow's) or, with `counting_padding()`, by its cells inside the padded image (as
/// PyTorch's default `count_include_pad=True`). Kernels: `kernels::pool` and
/// `kernels::pool_positions`. Each tile receives the input rows its outputs' windows read.

#include <ipu/core/arith.hpp>
#include <ipu/ops/op.hpp>

namespace ipu::ops {

/// What the two pooling ops share.
struct pool_base : op_base {
  struct kernel;  ///< its kernel, defined in `ipu/ops/kernels/pool.hpp`
  /// NHWC in, `[N, OH, OW, C]` out (`padding::out_height`, `out_width`: with SAME padding
  /// `ceil(H / stride)` and `ceil(W / stride)`). With SAME padding the window fits the input;
  /// explicit padding is below the window on each side.
  static constexpr inferred infer(const layer_params& p, const shape& in) noexcept {
    using enum detail::graph_error_kind;
    if (in.rank != 4) return failure(needs_4d_input, in);
    if (p.pad.same && (p.kernel.h > in.dim[1] || p.kernel.w > in.dim[2]))
      return failure(pool_larger_than_input, in, p.kernel.h, p.kernel.w);
    if (!p.pad.valid_for(in.dim[1], in.dim[2], p.kernel)) return padding_failure(p, in);
    return {nhwc(in.dim[0], p.pad.out_height(in.dim[1], p.kernel, p.stride), p.pad.out_width(in.dim[2], p.kernel, p.stride), in.channels()),
            0, 0, {}};
  }
  /// Output mapped element by element; each tile's exchange holds its windows' input rows.
  static constexpr void plan(const plan_inputs& in, node_plan& np) noexcept {
    step_model& s = np.step;
    spatial_extents(s, in.n.in, in.n.out);
    s.kind = step_kind::window;
    s.block_channels = s.in_channels = in.n.out.channels();
    set_window(s, in.n.layer);
  }
  /// `3x3/2`, the padding when explicit, and ` counting padding` for an average that does.
  static void describe(std::ostream& os, const layer_params& p) {
    describe_window(os, p);
    if (p.count_padding) os << " counting padding";
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

/// What a pooling layer may add to its window and stride: explicit padding, and for an average
/// whether padded cells count. Set through the layers' `padded(nn::pad<...>)`, `valid()` and
/// `counting_padding()`.
struct pool_options {
  padding pad{};               ///< TensorFlow's SAME unless explicit (`ipu::padding`)
  bool count_padding = false;  ///< an average divides by the window's cells in the padded image
};

/// What `max_pool_t` and `avg_pool_t` share: the op, the hyper-parameters and the padding.
template <class Op, template <hw, hw, pool_options> class Layer, hw Size, hw Stride, pool_options Options>
  requires(Size.h > 0 && Size.w > 0 && Stride.h > 0 && Stride.w > 0)
struct pool_layer {
  using op_type = Op;  ///< its op
  /// Its hyper-parameters.
  static constexpr layer_params params{.kernel = Size, .stride = Stride, .pad = Options.pad, .count_padding = Options.count_padding};

  /// The same pooling with explicit padding (`nn::pad<Top, Bottom, Left, Right>`, each below
  /// `Size`, checked when the graph is lowered); padded cells are never in a window's maximum
  /// or sum. `padded(nn::pad<1>)` is PyTorch's `padding=1`; the output has
  /// `floor((H + Top + Bottom - Size) / Stride) + 1` rows.
  template <padding P>
  constexpr auto padded(pad_t<P>) const noexcept {
    return Layer<Size, Stride, pool_options{P, Options.count_padding}>{};
  }
  /// The same pooling without padding (TensorFlow's VALID, PyTorch's `padding=0`).
  constexpr auto valid() const noexcept { return padded(pad<0>); }
};

/// Max pooling over `Size` windows (`hw{rows, columns}`, or one number for a square),
/// TensorFlow's SAME padding unless `padded` or `valid`.
///
/// \tparam Size     height and width of the window; with SAME padding it must not exceed the
///                  input's (checked when the graph is lowered)
/// \tparam Stride   step along height and width (`hw{rows, columns}` or one number); with SAME
///                  padding the output is `[N, ceil(H/Stride.h), ceil(W/Stride.w), C]`
/// \tparam Options  the padding, set by `padded(nn::pad<...>)` and `valid()`
template <hw Size, hw Stride, pool_options Options = pool_options{}>
struct max_pool_t : pool_layer<ops::max_pool, max_pool_t, Size, Stride, Options> {};
/// `nn::max_pool<Size, Stride>`: see `max_pool_t`.
template <hw Size, hw Stride>
inline constexpr max_pool_t<Size, Stride> max_pool{};

/// Average pooling over `Size` windows (`hw{rows, columns}`, or one number for a square),
/// TensorFlow's SAME padding unless `padded` or `valid`; by default the divisor is the
/// window's cells inside the image (TensorFlow's rule).
///
/// \tparam Size     height and width of the window; with SAME padding it must not exceed the
///                  input's (checked when the graph is lowered)
/// \tparam Stride   step along height and width (`hw{rows, columns}` or one number); with SAME
///                  padding the output is `[N, ceil(H/Stride.h), ceil(W/Stride.w), C]`
/// \tparam Options  the padding and the divisor, set by `padded(nn::pad<...>)`, `valid()` and
///                  `counting_padding()`
template <hw Size, hw Stride, pool_options Options = pool_options{}>
struct avg_pool_t : pool_layer<ops::avg_pool, avg_pool_t, Size, Stride, Options> {
  /// The same pooling dividing by the window's cells inside the padded image, padded cells
  /// included (PyTorch's default, `count_include_pad=True`).
  constexpr auto counting_padding() const noexcept { return avg_pool_t<Size, Stride, pool_options{Options.pad, true}>{}; }
};
/// `nn::avg_pool<Size, Stride>`: see `avg_pool_t`.
template <hw Size, hw Stride>
inline constexpr avg_pool_t<Size, Stride> avg_pool{};

}  // namespace ipu::nn
