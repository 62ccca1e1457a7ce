#pragma once
/// \file
/// Lowering a graph type to its node table, in one pass: node paths, shapes, parameters, MACs,
/// placement and the first shape error. Recursion follows the nesting of blocks (a few levels),
/// never the number of layers; sequences expand in braced lists, never in folds.

#include <ipu/core/hash.hpp>
#include <ipu/graph/compose.hpp>
#include <ipu/graph/node.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>

namespace ipu::detail {

template <std::size_t N>
struct lowered_graph {
  std::array<node, N> nodes{};
  graph_error error{};
};

// ---- node counts ----------------------------------------------------------------------------

template <class T> inline constexpr int node_count = 1;  // a layer
template <class... B>
inline constexpr int node_count<nn::seq_t<B...>> = [] {
  int n = 0;
  for (int c : {0, node_count<B>...}) n += c;
  return n;
}();
template <>
inline constexpr int node_count<nn::identity_t> = 0;
template <nn::scalar R>
inline constexpr int node_count<nn::dropout_t<R>> = 0;  // the identity at inference
template <>
inline constexpr int node_count<nn::checkpoint_t> = 0;  // a mark on the node before it
template <class Join, class... Branches>
inline constexpr int node_count<nn::join_t<Join, Branches...>> = [] {
  int n = 1;
  for (int c : {node_count<Branches>...}) n += c;
  return n;
}();
template <class Body>
inline constexpr int node_count<nn::residual_t<Body, nn::identity_t>> = node_count<Body> + 1;
template <class Body, class Shortcut>
inline constexpr int node_count<nn::residual_t<Body, Shortcut>> = node_count<Body> + node_count<Shortcut> + 1;
template <int Count, class Body>
inline constexpr int node_count<nn::repeat_t<Count, Body>> = Count * node_count<Body>;
template <fixed_string Name, class Body>
inline constexpr int node_count<nn::scope_t<Name, Body>> = node_count<Body>;
template <int Ipu, class Body>
inline constexpr int node_count<on_t<Ipu, Body>> = node_count<Body>;

// ---- the builder ----------------------------------------------------------------------------

/// Naming state of one scope: the path prefix, how many nodes of each op it has named, and
/// how many residual blocks.
struct name_scope {
  static constexpr int capacity = 64;  ///< distinct ops named in one scope
  path_string prefix{};
  std::array<op, capacity> ops{};
  std::array<int, capacity> count{};
  int kinds = 0;
  int blocks = 0;

  /// The number of the next node of op `o` in this scope (1 for its first), or 0 when the
  /// scope already names `capacity` other ops.
  constexpr int next(op o) {
    for (int k = 0; k < kinds; ++k)
      if (ops[static_cast<std::size_t>(k)] == o) return ++count[static_cast<std::size_t>(k)];
    if (kinds == capacity) return 0;
    ops[static_cast<std::size_t>(kinds)] = o;
    count[static_cast<std::size_t>(kinds++)] = 1;
    return 1;
  }

  constexpr name_scope child(std::string_view name, std::int64_t number = 0) const {
    name_scope s;
    s.prefix = prefix;
    s.prefix.append(name);
    if (number > 0) s.prefix.append(number);
    s.prefix.append(".");
    return s;
  }
};

/// What the next layer reads: a node's output, and the dropout on it in training.
struct read_value {
  int node = 0;
  input_dropout dropout{};
};

template <std::size_t N>
struct builder {
  std::array<node, N> nodes{};
  int size = 0;
  int current = 0;  // node producing the value the next layer consumes
  input_dropout dropped{};  // the dropout on that value, which its next reader takes
  int dropouts = 0;  // dropouts numbered so far
  int ipu = 0;
  graph_error error{};

  /// The value the next layer reads.
  constexpr read_value read() const noexcept { return {current, dropped}; }
  /// Makes `v` the value the next layer reads (a branch's start).
  constexpr void resume(read_value v) noexcept { current = v.node, dropped = v.dropout; }

