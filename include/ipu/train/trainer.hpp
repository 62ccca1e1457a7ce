#pragma once
/// \file
/// `ipu::trainer<G, Tgt, Opts>`: trains graph `G` on the host, one batch per `step`: the
/// forward pass in training mode, the loss, the backward pass (`runtime::training_pass`) and the
/// optimiser's update (`ipu/train/optimizer.hpp`) of f32 master weights.
///
/// ```
/// constexpr ipu::train_options opts{.optimizer = ipu::sgd{.learning_rate = 0.1, .momentum = 0.9}};
/// ipu::trainer<net_t, ipu::mk2, opts> trainer{ipu::weights<net_t>::random(1)};
/// float loss = trainer.step(images, labels);  // forward, backward, update
/// ```
///
/// The forward pass computes in the graph's element type from the weights rounded to it; the
/// backward pass stores the gradients in it too (`runtime::training_pass`), scaled by the loss
/// scale (`train_options::loss_scaling`), and the update reads them unscaled, in f32. For an f16
/// graph the weights are f32 masters (Graphcore's "16.32", `master_weights = ipu::dtype::f32`)
/// or f16 values themselves ("16.16", `ipu::dtype::f16`), which each update, computed in f32,
/// rounds back to f16 with the optimiser's state, stochastically by default
/// (`train_options::rounding`, seeded by `trainer_config::seed`). Batch norm normalises with
/// the batch's statistics and updates its running `mean` and `variance`, which an
/// `ipu::engine` made from `weights()` then uses; in an f16 graph they are f16 values, as the
/// training plan holds them, each update rounded as `train_options::rounding` says. The layers
/// after an `nn::dropout` read its input dropped out, with masks drawn for the seed and the
/// number of steps taken or skipped (`ipu/train/dropout.hpp`): a `backward` without an update
/// draws the same masks again.
///
/// `ipu::faithful_trainer` runs the same arithmetic on every tile's memory image, each buffer
/// where the training plan places it (`runtime/faithful_training.hpp`): its results hold the
/// same bits as the trainer's, and `measured_usage` gives the bytes each tile held at each step,
/// to compare with the plan's. It needs the training plan to fit (`ipu::require_fit`).

#include <ipu/core/dtype.hpp>
#include <ipu/core/log.hpp>
#include <ipu/graph/detail/lower.hpp>
#include <ipu/graph/queries.hpp>
#include <ipu/ops/kernels.hpp>
#include <ipu/ops/softmax.hpp>
#include <ipu/report/summary.hpp>
#include <ipu/plan/plan.hpp>
#include <ipu/plan/training.hpp>
#include <ipu/runtime/execution.hpp>
#include <ipu/runtime/faithful_training.hpp>
#include <ipu/runtime/kernel_set.hpp>
#include <ipu/runtime/pipeline.hpp>
#include <ipu/runtime/program.hpp>
#include <ipu/runtime/team.hpp>
#include <ipu/runtime/training_pass.hpp>
#include <ipu/runtime/weights.hpp>
#include <ipu/train/optimizer.hpp>
#include <ipu/train/options.hpp>
#include <ipu/train/precision.hpp>
#include <ipu/train/profile.hpp>
#include <ipu/train/replication.hpp>
#include <ipu/train/stages.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

