#pragma once
/// \file
/// Element types: `ipu::f32` and `ipu::f16`, and their run-time tag `ipu::dtype`.
///
/// `f16` is a storage type, as on the IPU: values are kept in half precision and converted to
/// f32 for arithmetic (partials are f32 by default). It is `ipu::half` (`core/half.hpp`).

#include <ipu/core/half.hpp>

#include <concepts>
#include <cstdint>
#include <string_view>

namespace ipu {

/// IEEE-754 binary32 storage and arithmetic.
using f32 = float;
/// IEEE-754 binary16 storage; arithmetic happens in f32.
using f16 = half;

/// Run-time tag of an element type, as held in node tables and plans.
enum class dtype : std::uint8_t { f32, f16 };

/// The element types a graph may use.
template <class T>
concept ElementType = std::same_as<T, f32> || std::same_as<T, f16>;

/// The types a host tensor holds: the element types, and `std::uint8_t`, the values of an
/// 8-bit input stream (`ipu::input_stream`).
template <class T>
concept HostElement = ElementType<T> || std::same_as<T, std::uint8_t>;

/// The tag of element type `T`.
template <ElementType T>
inline constexpr dtype dtype_of_v = std::same_as<T, f32> ? dtype::f32 : dtype::f16;

/// Bytes per element of `t`.
constexpr std::int64_t size_of(dtype t) noexcept { return t == dtype::f32 ? 4 : 2; }

/// The name users write for `t` ("f32" or "f16").
constexpr std::string_view name_of(dtype t) noexcept { return t == dtype::f32 ? "f32" : "f16"; }

static_assert(sizeof(f16) == 2 && sizeof(f32) == 4);

}  // namespace ipu
