#pragma once
/// \file
/// `ipu::estimator`: TensorFlow's `IPUEstimator` loops (seed 004, section 4) over an
/// `ipu::trainer` for classifiers trained with softmax cross-entropy: `train(input_fn, steps)`
/// and `evaluate(input_fn, checkpoint, steps)`, with the model's state in checkpoints in a
/// `model_dir`.
///
/// ```
/// ipu::estimator<net_t, ipu::mk2, opts> est{ipu::weights<net_t>::random(1),
///                                          {.model_dir = "run", .save_checkpoints_steps = 500}};
/// for (int epoch = 0; epoch < 4; ++epoch) {
///   est.train([&] { return train_batches(epoch); }, steps_per_epoch);
///   ipu::eval_result r = est.evaluate([&] { return test_batches(); }, est.latest_checkpoint());
/// }
/// ```
///
/// - **Input.** An `input_fn` returns a range of labelled batches, called once per `train` or
///   `evaluate` (TensorFlow's `input_fn` returning a `tf.data.Dataset` of `(features, labels)`).
///   Each element is a pair or tuple (`std::pair`, `std::tuple`, range-v3's `views::zip`): the
///   batch's input values, anything the input tensor's `assign` takes (a range-v3 `views::chunk`
///   of floats, an `ipu::tensor`), and its `batch` labels, a range of integers. The range runs on
///   a thread of its own, `PrefetchDepth` batches ahead of the steps (`ipu::prefetcher`); an
///   exception it throws, or a batch of the wrong size, comes out of `train` or `evaluate` after
///   the steps before it.
/// - **State.** The estimator starts from the latest checkpoint in `model_dir` if there is
///   one (its weights, optimiser state and step: the run continues where it stopped), else
///   from `estimator_config::warm_start_from`'s weights if given (TensorFlow's
///   `warm_start_from`: the weights only, at step 0), else from the weights it is given.
/// - **Checkpoints.** `train` writes `ckpt-<step>.safetensors` to `model_dir` every
///   `save_checkpoints_steps` steps and when it returns, keeping the `keep_checkpoint_max`
///   latest (`ipu/checkpoint.hpp`; atomic writes).
/// - **Steps.** `train(input_fn, steps)` takes `steps` more steps, or fewer if the input ends
///   first (TensorFlow's `OutOfRangeError`); without `steps`, until the input ends. A step
///   takes `train_options::gradient_accumulation` batches, its micro-batches, pipelined as
///   `train_options::pipeline` says for a graph on several IPUs; input that ends within a step
///   leaves that step out. `evaluate`
///   runs inference (an `ipu::engine`: running statistics, no dropout) with a checkpoint's
///   weights on `steps` batches or all of them.
/// - **Replicas.** On an `ipu::replicated<System, R>` target a step takes
///   `gradient_accumulation x R` batches, replica `r` the `r`-th `gradient_accumulation` of them
///   (an `ipu::replicated_trainer`), and `evaluate` runs `R` batches at once
///   (an `ipu::replicated_engine`).

#include <ipu/checkpoint.hpp>
#include <ipu/data/pipeline.hpp>
#include <ipu/model.hpp>
#include <ipu/runtime/engine.hpp>
#include <ipu/runtime/replicated_engine.hpp>
#include <ipu/train/replicated.hpp>
#include <ipu/train/trainer.hpp>

#include <array>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <optional>
#include <ostream>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace ipu {

/// How an estimator keeps its state (TensorFlow's `RunConfig` and `warm_start_from`).
struct estimator_config {
  std::filesystem::path model_dir{};                   ///< its checkpoints; created if missing
  std::int64_t save_checkpoints_steps = 1000;          ///< a checkpoint every this many steps (0: only when `train` returns)
  int keep_checkpoint_max = 5;                         ///< the checkpoints kept, the latest (TensorFlow's default)
  std::optional<std::filesystem::path> warm_start_from{};  ///< weights to start from when `model_dir` has no checkpoint
  std::int64_t log_step_count_steps = 100;             ///< a log line every this many steps (0: none)
  std::ostream* log = nullptr;                         ///< where log lines go (none if null)
};

/// What a call of `estimator::train` did.
struct train_result {
  std::int64_t steps = 0;        ///< steps taken by this call
  std::int64_t global_step = 0;  ///< steps taken by the model in all, after this call
  double loss = 0;               ///< mean loss over this call's steps
  bool input_ended = false;      ///< the input ended before `steps`
  std::filesystem::path checkpoint;  ///< the checkpoint of `global_step`, written when it returned if none was
};