namespace ipu {

namespace detail {
/// A trainer's tile images: none in fast mode.
template <execution_mode Mode, class Spec, class Tgt, options O, ElementType T>
struct trainer_image {
  using type = std::monostate;
};
template <class Spec, class Tgt, options O, ElementType T>
struct trainer_image<execution_mode::faithful, Spec, Tgt, O, T> {
  using plan_type = std::remove_cvref_t<decltype(plan_v<Spec, Tgt, O>)>;
  using type = std::unique_ptr<runtime::faithful_training<T, plan_type>>;
};
}  // namespace detail

/// How a trainer runs.
struct trainer_config {
  unsigned threads = 0;    ///< host threads; 0: one per hardware thread
  std::uint64_t seed = 0;  ///< the seed of stochastic rounding ("16.16") and of dropout
  /// The group of replicas the trainer is one of (`ipu/train/replication.hpp`): its steps'
  /// gradients, losses and overflows are summed over the group, and it starts from rank 0's
  /// weights. Null: a replica alone. It must outlive the trainer.
  gradient_reducer* reducer = nullptr;
};

/// What a trainer holds besides its weights, so that training resumes where it stopped with
/// the bits it would have had (`trainer::state`, `trainer::restore`; `ipu/checkpoint.hpp`
/// keeps it in a checkpoint with the weights).
struct trainer_state {
  std::int64_t steps = 0;          ///< updates applied (`trainer::steps`)
  std::int64_t skipped_steps = 0;  ///< steps dynamic loss scaling skipped (`trainer::skipped_steps`)
  std::int64_t clean_steps = 0;    ///< dynamic loss scaling: updates since the last overflow or growth
  float loss_scale = 1;            ///< the loss scale of the next step (`trainer::loss_scale`)
  std::uint64_t seed = 0;          ///< the seed of stochastic rounding and dropout (`trainer_config::seed`)
  /// The optimiser's state: `optimizer::state_tensors()` tensors per weight tensor, in the
  /// weights' order (SGD's velocity; Adam's first, then second moment), each as long as its
  /// weight tensor, or empty for a tensor that is not trainable.
  std::vector<std::vector<float>> optimizer;
};

/// Trains graph `G`, planned for target `Tgt` with options `PlanOpts`, as `Opts` configures
/// (see the file comment), in mode `Mode` (`ipu::faithful_trainer` names the faithful one). One
/// call at a time; movable.
template <Graph G, Target Tgt, train_options Opts = train_options{}, options PlanOpts = options{},
          execution_mode Mode = execution_mode::fast>
class trainer {
 public:
  static constexpr execution_mode mode = Mode;  ///< fast (host tensors) or faithful (tile images)
  using graph_type = std::remove_cvref_t<G>;  ///< `G`
  using element_type = element_type_t<G>;     ///< `f32` or `f16`
  using stream_type = stream_type_t<G>;       ///< what the input stream carries
  static constexpr train_options opts = Opts;  ///< the training configuration
  static constexpr std::int64_t micro_batch = batch_size_v<G>;  ///< samples per forward and backward pass: the graph's batch
  static constexpr std::int64_t gradient_accumulation = Opts.gradient_accumulation;  ///< micro-batches per step
  static constexpr std::int64_t batch = micro_batch * gradient_accumulation;  ///< samples per step of this replica
  static constexpr int stages = pipeline_stages_v<G>;  ///< the IPUs of the graph: its pipeline's stages
  /// Whether the stages run at once, as `Opts.pipeline` schedules them (`runtime::pipeline`);
  /// otherwise a step runs its micro-batches one after another through all the layers.
  static constexpr bool pipelined = Opts.pipeline != pipeline_schedule::sequential && stages > 1;
  /// Whether the weights and the optimiser's state are f16 values ("16.16"), rounded so after
  /// each update; otherwise they are f32.
  static constexpr bool f16_weights = std::is_same_v<element_type, f16> && Opts.master_weights == dtype::f16;
  static_assert(Opts.loss_scaling.factor.value() >= 1, "ipu::trainer: the loss scale (train_options::loss_scaling) must be at least 1");
  static_assert(!Opts.loss_scaling.dynamic || Opts.loss_scaling.growth_interval >= 1,
                "ipu::trainer: dynamic loss scaling needs a growth_interval of at least 1 step");
  static_assert(Opts.gradient_accumulation >= 1, "ipu::trainer: gradient_accumulation must be at least 1 micro-batch");
  static_assert(Mode == execution_mode::fast || (!pipelined && Opts.gradient_accumulation == 1),
                "ipu::faithful_trainer runs the training plan of one micro-batch on one IPU: no pipelining and no "
                "gradient accumulation (use ipu::trainer)");
  static_assert(Mode == execution_mode::fast || !Opts.shard_optimizer_state || replicas_v<Tgt> == 1,
                "ipu::faithful_trainer runs one replica holding all of the optimiser state: no "
                "train_options::shard_optimizer_state on a replicated target (use ipu::trainer)");

  /// Starts from `initial` (checked as an engine checks weights: finite values, batch-norm
  /// variances). Throws `execution_error` if an op of `G` has no backward pass.
  /// In "16.16" the trainable tensors start as `initial` rounded to the nearest f16.
  explicit trainer(const ipu::weights<G>& initial, trainer_config config = {})
      : weights_(initial), team_(std::make_unique<runtime::team>(config.threads)), seed_(config.seed) {
    weights_.validate();
    if (config.reducer != nullptr) {
      reducer_ = config.reducer;
      replicas_ = reducer_->replicas(), rank_ = reducer_->rank();
      for (layer_weights& layer : weights_)
        for (const weight_tensor& t : layer.tensors()) reducer_->broadcast(layer[t.name]);
    }
    if constexpr (f16_weights)
      for (layer_weights& layer : weights_)
        for (const weight_tensor& t : layer.tensors())
          if (t.trainable) round_to_half(layer[t.name], rounding::nearest);
    clear_gradients();
    runtime::kernel_set<element_type, f32> kernels;
    runtime::training_kernel_set<element_type> training;
    detail::for_each_op<graph_type>([&]<class Op>() {
      kernels.template add<Op>();
      training.template add<Op>();
    });
    const std::vector<node> nodes(table().begin(), table().end());
    const std::span<const layer_weights> layers(weights_.begin(), weights_.end());
    if constexpr (pipelined) {
      pipe_ = std::make_unique<runtime::pipeline<element_type>>(
          runtime::program::from(plan_v<G, Tgt, PlanOpts>), kernels.per_node(nodes), training.per_node(nodes), layers,
          Opts.pipeline, gradient_accumulation, std::max(1u, team_->size() / static_cast<unsigned>(stages)));
      stage_layers_.resize(static_cast<std::size_t>(stages));
      for (std::size_t l = 0; l < weights_.size(); ++l)  // stage s is IPU s
        stage_layers_[static_cast<std::size_t>(table()[static_cast<std::size_t>(weights_[l].node_index())].ipu)].push_back(l);
    } else {
      pass_ = std::make_unique<runtime::training_pass<element_type>>(runtime::program::from(plan_v<G, Tgt, PlanOpts>),
                                                                      kernels.per_node(nodes), training.per_node(nodes),
                                                                      *team_, layers);
    }
    if constexpr (gradient_accumulation > 1) accumulated_ = grads_;
    layer_overflow_.assign(weights_.size(), 0);
    std::size_t tensors = 0;
    for (const layer_weights& layer : weights_) {
      first_tensor_.push_back(tensors);
      tensors += layer.tensors().size();
      for (const weight_tensor& t : layer.tensors())
        for (int k = 0; k < opts.optimizer.state_tensors(); ++k)
          state_.emplace_back(t.trainable ? t.values.size() : 0, 0.0f);
    }
    if constexpr (faithful) {
      static_assert(require_fit<ipu::training<G, Opts>, Tgt, PlanOpts>);
      image_ = std::make_unique<typename image_t::element_type>(plan_v<ipu::training<G, Opts>, Tgt, PlanOpts>, *pass_);
      for (std::size_t l = 0; l < weights_.size(); ++l) write_update_state(l);
    }
    if (logging::enabled(log_level::info))
      logging::info("trainer", Tgt::name, ", ", stages, stages == 1 ? " IPU: " : " IPUs: ", node_count_v<G>, " layers; ",
                    detail::describe(Opts), "; ", batches().to_string(), "; ", name_of(Mode), " mode, ", team_->size(),
                    " threads");
  }

