#pragma once
/// \file
/// The vocabulary every op header speaks, and the defaults an op inherits from `ops::op_base`.
///
/// An op is an empty struct in `ipu::ops` (`ops::conv`, `ops::relu`, ...) whose static members
/// are every compile-time fact about it, in one header `ipu/ops/<op>.hpp`:
///
/// | member | what it states | who reads it |
/// |---|---|---|
/// | `name` | the name paths, summaries and profiles use (`relu`, `conv`) | everything |
/// | `infer(params, in)` | the shape rule: output shape, parameters, MACs, or the first error | lowering (`graph/detail/lower.hpp`) |
/// | `tensors(n)` | the named weight tensors users set: shapes, initial values, random initialisers | `ipu::weights` |
/// | `device_tensors`, `to_device<Op>(tensors)` | the named tensors the device holds, made from the users' | plan, engine, executors |
/// | `plan(in, np)` | the step's work: mappings, step model (temporaries, exchange), weights' mapping | the plan (`plan/plan.hpp`) |
/// | `describe(os, params)` | the summary's column, after the name (`3x3/2 g32`) | `ipu::summary` |
/// | `kernel` | the struct that computes it on the host, declared here and defined in `ipu/ops/kernels/<op>.hpp` | the executors (`ops/kernels/kernel.hpp`) |
/// | `epilogue_head`, `epilogue_order` | fast mode's fusion: a conv-like step, and the steps its epilogue absorbs | the plan (`node_plan::fused_into`) |
/// | `kernel::forward_training`, `kernel::backward` | training: the forward pass where it differs from inference (batch norm's batch statistics), and the gradients of the inputs and weights | `ipu::trainer` (`runtime/training_pass.hpp`) |
///
/// `ops::info_of<Op>` gathers these into an `op_info` of function pointers, and a node's `op`
/// points to it: every stage reaches an op's facts through its node, with no list of ops and
/// no switch over them, so an op defined outside `ipu` is as much an op as `conv`. The header
/// also defines the layer users write, in `ipu::nn` (`nn::relu`, an empty type naming the op
/// as `op_type`).

#include <ipu/core/fixed_string.hpp>
#include <ipu/core/scalar.hpp>
#include <ipu/core/shape.hpp>
#include <ipu/graph/node.hpp>
#include <ipu/plan/model.hpp>
#include <ipu/plan/node_plan.hpp>
#include <ipu/target/chip.hpp>
#include <ipu/target/options.hpp>

#include <algorithm>
#include <any>
#include <array>
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