/// What `estimator::evaluate` measured.
struct eval_result {
  metrics values;                        ///< loss, accuracy and top-5 accuracy over the samples
  std::int64_t steps = 0;                ///< batches evaluated
  std::int64_t samples = 0;              ///< `steps` x the batch
  std::optional<std::int64_t> global_step;  ///< the step of the checkpoint, if a trainer wrote it
  std::filesystem::path checkpoint;      ///< the checkpoint evaluated
};

/// An element of an estimator's input (see the file comment): a pair or tuple whose first
/// member `input_tensor_t<G>` takes (a tensor, or values its `assign` takes) and whose second
/// is a range of integer labels.
template <class P, class G>
concept LabelledBatchOf =
    requires(P& p) {
      std::get<0>(p);
      std::get<1>(p);
    } && std::tuple_size<std::remove_cvref_t<P>>::value == 2 &&
    (std::assignable_from<input_tensor_t<G>&, decltype(std::get<0>(std::declval<P&>()))> ||
     requires(input_tensor_t<G>& t, P& p) { t.assign(std::get<0>(p)); }) &&
    InputIterable<std::remove_reference_t<decltype(std::get<1>(std::declval<P&>()))>> &&
    std::integral<std::remove_cvref_t<iterable_reference_t<std::remove_reference_t<decltype(std::get<1>(std::declval<P&>()))>>>>;

/// A batch of `G`'s input and its labels, as an estimator's infeed holds it.
template <Graph G>
struct labelled_batch {
  static constexpr std::int64_t batch = batch_size_v<G>;  ///< samples
  input_tensor_t<G> inputs;                                ///< the input tensor
  std::array<std::int32_t, static_cast<std::size_t>(batch)> labels{};  ///< a class per sample

  /// Takes a pair's input values (a tensor, or values `input_tensor_t<G>::assign` takes) and
  /// labels (a range of `batch` integers). Throws `std::invalid_argument` for a wrong count.
  template <LabelledBatchOf<G> P>
  void assign(P&& pair) {
    if constexpr (std::assignable_from<input_tensor_t<G>&, decltype(std::get<0>(pair))>) {
      inputs = std::get<0>(pair);
    } else {
      inputs.assign(std::get<0>(pair));
    }
    std::size_t n = 0;
    for (auto&& label : std::get<1>(pair)) {
      if (n == labels.size())
        throw std::invalid_argument("ipu::labelled_batch: more than " + std::to_string(batch) + " labels for a batch of " +
                                    std::to_string(batch));
      labels[n++] = static_cast<std::int32_t>(label);
    }
    if (n != labels.size())
      throw std::invalid_argument("ipu::labelled_batch: " + std::to_string(n) + " labels for a batch of " +
                                  std::to_string(batch));
  }
};

/// A function an estimator takes for input: called with no argument, it returns a range of
/// labelled batches of `G` (see the file comment).
template <class F, class G>
concept InputFn = std::invocable<F&> && InputIterable<std::invoke_result_t<F&>> &&
                  Feedable<iterable_reference_t<std::invoke_result_t<F&>>, labelled_batch<G>>;

/// Trains and evaluates classifier `G` in `model_dir` (see the file comment). One call at a time.
template <Graph G, Target Tgt, train_options Opts = train_options{}, options PlanOpts = options{}, int PrefetchDepth = 4>
class estimator {
  static_assert(Opts.loss == loss::softmax_cross_entropy,
                "ipu::estimator trains classifiers: its train_options need loss::softmax_cross_entropy");
  static_assert(PrefetchDepth >= 1 && PrefetchDepth <= max_prefetch_depth,
                "ipu::estimator: the prefetch depth must be 1 to 255, as TensorFlow's prefetch_depth");

 public:
  using trainer_type = trainer_for_t<G, Tgt, Opts, PlanOpts>;  ///< what trains it: a `trainer`, or a `replicated_trainer`
  using engine_type = engine_for_t<G, Tgt, PlanOpts>;          ///< what `evaluate` runs: an `engine`, or a `replicated_engine`
  using batch_type = labelled_batch<G>;                        ///< what its infeed holds
  static constexpr std::int64_t micro_batch = batch_size_v<G>;  ///< samples per batch of the input: the graph's batch
  static constexpr std::int64_t batch = trainer_type::batch;     ///< samples per step: `gradient_accumulation` x replicas batches of the input
  static constexpr std::int64_t classes = output_tensor_t<G>::size() / micro_batch;  ///< outputs per sample

