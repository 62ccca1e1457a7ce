#pragma once
/// \file
/// `runtime::inference_pipeline`: the fast mode of an engine whose graph is placed over
/// several IPUs, run as a pipeline (`engine_config::pipelined`). Each IPU's nodes are a stage
/// with its own host threads and its own `fast_executor` (its steps' weights and buffers
/// only). Stages are connected by channels that carry what the IPU-Links carry: after stage
/// `s` has run a batch, the outputs of stages `0..s` that later stages read.
///
/// - `run` passes one batch through the stages in turn (what `infer` does);
/// - `stream` runs the stages at once, each on a thread of its own, successive batches flowing
///   through them: while stage 1 runs batch `i`, stage 0 runs batch `i + 1`, as the IPUs of a
///   TensorFlow inference pipeline do.
///
/// A stage computes what the same steps of the whole graph compute, on the same values, so
/// every output has the bits of the unpipelined fast mode.

#include <ipu/core/dtype.hpp>
#include <ipu/graph/node.hpp>
#include <ipu/runtime/channel.hpp>
#include <ipu/runtime/execution.hpp>
#include <ipu/runtime/fast_executor.hpp>
#include <ipu/runtime/kernel_set.hpp>
#include <ipu/runtime/program.hpp>
#include <ipu/runtime/team.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <span>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

namespace ipu::runtime {

/// What crosses from one stage to the next for one batch.
template <class T>
struct inference_message {
  bool end = false;                     ///< no batch: the stream has ended
  std::vector<std::vector<T>> tensors;  ///< the link's node outputs, in the order of its nodes
  std::vector<double> seconds;          ///< host seconds of the batch's steps so far, by node
};

/// The slots of a link between two stages: one batch being sent while the next stage reads
/// the one before (double buffering).
inline constexpr std::size_t inference_link_capacity = 2;

/// A pipeline of a program's stages for inference (see the file comment).
template <ElementType T, class Acc>
class inference_pipeline {
 public:
  /// Stages over the IPUs of `prog`'s nodes (a stage per IPU holding nodes), sharing `threads`
  /// host threads (0: one per hardware thread; at least one per stage), laying out `params`
  /// for their steps with `kernels`; `prog` must outlive the pipeline. With `check_finite`,
  /// every step's output is checked (`check_finite_output`). Throws `execution_error` for a
  /// graph with host steps or whose IPUs decrease along the node table.
  inference_pipeline(const program& prog, const parameter_set& params, const std::vector<op_kernel<T, Acc>>& kernels,
                     unsigned threads, bool check_finite)
      : prog_(prog), check_finite_(check_finite) {
    const int n = prog.size();
    for (int j = 0; j < n; ++j) {
      const node& x = prog.at(j);
      if (x.on_host() || (j > 0 && x.ipu < prog.at(j - 1).ipu))
        throw execution_error("ipu::engine: " + std::string(x.path.view()) +
                              (x.on_host() ? " runs on the host" : " is on an IPU before the previous layer's") +
                              "; a pipeline's stages are the IPUs, in order");
    }
    for (int j = 0; j < n; ++j) {
      if (j > 0 && prog.at(j).ipu == prog.at(j - 1).ipu) {
        stages_.back().last = j;
        continue;
      }
      stage& st = stages_.emplace_back();
      st.first = st.last = j;
    }
    const unsigned all = threads != 0 ? threads : std::max(1u, std::thread::hardware_concurrency());
    const unsigned per_stage = std::max(1u, all / static_cast<unsigned>(stages_.size()));
    for (std::size_t s = 0; s < stages_.size(); ++s) {
      stage& st = stages_[s];
      st.threads = std::make_unique<team>(per_stage);
      st.exec = std::make_unique<fast_executor<T, Acc>>(prog, params, kernels, *st.threads,
                                                        step_selection{.first = st.first, .last = st.last});
      if (s + 1 < stages_.size())  // the outputs of this stage and those before it that a later stage reads
        for (int k = 0; k <= st.last; ++k)
          for (int r = st.last + 1; r < n; ++r)
            if (prog.at(r).reads(k)) {
              st.sends.push_back(k);
              break;
            }
    }
  }

  /// Pipeline stages.
  int stages() const noexcept { return static_cast<int>(stages_.size()); }
  /// The host threads of each stage.
  unsigned threads_per_stage() const noexcept { return stages_[0].threads->size(); }
  /// Host seconds stage `s` spent running its steps in the last `stream`.
  double busy_seconds(int s) const noexcept { return stages_[static_cast<std::size_t>(s)].busy; }

  /// Runs one batch through the stages in turn: `input` as the input stream carries it,
  /// `output` the graph's output; `step_seconds[j]` the host time of node `j`'s step.
  void run(const void* input, T* output, std::vector<double>& step_seconds) {
    inference_message<T> message;
    message.seconds.assign(static_cast<std::size_t>(prog_.size()), 0.0);
    for (int s = 0; s < stages(); ++s) {
      run_stage(s, s == 0 ? input : nullptr, message);
      if (s + 1 < stages()) fill(s, message);
    }
    stages_.back().exec->end(output);
    step_seconds = message.seconds;
  }

