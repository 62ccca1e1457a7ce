#pragma once
/// \file
/// `ops::batch_norm`: batch normalisation over the channel axis. Users set `scale`, `shift`,
/// `mean` and `variance`; for inference the device holds them folded into a per-channel scale
/// and shift (`ops::batch_norm::fold`), applied where the input lives (`kernels::affine`). In
/// training it normalises with the batch's statistics and updates `mean` and `variance` as
/// running averages (`batch_norm_momentum`).

#include <ipu/ops/op.hpp>

#include <cmath>
#include <string_view>
#include <vector>

namespace ipu {

/// Batch-norm epsilon, as in the seed's `tf.nn.batch_normalization(..., epsilon=1e-5)`.
inline constexpr double batch_norm_epsilon = 1e-5;
/// Training: the weight of the running statistics in their update, `running = momentum *
/// running + (1 - momentum) * batch`, as in the seed's `tf.layers.batch_normalization(...,
/// momentum=0.997)`. The batch variance enters with Bessel's correction, `n / (n - 1)` for `n`
/// values per channel, as TensorFlow's fused batch norm does (`rest_size_adjust`,
/// tensorflow/core/kernels/fused_batch_norm_op.cc).
inline constexpr double batch_norm_momentum = 0.997;

namespace ops {

/// Inference batch normalisation (`nn::batch_norm`).
struct batch_norm : op_base {
  /// One channel folded for inference: the scale and shift `kernels::affine` applies, as
  /// `fold` computes them. The defaults are the identity.
  struct folded {
    /// \var scale
    /// The factor: `scale / sqrt(variance + epsilon)` of the batch norm's parameters.
    /// \var shift
    /// The term added after scaling: `shift - mean * scale'`, with `scale'` the factor above.
    double scale = 1, shift = 0;
  };
  /// Folds one channel's statistics: `scale' = scale / sqrt(variance + epsilon)`,
  /// `shift' = shift - mean * scale'`, in double precision. `scale` and `shift` are the learned
  /// gamma and beta, `mean` and `variance` the statistics the batch norm normalises with.
  static folded fold(double scale, double shift, double mean, double variance, double epsilon = batch_norm_epsilon) {
    const double s = scale / std::sqrt(variance + epsilon);
    return {s, shift - mean * s};
  }

  static constexpr std::string_view name = "batch_norm";  ///< as `nn::batch_norm` names it
  static constexpr int epilogue_order = 1;  ///< first in a convolution's epilogue
  struct kernel;  ///< its kernel, defined in `ipu/ops/kernels/batch_norm.hpp`

  /// Shape-preserving; scale and shift are trained, mean and variance are not (torchvision's count).
  static constexpr inferred infer(const layer_params&, const shape& in) noexcept {
    return {in, 2 * in.channels(), 0, {}};
  }

  /// `scale`, `shift`, `mean`, `variance`, `[channels]` each. A fresh set is the identity
  /// (scale and variance 1); a random one has the statistics of a trained layer, scale and
  /// variance uniform in [0.75, 1.25], shift and mean in [-0.1, 0.1], so folding is exercised.
  static constexpr tensor_specs tensors(const node& n) noexcept {
    const std::int64_t c = n.out.channels();
    constexpr initializer near_one{initializer::kind::uniform, 0.75, 1.25};
    constexpr initializer near_zero{initializer::kind::uniform, -0.1, 0.1};
    return {{tensor_spec{"scale", 1, {c}, 1, near_one}, tensor_spec{"shift", 1, {c}, 0, near_zero},
             tensor_spec{"mean", 1, {c}, 0, near_zero, false}, tensor_spec{"variance", 1, {c}, 1, near_one, false}},
            4};
  }
  /// A variance must keep `variance + epsilon` positive, or the fold divides by zero.
  static constexpr std::string_view value_rule(std::string_view tensor, float value) noexcept {
    return tensor == "variance" && !(static_cast<double>(value) + batch_norm_epsilon > 0.0)
               ? "; variance + epsilon must be positive"
               : "";
  }
  /// The folded per-channel scale and shift.
  static constexpr std::array<std::string_view, 2> device_tensors{"scale", "shift"};
  /// Errors name them `folded scale` and `folded shift`.
  static constexpr std::string_view device_prefix = "folded ";
  /// Folds `scale`, `shift`, `mean` and `variance` into the device's scale and shift.
  template <class Op, class Lookup>
  static std::vector<std::vector<float>> to_device(Lookup&& tensor) {
    const auto scale = tensor("scale"), shift = tensor("shift"), mean = tensor("mean"), variance = tensor("variance");
    std::vector<float> s(scale.size()), h(scale.size());
    for (std::size_t c = 0; c < scale.size(); ++c) {
      const folded f = fold(scale[c], shift[c], mean[c], variance[c]);
      s[c] = static_cast<float>(f.scale);
      h[c] = static_cast<float>(f.shift);
    }
    return {std::move(s), std::move(h)};
  }

  /// On its input's tiles; each tile receives the scale and shift of the channels it holds.
  static constexpr void plan(const plan_inputs& in, node_plan& np) noexcept {
    const std::int64_t c = in.n.out.channels();
    add_weights(np, c, in.chip);
    add_weights(np, c, in.chip);
    np.output = np.work = in.input();
    step_model& s = np.step;
    s.kind = step_kind::channels;
    s.in_channels = c;
    s.blocks = np.work.blocks;
    s.blocks_apart = np.work.blocks > 1 && np.work.units.segments == np.work.blocks;
    s.block_channels = np.work.unit_elements;
    s.positions = np.work.units.elements / np.work.blocks;
  }
};

}  // namespace ops

namespace nn {

/// Inference batch normalisation over the channel axis: scale, shift, mean, variance.
struct batch_norm_t {
  using op_type = ops::batch_norm;  ///< its op
};
/// `nn::batch_norm`: see `batch_norm_t`.
inline constexpr batch_norm_t batch_norm{};

}  // namespace nn
}  // namespace ipu