  /// An estimator in `config.model_dir`, starting as the file comment says; `initial` is used
  /// when there is neither a checkpoint nor a warm start. Throws `checkpoint_error` if the
  /// latest checkpoint or the warm start does not fit `G`, `std::invalid_argument` for a
  /// config without `model_dir` or with negative counts.
  estimator(const ipu::weights<G>& initial, estimator_config config, trainer_config trainer = {})
      : config_(checked(std::move(config))), latest_(ipu::latest_checkpoint(config_.model_dir)),
        trainer_(!latest_ && config_.warm_start_from ? load_weights<G>(*config_.warm_start_from) : initial, trainer) {
    std::filesystem::create_directories(config_.model_dir);
    if (latest_) restore_checkpoint(*latest_, trainer_);
  }

  /// Takes `steps` steps on `input_fn()`'s batches, or until they end (all of them without
  /// `steps`), saving checkpoints as the file comment says. Rethrows an error of the input or
  /// of a batch (the steps before it stand, and are saved); throws `checkpoint_error` if a
  /// checkpoint cannot be written.
  template <InputFn<G> F>
  train_result train(F&& input_fn, std::optional<std::int64_t> steps = std::nullopt) {
    if (steps && *steps < 0) throw std::invalid_argument("ipu::estimator::train: steps must be at least 0");
    train_result r;
    const auto start = std::chrono::steady_clock::now();
    auto last_log = start;
    std::int64_t logged_step = global_step();
    const auto finish = [&] {  // a checkpoint of the step reached, unless there is one
      const auto found = checkpoints_in(config_.model_dir);
      r.checkpoint = !found.empty() && found.back().first == global_step() ? found.back().second : save();
      r.global_step = global_step();
    };
    try {
      channel<batch_type, PrefetchDepth> in;
      auto&& range = std::invoke(input_fn);
      prefetcher feeding(in, range);
      // A step takes one batch where it lies, or gathers its micro-batches, one batch each,
      // into `x` and `y`; false when the input ended first (a partial step is not taken).
      constexpr std::int64_t accumulation = batch / micro_batch;  // batches per step
      constexpr std::int64_t micro_values = input_tensor_t<G>::size();
      std::vector<typename trainer_type::stream_type> x(static_cast<std::size_t>(accumulation > 1 ? micro_values * accumulation : 0));
      std::vector<std::int32_t> y(static_cast<std::size_t>(accumulation > 1 ? batch : 0));
      const auto take_step = [&](float& loss) {
        if constexpr (accumulation == 1) {
          return in.consume([&](const batch_type& b) { loss = trainer_.step(b.inputs.span(), b.labels); });
        } else {
          std::int64_t taken = 0;
          while (taken < accumulation && in.consume([&](const batch_type& b) {
            std::ranges::copy(b.inputs.span(), x.begin() + taken * micro_values);
            std::ranges::copy(b.labels, y.begin() + taken * micro_batch);
          }))
            ++taken;
          if (taken < accumulation) return false;
          loss = trainer_.step(x, y);
          return true;
        }
      };
      for (float loss = 0; !steps || r.steps < *steps; ++r.steps) {
        if (!take_step(loss)) {
          r.input_ended = steps.has_value();
          break;
        }
        r.loss += loss;
        const std::int64_t step = global_step();
        if (config_.save_checkpoints_steps > 0 && step % config_.save_checkpoints_steps == 0) r.checkpoint = save();
        if (config_.log != nullptr && config_.log_step_count_steps > 0 && step % config_.log_step_count_steps == 0) {
          const auto now = std::chrono::steady_clock::now();
          const double seconds = std::chrono::duration<double>(now - last_log).count();
          char line[160];
          std::snprintf(line, sizeof line, "ipu::estimator: step %lld, loss = %.4f (%.3f s, %.2f steps/s)\n",
                        static_cast<long long>(step), static_cast<double>(loss), seconds,
                        static_cast<double>(step - logged_step) / std::max(seconds, 1e-9));
          *config_.log << line << std::flush;
          last_log = now, logged_step = step;
        }
      }
      in.cancel();  // the producer ends at its next push
      feeding.wait();
    } catch (...) {
      finish();
      throw;
    }
    if (r.steps > 0) r.loss /= static_cast<double>(r.steps);
    finish();
    return r;
  }

