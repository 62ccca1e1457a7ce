// The safetensors reader and writer (ipu/io/safetensors.hpp) against the format's description
// (huggingface/safetensors, README "Format", and the checks of safetensors/src/tensor.rs):
// files written byte by byte here, values by their IEEE-754 bit patterns.

#include <catch2/catch.hpp>

#include "support/scratch.hpp"

#include <ipu/io/safetensors.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

namespace st = ipu::safetensors;

namespace {

/// A file: the header's length (8 bytes, little-endian), `header`, then `data`.
std::vector<std::byte> file_of(const std::string& header, const std::vector<std::uint8_t>& data = {}) {
  std::vector<std::byte> out;
  for (int k = 0; k < 8; ++k) out.push_back(static_cast<std::byte>((header.size() >> (8 * k)) & 0xffu));
  for (const char c : header) out.push_back(static_cast<std::byte>(c));
  for (const std::uint8_t b : data) out.push_back(static_cast<std::byte>(b));
  return out;
}

std::vector<std::uint8_t> bytes_of(const std::vector<std::byte>& b) {
  std::vector<std::uint8_t> out;
  for (const std::byte x : b) out.push_back(static_cast<std::uint8_t>(x));
  return out;
}

}  // namespace

TEST_CASE("the writer lays a file out as the format says") {
  st::writer w;
  w.add("a", std::vector<std::int64_t>{2}, std::vector<float>{1.0f, -2.0f}, st::dtype::f16);
  w.add("b", std::vector<std::int64_t>{1}, std::vector<float>{0.5f});
  w.set_metadata("k", "v");
  // Tensors by descending alignment (b's F32 before a's F16), keys sorted, spaces to a
  // multiple of 8; 0.5f is 0x3f000000, binary16 1.0 is 0x3c00 and -2.0 0xc000.
  const std::string header =
      R"({"__metadata__":{"k":"v"},"a":{"data_offsets":[4,8],"dtype":"F16","shape":[2]},)"
      R"("b":{"data_offsets":[0,4],"dtype":"F32","shape":[1]}})";
  const std::string padded = header + std::string((8 - header.size() % 8) % 8, ' ');
  CHECK(bytes_of(w.bytes()) == bytes_of(file_of(padded, {0x00, 0x00, 0x00, 0x3f, 0x00, 0x3c, 0x00, 0xc0})));
}

TEST_CASE("the reader gives F32 F16 BF16 and F64 values exactly and other types as bytes") {
  const std::string header =
      R"({"x":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},)"
      R"("y":{"dtype":"BF16","shape":[2],"data_offsets":[4,8]},)"
      R"("z":{"dtype":"F64","shape":[],"data_offsets":[8,16]},)"
      R"("n":{"dtype":"I64","shape":[1,1],"data_offsets":[16,24]},)"
      R"("e":{"dtype":"F32","shape":[0,3],"data_offsets":[24,24]},)"
      R"("__metadata__":{"format":"pt"}})";
  const st::file f = st::file::parse(file_of(header, {
      0x01, 0x00, 0x00, 0x7c,                          // 2^-24 (the least subnormal), +infinity
      0x80, 0x3f, 0x40, 0xc0,                          // 1.0, -3.0
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xd0, 0x3f,  // 0.25
      0x2a, 0, 0, 0, 0, 0, 0, 0}));                    // 42
  REQUIRE(f.tensors().size() == 5);
  CHECK(f.tensors()[0].name == "x");  // in the order of their data
  CHECK(f.at("x").to_floats() == std::vector<float>{0x1p-24f, std::numeric_limits<float>::infinity()});
  CHECK(f.at("y").to_floats() == std::vector<float>{1.0f, -3.0f});
  CHECK(f.at("z").to_floats() == std::vector<float>{0.25f});
  CHECK(f.at("z").shape.empty());
  CHECK(f.at("e").elements() == 0);
  CHECK(f.at("e").to_floats().empty());
  CHECK(f.at("n").type == st::dtype::i64);
  CHECK(static_cast<int>(f.at("n").data[0]) == 42);
  REQUIRE_THROWS_MATCHES(f.at("n").to_floats(), ipu::checkpoint_error,
                         Catch::Matchers::Message("safetensors: tensor 'n' holds I64 values; only F32, F16, BF16 and "
                                                  "F64 convert to floats"));
  CHECK(f.metadata("format") == "pt");
  CHECK(!f.metadata("other"));
  CHECK(f.find("w") == nullptr);
  REQUIRE_THROWS_MATCHES(f.at("w"), ipu::checkpoint_error, Catch::Matchers::Message("safetensors data: no tensor 'w'"));
}