namespace ipu {

namespace detail {
/// What went wrong first while lowering a graph.
enum class graph_error_kind : std::uint8_t {
  none,
  groups_do_not_divide_channels,  ///< a = input shape, x = filters, y = groups
  residual_shapes_differ,         ///< a = body output, b = shortcut output
  dense_on_4d_input,              ///< a = input shape
  needs_4d_input,                 ///< a = input shape (conv or pooling on an NC tensor)
  pool_larger_than_input,         ///< a = input shape, x, y = window height, width
  path_too_long,                  ///< path holds the truncated path, x = capacity
  duplicate_path,                 ///< path is held by two nodes, x and y (their indices)
  join_shapes_differ,             ///< a = the first branch's output, b = the first that differs, x = its branch (1-based)
  concat_shapes_differ,           ///< as join_shapes_differ, in an extent other than the last
  too_many_ops_in_scope,          ///< path names the node past the limit, x = the limit (`name_scope::capacity`)
  padding_too_large,              ///< a = input shape, b = the padding `[top, bottom, left, right]`, x, y = window height, width
  reshape_changes_values,         ///< a = input shape, x = its values per sample, y = the target's
  dropout_at_output,              ///< path names the graph's last node, which an `nn::dropout` follows
};

/// The first error of a graph, with the numbers its diagnostic prints.
struct graph_error {
  graph_error_kind kind = graph_error_kind::none;
  path_string path{};
  shape a{}, b{};
  std::int64_t x = 0, y = 0;
};
}  // namespace detail

namespace ops {

/// What an op's shape rule gives for one node: its output shape, trainable parameters and
/// multiply-accumulates, or the error it found (`error.kind != none`; the path is filled in by
/// the lowering, which knows it).
struct inferred {
  shape out{};                ///< the output shape
  std::int64_t params = 0;    ///< trainable parameters (torchvision's count)
  std::int64_t macs = 0;      ///< multiply-accumulates for one pass of the whole batch
  detail::graph_error error{};  ///< the first error, if any
};

/// How `ipu::weights<G>::random` draws a tensor's values.
struct initializer {
  /// The distribution.
  enum class kind : std::uint8_t {
    constant,          ///< every value `a`
    uniform,           ///< uniform in `[a, b)`
    variance_scaling,  ///< TensorFlow's `variance_scaling_initializer()`: a normal truncated to 2
                       ///< sigma with variance 1 / fan_in, fan_in the product of all extents but the last
    glorot_uniform,    ///< Glorot (Xavier) uniform: limit sqrt(6 / (fan_in + fan_out)) of a 2-D tensor
  };
  kind how = kind::constant;  ///< the distribution
  double a = 0;               ///< the constant, or the lower bound
  double b = 0;               ///< the upper bound of `uniform`
};

/// One named weight tensor of a layer as users see and set it (`ipu::weights`).
struct tensor_spec {
  std::string_view name{};              ///< e.g. `"kernel"`, `"bias"`, `"variance"`
  int rank = 1;                         ///< extents used in `dim`
  std::array<std::int64_t, 4> dim{};    ///< extents, outermost first
  float initial = 0;                    ///< every value of a fresh `ipu::weights<G>`
  initializer random{};                 ///< how `ipu::weights<G>::random` draws the values
  /// Whether training changes it by its gradient (a batch norm's running statistics are
  /// updated by the forward pass instead).
  bool trainable = true;

  /// Number of values: the product of the extents.
  constexpr std::int64_t elements() const noexcept {
    std::int64_t e = 1;
    for (int k = 0; k < rank; ++k) e *= dim[static_cast<std::size_t>(k)];
    return e;
  }
};

/// The tensors of an op, at most four.
struct tensor_specs {
  std::array<tensor_spec, 4> items{};  ///< the tensors, in the order `ipu::weights` lists them
  int count = 0;                       ///< entries of `items` in use
  /// The tensors in use.
  constexpr std::span<const tensor_spec> view() const& noexcept {
    return {items.data(), static_cast<std::size_t>(count)};
  }
  /// Not of a temporary, whose items would be gone before the view is read (as in
  /// `for (auto& t : op.tensors(n).view())`): name the specs first.
  void view() const&& = delete;
};

/// What an op's `plan` reads besides its node: the target, the options and where the node's
/// inputs live on its IPU.
struct plan_inputs {
  const node& n;          ///< the node planned
  const chip_spec& chip;  ///< the chip of its IPU
  const options& opts;    ///< the plan's options
  /// Where each input lives on the node's IPU, in the order of `n.inputs` (for the graph input,
  /// entry 0 is its own output's mapping).
  std::array<const tensor_mapping*, max_inputs> mappings{};

  /// The mapping of input `k` (0: the main input) on the node's IPU.
  constexpr const tensor_mapping& input(int k = 0) const noexcept { return *mappings[static_cast<std::size_t>(k)]; }
};

/// A layer's tensors by name, as `to_device` reads them: `tensors("scale")` gives the values
/// of the tensor called `scale`, none if the layer has no such tensor (a conv without a bias).
/// Refers to the callable it is made from.
class tensor_source {
 public:
  /// Reads through `get`, a callable `std::span<const float>(std::string_view)` that must
  /// outlive the source.
  template <class F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, tensor_source>)
  explicit tensor_source(const F& get) noexcept
      : self_(&get), get_([](const void* self, std::string_view name) -> std::span<const float> {
          return (*static_cast<const F*>(self))(name);
        }) {}
  /// The values of tensor `name`.
  std::span<const float> operator()(std::string_view name) const { return get_(self_, name); }

