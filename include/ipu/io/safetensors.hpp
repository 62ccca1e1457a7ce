#pragma once
/// \file
/// Reading and writing safetensors files, the tensor format of Hugging Face's `safetensors`
/// (https://github.com/huggingface/safetensors, README "Format"), which PyTorch, Keras and JAX
/// read and write:
///
/// | bytes        | what                                                                  |
/// |--------------|-----------------------------------------------------------------------|
/// | 8            | N, the header's length, an unsigned little-endian 64-bit integer       |
/// | N            | the header: a UTF-8 JSON object, padded with spaces                    |
/// | the rest     | the byte buffer: every tensor's values, little-endian, row-major       |
///
/// Each key of the header names a tensor: `{"dtype": "F32", "shape": [3, 3, 16, 32],
/// "data_offsets": [begin, end]}`, the offsets counted from the start of the byte buffer. The
/// optional key `"__metadata__"` holds a map of strings to strings.
///
/// `safetensors::file` reads a file and checks it as the reference implementation does
/// (`safetensors/src/tensor.rs`): a header of at most 100,000,000 bytes that is a JSON object of
/// distinct keys; known dtypes; offsets that match each tensor's size, cover the byte buffer
/// from its start to its end without holes or overlaps. A file that breaks any rule, or that
/// cannot be read, is a `checkpoint_error` that names the file and the rule; nothing else is
/// thrown for bad input (`tests/fuzz/safetensors.cpp` runs libFuzzer on the reader).
/// `safetensors::writer` writes one, with the reference writer's layout (tensors ordered by
/// descending alignment, the header padded to a multiple of 8 bytes), atomically: a crash or
/// an error leaves any earlier file at the path as it was.
///
/// The header is parsed and written with nlohmann/json (Debian's `nlohmann-json3-dev`), which
/// only this header and `ipu/checkpoint.hpp` need; `ipu/ipu.hpp` includes neither.

#include <nlohmann/json.hpp>

#include <ipu/core/extents.hpp>
#include <ipu/core/half.hpp>
#include <ipu/io/file.hpp>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#if __has_include(<unistd.h>)
#include <unistd.h>  // fsync
#endif

