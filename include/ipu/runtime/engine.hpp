#pragma once
/// \file
/// `ipu::engine<G, Target, Options>`: runs graph `G` as its plan on `Target` lays it out.
///
/// ```cpp
/// using model_t = decltype(ipu::input<ipu::f16, 4, 224, 224, 4> | ...);
/// ipu::engine<model_t, ipu::mk2> engine{ipu::weights<model_t>::random(42)};
/// ipu::output_tensor_t<model_t> y = engine.infer(x);
/// std::cout << engine.profile();
/// ```
///
/// The engine requires the plan to fit (`ipu::require_fit`): a graph that does not fit is a
/// compile error naming the tile and the layer, not a run-time failure. See `executor.hpp`
/// for the fast and faithful modes and `profile.hpp` for the cycle model.

#include <ipu/core/dtype.hpp>
#include <ipu/core/log.hpp>
#include <ipu/core/tensor.hpp>
#include <ipu/graph/queries.hpp>
#include <ipu/plan/plan.hpp>
#include <ipu/runtime/channel.hpp>
#include <ipu/ops/kernels.hpp>
#include <ipu/runtime/executor.hpp>
#include <ipu/runtime/feeds.hpp>
#include <ipu/runtime/inference_pipeline.hpp>
#include <ipu/runtime/io.hpp>
#include <ipu/runtime/log_events.hpp>
#include <ipu/runtime/profile.hpp>
#include <ipu/runtime/program.hpp>
#include <ipu/runtime/weights.hpp>
#include <ipu/kernels/pointwise.hpp>
#include <ipu/target/chip.hpp>
#include <ipu/target/options.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <ostream>
#include <stdexcept>
#include <span>
#include <stop_token>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace ipu {

namespace runtime {

/// Throws `weight_error` naming the layer and tensor (`"kernel"`, `"folded scale"`) of the first
/// value of `set`, the device tensors of `layers` (`device_parameters`), that is not finite in
/// `T`. Depends on the element type only, so it is compiled once rather than per graph.
template <ElementType T>
void check_finite_in(std::span<const layer_weights> layers, const parameter_set& set) {
  for (const layer_weights& layer : layers) {
    const auto& tensors = set[static_cast<std::size_t>(layer.node_index())];
    for (std::size_t k = 0; k < tensors.size(); ++k)
      for (std::size_t i = 0; i < tensors[k].size(); ++i)
        if (!std::isfinite(kernels::widen(static_cast<T>(tensors[k][i]))))
          throw weight_error("ipu::engine: " + std::string(layer.path()) + " " +
                             std::string(layer.kind().info->device_prefix) +
                             std::string(layer.kind().info->device_tensors[k]) + "[" + std::to_string(i) + "] = " +
                             std::to_string(tensors[k][i]) + " is not finite in " + std::string(name_of(dtype_of_v<T>)));
  }
}

}  // namespace runtime

/// What one `engine::run` did.
struct run_stats {
  std::int64_t requested = 0;        ///< iterations asked for
  std::int64_t iterations = 0;       ///< batches run: `requested` unless the infeed ended first
  std::int64_t batch_size = 0;       ///< images per batch
  bool end_of_stream = false;        ///< the infeed was closed and drained before `requested`
  bool cancelled = false;            ///< the infeed was cancelled before `requested`
  double seconds = 0;                ///< wall time of the run
  double compute_seconds = 0;        ///< time the executor ran
  double infeed_wait_seconds = 0;    ///< time the run waited for the producer
  /// Iterations after the first that found the infeed without their batches (a replicated
  /// run: without a batch for every replica) and waited for the producer: the infeed ran dry,
  /// the producer is slower than the engine.
  std::int64_t infeed_ran_dry = 0;
  double simulated_seconds = 0;      ///< the cycle model's time for `iterations` batches

  /// Measured throughput: images run per wall-clock second.
  double images_per_second() const noexcept {
    return seconds > 0 ? static_cast<double>(iterations * batch_size) / seconds : 0;
  }
  /// The cycle model's throughput for the same batches.
  double simulated_images_per_second() const noexcept {
    return simulated_seconds > 0 ? static_cast<double>(iterations * batch_size) / simulated_seconds : 0;
  }

