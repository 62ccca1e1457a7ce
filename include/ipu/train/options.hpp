#pragma once
/// \file
/// What a training run is configured with, as values usable as a template argument
/// (`ipu::trainer<G, Tgt, Opts>`): the loss, the optimiser and its hyper-parameters, the
/// precision of the weights, loss scaling, and the learning-rate schedule.
///
/// ```
/// constexpr ipu::train_options opts{
///     .optimizer = ipu::sgd{.learning_rate = 0.1, .momentum = 0.9, .weight_decay = 1e-4},
///     .loss = ipu::loss::softmax_cross_entropy,
///     .loss_scaling = 128,
///     .schedule = ipu::cosine_decay(10'000, 500)};
/// ```

#include <ipu/core/dtype.hpp>
#include <ipu/core/scalar.hpp>
#include <ipu/train/pipeline.hpp>
#include <ipu/train/precision.hpp>

#include <cmath>
#include <cstdint>
#include <numbers>
#include <string>
#include <string_view>

namespace ipu {

/// Which forward outputs a training step keeps for its backward pass; the others it computes
/// again, in the backward pass, from the nearest kept output before them (Graphcore's
/// recomputation checkpoints). Kept are always the graph's input and output, and any output
/// read beyond the next kept one (its segment is recomputed only after the later one's).
enum class recompute : std::uint8_t {
  none,       ///< every output is kept
  per_block,  ///< kept: the outputs no earlier value crosses, the ends of residual blocks and the nodes of plain chains
  checkpoints ///< kept: the outputs marked with `nn::checkpoint`
};

/// The loss a trainer minimises, as the mean over the batch.
enum class loss : std::uint8_t {
  /// Softmax cross-entropy with integer labels, from the logits: the graph's output, or the
  /// input of its last node when that is a softmax (`tf.nn.sparse_softmax_cross_entropy_with_logits`).
  /// Computed as `logsumexp(z) - z[label]` with the row's largest logit subtracted first;
  /// its gradient is `softmax(z) - onehot(label)`, divided by the batch.
  softmax_cross_entropy,
  /// The mean over every output element of `(y - target)^2` (`tf.keras.losses.MeanSquaredError`).
  mean_squared_error,
};

/// `"softmax_cross_entropy"` or `"mean_squared_error"`.
constexpr std::string_view name_of(loss l) noexcept {
  return l == loss::softmax_cross_entropy ? "softmax_cross_entropy" : "mean_squared_error";
}

/// Which update rule an `optimizer` applies.
enum class optimizer_kind : std::uint8_t {
  sgd,    ///< stochastic gradient descent, with momentum, Nesterov momentum and weight decay
  adam,   ///< Adam (Kingma and Ba, 2015), weight decay added to the gradient
  adamw,  ///< AdamW (Loshchilov and Hutter, 2019): weight decay applied to the weights directly
  lamb,   ///< LAMB (You et al., 2020): Adam's step scaled per tensor by a trust ratio
};

/// An optimiser and its hyper-parameters; made from `ipu::sgd`, `ipu::adam`, `ipu::adamw` or
/// `ipu::lamb`, which give each its usual defaults. The update rules are in
/// `ipu/train/optimizer.hpp`.
struct optimizer {
  optimizer_kind kind = optimizer_kind::sgd;  ///< the update rule
  scalar learning_rate = 0.01;  ///< the step size before the schedule
  scalar momentum = 0;          ///< SGD: the velocity's decay (0: plain SGD)
  bool nesterov = false;        ///< SGD: Nesterov's momentum
  scalar beta1 = 0.9;           ///< Adam, AdamW, LAMB: the first moment's decay
  scalar beta2 = 0.999;         ///< Adam, AdamW, LAMB: the second moment's decay
  scalar epsilon = 1e-8;        ///< Adam, AdamW, LAMB: added to the second moment's root
  scalar weight_decay = 0;      ///< L2 penalty (SGD, Adam) or decoupled decay (AdamW, LAMB)

