#pragma once
/// \file
/// Compile errors for malformed graphs. Each error is a class template whose name states the
/// problem and whose arguments are labelled values (`in_layer<..>{"stage2.block1.conv2"}`,
/// `input_channels{6}`, `groups{4}`), so that g++ and clang print the layer and the numbers in
/// the first lines of the diagnostic. They are instantiated once, from the lowered table's
/// error record, never from the graph type.

#include <ipu/graph/detail/lower.hpp>

#include <cstddef>
#include <cstdint>

/// The class templates of the graph language's compile errors and their labelled arguments.
namespace ipu::diag {

/// The path of the layer at fault, as a template argument both compilers print as a string.
template <std::size_t N>
struct in_layer {
  char path[N]{};  ///< the path's `N - 1` characters and a terminating NUL
  /// Copies the first `N - 1` characters of \p p (its whole path when `N == p.length + 1`).
  /// The terminating NUL is written, not left to the initialiser: clang 16 prints the array as
  /// a string only when every element was written, and as character codes cut after ten
  /// otherwise.
  consteval explicit in_layer(const path_string& p) {
    for (std::size_t i = 0; i + 1 < N; ++i) path[i] = p.text[i];
    path[N - 1] = '\0';
  }
};

/// Channels of a conv's input, as a labelled template argument.
struct input_channels { std::int64_t value; };
/// A conv's output channels, as a labelled template argument.
struct filters { std::int64_t value; };
/// A conv's groups, as a labelled template argument.
struct groups { std::int64_t value; };
/// A window's height and width (the cells a dilated conv spans), as a labelled template argument.
struct window_size { std::int64_t height, width; };
/// Values of each sample of a layer's input, as a labelled template argument.
struct input_values_per_sample { std::int64_t value; };
/// Values of each sample of a reshape's target, as a labelled template argument.
struct target_values_per_sample { std::int64_t value; };
/// The height of a layer's input, as a labelled template argument.
struct input_height { std::int64_t value; };
/// The width of a layer's input, as a labelled template argument.
struct input_width { std::int64_t value; };
/// The longest path a node may have (`path_string::capacity`), as a labelled template argument.
struct max_characters { std::int64_t value; };
/// An NHWC shape as a labelled template argument: the output of a residual's body.
struct body_output_nhwc { std::int64_t n, h, w, c; };
/// An NHWC shape as a labelled template argument: the output of a residual's shortcut.
struct shortcut_output_nhwc { std::int64_t n, h, w, c; };
/// An NHWC shape as a labelled template argument: a layer's input.
struct input_nhwc { std::int64_t n, h, w, c; };
/// An NC (rank-2) shape as a labelled template argument.
struct input_nc { std::int64_t n, c; };
/// A node's index in the node table, as a labelled template argument.
struct node_index { std::int64_t value; };
/// The shape of a join's first branch's output (rank 4 as NHWC, rank 2 as `n, c` and zeros).
struct first_branch_output { std::int64_t d0, d1, d2, d3; };
/// The shape of the first branch whose output does not match it.
struct other_branch_output { std::int64_t d0, d1, d2, d3; };
/// A branch of a join, counted from 1.
struct branch { std::int64_t value; };
/// Explicit padding of a window, as a labelled template argument.
struct padding_top_bottom_left_right { std::int64_t top, bottom, left, right; };
/// The most distinct ops one scope may name, as a labelled template argument.
struct max_ops { std::int64_t value; };

/// Error: a conv's input channels or filters are not divisible by its groups.
template <auto Layer, input_channels In, filters Out, groups G>
struct conv_groups_must_divide_channels {
  static_assert(In.value % G.value == 0 && Out.value % G.value == 0,
                "ipu: a grouped conv needs input channels and filters divisible by its groups");
  static constexpr bool value = false;
};

/// Error: a residual's body and shortcut give different shapes.
template <auto Layer, body_output_nhwc Body, shortcut_output_nhwc Shortcut>
struct residual_branches_must_have_equal_shapes {
  static_assert(Body.n == Shortcut.n && Body.h == Shortcut.h && Body.w == Shortcut.w && Body.c == Shortcut.c,
                "ipu: the body and shortcut of nn::residual give different shapes; give the shortcut a "
                "projection (nn::residual(body, nn::conv<Filters, 1, Stride> | nn::batch_norm))");
  static constexpr bool value = false;
};

/// Error: a branch of `nn::add` or `nn::multiply` gives a shape that neither equals the first
/// branch's nor broadcasts to it.
template <auto Layer, first_branch_output First, branch Branch, other_branch_output Other>
struct join_branches_must_have_equal_shapes {
  static_assert(Branch.value < 0, "ipu: each branch of nn::add and nn::multiply must give the first branch's shape, "
                                  "or one that broadcasts to it (each extent equal or 1)");
  static constexpr bool value = false;
};

/// Error: the branches of `nn::concat` differ in an extent other than the last.
template <auto Layer, first_branch_output First, branch Branch, other_branch_output Other>
struct concat_branches_must_agree_but_in_channels {
  static_assert(Branch.value < 0,
                "ipu: the branches of nn::concat must agree in every extent but the last (channels)");
  static constexpr bool value = false;
};

/// Error: `nn::dense` on a 4-D tensor.
template <auto Layer, input_nhwc In>
struct dense_needs_a_2d_input {
  static_assert(In.h == 0 && In.w == 0,
                "ipu: nn::dense on a 4-D tensor; reduce it first (nn::global_avg_pool) or keep every value "
                "(nn::flatten), ipu never flattens silently");
  static constexpr bool value = false;
};

/// Error: a conv or pooling layer on an `[N, C]` tensor.
template <auto Layer, input_nc In>
struct layer_needs_a_4d_input {
  static_assert(In.n < 0, "ipu: conv and pooling layers need an NHWC input, this one gets an NC tensor");
  static constexpr bool value = false;
};

/// Error: a pooling window larger than its input.
template <auto Layer, window_size Window, input_height H, input_width W>
struct pool_window_must_fit_input {
  static_assert(Window.height <= H.value && Window.width <= W.value,
                "ipu: the pooling window is larger than its input");
  static constexpr bool value = false;
};

/// Error: explicit padding of a conv or pooling window that is not below the window on each
/// side, or that leaves the padded input smaller than the window.
template <auto Layer, window_size Window, padding_top_bottom_left_right Padding, input_height H, input_width W>
struct window_padding_must_be_below_the_window {
  static_assert(Window.height < 0,
                "ipu: explicit padding must be smaller than the window on each side, and the padded input at least "
                "the window");
  static constexpr bool value = false;
};

/// Error: a reshape whose target holds another number of values per sample than its input.
template <auto Layer, input_values_per_sample In, target_values_per_sample To>
struct reshape_must_keep_every_value {
  static_assert(In.value < 0, "ipu: nn::reshape must keep every value: its target holds another number of values per "
                              "sample than its input");
  static constexpr bool value = false;
};

/// Error: a node path longer than `path_string::capacity`; `Layer` holds the path cut to it.
template <auto Layer, max_characters Max>
struct layer_path_too_long {
  static_assert(Max.value < 0, "ipu: a node path is longer than ipu::path_string::capacity; use shorter scope names");
  static constexpr bool value = false;
};

/// Error: two nodes have the same path, so weights and queries by path could not tell them
/// apart. `First` and `Second` are their indices in the node table.
template <auto Layer, node_index First, node_index Second>
struct node_paths_must_be_unique {
  static_assert(First.value < 0, "ipu: two nodes have the same path; give sibling nn::scope blocks different names, "
                                 "and none the name of a residual block (block1, block2, ...)");
  static constexpr bool value = false;
};

/// Error: a graph ends in `nn::dropout`, which drops what a training step's next layer reads;
/// no layer reads it. `Layer` is the graph's last layer.
template <auto Layer>
struct dropout_must_precede_a_layer {
  static_assert(Layer.path[0] == '\0', "ipu: the graph ends in nn::dropout, which no layer reads; put it before a layer");
  static constexpr bool value = false;
};

/// Error: one scope names nodes of more distinct ops than the lowering counts.
template <auto Layer, max_ops Max>
struct too_many_ops_in_one_scope {
  static_assert(Max.value < 0, "ipu: one scope holds layers of too many different ops; split it with nn::scope");
  static constexpr bool value = false;
};

}  // namespace ipu::diag