  /// The loss and accuracies of the weights in `checkpoint` (by default the latest in
  /// `model_dir`) on `steps` of `input_fn()`'s batches, or all of them. Throws
  /// `checkpoint_error` if there is no checkpoint or it does not fit `G`; rethrows an error of
  /// the input or of a batch.
  template <InputFn<G> F>
  eval_result evaluate(F&& input_fn, std::optional<std::filesystem::path> checkpoint = std::nullopt,
                       std::optional<std::int64_t> steps = std::nullopt) {
    if (steps && *steps < 0) throw std::invalid_argument("ipu::estimator::evaluate: steps must be at least 0");
    if (!checkpoint) checkpoint = ipu::latest_checkpoint(config_.model_dir);
    if (!checkpoint)
      throw checkpoint_error("ipu::estimator::evaluate: no checkpoint in " + config_.model_dir.string() +
                             " (train first, or name a checkpoint)");
    const safetensors::file file = safetensors::file::read(*checkpoint);
    eval_result r;
    r.checkpoint = *checkpoint;
    if (file.metadata("ipu.steps"))
      r.global_step = detail::metadata_number<std::int64_t>(file, "ipu.steps") +
                      detail::metadata_number<std::int64_t>(file, "ipu.skipped_steps");
    engine_type engine{detail::weights_in<G>(file)};
    constexpr std::size_t replicas = static_cast<std::size_t>(replicas_v<Tgt>);  // batches run at once
    std::vector<input_tensor_t<G>> xs(replicas);
    std::vector<output_tensor_t<G>> ys(replicas);
    std::vector<decltype(batch_type::labels)> labels(replicas);
    std::vector<float> rows(static_cast<std::size_t>(micro_batch * classes));
    detail::metric_sums sums;
    channel<batch_type, PrefetchDepth> in;
    auto&& range = std::invoke(input_fn);
    prefetcher feeding(in, range);
    for (std::size_t count = replicas; count == replicas;) {
      count = 0;
      while (count < replicas && (!steps || r.steps < *steps) && in.consume([&](const batch_type& b) {
        for (std::size_t i = 0; i < b.labels.size(); ++i)
          if (b.labels[i] < 0 || b.labels[i] >= classes)
            throw std::invalid_argument("ipu::estimator::evaluate: label " + std::to_string(i) + " of batch " +
                                        std::to_string(r.steps) + " is " + std::to_string(b.labels[i]) + "; the model has " +
                                        std::to_string(classes) + " classes");
        xs[count] = b.inputs;
        labels[count] = b.labels;
      })) {
        ++count, ++r.steps;
      }
      engine.infer(std::span<const input_tensor_t<G>>(xs).first(count), std::span<output_tensor_t<G>>(ys).first(count));
      for (std::size_t k = 0; k < count; ++k) {
        for (std::size_t v = 0; v < rows.size(); ++v) rows[v] = static_cast<float>(ys[k][v]);
        sums.add(rows, labels[k], micro_batch, classes, detail::probabilities<G>());
      }
    }
    in.cancel();
    feeding.wait();
    r.values = sums.result();
    r.samples = sums.samples;
    return r;
  }

  /// The latest checkpoint in `model_dir`, if any (`tf.train.latest_checkpoint`).
  std::optional<std::filesystem::path> latest_checkpoint() const { return ipu::latest_checkpoint(config_.model_dir); }
  /// Steps taken by the model, skipped ones included (TensorFlow's `global_step`).
  std::int64_t global_step() const noexcept { return trainer_.steps() + trainer_.skipped_steps(); }
  /// The configuration.
  const estimator_config& config() const noexcept { return config_; }
  /// The trainer: weights, steps, learning rate.
  trainer_type& trainer() noexcept { return trainer_; }
  /// The trainer.
  const trainer_type& trainer() const noexcept { return trainer_; }

 private:
  static estimator_config checked(estimator_config c) {
    if (c.model_dir.empty()) throw std::invalid_argument("ipu::estimator: the config has no model_dir");
    if (c.save_checkpoints_steps < 0 || c.log_step_count_steps < 0)
      throw std::invalid_argument("ipu::estimator: save_checkpoints_steps and log_step_count_steps must be at least 0");
    if (c.keep_checkpoint_max < 1) throw std::invalid_argument("ipu::estimator: keep_checkpoint_max must be at least 1");
    return c;
  }

  /// Writes the checkpoint of the current step, then removes all but the latest kept.
  std::filesystem::path save() {
    const std::filesystem::path path = checkpoint_path(config_.model_dir, global_step());
    save_checkpoint(path, trainer_);
    detail::remove_older_checkpoints(config_.model_dir, config_.keep_checkpoint_max);
    return path;
  }

  estimator_config config_;
  std::optional<std::filesystem::path> latest_;  // the checkpoint it started from
  trainer_type trainer_;
};

}  // namespace ipu