  /// Tensors of state the optimiser keeps per weight tensor: SGD's velocity when it has
  /// momentum, the two moments of Adam, AdamW and LAMB.
  constexpr int state_tensors() const noexcept {
    return kind == optimizer_kind::sgd ? (momentum.value() != 0 ? 1 : 0) : 2;
  }
  /// Equal when every field is.
  constexpr bool operator==(const optimizer&) const = default;
};

/// SGD: `v = momentum * v + g`, `w -= lr * (nesterov ? g + momentum * v : v)`, with
/// `g = grad + weight_decay * w` (TensorFlow's `MomentumOptimizer`, PyTorch's `SGD` without
/// dampening).
struct sgd {
  scalar learning_rate = 0.01;  ///< the step size
  scalar momentum = 0;          ///< the velocity's decay
  scalar weight_decay = 0;      ///< L2 penalty added to the gradient
  bool nesterov = false;        ///< Nesterov's momentum
  /// As an `optimizer`.
  constexpr operator optimizer() const noexcept {  // NOLINT(google-explicit-constructor)
    optimizer o;
    o.kind = optimizer_kind::sgd, o.learning_rate = learning_rate, o.momentum = momentum;
    o.weight_decay = weight_decay, o.nesterov = nesterov;
    return o;
  }
};

namespace detail {
/// An optimiser of the moments (Adam, AdamW, LAMB) with these hyper-parameters.
constexpr optimizer moments_optimizer(optimizer_kind kind, scalar learning_rate, scalar beta1, scalar beta2, scalar epsilon,
                                      scalar weight_decay) noexcept {
  optimizer o;
  o.kind = kind, o.learning_rate = learning_rate, o.beta1 = beta1, o.beta2 = beta2, o.epsilon = epsilon;
  o.weight_decay = weight_decay;
  return o;
}
}  // namespace detail

/// Adam: `m = beta1 m + (1 - beta1) g`, `v = beta2 v + (1 - beta2) g^2`, `w -= lr m^ /
/// (sqrt(v^) + epsilon)` with the bias-corrected `m^ = m / (1 - beta1^t)`, `v^ = v / (1 -
/// beta2^t)` and `g = grad + weight_decay * w` (PyTorch's `Adam` and its defaults).
struct adam {
  scalar learning_rate = 0.001;  ///< the step size
  scalar beta1 = 0.9;            ///< the first moment's decay
  scalar beta2 = 0.999;          ///< the second moment's decay
  scalar epsilon = 1e-8;         ///< added to the second moment's root
  scalar weight_decay = 0;       ///< L2 penalty added to the gradient
  /// As an `optimizer`.
  constexpr operator optimizer() const noexcept {  // NOLINT(google-explicit-constructor)
    return detail::moments_optimizer(optimizer_kind::adam, learning_rate, beta1, beta2, epsilon, weight_decay);
  }
};

/// AdamW: Adam, with `w -= lr * weight_decay * w` instead of an L2 penalty (PyTorch's
/// `AdamW`, whose default decay is 0.01).
struct adamw {
  scalar learning_rate = 0.001;  ///< the step size
  scalar beta1 = 0.9;            ///< the first moment's decay
  scalar beta2 = 0.999;          ///< the second moment's decay
  scalar epsilon = 1e-8;         ///< added to the second moment's root
  scalar weight_decay = 0.01;    ///< decoupled decay
  /// As an `optimizer`.
  constexpr operator optimizer() const noexcept {  // NOLINT(google-explicit-constructor)
    return detail::moments_optimizer(optimizer_kind::adamw, learning_rate, beta1, beta2, epsilon, weight_decay);
  }
};

/// LAMB: per tensor, `r = m^ / (sqrt(v^) + epsilon) + weight_decay * w` and `w -= lr *
/// (|w| / |r|) * r` (the trust ratio 1 where either norm is 0), Adam's bias-corrected moments
/// `m^`, `v^` (You et al., 2020, algorithm 2). Graphcore trains BERT with it at large batches.
struct lamb {
  scalar learning_rate = 0.001;  ///< the step size
  scalar beta1 = 0.9;            ///< the first moment's decay
  scalar beta2 = 0.999;          ///< the second moment's decay
  scalar epsilon = 1e-6;         ///< added to the second moment's root (the paper's)
  scalar weight_decay = 0.01;    ///< decoupled decay, inside the trust ratio
  /// As an `optimizer`.
  constexpr operator optimizer() const noexcept {  // NOLINT(google-explicit-constructor)
    return detail::moments_optimizer(optimizer_kind::lamb, learning_rate, beta1, beta2, epsilon, weight_decay);
  }
};

/// The learning rate over the steps: a linear warm-up, then constant, step decay or cosine
/// decay. Make one with `constant_rate`, `step_decay` or `cosine_decay`.
struct lr_schedule {
  /// The decay after the warm-up.
  enum class kind : std::uint8_t {
    constant,  ///< the base rate
    step,      ///< the base rate times `factor` once every `steps` steps
    cosine,    ///< from the base rate to `factor` times it over `steps` steps, along half a cosine
  };
  kind how = kind::constant;     ///< the decay
  std::int64_t steps = 0;        ///< step: steps between decays; cosine: steps of the decay
  scalar factor = 0;             ///< step: the factor per decay; cosine: the final fraction of the rate
  std::int64_t warmup_steps = 0; ///< steps of the linear warm-up: step `s` runs at `(s + 1) / warmup_steps` of the rate

