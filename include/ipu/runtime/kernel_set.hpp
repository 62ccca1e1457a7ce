#pragma once
/// \file
/// `runtime::op_kernel` and `runtime::kernel_set`: each op's kernel (`Op::kernel`, see
/// `ipu/ops/kernels/kernel.hpp`) as the executors call it, through function pointers, so that
/// the executors are compiled once per element type and run any op, the library's or a user's.
/// An engine gathers the kernels of its graph's ops from the graph's type.

#include <ipu/core/dtype.hpp>
#include <ipu/graph/node.hpp>
#include <ipu/kernels/packed_conv.hpp>
#include <ipu/ops/kernels/kernel.hpp>
#include <ipu/plan/node_plan.hpp>
#include <ipu/runtime/execution.hpp>

#include <algorithm>
#include <any>
#include <string>
#include <vector>

namespace ipu::runtime {

/// What both executors' contexts give an op's kernel about the step it runs: the element
/// types, the step's node, its plan and its index.
template <ElementType T, class Acc>
struct step_context {
  using value_type = T;       ///< the storage element type
  using partials_type = Acc;  ///< the partials type
  const node& n;              ///< the step's node
  const node_plan& p;         ///< its plan
  const int index;            ///< its index
};

template <ElementType T, class Acc>
class fast_context;
template <ElementType T, class Acc>
class tile_context;

/// One op's kernel for storage type `T` and partials `Acc`: `Op::kernel`'s members as function
/// pointers (`fuse` is null for an op that no epilogue absorbs).
template <ElementType T, class Acc>
struct op_kernel {
  op kind{};  ///< the op
  std::any (*prepare)(const node&, const node_plan&, ops::device_values, std::any) = nullptr;  ///< `Op::kernel::prepare<T, Acc>`
  void (*fast)(const fast_context<T, Acc>&) = nullptr;  ///< `Op::kernel::fast`
  void (*fuse)(kernels::epilogue<T>&, const fast_context<T, Acc>&, int, int) = nullptr;  ///< `Op::kernel::fuse`
  void (*exchange)(const tile_context<T, Acc>&) = nullptr;  ///< `Op::kernel::exchange`
  void (*compute)(const tile_context<T, Acc>&) = nullptr;   ///< `Op::kernel::compute`

  /// The kernel of op struct `Op`.
  template <class Op>
  static op_kernel of() noexcept {
    using K = typename Op::kernel;
    op_kernel k;
    k.kind = op_of<Op>;
    k.prepare = &K::template prepare<T, Acc>;
    k.fast = &K::template fast<fast_context<T, Acc>>;
    if constexpr (Op::epilogue_order > 0) k.fuse = &K::template fuse<T, fast_context<T, Acc>>;
    k.exchange = &K::template exchange<tile_context<T, Acc>>;
    k.compute = &K::template compute<tile_context<T, Acc>>;
    return k;
  }
};

/// Kernels of type `K`, one per op, found by op: each made by `K::template of<Op>()` and
/// naming its op in `kind`.
template <class K>
class kernels_by_op {
 public:
  /// Adds `Op`'s kernel, unless the set has it.
  template <class Op>
  void add() {
    if (!has(op_of<Op>)) kernels_.push_back(K::template of<Op>());
  }
  /// Whether the set has op `o`'s kernel.
  bool has(op o) const noexcept {
    return std::any_of(kernels_.begin(), kernels_.end(), [&](const K& k) { return k.kind == o; });
  }
  /// Op `o`'s kernel; throws `execution_error` if the set has none.
  const K& of(op o) const {
    for (const K& k : kernels_)
      if (k.kind == o) return k;
    throw execution_error("ipu: no kernel for op " + std::string(name_of(o)));
  }
  /// The kernel of each node of `nodes`, in order.
  std::vector<K> per_node(const std::vector<node>& nodes) const {
    std::vector<K> r;
    r.reserve(nodes.size());
    for (const node& n : nodes) r.push_back(of(n.kind));
    return r;
  }

 private:
  std::vector<K> kernels_;
};

/// The kernels of a set of ops, found by op.
template <ElementType T, class Acc>
class kernel_set : public kernels_by_op<op_kernel<T, Acc>> {};

}  // namespace ipu::runtime