  /// One step of softmax cross-entropy training on a batch: `input` holds the graph's input
  /// as its stream carries it, for each of the step's `gradient_accumulation` micro-batches one
  /// after another (`batch` samples), `labels` one class per sample. Returns the batch's mean
  /// loss before the update. Throws `std::invalid_argument` on a wrong size or a label outside
  /// the classes.
  float step(std::span<const stream_type> input, std::span<const std::int32_t> labels)
    requires(Opts.loss == loss::softmax_cross_entropy)
  {
    const float l = backward(input, labels);
    update();
    log_step(l);
    return l;
  }
  /// One step of mean-squared-error training: `targets` holds the output's values for each
  /// micro-batch.
  float step(std::span<const stream_type> input, std::span<const float> targets)
    requires(Opts.loss == loss::mean_squared_error)
  {
    const float l = backward(input, targets);
    update();
    log_step(l);
    return l;
  }

  /// The classes of softmax cross-entropy training: the channels of the logits.
  static constexpr std::int64_t classes = node_table_v<G>[node_count_v<G> - 1].out.channels();
  /// Throws `std::invalid_argument` naming the first label outside `[0, classes)`.
  static void check_labels(std::span<const std::int32_t> labels)
    requires(Opts.loss == loss::softmax_cross_entropy)
  {
    for (std::size_t i = 0; i < labels.size(); ++i)
      if (labels[i] < 0 || labels[i] >= classes)
        throw std::invalid_argument("ipu::trainer: label " + std::to_string(i) + " is " + std::to_string(labels[i]) +
                                    "; the graph has " + std::to_string(classes) + " classes (0 to " +
                                    std::to_string(classes - 1) + ")");
  }

  /// The forward and backward passes of softmax cross-entropy on a batch, without an update:
  /// returns the mean loss and leaves the gradients in `gradients()`: the micro-batches'
  /// combined as `train_options::gradient_reduction` says, and with replicas
  /// (`trainer_config::reducer`) the replicas' too, the loss the mean over all their samples.
  /// Batch norms' running statistics are updated, as by a step.
  float backward(std::span<const stream_type> input, std::span<const std::int32_t> labels)
    requires(Opts.loss == loss::softmax_cross_entropy)
  {
    check_input(input);
    const int last = static_cast<int>(node_count_v<G>) - 1;
    const int logits_node = fused_softmax() ? table()[static_cast<std::size_t>(last)].input() : last;
    if (static_cast<std::int64_t>(labels.size()) != batch)
      throw std::invalid_argument("ipu::trainer: " + std::to_string(labels.size()) + " labels for a batch of " +
                                  std::to_string(batch));
    check_labels(labels);
    logits_.resize(static_cast<std::size_t>(batch * classes));
    return run_window(input, logits_node, micro_batch, [&](runtime::training_pass<element_type>& pass, std::int64_t m) {
      const element_type* z = pass.value(logits_node);
      float* dz = pass.grad_of(logits_node);
      double total = 0;
      std::vector<double> e(static_cast<std::size_t>(classes));  // one row's exp(logit - largest)
      for (std::int64_t b = 0; b < micro_batch; ++b) {
        const element_type* row = z + b * classes;
        float largest = -std::numeric_limits<float>::infinity();
        for (std::int64_t k = 0; k < classes; ++k) largest = std::max(largest, kernels::widen(row[k]));
        double sum = 0;
        for (std::int64_t k = 0; k < classes; ++k) {
          e[static_cast<std::size_t>(k)] = std::exp(static_cast<double>(kernels::widen(row[k]) - largest));
          sum += e[static_cast<std::size_t>(k)];
        }
        const std::int64_t sample = m * micro_batch + b;
        const std::int64_t label = labels[static_cast<std::size_t>(sample)];
        total += std::log(sum) - (kernels::widen(row[label]) - largest);
        for (std::int64_t k = 0; k < classes; ++k) logits_[static_cast<std::size_t>(sample * classes + k)] = kernels::widen(row[k]);
        for (std::int64_t k = 0; k < classes; ++k) {
          const double p = e[static_cast<std::size_t>(k)] / sum;
          dz[b * classes + k] = static_cast<float>((p - (k == label ? 1.0 : 0.0)) / static_cast<double>(micro_batch) * scale_);
        }
      }
      return total;
    });
  }
  /// The forward and backward passes of mean squared error (see the other overload).
  float backward(std::span<const stream_type> input, std::span<const float> targets)
    requires(Opts.loss == loss::mean_squared_error)
  {
    check_input(input);
    const int last = static_cast<int>(node_count_v<G>) - 1;
    const std::int64_t count = table()[static_cast<std::size_t>(last)].out.elements();
    if (static_cast<std::int64_t>(targets.size()) != count * gradient_accumulation)
      throw std::invalid_argument("ipu::trainer: " + std::to_string(targets.size()) + " targets; the output has " +
                                  std::to_string(count) + " elements" +
                                  (gradient_accumulation > 1 ? " for each of " + std::to_string(gradient_accumulation) + " micro-batches" : ""));
    return run_window(input, last, count, [&](runtime::training_pass<element_type>& pass, std::int64_t m) {
      const element_type* y = pass.value(last);
      float* dy = pass.grad_of(last);
      double total = 0;
      for (std::int64_t e = 0; e < count; ++e) {
        const double d = static_cast<double>(kernels::widen(y[e])) - targets[static_cast<std::size_t>(m * count + e)];
        total += d * d;
        dy[e] = static_cast<float>(2 * d / static_cast<double>(count) * scale_);
      }
      return total;
    });
  }