namespace ipu {

/// A checkpoint or tensor file that cannot be read, written or used: the message names the
/// file and what is wrong (a rule of the format it breaks, a tensor it lacks, the first
/// difference from the network it is loaded into).
struct checkpoint_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

namespace safetensors {

/// The element types of the format (`safetensors/src/tensor.rs`, `enum Dtype`). `file`
/// converts F32, F16, BF16 and F64 to floats; the others it reads as bytes.
enum class dtype : std::uint8_t {
  boolean, f4, f6_e2m3, f6_e3m2, u8, i8, f8_e5m2, f8_e4m3, f8_e8m0, f8_e4m3fnuz, f8_e5m2fnuz,
  i16, u16, f16, bf16, i32, u32, f32, c64, f64, i64, u64
};

namespace detail {
struct dtype_info {
  dtype type;
  std::string_view name;  // as the header spells it
  int bits;               // per element
};
inline constexpr dtype_info dtypes[] = {
    {dtype::boolean, "BOOL", 8}, {dtype::f4, "F4", 4},          {dtype::f6_e2m3, "F6_E2M3", 6},
    {dtype::f6_e3m2, "F6_E3M2", 6}, {dtype::u8, "U8", 8},       {dtype::i8, "I8", 8},
    {dtype::f8_e5m2, "F8_E5M2", 8}, {dtype::f8_e4m3, "F8_E4M3", 8}, {dtype::f8_e8m0, "F8_E8M0", 8},
    {dtype::f8_e4m3fnuz, "F8_E4M3FNUZ", 8}, {dtype::f8_e5m2fnuz, "F8_E5M2FNUZ", 8},
    {dtype::i16, "I16", 16},        {dtype::u16, "U16", 16},    {dtype::f16, "F16", 16},
    {dtype::bf16, "BF16", 16},      {dtype::i32, "I32", 32},    {dtype::u32, "U32", 32},
    {dtype::f32, "F32", 32},        {dtype::c64, "C64", 64},    {dtype::f64, "F64", 64},
    {dtype::i64, "I64", 64},        {dtype::u64, "U64", 64}};

inline const dtype_info& info(dtype t) noexcept { return dtypes[static_cast<std::size_t>(t)]; }

/// The unsigned little-endian integer of `n` bytes at `p`.
inline std::uint64_t little_endian(const std::byte* p, int n) noexcept {
  std::uint64_t v = 0;
  for (int k = n - 1; k >= 0; --k) v = (v << 8) | static_cast<std::uint64_t>(p[k]);
  return v;
}
/// Appends the `n` low bytes of `v`, little-endian.
inline void append_little_endian(std::vector<std::byte>& out, std::uint64_t v, int n) {
  for (int k = 0; k < n; ++k) out.push_back(static_cast<std::byte>((v >> (8 * k)) & 0xffu));
}

/// The bfloat16 nearest to `f` (ties to even); NaN stays a quiet NaN of `f`'s sign.
constexpr std::uint16_t bf16_bits_from_float(float f) noexcept {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);
  const std::uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<std::uint16_t>((x + rounding) >> 16);  // overflow carries into infinity
}

/// The deepest a header's JSON nests: a tensor's shape's extents (in the header's object, in
/// the tensor's, in the shape's array).
inline constexpr int max_depth = 3;
}  // namespace detail

/// The header's spelling of `t`: `"F32"`, `"BF16"`, ...
inline std::string_view name_of(dtype t) noexcept { return detail::info(t).name; }

/// The largest header the format allows (`MAX_HEADER_SIZE` in `safetensors/src/tensor.rs`).
inline constexpr std::uint64_t max_header_bytes = 100'000'000;

/// One tensor of a file: its name, element type, shape and bytes.
struct tensor {
  std::string name;                 ///< the header's key
  dtype type = dtype::f32;          ///< the element type
  std::vector<std::int64_t> shape;  ///< extents, outermost first; empty for a scalar
  std::span<const std::byte> data;  ///< the values' bytes, little-endian, row-major (in the `file`)

  /// Number of elements: the product of the extents (1 for a scalar).
  std::int64_t elements() const noexcept {
    std::int64_t n = 1;
    for (const std::int64_t d : shape) n *= d;
    return n;
  }
  /// `"[3, 3, 16, 32]"`.
  std::string shape_string() const { return ipu::detail::extents_string(shape); }
  /// The values as floats: exact from F32, F16 and BF16, rounded to nearest from F64. Throws
  /// `checkpoint_error` for another element type.
  std::vector<float> to_floats() const {
    const auto n = static_cast<std::size_t>(elements());
    std::vector<float> out(n);
    const std::byte* p = data.data();
    switch (type) {
      case dtype::f32:
        for (std::size_t i = 0; i < n; ++i)
          out[i] = std::bit_cast<float>(static_cast<std::uint32_t>(detail::little_endian(p + 4 * i, 4)));
        break;
      case dtype::f16:
        for (std::size_t i = 0; i < n; ++i)
          out[i] = ipu::detail::float_from_half_bits(static_cast<std::uint16_t>(detail::little_endian(p + 2 * i, 2)));
        break;
      case dtype::bf16:
        for (std::size_t i = 0; i < n; ++i)
          out[i] = std::bit_cast<float>(static_cast<std::uint32_t>(detail::little_endian(p + 2 * i, 2) << 16));
        break;
      case dtype::f64:
        for (std::size_t i = 0; i < n; ++i)
          out[i] = static_cast<float>(std::bit_cast<double>(detail::little_endian(p + 8 * i, 8)));
        break;
      default:
        throw checkpoint_error("safetensors: tensor '" + name + "' holds " + std::string(name_of(type)) +
                               " values; only F32, F16, BF16 and F64 convert to floats");
    }
    return out;
  }
};

/// A safetensors file read into memory and checked (see the file comment).
class file {
 public:
  /// Reads and checks the file at `path`; throws `checkpoint_error` naming the file if it
  /// cannot be read or breaks a rule of the format.
  static file read(const std::filesystem::path& path) {
    return parse(ipu::detail::read_file<std::byte, checkpoint_error>(path), path.string());
  }