  /// `"1000 of 1000 iterations (4 images each) in 2.1 s: 1904 images/s; ..."`.
  friend std::ostream& operator<<(std::ostream& os, const run_stats& s) {
    os << s.iterations << " of " << s.requested << " iterations (" << s.batch_size << " images each)";
    if (s.end_of_stream) os << ", the infeed ended";
    if (s.cancelled) os << ", the infeed was cancelled";
    os << " in " << s.seconds << " s: " << s.images_per_second() << " images/s on the host (" << s.compute_seconds
       << " s computing, " << s.infeed_wait_seconds << " s waiting for the infeed), " << s.simulated_images_per_second()
       << " images/s simulated";
    if (s.infeed_ran_dry > 0) os << "; the infeed ran dry " << s.infeed_ran_dry << (s.infeed_ran_dry == 1 ? " time" : " times");
    return os;
  }
};

namespace runtime {

/// Whether a run asking infeed `in` for `wanted` batches finds fewer there while the producer
/// may still push them: it waits, the infeed ran dry.
template <class Infeed>
bool runs_dry(const Infeed& in, std::size_t wanted = 1) {
  return in.size() < wanted && !in.closed() && !in.cancelled();
}

/// At `info`, what run `s` of `component` did; at `warn`, that its infeed ran dry.
inline void log_run(std::string_view component, const run_stats& s) {
  logging::info(component, "run: ", s);
  if (s.infeed_ran_dry > 0)
    logging::warn(component, "the infeed ran dry at ", s.infeed_ran_dry, " of ", s.iterations,
                  " iterations: the run waited for the producer, which is slower than the engine (prepare the "
                  "batches on more threads, or do less to each)");
}

}  // namespace runtime

/// How an engine runs.
struct engine_config {
  execution_mode mode = execution_mode::fast;  ///< fast (host tensors) or faithful (tile images)
  unsigned threads = 0;  ///< host threads; 0: one per hardware thread
  /// Checks every step's output for NaN and infinities, and throws `ipu::non_finite_error`
  /// naming the first step (and layer) that produced one. Costs a pass over each output, and
  /// in fast mode turns fusion off, so that a value a later step would hide (ReLU and max
  /// pooling drop a NaN) is seen where it is made; the outputs' bits are unchanged.
  bool check_finite = false;
  /// For a graph placed over several IPUs (`ipu::on<k>`), in fast mode: `run` pipelines its
  /// batches over the IPUs, as TensorFlow's inference pipelines do. Each IPU's layers are a
  /// stage with an equal share of `threads` of its own, and the stages run at once, a batch
  /// each: while IPU 1 runs batch `i`, IPU 0 runs batch `i + 1`. Inference has only forward
  /// passes, so TensorFlow's grouped and interleaved schedules are the same here. `infer`
  /// passes its batch through the stages in turn. The outputs have the bits of the
  /// unpipelined run. Throws `std::invalid_argument` in faithful mode, and `execution_error`
  /// for a graph with `ipu::on_host` layers; a graph on one IPU runs as without it.
  bool pipelined = false;
};

/// Runs graph `G` as its plan on `Tgt` with `Opts` lays it out (see the file comment): one
/// batch with `infer`, or many from an infeed into an outfeed with `run`. Requires the plan
/// to fit: a graph that does not fit is a compile error.
///
/// Several threads may call `infer` and `run` on one engine: its batches run one at a time,
/// each on all of the engine's host threads. Reading `profile()` or the measured memory while
/// another thread runs a batch is a data race.
template <Graph G, Target Tgt, options Opts = options{}>
class engine {
  static_assert(require_fit<G, Tgt, Opts>, "ipu::engine: the graph does not fit the target");