  /// Applies the optimiser to the weights with the last `backward`'s gradients, at the
  /// schedule's rate, and counts a step; in "16.16" rounds the weights and the state to f16.
  /// With dynamic loss scaling, gradients holding an infinity or a NaN are not applied: the
  /// step is skipped (`skipped_steps()`) and the scale halved.
  void update() {
    if (overflow_)
      logging::warn("trainer", "step ", steps_ + skipped_ + 1, ": a gradient is not finite (an f16 overflow, or a NaN); ",
                    Opts.loss_scaling.dynamic ? "the step is skipped and the loss scale halved"
                                              : "the update applies it: lower the loss scale or scale it dynamically");
    if constexpr (Opts.loss_scaling.dynamic) {
      if (overflow_) {
        scale_ = std::max(1.0f, scale_ / 2);
        clean_steps_ = 0;
        ++skipped_;
        return;
      }
      if (++clean_steps_ == Opts.loss_scaling.growth_interval) scale_ *= 2, clean_steps_ = 0;
    }
    const optimizer_step o = optimizer_step::of(opts.optimizer, learning_rate(), steps_ + 1);
    if constexpr (faithful) {
      image_->update([&](int j) {
        std::size_t l = 0;
        while (weights_[l].node_index() != j) ++l;
        read_update_state(l);
        update_layer(o, l);
        write_update_state(l);
      });
    } else {
      for (std::size_t l = 0; l < weights_.size(); ++l) update_layer(o, l);
    }
    ++steps_;
  }

  /// The bytes `tile` held, by category, while step `step` of the training plan ran, measured
  /// in the last training step (`ipu::training_plan::usage` gives the plan's).
  training_bytes measured_usage(int tile, int step) const
    requires(Mode == execution_mode::faithful)
  {
    return image_->measured_usage(tile, step);
  }
  /// One past the highest byte any buffer of `tile` has reached, its size aligned
  /// (`ipu::training_plan::extent_on` gives the plan's).
  std::int64_t measured_extent(int tile) const
    requires(Mode == execution_mode::faithful)
  {
    return image_->measured_extent(tile);
  }

  /// The training step's steps as the training plan (`ipu::training<G, Opts>` on `Tgt`) orders
  /// them, each with the cycle model's estimate and the mean host time measured here per
  /// micro-batch (forward and backward steps) and per update, and the cycle model of a window
  /// over the pipeline's stages (see `ipu/train/profile.hpp`).
  training_profile profile() const {
    training_profile p(plan_v<ipu::training<G, Opts>, Tgt, PlanOpts>, Tgt::name);
    p.set_steps_measured(passes_);
    const int last = static_cast<int>(node_count_v<G>) - 1;  // its backward step holds the loss (a fused softmax's too)
    const auto& runner = [&]() -> const auto& {
      if constexpr (pipelined) return *pipe_;
      else return *pass_;
    }();
    for (int j = 0; j < static_cast<int>(node_count_v<G>); ++j) {
      if (passes_ > 0) {
        const double n = static_cast<double>(passes_);
        p.set_host_seconds(step_phase::forward, j, runner.forward_seconds(j) / n);
        p.set_host_seconds(step_phase::recompute, j, runner.recompute_seconds(j) / n);
        p.set_host_seconds(step_phase::backward, j, (runner.backward_seconds(j) + (j == last ? loss_seconds_ : 0)) / n);
      }
      if (steps_ > 0) p.set_host_seconds(step_phase::update, j, update_seconds_[static_cast<std::size_t>(j)] / static_cast<double>(steps_));
    }
    return p;
  }

