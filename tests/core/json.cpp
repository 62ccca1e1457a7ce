// ipu::detail::json_string: the escapes RFC 8259 requires, checked as text and by parsing
// the written string back.
#include <ipu/core/json.hpp>

#include <catch2/catch.hpp>

#include "support/json_parser.hpp"

#include <iomanip>
#include <ios>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>

namespace {
std::string written(std::string_view text) {
  std::ostringstream os;
  os << ipu::detail::json_string{text};
  return os.str();
}

}  // namespace

TEST_CASE("json_string: quotes, backslashes and control characters are escaped") {
  CHECK(written("") == R"("")");
  CHECK(written("mk2") == R"("mk2")");
  CHECK(written(R"(say "hi")") == R"("say \"hi\"")");
  CHECK(written(R"(C:\dir)") == R"("C:\\dir")");
  CHECK(written("a\nb\tc\rd\be\ff") == R"("a\nb\tc\rd\be\ff")");
  CHECK(written(std::string_view("\x00\x01\x1f", 3)) == R"("\u0000\u0001\u001f")");
  CHECK(written("\x7f/ caf\xc3\xa9") == "\"\x7f/ caf\xc3\xa9\"");  // DEL, '/' and UTF-8 pass through
}

TEST_CASE("json_string: any text parses back to itself") {
  std::string all;
  for (int c = 0; c < 0x100; ++c) all += static_cast<char>(c);
  for (const std::string_view text : {std::string_view(all), std::string_view("a \"quoted\" \\name\\\n"),
                                      std::string_view("caf\xc3\xa9 \xe2\x82\xac")}) {
    const std::optional<ipu_test::json_value> back = ipu_test::parse_json(written(text));
    REQUIRE(back.has_value());
    CHECK(back->type == ipu_test::json_value::kind::string);
    CHECK(back->string == text);
  }
}

TEST_CASE("json_string: the stream's format flags do not change the escapes") {
  std::ostringstream os;
  os << std::hex << std::uppercase << std::setw(40) << std::setfill('*') << ipu::detail::json_string{"\x01"};
  CHECK(os.str() == R"("\u0001")");
}
