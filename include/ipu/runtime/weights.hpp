#pragma once
/// \file
/// `ipu::weights<G>`: the parameters of graph `G`, one entry per parameterised layer in graph
/// order, each with named tensors in the layouts the graph language documents:
///
/// | layer        | tensors (in this order)                 | shapes                              |
/// |--------------|-----------------------------------------|-------------------------------------|
/// | `conv`       | `kernel`, and `bias` with `with_bias()` | HWIO `[kh, kw, in / groups, out]`, `[out]` |
/// | `batch_norm` | `scale`, `shift`, `mean`, `variance`    | `[channels]` each; epsilon 1e-5     |
/// | `dense`      | `kernel`, `bias`                        | `[in, out]`, `[out]`                |
///
/// Each op states its tensors (`ops::<op>::tensors`); the table is what they state. Values are
/// held in f32 on the host; an engine rounds them to the graph's element type (folding batch
/// norm into a scale and a shift first). Every way in checks counts and shapes and names the
/// layer and tensor at fault; `validate()` flags non-finite values and those an op refuses.

#include <ipu/core/extents.hpp>
#include <ipu/graph/node.hpp>
#include <ipu/graph/queries.hpp>
#include <ipu/ops/op.hpp>
#include <ipu/runtime/execution.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ipu {

/// A weight set that does not match its graph: a wrong count, a wrong shape, an unknown
/// layer or tensor name, or a non-finite value.
struct weight_error : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

/// One named tensor of a layer.
struct weight_tensor {
  std::string_view name;             ///< `"kernel"`, `"bias"`, `"scale"`, `"shift"`, `"mean"` or `"variance"`
  std::vector<std::int64_t> shape;   ///< extents, outermost first (HWIO for a conv kernel)
  std::vector<float> values;         ///< the values, row-major in `shape`
  ops::initializer random{};         ///< how `weights<G>::random` draws the values
  bool trainable = true;             ///< changed by its gradient in training (`ops::tensor_spec::trainable`)

  /// Number of values the shape holds: the product of its extents.
  std::int64_t elements() const noexcept {
    std::int64_t n = 1;
    for (std::int64_t d : shape) n *= d;
    return n;
  }
  /// `"[3, 3, 4, 128]"`.
  std::string shape_string() const { return detail::extents_string(shape); }
};

template <Graph G>
class weights;

/// The tensors of one parameterised layer. Their names, shapes and sizes are fixed by the
/// layer's op; only their values change (`operator[]`, `assign`).
class layer_weights {
 public:
  /// The tensors of node `n` (node `node_index` of its table), as its op states them
  /// (`ops::<op>::tensors`), with their initial values: zero, except a batch norm's scale and
  /// variance, which are 1. Throws `weight_error` if the op has no weights.
  layer_weights(const node& n, int node_index) : node_(node_index), kind_(n.kind), path_(n.path.view()) {
    const ops::tensor_specs specs = n.kind.info->tensors(n);
    if (specs.count == 0) throw weight_error("ipu::weights: " + std::string(path_) + " has no parameters");
    for (const ops::tensor_spec& t : specs.view()) {
      tensors_.push_back({t.name, {t.dim.begin(), t.dim.begin() + t.rank}, {}, t.random, t.trainable});
      tensors_.back().values.assign(static_cast<std::size_t>(t.elements()), t.initial);
    }
  }

  /// The layer's path in the graph, e.g. `"stage1.block1.conv2"`.
  std::string_view path() const noexcept { return path_; }
  /// The layer's operation (`ipu::op_of<ops::conv>`, ...).
  op kind() const noexcept { return kind_; }
  /// Index of the layer's node in the graph's node table.
  int node_index() const noexcept { return node_; }
  /// The layer's tensors, in the order of the file comment's table.
  std::span<const weight_tensor> tensors() const noexcept { return tensors_; }

  /// Whether the layer has a tensor called `name` (a conv has a `"bias"` only `with_bias()`).
  bool contains(std::string_view name) const noexcept {
    return std::any_of(tensors_.begin(), tensors_.end(), [&](const weight_tensor& t) { return t.name == name; });
  }
  /// Position of the tensor called `name` in `tensors()`; throws `weight_error` naming the
  /// layer's tensors if there is none.
  std::size_t index_of(std::string_view name) const {
    for (std::size_t k = 0; k < tensors_.size(); ++k)
      if (tensors_[k].name == name) return k;
    std::string known;
    for (const auto& t : tensors_) known += (known.empty() ? "" : ", ") + std::string(t.name);
    throw weight_error("ipu::weights: " + std::string(path_) + " (" + std::string(name_of(kind_)) + ") has no tensor '" +
                       std::string(name) + "'; its tensors are " + known);
  }
  /// The tensor called `name`; throws `weight_error` naming the layer's tensors otherwise.
  const weight_tensor& tensor(std::string_view name) const { return tensors_[index_of(name)]; }
  /// The values of the tensor called `name`, writable in place (their number is fixed);
  /// throws `weight_error` as `tensor`.
  std::span<float> operator[](std::string_view name) { return tensors_[index_of(name)].values; }
  /// The values of the tensor called `name`; throws `weight_error` as `tensor`.
  std::span<const float> operator[](std::string_view name) const { return tensor(name).values; }

