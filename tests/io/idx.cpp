// The IDX reader (ipu/data/idx.hpp) against files written byte by byte from the format's
// description on the MNIST page: big-endian extents and elements.

#include <catch2/catch.hpp>

#include <ipu/data/idx.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

TEST_CASE("IDX files of every element type read as the format says") {
  // u8 [2, 3]
  const ipu::data::idx_array bytes = ipu::data::parse_idx({0, 0, 0x08, 2, 0, 0, 0, 2, 0, 0, 0, 3, 1, 2, 3, 4, 5, 255});
  CHECK(bytes.type() == ipu::data::idx_type::u8);
  CHECK(bytes.shape() == std::vector<std::int64_t>{2, 3});
  CHECK(bytes.shape_string() == "[2, 3]");
  CHECK(std::vector<std::uint8_t>(bytes.bytes().begin(), bytes.bytes().end()) == std::vector<std::uint8_t>{1, 2, 3, 4, 5, 255});
  CHECK(bytes.to_floats() == std::vector<float>{1, 2, 3, 4, 5, 255});
  // i8, i16, i32: two's complement, big-endian
  CHECK(ipu::data::parse_idx({0, 0, 0x09, 1, 0, 0, 0, 2, 0xfe, 0x7f}).to_floats() == std::vector<float>{-2, 127});
  CHECK(ipu::data::parse_idx({0, 0, 0x0b, 1, 0, 0, 0, 2, 0xff, 0xfe, 0x01, 0x2c}).to_floats() == std::vector<float>{-2, 300});
  CHECK(ipu::data::parse_idx({0, 0, 0x0c, 1, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xfd}).to_floats() == std::vector<float>{-3});
  // f32 1.5 is 0x3fc00000; f64 -0.25 is 0xbfd0000000000000
  CHECK(ipu::data::parse_idx({0, 0, 0x0d, 1, 0, 0, 0, 1, 0x3f, 0xc0, 0, 0}).to_floats() == std::vector<float>{1.5f});
  CHECK(ipu::data::parse_idx({0, 0, 0x0e, 1, 0, 0, 0, 1, 0xbf, 0xd0, 0, 0, 0, 0, 0, 0}).to_floats() == std::vector<float>{-0.25f});
  // Only unsigned bytes are bytes.
  const ipu::data::idx_array shorts = ipu::data::parse_idx({0, 0, 0x0b, 1, 0, 0, 0, 1, 0, 1});
  REQUIRE_THROWS_MATCHES(shorts.bytes(), ipu::data::format_error,
                         Catch::Matchers::Message("IDX data: holds elements of type 11, not unsigned bytes"));
}

TEST_CASE("a file that breaks the IDX format is a format_error that says why") {
  struct bad {
    const char* what;
    std::vector<std::uint8_t> bytes;
    const char* message;
  };
  const bad cases[] = {
      {"gzip", {0x1f, 0x8b, 8, 0}, "IDX data: compressed with gzip; decompress it first (gzip -dc FILE.gz > FILE)"},
      {"short", {0, 0, 8}, "IDX data: not an IDX file: 3 bytes, fewer than the 4 of the magic number"},
      {"magic", {0, 1, 8, 1, 0, 0, 0, 0}, "IDX data: not an IDX file: its magic number does not start with two zero bytes"},
      {"type", {0, 0, 0x0a, 1, 0, 0, 0, 0}, "IDX data: unknown element type 10"},
      {"extents cut", {0, 0, 8, 2, 0, 0, 0, 1}, "IDX data: 2 dimensions, but the file ends before their 8 bytes of extents"},
      {"too few elements", {0, 0, 8, 1, 0, 0, 0, 3, 1, 2}, "IDX data: the extents [3] hold 3 bytes of elements, the file 2"},
      {"too many elements", {0, 0, 0x0b, 1, 0, 0, 0, 1, 1, 2, 3}, "IDX data: the extents [1] hold 2 bytes of elements, the file 3"},
      {"extents overflow", {0, 0, 8, 3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
       "IDX data: the extents [4294967295, 4294967295, 4294967295] hold more bytes of elements, the file 0"},
  };
  for (const bad& b : cases) {
    INFO(b.what);
    REQUIRE_THROWS_MATCHES(ipu::data::parse_idx(b.bytes), ipu::data::format_error, Catch::Matchers::Message(b.message));
  }
  const auto missing = std::filesystem::temp_directory_path() / "ipu_idx_test_missing";
  std::filesystem::remove(missing);
  REQUIRE_THROWS_MATCHES(ipu::data::read_idx(missing), ipu::data::format_error,
                         Catch::Matchers::Message(missing.string() + ": cannot open: No such file or directory"));
}

TEST_CASE("an IDX file is read from disk and named in errors") {
  const auto path = std::filesystem::temp_directory_path() / "ipu_idx_test_labels";
  {
    std::ofstream out(path, std::ios::binary);
    const char file[] = {0, 0, 8, 1, 0, 0, 0, 4, 9, 0, 0, 3};
    out.write(file, sizeof file);
  }
  const ipu::data::idx_array labels = ipu::data::read_idx(path);
  CHECK(labels.source() == path.string());
  CHECK(labels.to_floats() == std::vector<float>{9, 0, 0, 3});
  std::filesystem::remove(path);
}
