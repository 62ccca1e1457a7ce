#pragma once
/// \file
/// `ipu::model`: Keras' `fit`, `evaluate` and `predict` over an `ipu::trainer` (or its replicas), for
/// classifiers trained with softmax cross-entropy (seed 003, section 4.3: `model.fit(dataset,
/// epochs=...)`, a progress bar and a returned history).
///
/// ```
/// ipu::model<net_t, ipu::mk2, opts> model{ipu::weights<net_t>::random(1)};
/// ipu::checkpoints backup{"model_dir"};                   // saves every epoch; resumes from the latest
/// ipu::history h = model.fit(x, y, {.epochs = 4, .validation = {x_test, y_test}}, {&backup});
/// ipu::metrics m = model.evaluate(x_test, y_test);         // loss, accuracy, top-5 accuracy
/// ```
///
/// - **Data.** `x` holds the samples one after another, each as the graph's input stream
///   carries one sample (`ipu::input_tensor_t<G>::size() / batch` values); `y` one class per
///   sample. An epoch is `size / batch` steps over the samples shuffled for the epoch (a
///   permutation drawn from `fit_options::seed` and the epoch, the same on every platform);
///   the remainder of a batch is left out, as a static-shape device requires
///   (`drop_remainder=True`). `evaluate` and `predict` run every sample, through an
///   `ipu::engine` (inference: batch norms' running statistics, no dropout) with the model's
///   weights, padding the last batch.
/// - **Replicas.** On an `ipu::replicated<System, R>` target the model trains with an
///   `ipu::replicated_trainer` (a step's `batch` samples are `R` blocks, one per replica; the
///   gradients summed over them) and runs `evaluate` and `predict` on an
///   `ipu::replicated_engine`, a batch on every replica at once. A pipelined graph trains
///   pipelined on each replica, as its `train_options` say.
/// - **Position.** The epochs of `fit` count from the model's first step: `fit` trains from
///   the epoch and step its trainer has reached up to the end of epoch `fit_options::epochs`
///   (Keras' `epochs` with `initial_epoch` where the model stands). A model restored from a
///   checkpoint therefore continues the interrupted epoch at its next batch, and the run gives
///   the bits of an uninterrupted one.
/// - **Callbacks** (`ipu::callback`) see each step and epoch through a `training_session`:
///   `ipu::checkpoints` (Keras' `ModelCheckpoint` and `BackupAndRestore`), `ipu::early_stopping`
///   and `ipu::learning_rate_scheduler`.
/// - **Progress.** On a terminal, a bar redrawn in place with the step, the time per step, the
///   remaining time and the running loss and accuracy, as Keras prints it; otherwise a line per
///   epoch (`fit_options::verbose`).

#include <ipu/checkpoint.hpp>
#include <ipu/data/pipeline.hpp>
#include <ipu/graph/queries.hpp>
#include <ipu/runtime/engine.hpp>
#include <ipu/runtime/replicated_engine.hpp>
#include <ipu/runtime/weights.hpp>
#include <ipu/train/replicated.hpp>
#include <ipu/train/trainer.hpp>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <limits>
#include <numeric>
#include <optional>
#include <ostream>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#if __has_include(<unistd.h>)
#include <unistd.h>  // isatty
#endif

