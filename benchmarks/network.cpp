// Whole networks at batch 4: ResNeXt-101 32x4d as the seed runs it (224x224x4 NHWC input,
// stride in the first 1x1 conv of a stage), and the zoo's MobileNetV2 and EfficientNet-B0
// (224x224x3), each with the same weights (`ipu::weights<G>::random(42)`) and input
// everywhere. Images per second (`network/<model>/<impl>`) of:
// - `ipu_f32`, `ipu_f16`: `ipu::engine` on one Mk2 at availableMemoryProportion 0.3 (the
//   example's configuration), fast mode, f32 or f16 storage (f16 for ResNeXt only), made once
//   for the program;
// - `onednn`: the same network as a list of oneDNN primitives in f32, NHWC, built by walking
//   the node table (`onednn_network` below): each conv or dense layer with its batch norm
//   folded into weights and bias, a residual add as a sum post-op and the activation after it
//   (ReLU, ReLU6, SiLU, sigmoid) as an eltwise post-op; pooling, global average pooling (a
//   pooling over the whole image), squeeze-and-excitation's scaling (a binary multiply with
//   the per-channel scales broadcast), softmax and any op not fused as primitives of their
//   own. Activations live in buffers reused as soon as their last reader has run; a sum
//   post-op accumulates into its shortcut's buffer when the shortcut has no later reader.
// Before timing, the oneDNN benchmark checks once that its output agrees with ipu's f32
// output (bench_common.hpp's `max_relative_error` below 1e-3) and fails otherwise.
//
// Threads: `IPU_BENCH_THREADS`, else one per hardware thread, for both. A batch takes seconds
// on two cores:
//
//   bench_network --benchmark_filter='resnext.*onednn' --benchmark_min_time=0.05

#include "bench_common.hpp"

#include <ipu/ipu.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace {

/// The library's ops, as a tag to switch on.
enum class op_tag {
  input, conv, batch_norm, relu, relu6, silu, sigmoid, max_pool, avg_pool, global_avg_pool, adaptive_avg_pool, dense, softmax,
  add, concat, multiply
};

op_tag tag_of(ipu::op o) {
  using namespace ipu::ops;
  using ipu::op_of;
  const std::pair<ipu::op, op_tag> tags[] = {
      {op_of<input>, op_tag::input},       {op_of<conv>, op_tag::conv},       {op_of<batch_norm>, op_tag::batch_norm},
      {op_of<relu>, op_tag::relu},         {op_of<max_pool>, op_tag::max_pool}, {op_of<avg_pool>, op_tag::avg_pool},
      {op_of<global_avg_pool>, op_tag::global_avg_pool}, {op_of<dense>, op_tag::dense}, {op_of<softmax>, op_tag::softmax},
      {op_of<add>, op_tag::add},           {op_of<concat>, op_tag::concat},   {op_of<multiply>, op_tag::multiply},
      {op_of<relu6>, op_tag::relu6},       {op_of<silu>, op_tag::silu},       {op_of<sigmoid>, op_tag::sigmoid},
      {op_of<adaptive_avg_pool>, op_tag::adaptive_avg_pool}};
  for (const auto& [op, tag] : tags)
    if (op == o) return tag;
  throw std::logic_error("bench_network: no oneDNN step for " + std::string(ipu::name_of(o)));
}

constexpr ipu::options seed_options{.available_memory_proportion = {3, 10}};

/// The benchmarked networks: `graph<T>` with elements of type `T`, and the name benchmarks give it.
struct resnext101 {
  template <class T>
  using graph = ipu::models::resnext<T, /*batch*/ 4, /*layers*/ 101, /*cardinality*/ 32, /*width per group*/ 4,
                                     /*input channels*/ 4, /*classes*/ 1000, /*image size*/ 224,
                                     ipu::models::stride_at::first_conv>;
  static constexpr const char* name = "resnext101_32x4d";
};
struct mobilenet_v2 {
  template <class T>
  using graph = ipu::models::mobilenet_v2<T, /*batch*/ 4>;
  static constexpr const char* name = "mobilenet_v2";
};
struct efficientnet_b0 {
  template <class T>
  using graph = ipu::models::efficientnet_b0<T, /*batch*/ 4>;
  static constexpr const char* name = "efficientnet_b0";
};

