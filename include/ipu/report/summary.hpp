#pragma once
/// \file
/// `ipu::summary<G>()`: a Keras-style table of a graph, one row per node (path, op, output
/// shape, parameters, MACs, IPU) with totals; `ipu::summary<ipu::training<G, Opts>>()` (in
/// `ipu/report/training_report.hpp`) adds the training configuration: the optimiser, the
/// precision, the loss and the schedule, the values training updates and keeps, and the MACs
/// of a training step.

#include <ipu/core/format.hpp>
#include <ipu/core/stream_state.hpp>
#include <ipu/graph/node.hpp>
#include <ipu/graph/queries.hpp>
#include <ipu/ops/conv.hpp>
#include <ipu/ops/dense.hpp>
#include <ipu/ops/op.hpp>
#include <ipu/train/options.hpp>

#include <algorithm>
#include <cstdint>
#include <iomanip>
#include <optional>
#include <ostream>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace ipu {

namespace detail {

/// `conv 3x3/2 g32`, `max_pool 3x3/2`, `dense 1000`, ...
inline std::string describe_op(const node& n) {
  std::ostringstream s;
  s << name_of(n.kind);
  n.kind.info->describe(s, n.layer);
  return s.str();
}

inline std::string to_string(const shape& s) {
  std::ostringstream o;
  o << s;
  return o.str();
}

/// The optimiser, the precision, the loss scaling and the recomputation of `t`, in words.
inline std::string describe(const train_options& t) {
  std::ostringstream os;
  const optimizer& o = t.optimizer;
  constexpr std::string_view optimizers[] = {"SGD", "Adam", "AdamW", "LAMB"};
  os << optimizers[static_cast<int>(o.kind)];
  if (o.kind == optimizer_kind::sgd && o.momentum.value() != 0) os << " with momentum";
  os << " (" << o.state_tensors() << (o.state_tensors() == 1 ? " state tensor" : " state tensors") << "), master weights "
     << (t.master_weights == dtype::f32 ? "f32" : "f16");
  if (t.master_weights == dtype::f16) os << (t.rounding == rounding::stochastic ? " (stochastic rounding)" : " (rounded to nearest)");
  if (t.loss_scaling.dynamic) os << ", dynamic loss scale from " << t.loss_scaling.factor.value();
  else if (t.loss_scaling.factor.value() != 1) os << ", loss scale " << t.loss_scaling.factor.value();
  constexpr std::string_view recomputes[] = {"none", "per block", "at checkpoints"};
  os << ", recompute " << recomputes[static_cast<int>(t.recompute)];
  return os.str();
}


/// The learning rate's schedule in words: `"constant"`, `"x0.1 every 30 steps"` or `"cosine decay
/// over 1,000 steps to 0 times it"`, then `", after 50 steps of linear warm-up"`.
inline std::string describe(const lr_schedule& s) {
  std::ostringstream os;
  if (s.how == lr_schedule::kind::step) os << 'x' << s.factor.value() << " every " << grouped(s.steps) << " steps";
  else if (s.how == lr_schedule::kind::cosine) os << "cosine decay over " << grouped(s.steps) << " steps to " << s.factor.value() << " times it";
  else os << "constant";
  if (s.warmup_steps > 0) os << ", after " << grouped(s.warmup_steps) << " steps of linear warm-up";
  return os.str();
}
}  // namespace detail

/// A printable summary of a node table, and of its training configuration if it has one.
class model_summary {
 public:
  /// Summarises `nodes` (any node table, e.g. `ipu::node_table_v<G>`), trained with `training`
  /// if given, whose recomputation repeats `recomputed_macs` of the forward pass's MACs.
  explicit model_summary(std::span<const node> nodes, std::optional<train_options> training = std::nullopt,
                         std::int64_t recomputed_macs = 0)
      : nodes_(nodes.begin(), nodes.end()), training_(training), recomputed_macs_(recomputed_macs) {}