  /// Replaces the values of tensor `name`; throws `weight_error` unless `values` has exactly
  /// as many elements as its shape.
  void assign(std::string_view name, std::span<const float> values) {
    weight_tensor& t = tensors_[index_of(name)];
    if (static_cast<std::int64_t>(values.size()) != t.elements())
      throw weight_error("ipu::weights: " + std::string(path_) + "." + std::string(name) + " has shape " +
                         t.shape_string() + " (" + std::to_string(t.elements()) + " values), " +
                         std::to_string(values.size()) + " given");
    std::copy(values.begin(), values.end(), t.values.begin());
  }
  /// As `assign`, also checking the shape the caller states.
  void assign(std::string_view name, std::span<const float> values, std::span<const std::int64_t> shape) {
    const weight_tensor& t = tensor(name);
    if (!std::equal(shape.begin(), shape.end(), t.shape.begin(), t.shape.end())) {
      weight_tensor given{name, {shape.begin(), shape.end()}, {}};
      throw weight_error("ipu::weights: " + std::string(path_) + "." + std::string(name) + " has shape " +
                         t.shape_string() + ", " + given.shape_string() + " given");
    }
    assign(name, values);
  }

 private:
  template <Graph G>
  friend class weights;

  /// Draws every tensor's values as its initializer says, from a generator seeded by `seed`
  /// and the layer's node index (`weights<G>::random`).
  void draw(std::uint64_t seed);

  int node_;
  op kind_;
  std::string_view path_;
  std::vector<weight_tensor> tensors_;
};

namespace detail {
/// MT19937-64, the 64-bit Mersenne Twister (Matsumoto and Nishimura, 2000) with the parameters
/// of `std::mt19937_64` ([rand.predef]), giving the same sequence for the same seed. Written
/// out rather than taken from `<random>`, which would add about a tenth of a second to every
/// translation unit that includes `ipu/ipu.hpp`.
class mt19937_64 {
 public:
  /// Seeded as `std::mt19937_64(seed)` is.
  explicit mt19937_64(std::uint64_t seed) noexcept {
    state_[0] = seed;
    for (std::size_t i = 1; i < n; ++i)
      state_[i] = 6364136223846793005ull * (state_[i - 1] ^ (state_[i - 1] >> 62)) + i;
  }
  /// The next 64 random bits.
  std::uint64_t operator()() noexcept {
    if (next_ == n) twist();
    std::uint64_t y = state_[next_++];
    y ^= (y >> 29) & 0x5555555555555555ull;
    y ^= (y << 17) & 0x71D67FFFEDA60000ull;
    y ^= (y << 37) & 0xFFF7EEE000000000ull;
    return y ^ (y >> 43);
  }

 private:
  static constexpr std::size_t n = 312, m = 156;
  void twist() noexcept {
    constexpr std::uint64_t lower = (std::uint64_t{1} << 31) - 1, upper = ~lower;
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint64_t x = (state_[i] & upper) | (state_[(i + 1) % n] & lower);
      state_[i] = state_[(i + m) % n] ^ (x >> 1) ^ ((x & 1) ? 0xB5026F5AA96619E9ull : 0);
    }
    next_ = 0;
  }
  std::array<std::uint64_t, n> state_{};
  std::size_t next_ = n;
};

/// Uniform doubles in [0, 1) and standard normals from a 64-bit Mersenne Twister: the same
/// values on every platform and standard library (`std::normal_distribution` is not).
class portable_random {
 public:
  explicit portable_random(std::uint64_t seed) : engine_(seed) {}
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  double normal() {  // Box-Muller, one value per pair
    const double u = 1.0 - uniform(), v = uniform();
    return std::sqrt(-2.0 * std::log(u)) * std::cos(6.283185307179586 * v);
  }
  /// A normal truncated to two standard deviations, as TensorFlow's `truncated_normal`.
  double truncated_normal() {
    for (;;)
      if (const double z = normal(); std::abs(z) <= 2.0) return z;
  }

 private:
  mt19937_64 engine_;
};

