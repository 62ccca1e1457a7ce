#pragma once
/// \file
/// The flattened node table: what a graph type lowers to, and what every later stage (plan,
/// engine, reports) works from. Plain structs, usable in constant expressions.

#include <ipu/core/dtype.hpp>
#include <ipu/core/fixed_string.hpp>
#include <ipu/core/scalar.hpp>
#include <ipu/core/shape.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace ipu {

namespace ops {
struct op_info;
}  // namespace ops

/// The operation a node performs: a handle to its op's compile-time facts (`ops::op_info`, one
/// per op struct: `ipu::op_of<ops::conv>`). Equal handles are the same op. The set of ops is
/// open: an op struct defined in user code gets its handle the same way.
struct op {
  const ops::op_info* info = nullptr;  ///< the op's facts; null for no op

  /// Whether both are the same op.
  friend constexpr bool operator==(op, op) noexcept = default;
};

/// How the host streams a graph's input to its IPU: in the graph's element type (the default),
/// or as 8-bit unsigned values that the input step normalises on the IPU, per channel `c`, to
/// `(x / 255 - mean[c]) / stddev[c]` (PopTorch's `eight_bit_io` with the normalisation on the
/// IPU, as Graphcore's CNN examples run ResNet-50 and EfficientNet: `NormalizeInputModel`,
/// graphcore/examples, vision/cnns/pytorch). The stream then carries a byte per value, and the
/// IPU receives it into a buffer of a byte per value before converting it. The last argument
/// of `ipu::input`; up to 4 channels.
struct input_stream {
  /// Most channels an 8-bit stream normalises (an image's: grey, RGB or RGBA).
  static constexpr int max_channels = 4;

  bool eight_bit = false;  ///< 8-bit unsigned values, normalised on the IPU
  /// Per channel, on the scale of `x / 255` (ImageNet's red: 0.485).
  std::array<scalar, max_channels> mean{0.0, 0.0, 0.0, 0.0};
  /// Per channel, on the scale of `x / 255` (ImageNet's red: 0.229); positive.
  std::array<scalar, max_channels> stddev{1.0, 1.0, 1.0, 1.0};
  /// Bytes of one streamed value, for a graph of element type `graph`.
  constexpr std::int64_t value_bytes(dtype graph) const noexcept { return eight_bit ? 1 : size_of(graph); }
  /// Channel `c`'s factor: `1 / (255 * stddev[c])`, rounded to f32.
  constexpr float scale(std::int64_t c) const noexcept {
    return static_cast<float>(1.0 / (255.0 * stddev[static_cast<std::size_t>(c)].value()));
  }
  /// Channel `c`'s offset: `mean[c] / stddev[c]`, rounded to f32.
  constexpr float shift(std::int64_t c) const noexcept {
    return static_cast<float>(mean[static_cast<std::size_t>(c)].value() / stddev[static_cast<std::size_t>(c)].value());
  }
  /// Equal when every field is.
  constexpr bool operator==(const input_stream&) const = default;
};

/// An 8-bit input stream normalised on the IPU with per-channel `mean` and `stddev` (on the
/// scale of `x / 255`; entries past the image's channels are not read).
consteval input_stream eight_bit_io(std::array<scalar, input_stream::max_channels> mean = {0.0, 0.0, 0.0, 0.0},
                                    std::array<scalar, input_stream::max_channels> stddev = {1.0, 1.0, 1.0, 1.0}) noexcept {
  return {true, mean, stddev};
}

/// The 8-bit stream of an RGB ImageNet model: torchvision's mean and standard deviation, which
/// Graphcore's examples normalise with on the IPU.
inline constexpr input_stream imagenet_eight_bit = eight_bit_io({0.485, 0.456, 0.406, 0.0}, {0.229, 0.224, 0.225, 1.0});

/// Hyper-parameters of a layer, as its type states them. Fields a layer does not use keep
/// their defaults.
struct layer_params {
  int filters = 0;  ///< output channels of a conv, units of a dense layer
  hw kernel = 0;    ///< kernel or window size, rows x columns (an adaptive pooling's output size)
  hw stride = 1;    ///< stride of a conv or pooling window along height and width
  hw dilation = 1;  ///< cells between a conv's taps along height and width (1: adjacent)
  int groups = 1;   ///< conv groups (cardinality)
  padding pad{};    ///< padding of a conv or pooling window: TensorFlow's SAME by default
  bool bias = false;  ///< a conv or dense layer adds a bias per output channel
  bool count_padding = false;  ///< average pooling divides by the whole window, padded cells included
  double alpha = 0;  ///< a real hyper-parameter: leaky ReLU's slope
  input_stream stream{};  ///< the graph input's: how the host streams it

  /// The cells a window spans along height and width (`dilated_extent`).
  constexpr hw extent() const noexcept { return dilated_extent(kernel, dilation); }
};

/// The `node::ipu` of a node that runs on the host between IPU steps (`ipu::on_host`).
inline constexpr int host_device = -1;

/// Most inputs one node reads: the branches a join combines.
inline constexpr int max_inputs = 4;

/// A dropout on one input of a node (`nn::dropout` between the node and the node it reads).
/// At inference the node reads the input itself. In a training step it reads the input with
/// each value zeroed with probability `rate` and the others multiplied by `1 / (1 - rate)`;
/// the readers of one dropped value (a block's layers and its shortcut, after one
/// `nn::dropout`) share its mask.
struct input_dropout {
  double rate = 0;  ///< the fraction of values dropped, in `[0, 1)`; 0 for none
  int site = -1;    ///< the dropout's number, in the order of the graph's `nn::dropout`s; -1 for none

  /// Whether the input is dropped out in training.
  constexpr bool active() const noexcept { return site >= 0; }
};

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
  /// The dropout on each input in training (`input_dropout`), in the order of `inputs`.
  std::array<input_dropout, max_inputs> dropout{};
  layer_params layer{};    ///< the layer's hyper-parameters
  shape in{};              ///< shape of the (main) input
  shape out{};             ///< shape of the output
  dtype type{};            ///< storage element type of the output
  std::int64_t params = 0; ///< trainable parameters (torchvision's count)
  std::int64_t macs = 0;   ///< multiply-accumulates for one pass of the whole batch
  int ipu = 0;             ///< IPU the node is placed on, or `host_device`
  bool checkpoint = false; ///< marked with `nn::checkpoint`: training with `recompute::checkpoints` keeps its output

  /// Whether it runs on the host (`ipu::on_host`).
  constexpr bool on_host() const noexcept { return ipu == host_device; }
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