  /// Runs batches through the stages at once, each stage on a thread of its own:
  /// - stage 0 calls `source(run_first, stop)` for each batch: `source` returns false when
  ///   there are no more (`stop` is requested once another stage failed), or calls
  ///   `run_first(input)` with the batch where it lies, which runs stage 0's steps on it;
  /// - the last stage calls `sink(write)` for each batch: `sink` calls `write(output)`, which
  ///   runs the last stage's steps, writes the graph's output and returns the host seconds of
  ///   the batch's steps, by node.
  /// An exception from `source` outside `run_first` (the producer's) ends the stream after the
  /// batches before it, and is rethrown then; any other stops every stage, and the first is
  /// rethrown (the batches in flight are lost). A request on `stop` stops every stage too,
  /// and the stream returns.
  template <class Source, class Sink>
  void stream(Source&& source, Sink&& sink, const std::stop_token& stop = {}) {
    links_.clear();
    for (int s = 0; s + 1 < stages(); ++s) links_.push_back(std::make_unique<link>());
    for (stage& st : stages_) st.busy = 0;
    stop_ = std::stop_source{};
    const auto stop_all = [&] {
      stop_.request_stop();
      for (auto& l : links_) l->cancel();
    };
    std::exception_ptr failure, deferred;
    std::mutex m;
    const auto fail = [&] {
      const std::lock_guard lock(m);
      if (!failure) failure = std::current_exception();
      stop_all();
    };
    const std::stop_callback on_stop(stop, stop_all);
    on_own_threads<stopped>(stages(), [&](int s) {
      if (s == 0) deferred = first_stage(source);
      else later_stage(s, sink);
    }, fail);
    if (failure) std::rethrow_exception(failure);
    if (deferred) std::rethrow_exception(deferred);
  }

 private:
  /// Thrown on a stage's thread when another stage failed and the links were cancelled.
  struct stopped {};
  using link = channel<inference_message<T>, inference_link_capacity>;

  struct stage {
    int first = 0, last = 0;                          // its nodes
    std::unique_ptr<team> threads;                    // its steps' threads
    std::unique_ptr<fast_executor<T, Acc>> exec;      // its steps, weights and buffers
    std::vector<int> sends;                           // the outputs it sends on, ascending
    double busy = 0;                                  // seconds running steps in the last stream
    std::vector<T> checked;                           // the output being checked
  };

  /// Runs stage `s`'s steps: stage 0 on `input`, a later one on `message`'s tensors (the link
  /// from stage `s - 1`); adds each step's seconds to `message.seconds`.
  void run_stage(int s, const void* input, inference_message<T>& message) {
    stage& st = stages_[static_cast<std::size_t>(s)];
    if (s == 0) {
      st.exec->begin(input);
    } else {
      const std::vector<int>& from = stages_[static_cast<std::size_t>(s - 1)].sends;
      for (std::size_t i = 0; i < from.size(); ++i)
        std::copy(message.tensors[i].begin(), message.tensors[i].end(), st.exec->tensor(from[i]));
    }
    for (int j = st.first; j <= st.last; ++j) {
      const auto start = std::chrono::steady_clock::now();
      st.exec->step(j);
      const double seconds = seconds_since(start);
      message.seconds[static_cast<std::size_t>(j)] += seconds;
      st.busy += seconds;
      if (check_finite_) {
        st.exec->output_of(j, st.checked);
        check_finite_output(prog_.at(j), j, std::span<const T>(st.checked));
      }
    }
  }

  /// Replaces `message`'s tensors by stage `s`'s sends.
  void fill(int s, inference_message<T>& message) {
    const stage& st = stages_[static_cast<std::size_t>(s)];
    message.tensors.resize(st.sends.size());
    for (std::size_t i = 0; i < st.sends.size(); ++i) {
      const int k = st.sends[i];
      const T* v = st.exec->tensor(k);
      message.tensors[i].assign(v, v + prog_.at(k).out.elements());
    }
  }

  /// Sends `message` on the link after stage `s`, or throws `stopped`.
  void send(int s, inference_message<T>& message) {
    if (!links_[static_cast<std::size_t>(s)]->push(std::move(message))) throw stopped{};
  }

  /// Stage 0's loop; returns the source's own error, if it threw one.
  template <class Source>
  std::exception_ptr first_stage(Source& source) {
    std::exception_ptr deferred;
    for (;;) {
      inference_message<T> message;
      message.seconds.assign(static_cast<std::size_t>(prog_.size()), 0.0);
      bool running = false, more = false;
      try {
        more = source([&](const void* input) {
          running = true;
          run_stage(0, input, message);
          fill(0, message);
          running = false;
        }, stop_.get_token());
      } catch (...) {
        if (running) throw;  // the stage failed: stop every stage
        deferred = std::current_exception();
      }
      if (!more || deferred) {
        if (stop_.stop_requested()) throw stopped{};
        inference_message<T> end;
        end.end = true;
        send(0, end);
        return deferred;
      }
      send(0, message);
    }
  }

  /// Stage `s`'s loop (`s > 0`): receives, runs, and sends on or, as the last, gives to `sink`.
  template <class Sink>
  void later_stage(int s, Sink& sink) {
    const bool last = s + 1 == stages();
    for (;;) {
      inference_message<T> message;
      if (!links_[static_cast<std::size_t>(s - 1)]->pop(message)) throw stopped{};
      if (message.end) {
        if (!last) send(s, message);
        return;
      }
      if (last) {
        sink([&](T* output) -> const std::vector<double>& {
          run_stage(s, nullptr, message);
          stages_.back().exec->end(output);
          return message.seconds;
        });
      } else {
        run_stage(s, nullptr, message);
        fill(s, message);
        send(s, message);
      }
    }
  }

  const program& prog_;
  bool check_finite_ = false;
  std::vector<stage> stages_;
  std::vector<std::unique_ptr<link>> links_;  // stage s to s + 1, for a stream
  std::stop_source stop_;                     // requested when a stage failed
};

}  // namespace ipu::runtime