  /// Everything but the weights that the next steps depend on (see `trainer_state`).
  trainer_state state() const {
    return {steps_, skipped_, clean_steps_, scale_, seed_, state_};
  }
  /// Continues from `w` and `s`, as if this trainer had taken the steps that led to them:
  /// the next steps give the bits they would have given there. `w` is checked as the
  /// constructor checks it (in "16.16" rounded to the nearest f16, which leaves a trainer's
  /// own weights as they are). Throws `std::invalid_argument` if `s` does not fit this trainer
  /// (negative counts, a loss scale below 1, optimiser state of other sizes, naming the first
  /// that differs) and `weight_error` for bad weights; on a throw, the trainer is unchanged.
  void restore(const ipu::weights<G>& w, const trainer_state& s) {
    w.validate();
    if (s.steps < 0 || s.skipped_steps < 0 || s.clean_steps < 0)
      throw std::invalid_argument("ipu::trainer::restore: negative step counts");
    if (!(s.loss_scale >= 1) || !std::isfinite(s.loss_scale))
      throw std::invalid_argument("ipu::trainer::restore: the loss scale is " + std::to_string(s.loss_scale) +
                                  ", not a finite value of at least 1");
    if (s.optimizer.size() != state_.size())
      throw std::invalid_argument("ipu::trainer::restore: " + std::to_string(s.optimizer.size()) +
                                  " optimiser state tensors given; this trainer's optimiser keeps " +
                                  std::to_string(state_.size()) + " (" + std::to_string(opts.optimizer.state_tensors()) +
                                  " per weight tensor)");
    for (std::size_t k = 0; k < state_.size(); ++k)
      if (s.optimizer[k].size() != state_[k].size())
        throw std::invalid_argument("ipu::trainer::restore: optimiser state tensor " + std::to_string(k) + " has " +
                                    std::to_string(s.optimizer[k].size()) + " values, this trainer's " +
                                    std::to_string(state_[k].size()));
    weights_ = w;
    if constexpr (f16_weights)
      for (layer_weights& layer : weights_)
        for (const weight_tensor& t : layer.tensors())
          if (t.trainable) round_to_half(layer[t.name], rounding::nearest);
    steps_ = s.steps;
    skipped_ = s.skipped_steps;
    clean_steps_ = s.clean_steps;
    scale_ = s.loss_scale;
    seed_ = s.seed;
    state_ = s.optimizer;
    if constexpr (faithful)
      for (std::size_t l = 0; l < weights_.size(); ++l) write_update_state(l);
  }

  /// The weights (masters in f32, batch norms' running statistics included).
  const ipu::weights<G>& weights() const noexcept { return weights_; }
  /// The gradients of the last `step` or `backward`, in the weights' layout (zero for tensors
  /// that are not trainable): as the backward pass stored them (in f16 for an f16 graph),
  /// divided by the loss scale.
  const ipu::weights<G>& gradients() const noexcept { return grads_; }
  /// Steps taken: updates applied.
  std::int64_t steps() const noexcept { return steps_; }
  /// The loss scale of the next step (`train_options::loss_scaling`; 1 without).
  float loss_scale() const noexcept { return scale_; }
  /// Steps that dynamic loss scaling skipped for an overflow.
  std::int64_t skipped_steps() const noexcept { return skipped_; }
  /// Whether the last `backward`'s gradients hold an infinity or a NaN.
  bool overflowed() const noexcept { return overflow_; }
  /// The learning rate of the next update: the one `set_learning_rate` set, or else the
  /// optimiser's after the schedule.
  double learning_rate() const noexcept {
    return rate_ ? *rate_ : opts.schedule.rate(opts.optimizer.learning_rate.value(), steps_);
  }
  /// Makes the next updates use `rate` instead of the schedule's (as Keras'
  /// `LearningRateScheduler` sets the optimiser's rate), or the schedule's again with
  /// `std::nullopt`. Throws `std::invalid_argument` for a negative or non-finite rate. Not part
  /// of `state()`: a checkpoint resumes with the schedule's, until it is set again.
  void set_learning_rate(std::optional<double> rate) {
    if (rate && (!std::isfinite(*rate) || *rate < 0))
      throw std::invalid_argument("ipu::trainer::set_learning_rate: " + std::to_string(*rate) +
                                  " is not a finite rate of at least 0");
    rate_ = rate;
  }
  /// Softmax cross-entropy: the logits of the last `backward` (or `step`), in f32, a row of
  /// `classes` per sample: the output of the node the loss read (a final softmax's input).
  std::span<const float> logits() const noexcept
    requires(Opts.loss == loss::softmax_cross_entropy)
  {
    return logits_;
  }
  /// The host threads the trainer runs on.
  unsigned threads() const noexcept { return team_->size(); }
  /// The batch arithmetic: the micro-batch, the accumulation, and the replicas of the group
  /// the trainer is one of (1 alone).
  batch_sizes batches() const noexcept { return {micro_batch, gradient_accumulation, replicas_, 1}; }

