#pragma once
// A strict JSON parser (RFC 8259) for the tests of ipu's JSON output: an independent check
// that a document is valid and that its strings decode to the text written.

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ipu_test {

/// A parsed JSON value: one of null, a boolean, a number, a string, an array or an object.
struct json_value {
  enum class kind { null, boolean, number, string, array, object };
  kind type = kind::null;
  bool boolean = false;
  double number = 0;
  std::string string;                      ///< the decoded string (UTF-8)
  std::vector<json_value> items;           ///< an array's elements
  std::map<std::string, json_value> members;  ///< an object's members (the last of duplicates)

  /// Member `key` of an object; throws std::out_of_range if there is none.
  const json_value& operator[](const std::string& key) const { return members.at(key); }
};

/// `text` parsed as one JSON document, or nullopt if it is not valid JSON.
inline std::optional<json_value> parse_json(std::string_view text) {
  struct parser {
    std::string_view s;
    std::size_t i = 0;

    void space() {
      while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
    }
    bool literal(std::string_view word) {
      if (s.substr(i, word.size()) != word) return false;
      i += word.size();
      return true;
    }
    static int hex(char c) {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      return -1;
    }
    std::optional<unsigned> code_unit() {  // the four hex digits of \uXXXX
      if (i + 4 > s.size()) return std::nullopt;
      unsigned u = 0;
      for (int k = 0; k < 4; ++k) {
        const int d = hex(s[i++]);
        if (d < 0) return std::nullopt;
        u = u * 16 + static_cast<unsigned>(d);
      }
      return u;
    }
    static void utf8(std::string& out, unsigned cp) {
      if (cp < 0x80) {
        out += static_cast<char>(cp);
      } else if (cp < 0x800) {
        out += static_cast<char>(0xc0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3f));
      } else if (cp < 0x10000) {
        out += static_cast<char>(0xe0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
        out += static_cast<char>(0x80 | (cp & 0x3f));
      } else {
        out += static_cast<char>(0xf0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
        out += static_cast<char>(0x80 | (cp & 0x3f));
      }
    }
    std::optional<std::string> string() {
      if (i >= s.size() || s[i] != '"') return std::nullopt;
      ++i;
      std::string out;
      while (i < s.size()) {
        const char c = s[i++];
        if (c == '"') return out;
        if (static_cast<unsigned char>(c) < 0x20) return std::nullopt;  // must be escaped
        if (c != '\\') {
          out += c;
          continue;
        }
        if (i >= s.size()) return std::nullopt;
        switch (s[i++]) {
          case '"': out += '"'; break;
          case '\\': out += '\\'; break;
          case '/': out += '/'; break;
          case 'b': out += '\b'; break;
          case 'f': out += '\f'; break;
          case 'n': out += '\n'; break;
          case 'r': out += '\r'; break;
          case 't': out += '\t'; break;
          case 'u': {
            std::optional<unsigned> u = code_unit();
            if (!u) return std::nullopt;
            unsigned cp = *u;
            if (cp >= 0xd800 && cp < 0xdc00) {  // a surrogate pair
              if (!literal("\\u")) return std::nullopt;
              const std::optional<unsigned> low = code_unit();
              if (!low || *low < 0xdc00 || *low >= 0xe000) return std::nullopt;
              cp = 0x10000 + ((cp - 0xd800) << 10) + (*low - 0xdc00);
            } else if (cp >= 0xdc00 && cp < 0xe000) {
              return std::nullopt;
            }
            utf8(out, cp);
            break;
          }
          default: return std::nullopt;
        }
      }
      return std::nullopt;  // no closing quote
    }
    bool digits() {
      const std::size_t start = i;
      while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
      return i > start;
    }
    std::optional<double> number() {
      const std::size_t start = i;
      if (i < s.size() && s[i] == '-') ++i;
      if (i < s.size() && s[i] == '0') {
        ++i;
      } else if (!digits()) {
        return std::nullopt;
      }
      if (i < s.size() && s[i] == '.' && (++i, !digits())) return std::nullopt;
      if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
        ++i;
        if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
        if (!digits()) return std::nullopt;
      }
      return std::stod(std::string(s.substr(start, i - start)));
    }
    std::optional<json_value> value(int depth) {
      if (depth > 64) return std::nullopt;
      space();
      json_value v;
      if (i >= s.size()) return std::nullopt;
      if (s[i] == '{') {
        ++i;
        v.type = json_value::kind::object;
        space();
        if (literal("}")) return v;
        for (;;) {
          space();
          std::optional<std::string> key = string();
          if (!key) return std::nullopt;
          space();
          if (!literal(":")) return std::nullopt;
          std::optional<json_value> member = value(depth + 1);
          if (!member) return std::nullopt;
          v.members[*key] = std::move(*member);
          space();
          if (literal("}")) return v;
          if (!literal(",")) return std::nullopt;
        }
      }
      if (s[i] == '[') {
        ++i;
        v.type = json_value::kind::array;
        space();
        if (literal("]")) return v;
        for (;;) {
          std::optional<json_value> item = value(depth + 1);
          if (!item) return std::nullopt;
          v.items.push_back(std::move(*item));
          space();
          if (literal("]")) return v;
          if (!literal(",")) return std::nullopt;
        }
      }
      if (s[i] == '"') {
        std::optional<std::string> str = string();
        if (!str) return std::nullopt;
        v.type = json_value::kind::string;
        v.string = std::move(*str);
        return v;
      }
      if (literal("null")) return v;
      if (literal("true") || literal("false")) {
        v.type = json_value::kind::boolean;
        v.boolean = s[i - 1] == 'e' && s[i - 2] == 'u';  // "true", not "false"
        return v;
      }
      std::optional<double> n = number();
      if (!n) return std::nullopt;
      v.type = json_value::kind::number;
      v.number = *n;
      return v;
    }
  };
  parser p{text};
  std::optional<json_value> v = p.value(0);
  p.space();
  if (!v || p.i != text.size()) return std::nullopt;
  return v;
}

}  // namespace ipu_test
