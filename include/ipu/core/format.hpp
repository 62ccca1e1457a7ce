#pragma once
/// \file
/// Numbers as the reports and the log print them.

#include <cstdint>
#include <iomanip>
#include <sstream>
#include <string>

namespace ipu::detail {

/// `1234567` as `"1,234,567"`.
inline std::string grouped(std::int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

/// `part / whole` as a percentage with one decimal: `"64.0%"`.
inline std::string percent(std::int64_t part, std::int64_t whole) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(1)
    << (whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0) << '%';
  return s.str();
}

}  // namespace ipu::detail
