#pragma once
/// \file
/// Reading IDX files, the format of the MNIST and Fashion-MNIST data sets (Y. LeCun, C. Cortes
/// and C. J. C. Burges, "The MNIST database of handwritten digits", section "File formats for
/// the MNIST database"):
///
/// | bytes      | what                                                                      |
/// |------------|---------------------------------------------------------------------------|
/// | 2          | zero                                                                      |
/// | 1          | the element type: 0x08 u8, 0x09 i8, 0x0b i16, 0x0c i32, 0x0d f32, 0x0e f64 |
/// | 1          | the number of dimensions, d                                               |
/// | 4 d        | each extent, an unsigned 32-bit big-endian integer, outermost first        |
/// | the rest   | the elements, big-endian, row-major                                       |
///
/// ```
/// ipu::data::idx_array images = ipu::data::read_idx("train-images-idx3-ubyte");  // [60000, 28, 28]
/// std::span<const std::uint8_t> pixels = images.bytes();
/// ```
///
/// The distributions ship the files compressed with gzip (Debian's `dataset-fashion-mnist` in
/// `/usr/share/datasets/fashion-mnist/`): decompress them first (`gzip -dc file.gz > file`); a
/// compressed file is refused with that advice. Every check is a `data::format_error` naming
/// the file and what is wrong: a short file, a bad magic number, a size that differs from the
/// extents'.

#include <ipu/core/extents.hpp>
#include <ipu/io/file.hpp>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace ipu::data {

/// A data file that cannot be read, or that breaks its format: the message names the file and
/// the rule.
struct format_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The element types of IDX, by their codes.
enum class idx_type : std::uint8_t { u8 = 0x08, i8 = 0x09, i16 = 0x0b, i32 = 0x0c, f32 = 0x0d, f64 = 0x0e };

/// Bytes per element of `t`.
constexpr int size_of(idx_type t) noexcept {
  switch (t) {
    case idx_type::u8:
    case idx_type::i8: return 1;
    case idx_type::i16: return 2;
    case idx_type::i32:
    case idx_type::f32: return 4;
    case idx_type::f64: return 8;
  }
  return 0;
}

/// An IDX file's contents: its element type, extents and elements.
class idx_array {
 public:
  /// The element type.
  idx_type type() const noexcept { return type_; }
  /// The extents, outermost first (`[60000, 28, 28]` for MNIST's training images).
  const std::vector<std::int64_t>& shape() const noexcept { return shape_; }
  /// Number of elements: the product of the extents.
  std::int64_t elements() const noexcept {
    std::int64_t n = 1;
    for (const std::int64_t d : shape_) n *= d;
    return n;
  }
  /// The elements of a `u8` array (images, labels), row-major; throws `format_error` for
  /// another type.
  std::span<const std::uint8_t> bytes() const& {
    if (type_ != idx_type::u8)
      throw format_error(source_ + ": holds elements of type " + std::to_string(static_cast<int>(type_)) + ", not unsigned bytes");
    return data_;
  }
  /// Not of a temporary, whose elements would be gone before the span is read: name the array
  /// first.
  void bytes() const&& = delete;
  /// Every element converted to `float` (exactly, but for `f64` and `i32` values beyond 2^24).
  std::vector<float> to_floats() const {
    const auto n = static_cast<std::size_t>(elements());
    const int size = size_of(type_);
    std::vector<float> out(n);
    for (std::size_t i = 0; i < n; ++i) {
      std::uint64_t v = 0;
      for (int k = 0; k < size; ++k) v = (v << 8) | data_[i * static_cast<std::size_t>(size) + static_cast<std::size_t>(k)];
      switch (type_) {
        case idx_type::u8: out[i] = static_cast<float>(v); break;
        case idx_type::i8: out[i] = static_cast<float>(static_cast<std::int8_t>(v)); break;
        case idx_type::i16: out[i] = static_cast<float>(static_cast<std::int16_t>(v)); break;
        case idx_type::i32: out[i] = static_cast<float>(static_cast<std::int32_t>(v)); break;
        case idx_type::f32: out[i] = std::bit_cast<float>(static_cast<std::uint32_t>(v)); break;
        case idx_type::f64: out[i] = static_cast<float>(std::bit_cast<double>(v)); break;
      }
    }
    return out;
  }
  /// `"[60000, 28, 28]"`.
  std::string shape_string() const { return ipu::detail::extents_string(shape_); }
  /// What errors call the array: its file's path, or the name given to `parse_idx`.
  const std::string& source() const noexcept { return source_; }

  friend idx_array parse_idx(std::vector<std::uint8_t> bytes, std::string source);

 private:
  idx_type type_ = idx_type::u8;
  std::vector<std::int64_t> shape_;
  std::vector<std::uint8_t> data_;  // the elements as the file holds them (big-endian)
  std::string source_;
};

/// Checks and takes `bytes`, the contents of an IDX file; `source` names it in errors.
inline idx_array parse_idx(std::vector<std::uint8_t> bytes, std::string source = "IDX data") {
  const auto fail = [&](const std::string& why) { return format_error(source + ": " + why); };
  if (bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b)
    throw fail("compressed with gzip; decompress it first (gzip -dc FILE.gz > FILE)");
  if (bytes.size() < 4) throw fail("not an IDX file: " + std::to_string(bytes.size()) + " bytes, fewer than the 4 of the magic number");
  if (bytes[0] != 0 || bytes[1] != 0) throw fail("not an IDX file: its magic number does not start with two zero bytes");
  const auto type = static_cast<idx_type>(bytes[2]);
  if (size_of(type) == 0) throw fail("unknown element type " + std::to_string(bytes[2]));
  const std::size_t rank = bytes[3];
  if (bytes.size() < 4 + 4 * rank)
    throw fail(std::to_string(rank) + " dimensions, but the file ends before their " + std::to_string(4 * rank) + " bytes of extents");
  idx_array a;
  a.type_ = type;
  a.source_ = std::move(source);
  // The extents' product, saturated at one more than the file's size (which then differs from
  // any size the file holds): up to 255 factors below 2^32 would overflow.
  const std::uint64_t beyond = bytes.size() + 1;
  std::uint64_t elements = 1;
  for (std::size_t d = 0; d < rank; ++d) {
    std::uint64_t e = 0;
    for (std::size_t k = 0; k < 4; ++k) e = (e << 8) | bytes[4 + 4 * d + k];
    elements = e != 0 && elements > beyond / e ? beyond : elements * e;
    a.shape_.push_back(static_cast<std::int64_t>(e));
  }
  const std::size_t header = 4 + 4 * rank, size = static_cast<std::size_t>(size_of(type));
  if (elements * size != bytes.size() - header)
    throw format_error(a.source_ + ": the extents " + a.shape_string() + " hold " +
                       (elements >= beyond ? std::string("more") : std::to_string(elements * size)) + " bytes of elements, the file " +
                       std::to_string(bytes.size() - header));
  bytes.erase(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(header));
  a.data_ = std::move(bytes);
  return a;
}

/// Reads and checks the IDX file at `path`; throws `format_error` naming the file.
inline idx_array read_idx(const std::filesystem::path& path) {
  return parse_idx(ipu::detail::read_file<std::uint8_t, format_error>(path), path.string());
}

}  // namespace ipu::data