  /// Checks and takes `bytes`, the contents of a file; `source` names it in errors.
  static file parse(std::vector<std::byte> bytes, std::string source = "safetensors data") {
    file f;
    f.bytes_ = std::move(bytes);
    f.source_ = std::move(source);
    f.check();
    return f;
  }

  /// The tensors, in the order of their data in the byte buffer.
  std::span<const tensor> tensors() const noexcept { return tensors_; }
  /// The tensor called `name`, or null.
  const tensor* find(std::string_view name) const noexcept {
    for (const tensor& t : tensors_)
      if (t.name == name) return &t;
    return nullptr;
  }
  /// The tensor called `name`; throws `checkpoint_error` naming the file if there is none.
  const tensor& at(std::string_view name) const {
    if (const tensor* t = find(name)) return *t;
    throw checkpoint_error(source_ + ": no tensor '" + std::string(name) + "'");
  }
  /// The header's `__metadata__` (empty if it has none).
  const std::map<std::string, std::string, std::less<>>& metadata() const noexcept { return metadata_; }
  /// The metadata's value for `key`, or nothing.
  std::optional<std::string_view> metadata(std::string_view key) const {
    const auto it = metadata_.find(key);
    if (it == metadata_.end()) return std::nullopt;
    return std::string_view(it->second);
  }
  /// What errors call the file: its path, or the name given to `parse`.
  const std::string& source() const noexcept { return source_; }

 private:
  file() = default;

  [[noreturn]] void fail(const std::string& why) const { throw checkpoint_error(source_ + ": " + why); }

