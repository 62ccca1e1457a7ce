#pragma once
/// \file
/// `ipu::replicated_engine<G, Target, Options>`: data-parallel inference. `Target` is an
/// `ipu::replicated<System, R>`: `R` replicas, each an `ipu::engine` of `G` on
/// `System::ipus / R` IPUs with host threads of its own, each running its own batches at the
/// same time, as TensorFlow runs a replicated inference loop (every replica dequeues its own
/// batch from the infeed in each iteration).
///
/// ```
/// using target = ipu::replicated<ipu::system<ipu::mk2, 4>, 4>;  // 4 replicas of 1 IPU
/// ipu::replicated_engine<net_t, target> engine{weights};
/// ipu::run_stats stats = engine.run(in, out, 100);  // 100 iterations: 400 batches, 4 at a time
/// ```
///
/// Batch `i` of a call runs on replica `i % R`, and its result comes out `i`-th: the results
/// are those of one engine running the same batches one after another, in the same order,
/// and the same bits (each replica holds the same weights, and a batch's result depends on
/// that batch alone).
///
/// The batch arithmetic: an iteration takes `batch = micro-batch x replicas` samples;
/// `run(in, out, n)` takes `n` of them, `batches(n).per_call()` samples.

#include <ipu/graph/queries.hpp>
#include <ipu/runtime/engine.hpp>
#include <ipu/runtime/feeds.hpp>
#include <ipu/runtime/team.hpp>
#include <ipu/target/chip.hpp>
#include <ipu/target/options.hpp>
#include <ipu/train/options.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace ipu {

/// Runs `G` on the replicas of `Tgt` (see the file comment). One call at a time.
template <Graph G, Target Tgt, options Opts = options{}>
class replicated_engine {
 public:
  using replica_type = engine<G, replica_target_t<Tgt>, Opts>;     ///< one replica
  using element_type = typename replica_type::element_type;        ///< `f32` or `f16`
  using stream_type = typename replica_type::stream_type;          ///< what the input stream carries
  using input_type = typename replica_type::input_type;            ///< one batch in
  using output_type = typename replica_type::output_type;          ///< one batch out
  static constexpr int replicas = replicas_v<Tgt>;                 ///< replicas of the model
  static constexpr std::int64_t micro_batch = batch_size_v<G>;     ///< samples per batch of a replica: the graph's
  static constexpr std::int64_t batch = micro_batch * replicas;    ///< samples per iteration

  /// `replicas` engines of `w`, each on `config.threads / replicas` host threads (at least
  /// one; 0: the hardware's), in `config.mode`. Throws as `engine` does.
  explicit replicated_engine(const weights<G>& w, engine_config config = {}) : team_(static_cast<unsigned>(replicas)) {
    w.validate();  // here, so that no replica fails alone
    const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
    config.threads = std::max(1u, (config.threads == 0 ? hardware : config.threads) / static_cast<unsigned>(replicas));
    engines_.resize(static_cast<std::size_t>(replicas));
    team_.run([&](unsigned r) { engines_[r] = std::make_unique<replica_type>(w, config); });
  }

  /// Runs batches `x`, `replicas` at a time, into `y` (as many). Throws
  /// `std::invalid_argument` if the counts differ, or rethrows the first replica's error.
  void infer(std::span<const input_type> x, std::span<output_type> y) {
    if (x.size() != y.size())
      throw std::invalid_argument("ipu::replicated_engine: " + std::to_string(x.size()) + " input batches and " +
                                  std::to_string(y.size()) + " outputs");
    for (std::size_t first = 0; first < x.size(); first += static_cast<std::size_t>(replicas))
      on_replicas(std::min(x.size() - first, static_cast<std::size_t>(replicas)),
                  [&](std::size_t r) { engines_[r]->infer(x[first + r], y[first + r]); });
  }
  /// The results of batches `x`, `replicas` at a time.
  std::vector<output_type> infer(std::span<const input_type> x) {
    std::vector<output_type> y(x.size());
    infer(x, std::span<output_type>(y));
    return y;
  }
  /// Runs whole batches of raw values, one after another in `x` (each as `input_type` holds
  /// one), into `y`, `replicas` at a time. Throws `std::invalid_argument` unless `x` holds
  /// whole batches and `y` as many results.
  void infer(std::span<const stream_type> x, std::span<element_type> y) {
    constexpr std::size_t in = input_type::size(), out = output_type::size();
    if (x.size() % in != 0 || y.size() != x.size() / in * out)
      throw std::invalid_argument("ipu::replicated_engine: " + std::to_string(x.size()) + " input values and " +
                                  std::to_string(y.size()) + " output values are not whole batches of " +
                                  input_type::shape_string() + " and their results " + output_type::shape_string());
    const std::size_t n = x.size() / in;
    for (std::size_t first = 0; first < n; first += static_cast<std::size_t>(replicas))
      on_replicas(std::min(n - first, static_cast<std::size_t>(replicas)), [&](std::size_t r) {
        engines_[r]->infer(x.subspan((first + r) * in, in), y.subspan((first + r) * out, out));
      });
  }