 public:
  using graph_type = std::remove_cvref_t<G>;                                      ///< `G`
  using element_type = element_type_t<G>;                                         ///< `f32` or `f16`
  using stream_type = stream_type_t<G>;  ///< what the input stream carries: `element_type`, or `std::uint8_t`
  using partial_type = std::conditional_t<Opts.partials == dtype::f16, f16, f32>;  ///< sums' type
  using input_type = input_tensor_t<G>;                                           ///< one batch in
  using output_type = output_tensor_t<G>;                                         ///< one batch out
  using target_type = Tgt;                                                        ///< the target
  static constexpr options opts = Opts;                                           ///< the plan's options

  /// Checks `w` (finite values, batch-norm variance), folds batch norm into a scale and a
  /// shift, rounds the weights to the element type and lays them out. Throws `weight_error`
  /// if any value is not finite before or after that.
  explicit engine(const weights<G>& w, engine_config config = {})
      : executor_(runtime::program::from(plan()), parameters(w), kernels(), config.mode, config.threads,
                  config.check_finite, config.pipelined),
        profile_(executor_.prog(), batch_size_v<G>, Tgt::name, name_of(config.mode).data()) {
    runtime::log_engine_built(plan(), profile_, Tgt::name, config.mode, executor_.threads(), executor_.pipeline() != nullptr);
  }

  /// The plan the engine runs: `ipu::plan_v<G, Tgt, Opts>`.
  static constexpr const auto& plan() noexcept { return plan_v<G, Tgt, Opts>; }

  /// Runs one batch.
  output_type infer(const input_type& x) {
    output_type y;
    infer(x, y);
    return y;
  }
  /// Runs one batch into `y`.
  void infer(const input_type& x, output_type& y) { run(x.data(), y.data()); }
  /// Runs batches `x` one after another into `y` (as many), as `ipu::replicated_engine` runs
  /// them a batch per replica. Throws `std::invalid_argument` if the counts differ.
  void infer(std::span<const input_type> x, std::span<output_type> y) {
    if (x.size() != y.size())
      throw std::invalid_argument("ipu::engine: " + std::to_string(x.size()) + " input batches and " + std::to_string(y.size()) +
                                  " outputs");
    for (std::size_t i = 0; i < x.size(); ++i) infer(x[i], y[i]);
  }
  /// Runs one batch from raw values; throws `std::invalid_argument` unless `x` and `y` have
  /// exactly the input's and output's number of elements.
  void infer(std::span<const stream_type> x, std::span<element_type> y) {
    check_size("input", x.size(), input_type::size(), input_type::shape_string());
    check_size("output", y.size(), output_type::size(), output_type::shape_string());
    run(x.data(), y.data());
  }

