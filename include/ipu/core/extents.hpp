#pragma once
/// \file
/// Extents as text, for messages.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace ipu::detail {

/// The extents in brackets, outermost first: `"[4, 224, 224, 4]"` (`"[]"` for a scalar).
inline std::string extents_string(std::span<const std::int64_t> extents) {
  std::string s = "[";
  for (std::size_t k = 0; k < extents.size(); ++k) s += (k ? ", " : "") + std::to_string(extents[k]);
  return s + "]";
}

}  // namespace ipu::detail