namespace ipu {

/// A model's loss and accuracies on a set of samples.
struct metrics {
  double loss = 0;           ///< mean softmax cross-entropy
  double accuracy = 0;       ///< fraction of samples whose largest output is their class
  double top5_accuracy = 0;  ///< fraction whose class is among the 5 largest outputs (all, with 5 classes or fewer)
};

/// What one epoch of `fit` measured.
struct epoch_logs {
  int epoch = 0;                   ///< from 0
  double loss = 0;                 ///< mean training loss over the epoch's steps run in this `fit`
  double accuracy = 0;             ///< training accuracy over the same steps (dropout active)
  std::optional<metrics> validation;  ///< `evaluate` on `fit_options::validation`, if given
  double seconds = 0;              ///< host time of the epoch's steps
  std::int64_t steps = 0;          ///< steps run in this `fit` (fewer than an epoch's when resumed)
  double learning_rate = 0;        ///< the rate of the epoch's last update
};

/// `fit`'s record, an entry per epoch it ran (Keras' `History.history`).
struct history {
  std::vector<epoch_logs> epochs;  ///< in order
};

/// What a step of `fit` measured.
struct batch_logs {
  int epoch = 0;            ///< from 0
  std::int64_t batch = 0;   ///< the step's batch within the epoch, from 0
  std::int64_t step = 0;    ///< steps taken by the model, this one included (`trainer::steps` plus skipped)
  float loss = 0;           ///< the batch's mean loss
  double accuracy = 0;      ///< the batch's accuracy
};

/// How `fit` reports progress.
enum class verbosity {
  automatic,  ///< a bar on a terminal, else a line per epoch
  bar,        ///< a bar, redrawn in place
  lines,      ///< a line per epoch
  silent,     ///< nothing
};

/// Labelled samples to evaluate on (`fit_options::validation`), of input values `T`.
template <class T>
struct labelled_samples {
  std::span<const T> inputs;               ///< the samples, one after another
  std::span<const std::int32_t> labels;    ///< a class per sample
  /// Whether there are any.
  bool empty() const noexcept { return labels.empty(); }
};

/// How `fit` trains, on input values `T` (`model::stream_type`).
template <class T = float>
struct fit_options {
  int epochs = 1;             ///< the epoch to train up to, counted from the model's first step
  bool shuffle = true;        ///< a new order of the samples each epoch; else their order
  std::uint64_t seed = 0;     ///< of the shuffles
  labelled_samples<T> validation{};  ///< evaluated after each epoch, if not empty
  verbosity verbose = verbosity::automatic;  ///< progress
  std::ostream* out = &std::cout;            ///< where progress goes
};

/// What a callback can see and do during `fit`.
class training_session {
 public:
  virtual ~training_session() = default;
  /// Steps taken, skipped ones included: the position in the data.
  virtual std::int64_t step() const = 0;
  /// Steps per epoch.
  virtual std::int64_t steps_per_epoch() const = 0;
  /// Writes the model's trainer to a checkpoint (`ipu::save_checkpoint`).
  virtual void save_checkpoint(const std::filesystem::path& path) const = 0;
  /// Restores the model's trainer from a checkpoint (`ipu::restore_checkpoint`).
  virtual void restore_checkpoint(const std::filesystem::path& path) = 0;
  /// The learning rate of the next update.
  virtual double learning_rate() const = 0;
  /// Overrides the learning rate (`trainer::set_learning_rate`).
  virtual void set_learning_rate(std::optional<double> rate) = 0;
  /// Ends `fit` after the current epoch.
  virtual void stop_training() = 0;
};

/// Called by `fit` around its steps and epochs (Keras' `tf.keras.callbacks.Callback`). Each
/// does nothing unless overridden.
class callback {
 public:
  virtual ~callback() = default;
  /// Before the first step; may restore a checkpoint, which moves the start.
  virtual void on_train_begin(training_session&) {}
  /// Before epoch `epoch`'s first step in this `fit`.
  virtual void on_epoch_begin(training_session&, int /*epoch*/) {}
  /// After each step.
  virtual void on_batch_end(training_session&, const batch_logs&) {}
  /// After each epoch, validation included.
  virtual void on_epoch_end(training_session&, const epoch_logs&) {}
  /// After the last step.
  virtual void on_train_end(training_session&) {}
};

/// The checkpoint of step `step` in a directory: `ckpt-<step>.safetensors`.
inline std::filesystem::path checkpoint_path(const std::filesystem::path& dir, std::int64_t step) {
  return dir / ("ckpt-" + std::to_string(step) + ".safetensors");
}

/// The checkpoints in `dir` by step, oldest first: the files named `ckpt-<step>.safetensors`
/// (a writer's temporary files are not).
inline std::vector<std::pair<std::int64_t, std::filesystem::path>> checkpoints_in(const std::filesystem::path& dir) {
  std::vector<std::pair<std::int64_t, std::filesystem::path>> found;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return found;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    constexpr std::string_view prefix = "ckpt-", suffix = ".safetensors";
    if (name.size() <= prefix.size() + suffix.size() || !name.starts_with(prefix) || !name.ends_with(suffix)) continue;
    std::int64_t step = 0;
    const char* first = name.data() + prefix.size();
    const char* last = name.data() + name.size() - suffix.size();
    const auto [end, err] = std::from_chars(first, last, step);
    if (err == std::errc{} && end == last && step >= 0) found.emplace_back(step, entry.path());
  }
  std::sort(found.begin(), found.end());
  return found;
}