  /// Runs up to `iterations` batches from `in` into `out`, as the seed's
  /// `loops.repeat(iterations, body, infeed)`: each batch is read in place from its infeed
  /// slot and its result written in place into the outfeed.
  /// - If the infeed is closed and drained first, the run stops after the last complete
  ///   batch, closes `out`, and reports the iterations it ran (`end_of_stream`). If the
  ///   infeed is cancelled, it stops likewise without closing `out` (`cancelled`).
  /// - If the producer aborted the infeed (`ipu::feed` does when its range throws), the
  ///   batches pushed before the abort run, then the producer's exception is rethrown here;
  ///   `out` is aborted with it.
  /// - If a batch fails in the engine, that batch stays in the infeed, the infeed is
  ///   cancelled (releasing a producer waiting to push), `out` is aborted, and the exception
  ///   is rethrown here.
  /// The run holds both channels (`attach`): destroying either meanwhile wakes the run, which
  /// throws `channel_error` after aborting the outfeed or cancelling the infeed, whichever stays.
  ///
  /// Pipelined (`engine_config::pipelined`), the IPUs' stages run at once, each on a batch of
  /// its own: `compute_seconds` is the busiest stage's, `simulated_seconds` the cycle model's
  /// for the batches through the pipeline (the first through every IPU, then one per busiest
  /// IPU's time), and a batch that fails in a later stage has left the infeed, as have those
  /// in flight with it, which are lost.
  template <int Depth, outfeed_mode Mode>
  run_stats run(infeed<G, Depth>& in, outfeed<G, Mode>& out, std::int64_t iterations) {
    if (iterations < 0)
      throw std::invalid_argument("ipu::engine::run: " + std::to_string(iterations) + " iterations; give 0 or more");
    using clock = std::chrono::steady_clock;
    using runtime::seconds_since;
    run_stats stats;
    stats.requested = iterations;
    stats.batch_size = batch_size_v<G>;
    const channel_use in_use = in.attach(), out_use = out.attach();
    const std::stop_token out_destroyed = out_use.destruction_token();  // ends a wait on the infeed
    const auto start = clock::now();
    if (auto* pipe = executor_.pipeline()) {
      stream(*pipe, in, out, iterations, stats, out_destroyed);
      stats.seconds = seconds_since(start);
      if (stats.iterations > 0)  // the first batch through every stage, then one per busiest stage's time
        stats.simulated_seconds = profile_.simulated_seconds_per_batch() +
                                  static_cast<double>(stats.iterations - 1) * static_cast<double>(batch_size_v<G>) /
                                      profile_.pipelined_images_per_second();
      runtime::log_run("engine", stats);
      return stats;
    }
    bool in_engine = false;
    try {
      while (stats.iterations < iterations) {
        if (stats.iterations > 0 && runtime::runs_dry(in)) ++stats.infeed_ran_dry;
        const auto waiting = clock::now();
        const bool read = in.consume([&](const input_type& x) {
          const auto computing = clock::now();
          stats.infeed_wait_seconds += std::chrono::duration<double>(computing - waiting).count();
          in_engine = true;
          out.emplace([&](output_type& y) { run(x.data(), y.data()); });
          in_engine = false;
          stats.compute_seconds += seconds_since(computing);
        }, out_destroyed);
        if (!read) {
          if (out_destroyed.stop_requested()) {
            in.cancel();
            throw channel_error(detail::channel_core::destroyed_message);
          }
          stats.cancelled = in.cancelled();
          stats.end_of_stream = !stats.cancelled;
          if (stats.end_of_stream) out.close();
          break;
        }
        ++stats.iterations;
      }
    } catch (...) {
      if (in_engine) in.cancel();
      if (!out_destroyed.stop_requested()) out.abort(std::current_exception());  // else no one reads it
      throw;
    }
    stats.seconds = seconds_since(start);
    stats.simulated_seconds = static_cast<double>(stats.iterations) * profile_.simulated_seconds_per_batch();
    runtime::log_run("engine", stats);
    return stats;
  }

  /// The cycle model, with the host time of the batches run so far.
  const ipu::profile& profile() const noexcept { return profile_; }
  /// The mode the engine runs in.
  execution_mode mode() const noexcept { return executor_.mode(); }
  /// The host threads the engine runs on.
  unsigned threads() const noexcept { return executor_.threads(); }

  /// Faithful mode: the bytes `tile` of `ipu` held by category while `step` (a node index of
  /// that IPU) ran, measured in the last batch; compare with `plan().usage(ipu, tile, step)`.
  /// Throws `std::out_of_range` for an IPU, tile or step the target or graph does not have.
  memory_bytes measured_usage(int ipu, int tile, int step) const { return executor_.measured_usage(ipu, tile, step); }
  /// Faithful mode: one past the highest byte of `tile`'s image that any buffer reached.
  /// Throws `std::out_of_range` for an IPU or tile the target does not have.
  std::int64_t measured_extent(int ipu, int tile) const { return executor_.measured_extent(ipu, tile); }

 private:
  static void check_size(const char* what, std::size_t given, std::size_t expected, const std::string& shape) {
    if (given != expected)
      throw std::invalid_argument("ipu::engine: the " + std::string(what) + " has " + std::to_string(given) +
                                  " elements, the graph's " + what + " " + shape + " has " + std::to_string(expected));
  }

