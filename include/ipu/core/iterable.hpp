#pragma once
/// \file
/// `ipu::InputIterable`: what a range-based `for` reads, the ranges that `tensor::assign` and
/// `ipu::feed` take.

#include <concepts>
#include <iterator>
#include <utility>

namespace ipu {

/// A range a range-based `for` goes through with `std::begin` and `std::end` (whose types may
/// differ, as a view's sentinel does): standard containers and views, and range-v3 pipelines.
/// (Stated here rather than as `std::ranges::input_range`, whose header costs every
/// translation unit that includes `ipu/ipu.hpp` about 0.07 s.)
template <class R>
concept InputIterable = requires(R& r) {
  { std::begin(r) != std::end(r) } -> std::convertible_to<bool>;
  *std::begin(r);
  ++std::declval<decltype(std::begin(r))&>();
};

/// The type of an element of a range of type `R`: what its `std::begin` iterator dereferences to.
template <class R>
using iterable_reference_t = decltype(*std::begin(std::declval<R&>()));

}  // namespace ipu
