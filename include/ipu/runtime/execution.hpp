#pragma once
/// \file
/// What the executors share: the execution modes, the error they report and the weights they
/// are built from.

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
/// order of its op's `device_tensors` (batch norm's folded into scale and shift).
using parameter_set = std::vector<std::vector<std::vector<float>>>;

}  // namespace runtime
}  // namespace ipu