/// Draws `t`'s values as its initializer says (`ops::initializer`), in order.
inline void fill_random(weight_tensor& t, portable_random& rng) {
  using kind = ops::initializer::kind;
  const ops::initializer& init = t.random;
  double sigma = 0, limit = 0;
  if (init.how == kind::variance_scaling) {
    double fan_in = 1;
    for (std::size_t k = 0; k + 1 < t.shape.size(); ++k) fan_in *= static_cast<double>(t.shape[k]);
    // 0.8796...: the standard deviation of a unit normal truncated to 2 sigma.
    sigma = std::sqrt(1.0 / fan_in) / 0.87962566103423978;
  } else if (init.how == kind::glorot_uniform) {
    limit = std::sqrt(6.0 / static_cast<double>(t.shape[0] + t.shape[1]));
  }
  for (float& v : t.values) {
    switch (init.how) {
      case kind::constant: v = static_cast<float>(init.a); break;
      case kind::uniform: v = static_cast<float>(rng.uniform(init.a, init.b)); break;
      case kind::variance_scaling: v = static_cast<float>(sigma * rng.truncated_normal()); break;
      case kind::glorot_uniform: v = static_cast<float>(rng.uniform(-limit, limit)); break;
    }
  }
}

// What `weights<G>` does that does not depend on `G`, compiled once rather than per graph.

/// The layer of node `j`; throws `weight_error` if node `j` has no parameters.
inline const layer_weights& layer_of_node(std::span<const layer_weights> layers, int j) {
  for (const layer_weights& l : layers)
    if (l.node_index() == j) return l;
  throw weight_error("ipu::weights: node " + std::to_string(j) + " has no parameters");
}

/// Index of the layer whose path is `path`; throws `weight_error` if there is none.
inline std::size_t index_of_layer(std::span<const layer_weights> layers, std::string_view path) {
  for (std::size_t k = 0; k < layers.size(); ++k)
    if (layers[k].path() == path) return k;
  throw weight_error("ipu::weights: no parameterised layer '" + std::string(path) + "' in the graph");
}

/// Assigns one array per tensor, in layer order and each layer's tensor order; throws
/// `weight_error` on a wrong number of arrays or a wrong size.
inline void assign_arrays(std::span<layer_weights> layers, std::span<const std::vector<float>> arrays) {
  std::size_t expected = 0;
  for (const layer_weights& layer : layers) expected += layer.tensors().size();
  if (arrays.size() != expected)
    throw weight_error("ipu::weights: " + std::to_string(arrays.size()) + " arrays given, the graph has " +
                       std::to_string(expected) + " weight tensors in " + std::to_string(layers.size()) + " layers");
  std::size_t k = 0;
  for (layer_weights& layer : layers)
    for (const weight_tensor& t : layer.tensors()) layer.assign(t.name, arrays[k++]);
}

/// Throws `weight_error` naming the first non-finite value, or the first value its op's rule
/// refuses (`weights<G>::validate`).
inline void validate_layers(std::span<const layer_weights> layers) {
  for (const layer_weights& layer : layers)
    for (const weight_tensor& t : layer.tensors())
      for (std::size_t i = 0; i < t.values.size(); ++i) {
        const float v = t.values[i];
        const std::string_view rule = std::isfinite(v) ? layer.kind().info->value_rule(t.name, v) : ", not finite";
        if (!rule.empty())
          throw weight_error("ipu::weights: " + std::string(layer.path()) + "." + std::string(t.name) + "[" +
                             std::to_string(i) + "] is " + std::to_string(v) + std::string(rule));
      }
}
}  // namespace detail

inline void layer_weights::draw(std::uint64_t seed) {
  detail::portable_random rng(seed * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(node_));
  for (weight_tensor& t : tensors_) detail::fill_random(t, rng);
}

namespace runtime {

/// The tensors of `layer` as the device holds them (`ops::<op>::to_device`: batch norm
/// folded), in the order of its op's `device_tensors`, made from `values(k)`: the values to
/// use for the layer's tensor `k` (`layer.tensors()[k]`), a `std::span<const float>`.
template <class Values>
std::vector<std::vector<float>> device_tensors(const layer_weights& layer, const Values& values) {
  const auto lookup = [&](std::string_view name) {
    return layer.contains(name) ? std::span<const float>(values(layer.index_of(name))) : std::span<const float>{};
  };
  return layer.kind().info->to_device(ops::tensor_source{lookup});
}

/// The tensors of `layer` as the device holds them, made from the layer's own values.
inline std::vector<std::vector<float>> device_tensors(const layer_weights& layer) {
  return device_tensors(layer, [&](std::size_t k) { return std::span<const float>(layer.tensors()[k].values); });
}

/// The tensors of `layers` (of a graph of `nodes` nodes) as the device holds them
/// (`device_tensors`), indexed by node; empty for a node without weights.
inline parameter_set device_parameters(std::span<const layer_weights> layers, std::size_t nodes) {
  parameter_set set(nodes);
  for (const layer_weights& layer : layers) set[static_cast<std::size_t>(layer.node_index())] = device_tensors(layer);
  return set;
}

}  // namespace runtime