  /// The nodes summarised.
  std::span<const node> nodes() const noexcept { return nodes_; }
  /// The training configuration summarised with them, if any.
  const std::optional<train_options>& training() const noexcept { return training_; }
  /// Sum of the nodes' trainable parameters.
  std::int64_t total_params() const noexcept { return sum(&node::params); }
  /// Sum of the nodes' multiply-accumulates for one pass of the batch.
  std::int64_t total_macs() const noexcept { return sum(&node::macs); }
  /// Values of every tensor of the layers (`ipu::weights`): the parameters and the batch
  /// norms' running statistics.
  std::int64_t total_values() const noexcept {
    std::int64_t total = 0;
    for (const node& n : nodes_) {
      const ops::tensor_specs specs = n.kind.info->tensors(n);
      for (const ops::tensor_spec& t : specs.view()) total += t.elements();
    }
    return total;
  }
  /// Multiply-accumulates of a backward pass of the batch: twice the forward's for each
  /// convolution and dense layer (the input's and the kernel's gradients), as the training plan
  /// counts their backward steps' work.
  std::int64_t backward_macs() const noexcept {
    std::int64_t total = 0;
    for (const node& n : nodes_)
      if (n.kind == op_of<ops::conv> || n.kind == op_of<ops::dense>) total += 2 * n.macs;
    return total;
  }
  /// The table as text.
  std::string str() const {
    std::ostringstream os;
    os << *this;
    return os.str();
  }

  /// Prints the table and the totals.
  friend std::ostream& operator<<(std::ostream& os, const model_summary& m) {
    const detail::stream_state keep(os);
    std::size_t path_width = 4, op_width = 16;
    for (const node& n : m.nodes_) {
      path_width = std::max(path_width, n.path.length);
      op_width = std::max(op_width, detail::describe_op(n).size());
    }
    const int op_column = static_cast<int>(op_width + 2);
    const auto rule = std::string(path_width + 2 + op_width + 2 + 20 + 14 + 18 + 5, '-');
    const node& in = m.nodes_.front();
    os << "input: " << name_of(in.type) << ' ' << in.out << ", " << m.nodes_.size() << " nodes\n"
       << std::left << std::setw(static_cast<int>(path_width + 2)) << "path" << std::setw(op_column) << "op"
       << std::setw(20) << "output shape" << std::right << std::setw(14) << "params" << std::setw(18) << "MACs"
       << std::setw(5) << "IPU" << '\n'
       << rule << '\n';
    for (const node& n : m.nodes_) {
      os << std::left << std::setw(static_cast<int>(path_width + 2)) << n.path.view() << std::setw(op_column)
         << detail::describe_op(n) << std::setw(20) << detail::to_string(n.out) << std::right << std::setw(14)
         << detail::grouped(n.params) << std::setw(18) << detail::grouped(n.macs) << std::setw(5);
      if (n.on_host()) os << "host" << '\n';
      else os << n.ipu << '\n';
    }
    const std::int64_t batch = in.out.dim[0];
    os << rule << '\n'
       << "total params: " << detail::grouped(m.total_params()) << '\n'
       << "total MACs:   " << detail::grouped(m.total_macs()) << " for a batch of " << batch << " ("
       << std::fixed << std::setprecision(3) << static_cast<double>(m.total_macs()) / static_cast<double>(batch) / 1e9
       << " G per sample)\n";
    if (m.training_) m.print_training(os, *m.training_);
    return os;
  }

 private:
  std::int64_t sum(std::int64_t node::*field) const noexcept {
    std::int64_t total = 0;
    for (const node& n : nodes_) total += n.*field;
    return total;
  }
  void print_training(std::ostream& os, const train_options& t) const {
    const std::int64_t trainable = total_params();
    const bool masters = t.master_weights == dtype::f32 && nodes_.back().type == dtype::f16;  // the graph's element type
    os << std::defaultfloat << "training: " << detail::describe(t) << '\n'
       << "  loss " << name_of(t.loss) << ", learning rate " << t.optimizer.learning_rate.value() << ", "
       << detail::describe(t.schedule) << '\n'
       << "  trained values: " << detail::grouped(trainable) << " of " << detail::grouped(total_values())
       << "; f32 master copies: " << detail::grouped(masters ? trainable : 0)
       << "; optimiser state: " << detail::grouped(t.optimizer.state_tensors() * trainable) << " values\n"
       << "  MACs of a step: " << detail::grouped(total_macs()) << " forward, ";
    if (t.recompute != recompute::none) os << detail::grouped(recomputed_macs_) << " recomputed, ";
    os << detail::grouped(backward_macs()) << " backward\n";
  }

  std::vector<node> nodes_;
  std::optional<train_options> training_;
  std::int64_t recomputed_macs_ = 0;
};

/// The summary of graph `G`.
template <Graph G>
model_summary summary() {
  return model_summary(node_table_v<G>);
}

}  // namespace ipu
