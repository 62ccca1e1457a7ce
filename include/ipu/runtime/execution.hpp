#pragma once
/// \file
/// What the executors share: the execution modes, the error they report, the weights they are
/// built from, and the arguments they hand the kernels (device tensors by name, a node's
/// window geometry and conv shape, rounding to the element type).

#include <ipu/graph/node.hpp>
#include <ipu/kernels/packed_conv.hpp>
#include <ipu/kernels/views.hpp>
#include <ipu/ops/registry.hpp>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string_view>
#include <vector>

namespace ipu {

/// How an engine executes its program.
enum class execution_mode : std::uint8_t {
  fast,      ///< host-sized work items over whole tensors; exchange only accounted
  faithful,  ///< every tile's memory image, real exchange between images, measured memory
};

/// `"fast"` or `"faithful"`.
constexpr std::string_view name_of(execution_mode m) noexcept { return m == execution_mode::fast ? "fast" : "faithful"; }

/// The executor found the plan's promise broken (a buffer too small, a tile out of memory, a
/// vertex reaching outside its tile). Never expected; reported rather than undefined.
struct execution_error : std::logic_error {
  using std::logic_error::logic_error;
};

namespace runtime {

/// The weights an executor is built from: `params[j]` holds node `j`'s tensors in f32, in the
/// order of `ipu::weights` with batch norm already folded into scale and shift.
using parameter_set = std::vector<std::vector<std::vector<float>>>;

/// Device tensors by name (`ops::<op>::device_tensors`); conv and dense share the kernel's.
inline constexpr std::size_t kernel_tensor = ops::device_index<ops::conv>("kernel");
static_assert(kernel_tensor == ops::device_index<ops::dense>("kernel"));
/// \copydoc kernel_tensor
inline constexpr std::size_t bias_tensor = ops::device_index<ops::dense>("bias");
/// \copydoc kernel_tensor
inline constexpr std::size_t scale_tensor = ops::device_index<ops::batch_norm>("scale");
/// \copydoc kernel_tensor
inline constexpr std::size_t shift_tensor = ops::device_index<ops::batch_norm>("shift");

/// `x` rounded to `T` and widened back to f32.
template <ElementType T>
float round_to(float x) noexcept {
  return kernels::widen(static_cast<T>(x));
}

/// The sliding-window geometry of a conv or pooling node (a global pooling is a 1x1 window
/// over every pixel); empty for a dense layer.
inline kernels::window_geometry geometry_of(const node& n) noexcept {
  if (n.kind == op::dense) return {};
  const std::int64_t k = n.kind == op::global_avg_pool ? 1 : n.layer.kernel;
  return kernels::window_geometry::same(n.in.dim[1], n.in.dim[2], n.out.dim[1], n.out.dim[2], k, n.layer.stride);
}

/// The `packed_conv` shape of a conv node, or of a dense layer as a 1x1 conv over N positions.
inline kernels::conv_shape conv_shape_of(const node& n) noexcept {
  if (n.kind == op::dense) return {n.in.dim[0], 1, 1, n.in.channels(), n.out.channels(), 1, 1, 1};
  return {n.in.dim[0], n.in.dim[1], n.in.dim[2], n.in.channels(), n.out.channels(), n.layer.kernel, n.layer.stride,
          n.layer.groups};
}

}  // namespace runtime
}  // namespace ipu
