#pragma once
/// \file
/// The flattened node table: what a graph type lowers to, and what every later stage (plan,
/// engine, reports) works from. Plain structs, usable in constant expressions.

#include <ipu/core/dtype.hpp>
#include <ipu/core/fixed_string.hpp>
#include <ipu/core/shape.hpp>

#include <cstdint>

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
  add,              ///< element-wise sum closing a residual block
};

/// Number of enumerators in `op`.
inline constexpr int op_count = 10;

/// Hyper-parameters of a layer, as its type states them. Fields a layer does not use keep
/// their defaults.
struct layer_params {
  op kind{};        ///< the layer's operation
  int filters = 0;  ///< output channels of a conv, units of a dense layer
  int kernel = 0;   ///< kernel or window size (square)
  int stride = 1;   ///< stride of a conv or pooling window, the same along height and width
  int groups = 1;  ///< conv groups (cardinality)
};

/// One node of the flattened graph.
///
/// Nodes are in execution order; a node's inputs always precede it. Node 0 is the input.
struct node {
  op kind{};               ///< the operation the node performs
  path_string path{};      ///< e.g. `stage3.block2.conv2`
  int input = -1;          ///< node producing the (main) input; -1 for the input node
  int shortcut = -1;       ///< for `op::add`: node producing the shortcut branch
  layer_params layer{};    ///< the layer's hyper-parameters
  shape in{};              ///< shape of the (main) input
  shape out{};             ///< shape of the output
  dtype type{};            ///< storage element type of the output
  std::int64_t params = 0; ///< trainable parameters (torchvision's count)
  std::int64_t macs = 0;   ///< multiply-accumulates for one pass of the whole batch
  int ipu = 0;             ///< IPU the node is placed on
};

}  // namespace ipu