 private:
  const void* self_;
  std::span<const float> (*get_)(const void*, std::string_view);
};

/// Appends a device weight tensor of `elements` values, mapped with the linear rule from tile 0.
constexpr void add_weights(node_plan& np, std::int64_t elements, const chip_spec& chip) noexcept {
  const std::int64_t bytes = np.step.element_bytes;
  np.weights[static_cast<std::size_t>(np.weight_tensors)] = map_elements(elements, bytes, chip);
  np.weight_bytes[static_cast<std::size_t>(np.weight_tensors++)] = bytes;
}

/// Fills the spatial extents of a step from an input and an output shape (rank 4 or 2).
constexpr void spatial_extents(step_model& s, const shape& in, const shape& out) noexcept {
  s.images = in.dim[0];
  s.in_height = in.rank == 4 ? in.dim[1] : 1;
  s.in_width = in.rank == 4 ? in.dim[2] : 1;
  s.out_height = out.rank == 4 ? out.dim[1] : 1;
  s.out_width = out.rank == 4 ? out.dim[2] : 1;
  s.positions = s.images * s.out_height * s.out_width;
}

/// Fills the window of a step from a conv's or pooling's hyper-parameters: its taps, the
/// input rows one output row's (dilated) window spans, the stride between those windows.
constexpr void set_window(step_model& s, const layer_params& p) noexcept {
  s.kernel_taps = p.kernel.area();
  s.window_rows = p.extent().h;
  s.row_stride = p.stride.h;
}

/// The error `kind` with input shape `in` and numbers `x`, `y`.
constexpr inferred failure(detail::graph_error_kind kind, const shape& in, std::int64_t x = 0,
                           std::int64_t y = 0) noexcept {
  inferred r;
  r.out = in;
  r.error = {kind, {}, in, {}, x, y};
  return r;
}

/// The error of a window (conv or pooling) whose explicit padding `p.pad` does not fit: an
/// amount not below the window (its dilated extent), or a padded input smaller than it.
constexpr inferred padding_failure(const layer_params& p, const shape& in) noexcept {
  inferred r = failure(detail::graph_error_kind::padding_too_large, in, p.extent().h, p.extent().w);
  r.error.b = {4, {p.pad.top, p.pad.bottom, p.pad.left, p.pad.right}};
  return r;
}

/// Writes a window's summary column: ` 3x3/2` (rows x columns / stride, ` 1x7/1x2` for a
/// stride that differs between the axes), ` dil 2` (` dil 2x1`) when dilated, then
/// ` pad 1,1,1,1` (top, bottom, left, right) when the padding is explicit.
inline void describe_window(std::ostream& os, const layer_params& p) {
  const auto pair = [&](hw x) -> std::ostream& { return x.h == x.w ? os << x.h : os << x.h << 'x' << x.w; };
  os << ' ' << p.kernel.h << 'x' << p.kernel.w << '/';
  pair(p.stride);
  if (p.dilation != hw{1, 1}) {
    os << " dil ";
    pair(p.dilation);
  }
  if (!p.pad.same) os << " pad " << p.pad.top << ',' << p.pad.bottom << ',' << p.pad.left << ',' << p.pad.right;
}

/// Defaults of an op: no weights, no transients, shape-preserving, nothing after its name in
/// the summary. An op derives from it and states what differs.
struct op_base {
  /// Shape-preserving, no parameters, no MACs.
  static constexpr inferred infer(const layer_params&, const shape& in) noexcept { return {in, 0, 0, {}}; }
  /// A join of `inputs` (an op that is not a join is never given several): element-wise, so
  /// every input has the first one's shape.
  static constexpr inferred infer_join(std::span<const shape> inputs) noexcept {
    inferred r{inputs[0], 0, 0, {}};
    for (std::size_t k = 1; k < inputs.size(); ++k)
      if (!(inputs[k] == inputs[0])) {
        r.error = {detail::graph_error_kind::join_shapes_differ, {}, inputs[0], inputs[k], static_cast<std::int64_t>(k + 1)};
        break;
      }
    return r;
  }
  /// No weight tensors.
  static constexpr tensor_specs tensors(const node&) noexcept { return {}; }
  /// What is wrong with finite value `value` of the users' tensor `tensor`, as the end of an
  /// error message; empty when nothing is (any finite value is valid by default).
  static constexpr std::string_view value_rule(std::string_view, float) noexcept { return {}; }
  /// No device tensors.
  static constexpr std::array<std::string_view, 0> device_tensors{};
  /// What errors put before a device tensor's name: empty where the device holds the users'
  /// tensor as given, `"folded "` where `to_device` computes it.
  static constexpr std::string_view device_prefix = "";
  /// The device tensors of `Op` from the users' tensors: each device tensor is the user tensor
  /// of its name. `tensor(name)` gives a user tensor's values.
  template <class Op>
  static std::vector<std::vector<float>> to_device(const tensor_source& tensor) {
    std::vector<std::vector<float>> out;
    for (std::string_view name : Op::device_tensors) {
      const auto values = tensor(name);
      out.emplace_back(values.begin(), values.end());
    }
    return out;
  }
  /// The output mapped like its input, no transients (an element-wise op on its input's tiles).
  static constexpr void plan(const plan_inputs& in, node_plan& np) noexcept { np.output = np.work = in.input(); }
  /// Nothing after the op's name.
  static void describe(std::ostream&, const layer_params&) {}
  /// Fast mode with f32 partials: whether a convolution-like step whose epilogue can absorb
  /// the steps after it (`kernels::epilogue`).
  static constexpr bool epilogue_head = false;
  /// Fast mode with f32 partials: this op's place in such an epilogue (1 batch norm, 2 add,
  /// 3 ReLU: the order the epilogue applies them), or 0 if it cannot be absorbed.
  static constexpr int epilogue_order = 0;
};

/// An op's facts as `ops::info_of<Op>` gathers them from its struct: what every stage reads
/// through a node's `op` (see the file comment for each member's meaning).
struct op_info {
  std::string_view name;                                        ///< `Op::name`
  inferred (*infer)(const layer_params&, const shape&);         ///< `Op::infer`
  inferred (*infer_join)(std::span<const shape>);               ///< `Op::infer_join`
  tensor_specs (*tensors)(const node&);                         ///< `Op::tensors`
  std::string_view (*value_rule)(std::string_view, float);      ///< `Op::value_rule`
  std::span<const std::string_view> device_tensors;             ///< `Op::device_tensors`
  std::string_view device_prefix;                               ///< `Op::device_prefix`
  std::vector<std::vector<float>> (*to_device)(const tensor_source&);  ///< `Op::to_device<Op>`
  void (*plan)(const plan_inputs&, node_plan&);                 ///< `Op::plan`
  void (*describe)(std::ostream&, const layer_params&);         ///< `Op::describe`
  bool epilogue_head;                                           ///< `Op::epilogue_head`
  int epilogue_order;                                           ///< `Op::epilogue_order`