  /// The rate of step `step` (from 0) for base rate `base`.
  double rate(double base, std::int64_t step) const noexcept {
    if (step < warmup_steps) return base * static_cast<double>(step + 1) / static_cast<double>(warmup_steps);
    const std::int64_t s = step - warmup_steps;
    switch (how) {
      case kind::step: return base * std::pow(factor.value(), static_cast<double>(s / steps));
      case kind::cosine: {
        const double t = static_cast<double>(s < steps ? s : steps) / static_cast<double>(steps);
        return base * (factor.value() + (1 - factor.value()) * 0.5 * (1 + std::cos(std::numbers::pi * t)));
      }
      default: return base;
    }
  }
  /// Equal when every field is.
  constexpr bool operator==(const lr_schedule&) const = default;
};

/// The base rate throughout, after `warmup_steps` of linear warm-up.
constexpr lr_schedule constant_rate(std::int64_t warmup_steps = 0) noexcept {
  return {lr_schedule::kind::constant, 0, 0, warmup_steps};
}
/// The base rate times `factor` every `every` steps (`every >= 1`), after `warmup_steps`.
constexpr lr_schedule step_decay(std::int64_t every, scalar factor, std::int64_t warmup_steps = 0) noexcept {
  return {lr_schedule::kind::step, every, factor, warmup_steps};
}
/// Half a cosine from the base rate to `final_fraction` of it over `steps` steps (`steps >=
/// 1`), after `warmup_steps` (Loshchilov and Hutter's SGDR without restarts).
constexpr lr_schedule cosine_decay(std::int64_t steps, std::int64_t warmup_steps = 0, scalar final_fraction = 0) noexcept {
  return {lr_schedule::kind::cosine, steps, final_fraction, warmup_steps};
}

/// Loss scaling (Micikevicius et al., "Mixed precision training", ICLR 2018): the loss's
/// gradient is multiplied by `factor` before the backward pass, so that gradients stored in f16
/// keep the small values that would round to zero, and the weights' gradients are divided by
/// it again, in f32, before the update. A static factor is written as a number
/// (`.loss_scaling = 128`); `ipu::dynamic_loss_scaling()` makes a dynamic one.
///
/// Dynamic: a step whose gradients hold an infinity or a NaN is not applied and halves the
/// factor (never below 1); `growth_interval` applied steps in a row double it (Keras'
/// `LossScaleOptimizer`, whose defaults `dynamic_loss_scaling()` takes: 2^15, 2000 steps).
struct loss_scaling {
  scalar factor = 1;                   ///< the scale, or the dynamic scale's start
  bool dynamic = false;                ///< whether the factor follows overflows
  std::int64_t growth_interval = 2000; ///< dynamic: steps without an overflow before it doubles

  /// No scaling (a factor of 1).
  constexpr loss_scaling() noexcept = default;
  /// A static factor, a power of two for exact unscaling (Graphcore's guides use 128 to 1024
  /// for ResNets in f16).
  consteval loss_scaling(double f) noexcept : factor(f) {}  // NOLINT(google-explicit-constructor): written as a number
  /// Equal when every field is.
  constexpr bool operator==(const loss_scaling&) const = default;
};

/// Dynamic loss scaling from `initial`, doubling after `growth_interval` steps without an
/// overflow (see `loss_scaling`).
consteval loss_scaling dynamic_loss_scaling(double initial = 32768, std::int64_t growth_interval = 2000) noexcept {
  loss_scaling s{initial};
  s.dynamic = true;
  s.growth_interval = growth_interval;
  return s;
}

/// The batch arithmetic of a training configuration (Keras' `effective_batch_size =
/// dataset_batch_size * gradient_accumulation_steps_per_replica * num_replicas`; PopART's
/// "batch size = micro-batch x replication x accumulation", times `batchesPerStep` per call).
/// `ipu::trainer::batches` and `ipu::replicated_trainer::batches` give theirs.
struct batch_sizes {
  std::int64_t micro_batch = 1;            ///< samples of one forward and backward pass: the graph's batch
  std::int64_t gradient_accumulation = 1;  ///< micro-batches per update and replica
  std::int64_t replicas = 1;               ///< replicas, each on its own samples
  std::int64_t device_iterations = 1;      ///< steps per call of a loop (TensorFlow's `steps_per_execution`)

