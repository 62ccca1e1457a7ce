#pragma once
/// \file
/// `runtime::pipeline`: a training window of micro-batches over pipeline stages, one per IPU,
/// each stage on its own host thread with its own threads for its steps, as the IPUs of a
/// pipeline run at once. The stages are connected by channels that carry what the IPU-Links
/// carry: after stage `s`'s forward pass of a micro-batch, the outputs of stages `0..s` that
/// later stages read; after its backward pass, the gradients of the outputs of stages before
/// it that it or later stages read. Each stage runs its passes in the order of the schedule
/// (`ipu::for_each_stage_pass`), and holds one `training_pass` per micro-batch in flight
/// (`ipu::pipeline_stash_depth`): the stash of activations that the stage keeps until the
/// micro-batch's backward pass.
///
/// The arithmetic is a training pass's, node by node: a stage's steps compute what the same
/// steps of one pass over the whole graph compute, and a gradient that several stages add to
/// receives their contributions in the same order (its readers from last to first, as the
/// stages run backward from the last), so a window gives the same bits as the same
/// micro-batches run one after another on one pass. What each stage does around its passes
/// (where its input comes from, the loss, what happens to its weights' gradients) is the
/// caller's, through the hooks of `run`.

#include <ipu/core/dtype.hpp>
#include <ipu/graph/node.hpp>
#include <ipu/runtime/channel.hpp>
#include <ipu/runtime/execution.hpp>
#include <ipu/runtime/program.hpp>
#include <ipu/runtime/team.hpp>
#include <ipu/runtime/training_pass.hpp>
#include <ipu/runtime/weights.hpp>
#include <ipu/train/pipeline.hpp>
#include <ipu/train/stages.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

namespace ipu::runtime {

/// What crosses from one stage to the next for one micro-batch: node outputs forward, or
/// their gradients backward, in the order of the link's nodes.
template <class V>
struct stage_message {
  std::int64_t micro = 0;                ///< the micro-batch
  std::vector<std::vector<V>> tensors;   ///< one per node of the link
};

/// The slots of a link between two stages: the most micro-batches a stage holds at once
/// (`2 N` for the grouped schedule over `N` stages), so a link is never full.
inline constexpr std::size_t stage_link_capacity = 2 * static_cast<std::size_t>(max_pipeline_stages);

/// A training window over pipeline stages (see the file comment).
template <ElementType T>
class pipeline {
 public:
  /// Stages over the IPUs of `prog`'s nodes (node `j` on stage `prog.at(j).ipu`; the IPUs must
  /// not decrease along the table, and no node may run on the host), running windows of
  /// `accumulation` micro-batches with `schedule`, each stage's steps on `threads_per_stage`
  /// threads, with `kernels` and `training` (one per node, as `training_pass` takes them) for
  /// weights laid out as `layers`. Throws `execution_error` for a program that cannot be
  /// pipelined, or an accumulation the schedule does not accept.
  pipeline(const program& prog, const std::vector<op_kernel<T, float>>& kernels,
           const std::vector<training_kernel<T>>& training, std::span<const layer_weights> layers,
           pipeline_schedule schedule, std::int64_t accumulation, unsigned threads_per_stage)
      : schedule_(schedule), accumulation_(accumulation) {
    const int n = prog.size();
    const std::span<const node> table(prog.nodes);
    const int stages = pipeline_stages(table);
    if (const int j = pipeline_out_of_order(table); j >= 0)
      throw execution_error("ipu::trainer: " + std::string(prog.at(j).path.view()) +
                            (prog.at(j).on_host() ? " runs on the host" : " is on an IPU before the previous layer's") +
                            "; a pipeline's stages are the IPUs, in order");
    if (const int s = pipeline_empty_stage(table); s >= 0)
      throw execution_error("ipu::trainer: no layer is placed on IPU " + std::to_string(s) +
                            "; a pipeline's stages are the IPUs 0 to " + std::to_string(stages - 1) + ", each holding layers");
    if (stages > max_pipeline_stages)
      throw execution_error("ipu::trainer: " + std::to_string(stages) + " pipeline stages; at most " +
                            std::to_string(max_pipeline_stages) + " are supported");
    if (!pipeline_accepts(schedule, stages, accumulation))
      throw execution_error("ipu::trainer: the " + std::string(name_of(schedule)) + " schedule over " +
                            std::to_string(stages) + " stages needs a gradient accumulation count that is a positive multiple of " +
                            std::to_string(pipeline_overlap(schedule, stages)) + ", not " + std::to_string(accumulation));
    stages_.resize(static_cast<std::size_t>(stages));
    for (int s = 0; s < stages; ++s) {
      stage& st = stages_[static_cast<std::size_t>(s)];
      const auto on_stage = [&](const node& x) { return x.ipu == s; };
      const auto first = std::find_if(table.begin(), table.end(), on_stage);
      st.nodes.first = static_cast<int>(first - table.begin());
      st.nodes.last = static_cast<int>(std::find_if_not(first, table.end(), on_stage) - table.begin()) - 1;
      st.threads = std::make_unique<team>(threads_per_stage);
      const int depth = pipeline_stash_depth(schedule, stages, s, accumulation);
      for (int d = 0; d < depth; ++d)
        st.slots.push_back(std::make_unique<training_pass<T>>(prog, kernels, training, *st.threads, layers));
      // What crosses to the next stage: the outputs of this stage and the ones before it that
      // a later stage reads.
      for (int k = 0; k <= st.nodes.last && s + 1 < stages; ++k)
        for (int r = st.nodes.last + 1; r < n; ++r)
          if (prog.at(r).reads(k)) {
            st.sends.push_back(k);
            break;
          }
    }
    for (int s = 0; s + 1 < stages; ++s) {
      forward_.push_back(std::make_unique<channel<stage_message<T>, stage_link_capacity>>());
      backward_.push_back(std::make_unique<channel<stage_message<float>, stage_link_capacity>>());
    }
  }

