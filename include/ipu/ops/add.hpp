#pragma once
/// \file
/// `ops::add` and `ops::multiply`: the element-wise sum and product of a join's inputs, summed
/// or multiplied in f32 in input order and rounded once (`kernels::sum`, `kernels::product`).
/// `nn::residual` closes with an add, `nn::add` and `nn::multiply` join branches. The output
/// has the first input's shape; the others have it or broadcast to it (an extent of 1 repeats).
/// The output is mapped as the first input; an input mapped otherwise, or broadcast, arrives
/// through the exchange, each tile receiving its share of the output's elements.

#include <ipu/ops/op.hpp>

#include <cstddef>
#include <span>

namespace ipu::ops {

/// Whether a tensor of shape `from` broadcasts to shape `to`: the same rank, and each extent
/// equal to `to`'s or 1 (NumPy's rule, without adding axes).
constexpr bool broadcasts_to(const shape& from, const shape& to) noexcept {
  if (from.rank != to.rank) return false;
  for (int a = 0; a < to.rank; ++a) {
    const auto k = static_cast<std::size_t>(a);
    if (from.dim[k] != to.dim[k] && from.dim[k] != 1) return false;
  }
  return true;
}

/// The index, in a row-major tensor of shape `from`, of the element that element `e` of a
/// row-major tensor of shape `to` reads when `from` broadcasts to `to`.
constexpr std::int64_t broadcast_index(const shape& from, const shape& to, std::int64_t e) noexcept {
  std::int64_t index = 0, stride = 1;
  for (int a = to.rank - 1; a >= 0; --a) {
    const auto k = static_cast<std::size_t>(a);
    if (from.dim[k] != 1) index += e % to.dim[k] * stride;
    e /= to.dim[k];
    stride *= from.dim[k];
  }
  return index;
}

/// The longest runs of consecutive elements of `to` that read consecutive elements of `from`
/// (which broadcasts to it): the product of the trailing extents the two share.
constexpr std::int64_t broadcast_run(const shape& from, const shape& to) noexcept {
  std::int64_t run = 1;
  for (int a = to.rank - 1; a >= 0 && from.dim[static_cast<std::size_t>(a)] == to.dim[static_cast<std::size_t>(a)]; --a)
    run *= to.dim[static_cast<std::size_t>(a)];
  return run;
}

/// What the element-wise joins share: the shape rule and the plan.
struct elementwise_join : op_base {
  struct kernel;  ///< its kernel, defined in `ipu/ops/kernels/add.hpp`
  /// The first input's shape; every other input has it, or broadcasts to it (`broadcasts_to`:
  /// squeeze-and-excitation's `[N, 1, 1, C]` scales an `[N, H, W, C]` map).
  static constexpr inferred infer_join(std::span<const shape> inputs) noexcept {
    inferred r{inputs[0], 0, 0, {}};
    for (std::size_t k = 1; k < inputs.size(); ++k)
      if (!broadcasts_to(inputs[k], inputs[0])) {
        r.error = {detail::graph_error_kind::join_shapes_differ, {}, inputs[0], inputs[k], static_cast<std::int64_t>(k + 1)};
        break;
      }
    return r;
  }
  /// On the first input's tiles; each input mapped otherwise arrives through the exchange.
  static constexpr void plan(const plan_inputs& in, node_plan& np) noexcept {
    np.output = np.work = in.input();
    std::int64_t remapped = 0;
    for (int k = 1; k < in.n.input_count; ++k) remapped += in.input(k) == np.output ? 0 : 1;
    if (remapped > 0) {
      np.step.kind = step_kind::remap;
      np.step.block_channels = np.work.unit_elements;
      np.step.remapped = remapped;
    }
  }
};

/// Element-wise sum of the inputs (a residual block's body and shortcut, or `nn::add`'s branches).
struct add : elementwise_join {
  static constexpr std::string_view name = "add";  ///< as node paths name it
  static constexpr int epilogue_order = 2;  ///< after a batch norm in a convolution's epilogue (two inputs)
};

/// Element-wise product of the inputs (`nn::multiply`).
struct multiply : elementwise_join {
  static constexpr std::string_view name = "multiply";  ///< as `nn::multiply` names it
};

}  // namespace ipu::ops