  void check() {
    if (bytes_.size() < 8) fail("not a safetensors file: " + std::to_string(bytes_.size()) + " bytes, fewer than the 8 of the header's length");
    const std::uint64_t n = detail::little_endian(bytes_.data(), 8);
    if (n > max_header_bytes)
      fail("the header's length is " + std::to_string(n) + " bytes, more than the format's limit of " +
           std::to_string(max_header_bytes));
    if (n > bytes_.size() - 8)
      fail("the header's length is " + std::to_string(n) + " bytes, but only " + std::to_string(bytes_.size() - 8) +
           " follow the length");
    const auto* text = reinterpret_cast<const char*>(bytes_.data() + 8);
    nlohmann::json header;
    std::vector<std::string> keys;  // at depth 1, to refuse a repeated one
    try {
      header = nlohmann::json::parse(text, text + n, [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& value) {
        if (depth > detail::max_depth) fail("the header nests deeper than a safetensors header");
        if (event == nlohmann::json::parse_event_t::key && depth == 1) keys.push_back(value.get<std::string>());
        return true;
      });
    } catch (const nlohmann::json::exception& e) {
      fail(std::string("the header is not valid JSON: ") + e.what());
    }
    std::sort(keys.begin(), keys.end());
    if (const auto twice = std::adjacent_find(keys.begin(), keys.end()); twice != keys.end())
      fail("the header has key '" + *twice + "' twice");
    if (!header.is_object()) fail("the header is not a JSON object");

    const std::uint64_t buffer = bytes_.size() - 8 - n;
    struct extent {
      std::uint64_t begin, end;
      std::size_t tensor;
    };
    std::vector<extent> extents;
    for (const auto& [key, entry] : header.items()) {
      if (key == "__metadata__") {
        if (!entry.is_object()) fail("__metadata__ is not a JSON object");
        for (const auto& [k, v] : entry.items()) {
          if (!v.is_string()) fail("__metadata__ entry '" + k + "' is not a string");
          metadata_.emplace(k, v.get<std::string>());
        }
        continue;
      }
      const std::string where = "tensor '" + key + "'";
      if (!entry.is_object()) fail(where + " is not a JSON object");
      for (const auto& [field, value] : entry.items())
        if (field != "dtype" && field != "shape" && field != "data_offsets")
          fail(where + " has an unknown field '" + field + "'");
      tensor t;
      t.name = key;
      const auto dt = entry.find("dtype");
      if (dt == entry.end() || !dt->is_string()) fail(where + " has no dtype string");
      const std::string& type_name = dt->get_ref<const std::string&>();
      const auto known = std::find_if(std::begin(detail::dtypes), std::end(detail::dtypes),
                                      [&](const detail::dtype_info& d) { return d.name == type_name; });
      if (known == std::end(detail::dtypes)) fail(where + " has an unknown dtype '" + type_name + "'");
      t.type = known->type;
      const auto shape = entry.find("shape");
      if (shape == entry.end() || !shape->is_array()) fail(where + " has no shape array");
      std::uint64_t elements = 1;
      bool overflow = false;
      for (const auto& d : *shape) {
        if (!d.is_number_unsigned()) fail(where + " has an extent that is not a non-negative integer");
        const std::uint64_t e = d.get<std::uint64_t>();
        if (e > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) fail(where + " has an extent too large");
        overflow = overflow || (e != 0 && elements > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) / e);
        elements = overflow ? elements : elements * e;
        t.shape.push_back(static_cast<std::int64_t>(e));
      }
      const auto offsets = entry.find("data_offsets");
      if (offsets == entry.end() || !offsets->is_array() || offsets->size() != 2 || !(*offsets)[0].is_number_unsigned() ||
          !(*offsets)[1].is_number_unsigned())
        fail(where + " has no data_offsets pair of non-negative integers");
      const std::uint64_t begin = (*offsets)[0].get<std::uint64_t>(), end = (*offsets)[1].get<std::uint64_t>();
      if (begin > end || end > buffer)
        fail(where + " has data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
             "] outside the byte buffer of " + std::to_string(buffer) + " bytes");
      const auto bits = static_cast<std::uint64_t>(known->bits);
      if (overflow || elements > std::numeric_limits<std::uint64_t>::max() / bits) fail(where + " has shape " + t.shape_string() + ", too many elements");
      if (elements * bits % 8 != 0 || elements * bits / 8 != end - begin)
        fail(where + " has shape " + t.shape_string() + " of " + type_name + ", " + std::to_string(elements * bits) +
             " bits, but data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + "] hold " +
             std::to_string(end - begin) + " bytes");
      extents.push_back({begin, end, tensors_.size()});
      tensors_.push_back(std::move(t));
    }
    // The tensors' data, in the order of their offsets, must tile the buffer exactly.
    std::sort(extents.begin(), extents.end(),
              [](const extent& a, const extent& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
    std::uint64_t at = 0;
    for (const extent& e : extents) {
      const std::string& name = tensors_[e.tensor].name;
      if (e.begin != at)
        fail("tensor '" + name + "' begins at byte " + std::to_string(e.begin) + " of the byte buffer, not at " +
             std::to_string(at) + (e.begin > at ? ": a hole in the data" : ": it overlaps the tensor before"));
      at = e.end;
    }
    if (at != buffer)
      fail("the tensors cover " + std::to_string(at) + " bytes of the byte buffer's " + std::to_string(buffer));
    const std::byte* data = bytes_.data() + 8 + n;
    std::vector<tensor> ordered;
    ordered.reserve(extents.size());
    for (const extent& e : extents) {
      ordered.push_back(std::move(tensors_[e.tensor]));
      ordered.back().data = {data + e.begin, static_cast<std::size_t>(e.end - e.begin)};
    }
    tensors_ = std::move(ordered);
  }

  std::vector<std::byte> bytes_;
  std::string source_;
  std::vector<tensor> tensors_;
  std::map<std::string, std::string, std::less<>> metadata_;
};

/// Builds a safetensors file: tensors from floats stored as F32, F16 or BF16 (rounded to
/// nearest, ties to even), and metadata; `write` puts it on disk atomically.
class writer {
 public:
  /// Adds tensor `name` of `shape` with `values` (row-major), stored as `type`. Throws
  /// `checkpoint_error` if the name is taken or `__metadata__`, if the values do not fill the
  /// shape, or if `type` is not F32, F16 or BF16.
  void add(std::string name, std::span<const std::int64_t> shape, std::span<const float> values, dtype type = dtype::f32) {
    if (name == "__metadata__") throw checkpoint_error("safetensors: '__metadata__' cannot name a tensor");
    if (std::any_of(entries_.begin(), entries_.end(), [&](const entry& e) { return e.name == name; }))
      throw checkpoint_error("safetensors: tensor '" + name + "' added twice");
    if (type != dtype::f32 && type != dtype::f16 && type != dtype::bf16)
      throw checkpoint_error("safetensors: tensor '" + name + "': floats are written as F32, F16 or BF16, not " +
                             std::string(name_of(type)));
    std::int64_t n = 1;
    for (const std::int64_t d : shape) {
      if (d < 0) throw checkpoint_error("safetensors: tensor '" + name + "' has a negative extent");
      n *= d;
    }
    if (n != static_cast<std::int64_t>(values.size()))
      throw checkpoint_error("safetensors: tensor '" + name + "' has " + std::to_string(n) + " elements in its shape, " +
                             std::to_string(values.size()) + " values given");
    entry e{std::move(name), type, {shape.begin(), shape.end()}, {}};
    const int bytes = detail::info(type).bits / 8;
    e.data.reserve(values.size() * static_cast<std::size_t>(bytes));
    for (const float v : values) {
      const std::uint64_t bits = type == dtype::f32   ? std::bit_cast<std::uint32_t>(v)
                                 : type == dtype::f16 ? ipu::detail::half_bits_from_float(v)
                                                      : detail::bf16_bits_from_float(v);
      detail::append_little_endian(e.data, bits, bytes);
    }
    entries_.push_back(std::move(e));
  }
  /// Sets metadata `key` to `value`.
  void set_metadata(std::string key, std::string value) { metadata_[std::move(key)] = std::move(value); }

