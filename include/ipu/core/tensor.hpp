#pragma once
/// \file
/// `ipu::tensor<T, Dims...>`: a dense host tensor whose extents are part of its type, stored
/// contiguously in row-major order (NHWC for images, NC after a global pooling). It is the
/// element type of an engine's input and output and of the infeed and outfeed channels.

#include <ipu/core/dtype.hpp>
#include <ipu/core/extents.hpp>
#include <ipu/core/iterable.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace ipu {

namespace detail {
/// A number: an arithmetic type other than `bool` and the character types (so that a string is
/// not taken for values).
template <class V>
concept number = std::is_arithmetic_v<V> && !std::same_as<V, bool> && !std::same_as<V, char> &&
                 !std::same_as<V, wchar_t> && !std::same_as<V, char8_t> && !std::same_as<V, char16_t> &&
                 !std::same_as<V, char32_t>;
}  // namespace detail

/// Values `V` a host tensor of `T` takes (`tensor::assign`): its own elements, and for an f32
/// or f16 tensor any number (not a `bool` or character), `f32` or `f16`, converted as
/// `static_cast<T>` does (to f16: rounded to nearest, ties to even). An 8-bit tensor takes only
/// `std::uint8_t`, so that no value is truncated unseen.
template <class V, class T>
concept TensorValue = std::same_as<std::remove_cvref_t<V>, T> ||
                      (ElementType<T> && (detail::number<std::remove_cvref_t<V>> || ElementType<std::remove_cvref_t<V>>));

/// A host tensor of `T` with the static extents `Dims...` (row-major, last extent innermost).
/// Owns its storage; copyable and movable (a moved-from tensor has no storage until a tensor
/// or `assign`ed values replace it); zero-initialised.
///
/// \tparam T     element type, `ipu::f32` or `ipu::f16`, or `std::uint8_t` (an 8-bit input stream's)
/// \tparam Dims  extents, outermost first; at least one, each positive
template <HostElement T, std::int64_t... Dims>
  requires(sizeof...(Dims) > 0 && ((Dims > 0) && ...))
class tensor {
 public:
  /// The element type `T`.
  using value_type = T;
  /// Number of extents (axes).
  static constexpr std::size_t rank = sizeof...(Dims);
  /// The extents `Dims...`, outermost first.
  static constexpr std::array<std::int64_t, rank> extents{Dims...};
  /// Number of elements: the product of the extents.
  static constexpr std::int64_t elements = (Dims * ...);
  /// Size of the element storage in bytes (`elements * sizeof(T)`).
  static constexpr std::int64_t bytes = elements * static_cast<std::int64_t>(sizeof(T));

  /// A tensor of `elements` zeros.
  tensor() : data_(static_cast<std::size_t>(elements)) {}

  /// A tensor holding `values`, which must have exactly `elements` values; throws
  /// `std::invalid_argument` otherwise.
  explicit tensor(std::span<const T> values) : tensor() { assign(values); }

  /// Copies `values` in; throws `std::invalid_argument` unless there are exactly `elements`.
  /// Gives a moved-from tensor storage again.
  void assign(std::span<const T> values) {
    if (static_cast<std::int64_t>(values.size()) != elements)
      throw std::invalid_argument("ipu::tensor: " + std::to_string(values.size()) + " values given, the tensor " +
                                  shape_string() + " holds " + std::to_string(elements));
    data_.assign(values.begin(), values.end());
  }

  /// Copies the values of `values`, any range a range-based `for` reads (a range-v3 view such
  /// as `views::chunk`, a `std::vector<float>` into an f16 tensor), converted to `T` (see
  /// `TensorValue`). Throws `std::invalid_argument` unless there are exactly `elements`, reading
  /// at most one past them (so an endless range is refused, not followed); the tensor's values
  /// are then unspecified. Gives a moved-from tensor storage again.
  template <InputIterable R>
    requires(TensorValue<iterable_reference_t<R>, T> && !std::is_convertible_v<R &&, std::span<const T>>)
  void assign(R&& values) {
    data_.resize(size());
    std::size_t n = 0;
    for (auto&& value : values) {
      if (n == size())
        throw std::invalid_argument("ipu::tensor: more than " + std::to_string(elements) + " values given, the tensor " +
                                    shape_string() + " holds " + std::to_string(elements));
      data_[n++] = static_cast<T>(value);
    }
    if (n != size())
      throw std::invalid_argument("ipu::tensor: " + std::to_string(n) + " values given, the tensor " + shape_string() +
                                  " holds " + std::to_string(elements));
  }

  /// Pointer to the first of the `elements` contiguous elements, in row-major order.
  T* data() noexcept { return data_.data(); }
  /// Read-only pointer to the first of the `elements` contiguous elements, in row-major order.
  const T* data() const noexcept { return data_.data(); }
  /// Number of elements, as a `std::size_t` (equal to `elements`).
  static constexpr std::size_t size() noexcept { return static_cast<std::size_t>(elements); }
  /// The extents, outermost first (the array `extents`).
  static constexpr const std::array<std::int64_t, rank>& shape() noexcept { return extents; }

  /// Iterator to the first element in row-major order.
  T* begin() noexcept { return data(); }
  /// Iterator one past the last element.
  T* end() noexcept { return data() + size(); }
  /// Read-only iterator to the first element in row-major order.
  const T* begin() const noexcept { return data(); }
  /// Read-only iterator one past the last element.
  const T* end() const noexcept { return data() + size(); }
  /// All `elements` elements, in row-major order.
  std::span<T> span() noexcept { return {data(), size()}; }
  /// All `elements` elements, in row-major order, read-only.
  std::span<const T> span() const noexcept { return {data(), size()}; }

  /// Element at the multi-index `i...` (one index per extent), unchecked.
  template <std::integral... I>
    requires(sizeof...(I) == rank)
  T& operator()(I... i) noexcept {
    return data_[offset({static_cast<std::int64_t>(i)...})];
  }
  /// Read-only element at the multi-index `i...` (one index per extent), unchecked.
  template <std::integral... I>
    requires(sizeof...(I) == rank)
  const T& operator()(I... i) const noexcept {
    return data_[offset({static_cast<std::int64_t>(i)...})];
  }
  /// Element at the multi-index `i...`; throws `std::out_of_range` outside the extents, or
  /// if the tensor has no storage (it was moved from).
  template <std::integral... I>
    requires(sizeof...(I) == rank)
  T& at(I... i) {
    if (data_.empty())
      throw std::out_of_range("ipu::tensor: at() on a tensor " + shape_string() +
                              " that has no storage (was it moved from?)");
    const std::array<std::int64_t, rank> index{static_cast<std::int64_t>(i)...};
    for (std::size_t k = 0; k < rank; ++k)
      if (index[k] < 0 || index[k] >= extents[k])
        throw std::out_of_range("ipu::tensor: index " + std::to_string(index[k]) + " of axis " +
                                std::to_string(k) + " is outside " + shape_string());
    return data_[offset(index)];
  }
  /// Element at flat row-major position \p i (`0 <= i < size()`), unchecked.
  T& operator[](std::size_t i) noexcept { return data_[i]; }
  /// Read-only element at flat row-major position \p i (`0 <= i < size()`), unchecked.
  const T& operator[](std::size_t i) const noexcept { return data_[i]; }

  /// The extents in brackets, for messages: `"[4, 224, 224, 4]"`.
  static std::string shape_string() { return detail::extents_string(extents); }

  /// True when every element compares equal (so a tensor holding a NaN never equals itself).
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