  /// `nn::dropout` at `rate`: the next reader reads the current value dropped out. A dropout
  /// of a dropped value is one dropout keeping the product of the two keep rates.
  constexpr void drop(double rate) noexcept {
    if (rate == 0) return;
    if (dropped.active()) {
      dropped.rate = 1 - (1 - dropped.rate) * (1 - rate);
    } else {
      dropped = {rate, dropouts++};
    }
  }

  constexpr void fail(graph_error e) {
    if (error.kind == graph_error_kind::none) error = e;
  }

  constexpr int push(node n) {
    if (n.path.overflow) fail({graph_error_kind::path_too_long, n.path, {}, {}, path_string::capacity, 0});
    nodes[static_cast<std::size_t>(size)] = n;
    current = size;
    dropped = {};
    return size++;
  }

  constexpr void push_input(dtype type, shape s, const input_stream& stream) {
    node n;
    n.layer.stream = stream;
    n.kind = op_of<ops::input>;
    n.path = path_string("input");
    n.in = n.out = s;
    n.type = type;
    n.ipu = ipu;
    push(n);
  }

  /// Appends `n` with the shape rule's result, or records its error at `n`'s path.
  constexpr void push_inferred(node n, const ops::inferred& r) {
    if (r.error.kind != graph_error_kind::none) {
      graph_error e = r.error;
      e.path = n.path;
      fail(e);
    }
    n.out = r.out;
    n.params = r.params;
    n.macs = r.macs;
    push(n);
  }

  /// The path of the next node of op `o` in `scope`: `<prefix><name><number>`, with a `_`
  /// before the number when the name ends in a digit (`relu6_1`).
  constexpr path_string name(op o, name_scope& scope) {
    path_string path = scope.prefix;
    const int number = scope.next(o);
    const std::string_view op_name = name_of(o);
    path.append(op_name);
    if (!op_name.empty() && op_name.back() >= '0' && op_name.back() <= '9') path.append("_");
    path.append(number);
    if (number == 0) fail({graph_error_kind::too_many_ops_in_scope, path, {}, {}, name_scope::capacity, 0});
    return path;
  }

  constexpr void push_layer(op o, const layer_params& p, name_scope& scope) {
    const node& src = nodes[static_cast<std::size_t>(current)];
    node n;
    n.kind = o;
    n.layer = p;
    n.path = name(o, scope);
    n.inputs[0] = current;
    n.dropout[0] = dropped;
    n.input_count = 1;
    n.in = src.out;
    n.type = src.type;
    n.ipu = ipu;
    push_inferred(n, o.info->infer(p, n.in));
  }

  /// Appends a join of kind `kind` reading `sources`, at `path`.
  constexpr void push_join(op kind, std::span<const read_value> sources, const path_string& path) {
    const node& a = nodes[static_cast<std::size_t>(sources[0].node)];
    node n;
    n.kind = kind;
    n.path = path;
    std::array<shape, max_inputs> shapes{};
    for (std::size_t k = 0; k < sources.size(); ++k) {
      n.inputs[k] = sources[k].node;
      n.dropout[k] = sources[k].dropout;
      shapes[k] = nodes[static_cast<std::size_t>(sources[k].node)].out;
    }
    n.input_count = static_cast<int>(sources.size());
    n.in = a.out;
    n.type = a.type;
    n.ipu = ipu;
    const std::span<const shape> in{shapes.data(), sources.size()};
    push_inferred(n, kind.info->infer_join(in));
  }