namespace ipu::detail {

/// Instantiates the diagnostic for `E`; true when there is no error.
template <graph_error E>
consteval auto report_graph_error() {
  using enum graph_error_kind;
  constexpr auto layer = diag::in_layer<E.path.length + 1>{E.path};
  constexpr shape a = E.a, b = E.b;
  if constexpr (E.kind == none) {
    return true;
  } else if constexpr (E.kind == groups_do_not_divide_channels) {
    return diag::conv_groups_must_divide_channels<layer, diag::input_channels{a.channels()}, diag::filters{E.x},
                                                  diag::groups{E.y}>::value;
  } else if constexpr (E.kind == residual_shapes_differ) {
    return diag::residual_branches_must_have_equal_shapes<
        layer, diag::body_output_nhwc{a.dim[0], a.dim[1], a.dim[2], a.dim[3]},
        diag::shortcut_output_nhwc{b.dim[0], b.dim[1], b.dim[2], b.dim[3]}>::value;
  } else if constexpr (E.kind == dense_on_4d_input) {
    return diag::dense_needs_a_2d_input<layer, diag::input_nhwc{a.dim[0], a.dim[1], a.dim[2], a.dim[3]}>::value;
  } else if constexpr (E.kind == needs_4d_input) {
    return diag::layer_needs_a_4d_input<layer, diag::input_nc{a.dim[0], a.dim[1]}>::value;
  } else if constexpr (E.kind == pool_larger_than_input) {
    return diag::pool_window_must_fit_input<layer, diag::window_size{E.x, E.y}, diag::input_height{a.dim[1]},
                                            diag::input_width{a.dim[2]}>::value;
  } else if constexpr (E.kind == join_shapes_differ) {
    return diag::join_branches_must_have_equal_shapes<layer, diag::first_branch_output{a.dim[0], a.dim[1], a.dim[2], a.dim[3]},
                                                      diag::branch{E.x},
                                                      diag::other_branch_output{b.dim[0], b.dim[1], b.dim[2], b.dim[3]}>::value;
  } else if constexpr (E.kind == concat_shapes_differ) {
    return diag::concat_branches_must_agree_but_in_channels<
        layer, diag::first_branch_output{a.dim[0], a.dim[1], a.dim[2], a.dim[3]}, diag::branch{E.x},
        diag::other_branch_output{b.dim[0], b.dim[1], b.dim[2], b.dim[3]}>::value;
  } else if constexpr (E.kind == padding_too_large) {
    return diag::window_padding_must_be_below_the_window<
        layer, diag::window_size{E.x, E.y}, diag::padding_top_bottom_left_right{b.dim[0], b.dim[1], b.dim[2], b.dim[3]},
        diag::input_height{a.dim[1]}, diag::input_width{a.dim[2]}>::value;
  } else if constexpr (E.kind == reshape_changes_values) {
    return diag::reshape_must_keep_every_value<layer, diag::input_values_per_sample{E.x},
                                               diag::target_values_per_sample{E.y}>::value;
  } else if constexpr (E.kind == too_many_ops_in_scope) {
    return diag::too_many_ops_in_one_scope<layer, diag::max_ops{E.x}>::value;
  } else if constexpr (E.kind == dropout_at_output) {
    return diag::dropout_must_precede_a_layer<layer>::value;
  } else if constexpr (E.kind == duplicate_path) {
    return diag::node_paths_must_be_unique<layer, diag::node_index{E.x}, diag::node_index{E.y}>::value;
  } else {
    return diag::layer_path_too_long<layer, diag::max_characters{E.x}>::value;
  }
}

}  // namespace ipu::detail
