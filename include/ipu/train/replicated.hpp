#pragma once
/// \file
/// `ipu::replicated_trainer<G, Target, Opts>`: data-parallel training in one process. `Target`
/// is an `ipu::replicated<System, R>`: `R` replicas, each a `trainer` of `G` on
/// `System::ipus / R` IPUs (pipelined as `Opts` says when that is more than one), each on host
/// threads of its own, training on its share of a step's samples. Their gradients are summed
/// over the replicas once per step (`ipu::replica_group`), averaged with
/// `gradient_reduction::mean`, and every replica applies the same update.
///
/// ```
/// using target = ipu::replicated<ipu::system<ipu::mk2, 4>, 2>;  // 2 replicas of 2 IPUs
/// ipu::replicated_trainer<net_t, target, opts> trainer{ipu::weights<net_t>::random(1)};
/// float loss = trainer.step(images, labels);  // replica r: the r-th block of replica_batch samples
/// ```
///
/// The batch arithmetic: a step takes `batch = micro-batch x gradient_accumulation x replicas`
/// samples, replica `r` the `r`-th block of `replica_batch` of them, as each process of a
/// distributed run reads its own shard of the data.

#include <ipu/graph/queries.hpp>
#include <ipu/target/chip.hpp>
#include <ipu/target/options.hpp>
#include <ipu/train/options.hpp>
#include <ipu/train/replication.hpp>
#include <ipu/train/trainer.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace ipu {

/// Trains `G` on the replicas of `Tgt` (see the file comment). One call at a time.
template <Graph G, Target Tgt, train_options Opts = train_options{}, options PlanOpts = options{}>
class replicated_trainer {
 public:
  using replica_type = trainer<G, replica_target_t<Tgt>, Opts, PlanOpts>;  ///< one replica
  using graph_type = typename replica_type::graph_type;        ///< `G`
  using stream_type = typename replica_type::stream_type;      ///< what the input stream carries
  static constexpr train_options opts = Opts;                  ///< the training configuration
  static constexpr int replicas = replicas_v<Tgt>;             ///< replicas of the model
  static constexpr std::int64_t micro_batch = replica_type::micro_batch;  ///< samples per pass: the graph's batch
  static constexpr std::int64_t replica_batch = replica_type::batch;      ///< samples per step of one replica
  static constexpr std::int64_t batch = replica_batch * replicas;         ///< samples per step

  /// `replicas` trainers starting from `initial`, each on `config.threads / replicas` threads
  /// (at least one; 0: the hardware's), with `config.seed`. Throws as `trainer` does.
  explicit replicated_trainer(const ipu::weights<G>& initial, trainer_config config = {}) : group_(replicas) {
    initial.validate();  // here, so that no replica fails alone
    const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
    const unsigned threads = std::max(1u, (config.threads == 0 ? hardware : config.threads) / static_cast<unsigned>(replicas));
    trainers_.resize(static_cast<std::size_t>(replicas));
    on_replicas([&](int r) {
      trainers_[static_cast<std::size_t>(r)] =
          std::make_unique<replica_type>(initial, trainer_config{threads, config.seed, &group_.member(r)});
    });
  }

  /// One step of softmax cross-entropy training: `input` holds `batch` samples as the input
  /// stream carries them, `labels` one class per sample; replica `r` trains on the `r`-th
  /// block of `replica_batch`. Returns the mean loss over all of them before the update.
  /// Throws `std::invalid_argument` on a wrong size or a label outside the classes, before
  /// any replica runs.
  float step(std::span<const stream_type> input, std::span<const std::int32_t> labels)
    requires(Opts.loss == loss::softmax_cross_entropy)
  {
    check(input.size(), labels.size(), static_cast<std::size_t>(batch));
    replica_type::check_labels(labels);
    const float loss = run([&](replica_type& t, std::size_t r) {
      return t.step(input.subspan(r * sample_values(), sample_values()),
                    labels.subspan(r * static_cast<std::size_t>(replica_batch), static_cast<std::size_t>(replica_batch)));
    });
    logits_.clear();
    for (const auto& t : trainers_) logits_.insert(logits_.end(), t->logits().begin(), t->logits().end());
    return loss;
  }
  /// One step of mean-squared-error training: `targets` holds each replica's targets, one block
  /// after another.
  float step(std::span<const stream_type> input, std::span<const float> targets)
    requires(Opts.loss == loss::mean_squared_error)
  {
    const std::size_t per_replica = targets.size() / static_cast<std::size_t>(replicas);
    check(input.size(), targets.size(), per_replica * static_cast<std::size_t>(replicas));
    return run([&](replica_type& t, std::size_t r) {
      return t.step(input.subspan(r * sample_values(), sample_values()), targets.subspan(r * per_replica, per_replica));
    });
  }

