#pragma once
/// \file
/// The flattened node table: what a graph type lowers to, and what every later stage (plan,
/// engine, reports) works from. Plain structs, usable in constant expressions.

#include <ipu/core/dtype.hpp>
#include <ipu/core/fixed_string.hpp>
#include <ipu/core/shape.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace ipu {

/// The operation a node performs.
enum class op : std::uint8_t {
  input,            ///< the graph input (always node 0)
  conv,             ///< 2-D convolution, SAME padding, no bias
  batch_norm,       ///< inference batch normalisation (scale, shift, mean, variance)
  relu,             ///< max(x, 0)
  max_pool,         ///< max pooling, SAME padding
  avg_pool,         ///< average pooling, SAME padding (padding excluded from the count)
  global_avg_pool,  ///< mean over H and W: NHWC -> NC
  dense,            ///< fully connected layer with bias, on an NC tensor
  softmax,          ///< softmax over the last axis
  add,              ///< element-wise sum of its inputs: a residual block's, or `nn::add`'s branches
  concat,           ///< its inputs concatenated along the last axis (`nn::concat`)
  multiply,         ///< element-wise product of its inputs (`nn::multiply`)
};

/// Number of enumerators in `op`.
inline constexpr int op_count = 12;

/// Hyper-parameters of a layer, as its type states them. Fields a layer does not use keep
/// their defaults.
struct layer_params {
  op kind{};        ///< the layer's operation
  int filters = 0;  ///< output channels of a conv, units of a dense layer
  int kernel = 0;   ///< kernel or window size (square)
  int stride = 1;   ///< stride of a conv or pooling window, the same along height and width
  int groups = 1;  ///< conv groups (cardinality)
};

/// Most inputs one node reads: the branches a join combines.
inline constexpr int max_inputs = 4;

/// One node of the flattened graph.
///
/// Nodes are in execution order; a node's inputs always precede it. Node 0 is the input. A node
/// reads any number of earlier nodes, up to `max_inputs`: one for a layer, two for the add that
/// closes a residual block.
struct node {
  op kind{};               ///< the operation the node performs
  path_string path{};      ///< e.g. `stage3.block2.conv2`
  /// The nodes whose outputs it reads, in order (the main input first); -1 past the last.
  std::array<int, max_inputs> inputs{-1, -1, -1, -1};
  int input_count = 0;     ///< entries of `inputs` in use: 0 for the graph input, 1 for a layer, 2 or more for a join
  layer_params layer{};    ///< the layer's hyper-parameters
  shape in{};              ///< shape of the (main) input
  shape out{};             ///< shape of the output
  dtype type{};            ///< storage element type of the output
  std::int64_t params = 0; ///< trainable parameters (torchvision's count)
  std::int64_t macs = 0;   ///< multiply-accumulates for one pass of the whole batch
  int ipu = 0;             ///< IPU the node is placed on

  /// The node producing the main (first) input; -1 for the graph input.
  constexpr int input() const noexcept { return inputs[0]; }
  /// The nodes it reads: `inputs[0, input_count)`.
  constexpr std::span<const int> sources() const noexcept {
    return {inputs.data(), static_cast<std::size_t>(input_count)};
  }
  /// Whether it reads node `j`.
  constexpr bool reads(int j) const noexcept {
    for (int src : sources())
      if (src == j) return true;
    return false;
  }
};

}  // namespace ipu
