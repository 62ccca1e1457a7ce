#pragma once
/// \file
/// The ops of the library and `ops::visit`, the one dispatch from a node's `op` tag to its op
/// struct. Every compile-time fact about an op is reached through it: lowering, plan,
/// weights, engine and summary hold no switch over op kinds.

#include <ipu/ops/add.hpp>
#include <ipu/ops/batch_norm.hpp>
#include <ipu/ops/concat.hpp>
#include <ipu/ops/conv.hpp>
#include <ipu/ops/dense.hpp>
#include <ipu/ops/global_avg_pool.hpp>
#include <ipu/ops/input.hpp>
#include <ipu/ops/pool.hpp>
#include <ipu/ops/relu.hpp>
#include <ipu/ops/softmax.hpp>

namespace ipu::ops {

/// Calls `f(Op{})` with the op struct of `kind` and returns what it returns (the same type for
/// every op).
template <class F>
constexpr decltype(auto) visit(op kind, F&& f) {
  switch (kind) {
    case op::input: return f(input{});
    case op::conv: return f(conv{});
    case op::batch_norm: return f(batch_norm{});
    case op::relu: return f(relu{});
    case op::max_pool: return f(max_pool{});
    case op::avg_pool: return f(avg_pool{});
    case op::global_avg_pool: return f(global_avg_pool{});
    case op::dense: return f(dense{});
    case op::softmax: return f(softmax{});
    case op::add: return f(add{});
    case op::concat: return f(concat{});
    case op::multiply: return f(multiply{});
  }
  return f(input{});  // not reached: every enumerator is handled above
}

/// Whether nodes of `kind` have weight tensors (and a `layer_weights` in `ipu::weights`).
constexpr bool has_weights(op kind) noexcept {
  return visit(kind, []<class Op>(Op) { return !Op::device_tensors.empty(); });
}

}  // namespace ipu::ops

namespace ipu {
/// The name of `o` as written in `ipu::nn` (`"conv"`, `"batch_norm"`, ...).
constexpr std::string_view name_of(op o) noexcept {
  return ops::visit(o, []<class Op>(Op) { return Op::name; });
}
}  // namespace ipu