  /// The add closing a residual block: body and shortcut.
  constexpr void push_add(read_value main, read_value shortcut, const name_scope& scope) {
    path_string path = scope.prefix;
    path.append(ops::add::name);
    const std::array<read_value, 2> sources{main, shortcut};
    const graph_error before = error;
    push_join(op_of<ops::add>, sources, path);
    if (before.kind == graph_error_kind::none && error.kind == graph_error_kind::join_shapes_differ)
      error.kind = graph_error_kind::residual_shapes_differ;  // name what the user wrote
  }
};

// ---- emission: one specialisation per kind of block -----------------------------------------

template <class T>
struct emit {
  template <class B>
  static constexpr void apply(B& b, name_scope& s) {
    b.push_layer(op_of<typename T::op_type>, layer_params_of<T>, s);
  }
};
template <class... Bs>
struct emit<nn::seq_t<Bs...>> {
  template <class B>
  static constexpr void apply(B& b, name_scope& s) {
    (void)std::initializer_list<int>{0, (emit<Bs>::apply(b, s), 0)...};
  }
};
template <class Body, class Shortcut>
struct emit<nn::residual_t<Body, Shortcut>> {
  template <class B>
  static constexpr void apply(B& b, name_scope& s) {
    name_scope inner = s.child("block", ++s.blocks);
    const read_value x = b.read();
    emit<Body>::apply(b, inner);
    const read_value main = b.read();
    read_value shortcut = x;
    if constexpr (!std::is_same_v<Shortcut, nn::identity_t>) {
      b.resume(x);
      name_scope projection = inner.child("shortcut");
      emit<Shortcut>::apply(b, projection);
      shortcut = b.read();
    }
    b.push_add(main, shortcut, inner);
  }
};
template <>
struct emit<nn::identity_t> {  // a join's branch that passes its input through
  template <class B>
  static constexpr void apply(B&, name_scope&) {}
};
template <nn::scalar R>
struct emit<nn::dropout_t<R>> {  // the identity at inference; its reader's input dropout in training
  template <class B>
  static constexpr void apply(B& b, name_scope&) {
    b.drop(R.value());
  }
};
template <>
struct emit<nn::checkpoint_t> {  // marks the node before it
  template <class B>
  static constexpr void apply(B& b, name_scope&) {
    b.nodes[static_cast<std::size_t>(b.current)].checkpoint = true;
  }
};
template <class Join, class... Branches>
struct emit<nn::join_t<Join, Branches...>> {
  template <class B>
  static constexpr void apply(B& b, name_scope& s) {
    const path_string path = b.name(op_of<Join>, s);  // named like a layer: `concat1`, its branches `concat1.branch1...`
    name_scope inner = s.child(path.view().substr(s.prefix.view().size()));
    const read_value x = b.read();
    std::array<read_value, sizeof...(Branches)> outputs{};
    int k = 0;
    (void)std::initializer_list<int>{0, (b.resume(x), apply_branch<Branches>(b, inner, k), outputs[static_cast<std::size_t>(k++)] = b.read(), 0)...};
    b.push_join(op_of<Join>, outputs, path);
  }
  template <class Branch, class B>
  static constexpr void apply_branch(B& b, const name_scope& inner, int k) {
    name_scope branch = inner.child("branch", k + 1);
    emit<Branch>::apply(b, branch);
  }
};
template <int Count, class Body>
struct emit<nn::repeat_t<Count, Body>> {
  template <class B>
  static constexpr void apply(B& b, name_scope& s) {
    for (int i = 0; i < Count; ++i) emit<Body>::apply(b, s);  // counters continue: block2, block3, ...
  }
};
template <fixed_string Name, class Body>
struct emit<nn::scope_t<Name, Body>> {
  template <class B>
  static constexpr void apply(B& b, name_scope& s) {
    name_scope inner = s.child(Name.view());
    emit<Body>::apply(b, inner);
  }
};
template <int Ipu, class Body>
struct emit<on_t<Ipu, Body>> {
  template <class B>
  static constexpr void apply(B& b, name_scope& s) {
    const int outer = b.ipu;
    b.ipu = Ipu;
    emit<Body>::apply(b, s);
    b.ipu = outer;
  }
};

/// Fails with `duplicate_path` when two nodes share a path: sibling scopes of the same name, a
/// repeated scope, or a scope named like a residual block (`block1`). The paths' hashes are
/// sorted, and only equal hashes compare paths: quadratic work in a constant evaluation would
/// cost a second of compile time on ResNeXt-101.
template <std::size_t N>
constexpr void check_unique_paths(builder<N>& b) {
  std::array<std::uint64_t, N> hash{};
  for (std::size_t i = 0; i < N; ++i) hash[i] = fnv1a64(b.nodes[i].path.view());
  std::array<std::uint64_t, N> sorted = hash;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t k = 1; k < N; ++k) {
    if (sorted[k - 1] != sorted[k]) continue;
    for (std::size_t j = 1; j < N; ++j)  // rare: find the nodes, and whether their paths are equal
      for (std::size_t i = 0; i < j; ++i)
        if (hash[i] == sorted[k] && hash[j] == sorted[k] && b.nodes[i].path.view() == b.nodes[j].path.view()) {
          b.fail({graph_error_kind::duplicate_path, b.nodes[j].path, {}, {}, static_cast<std::int64_t>(i),
                  static_cast<std::int64_t>(j)});
          return;
        }
  }
}

