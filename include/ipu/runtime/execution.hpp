#pragma once
/// \file
/// What the executors share: the execution modes, the errors they report and the weights they
/// are built from.

#include <ipu/graph/node.hpp>
#include <ipu/ops/op.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <span>
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

/// Throws `non_finite_error` if `values`, the output of node `n` (step `j`) in logical order,
/// just computed, hold a NaN or an infinity: the message names the step, its layer and op, the
/// first such element and its coordinates, and its value (`engine_config::check_finite`).
template <class T>
void check_finite_output(const node& n, int j, std::span<const T> values) {
  const auto bad = std::find_if(values.begin(), values.end(), [](T v) { return !std::isfinite(static_cast<float>(v)); });
  if (bad == values.end()) return;
  const std::int64_t index = bad - values.begin();
  std::string at;
  std::int64_t r = index;
  std::array<std::int64_t, 4> coordinate{};
  for (int d = n.out.rank - 1; d >= 0; --d) {
    coordinate[static_cast<std::size_t>(d)] = r % n.out.dim[static_cast<std::size_t>(d)];
    r /= n.out.dim[static_cast<std::size_t>(d)];
  }
  for (int d = 0; d < n.out.rank; ++d) at += (d ? ", " : "") + std::to_string(coordinate[static_cast<std::size_t>(d)]);
  std::string shape = "[";
  for (int d = 0; d < n.out.rank; ++d) shape += (d ? ", " : "") + std::to_string(n.out.dim[static_cast<std::size_t>(d)]);
  shape += "]";
  const double value = static_cast<double>(static_cast<float>(*bad));
  throw non_finite_error("ipu::engine: step " + std::to_string(j) + " (" + std::string(n.path.view()) + ", " +
                             std::string(name_of(n.kind)) + (n.on_host() ? ", on the host" : "") +
                             ") produced a non-finite value: element " + std::to_string(index) + " [" + at +
                             "] of its output " + shape + " is " +
                             (std::isnan(value) ? "nan" : value > 0 ? "inf" : "-inf") +
                             "; every earlier step's output was finite",
                         j, index, value);
}

/// Seconds since `start` on the steady clock: the host time of a step.
inline double seconds_since(std::chrono::steady_clock::time_point start) noexcept {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
}  // namespace runtime
}  // namespace ipu