  /// Runs up to `iterations` iterations from `in` into `out`, as `engine::run` runs batches:
  /// in each, every replica takes the next batch of the infeed, and their results enter the
  /// outfeed in the infeed's order. The stats count batches (`requested` is
  /// `iterations x replicas`). If the infeed ends within an iteration, the batches taken run
  /// and the run ends as `engine::run` does (`end_of_stream` closes `out`, `cancelled` does
  /// not). Errors abort `out` and are rethrown here:
  /// - a producer's (`infeed::abort`), after the batches before it ran;
  /// - an input tensor without storage (moved from), after the batches before it ran: it stays
  ///   in the infeed, which is cancelled, releasing a producer waiting to push;
  /// - a replica's (e.g. `non_finite_error`): the iteration's batches have left the infeed, and
  ///   it is cancelled;
  /// - a destroyed channel's, `channel_error`.
  template <int Depth, outfeed_mode Mode>
  run_stats run(infeed<G, Depth>& in, outfeed<G, Mode>& out, std::int64_t iterations) {
    if (iterations < 0)
      throw std::invalid_argument("ipu::replicated_engine::run: " + std::to_string(iterations) +
                                  " iterations; give 0 or more");
    using clock = std::chrono::steady_clock;
    using runtime::seconds_since;
    run_stats stats;
    stats.requested = iterations * replicas;
    stats.batch_size = micro_batch;
    const channel_use in_use = in.attach(), out_use = out.attach();
    const std::stop_token out_destroyed = out_use.destruction_token();
    const auto start = clock::now();
    std::int64_t rounds = 0;
    try {
      for (bool more = true; more && stats.iterations < stats.requested;) {
        const auto wanted = static_cast<std::size_t>(std::min<std::int64_t>(replicas, stats.requested - stats.iterations));
        std::size_t taken = 0;
        if (stats.iterations > 0 && runtime::runs_dry(in, wanted)) ++stats.infeed_ran_dry;
        const auto waiting = clock::now();
        std::exception_ptr taking_error;  // the producer's, or a refused batch's: rethrown once the batches before it ran
        bool refused = false;
        try {
          while (taken < wanted && in.consume([&](const input_type& x) {
            if (x.data() == nullptr) {  // a copy would keep the storage of an earlier batch
              refused = true;
              throw std::invalid_argument("ipu::replicated_engine: an input tensor has no storage (was it moved from?)");
            }
            inputs_[taken] = x;
          }, out_destroyed))
            ++taken;
        } catch (...) {
          taking_error = std::current_exception();
        }
        stats.infeed_wait_seconds += seconds_since(waiting);
        more = taken == wanted;
        if (!more && out_destroyed.stop_requested()) {
          in.cancel();
          throw channel_error(detail::channel_core::destroyed_message);
        }
        if (taken > 0) {
          const auto computing = clock::now();
          try {
            on_replicas(taken, [&](std::size_t r) { engines_[r]->infer(inputs_[r], outputs_[r]); });
          } catch (...) {
            in.cancel();
            throw;
          }
          stats.compute_seconds += seconds_since(computing);
          for (std::size_t r = 0; r < taken; ++r) out.emplace([&](output_type& y) { y = outputs_[r]; });
          stats.iterations += static_cast<std::int64_t>(taken);
          ++rounds;
        }
        if (taking_error) {
          if (refused) in.cancel();  // the refused batch stays in the infeed; release its producer
          std::rethrow_exception(taking_error);
        }
        if (!more) {
          stats.cancelled = in.cancelled();
          stats.end_of_stream = !stats.cancelled;
          if (stats.end_of_stream) out.close();
        }
      }
    } catch (...) {
      if (!out_destroyed.stop_requested()) out.abort(std::current_exception());
      throw;
    }
    stats.seconds = seconds_since(start);
    stats.simulated_seconds = static_cast<double>(rounds) * engines_[0]->profile().simulated_seconds_per_batch();
    runtime::log_run("replicated_engine", stats);
    return stats;
  }

  /// Replica `r` (from 0): its profile, threads and measured memory. Throws
  /// `std::out_of_range` for a replica the target does not have.
  const replica_type& replica(int r) const { return *engines_.at(static_cast<std::size_t>(r)); }
  /// The batch arithmetic of `iterations` iterations: micro-batch x replicas per iteration.
  static constexpr batch_sizes batches(std::int64_t iterations = 1) noexcept { return {micro_batch, 1, replicas, iterations}; }

 private:
  /// Calls `f(r)` for replicas `0 .. count - 1` at once, each on a thread of the team;
  /// rethrows the first error.
  template <class F>
  void on_replicas(std::size_t count, F&& f) {
    team_.run([&](unsigned r) {
      if (r < count) f(static_cast<std::size_t>(r));
    });
  }

  runtime::team team_;
  std::vector<std::unique_ptr<replica_type>> engines_;
  std::vector<input_type> inputs_ = std::vector<input_type>(static_cast<std::size_t>(replicas));     // an iteration's batches
  std::vector<output_type> outputs_ = std::vector<output_type>(static_cast<std::size_t>(replicas));  // and their results
};

/// What runs `G` on `Tgt` in inference: an `ipu::replicated_engine` if `Tgt` has more than one
/// replica, else an `ipu::engine`. `ipu::model` and `ipu::estimator` evaluate with it.
template <Graph G, Target Tgt, options Opts = options{}>
using engine_for_t = std::conditional_t<(replicas_v<Tgt> > 1), replicated_engine<G, Tgt, Opts>, engine<G, Tgt, Opts>>;

}  // namespace ipu