// ---- the ops of a graph's type -------------------------------------------------------------

/// Calls `f.template operator()<Op>()` for the op struct of every node `T` lowers to (an op
/// may come more than once): how an engine finds its graph's kernels.
template <class T>
struct op_walk {
  template <class F>
  static void apply(F& f) {
    f.template operator()<typename T::op_type>();
  }
};
template <class... Bs>
struct op_walk<nn::seq_t<Bs...>> {
  template <class F>
  static void apply(F& f) {
    (void)std::initializer_list<int>{0, (op_walk<Bs>::apply(f), 0)...};
  }
};
template <>
struct op_walk<nn::identity_t> {
  template <class F>
  static void apply(F&) {}
};
template <nn::scalar R>
struct op_walk<nn::dropout_t<R>> {
  template <class F>
  static void apply(F&) {}
};
template <>
struct op_walk<nn::checkpoint_t> {
  template <class F>
  static void apply(F&) {}
};
template <class Join, class... Branches>
struct op_walk<nn::join_t<Join, Branches...>> {
  template <class F>
  static void apply(F& f) {
    f.template operator()<Join>();
    (void)std::initializer_list<int>{0, (op_walk<Branches>::apply(f), 0)...};
  }
};
template <class Body, class Shortcut>
struct op_walk<nn::residual_t<Body, Shortcut>> {
  template <class F>
  static void apply(F& f) {
    op_walk<Body>::apply(f);
    op_walk<Shortcut>::apply(f);
    f.template operator()<ops::add>();
  }
};
template <int Count, class Body>
struct op_walk<nn::repeat_t<Count, Body>> : op_walk<Body> {};
template <fixed_string Name, class Body>
struct op_walk<nn::scope_t<Name, Body>> : op_walk<Body> {};
template <int Ipu, class Body>
struct op_walk<on_t<Ipu, Body>> : op_walk<Body> {};
template <class In, class... Bs>
struct op_walk<graph<In, Bs...>> {
  template <class F>
  static void apply(F& f) {
    f.template operator()<ops::input>();
    op_walk<nn::seq_t<Bs...>>::apply(f);
  }
};

/// Calls `f.template operator()<Op>()` for each op of graph `G`'s nodes (see `op_walk`).
template <class G, class F>
void for_each_op(F&& f) {
  op_walk<G>::apply(f);
}

template <class G> struct lowering;
template <class DType, int N, int H, int W, int C, input_stream Stream, class... Bs>
struct lowering<graph<input_spec<DType, N, H, W, C, Stream>, Bs...>> {
  static constexpr std::size_t size = static_cast<std::size_t>(1 + node_count<nn::seq_t<Bs...>>);
  static constexpr lowered_graph<size> run() {
    builder<size> b;
    b.push_input(dtype_of_v<DType>, nhwc(N, H, W, C), Stream);
    name_scope root;
    emit<nn::seq_t<Bs...>>::apply(b, root);
    if (b.dropped.active()) b.fail({graph_error_kind::dropout_at_output, b.nodes[size - 1].path, {}, {}, 0, 0});
    check_unique_paths(b);
    return {b.nodes, b.error};
  }
};

}  // namespace ipu::detail
