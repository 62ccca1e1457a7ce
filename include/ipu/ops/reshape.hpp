#pragma once
/// \file
/// `ops::reshape`: every value of each sample, in NHWC order, under another static shape:
/// Keras' `Reshape(target_shape)` on a channels-last tensor, `tf.reshape(x, [N, ...])`.
/// `nn::reshape<H, W, C>` gives `[N, H, W, C]`, `nn::reshape<C>` gives `[N, C]`; the batch is
/// kept and the target must hold as many values per sample as the input, which is checked
/// when the graph is lowered. The plan and kernel are flatten's (`ops::reordering`).

#include <ipu/ops/flatten.hpp>

#include <string_view>

namespace ipu::ops {

/// Reshaping each sample (`nn::reshape`); `filters` holds the target's channels and `kernel`
/// its height and width (`0 x 0` for an `[N, C]` target).
struct reshape : reordering {
  static constexpr std::string_view name = "reshape";  ///< as `nn::reshape` names it

  /// Any input, `[N, H, W, C]` or `[N, C]` out, as many values per sample.
  static constexpr inferred infer(const layer_params& p, const shape& in) noexcept {
    const bool flat = p.kernel == hw{0, 0};
    const shape out = flat ? nc(in.dim[0], p.filters) : nhwc(in.dim[0], p.kernel.h, p.kernel.w, p.filters);
    if (out.elements() != in.elements())
      return failure(detail::graph_error_kind::reshape_changes_values, in, in.elements() / in.dim[0],
                     out.elements() / out.dim[0]);
    return {out, 0, 0, {}};
  }
  /// ` to 7x7x256`, or ` to 1024` for an `[N, C]` target.
  static void describe(std::ostream& os, const layer_params& p) {
    os << " to ";
    if (p.kernel != hw{0, 0}) os << p.kernel.h << 'x' << p.kernel.w << 'x';
    os << p.filters;
  }
};

}  // namespace ipu::ops

namespace ipu::nn {

/// Each sample reshaped to `[Extents...]`, every value kept in NHWC order (see `ops::reshape`):
/// three extents `H, W, C` give `[N, H, W, C]`, one extent `C` gives `[N, C]`.
template <int... Extents>
  requires((sizeof...(Extents) == 1 || sizeof...(Extents) == 3) && ((Extents > 0) && ...))
struct reshape_t {
  using op_type = ops::reshape;  ///< its op
  /// Its hyper-parameters: the target's channels, and its height and width (`0 x 0` for NC).
  static constexpr layer_params params = [] {
    constexpr int e[] = {Extents...};
    if constexpr (sizeof...(Extents) == 1) return layer_params{.filters = e[0], .kernel = hw{0, 0}};
    else return layer_params{.filters = e[2], .kernel = hw{e[0], e[1]}};
  }();
};
/// `nn::reshape<H, W, C>` or `nn::reshape<C>`: see `reshape_t`.
template <int... Extents>
inline constexpr reshape_t<Extents...> reshape{};

}  // namespace ipu::nn
