#pragma once
/// \file
/// Writes text as a JSON string, for ipu's JSON output (the profile, the memory report): every
/// name a user can choose (a target's, a layer path) goes through it; and writes a JSON file.

#include <fstream>
#include <ios>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ipu::detail {

/// `text` as a JSON string (RFC 8259, section 7), quotes included, when written to a stream:
/// `"` and `\` are escaped, as are the control characters U+0000 to U+001F (`\b`, `\f`, `\n`,
/// `\r`, `\t`, else `\u00XX`); every other byte is written as it is, so UTF-8 passes through.
/// The stream's format flags and width do not apply (the width is reset, as after any output).
struct json_string {
  std::string_view text;  ///< the characters to write

  /// Writes `s.text` quoted and escaped.
  friend std::ostream& operator<<(std::ostream& os, const json_string& s) {
    constexpr std::string_view hex = "0123456789abcdef";
    std::string out;
    out.reserve(s.text.size() + 2);
    out += '"';
    for (const char c : s.text) {
      const auto byte = static_cast<unsigned char>(c);
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
          if (byte < 0x20) {
            out += "\\u00";
            out += hex[byte >> 4];
            out += hex[byte & 0xf];
          } else {
            out += c;
          }
      }
    }
    out += '"';
    os.width(0);
    return os.write(out.data(), static_cast<std::streamsize>(out.size()));
  }
};

/// Writes file `path` with `write(stream)`; throws `std::runtime_error`, naming `who`, if it
/// cannot open or write it.
template <class Write>
void write_file(const std::string& path, std::string_view who, Write&& write) {
  std::ofstream f(path);
  if (!f) throw std::runtime_error(std::string(who) + ": cannot write " + path);
  write(f);
  f.flush();
  if (!f) throw std::runtime_error(std::string(who) + ": error writing " + path);
}

}  // namespace ipu::detail