  /// The file's bytes: tensors ordered by descending element size, then as added.
  std::vector<std::byte> bytes() const {
    std::vector<const entry*> order;
    for (const entry& e : entries_) order.push_back(&e);
    std::stable_sort(order.begin(), order.end(), [](const entry* a, const entry* b) {
      return detail::info(a->type).bits > detail::info(b->type).bits;
    });
    nlohmann::json header = nlohmann::json::object();
    if (!metadata_.empty()) header["__metadata__"] = metadata_;
    std::uint64_t at = 0;
    for (const entry* e : order) {
      header[e->name] = {{"dtype", name_of(e->type)}, {"shape", e->shape}, {"data_offsets", {at, at + e->data.size()}}};
      at += e->data.size();
    }
    std::string text = header.dump();
    text.append((8 - text.size() % 8) % 8, ' ');
    std::vector<std::byte> out;
    out.reserve(8 + text.size() + at);
    detail::append_little_endian(out, text.size(), 8);
    for (const char c : text) out.push_back(static_cast<std::byte>(c));
    for (const entry* e : order) out.insert(out.end(), e->data.begin(), e->data.end());
    return out;
  }

  /// Writes the file to `path` atomically: to a temporary file beside it, flushed to the disk,
  /// then renamed over `path`. On any error, throws `checkpoint_error` naming the path and
  /// leaves `path` as it was.
  void write(const std::filesystem::path& path) const {
    const std::vector<std::byte> data = bytes();
    std::filesystem::path temporary = path;
    temporary += ".tmp";
    std::FILE* f = std::fopen(temporary.c_str(), "wb");
    if (!f) throw checkpoint_error(path.string() + ": cannot write " + temporary.string() + ": " + std::strerror(errno));
    bool ok = std::fwrite(data.data(), 1, data.size(), f) == data.size() && std::fflush(f) == 0;
#if __has_include(<unistd.h>)
    ok = ok && ::fsync(::fileno(f)) == 0;  // the data on the disk before the rename names it
#endif
    const int saved = errno;
    ok = std::fclose(f) == 0 && ok;
    std::error_code ec;
    if (ok) std::filesystem::rename(temporary, path, ec);
    if (!ok || ec) {
      std::filesystem::remove(temporary, ec);
      throw checkpoint_error(path.string() + ": writing failed: " + (ok ? ec.message() : std::strerror(saved)));
    }
  }

 private:
  struct entry {
    std::string name;
    dtype type;
    std::vector<std::int64_t> shape;
    std::vector<std::byte> data;
  };
  std::vector<entry> entries_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace safetensors
}  // namespace ipu