  /// Pipeline stages.
  int stages() const noexcept { return static_cast<int>(stages_.size()); }
  /// The nodes of stage `s`.
  node_range nodes_of(int s) const noexcept { return stages_[static_cast<std::size_t>(s)].nodes; }
  /// The passes of stage `s`: one per micro-batch it holds at once.
  int depth_of(int s) const noexcept { return static_cast<int>(stages_[static_cast<std::size_t>(s)].slots.size()); }
  /// Host seconds of node `j`'s forward steps, summed over its stage's passes.
  double forward_seconds(int j) const noexcept { return summed(j, &training_pass<T>::forward_seconds); }
  /// Host seconds of node `j`'s recompute steps, summed over its stage's passes.
  double recompute_seconds(int j) const noexcept { return summed(j, &training_pass<T>::recompute_seconds); }
  /// Host seconds of node `j`'s backward steps, summed over its stage's passes.
  double backward_seconds(int j) const noexcept { return summed(j, &training_pass<T>::backward_seconds); }

  /// Runs a window: every stage's passes on its own thread, in the schedule's order, calling
  /// on the stage's thread
  ///   - `h.begin(pass, s, m)` before stage `s`'s forward pass of micro-batch `m`: it calls
  ///     `pass.begin` (stage 0 with the micro-batch's input) with `nodes_of(s)`;
  ///   - `h.forwarded(s, m)` after it;
  ///   - `h.before_backward(s, m)` before the backward pass;
  ///   - `h.loss(pass, m)` on the last stage, which sets the gradient of the node the loss
  ///     reads and returns that node;
  ///   - `h.backwarded(s, m)` after the backward pass, when the weights' gradients of the
  ///     stage's layers hold the micro-batch's.
  /// Rethrows the first exception a stage threw, after stopping the others.
  template <class Hooks>
  void run(Hooks& h) {
    for (auto& link : forward_) link->reset();
    for (auto& link : backward_) link->reset();
    std::exception_ptr first;
    std::mutex m;
    on_own_threads<stopped>(stages(), [&](int s) { run_stage(s, h); }, [&] {
      const std::lock_guard lock(m);
      if (!first) first = std::current_exception();
      stop();
    });
    if (first) std::rethrow_exception(first);
  }

 private:
  /// Thrown on a stage's thread when another stage failed and the links were cancelled.
  struct stopped {};

  struct stage {
    node_range nodes;                                     // its nodes
    std::unique_ptr<team> threads;                        // its steps' threads
    std::vector<std::unique_ptr<training_pass<T>>> slots; // one per micro-batch in flight
    std::vector<int> sends;                               // the outputs it sends on, ascending
  };

