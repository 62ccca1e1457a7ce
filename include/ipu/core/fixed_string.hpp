#pragma once
/// \file
/// Strings usable at compile time: `ipu::fixed_string<N>` for names written in template
/// arguments (`nn::scope<"stage1">`), and `ipu::path_string` for the dotted path of a node.

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string_view>

namespace ipu {

/// A string literal as a structural value, so that it can be a template argument.
/// `N` counts the terminating NUL.
///
/// \tparam N  size of the literal in characters, terminating NUL included (deduced from it)
template <std::size_t N>
struct fixed_string {
  char text[N]{};  ///< the literal's characters, terminating NUL included
  /// Copies the literal \p s; implicit, so that `scope<"stage1">` deduces `N` from the literal.
  /// Only usable at compile time.
  consteval fixed_string(const char (&s)[N]) {  // NOLINT(google-explicit-constructor): CTAD from literals
    for (std::size_t i = 0; i < N; ++i) text[i] = s[i];
  }
  /// The characters without the terminating NUL (`N - 1` of them).
  constexpr std::string_view view() const noexcept { return {text, N - 1}; }
};

/// The dotted path of a node (`stage3.block2.conv2`): a bounded string held by value in node
/// tables. Appending past `capacity` sets `overflow` instead of writing.
struct path_string {
  /// Longest path, in characters.
  static constexpr std::size_t capacity = 79;
  char text[capacity + 1]{};  ///< the characters, always followed by a NUL
  std::size_t length = 0;     ///< characters in use, at most `capacity`
  bool overflow = false;      ///< set when an append was cut short at `capacity`

  /// The empty path.
  constexpr path_string() = default;
  /// The path \p s, cut to `capacity` characters (setting `overflow`) if longer. Implicit, so
  /// that a string can be passed wherever a path is expected.
  constexpr path_string(std::string_view s) { append(s); }  // NOLINT(google-explicit-constructor)

  /// Appends the characters of \p s, stopping at `capacity` and setting `overflow` if they do
  /// not all fit. Returns `*this`.
  constexpr path_string& append(std::string_view s) noexcept {
    for (char c : s) {
      if (length == capacity) {
        overflow = true;
        break;
      }
      text[length++] = c;
    }
    return *this;
  }
  /// Appends \p v in decimal (with a leading `-` if negative), like `append(std::string_view)`
  /// for overflow. Returns `*this`.
  constexpr path_string& append(std::int64_t v) noexcept {
    char digits[20]{};
    std::size_t n = 0;
    if (v < 0) {
      append("-");
      v = -v;
    }
    do digits[n++] = static_cast<char>('0' + v % 10); while ((v /= 10) != 0);
    while (n > 0) append(std::string_view(&digits[--n], 1));
    return *this;
  }
  /// The `length` characters of the path.
  constexpr std::string_view view() const noexcept { return {text, length}; }
  /// True when both paths have the same characters (`overflow` is not compared).
  constexpr bool operator==(const path_string& o) const noexcept { return view() == o.view(); }
  /// True when the path's characters are exactly \p o.
  constexpr bool operator==(std::string_view o) const noexcept { return view() == o; }
};

/// Writes the path's characters to \p os.
inline std::ostream& operator<<(std::ostream& os, const path_string& p) { return os << p.view(); }

}  // namespace ipu