/// The parameters of graph `G`: one `layer_weights` per conv, batch norm and dense layer, in
/// node-table order, each with f32 tensors in the layouts of the file comment's table.
/// \tparam G the graph whose layers the weights fit
template <Graph G>
class weights {
 public:
  using graph_type = std::remove_cvref_t<G>;                     ///< `G` without cv-ref qualifiers
  static constexpr const auto& table = node_table_v<graph_type>;  ///< the graph's node table

  /// Parameterised layers of `G`.
  static constexpr std::size_t layer_count = [] {
    std::size_t n = 0;
    for (const node& x : node_table_v<graph_type>)
      n += x.kind.info->has_weights() ? 1 : 0;
    return n;
  }();

  /// Zero kernels and biases; batch norms are the identity (scale 1, shift 0, mean 0,
  /// variance 1).
  weights() {
    layers_.reserve(layer_count);
    for (std::size_t j = 0; j < table.size(); ++j)
      if (const node& n = table[j]; n.kind.info->has_weights())
        layers_.emplace_back(n, static_cast<int>(j));
  }

  /// Deterministic random weights, the same for a seed on every platform, drawn as each op's
  /// tensors state (`ops::<op>::tensors`):
  ///   - conv kernels: TensorFlow's `variance_scaling_initializer()` (the seed's): a normal
  ///     truncated to 2 sigma with variance 1 / fan_in, fan_in = kh * kw * in / groups;
  ///   - dense kernels: Glorot uniform (the seed's `xavier_initializer`);
  ///   - dense and conv biases: uniform in [-0.1, 0.1], as a trained layer's, so that the
  ///     bias is exercised;
  ///   - batch norm: the statistics of a trained layer, scale and variance uniform in
  ///     [0.75, 1.25], shift and mean uniform in [-0.1, 0.1], so that folding is exercised.
  static weights random(std::uint64_t seed) {
    weights w;
    for (layer_weights& layer : w.layers_) layer.draw(seed);
    return w;
  }

  /// Weights from flat arrays, one per tensor in graph order and, within a layer, in the order
  /// of the table above (e.g. a conv's kernel, then its batch norm's scale, shift, mean and
  /// variance). Throws `weight_error` on a wrong number of arrays or a wrong size.
  static weights from_arrays(std::span<const std::vector<float>> arrays) {
    weights w;
    detail::assign_arrays(w.layers_, arrays);
    return w;
  }

  /// Parameterised layers of `G`: `layer_count`.
  static constexpr std::size_t size() noexcept { return layer_count; }
  /// Parameterised layer `i`, counted in graph order; unchecked, `i < size()`.
  layer_weights& operator[](std::size_t i) noexcept { return layers_[i]; }
  /// Parameterised layer `i`, counted in graph order; unchecked, `i < size()`.
  const layer_weights& operator[](std::size_t i) const noexcept { return layers_[i]; }
  /// The layer whose path is `path` (e.g. `"stage1.block1.conv2"`); throws `weight_error`.
  layer_weights& operator[](std::string_view path) { return layers_[index_of(path)]; }
  /// The layer whose path is `path` (e.g. `"stage1.block1.conv2"`); throws `weight_error`.
  const layer_weights& operator[](std::string_view path) const { return layers_[index_of(path)]; }
  /// The layer of node `j` of the node table; throws `weight_error` if it has no parameters.
  const layer_weights& of_node(int j) const { return detail::layer_of_node(layers_, j); }

  /// Iterator to the first `layer_weights`, in graph order.
  auto begin() noexcept { return layers_.begin(); }
  /// Iterator past the last `layer_weights`.
  auto end() noexcept { return layers_.end(); }
  /// Iterator to the first `layer_weights`, in graph order.
  auto begin() const noexcept { return layers_.begin(); }
  /// Iterator past the last `layer_weights`.
  auto end() const noexcept { return layers_.end(); }

  /// Throws `weight_error` naming the first non-finite value (layer, tensor, index), or the
  /// first value its op's rule refuses (`ops::<op>::value_rule`: a batch-norm variance that
  /// makes `variance + epsilon` not positive).
  void validate() const { detail::validate_layers(layers_); }

 private:
  std::size_t index_of(std::string_view path) const { return detail::index_of_layer(layers_, path); }

  std::vector<layer_weights> layers_;
};

}  // namespace ipu