  /// Samples of one step: micro-batch x accumulation x replicas.
  constexpr std::int64_t per_step() const noexcept { return micro_batch * gradient_accumulation * replicas; }
  /// Samples of one call: `per_step()` x device iterations.
  constexpr std::int64_t per_call() const noexcept { return per_step() * device_iterations; }
  /// E.g. "micro-batch 4 x gradient accumulation 8 x replicas 2 = 64 samples per step"; with
  /// device iterations, "..., x 10 device iterations = 640 samples per call".
  std::string to_string() const {
    std::string s = "micro-batch " + std::to_string(micro_batch) + " x gradient accumulation " +
                    std::to_string(gradient_accumulation) + " x replicas " + std::to_string(replicas) + " = " +
                    std::to_string(per_step()) + " samples per step";
    if (device_iterations != 1)
      s += ", x " + std::to_string(device_iterations) + " device iterations = " + std::to_string(per_call()) + " samples per call";
    return s;
  }
  /// Equal when every field is.
  constexpr bool operator==(const batch_sizes&) const = default;
};

/// A training configuration: the template argument of `ipu::trainer`.
struct train_options {
  ipu::optimizer optimizer = ipu::sgd{};             ///< the optimiser and its hyper-parameters
  ipu::loss loss = ipu::loss::softmax_cross_entropy;  ///< the loss
  ipu::recompute recompute = ipu::recompute::none;     ///< which outputs the backward pass computes again
  /// The type of the master weights and the optimiser state of an f16 graph: `dtype::f32` keeps
  /// an f32 copy of the trainable tensors, updated in f32 and rounded to f16 for the next step
  /// (Graphcore's "16.32"); `dtype::f16` updates the f16 weights themselves ("16.16"). An f32
  /// graph's weights are its master weights either way.
  dtype master_weights = dtype::f32;
  /// How "16.16" rounds the updated f16 weights and optimiser state: stochastically (the IPU's
  /// stochastic rounding, which Graphcore enables for "16.16", so that updates smaller than half
  /// an f16 step still move the weights on average) or to the nearest. Unused otherwise.
  ipu::rounding rounding = ipu::rounding::stochastic;
  /// The loss scale (1: none).
  ipu::loss_scaling loss_scaling{};
  /// Micro-batches per update (TensorFlow's `gradient_accumulation_count`): a step runs the
  /// forward and backward passes of this many micro-batches of the graph's batch size, combines
  /// their gradients as `gradient_reduction` says, and updates once. A step takes
  /// `micro-batch x gradient_accumulation` samples. For a pipelined graph, a positive multiple
  /// of the schedule's overlap (`ipu::pipeline_overlap`), checked at compile time.
  std::int64_t gradient_accumulation = 1;
  /// How the micro-batches' gradients are combined: their mean (the default) or their sum.
  ipu::gradient_reduction gradient_reduction = ipu::gradient_reduction::mean;
  /// How a graph placed on several IPUs overlaps its stages, one per IPU (`ipu/train/pipeline.hpp`):
  /// sequential (no overlap, the default), grouped or interleaved. Unused on one IPU.
  ipu::pipeline_schedule pipeline = ipu::pipeline_schedule::sequential;
  /// Whether the replicas of a replicated target (`ipu::replicated<System, R>`) share out the
  /// optimiser state: each holds `1/R` of every state tensor (Graphcore's replicated tensor
  /// sharding, PopTorch's `useReplicatedTensorSharding`, Optimum Graphcore's
  /// `replicated_tensor_sharding`). The gradients are then reduce-scattered rather than
  /// all-reduced, each replica updates its share, and the updated weights are all-gathered:
  /// the same update, so the trainers compute the same values; the training plan of a
  /// replicated target holds the shares. No effect on a target of one replica.
  bool shard_optimizer_state = false;
  /// The learning rate over the steps. Last: clang 16 emits a wrong template parameter object
  /// for a `train_options` whose defaulted `lr_schedule` is followed by another member (the
  /// schedule's warm-up read as 2^32).
  lr_schedule schedule{};
  /// Equal when every field is.
  constexpr bool operator==(const train_options&) const = default;
};

}  // namespace ipu