  void run(const stream_type* x, element_type* y) {
    if (x == nullptr || y == nullptr)  // a moved-from tensor has no storage
      throw std::invalid_argument(std::string("ipu::engine: the ") + (x == nullptr ? "input" : "output") +
                                  " tensor has no storage (was it moved from?)");
    const std::lock_guard one_batch_at_a_time(*batch_);
    executor_.run(x, y, seconds_);
    record(seconds_);
  }

  /// Adds a batch's host seconds per step to the profile, and logs them at `debug`.
  void record(const std::vector<double>& seconds) {
    profile_.record_batch(seconds);
    runtime::log_batch_steps(profile_, seconds, profile_.batches_measured());
  }

  /// `run` over the stages of a pipeline (`engine_config::pipelined`): stage 0 takes the
  /// batches from the infeed, the last writes the results into the outfeed, as `run` says.
  template <int Depth, outfeed_mode Mode>
  void stream(runtime::inference_pipeline<element_type, partial_type>& pipe, infeed<G, Depth>& in, outfeed<G, Mode>& out,
              std::int64_t iterations, run_stats& stats, const std::stop_token& out_destroyed) {
    using clock = std::chrono::steady_clock;
    const std::lock_guard one_run_at_a_time(*batch_);
    std::int64_t taken = 0;
    bool read = true, in_stage = false, from_infeed = false, refused = false;
    try {
      pipe.stream(
          [&](auto&& run_first, const std::stop_token& stop) {
            if (taken == iterations) return false;
            if (taken > 0 && runtime::runs_dry(in)) ++stats.infeed_ran_dry;
            const auto waiting = clock::now();
            try {
              read = in.consume([&](const input_type& x) {
                stats.infeed_wait_seconds += runtime::seconds_since(waiting);
                if (x.data() == nullptr) {
                  refused = true;
                  throw std::invalid_argument("ipu::engine: the input tensor has no storage (was it moved from?)");
                }
                in_stage = true;
                run_first(x.data());
                in_stage = false;
              }, stop);
            } catch (...) {
              from_infeed = !in_stage;
              throw;
            }
            taken += read ? 1 : 0;
            return read;
          },
          [&](auto&& write) {
            out.emplace([&](output_type& y) { record(write(y.data())); });
            ++stats.iterations;
          },
          out_destroyed);
    } catch (...) {
      if (!from_infeed || refused) in.cancel();  // a batch failed in the engine: release the producer
      if (!out_destroyed.stop_requested()) out.abort(std::current_exception());
      throw;
    }
    for (int s = 0; s < pipe.stages(); ++s) stats.compute_seconds = std::max(stats.compute_seconds, pipe.busy_seconds(s));
    if (out_destroyed.stop_requested()) {
      in.cancel();
      throw channel_error(detail::channel_core::destroyed_message);
    }
    if (!read) {
      stats.cancelled = in.cancelled();
      stats.end_of_stream = !stats.cancelled;
      if (stats.end_of_stream) out.close();
    }
  }

  /// The kernels of the graph's ops (`Op::kernel`, from `ipu/ops/kernels.hpp` or the user's
  /// code).
  static runtime::kernel_set<element_type, partial_type> kernels() {
    runtime::kernel_set<element_type, partial_type> set;
    detail::for_each_op<graph_type>([&]<class Op>() { set.template add<Op>(); });
    return set;
  }

  /// The tensors as the device holds them (`runtime::device_parameters`), each value checked
  /// to be finite in the element type (`runtime::check_finite_in`).
  static runtime::parameter_set parameters(const weights<G>& w) {
    w.validate();
    const std::span<const layer_weights> layers(w.begin(), w.end());
    runtime::parameter_set set = runtime::device_parameters(layers, node_count_v<G>);
    runtime::check_finite_in<element_type>(layers, set);
    return set;
  }

  runtime::executor<element_type, partial_type> executor_;
  ipu::profile profile_;
  std::vector<double> seconds_;
  std::unique_ptr<std::mutex> batch_ = std::make_unique<std::mutex>();  // held while a batch runs; by pointer, so the engine moves
};

}  // namespace ipu