TEST_CASE("narrow types are written rounded to nearest with ties to even") {
  // 1 + 2^-8 lies halfway between bfloat16's 1 and 1 + 2^-7: to 1 (even). 1 + 3 * 2^-8 lies
  // halfway between 1 + 2^-7 and 1 + 2^-6: to 1 + 2^-6 (even). 1 + 2^-11 and 1 + 3 * 2^-11
  // likewise for binary16, whose step at 1 is 2^-10. 65520 rounds to binary16's infinity.
  st::writer w;
  w.add("b", std::vector<std::int64_t>{3}, std::vector<float>{1 + 0x1p-8f, 1 + 0x3p-8f, -(1 + 0x1p-9f)}, st::dtype::bf16);
  w.add("h", std::vector<std::int64_t>{3}, std::vector<float>{1 + 0x1p-11f, 1 + 0x3p-11f, 65520.0f}, st::dtype::f16);
  const st::file f = st::file::parse(w.bytes());
  CHECK(f.at("b").to_floats() == std::vector<float>{1.0f, 1 + 0x1p-6f, -1.0f});
  CHECK(f.at("h").to_floats() == std::vector<float>{1.0f, 1 + 0x1p-9f, std::numeric_limits<float>::infinity()});
}

TEST_CASE("a file that breaks a rule of the format is a checkpoint_error that says which") {
  struct bad {
    const char* what;
    std::vector<std::byte> bytes;
    const char* message;
  };
  const auto one = [](const std::string& entry, std::size_t data) {
    return file_of(R"({"t":)" + entry + "}", std::vector<std::uint8_t>(data, 0));
  };
  std::vector<std::byte> past_end = file_of("{}");
  past_end[1] = std::byte{1};  // a length of 258
  std::vector<std::byte> over_limit = file_of("{}");
  over_limit[0] = std::byte{0x01}, over_limit[1] = std::byte{0xe1}, over_limit[2] = std::byte{0xf5}, over_limit[3] = std::byte{0x05};
  const bad cases[] = {
      {"too short", {std::byte{1}, std::byte{0}}, "safetensors data: not a safetensors file: 2 bytes, fewer than the 8 of the header's length"},
      {"length past the end", past_end, "safetensors data: the header's length is 258 bytes, but only 2 follow the length"},
      {"length over the limit", over_limit,
       "safetensors data: the header's length is 100000001 bytes, more than the format's limit of 100000000"},
      {"not JSON", file_of("{\"t\":"), "safetensors data: the header is not valid JSON: "},
      {"not an object", file_of("[1, 2]"), "safetensors data: the header is not a JSON object"},
      {"repeated key", file_of(R"({"a":{},"a":{}})"), "safetensors data: the header has key 'a' twice"},
      {"too deep", file_of(R"({"t":{"shape":[[1]]}})"), "safetensors data: the header nests deeper than a safetensors header"},
      {"metadata not a map", file_of(R"({"__metadata__":[]})"), "safetensors data: __metadata__ is not a JSON object"},
      {"metadata value not a string", file_of(R"({"__metadata__":{"a":1}})"),
       "safetensors data: __metadata__ entry 'a' is not a string"},
      {"entry not an object", one("3", 0), "safetensors data: tensor 't' is not a JSON object"},
      {"unknown field", one(R"({"dtype":"F32","shape":[],"data_offsets":[0,4],"stride":1})", 4),
       "safetensors data: tensor 't' has an unknown field 'stride'"},
      {"no dtype", one(R"({"shape":[],"data_offsets":[0,4]})", 4), "safetensors data: tensor 't' has no dtype string"},
      {"unknown dtype", one(R"({"dtype":"F17","shape":[],"data_offsets":[0,4]})", 4),
       "safetensors data: tensor 't' has an unknown dtype 'F17'"},
      {"no shape", one(R"({"dtype":"F32","data_offsets":[0,4]})", 4), "safetensors data: tensor 't' has no shape array"},
      {"negative extent", one(R"({"dtype":"F32","shape":[-1],"data_offsets":[0,4]})", 4),
       "safetensors data: tensor 't' has an extent that is not a non-negative integer"},
      {"fractional extent", one(R"({"dtype":"F32","shape":[1.5],"data_offsets":[0,4]})", 4),
       "safetensors data: tensor 't' has an extent that is not a non-negative integer"},
      {"too many elements", one(R"({"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]})", 4),
       "safetensors data: tensor 't' has shape [4294967296, 4294967296], too many elements"},
      {"no offsets", one(R"({"dtype":"F32","shape":[]})", 4),
       "safetensors data: tensor 't' has no data_offsets pair of non-negative integers"},
      {"offsets backwards", one(R"({"dtype":"F32","shape":[],"data_offsets":[4,0]})", 4),
       "safetensors data: tensor 't' has data_offsets [4, 0] outside the byte buffer of 4 bytes"},
      {"offsets past the end", one(R"({"dtype":"F32","shape":[2],"data_offsets":[0,8]})", 4),
       "safetensors data: tensor 't' has data_offsets [0, 8] outside the byte buffer of 4 bytes"},
      {"size differs from shape", one(R"({"dtype":"F32","shape":[2],"data_offsets":[0,4]})", 4),
       "safetensors data: tensor 't' has shape [2] of F32, 64 bits, but data_offsets [0, 4] hold 4 bytes"},
      {"half a byte", one(R"({"dtype":"F4","shape":[3],"data_offsets":[0,2]})", 2),
       "safetensors data: tensor 't' has shape [3] of F4, 12 bits, but data_offsets [0, 2] hold 2 bytes"},
      {"a hole", file_of(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"b":{"dtype":"U8","shape":[1],"data_offsets":[2,3]}})",
                         {0, 0, 0}),
       "safetensors data: tensor 'b' begins at byte 2 of the byte buffer, not at 1: a hole in the data"},
      {"an overlap", file_of(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
                             {0, 0}),
       "safetensors data: tensor 'b' begins at byte 1 of the byte buffer, not at 2: it overlaps the tensor before"},
      {"buffer not covered", one(R"({"dtype":"U8","shape":[1],"data_offsets":[0,1]})", 2),
       "safetensors data: the tensors cover 1 bytes of the byte buffer's 2"},
  };
  for (const bad& b : cases) {
    INFO(b.what);
    try {
      st::file::parse(b.bytes);
      FAIL("no checkpoint_error");
    } catch (const ipu::checkpoint_error& e) {
      const std::string message = b.message;
      if (message.back() == ' ')  // the JSON parser's own words follow
        CHECK_THAT(e.what(), Catch::StartsWith(message));
      else
        CHECK(e.what() == message);
    }
  }
}