  /// Whether nodes of the op have weight tensors (and a `layer_weights` in `ipu::weights`).
  constexpr bool has_weights() const noexcept { return !device_tensors.empty(); }
};

/// `Op::to_device<Op>`, as a function.
template <class Op>
std::vector<std::vector<float>> to_device_of(const tensor_source& tensors) {
  return Op::template to_device<Op>(tensors);
}

/// The facts of op struct `Op`, which a node's `op` points to.
template <class Op>
inline constexpr op_info info_of{Op::name,
                                 &Op::infer,
                                 &Op::infer_join,
                                 &Op::tensors,
                                 &Op::value_rule,
                                 Op::device_tensors,
                                 Op::device_prefix,
                                 &to_device_of<Op>,
                                 &Op::plan,
                                 &Op::describe,
                                 Op::epilogue_head,
                                 Op::epilogue_order};

/// A node's device tensors in f32, in the order of its op's `device_tensors`.
using device_values = std::span<const std::vector<float>>;

/// The defaults of an op's kernel (see `ipu/ops/kernels/kernel.hpp`): no prepared tensors,
/// nothing to exchange.
struct kernel_base {
  /// No prepared tensors.
  template <class T, class Acc>
  static std::any prepare(const node&, const node_plan&, device_values, std::any) {
    return {};
  }
  /// Nothing to gather: the tile computes from its own activations.
  template <class Ctx>
  static void exchange(const Ctx&) {}
};

/// Elements a training kernel's element-wise work item covers (`parallel_chunks`): 64 KiB
/// of f32, so that handing out an item costs little beside its work (at 4,096 elements, a
/// ReLU's backward over 6.4 million took 2.1 ms, at 16,384 1.6 ms, at 65,536 1.5 ms).
inline constexpr std::int64_t training_chunk = 16384;

/// Runs `work(begin, end)` over `[0, count)` in chunks of `chunk` elements spread over the
/// threads of context `c`: the chunks depend on `count` only, never on the threads.
template <class Ctx, class F>
void parallel_chunks(const Ctx& c, std::int64_t count, F&& work, std::int64_t chunk = training_chunk) {
  c.parallel((count + chunk - 1) / chunk, [&](std::int64_t k) { work(k * chunk, std::min(count, (k + 1) * chunk)); });
}

/// Called only when a name is not found: the compile error names it.
inline void the_op_has_no_device_tensor_of_this_name() {}

/// Index of device tensor `name` of `Op`; a name the op does not have is a compile error
/// ("call to non-constexpr function ... the_op_has_no_device_tensor_of_this_name").
template <class Op>
consteval std::size_t device_index(std::string_view name) {
  for (std::size_t k = 0; k < Op::device_tensors.size(); ++k)
    if (Op::device_tensors[k] == name) return k;
  the_op_has_no_device_tensor_of_this_name();
  return Op::device_tensors.size();
}

}  // namespace ops

