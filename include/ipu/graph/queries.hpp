#pragma once
/// \file
/// Compile-time queries on a graph type `G`: its node table, shapes, parameters and MACs.
///
/// The first query on `G` lowers it to a node table once (a single pass over the blocks,
/// linear in the number of nodes) and validates it: a malformed graph gives one compile error
/// naming the layer and its numbers. Every other query reads the table.

#include <ipu/graph/compose.hpp>
#include <ipu/graph/detail/lower.hpp>
#include <ipu/graph/diagnostics.hpp>
#include <ipu/graph/node.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

namespace ipu {

namespace detail {
template <class G>
struct graph_info {
  using lowering_t = lowering<G>;
  static constexpr std::size_t size = lowering_t::size;
  static constexpr lowered_graph<size> lowered = lowering_t::run();
  /// The diagnostic of the graph's error, if it has one (a compile error). `decltype` of a call
  /// whose return type is deduced instantiates the diagnostic without using its value: a value
  /// would make clang report each later use of it as not constant, ten errors for one mistake.
  using checked = decltype(report_graph_error<lowered.error>());
  static constexpr const std::array<node, size>& nodes = lowered.nodes;
};

template <class G> struct input_of;
template <class In, class... Bs>
struct input_of<graph<In, Bs...>> {
  using type = In;
};
}  // namespace detail

/// Number of nodes of `G`, the input node included.
template <Graph G>
inline constexpr std::size_t node_count_v = detail::graph_info<std::remove_cvref_t<G>>::size;

/// The flattened node table of `G`, in execution order; node 0 is the input.
template <Graph G>
inline constexpr const std::array<node, node_count_v<G>>& node_table_v =
    detail::graph_info<std::remove_cvref_t<G>>::nodes;

/// The element type of `G`'s tensors (`ipu::f32` or `ipu::f16`).
template <Graph G>
using element_type_t = typename detail::input_of<std::remove_cvref_t<G>>::type::element_type;

/// How the host streams `G`'s input (`ipu::input_stream`).
template <Graph G>
inline constexpr input_stream input_stream_v = detail::input_of<std::remove_cvref_t<G>>::type::stream;

/// What the host streams into `G`: its element type, or `std::uint8_t` for an 8-bit stream.
template <Graph G>
using stream_type_t = typename detail::input_of<std::remove_cvref_t<G>>::type::stream_type;

namespace detail {
template <class G, input_stream S> struct with_stream;
template <ElementType D, int N, int H, int W, int C, input_stream Old, class... Bs, input_stream S>
struct with_stream<graph<input_spec<D, N, H, W, C, Old>, Bs...>, S> {
  using type = graph<input_spec<D, N, H, W, C, S>, Bs...>;
};
}  // namespace detail

/// Graph `G` with its input streamed as `S` says: `ipu::with_stream_t<models::resnet50<f16, 80>,
/// ipu::imagenet_eight_bit>` is ResNet-50 fed 8-bit images normalised on the IPU.
template <Graph G, input_stream S>
using with_stream_t = typename detail::with_stream<std::remove_cvref_t<G>, S>::type;

/// The NHWC shape of `G`'s input.
template <Graph G>
inline constexpr std::array<std::int64_t, 4> input_shape_v = [] {
  const shape s = node_table_v<G>[0].out;
  return std::array<std::int64_t, 4>{s.dim[0], s.dim[1], s.dim[2], s.dim[3]};
}();

/// The batch size of `G` (the N of its input).
template <Graph G>
inline constexpr std::int64_t batch_size_v = input_shape_v<G>[0];

/// The shape of `G`'s output: NHWC, or NC after a global pooling.
template <Graph G>
inline constexpr auto output_shape_v = [] {
  constexpr shape s = node_table_v<G>.back().out;
  std::array<std::int64_t, static_cast<std::size_t>(s.rank)> a{};
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = s.dim[i];
  return a;
}();

/// Trainable parameters of `G`, counted as torchvision does: conv weights, batch-norm scale
/// and shift, dense weights and bias.
template <Graph G>
inline constexpr std::int64_t param_count_v = [] {
  std::int64_t n = 0;
  for (const node& x : node_table_v<G>) n += x.params;
  return n;
}();

/// Multiply-accumulates of `G`'s conv and dense layers for one pass of the whole batch.
template <Graph G>
inline constexpr std::int64_t mac_count_v = [] {
  std::int64_t n = 0;
  for (const node& x : node_table_v<G>) n += x.macs;
  return n;
}();

/// Index of the node whose path is `path` in `table`, or -1.
template <std::size_t N>
constexpr int find_node(const std::array<node, N>& table, std::string_view path) noexcept {
  for (std::size_t i = 0; i < N; ++i)
    if (table[i].path == path) return static_cast<int>(i);
  return -1;
}

}  // namespace ipu
