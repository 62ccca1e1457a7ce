#pragma once
/// \file
/// `ops::flatten`: `[N, H, W, C]` to `[N, H·W·C]`, every value kept in NHWC order: Keras'
/// `Flatten` on a channels-last tensor, TensorFlow's `tf.reshape(x, [N, -1])`. PyTorch's
/// `torch.flatten(x, 1)` reads an NCHW tensor, so a PyTorch model's dense layer after a
/// flatten has its kernel's rows in CHW order, which users permute to HWC when they import it.
/// The output is mapped element by element; where the input is stored otherwise (a
/// convolution's channel blocks), each tile receives its elements through the exchange
/// (`ops::reordering::kernel`, which `ops::reshape` shares).

#include <ipu/ops/op.hpp>

#include <string_view>

namespace ipu::ops {

/// What the ops that give every value of their input in the same (NHWC) order under another
/// shape share (`flatten`, `reshape`): the plan and the kernel, a copy.
struct reordering : op_base {
  struct kernel;  ///< their kernel, defined in `ipu/ops/kernels/flatten.hpp`

  /// Element by element (as every output starts); an input mapped otherwise is remapped.
  static constexpr void plan(const plan_inputs& in, node_plan& np) noexcept {
    if (in.input() == np.output) return;
    np.step.kind = step_kind::remap;
    np.step.block_channels = np.work.unit_elements;
    np.step.remapped = 1;
  }
};

/// Flattening to `[N, features]` (`nn::flatten`).
struct flatten : reordering {
  static constexpr std::string_view name = "flatten";  ///< as `nn::flatten` names it

  /// NHWC in, `[N, H·W·C]` out; an `[N, C]` input is already flat and stays as it is.
  static constexpr inferred infer(const layer_params&, const shape& in) noexcept {
    return {in.rank == 4 ? nc(in.dim[0], in.elements() / in.dim[0]) : in, 0, 0, {}};
  }
};

}  // namespace ipu::ops

namespace ipu::nn {

/// `[N, H, W, C]` to `[N, H·W·C]`, every value kept, in NHWC order (see `ops::flatten`).
struct flatten_t {
  using op_type = ops::flatten;  ///< its op
};
/// `nn::flatten`: see `flatten_t`.
inline constexpr flatten_t flatten{};

}  // namespace ipu::nn