 private:
  using pipeline_checked = decltype(detail::check_pipeline<G, Opts>());  // a compile error for a pipeline that cannot run
  static constexpr const auto& table() noexcept { return node_table_v<G>; }
  static constexpr bool faithful = Mode == execution_mode::faithful;

  /// At `debug`, the step just taken: its loss, the learning rate and the loss scale after it.
  void log_step(float loss) const {
    logging::debug("trainer", "step ", steps_ + skipped_, ": loss ", loss, ", learning rate ", learning_rate(), ", loss scale ",
                   scale_, overflow_ ? " (skipped)" : "");
  }
  using image_t = typename detail::trainer_image<Mode, ipu::training<G, Opts>, Tgt, PlanOpts, element_type>::type;

  /// The optimiser's update of layer `l`, at step `o`; in "16.16" rounds its weights and state
  /// to f16.
  void update_layer(const optimizer_step& o, std::size_t l) {
    const auto start = std::chrono::steady_clock::now();
    const int slots = opts.optimizer.state_tensors();
    std::size_t k = first_tensor_[l] * static_cast<std::size_t>(slots);  // the optimiser state, per tensor in order
    std::uint64_t tensor = first_tensor_[l];  // tensors before the layer
    for (const weight_tensor& t : weights_[l].tensors()) {
      std::span<float> s0, s1;
      if (slots > 0) s0 = state_[k];
      if (slots > 1) s1 = state_[k + 1];
      k += static_cast<std::size_t>(slots);
      ++tensor;  // the stream of stochastic rounding: the step, the tensor, the slot
      if (!t.trainable) continue;
      apply_update(o, weights_[l][t.name], grads_[l][t.name], s0, s1);
      if constexpr (f16_weights) {
        const std::uint64_t stream = rounding_stream(tensor);
        round_to_half(weights_[l][t.name], Opts.rounding, stream);
        round_to_half(s0, Opts.rounding, stream + 1);
        round_to_half(s1, Opts.rounding, stream + 2);
      }
    }
    update_seconds_[static_cast<std::size_t>(weights_[l].node_index())] += runtime::seconds_since(start);
  }

  /// Faithful mode: writes layer `l`'s trainable tensors and their optimiser state to the
  /// tiles, or reads them back.
  void write_update_state(std::size_t l) { move_update_state(l, true); }
  void read_update_state(std::size_t l) { move_update_state(l, false); }
  void move_update_state(std::size_t l, bool write) {
    const int j = weights_[l].node_index(), slots = opts.optimizer.state_tensors();
    std::size_t k = first_tensor_[l] * static_cast<std::size_t>(slots);
    int w = 0;
    for (const weight_tensor& t : weights_[l].tensors()) {
      if (t.trainable) {
        write ? image_->write_master(j, w, weights_[l][t.name]) : image_->read_master(j, w, weights_[l][t.name]);
        for (int slot = 0; slot < slots; ++slot)
          write ? image_->write_state(j, w, slot, state_[k + static_cast<std::size_t>(slot)])
                : image_->read_state(j, w, slot, state_[k + static_cast<std::size_t>(slot)]);
      }
      k += static_cast<std::size_t>(slots);
      ++w;
    }
  }

  /// Whether the loss reads the input of a final softmax as its logits (not dropped out).
  static constexpr bool fused_softmax() noexcept {
    const node& last = table()[node_count_v<G> - 1];
    return last.kind == op_of<ops::softmax> && last.input() == static_cast<int>(node_count_v<G>) - 2 &&
           !last.dropout[0].active();
  }

  /// Sets every gradient to zero.
  void clear_gradients() {
    for (std::size_t l = 0; l < grads_.size(); ++l) clear_gradients(l);
  }
  /// Sets the gradients of layer `l` to zero.
  void clear_gradients(std::size_t l) {
    for (const weight_tensor& t : grads_[l].tensors()) std::ranges::fill(grads_[l][t.name], 0.0f);
  }

  void check_input(std::span<const stream_type> input) const {
    const std::int64_t expected = table()[0].out.elements() * gradient_accumulation;
    if (static_cast<std::int64_t>(input.size()) != expected)
      throw std::invalid_argument("ipu::trainer: the input has " + std::to_string(input.size()) + " elements, " +
                                  (gradient_accumulation > 1 ? "a step's " + std::to_string(gradient_accumulation) +
                                                                   " micro-batches of the graph's input have "
                                                             : std::string("the graph's input has ")) +
                                  std::to_string(expected));
  }

  /// The dropout masks' step of micro-batch `micro` of this step on this replica (the step
  /// itself without accumulation and replicas).
  std::int64_t dropout_step(std::int64_t micro) const noexcept {
    return ((steps_ + skipped_) * gradient_accumulation + micro) * replicas_ + rank_;
  }

