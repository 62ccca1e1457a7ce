#pragma once
/// \file
/// `ipu::summary<G>()`: a Keras-style table of a graph, one row per node (path, op, output
/// shape, parameters, MACs, IPU) with totals.

#include <ipu/core/stream_state.hpp>
#include <ipu/graph/node.hpp>
#include <ipu/graph/queries.hpp>
#include <ipu/ops/op.hpp>

#include <algorithm>
#include <cstdint>
#include <iomanip>
#include <ostream>
#include <span>
#include <sstream>
#include <string>
#include <vector>

namespace ipu {

namespace detail {
/// `1234567` as `"1,234,567"`.
inline std::string grouped(std::int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

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
}  // namespace detail

/// A printable summary of a node table.
class model_summary {
 public:
  /// Summarises `nodes` (any node table, e.g. `ipu::node_table_v<G>`).
  explicit model_summary(std::span<const node> nodes) : nodes_(nodes.begin(), nodes.end()) {}

  /// The nodes summarised.
  std::span<const node> nodes() const noexcept { return nodes_; }
  /// Sum of the nodes' trainable parameters.
  std::int64_t total_params() const noexcept { return sum(&node::params); }
  /// Sum of the nodes' multiply-accumulates for one pass of the batch.
  std::int64_t total_macs() const noexcept { return sum(&node::macs); }
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
    return os;
  }

 private:
  std::int64_t sum(std::int64_t node::*field) const noexcept {
    std::int64_t total = 0;
    for (const node& n : nodes_) total += n.*field;
    return total;
  }
  std::vector<node> nodes_;
};

/// The summary of graph `G`.
template <Graph G>
model_summary summary() {
  return model_summary(node_table_v<G>);
}

}  // namespace ipu
