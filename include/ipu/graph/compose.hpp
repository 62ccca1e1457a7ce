#pragma once
/// \file
/// Composition: `|` sequences blocks, `nn::residual` adds a shortcut, `nn::add`, `nn::concat`
/// and `nn::multiply` join parallel branches, `nn::repeat<N>` repeats a block, `nn::dropout`
/// marks where training drops values,
/// `nn::scope<"name">` names one, `ipu::on<I>` places one on an IPU, `ipu::on_host` runs one
/// on the host, and `ipu::input<...>` starts a graph.
///
/// Types stay shallow: `a | b | c` is one flat `seq_t<A, B, C>`, a block's type never embeds
/// what comes before it, and `repeat<23>(block)` is one type however large 23 is.

#include <ipu/core/dtype.hpp>
#include <ipu/core/fixed_string.hpp>
#include <ipu/graph/layers.hpp>
#include <ipu/graph/node.hpp>

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

namespace ipu {

namespace nn {
/// A sequence of blocks, applied in order. Made by `|`.
template <class... Blocks>
struct seq_t {};
/// The identity: the shortcut of `residual(body)`, or a join's branch that passes its input
/// through (`nn::identity`).
struct identity_t {};
/// Branches applied to the same input, their outputs combined by op `Join` (`ops::add`,
/// `ops::concat` or `ops::multiply`).
template <class Join, class... Branches>
struct join_t {};
/// `y = body(x) + shortcut(x)`.
template <class Body, class Shortcut>
struct residual_t {};
/// `Count` copies of `Body` in sequence; the copies have independent weights.
template <int Count, class Body>
struct repeat_t {};
/// `Body` with its node paths prefixed by `Name.`.
template <fixed_string Name, class Body>
struct scope_t {};
/// Dropout with rate `Rate`, in `[0, 1)` (`nn::dropout<0.2>`). It lowers to no node: at
/// inference it is the identity, as TensorFlow's inference graph has none; in a training step
/// the layers that read its input read it dropped out (`input_dropout` on their inputs), the
/// mask drawn from a seed and drawn again in the backward pass, never stored. A graph may not
/// end in a dropout.
template <scalar Rate>
  requires(Rate.value() >= 0 && Rate.value() < 1)
struct dropout_t {
  static constexpr double rate = Rate.value();  ///< the fraction of values training drops
};
/// A recomputation checkpoint: marks the output of the node before it, which a training step
/// with `recompute::checkpoints` keeps for the backward pass. No node; nothing at inference.
struct checkpoint_t {};
}  // namespace nn

/// `Body` placed on IPU `Ipu`, or run on the host when `Ipu` is `host_device`.
template <int Ipu, class Body>
struct on_t {};

namespace detail {
template <class T> inline constexpr bool is_compound_block = false;
template <class... B> inline constexpr bool is_compound_block<nn::seq_t<B...>> = true;
template <class B, class S> inline constexpr bool is_compound_block<nn::residual_t<B, S>> = true;
template <int N, class B> inline constexpr bool is_compound_block<nn::repeat_t<N, B>> = true;
template <fixed_string S, class B> inline constexpr bool is_compound_block<nn::scope_t<S, B>> = true;
template <int I, class B> inline constexpr bool is_compound_block<on_t<I, B>> = true;
template <class J, class... B> inline constexpr bool is_compound_block<nn::join_t<J, B...>> = true;
template <nn::scalar R> inline constexpr bool is_compound_block<nn::dropout_t<R>> = true;
template <> inline constexpr bool is_compound_block<nn::checkpoint_t> = true;
}  // namespace detail

/// Anything that can be composed with `|`: a layer or a compound block.
template <class T>
concept Block = Layer<std::remove_cvref_t<T>> || detail::is_compound_block<std::remove_cvref_t<T>>;

/// A branch of a join: a block, or `nn::identity`.
template <class T>
concept Branch = Block<T> || std::is_same_v<std::remove_cvref_t<T>, nn::identity_t>;

namespace detail {
template <class T> struct as_seq { using type = nn::seq_t<T>; };
template <class... B> struct as_seq<nn::seq_t<B...>> { using type = nn::seq_t<B...>; };
template <class T> using as_seq_t = typename as_seq<std::remove_cvref_t<T>>::type;

template <class T> struct as_branch { using type = as_seq_t<T>; };
template <> struct as_branch<nn::identity_t> { using type = nn::identity_t; };
template <class T> using as_branch_t = typename as_branch<std::remove_cvref_t<T>>::type;

template <class A, class B> struct concat;
template <class... A, class... B> struct concat<nn::seq_t<A...>, nn::seq_t<B...>> {
  using type = nn::seq_t<A..., B...>;
};
}  // namespace detail

/// The input of a graph: element type, NHWC extents, and how the host streams it.
template <ElementType DType, int N, int H, int W, int C, input_stream Stream = input_stream{}>
  requires(N > 0 && H > 0 && W > 0 && C > 0)
struct input_spec {
  static_assert(!Stream.eight_bit || C <= input_stream::max_channels,
                "ipu::input: an 8-bit stream normalises images of up to 4 channels");
  static_assert(!Stream.eight_bit || [] {
    for (int c = 0; c < C && c < input_stream::max_channels; ++c)
      if (Stream.stddev[static_cast<std::size_t>(c)].significand <= 0) return false;
    return true;
  }(), "ipu::input: an 8-bit stream's standard deviations must be positive");
  using element_type = DType;  ///< the graph's element type, `ipu::f32` or `ipu::f16`
  /// What the host streams: `std::uint8_t` for an 8-bit stream, else the element type.
  using stream_type = std::conditional_t<Stream.eight_bit, std::uint8_t, DType>;
  static constexpr input_stream stream = Stream;  ///< how the host streams it
};

/// A graph: its input, then its blocks in order. Users get one from `ipu::input<...> | ...`
/// and name its type with `decltype`; every query strips `const` from it.
///
/// \tparam Input   the `input_spec`
/// \tparam Blocks  the layers and compound blocks after the input, flattened one level
///                 (`graph | a | b` is `graph<Input, A, B>`)
template <class Input, class... Blocks>
struct graph {};

namespace detail {
template <class T> inline constexpr bool is_graph = false;
template <class In, class... B> inline constexpr bool is_graph<graph<In, B...>> = true;
}  // namespace detail

/// A graph type (cv-qualifiers and references allowed, as `decltype` gives them).
template <class T>
concept Graph = detail::is_graph<std::remove_cvref_t<T>>;

/// `ipu::input<DType, N, H, W, C>`: the empty graph whose input is an NHWC tensor of `DType`.
/// `ipu::input<DType, N, H, W, C, Stream>` states how the host streams it: with
/// `ipu::eight_bit_io(mean, stddev)` (or `ipu::imagenet_eight_bit`), as 8-bit unsigned values
/// that the input step normalises on the IPU (see `ipu::input_stream`).
template <ElementType DType, int N, int H, int W, int C, input_stream Stream = input_stream{}>
inline constexpr graph<input_spec<DType, N, H, W, C, Stream>> input{};

/// Sequences two blocks.
template <Block A, Block B>
constexpr auto operator|(A, B) noexcept {
  return typename detail::concat<detail::as_seq_t<A>, detail::as_seq_t<B>>::type{};
}

/// Appends a block to a graph.
template <class In, class... Bs, Block B>
constexpr auto operator|(graph<In, Bs...>, B) noexcept {
  return []<class... Add>(nn::seq_t<Add...>) { return graph<In, Bs..., Add...>{}; }(detail::as_seq_t<B>{});
}

namespace nn {
using ipu::operator|;

/// `residual(body)`: `y = body(x) + x`; body and input shapes must agree.
template <Block Body>
constexpr residual_t<detail::as_seq_t<Body>, identity_t> residual(Body) noexcept {
  return {};
}
/// `residual(body, shortcut)`: `y = body(x) + shortcut(x)` (a projection shortcut).
template <Block Body, Block Shortcut>
constexpr residual_t<detail::as_seq_t<Body>, detail::as_seq_t<Shortcut>> residual(Body, Shortcut) noexcept {
  return {};
}
/// `nn::identity`: a branch of `nn::add`, `nn::concat` or `nn::multiply` that passes the join's
/// input through.
inline constexpr identity_t identity{};

/// `add(a, b, ...)`: `y = a(x) + b(x) + ...`, two to four branches of the same output shape
/// (`nn::identity` passes `x`); summed in f32 and rounded once.
template <Branch... Bs>
  requires(sizeof...(Bs) >= 2 && sizeof...(Bs) <= max_inputs)
constexpr join_t<ops::add, ipu::detail::as_branch_t<Bs>...> add(Bs...) noexcept {
  return {};
}
/// `multiply(a, b, ...)`: `y = a(x) * b(x) * ...`, two to four branches of the same output
/// shape; multiplied in f32 and rounded once.
template <Branch... Bs>
  requires(sizeof...(Bs) >= 2 && sizeof...(Bs) <= max_inputs)
constexpr join_t<ops::multiply, ipu::detail::as_branch_t<Bs>...> multiply(Bs...) noexcept {
  return {};
}
/// `concat(a, b, ...)`: the branches' outputs concatenated along the last axis (channels), in
/// order; two to four branches that agree in every other extent.
template <Branch... Bs>
  requires(sizeof...(Bs) >= 2 && sizeof...(Bs) <= max_inputs)
constexpr join_t<ops::concat, ipu::detail::as_branch_t<Bs>...> concat(Bs...) noexcept {
  return {};
}

/// `dropout<Rate>`: see `dropout_t`; the identity at inference, no node; dropped inputs in training.
template <scalar Rate>
inline constexpr dropout_t<Rate> dropout{};

/// `checkpoint`: see `checkpoint_t`; `x | nn::checkpoint` keeps `x`'s output for the backward
/// pass when training recomputes at checkpoints.
inline constexpr checkpoint_t checkpoint{};

/// `repeat<Count>(block)`: `Count` copies of `block`, each with its own weights.
template <int Count, Block Body>
  requires(Count > 0)
constexpr repeat_t<Count, detail::as_seq_t<Body>> repeat(Body) noexcept {
  return {};
}
/// `scope<"stage1">(block)`: prefixes the paths of the block's nodes with `stage1.`. The name
/// is not empty and has no `.`, the separator of paths; sibling scopes need different names.
template <fixed_string Name, Block Body>
  requires(Name.view().size() > 0)
constexpr scope_t<Name, detail::as_seq_t<Body>> scope(Body) noexcept {
  static_assert(Name.view().find('.') == std::string_view::npos,
                "ipu: a nn::scope name cannot contain '.', which separates the parts of a node path");
  return {};
}
}  // namespace nn

/// `on<I>(block)`: places `block` on IPU `I`. Blocks outside any `on` are on IPU 0; an `on`
/// inside another `on` takes precedence for its block. Whether `I` exists is checked against
/// the target when the graph is planned.
template <int Ipu, Block Body>
  requires(Ipu >= 0)
constexpr on_t<Ipu, detail::as_seq_t<Body>> on(Body) noexcept {
  return {};
}

/// `on_host(block)`: runs `block` on the host, between the IPU steps before and after it: the
/// counterpart of TensorFlow's `outside_compilation` scope for an operation the IPU should not
/// run. Its layers take no tile memory and no IPU cycles. What it reads from IPUs is copied to
/// the host when it runs, and its output is copied to every IPU that reads it; the plan holds
/// those copies on the IPUs, and the cycle model charges the transfers at the chip's host-link
/// bandwidth (`chip_spec::host_bytes_per_s`). An `on<I>` inside it places its block on IPU `I`.
template <Block Body>
constexpr on_t<host_device, detail::as_seq_t<Body>> on_host(Body) noexcept {
  return {};
}

}  // namespace ipu