constexpr std::uint64_t weight_seed = 42;

/// The input batch of `Model`, the same for every implementation: uniform in [-1, 1].
template <class Model>
std::vector<float> input_batch() {
  std::vector<float> x(ipu::input_tensor_t<typename Model::template graph<ipu::f32>>::size());
  std::mt19937 rng(1);
  for (float& v : x) v = std::uniform_real_distribution<float>(-1, 1)(rng);
  return x;
}

void set_counters(benchmark::State& state, std::int64_t batch, unsigned threads) {
  state.counters["images/s"] = benchmark::Counter(static_cast<double>(batch), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["threads"] = threads;
}

template <class Model, class T>
void bench_ipu(benchmark::State& state, unsigned threads) {
  using G = typename Model::template graph<T>;
  // Made at the first repetition and kept, as a program keeps its engine and its threads (and
  // as oneDNN's OpenMP threads persist): the repetitions run interleaved with oneDNN's.
  static ipu::engine<G, ipu::mk2, seed_options> engine{ipu::weights<G>::random(weight_seed), {ipu::execution_mode::fast, threads}};
  ipu::input_tensor_t<G> x;
  const std::vector<float> values = input_batch<Model>();
  std::transform(values.begin(), values.end(), x.begin(), [](float v) { return static_cast<T>(v); });
  ipu::output_tensor_t<G> y;
  for (auto _ : state) {
    engine.infer(x, y);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  set_counters(state, ipu::batch_size_v<G>, threads);
}

#if IPU_BENCH_HAVE_DNNL

/// ipu's f32 output of `Model` for `input_batch<Model>()`, computed once.
template <class Model>
const std::vector<float>& ipu_reference(unsigned threads) {
  static const std::vector<float> out = [&] {
    using G = typename Model::template graph<ipu::f32>;
    ipu::engine<G, ipu::mk2, seed_options> engine{ipu::weights<G>::random(weight_seed),
                                                  {ipu::execution_mode::fast, threads}};
    const std::vector<float> x = input_batch<Model>();
    std::vector<float> y(ipu::output_tensor_t<G>::size());
    engine.infer(std::span<const float>(x), std::span<float>(y));
    return y;
  }();
  return out;
}

using dnnl::memory;
using dt = memory::data_type;
using tag = memory::format_tag;

memory::desc desc_of(const ipu::shape& s) {
  if (s.rank == 4) return ipu_bench::activation_desc(s.dim[0], s.dim[1], s.dim[2], s.dim[3]);
  if (s.rank == 2) return {{s.dim[0], s.dim[1]}, dt::f32, tag::nc};
  throw std::invalid_argument("onednn_network: tensors of rank " + std::to_string(s.rank) + " are not supported");
}

/// An activation as oneDNN's eltwise algorithm with its alpha and beta.
struct eltwise {
  dnnl::algorithm algorithm;
  float alpha = 0.0f, beta = 0.0f;
};

/// The eltwise form of an activation node of kind `k` (ReLU, ReLU6, SiLU, sigmoid); none if
/// `k` is none of them.
std::optional<eltwise> eltwise_of(ipu::op k) {
  using namespace ipu::ops;
  using ipu::op_of;
  using dnnl::algorithm;
  if (k == op_of<relu>) return eltwise{algorithm::eltwise_relu};
  if (k == op_of<relu6>) return eltwise{algorithm::eltwise_clip, 0.0f, 6.0f};  // min(max(x, alpha), beta)
  if (k == op_of<silu>) return eltwise{algorithm::eltwise_swish, 1.0f};        // x * sigmoid(alpha x)
  if (k == op_of<sigmoid>) return eltwise{algorithm::eltwise_logistic};
  return std::nullopt;
}

ipu::kernels::conv_shape conv_shape_of(const ipu::node& n) {
  return {n.in.dim[0], n.in.dim[1], n.in.dim[2], n.in.dim[3], n.layer.filters, n.layer.kernel, n.layer.stride, n.layer.groups,
          n.layer.pad, n.layer.dilation};
}

/// Graph `G` as oneDNN primitives in f32 with `G`'s weights (see the file comment).
template <ipu::Graph G>
class onednn_network {
 public:
  explicit onednn_network(const ipu::weights<G>& w) : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {
    plan();
    assign_buffers();
    for (std::size_t i = 0; i < ops_.size(); ++i) build(ops_[i], w);
  }

  /// Where the input batch goes (NHWC).
  std::span<float> input() noexcept { return buffers_[static_cast<std::size_t>(buffer_of_[0])]; }
  /// Runs the network; returns its output.
  std::span<const float> run() {
    for (step& s : steps_) {
      if (s.copy_count > 0) std::memcpy(s.copy_to, s.copy_from, s.copy_count * sizeof(float));
      s.primitive.execute(stream_, s.args);
    }
    stream_.wait();
    const ipu::node& last = table[table.size() - 1];
    return {buffers_[static_cast<std::size_t>(buffer_of_[table.size() - 1])].data(), static_cast<std::size_t>(last.out.elements())};
  }
  /// How many primitives one batch runs.
  std::size_t primitives() const noexcept { return steps_.size(); }

 private:
  static constexpr const auto& table = ipu::node_table_v<G>;
  static constexpr int node_count = static_cast<int>(table.size());

  /// Nodes computed by one primitive: `first`, then possibly a batch norm folded in, a
  /// residual add with operand `other`, an activation (node `activation`); it produces the
  /// value of node `last`.
  struct fused_op {
    int first = -1, last = -1, norm = -1, add = -1, other = -1, activation = -1;
  };
  struct step {
    dnnl::primitive primitive;
    std::unordered_map<int, memory> args;
    const float* copy_from = nullptr;  // copied to `copy_to` first (a sum post-op's operand)
    float* copy_to = nullptr;
    std::size_t copy_count = 0;
  };

  /// The nodes whose values `op` reads.
  static std::vector<int> inputs_of(const fused_op& op) {
    const std::span<const int> sources = table[static_cast<std::size_t>(op.first)].sources();
    std::vector<int> in(sources.begin(), sources.end());
    if (op.other >= 0 && op.first != op.add) in.push_back(op.other);
    std::sort(in.begin(), in.end());
    in.erase(std::unique(in.begin(), in.end()), in.end());
    return in;
  }

  /// Groups the nodes into fused ops, in an order where every op's inputs come first.
  void plan() {
    std::vector<int> uses(static_cast<std::size_t>(node_count), 0), user(static_cast<std::size_t>(node_count), -1);
    for (int j = 1; j < node_count; ++j) {
      const std::span<const int> sources = table[static_cast<std::size_t>(j)].sources();
      for (std::size_t k = 0; k < sources.size(); ++k) {
        const std::span<const int> before = sources.first(k);
        if (std::ranges::find(before, sources[k]) != before.end()) continue;  // a value read twice: one use
        ++uses[static_cast<std::size_t>(sources[k])], user[static_cast<std::size_t>(sources[k])] = j;
      }
    }
    std::vector<bool> taken(static_cast<std::size_t>(node_count), false);
    // The only reader of `v`, if it is an op not yet fused that `accept`s, reading `v` as its
    // main input (or, for an add, as either operand).
    const auto sole_reader = [&](int v, auto accept) {
      const int u = user[static_cast<std::size_t>(v)];
      if (uses[static_cast<std::size_t>(v)] != 1 || taken[static_cast<std::size_t>(u)]) return -1;
      const ipu::node& n = table[static_cast<std::size_t>(u)];
      if (!accept(n.kind)) return -1;
      if (n.kind == ipu::op_of<ipu::ops::add>) return n.input() != n.inputs[1] ? u : -1;
      return n.input() == v ? u : -1;
    };
    const auto kind_is = [](ipu::op k) { return [k](ipu::op x) { return x == k; }; };
    const auto activation = [](ipu::op x) { return eltwise_of(x).has_value(); };
    for (int j = 1; j < node_count; ++j) {
      if (taken[static_cast<std::size_t>(j)]) continue;
      const ipu::node& n = table[static_cast<std::size_t>(j)];
      fused_op op{.first = j, .last = j};
      const auto absorb = [&](int k) {
        taken[static_cast<std::size_t>(k)] = true;
        op.last = k;
      };
      if (n.kind == ipu::op_of<ipu::ops::conv> || n.kind == ipu::op_of<ipu::ops::dense>) {
        if (const int k = sole_reader(op.last, kind_is(ipu::op_of<ipu::ops::batch_norm>)); k >= 0) op.norm = k, absorb(k);
        if (const int k = sole_reader(op.last, kind_is(ipu::op_of<ipu::ops::add>)); k >= 0) {
          const ipu::node& a = table[static_cast<std::size_t>(k)];
          op.add = k;
          op.other = a.input() == op.last ? a.inputs[1] : a.input();
          absorb(k);
        }
      } else if (n.kind == ipu::op_of<ipu::ops::add>) {
        op.add = j;
        op.other = n.inputs[1];
      }
      // A batch norm of its own fuses a ReLU only (`fuse_norm_relu`); the others take any
      // activation as a post-op.
      if (n.kind == ipu::op_of<ipu::ops::batch_norm>) {
        if (const int k = sole_reader(op.last, kind_is(ipu::op_of<ipu::ops::relu>)); k >= 0) op.activation = k, absorb(k);
      } else if (n.kind == ipu::op_of<ipu::ops::conv> || n.kind == ipu::op_of<ipu::ops::dense> || n.kind == ipu::op_of<ipu::ops::add>) {
        if (const int k = sole_reader(op.last, activation); k >= 0) op.activation = k, absorb(k);
      }
      ops_.push_back(op);
    }
    std::stable_sort(ops_.begin(), ops_.end(), [](const fused_op& a, const fused_op& b) { return a.last < b.last; });
  }

  /// Gives every value a buffer; a buffer is free again after its value's last reader.
  void assign_buffers() {
    const int n_ops = static_cast<int>(ops_.size());
    std::vector<int> last_read(static_cast<std::size_t>(node_count), -1);
    for (int i = 0; i < n_ops; ++i)
      for (int v : inputs_of(ops_[static_cast<std::size_t>(i)])) last_read[static_cast<std::size_t>(v)] = i;
    buffer_of_.assign(static_cast<std::size_t>(node_count), -1);
    std::vector<std::size_t> sizes;
    std::vector<int> free_buffers;
    const auto allocate = [&](std::size_t elements) {
      auto best = free_buffers.end();
      for (auto it = free_buffers.begin(); it != free_buffers.end(); ++it)
        if (sizes[static_cast<std::size_t>(*it)] >= elements &&
            (best == free_buffers.end() || sizes[static_cast<std::size_t>(*it)] < sizes[static_cast<std::size_t>(*best)]))
          best = it;
      if (best == free_buffers.end()) {
        sizes.push_back(elements);
        return static_cast<int>(sizes.size() - 1);
      }
      const int b = *best;
      free_buffers.erase(best);
      return b;
    };
    buffer_of_[0] = allocate(static_cast<std::size_t>(table[0].out.elements()));  // the input: never freed
    for (int i = 0; i < n_ops; ++i) {
      fused_op& op = ops_[static_cast<std::size_t>(i)];
      const std::size_t elements = static_cast<std::size_t>(table[static_cast<std::size_t>(op.last)].out.elements());
      const bool sum = op.add >= 0 && op.first != op.add;
      const int main_input = table[static_cast<std::size_t>(op.first)].input();
      if (sum && op.other != 0 && op.other != main_input && last_read[static_cast<std::size_t>(op.other)] == i) {
        buffer_of_[static_cast<std::size_t>(op.last)] = buffer_of_[static_cast<std::size_t>(op.other)];  // in place
      } else {
        buffer_of_[static_cast<std::size_t>(op.last)] = allocate(elements);
      }
      for (int v : inputs_of(op))
        if (v != 0 && last_read[static_cast<std::size_t>(v)] == i &&
            buffer_of_[static_cast<std::size_t>(v)] != buffer_of_[static_cast<std::size_t>(op.last)])
          free_buffers.push_back(buffer_of_[static_cast<std::size_t>(v)]);
    }
    buffers_.resize(sizes.size());
    for (std::size_t b = 0; b < sizes.size(); ++b) buffers_[b].assign(sizes[b], 0.0f);
  }

  float* buffer(int node) { return buffers_[static_cast<std::size_t>(buffer_of_[static_cast<std::size_t>(node)])].data(); }
  memory user_memory(const memory::desc& d, int node) { return memory(d, engine_, buffer(node)); }
  memory owned(const memory::desc& d, std::span<const float> values) {
    memory m(d, engine_);
    std::memcpy(m.get_data_handle(), values.data(), values.size() * sizeof(float));
    return m;
  }

  /// Post-ops: the sum of the residual add, then the activation (node `activation`, if any).
  static dnnl::primitive_attr post_ops(bool sum, int activation) {
    dnnl::post_ops po;
    if (sum) po.append_sum(1.0f);
    if (activation >= 0)
      if (const std::optional<eltwise> e = eltwise_of(table[static_cast<std::size_t>(activation)].kind))
        po.append_eltwise(1.0f, e->algorithm, e->alpha, e->beta);
    dnnl::primitive_attr attr;
    attr.set_post_ops(po);
    return attr;
  }

  void build(const fused_op& op, const ipu::weights<G>& w) {
    const ipu::node& n = table[static_cast<std::size_t>(op.first)];
    const ipu::node& last = table[static_cast<std::size_t>(op.last)];
    const auto forward = dnnl::prop_kind::forward_inference;
    step s;
    switch (tag_of(n.kind)) {
      case op_tag::conv:
      case op_tag::dense: {
        const bool sum = op.add >= 0;
        const std::int64_t out = n.out.channels();
        // Batch norm folded: weights times the folded scale, bias the folded shift (plus the
        // dense bias times the scale).
        std::vector<float> kernel(w.of_node(op.first)["kernel"].begin(), w.of_node(op.first)["kernel"].end());
        std::vector<float> bias(static_cast<std::size_t>(out), 0.0f);
        const bool own_bias = n.kind == ipu::op_of<ipu::ops::dense> || n.layer.bias;
        if (own_bias) std::ranges::copy(w.of_node(op.first)["bias"], bias.begin());
        if (op.norm >= 0) {
          const ipu::layer_weights& bn = w.of_node(op.norm);
          for (std::size_t c = 0; c < bias.size(); ++c) {
            const auto f = ipu::ops::batch_norm::fold(bn["scale"][c], bn["shift"][c], bn["mean"][c], bn["variance"][c],
                                                         ipu::batch_norm_epsilon);
            const float scale = static_cast<float>(f.scale), shift = static_cast<float>(f.shift);
            for (std::size_t i = c; i < kernel.size(); i += bias.size()) kernel[i] *= scale;
            bias[c] = bias[c] * scale + shift;
          }
        }
        const bool has_bias = own_bias || op.norm >= 0;
        const dnnl::primitive_attr attr = post_ops(sum, op.activation);
        if (n.kind == ipu::op_of<ipu::ops::conv>) {
          const ipu::kernels::conv_shape cs = conv_shape_of(n);
          const auto pd = ipu_bench::conv_primitive(cs, has_bias, attr, engine_);
          s.primitive = dnnl::convolution_forward(pd);
          s.args[DNNL_ARG_WEIGHTS] = ipu_bench::conv_weights(cs, kernel, pd.weights_desc(), engine_);
        } else {
          if (n.in.rank != 2) throw std::invalid_argument("onednn_network: a dense layer needs an NC input");
          const std::int64_t batch = n.in.dim[0], in = n.in.dim[1];
          using ip = dnnl::inner_product_forward;
          const ip::desc d(forward, desc_of(n.in), memory::desc({out, in}, dt::f32, tag::any),
                           memory::desc({out}, dt::f32, tag::a), memory::desc({batch, out}, dt::f32, tag::nc));
          const ip::primitive_desc pd(d, attr, engine_);
          s.primitive = ip(pd);
          memory from(memory::desc({out, in}, dt::f32, memory::dims{1, out}), engine_, kernel.data());
          memory to(pd.weights_desc(), engine_);
          dnnl::reorder(from, to).execute(stream_, from, to);
          stream_.wait();
          s.args[DNNL_ARG_WEIGHTS] = to;
        }
        if (has_bias) s.args[DNNL_ARG_BIAS] = owned(memory::desc({out}, dt::f32, tag::a), bias);
        s.args[DNNL_ARG_SRC] = user_memory(desc_of(n.in), n.input());
        s.args[DNNL_ARG_DST] = user_memory(desc_of(last.out), op.last);
        if (sum && buffer_of_[static_cast<std::size_t>(op.other)] != buffer_of_[static_cast<std::size_t>(op.last)]) {
          s.copy_from = buffer(op.other);
          s.copy_to = buffer(op.last);
          s.copy_count = static_cast<std::size_t>(last.out.elements());
        }
        break;
      }
      case op_tag::batch_norm: {
        const ipu::layer_weights& bn = w.of_node(op.first);
        auto flags = dnnl::normalization_flags::use_global_stats | dnnl::normalization_flags::use_scale |
                     dnnl::normalization_flags::use_shift;
        if (op.activation >= 0) flags = flags | dnnl::normalization_flags::fuse_norm_relu;
        using bnf = dnnl::batch_normalization_forward;
        const bnf::primitive_desc pd(bnf::desc(forward, desc_of(n.in), static_cast<float>(ipu::batch_norm_epsilon), flags), engine_);
        s.primitive = bnf(pd);
        const memory::desc c({n.out.channels()}, dt::f32, tag::a);
        s.args[DNNL_ARG_SCALE] = owned(c, bn["scale"]);
        s.args[DNNL_ARG_SHIFT] = owned(c, bn["shift"]);
        s.args[DNNL_ARG_MEAN] = owned(c, bn["mean"]);
        s.args[DNNL_ARG_VARIANCE] = owned(c, bn["variance"]);
        s.args[DNNL_ARG_SRC] = user_memory(desc_of(n.in), n.input());
        s.args[DNNL_ARG_DST] = user_memory(desc_of(last.out), op.last);
        break;
      }
      case op_tag::relu:
      case op_tag::relu6:
      case op_tag::silu:
      case op_tag::sigmoid: {
        using elt = dnnl::eltwise_forward;
        const eltwise e = *eltwise_of(n.kind);  // the op tag is an activation's
        s.primitive = elt(elt::primitive_desc(elt::desc(forward, e.algorithm, desc_of(n.in), e.alpha, e.beta), engine_));
        s.args[DNNL_ARG_SRC] = user_memory(desc_of(n.in), n.input());
        s.args[DNNL_ARG_DST] = user_memory(desc_of(n.out), op.last);
        break;
      }
      case op_tag::add:
      case op_tag::multiply: {
        // The second operand broadcasts to the first: squeeze-and-excitation's [N, 1, 1, C].
        if (n.input_count != 2) throw std::invalid_argument("onednn_network: a join of more than two inputs");
        const memory::desc d = desc_of(n.out), other = desc_of(table[static_cast<std::size_t>(n.inputs[1])].out);
        const auto algo = n.kind == ipu::op_of<ipu::ops::add> ? dnnl::algorithm::binary_add : dnnl::algorithm::binary_mul;
        s.primitive = dnnl::binary(dnnl::binary::primitive_desc(dnnl::binary::desc(algo, d, other, d),
                                                                post_ops(false, op.activation), engine_));
        s.args[DNNL_ARG_SRC_0] = user_memory(d, n.input());
        s.args[DNNL_ARG_SRC_1] = user_memory(other, n.inputs[1]);
        s.args[DNNL_ARG_DST] = user_memory(d, op.last);
        break;
      }
      case op_tag::max_pool:
      case op_tag::avg_pool:
      case op_tag::global_avg_pool:
      case op_tag::adaptive_avg_pool: {
        const bool global = n.kind == ipu::op_of<ipu::ops::global_avg_pool> ||
                            (n.kind == ipu::op_of<ipu::ops::adaptive_avg_pool> && ipu::ops::adaptive_avg_pool::global(n.layer));
        if (n.kind == ipu::op_of<ipu::ops::adaptive_avg_pool> && !global)
          throw std::invalid_argument("onednn_network: adaptive average pooling to more than one cell");
        const std::int64_t h = n.in.dim[1], wd = n.in.dim[2];
        const std::int64_t kh = global ? h : n.layer.kernel.h, kw = global ? wd : n.layer.kernel.w;
        const std::int64_t sh = global ? 1 : n.layer.stride.h, sw = global ? 1 : n.layer.stride.w;
        const memory::desc src = desc_of(n.in);
        const memory::desc dst = global ? ipu_bench::activation_desc(n.in.dim[0], 1, 1, n.in.dim[3]) : desc_of(n.out);
        const ipu::kernels::window_geometry w = global ? ipu::kernels::window_geometry{} : ipu::ops::geometry_of(n);
        const std::int64_t top = w.pad_top, bottom = w.pad_bottom, left = w.pad_left, right = w.pad_right;
        const auto algo = n.kind == ipu::op_of<ipu::ops::max_pool> ? dnnl::algorithm::pooling_max : dnnl::algorithm::pooling_avg_exclude_padding;
        using pool = dnnl::pooling_forward;
        const pool::desc d(forward, algo, src, dst, {sh, sw}, {kh, kw}, {top, left},
                           {bottom, right});
        s.primitive = pool(pool::primitive_desc(d, engine_));
        s.args[DNNL_ARG_SRC] = user_memory(src, n.input());
        s.args[DNNL_ARG_DST] = user_memory(dst, op.last);
        break;
      }
      case op_tag::softmax: {
        using sm = dnnl::softmax_forward;
        const memory::desc d = desc_of(n.in);
        s.primitive = sm(sm::primitive_desc(sm::desc(forward, d, 1), engine_));  // oneDNN's axis 1: channels
        s.args[DNNL_ARG_SRC] = user_memory(d, n.input());
        s.args[DNNL_ARG_DST] = user_memory(d, op.last);
        break;
      }
      case op_tag::concat:  // the benchmarked networks have no such joins
        throw std::logic_error("bench_network: no oneDNN step for " + std::string(ipu::name_of(n.kind)));
      case op_tag::input: return;
    }
    steps_.push_back(std::move(s));
  }

  dnnl::engine engine_;
  dnnl::stream stream_;
  std::vector<fused_op> ops_;
  std::vector<int> buffer_of_;  // by node: the buffer holding its value, or -1
  std::vector<ipu::aligned_vector<float>> buffers_;  // on cache lines, as the engine's tensors
  std::vector<step> steps_;
};

template <class Model>
void bench_onednn(benchmark::State& state, unsigned threads) {
  using G = typename Model::template graph<ipu::f32>;
  const std::vector<float>& reference = ipu_reference<Model>(threads);
  ipu_bench::set_onednn_threads(threads);
  onednn_network<G> net(ipu::weights<G>::random(weight_seed));
  const std::vector<float> x = input_batch<Model>();
  std::ranges::copy(x, net.input().begin());
  const double error = ipu_bench::max_relative_error(net.run(), reference);
  if (!(error < ipu_bench::tolerance)) {
    state.SkipWithError(("oneDNN's output disagrees with ipu's f32 output: max relative error " + std::to_string(error)).c_str());
    return;
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(net.run().data());
    benchmark::ClobberMemory();
  }
  set_counters(state, ipu::batch_size_v<G>, threads);
  state.counters["primitives"] = static_cast<double>(net.primitives());
  state.SetLabel(ipu_bench::error_label(error) + " vs ipu_f32");
}
#endif

/// Registers `Model`'s benchmarks: ipu in f32 (and with f16 storage if `F16`), oneDNN.
template <class Model, bool F16>
void register_network(unsigned threads) {
  const std::string prefix = std::string("network/") + Model::name + "/";
  std::vector<benchmark::internal::Benchmark*> added{
      benchmark::RegisterBenchmark((prefix + "ipu_f32").c_str(), bench_ipu<Model, ipu::f32>, threads)};
  if constexpr (F16) added.push_back(benchmark::RegisterBenchmark((prefix + "ipu_f16").c_str(), bench_ipu<Model, ipu::f16>, threads));
#if IPU_BENCH_HAVE_DNNL
  added.push_back(benchmark::RegisterBenchmark((prefix + "onednn").c_str(), bench_onednn<Model>, threads));
#endif
  for (benchmark::internal::Benchmark* b : added) b->Unit(benchmark::kMillisecond)->UseRealTime();
}

}  // namespace

int main(int argc, char** argv) {
  return ipu_bench::run_main(argc, argv, [](unsigned threads) {
    register_network<resnext101, /*F16*/ true>(threads);
    register_network<mobilenet_v2, false>(threads);
    register_network<efficientnet_b0, false>(threads);
  });
}
