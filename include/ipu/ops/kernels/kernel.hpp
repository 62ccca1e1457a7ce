#pragma once
/// \file
/// What every op's kernel builds on. An op names its kernel in its header (`struct kernel;` in
/// `ipu/ops/<op>.hpp`, which the plan reads without any host code) and defines it in
/// `ipu/ops/kernels/<op>.hpp`: a struct of static member templates, each handed a context by
/// an executor.
///
/// | member | mode | what it does |
/// |---|---|---|
/// | `prepare<T, Acc>(n, p, tensors, previous)` | fast | the node's device tensors as `fast` reads them, once per engine and after each training update (`std::any`; none by default); `previous` is what it prepared before (empty at first), whose storage it may reuse |
/// | `fast(c)` | fast | the step's whole output over host tensors (`runtime::fast_executor::context`) |
/// | `fuse(e, c, k, previous)` | fast | for an op with `epilogue_order > 0`: sets its part of a convolution's epilogue |
/// | `exchange(c)` | faithful | gathers into a tile's exchange buffer what its `compute` reads (nothing by default; `runtime::faithful_executor::tile_context`) |
/// | `compute(c)` | faithful | the tile's share of the output, from the tile's own memory |
/// | `forward_training(c)` | training | the training forward where it differs from `fast` (batch norm's batch statistics); absent otherwise (`runtime::training_context`) |
/// | `backward(c)` | training | adds the gradients of the inputs and the weights, from the output's gradient |
///
/// Both modes give the same bits: each output element gets the same arithmetic, in the same
/// order, whatever the partition into work items or tiles.

#include <ipu/core/dtype.hpp>
#include <ipu/graph/node.hpp>
#include <ipu/kernels/conv.hpp>
#include <ipu/kernels/packed_conv.hpp>
#include <ipu/kernels/pointwise.hpp>
#include <ipu/kernels/pool.hpp>
#include <ipu/kernels/views.hpp>
#include <ipu/ops/dense.hpp>
#include <ipu/ops/op.hpp>
#include <ipu/plan/node_plan.hpp>
#include <ipu/target/layout.hpp>

#include <algorithm>
#include <any>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace ipu::ops {

/// `x` rounded to `T` and widened back to f32.
template <ElementType T>
float round_to(float x) noexcept {
  return kernels::widen(static_cast<T>(x));
}

/// `values` rounded to `T`, in f32.
template <ElementType T>
std::vector<float> rounded(std::span<const float> values) {
  std::vector<float> r(values.size());
  std::transform(values.begin(), values.end(), r.begin(), round_to<T>);
  return r;
}
/// `values` rounded to `T`, in f32, into `to` (in its storage where it fits).
template <ElementType T>
void assign_rounded(std::vector<float>& to, std::span<const float> values) {
  to.resize(values.size());
  std::transform(values.begin(), values.end(), to.begin(), round_to<T>);
}

/// The sliding-window geometry of a conv or pooling node; empty for a dense layer.
inline kernels::window_geometry geometry_of(const node& n) noexcept {
  if (n.kind == op_of<dense>) return {};
  return kernels::window_geometry::of(n.in.dim[1], n.in.dim[2], n.out.dim[1], n.out.dim[2], n.layer.kernel,
                                      n.layer.stride, n.layer.dilation, n.layer.pad);
}

}  // namespace ipu::ops
