#pragma once
/// \file
/// `ipu::tensor<T, Dims...>`: a dense host tensor whose extents are part of its type, stored
/// contiguously in row-major order (NHWC for images, NC after a global pooling). It is the
/// element type of an engine's input and output and of the infeed and outfeed channels.

#include <ipu/core/dtype.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace ipu {

/// A host tensor of `T` with the static extents `Dims...` (row-major, last extent innermost).
/// Owns its storage; copyable and movable; zero-initialised.
template <ElementType T, std::int64_t... Dims>
  requires(sizeof...(Dims) > 0 && ((Dims > 0) && ...))
class tensor {
 public:
  using value_type = T;
  static constexpr std::size_t rank = sizeof...(Dims);
  static constexpr std::array<std::int64_t, rank> extents{Dims...};
  static constexpr std::int64_t elements = (Dims * ...);
  static constexpr std::int64_t bytes = elements * static_cast<std::int64_t>(sizeof(T));

  tensor() : data_(static_cast<std::size_t>(elements)) {}

  /// A tensor holding `values`, which must have exactly `elements` values.
  explicit tensor(std::span<const T> values) : tensor() { assign(values); }

  /// Copies `values` in; throws `std::invalid_argument` unless there are exactly `elements`.
  void assign(std::span<const T> values) {
    if (static_cast<std::int64_t>(values.size()) != elements)
      throw std::invalid_argument("ipu::tensor: " + std::to_string(values.size()) + " values given, the tensor " +
                                  shape_string() + " holds " + std::to_string(elements));
    std::copy(values.begin(), values.end(), data_.begin());
  }

  T* data() noexcept { return data_.data(); }
  const T* data() const noexcept { return data_.data(); }
  static constexpr std::size_t size() noexcept { return static_cast<std::size_t>(elements); }
  static constexpr const std::array<std::int64_t, rank>& shape() noexcept { return extents; }

  T* begin() noexcept { return data(); }
  T* end() noexcept { return data() + size(); }
  const T* begin() const noexcept { return data(); }
  const T* end() const noexcept { return data() + size(); }
  std::span<T> span() noexcept { return {data(), size()}; }
  std::span<const T> span() const noexcept { return {data(), size()}; }

  /// Element at the multi-index `i...` (one index per extent), unchecked.
  template <std::integral... I>
    requires(sizeof...(I) == rank)
  T& operator()(I... i) noexcept {
    return data_[offset({static_cast<std::int64_t>(i)...})];
  }
  template <std::integral... I>
    requires(sizeof...(I) == rank)
  const T& operator()(I... i) const noexcept {
    return data_[offset({static_cast<std::int64_t>(i)...})];
  }
  /// Element at the multi-index `i...`; throws `std::out_of_range` outside the extents.
  template <std::integral... I>
    requires(sizeof...(I) == rank)
  T& at(I... i) {
    const std::array<std::int64_t, rank> index{static_cast<std::int64_t>(i)...};
    for (std::size_t k = 0; k < rank; ++k)
      if (index[k] < 0 || index[k] >= extents[k])
        throw std::out_of_range("ipu::tensor: index " + std::to_string(index[k]) + " of axis " +
                                std::to_string(k) + " is outside " + shape_string());
    return data_[offset(index)];
  }
  T& operator[](std::size_t i) noexcept { return data_[i]; }
  const T& operator[](std::size_t i) const noexcept { return data_[i]; }

  /// `"[4, 224, 224, 4]"`.
  static std::string shape_string() {
    std::string s = "[";
    for (std::size_t k = 0; k < rank; ++k) s += (k ? ", " : "") + std::to_string(extents[k]);
    return s + "]";
  }

  friend bool operator==(const tensor&, const tensor&) = default;

 private:
  static constexpr std::size_t offset(const std::array<std::int64_t, rank>& index) noexcept {
    std::int64_t o = 0;
    for (std::size_t k = 0; k < rank; ++k) o = o * extents[k] + index[k];
    return static_cast<std::size_t>(o);
  }

  std::vector<T> data_;
};

}  // namespace ipu