/// The latest checkpoint in `dir` (TensorFlow's `tf.train.latest_checkpoint`), or nothing.
inline std::optional<std::filesystem::path> latest_checkpoint(const std::filesystem::path& dir) {
  const auto found = checkpoints_in(dir);
  if (found.empty()) return std::nullopt;
  return found.back().second;
}

namespace detail {
/// Removes the checkpoints in `dir` but the `keep` latest.
inline void remove_older_checkpoints(const std::filesystem::path& dir, int keep) {
  const auto found = checkpoints_in(dir);
  for (std::size_t k = 0; k + static_cast<std::size_t>(keep) < found.size(); ++k) {
    std::error_code ec;
    std::filesystem::remove(found[k].second, ec);
  }
}
}  // namespace detail

/// Saves the model to `dir` every `every_steps` steps and at each epoch's end
/// (`every_steps` 0: at each epoch's end only), keeping the `keep` latest; when `fit`
/// begins, restores the latest if there is one (Keras' `ModelCheckpoint` with
/// `BackupAndRestore`, TensorFlow's `model_dir`). Throws `checkpoint_error` from `fit` if a
/// file cannot be written, or if the latest does not fit the model.
class checkpoints : public callback {
 public:
  /// Checkpoints in `dir` (created if missing).
  explicit checkpoints(std::filesystem::path dir, std::int64_t every_steps = 0, int keep = 5)
      : dir_(std::move(dir)), every_(every_steps), keep_(keep) {
    if (every_steps < 0) throw std::invalid_argument("ipu::checkpoints: every_steps must be at least 0");
    if (keep < 1) throw std::invalid_argument("ipu::checkpoints: keep must be at least 1");
  }
  /// The directory.
  const std::filesystem::path& directory() const noexcept { return dir_; }
  /// The step of the checkpoint restored when `fit` began, if one was.
  std::optional<std::int64_t> restored_step() const noexcept { return restored_; }

  void on_train_begin(training_session& s) override {
    std::filesystem::create_directories(dir_);
    restored_.reset();
    if (const auto latest = latest_checkpoint(dir_)) {
      s.restore_checkpoint(*latest);
      restored_ = s.step();
    }
  }
  void on_batch_end(training_session& s, const batch_logs& b) override {
    if (every_ > 0 && b.step % every_ == 0) save(s);
  }
  void on_epoch_end(training_session& s, const epoch_logs&) override {
    if (every_ == 0 || s.step() % every_ != 0) save(s);
  }

 private:
  void save(const training_session& s) {
    s.save_checkpoint(checkpoint_path(dir_, s.step()));
    detail::remove_older_checkpoints(dir_, keep_);
  }

  std::filesystem::path dir_;
  std::int64_t every_;
  int keep_;
  std::optional<std::int64_t> restored_;
};

/// Stops `fit` after `patience` epochs in a row (at least one) in which the validation loss
/// (or, without validation data, the training loss) has not fallen by more than `min_delta`
/// below its lowest so far (Keras' `EarlyStopping`).
class early_stopping : public callback {
 public:
  /// See the class comment.
  explicit early_stopping(int patience = 0, double min_delta = 0) : patience_(patience), min_delta_(min_delta) {}
  /// The epoch after which it stopped `fit`, if it did.
  std::optional<int> stopped_epoch() const noexcept { return stopped_; }

  void on_train_begin(training_session&) override {
    best_ = std::numeric_limits<double>::infinity();
    waited_ = 0;
    stopped_.reset();
  }
  void on_epoch_end(training_session& s, const epoch_logs& e) override {
    const double value = e.validation ? e.validation->loss : e.loss;
    if (value < best_ - min_delta_) {
      best_ = value;
      waited_ = 0;
    } else if (++waited_ >= patience_) {
      stopped_ = e.epoch;
      s.stop_training();
    }
  }

 private:
  int patience_;
  double min_delta_;
  double best_ = std::numeric_limits<double>::infinity();
  int waited_ = 0;
  std::optional<int> stopped_;
};

