#pragma once
/// \file
/// What the executors share: the execution modes, the error they report and the weights they
/// are built from.

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
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

/// A step produced a NaN or an infinity, found by the opt-in check
/// (`engine_config::check_finite`). The message names the step, its layer and op, the first
/// such element (its index and coordinates in the logical output) and its value.
class non_finite_error : public std::runtime_error {
 public:
  /// The error for element `index` (logical order) of step `step`'s output, whose value is
  /// `value`; `what` is the message.
  non_finite_error(const std::string& what, int step, std::int64_t index, double value)
      : std::runtime_error(what), step_(step), index_(index), value_(value) {}
  /// The step (a node index) whose output holds the value: the first in the batch.
  int step() const noexcept { return step_; }
  /// The first non-finite element of its output, in logical (NHWC or NC) order.
  std::int64_t index() const noexcept { return index_; }
  /// That element's value: a NaN or an infinity.
  double value() const noexcept { return value_; }

 private:
  int step_;
  std::int64_t index_;
  double value_;
};

namespace runtime {

/// The weights an executor is built from: `params[j]` holds node `j`'s tensors in f32, in the
/// order of its op's `device_tensors` (batch norm's folded into scale and shift).
using parameter_set = std::vector<std::vector<std::vector<float>>>;

/// Seconds since `start` on the steady clock: the host time of a step.
inline double seconds_since(std::chrono::steady_clock::time_point start) noexcept {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
}  // namespace runtime
}  // namespace ipu
