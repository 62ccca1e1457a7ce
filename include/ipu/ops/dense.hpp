#pragma once
/// \file
/// `ops::dense`: a fully connected layer with bias on an `[N, C]` tensor; weights `[C, units]`
/// and `[units]`. Planned and computed as a 1x1 convolution over N positions (`ops::conv`).

#include <ipu/ops/conv.hpp>

namespace ipu::ops {

/// Fully connected layer (`nn::dense<Units>`).
struct dense : op_base {
  using kernel = matmul_kernel;  ///< its kernel, defined in `ipu/ops/kernels/conv.hpp`
  static constexpr std::string_view name = "dense";  ///< as `nn::dense` names it
  static constexpr bool epilogue_head = true;  ///< its epilogue absorbs a batch norm, an add and a ReLU

  /// `[N, C]` in, `[N, units]` out; a 4-D input is an error, never a silent flatten.
  static constexpr inferred infer(const layer_params& p, const shape& in) noexcept {
    if (in.rank != 2) return failure(detail::graph_error_kind::dense_on_4d_input, in);
    const std::int64_t c = in.channels();
    return {nc(in.dim[0], p.filters), c * p.filters + p.filters, in.dim[0] * c * p.filters, {}};
  }

  /// `kernel` `[in, out]` (Glorot uniform, the seed's `xavier_initializer`) and `bias` `[out]`
  /// (uniform in [-0.1, 0.1]); a fresh set is zero.
  static constexpr tensor_specs tensors(const node& n) noexcept {
    const std::int64_t in = n.in.channels(), out = n.out.channels();
    return {{tensor_spec{"kernel", 2, {in, out}, 0, {initializer::kind::glorot_uniform}},
             tensor_spec{"bias", 1, {out}, 0, {initializer::kind::uniform, -0.1, 0.1}}},
            2};
  }
  /// The device holds kernel and bias as given.
  static constexpr std::array<std::string_view, 2> device_tensors{"kernel", "bias"};

  /// A 1x1 convolution over N positions, one bias per output channel.
  static constexpr void plan(const plan_inputs& in, node_plan& np) noexcept {
    plan_matmul(in, np, 1, layer_params{.kernel = 1}, true);
    add_weights(np, in.n.in.channels() * in.n.out.channels(), in.chip);
    add_weights(np, in.n.out.channels(), in.chip);
  }

  /// The number of units.
  static void describe(std::ostream& os, const layer_params& p) { os << ' ' << p.filters; }
};

}  // namespace ipu::ops

namespace ipu::nn {

/// Fully connected layer with bias on an `[N, C]` tensor; weights `[C, Units]`. On a 4-D
/// tensor it is a compile error, never a silent flatten.
///
/// \tparam Units  output features: the output is `[N, Units]`
template <int Units>
  requires(Units > 0)
struct dense_t {
  using op_type = ops::dense;  ///< its op
  static constexpr layer_params params{.filters = Units, .bias = true};  ///< its hyper-parameters
};
/// `nn::dense<Units>`: see `dense_t`.
template <int Units>
inline constexpr dense_t<Units> dense{};

}  // namespace ipu::nn