/// Sets the learning rate at each epoch's start to `schedule(epoch, rate)`, `rate` being the
/// current one (Keras' `LearningRateScheduler`).
class learning_rate_scheduler : public callback {
 public:
  /// See the class comment.
  explicit learning_rate_scheduler(std::function<double(int, double)> schedule) : schedule_(std::move(schedule)) {}
  void on_epoch_begin(training_session& s, int epoch) override { s.set_learning_rate(schedule_(epoch, s.learning_rate())); }

 private:
  std::function<double(int, double)> schedule_;
};

namespace detail {
/// Whether `out` is standard output on a terminal.
inline bool is_terminal(const std::ostream* out) {
#if __has_include(<unistd.h>)
  return out == &std::cout && ::isatty(STDOUT_FILENO) != 0;
#else
  (void)out;
  return false;
#endif
}

/// `seconds` as Keras prints a duration: `"45s"`, `"3:05"` (minutes), `"1:02:03"` (hours).
inline std::string duration_text(double seconds) {
  const auto s = static_cast<long long>(std::llround(std::max(0.0, seconds)));
  char text[32];
  if (s < 60) std::snprintf(text, sizeof text, "%llds", s);
  else if (s < 3600) std::snprintf(text, sizeof text, "%lld:%02lld", s / 60, s % 60);
  else std::snprintf(text, sizeof text, "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
  return text;
}

/// A Keras-like progress display: `Epoch 2/4`, then, on a terminal,
/// `  312/1875 [====>.........................] - ETA: 33s - loss: 0.6012 - accuracy: 0.7890`
/// redrawn in place, ending as
/// `1875/1875 [==============================] - 40s 21ms/step - loss: 0.4327 - accuracy: 0.8450`.
class progress {
 public:
  progress(std::ostream* out, verbosity v)
      : out_(out), bar_(v == verbosity::bar || (v == verbosity::automatic && is_terminal(out))),
        silent_(v == verbosity::silent || out == nullptr) {}

  void begin_epoch(int epoch, int epochs, std::int64_t steps) {
    steps_ = steps;
    last_draw_ = {};
    if (!silent_) *out_ << "Epoch " << epoch + 1 << "/" << epochs << "\n" << std::flush;
  }
  /// After step `done` of the epoch, the `run`-th of this `fit` in it, `seconds` after its first.
  void step(std::int64_t done, std::int64_t run, double seconds, double loss, double accuracy) {
    if (!bar_ || silent_) return;
    const auto now = std::chrono::steady_clock::now();
    if (done != steps_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    const double per_step = seconds / static_cast<double>(std::max<std::int64_t>(run, 1));
    *out_ << "\r" << counter(done) << " - ETA: " << duration_text(per_step * static_cast<double>(steps_ - done))
          << values(loss, accuracy) << "   " << std::flush;
  }
  /// At the epoch's end, after `run` steps of this `fit` in it.
  void end_epoch(std::int64_t run, double seconds, double loss, double accuracy, const std::optional<metrics>& validation) {
    if (silent_) return;
    std::string line = counter(steps_) + " - " + duration_text(seconds) + " " +
                       std::to_string(std::llround(1000 * seconds / static_cast<double>(std::max<std::int64_t>(run, 1)))) +
                       "ms/step" + values(loss, accuracy);
    if (validation) line += " - val_loss: " + fixed(validation->loss) + " - val_accuracy: " + fixed(validation->accuracy);
    *out_ << (bar_ ? "\r" : "") << line << "\n" << std::flush;
  }

 private:
  static std::string fixed(double v) {
    char text[32];
    std::snprintf(text, sizeof text, "%.4f", v);
    return text;
  }
  static std::string values(double loss, double accuracy) {
    return " - loss: " + fixed(loss) + " - accuracy: " + fixed(accuracy);
  }
  std::string counter(std::int64_t done) const {
    const std::string total = std::to_string(steps_), now = std::to_string(done);
    constexpr int width = 30;
    const auto filled = static_cast<int>(steps_ > 0 ? done * width / steps_ : width);
    std::string bar(static_cast<std::size_t>(filled), '=');
    if (filled < width) bar += '>';
    bar.resize(width, '.');
    return std::string(total.size() - std::min(total.size(), now.size()), ' ') + now + "/" + total + " [" + bar + "]";
  }

  std::ostream* out_;
  bool bar_, silent_;
  std::int64_t steps_ = 0;
  std::chrono::steady_clock::time_point last_draw_{};
};

/// The number of the `count` rows of `rows` (`classes` values each) whose largest value is at
/// the row's label, and the number whose label is among the `k` largest.
inline std::pair<std::int64_t, std::int64_t> correct(std::span<const float> rows, std::span<const std::int32_t> labels,
                                                     std::int64_t count, std::int64_t classes, std::int64_t k) {
  std::int64_t top1 = 0, topk = 0;
  for (std::int64_t b = 0; b < count; ++b) {
    const float* row = rows.data() + b * classes;
    const float mine = row[labels[static_cast<std::size_t>(b)]];
    std::int64_t above = 0, level_before = 0;  // values above the label's; equal ones before it
    for (std::int64_t c = 0; c < classes; ++c) {
      above += row[c] > mine ? 1 : 0;
      level_before += row[c] == mine && c < labels[static_cast<std::size_t>(b)] ? 1 : 0;
    }
    const std::int64_t rank = above + level_before;  // ties go to the lower class, as argmax's first
    top1 += rank == 0 ? 1 : 0;
    topk += rank < k ? 1 : 0;
  }
  return {top1, topk};
}

/// A classifier's loss and correct answers summed over batches, for `metrics`.
struct metric_sums {
  double loss = 0;           ///< the samples' cross-entropies, summed
  std::int64_t top1 = 0;     ///< samples whose largest output is their class
  std::int64_t top5 = 0;     ///< samples whose class is among the 5 largest outputs
  std::int64_t samples = 0;  ///< samples added

  /// Adds the `count` rows of `rows` (`classes` values each: probabilities if `probabilities`,
  /// else logits) with their `labels`.
  void add(std::span<const float> rows, std::span<const std::int32_t> labels, std::int64_t count, std::int64_t classes,
           bool probabilities) {
    for (std::int64_t b = 0; b < count; ++b) {
      const float* row = rows.data() + b * classes;
      const std::int32_t label = labels[static_cast<std::size_t>(b)];
      if (probabilities) {
        loss -= std::log(std::max(static_cast<double>(row[label]), 1e-30));
      } else {  // -log softmax(row)[label], in double
        const double largest = *std::max_element(row, row + classes);
        double sum = 0;
        for (std::int64_t c = 0; c < classes; ++c) sum += std::exp(static_cast<double>(row[c]) - largest);
        loss -= static_cast<double>(row[label]) - largest - std::log(sum);
      }
    }
    const auto [right, in_top5] = correct(rows, labels, count, classes, 5);
    top1 += right;
    top5 += in_top5;
    samples += count;
  }
  /// The means (zeros before any sample).
  metrics result() const {
    if (samples == 0) return {};
    const auto n = static_cast<double>(samples);
    return {loss / n, static_cast<double>(top1) / n, static_cast<double>(top5) / n};
  }
};

/// Whether `G`'s output is a softmax's (probabilities) rather than logits.
template <Graph G>
constexpr bool probabilities() noexcept {
  return node_table_v<G>.back().kind == op_of<ops::softmax>;
}
}  // namespace detail

/// Trains and runs classifier `G` (see the file comment). Movable; one call at a time.
template <Graph G, Target Tgt, train_options Opts = train_options{}, options PlanOpts = options{}>
class model {
  static_assert(Opts.loss == loss::softmax_cross_entropy,
                "ipu::model trains classifiers: its train_options need loss::softmax_cross_entropy");

 public:
  using trainer_type = trainer_for_t<G, Tgt, Opts, PlanOpts>;  ///< what trains it: a `trainer`, or a `replicated_trainer`
  using engine_type = engine_for_t<G, Tgt, PlanOpts>;          ///< what `evaluate` and `predict` run: an `engine` or a `replicated_engine`
  using stream_type = typename trainer_type::stream_type;  ///< what its input carries
  static constexpr int replicas = replicas_v<Tgt>;  ///< replicas of the model, each on its share of every step's samples
  static constexpr std::int64_t batch = trainer_type::batch;  ///< samples per step: micro-batch x accumulation x replicas
  static constexpr std::int64_t micro_batch = trainer_type::micro_batch;  ///< samples per pass: the graph's batch
  /// Values per sample of the input.
  static constexpr std::int64_t sample_size = input_tensor_t<G>::size() / micro_batch;
  /// Values per sample of the output: the classes.
  static constexpr std::int64_t classes = output_tensor_t<G>::size() / micro_batch;

  /// A model starting from `initial` (see `ipu::trainer`).
  explicit model(const ipu::weights<G>& initial, trainer_config config = {}) : trainer_(initial, config) {}

  /// Trains on the samples `x` with classes `y` (see the file comment) until the end of epoch
  /// `o.epochs`, calling `callbacks` in order at each event; returns each epoch's logs. Throws
  /// `std::invalid_argument` if the sizes disagree or there is not one batch of samples.
  history fit(std::span<const stream_type> x, std::span<const std::int32_t> y, const fit_options<stream_type>& o = {},
              std::vector<callback*> callbacks = {}) {
    check_samples("fit", x.size(), y.size());
    if (static_cast<std::int64_t>(y.size()) < batch)
      throw std::invalid_argument("ipu::model::fit: " + std::to_string(y.size()) + " samples, fewer than a batch of " +
                                  std::to_string(batch));
    if (!o.validation.empty()) check_samples("fit (validation)", o.validation.inputs.size(), o.validation.labels.size());
    const std::int64_t per_epoch = static_cast<std::int64_t>(y.size()) / batch;
    session s(*this, per_epoch);
    for (callback* c : callbacks) c->on_train_begin(s);
    detail::progress bar(o.out, o.verbose);
    history h;
    std::vector<stream_type> xb(static_cast<std::size_t>(batch * sample_size));
    std::vector<std::int32_t> yb(static_cast<std::size_t>(batch));
    for (int epoch = static_cast<int>(s.step() / per_epoch); epoch < o.epochs && !s.stopped; ++epoch) {
      std::vector<std::int64_t> order(y.size());
      if (o.shuffle) order = data::shuffled(static_cast<std::int64_t>(y.size()), o.seed, epoch);
      else std::iota(order.begin(), order.end(), std::int64_t{0});
      for (callback* c : callbacks) c->on_epoch_begin(s, epoch);
      bar.begin_epoch(epoch, o.epochs, per_epoch);
      epoch_logs logs;
      logs.epoch = epoch;
      std::int64_t correct = 0;
      const auto start = std::chrono::steady_clock::now();
      for (std::int64_t b = s.step() - static_cast<std::int64_t>(epoch) * per_epoch; b < per_epoch; ++b) {
        for (std::int64_t i = 0; i < batch; ++i) {
          const auto sample = order[static_cast<std::size_t>(b * batch + i)];
          std::copy_n(x.begin() + sample * sample_size, sample_size, xb.begin() + i * sample_size);
          yb[static_cast<std::size_t>(i)] = y[static_cast<std::size_t>(sample)];
        }
        const float loss = trainer_.step(xb, yb);
        const std::int64_t right = detail::correct(trainer_.logits(), yb, batch, classes, 1).first;
        correct += right;
        logs.loss += loss;
        ++logs.steps;
        logs.seconds = runtime::seconds_since(start);
        const batch_logs bl{epoch, b, s.step(), loss, static_cast<double>(right) / static_cast<double>(batch)};
        for (callback* c : callbacks) c->on_batch_end(s, bl);
        bar.step(b + 1, logs.steps, logs.seconds, logs.loss / static_cast<double>(logs.steps),
                 static_cast<double>(correct) / static_cast<double>(logs.steps * batch));
      }
      if (logs.steps > 0) {
        logs.loss /= static_cast<double>(logs.steps);
        logs.accuracy = static_cast<double>(correct) / static_cast<double>(logs.steps * batch);
      }
      logs.learning_rate = trainer_.learning_rate();
      if (!o.validation.empty()) logs.validation = evaluate(o.validation.inputs, o.validation.labels);
      bar.end_epoch(logs.steps, logs.seconds, logs.loss, logs.accuracy, logs.validation);
      for (callback* c : callbacks) c->on_epoch_end(s, logs);
      h.epochs.push_back(logs);
    }
    for (callback* c : callbacks) c->on_train_end(s);
    return h;
  }

  /// The loss and accuracies on samples `x` with classes `y`, in inference (see the file
  /// comment). Throws `std::invalid_argument` if the sizes disagree.
  metrics evaluate(std::span<const stream_type> x, std::span<const std::int32_t> y) {
    check_samples("evaluate", x.size(), y.size());
    for (std::size_t i = 0; i < y.size(); ++i)
      if (y[i] < 0 || y[i] >= classes)
        throw std::invalid_argument("ipu::model::evaluate: label " + std::to_string(i) + " is " + std::to_string(y[i]) +
                                    "; the model has " + std::to_string(classes) + " classes");
    const std::vector<float> p = predict(x);
    detail::metric_sums sums;
    sums.add(p, y, static_cast<std::int64_t>(y.size()), classes, detail::probabilities<G>());
    return sums.result();
  }

  /// The outputs for samples `x`, `classes` values per sample, in inference (the last batch
  /// padded with zeros). Throws `std::invalid_argument` unless `x` holds whole samples.
  std::vector<float> predict(std::span<const stream_type> x) {
    if (x.size() % static_cast<std::size_t>(sample_size) != 0)
      throw std::invalid_argument("ipu::model::predict: " + std::to_string(x.size()) + " input values are not whole samples of " +
                                  std::to_string(sample_size));
    const auto n = static_cast<std::int64_t>(x.size()) / sample_size;
    engine_type e{trainer_.weights()};
    constexpr std::int64_t per_call = micro_batch * replicas;  // a batch on every replica
    std::vector<stream_type> xb(static_cast<std::size_t>(per_call * sample_size));
    std::vector<element_type_t<G>> yb(static_cast<std::size_t>(per_call * classes));
    std::vector<float> out(static_cast<std::size_t>(n * classes));
    for (std::int64_t first = 0; first < n; first += per_call) {
      const std::int64_t count = std::min(per_call, n - first);
      std::fill(xb.begin(), xb.end(), stream_type{});
      std::copy_n(x.begin() + first * sample_size, count * sample_size, xb.begin());
      const auto batches = static_cast<std::size_t>((count + micro_batch - 1) / micro_batch);  // replicas with samples
      e.infer(std::span<const stream_type>(xb).first(batches * static_cast<std::size_t>(micro_batch * sample_size)),
              std::span<element_type_t<G>>(yb).first(batches * static_cast<std::size_t>(micro_batch * classes)));
      for (std::int64_t k = 0; k < count * classes; ++k)
        out[static_cast<std::size_t>(first * classes + k)] = static_cast<float>(yb[static_cast<std::size_t>(k)]);
    }
    return out;
  }

  /// The trainer: weights, gradients, steps, profile.
  trainer_type& trainer() noexcept { return trainer_; }
  /// The trainer.
  const trainer_type& trainer() const noexcept { return trainer_; }
  /// The weights.
  const ipu::weights<G>& weights() const noexcept { return trainer_.weights(); }

 private:
  void check_samples(const char* what, std::size_t values, std::size_t labels) const {
    if (values != labels * static_cast<std::size_t>(sample_size))
      throw std::invalid_argument(std::string("ipu::model::") + what + ": " + std::to_string(values) + " input values for " +
                                  std::to_string(labels) + " labels; a sample has " + std::to_string(sample_size));
  }

  /// The session callbacks see.
  class session final : public training_session {
   public:
    session(model& m, std::int64_t per_epoch) : m_(m), per_epoch_(per_epoch) {}
    std::int64_t step() const override { return m_.trainer_.steps() + m_.trainer_.skipped_steps(); }
    std::int64_t steps_per_epoch() const override { return per_epoch_; }
    void save_checkpoint(const std::filesystem::path& path) const override { ipu::save_checkpoint(path, m_.trainer_); }
    void restore_checkpoint(const std::filesystem::path& path) override { ipu::restore_checkpoint(path, m_.trainer_); }
    double learning_rate() const override { return m_.trainer_.learning_rate(); }
    void set_learning_rate(std::optional<double> rate) override { m_.trainer_.set_learning_rate(rate); }
    void stop_training() override { stopped = true; }
    bool stopped = false;

   private:
    model& m_;
    std::int64_t per_epoch_;
  };

  trainer_type trainer_;
};

}  // namespace ipu
