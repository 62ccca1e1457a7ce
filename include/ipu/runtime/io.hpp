#pragma once
/// \file
/// The host tensors a graph takes and produces: `ipu::input_tensor_t<G>` and
/// `ipu::output_tensor_t<G>`, the element types of an engine's `infer` and of its feeds.

#include <ipu/core/tensor.hpp>
#include <ipu/graph/queries.hpp>

#include <cstddef>
#include <utility>

namespace ipu {

namespace detail {
template <class T, auto Shape, class Seq = std::make_index_sequence<Shape.size()>>
struct tensor_of;
template <class T, auto Shape, std::size_t... I>
struct tensor_of<T, Shape, std::index_sequence<I...>> {
  using type = tensor<T, Shape[I]...>;
};
}  // namespace detail

/// The host tensor `G` takes: what its input stream carries (its element type, or
/// `std::uint8_t` for an 8-bit stream), NHWC extents.
template <Graph G>
using input_tensor_t = typename detail::tensor_of<stream_type_t<G>, input_shape_v<G>>::type;

/// The host tensor `G` produces: NHWC, or NC after a global pooling.
template <Graph G>
using output_tensor_t = typename detail::tensor_of<element_type_t<G>, output_shape_v<G>>::type;

}  // namespace ipu