  /// `seconds(j)` of node `j`, summed over the passes of its stage.
  double summed(int j, double (training_pass<T>::*seconds)(int) const noexcept) const noexcept {
    double total = 0;
    for (const stage& st : stages_)
      if (st.nodes.contains(j))
        for (const auto& pass : st.slots) total += ((*pass).*seconds)(j);
    return total;
  }

  /// Cancels every link: a stage waiting on one, or reaching one, stops.
  void stop() {
    for (auto& link : forward_) link->cancel();
    for (auto& link : backward_) link->cancel();
  }

  template <class Hooks>
  void run_stage(int s, Hooks& h) {
    stage& st = stages_[static_cast<std::size_t>(s)];
    const bool last = s + 1 == stages();
    for_each_stage_pass(schedule_, stages(), s, accumulation_, [&](const stage_pass& p) {
      training_pass<T>& pass = *st.slots[static_cast<std::size_t>(p.micro % depth_of(s))];
      if (!p.backward) {
        h.begin(pass, s, p.micro);
        if (s > 0) receive(*forward_[static_cast<std::size_t>(s - 1)], p.micro, [&](std::size_t i, const std::vector<T>& v) {
            std::copy(v.begin(), v.end(), pass.value(sends_of(s - 1)[i]));
          });
        for (int j = st.nodes.first; j <= st.nodes.last; ++j) pass.forward_step(j);
        h.forwarded(s, p.micro);
        if (!last) send(*forward_[static_cast<std::size_t>(s)], p.micro, st.sends, [&](int k, std::vector<T>& out) {
            const T* v = pass.value(k);
            out.assign(v, v + pass.prog().at(k).out.elements());
          });
        return;
      }
      h.before_backward(s, p.micro);
      int from = st.nodes.last;
      if (last) {
        from = h.loss(pass, p.micro);
        pass.begin_backward(from);
      } else {
        pass.begin_backward();
        receive(*backward_[static_cast<std::size_t>(s)], p.micro, [&](std::size_t i, const std::vector<float>& g) {
          if (!g.empty()) pass.receive_gradient(st.sends[i], g);
        });
      }
      for (int j = std::min(from, st.nodes.last); j >= std::max(st.nodes.first, 1); --j)
        if (pass.grad_of(j) != nullptr) pass.backward_step(j);
      if (s > 0) send(*backward_[static_cast<std::size_t>(s - 1)], p.micro, sends_of(s - 1), [&](int k, std::vector<float>& out) {
          const float* g = pass.grad_of(k) != nullptr ? pass.summed_grad(k) : nullptr;
          if (g == nullptr) return out.clear();  // the graph's input: no gradient
          out.assign(g, g + pass.prog().at(k).out.elements());
        });
      h.backwarded(s, p.micro);
    });
  }

  const std::vector<int>& sends_of(int s) const noexcept { return stages_[static_cast<std::size_t>(s)].sends; }

  /// Sends micro-batch `micro`'s tensors of `nodes` (`fill(node, out)` writes each) on `link`.
  template <class V, class Fill>
  void send(channel<stage_message<V>, stage_link_capacity>& link, std::int64_t micro, const std::vector<int>& nodes, Fill&& fill) {
    const bool sent = link.emplace([&](stage_message<V>& msg) {
      msg.micro = micro;
      msg.tensors.resize(nodes.size());
      for (std::size_t i = 0; i < nodes.size(); ++i) fill(nodes[i], msg.tensors[i]);
    });
    if (!sent) throw stopped{};
  }

  /// Receives micro-batch `micro`'s tensors from `link`, `take(i, tensor)` for each.
  template <class V, class Take>
  void receive(channel<stage_message<V>, stage_link_capacity>& link, std::int64_t micro, Take&& take) {
    const bool received = link.consume([&](const stage_message<V>& msg) {
      if (msg.micro != micro)
        throw execution_error("ipu::trainer: a pipeline stage received micro-batch " + std::to_string(msg.micro) +
                              " in place of " + std::to_string(micro));
      for (std::size_t i = 0; i < msg.tensors.size(); ++i) take(i, msg.tensors[i]);
    });
    if (!received) throw stopped{};
  }

  pipeline_schedule schedule_;
  std::int64_t accumulation_;
  std::vector<stage> stages_;
  std::vector<std::unique_ptr<channel<stage_message<T>, stage_link_capacity>>> forward_;   // stage s to s + 1
  std::vector<std::unique_ptr<channel<stage_message<float>, stage_link_capacity>>> backward_;  // stage s + 1 to s
};

}  // namespace ipu::runtime