  /// A step's passes: the forward and the backward pass of each micro-batch of `input`, one
  /// after another, or as the pipeline schedules them. `loss(pass, m)` sets the (scaled)
  /// gradient of node `from`'s output for micro-batch `m` in `pass` and returns the
  /// micro-batch's summed loss. Leaves the step's gradients in `grads_` and returns the mean
  /// loss: the sum over the micro-batches, over `per_micro` values per micro-batch.
  template <class Loss>
  float run_window(std::span<const stream_type> input, int from, std::int64_t per_micro, Loss&& loss) {
    micro_loss_.assign(static_cast<std::size_t>(gradient_accumulation), 0.0);
    std::ranges::fill(layer_overflow_, 0);
    const auto timed = [&](runtime::training_pass<element_type>& pass, std::int64_t m) {
      const auto start = std::chrono::steady_clock::now();
      micro_loss_[static_cast<std::size_t>(m)] = loss(pass, m);
      loss_seconds_ += runtime::seconds_since(start);
    };
    if constexpr (pipelined) {
      window_hooks<decltype(timed)> hooks{*this, input, timed, from};
      pipe_->run(hooks);
      passes_ += gradient_accumulation;
    } else {
      const std::int64_t in = table()[0].out.elements();
      for (std::int64_t m = 0; m < gradient_accumulation; ++m) {
        forward(input.subspan(static_cast<std::size_t>(m * in), static_cast<std::size_t>(in)), m);
        run_backward(from, [&] { timed(*pass_, m); });
      }
    }
    end_window();
    double total = 0;
    for (const double l : micro_loss_) total += l;
    if (reducer_ != nullptr && replicas_ > 1) total = reduce_replicas(total);
    return static_cast<float>(total / static_cast<double>(per_micro * gradient_accumulation * replicas_));
  }

  /// Sums the step's gradients of the trainable tensors, and whether any is not finite, over
  /// the replicas (their mean with `gradient_reduction::mean`); returns the replicas' summed
  /// loss, of which this one's is `total`.
  double reduce_replicas(double total) {
    flat_.clear();
    for (const layer_weights& layer : grads_)
      for (const weight_tensor& t : layer.tensors())
        if (t.trainable) flat_.insert(flat_.end(), t.values.begin(), t.values.end());
    reducer_->sum(flat_);
    std::size_t at = 0;
    for (layer_weights& layer : grads_)
      for (const weight_tensor& t : layer.tensors())
        if (t.trainable)
          for (float& g : layer[t.name]) {
            const float sum = flat_[at++];
            g = Opts.gradient_reduction == gradient_reduction::mean ? sum / static_cast<float>(replicas_) : sum;
            overflow_ = overflow_ || !std::isfinite(g);
          }
    std::array<double, 2> totals{total, overflow_ ? 1.0 : 0.0};
    reducer_->sum(totals);
    overflow_ = totals[1] > 0;
    return totals[0];
  }

  /// What the pipeline's stages do around their passes (see `runtime::pipeline::run`): each
  /// reads and writes only its own layers' weights and gradients.
  template <class Loss>
  struct window_hooks {
    trainer& t;
    std::span<const stream_type> input;
    Loss& compute_loss;
    int from;
    void begin(runtime::training_pass<element_type>& pass, int s, std::int64_t m) {
      const std::int64_t in = table()[0].out.elements();
      pass.begin(s == 0 ? input.data() + m * in : nullptr, t.masters(), t.gradient_spans(), t.seed_, t.dropout_step(m),
                 t.pipe_->nodes_of(s));
    }
    void forwarded(int s, std::int64_t) {
      for (const std::size_t l : t.stage_layers_[static_cast<std::size_t>(s)]) t.round_running(l);
    }
    void before_backward(int s, std::int64_t) {
      for (const std::size_t l : t.stage_layers_[static_cast<std::size_t>(s)]) t.clear_gradients(l);
    }
    int loss(runtime::training_pass<element_type>& pass, std::int64_t m) {
      compute_loss(pass, m);
      return from;
    }
    void backwarded(int s, std::int64_t) {
      for (const std::size_t l : t.stage_layers_[static_cast<std::size_t>(s)]) t.finish_gradients(l);
    }
  };

  std::span<layer_weights> masters() noexcept { return {weights_.begin(), weights_.end()}; }
  std::span<layer_weights> gradient_spans() noexcept { return {grads_.begin(), grads_.end()}; }

  /// The backward pass of one micro-batch from node `from`, after `loss()` sets the (scaled)
  /// gradient of its output; then each layer's gradients finished (`finish_gradients`).
  template <class Loss>
  void run_backward(int from, Loss&& loss) {
    if constexpr (faithful) {
      image_->backward(from, loss);
    } else {
      loss();
      pass_->backward(from);
    }
    for (std::size_t l = 0; l < weights_.size(); ++l) finish_gradients(l);
  }

  /// Layer `l`'s gradients of a micro-batch: notes whether any is not finite, divides them by
  /// the loss scale, and with accumulation adds them to the step's.
  void finish_gradients(std::size_t l) {
    bool overflow = false;
    for (const weight_tensor& t : grads_[l].tensors()) {
      std::span<float> g = grads_[l][t.name];
      for (float& v : g) {
        overflow = overflow || !std::isfinite(v);
        if (scale_ != 1) v /= scale_;
      }
      if constexpr (gradient_accumulation > 1) {
        std::span<float> a = accumulated_[l][t.name];
        for (std::size_t i = 0; i < g.size(); ++i) a[i] += g[i];
      }
    }
    if (overflow) layer_overflow_[l] = 1;
  }