TEST_CASE("the writer refuses what it cannot write") {
  st::writer w;
  const std::vector<std::int64_t> two{2};
  const std::vector<float> values{1, 2};
  w.add("a", two, values);
  REQUIRE_THROWS_MATCHES(w.add("a", two, values), ipu::checkpoint_error,
                         Catch::Matchers::Message("safetensors: tensor 'a' added twice"));
  REQUIRE_THROWS_MATCHES(w.add("__metadata__", two, values), ipu::checkpoint_error,
                         Catch::Matchers::Message("safetensors: '__metadata__' cannot name a tensor"));
  REQUIRE_THROWS_MATCHES(w.add("b", std::vector<std::int64_t>{3}, values), ipu::checkpoint_error,
                         Catch::Matchers::Message("safetensors: tensor 'b' has 3 elements in its shape, 2 values given"));
  REQUIRE_THROWS_MATCHES(w.add("c", two, values, st::dtype::i32), ipu::checkpoint_error,
                         Catch::Matchers::Message("safetensors: tensor 'c': floats are written as F32, F16 or BF16, not I32"));
}

TEST_CASE("writing replaces a file whole or not at all") {
  const auto dir = ipu_test::scratch_dir("safetensors_atomic");
  const auto path = dir / "w.safetensors";
  st::writer first, second;
  first.add("a", std::vector<std::int64_t>{1}, std::vector<float>{1});
  second.add("a", std::vector<std::int64_t>{1}, std::vector<float>{2});
  first.write(path);
  second.write(path);
  CHECK(st::file::read(path).at("a").to_floats() == std::vector<float>{2});
  CHECK(std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator()) == 1);

  // The temporary file cannot be made (a directory holds its name): the old file stays.
  std::filesystem::create_directory(dir / "w.safetensors.tmp");
  REQUIRE_THROWS_AS(first.write(path), ipu::checkpoint_error);
  CHECK(st::file::read(path).at("a").to_floats() == std::vector<float>{2});
  std::filesystem::remove(dir / "w.safetensors.tmp");

  // The rename fails (a directory holds the path): the temporary file is removed.
  const auto taken = dir / "taken";
  std::filesystem::create_directories(taken / "inside");
  REQUIRE_THROWS_WITH(first.write(taken), Catch::StartsWith(taken.string() + ": writing failed: "));
  CHECK(!std::filesystem::exists(dir / "taken.tmp"));
  CHECK(std::filesystem::is_directory(taken / "inside"));
}