namespace nn {

/// `nn::hw{rows, columns}`: a kernel, stride or dilation that differs between the axes
/// (`nn::conv<128, nn::hw{1, 7}>`); see `ipu::hw`.
using ipu::hw;

/// Explicit padding as a value whose type holds it, the argument of a conv's or pooling
/// layer's `padded` (`nn::conv<64, 7, 2>.padded(nn::pad<3>)`).
template <padding P>
struct pad_t {
  static constexpr padding value = P;  ///< the padding
};
/// `nn::pad<Top, Bottom = Top, Left = Top, Right = Left>`: `Top` rows above the image,
/// `Bottom` below, `Left` columns left and `Right` right; `nn::pad<P>` pads every side by `P`,
/// as PyTorch's `padding=P`, and `nn::pad<0>` is TensorFlow's VALID.
template <int Top, int Bottom = Top, int Left = Top, int Right = Left>
  requires(Top >= 0 && Bottom >= 0 && Left >= 0 && Right >= 0)
inline constexpr pad_t<explicit_padding(Top, Bottom, Left, Right)> pad{};

}  // namespace nn

/// The `op` of op struct `Op` (`ipu::op_of<ipu::ops::conv>`): what its nodes' `kind` holds.
template <class Op>
inline constexpr op op_of{&ops::info_of<Op>};

/// The name of `o` as paths and summaries write it (`"conv"`, `"batch_norm"`, ...).
constexpr std::string_view name_of(op o) noexcept { return o.info->name; }

}  // namespace ipu