  /// Ends a step's passes: with accumulation, the step's gradients from the micro-batches'
  /// (their mean or sum), the sums cleared for the next step; whether any gradient is not finite.
  void end_window() {
    overflow_ = std::ranges::any_of(layer_overflow_, [](char o) { return o != 0; });
    if constexpr (gradient_accumulation > 1) {
      constexpr float n = static_cast<float>(gradient_accumulation);
      for (std::size_t l = 0; l < grads_.size(); ++l)
        for (const weight_tensor& t : grads_[l].tensors()) {
          std::span<float> g = grads_[l][t.name], a = accumulated_[l][t.name];
          for (std::size_t i = 0; i < g.size(); ++i) {
            g[i] = Opts.gradient_reduction == gradient_reduction::mean ? a[i] / n : a[i];
            a[i] = 0;
            overflow_ = overflow_ || !std::isfinite(g[i]);
          }
        }
    }
  }

  /// The forward pass of micro-batch `micro`, its layers' gradients cleared first; in an f16
  /// graph, rounds the running statistics it updated to f16.
  void forward(std::span<const stream_type> input, std::int64_t micro) {
    ++passes_;
    clear_gradients();
    if constexpr (faithful) {
      pass_->begin(input.data(), masters(), gradient_spans(), seed_, dropout_step(micro));
      image_->forward();
    } else {
      pass_->forward(input.data(), masters(), gradient_spans(), seed_, dropout_step(micro));
    }
    for (std::size_t l = 0; l < weights_.size(); ++l) round_running(l);
  }

  /// In an f16 graph, rounds layer `l`'s tensors that the forward pass updates (batch norms'
  /// running statistics) to f16, as `update` numbers the tensors (slot 3 of each).
  void round_running(std::size_t l) {
    if constexpr (std::is_same_v<element_type, f16>) {
      std::uint64_t tensor = first_tensor_[l];
      for (const weight_tensor& t : weights_[l].tensors())
        if (++tensor; !t.trainable) round_to_half(weights_[l][t.name], Opts.rounding, rounding_stream(tensor) + 3);
    } else {
      (void)l;
    }
  }

  /// The stream of stochastic rounding of tensor `tensor` (numbered from 1 in the weights'
  /// order) at this step: its slots 0 to 2 round the weights and the optimiser's state after an
  /// update, its slot 3 the running statistics after a forward pass.
  std::uint64_t rounding_stream(std::uint64_t tensor) const noexcept {
    return detail::mix64(detail::mix64(seed_ ^ detail::mix64(static_cast<std::uint64_t>(steps_))) ^ tensor * 4);
  }

  ipu::weights<G> weights_;
  ipu::weights<G> grads_;
  std::vector<std::vector<float>> state_;  // the optimiser's, `state_tensors()` per weight tensor
  std::vector<std::size_t> first_tensor_;  // per layer: the tensors of the layers before it
  std::unique_ptr<runtime::team> team_;
  std::unique_ptr<runtime::training_pass<element_type>> pass_;  // without pipelining
  std::unique_ptr<runtime::pipeline<element_type>> pipe_;         // pipelined
  std::vector<std::vector<std::size_t>> stage_layers_;            // pipelined: per stage, its layers
  ipu::weights<G> accumulated_;                                   // with accumulation: the step's sums so far
  std::vector<char> layer_overflow_;                              // per layer: a gradient of this step is not finite
  std::vector<double> micro_loss_;                                // per micro-batch: its summed loss
  gradient_reducer* reducer_ = nullptr;                           // the replicas', if any
  int replicas_ = 1, rank_ = 0;                                   // the replicas, and this one's index
  std::vector<float> flat_;                                       // the gradients summed over the replicas
  image_t image_;  // faithful mode: the tiles' memory
  std::int64_t steps_ = 0;
  std::uint64_t seed_ = 0;
  float scale_ = static_cast<float>(Opts.loss_scaling.factor.value());  // the loss scale of the next step
  std::int64_t clean_steps_ = 0;  // dynamic loss scaling: updates since the last overflow or growth
  std::int64_t skipped_ = 0;
  bool overflow_ = false;
  std::int64_t passes_ = 0;  // forward and backward passes run
  std::optional<double> rate_;  // set_learning_rate's, if set
  std::vector<float> logits_;   // the last softmax cross-entropy's, batch x classes
  double loss_seconds_ = 0;  // the loss's host time, summed over the passes
  std::vector<double> update_seconds_ = std::vector<double>(node_count_v<G>, 0.0);  // per node, summed over the updates
};

/// `ipu::trainer` in faithful mode: every tile's memory image, each buffer where the training
/// plan places it, measured (see `runtime/faithful_training.hpp`).
///
/// ```
/// ipu::faithful_trainer<net_t, ipu::mk2, opts> faithful{w};
/// CHECK(faithful.step(x, labels) == fast.step(x, labels));            // the same bits
/// CHECK(faithful.measured_usage(0, s) == plan.usage(0, s));           // the plan's bytes
/// ```
template <Graph G, Target Tgt, train_options Opts = train_options{}, options PlanOpts = options{}>
using faithful_trainer = trainer<G, Tgt, Opts, PlanOpts, execution_mode::faithful>;

}  // namespace ipu