  /// Replica `r` (from 0): its weights, gradients, steps and state. Every replica holds the
  /// same trainable weights; batch norms' running statistics are each replica's own, as
  /// TensorFlow's replicas keep theirs.
  const replica_type& replica(int r) const { return *trainers_.at(static_cast<std::size_t>(r)); }
  /// Replica 0's weights: the model's, as TensorFlow reads a replicated variable from replica 0.
  const ipu::weights<G>& weights() const noexcept { return trainers_[0]->weights(); }
  /// Steps taken: updates applied.
  std::int64_t steps() const noexcept { return trainers_[0]->steps(); }
  /// Steps that dynamic loss scaling skipped for an overflow (of the summed gradients: every
  /// replica skips the same steps).
  std::int64_t skipped_steps() const noexcept { return trainers_[0]->skipped_steps(); }
  /// The loss scale of the next step.
  float loss_scale() const noexcept { return trainers_[0]->loss_scale(); }
  /// The learning rate of the next update (`trainer::learning_rate`).
  double learning_rate() const noexcept { return trainers_[0]->learning_rate(); }
  /// Makes every replica's next updates use `rate` (`trainer::set_learning_rate`). Throws
  /// `std::invalid_argument` for a negative or non-finite rate, before any replica changes.
  void set_learning_rate(std::optional<double> rate) {
    for (const auto& t : trainers_) t->set_learning_rate(rate);  // the first checks `rate`; the others take what it took
  }
  /// Softmax cross-entropy: the logits of the last `step`, every replica's rows in the order
  /// of the step's samples (`trainer::logits`).
  std::span<const float> logits() const noexcept
    requires(Opts.loss == loss::softmax_cross_entropy)
  {
    return logits_;
  }
  /// Replica 0's state (`trainer::state`): every replica holds the same optimiser state and counts.
  trainer_state state() const { return trainers_[0]->state(); }
  /// Continues every replica from `w` and `s` (`trainer::restore`): a checkpoint of replica 0
  /// (`ipu::save_checkpoint` of this trainer), or of one trainer of the same configuration.
  /// Every replica's batch-norm running statistics become those of `w`. Throws as
  /// `trainer::restore` does, before any replica changes.
  void restore(const ipu::weights<G>& w, const trainer_state& s) {
    for (const auto& t : trainers_) t->restore(w, s);  // the first checks w and s; the others take what it took
  }
  /// The batch arithmetic: micro-batch x accumulation x replicas = `batch`.
  static constexpr batch_sizes batches() noexcept { return {micro_batch, replica_type::gradient_accumulation, replicas, 1}; }

 private:
  /// The input values of one replica's step.
  static constexpr std::size_t sample_values() noexcept {
    return static_cast<std::size_t>(node_table_v<G>[0].out.elements() * replica_type::gradient_accumulation);
  }

  static void check(std::size_t values, std::size_t labels, std::size_t expected_labels) {
    if (values != sample_values() * static_cast<std::size_t>(replicas))
      throw std::invalid_argument("ipu::replicated_trainer: the input has " + std::to_string(values) + " values; " +
                                  std::to_string(replicas) + " replicas take " + std::to_string(sample_values()) + " each");
    if (labels != expected_labels)
      throw std::invalid_argument("ipu::replicated_trainer: " + std::to_string(labels) + " labels or targets for a step of " +
                                  std::to_string(replicas) + " replicas (" + std::to_string(expected_labels) + " expected)");
  }

  /// Runs `f(trainer, r)` on every replica at once, each on a thread of its own; returns
  /// replica 0's result (every replica's, after the sums).
  template <class F>
  float run(F&& f) {
    std::vector<float> results(static_cast<std::size_t>(replicas));
    on_replicas([&](int r) { results[static_cast<std::size_t>(r)] = f(*trainers_[static_cast<std::size_t>(r)], static_cast<std::size_t>(r)); });
    return results[0];
  }

  /// Calls `f(r)` for every replica, each on a thread of its own (replica 0 on this one).
  /// If one throws, the group is aborted, so that the others stop waiting for it, and the
  /// first exception is rethrown; the trainer is then unusable.
  template <class F>
  void on_replicas(F&& f) {
    if (group_.aborted()) throw std::logic_error("ipu::replicated_trainer: a replica failed in an earlier call");
    std::vector<std::exception_ptr> errors(static_cast<std::size_t>(replicas));
    const auto guarded = [&](int r) {
      try {
        f(r);
      } catch (const replica_group_aborted&) {
      } catch (...) {
        errors[static_cast<std::size_t>(r)] = std::current_exception();
        group_.abort();
      }
    };
    {
      std::vector<std::jthread> threads;
      for (int r = 1; r < replicas; ++r) {
        try {
          threads.emplace_back(guarded, r);
        } catch (...) {
          errors[static_cast<std::size_t>(r)] = std::current_exception();
          group_.abort();
          break;
        }
      }
      if (!group_.aborted()) guarded(0);
    }
    for (const std::exception_ptr& e : errors)
      if (e) std::rethrow_exception(e);
  }

  replica_group group_;
  std::vector<std::unique_ptr<replica_type>> trainers_;
  std::vector<float> logits_;  // the last step's, every replica's
};

/// What trains `G` on `Tgt`: an `ipu::replicated_trainer` if `Tgt` has more than one replica,
/// else an `ipu::trainer`. `ipu::model` and `ipu::estimator` train with it.
template <Graph G, Target Tgt, train_options Opts = train_options{}, options PlanOpts = options{}>
using trainer_for_t = std::conditional_t<(replicas_v<Tgt> > 1), replicated_trainer<G, Tgt, Opts, PlanOpts>,
                                         trainer<G, Tgt, Opts, PlanOpts>>;

}  // namespace ipu
