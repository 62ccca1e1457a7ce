#pragma once
/// \file
/// Checkpoints: a network's weights, and a trainer's whole state, in safetensors files
/// (`ipu/io/safetensors.hpp`), the format PyTorch, Keras and JAX read.
///
/// ```
/// ipu::save_weights("resnet.safetensors", trainer.weights());
/// auto w = ipu::load_weights<net_t>("resnet.safetensors");   // for an engine, or a warm start
/// ipu::save_checkpoint("ckpt-1000.safetensors", trainer);   // weights, optimiser, step, seed
/// ipu::restore_checkpoint("ckpt-1000.safetensors", trainer);  // continues with the same bits
/// ```
///
/// **Keys.** Weight tensor `name` of the layer at `path` is the tensor `"<path>.<name>"`, e.g.
/// `stage1.block1.conv2.kernel`, in the layouts of `ipu/runtime/weights.hpp` (HWIO kernels).
/// A trainer's optimiser state is `"optimizer/<path>.<name>/<slot>"`, the slots named as Keras
/// names them: SGD's `momentum`, Adam's, AdamW's and LAMB's `m` and `v`.
///
/// **Metadata.** `ipu.network` describes the network: a line per node of the graph, its path,
/// its op and its weight tensors' shapes (e.g. `stage1.block1.conv2 conv kernel[3,3,64,64]`);
/// `ipu.fingerprint` is its FNV-1a hash. Placement (`on<k>`, the target, the tile mapping) and
/// the batch are not part of it: a checkpoint loads into the same network planned for other
/// IPUs, another target or another batch. Loading into another network is a
/// `checkpoint_error` naming the first line that differs. A trainer's checkpoint adds its
/// step counts, loss scale and seed (`ipu::trainer_state`) and its optimiser's name.
///
/// Files are written atomically (`safetensors::writer::write`): a crash while writing leaves
/// the previous file whole.
///
/// **Other frameworks' files.** `import_weights` reads weights under other names and layouts,
/// e.g. torchvision's ResNets (`torchvision_resnet_name`) with PyTorch's OIHW kernels.

#include <ipu/core/hash.hpp>
#include <ipu/graph/queries.hpp>
#include <ipu/io/safetensors.hpp>
#include <ipu/runtime/weights.hpp>
#include <ipu/train/options.hpp>
#include <ipu/train/trainer.hpp>

#include <charconv>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace ipu {

namespace detail {
/// The lines of `ipu.network` for a graph of `nodes` (see the file comment).
inline std::string network_description(std::span<const node> nodes) {
  std::string text;
  for (const node& n : nodes) {
    text += std::string(n.path.view()) + " " + std::string(name_of(n.kind));
    if (!n.kind.info->has_weights()) {
      text += "\n";
      continue;
    }
    const ops::tensor_specs specs = n.kind.info->tensors(n);  // alive while `view()` is read
    for (const ops::tensor_spec& t : specs.view()) {
      text += " " + std::string(t.name) + "[";
      for (int d = 0; d < t.rank; ++d) text += (d ? "," : "") + std::to_string(t.dim[static_cast<std::size_t>(d)]);
      text += "]";
    }
    text += "\n";
  }
  return text;
}

/// `fnv1a64(text)` (`core/hash.hpp`) as 16 hexadecimal digits.
inline std::string fnv1a_hex(std::string_view text) {
  std::uint64_t h = fnv1a64(text);
  constexpr std::string_view digits = "0123456789abcdef";
  std::string s(16, '0');
  for (int k = 15; k >= 0; --k, h >>= 4) s[static_cast<std::size_t>(k)] = digits[h & 0xf];
  return s;
}

/// Throws `checkpoint_error` naming the first line where `file`'s network description differs
/// from `ours`, if it has one and they differ.
inline void check_network(const safetensors::file& file, std::string_view ours) {
  const auto theirs = file.metadata("ipu.network");
  if (!theirs || *theirs == ours) return;
  std::size_t line = 0, a = 0, b = 0;  // the node index
  for (;;) {
    const std::size_t ea = theirs->find('\n', a), eb = ours.find('\n', b);
    const std::string_view la = ea == std::string_view::npos ? theirs->substr(a) : theirs->substr(a, ea - a);
    const std::string_view lb = eb == std::string_view::npos ? ours.substr(b) : ours.substr(b, eb - b);
    if (la != lb) {
      const auto quoted = [](std::string_view l) { return l.empty() ? std::string("nothing") : "'" + std::string(l) + "'"; };
      throw checkpoint_error(file.source() + ": written for another network: its node " + std::to_string(line) +
                             " is " + quoted(la) + ", this network's is " + quoted(lb));
    }
    if (ea == std::string_view::npos || eb == std::string_view::npos) return;  // unreachable: the texts differ
    a = ea + 1, b = eb + 1, ++line;
  }
}

/// The file's key of weight tensor `tensor` of `layer`.
inline std::string weight_key(const layer_weights& layer, std::string_view tensor) {
  return std::string(layer.path()) + "." + std::string(tensor);
}

/// Adds `layers`' tensors to `out` as `type`, and the network's description.
inline void add_weights(safetensors::writer& out, std::span<const layer_weights> layers, std::string_view network,
                        safetensors::dtype type) {
  for (const layer_weights& layer : layers)
    for (const weight_tensor& t : layer.tensors()) out.add(weight_key(layer, t.name), t.shape, t.values, type);
  out.set_metadata("ipu.network", std::string(network));
  out.set_metadata("ipu.fingerprint", fnv1a_hex(network));
}

/// The values of `file`'s tensor `key`, checked against `expected`'s shape.
inline std::vector<float> read_tensor(const safetensors::file& file, const std::string& key, const weight_tensor& expected) {
  const safetensors::tensor& t = file.at(key);
  if (!std::equal(t.shape.begin(), t.shape.end(), expected.shape.begin(), expected.shape.end()))
    throw checkpoint_error(file.source() + ": tensor '" + key + "' has shape " + t.shape_string() +
                           "; the network's has " + expected.shape_string());
  return t.to_floats();
}

/// Reads every tensor of `layers` from `file` (after checking its network description).
inline void read_weights(const safetensors::file& file, std::span<layer_weights> layers, std::string_view network) {
  check_network(file, network);
  for (layer_weights& layer : layers)
    for (const weight_tensor& t : layer.tensors()) layer.assign(t.name, read_tensor(file, weight_key(layer, t.name), t));
}

/// The names of an optimiser's state slots.
inline std::string_view slot_name(optimizer_kind kind, int slot) noexcept {
  return kind == optimizer_kind::sgd ? "momentum" : slot == 0 ? "m" : "v";
}
/// The file's key of state slot `slot` of weight tensor `tensor` of `layer`, for optimiser `kind`.
inline std::string optimizer_key(const layer_weights& layer, std::string_view tensor, optimizer_kind kind, int slot) {
  return "optimizer/" + weight_key(layer, tensor) + "/" + std::string(slot_name(kind, slot));
}
/// The name of an optimiser, as `ipu.optimizer` holds it.
inline std::string_view optimizer_name(optimizer_kind kind) noexcept {
  switch (kind) {
    case optimizer_kind::sgd: return "sgd";
    case optimizer_kind::adam: return "adam";
    case optimizer_kind::adamw: return "adamw";
    case optimizer_kind::lamb: return "lamb";
  }
  return "";
}

/// `file`'s metadata `key` as a number of type `T`; throws `checkpoint_error` if it is
/// missing or not one.
template <class T>
T metadata_number(const safetensors::file& file, std::string_view key) {
  const auto text = file.metadata(key);
  if (!text) throw checkpoint_error(file.source() + ": no metadata '" + std::string(key) + "': not a trainer's checkpoint");
  T value{};
  const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (ec != std::errc{} || end != text->data() + text->size())
    throw checkpoint_error(file.source() + ": metadata '" + std::string(key) + "' is '" + std::string(*text) +
                           "', not a number");
  return value;
}
/// `value` as the shortest text that reads back as it.
template <class T>
std::string number_text(T value) {
  char buffer[64];
  const auto end = std::to_chars(buffer, buffer + sizeof buffer, value).ptr;
  return {buffer, end};
}
}  // namespace detail

/// The description of `G` that checkpoints hold as `ipu.network` (see the file comment).
template <Graph G>
std::string network_description() {
  return detail::network_description(node_table_v<G>);
}

namespace detail {
/// `w` read from `file`, after `weights<G>::validate`, whose error becomes a
/// `checkpoint_error` naming the file.
template <Graph G>
weights<G> validated(const safetensors::file& file, weights<G> w) {
  try {
    w.validate();
  } catch (const weight_error& e) {
    throw checkpoint_error(file.source() + ": " + e.what());
  }
  return w;
}

/// The weights of `G` in `file` (see `load_weights`).
template <Graph G>
weights<G> weights_in(const safetensors::file& file) {
  weights<G> w;
  read_weights(file, {w.begin(), w.end()}, ipu::network_description<G>());
  return validated(file, std::move(w));
}
}  // namespace detail

/// Writes `w` to `path` in safetensors (see the file comment), each tensor as `type` (F32,
/// F16 or BF16; the narrower types round to nearest, ties to even). Throws `checkpoint_error`.
template <Graph G>
void save_weights(const std::filesystem::path& path, const weights<G>& w, safetensors::dtype type = safetensors::dtype::f32) {
  safetensors::writer out;
  detail::add_weights(out, {w.begin(), w.end()}, network_description<G>(), type);
  out.write(path);
}

/// The weights of `G` in the safetensors file at `path`: an `ipu` checkpoint (weights or a
/// trainer's), or any file with a tensor `"<path>.<name>"` of the right shape for each weight
/// tensor of `G` in F32, F16, BF16 or F64 (other tensors are ignored). Throws
/// `checkpoint_error` naming the file and its first difference from `G` (see the file comment),
/// or the first value that is not finite or that its op refuses (`weights<G>::validate`).
template <Graph G>
weights<G> load_weights(const std::filesystem::path& path) {
  return detail::weights_in<G>(safetensors::file::read(path));
}

/// How a file lays out kernels.
enum class kernel_layout {
  ipu,      ///< ipu's and Keras': conv kernels HWIO `[kh, kw, in / groups, out]`, dense kernels `[in, out]`
  pytorch,  ///< PyTorch's: conv kernels OIHW `[out, in / groups, kh, kw]`, dense kernels `[out, in]`
};

/// torchvision's name for tensor `tensor` of the layer at `path` in the zoo's ResNets
/// (`ipu::models::resnet18` to `resnet152`, whose layers torchvision's `state_dict` names
/// `conv1`, `bn1`, `layer<S>.<B>.conv<K>`, `layer<S>.<B>.bn<K>`, `layer<S>.<B>.downsample.0`
/// and `.1`, `fc`), e.g. `stage2.block1.shortcut.conv1` `kernel` is `layer2.0.downsample.0.weight`.
/// Throws `checkpoint_error` for a path or tensor it has no name for.
inline std::string torchvision_resnet_name(std::string_view path, std::string_view tensor) {
  const auto fail = [&] {
    return checkpoint_error("ipu::torchvision_resnet_name: no torchvision name for " + std::string(path) + "." +
                            std::string(tensor));
  };
  std::string_view t = tensor == "kernel" || tensor == "scale" ? "weight"
                       : tensor == "shift" || tensor == "bias" ? "bias"
                       : tensor == "mean"                      ? "running_mean"
                       : tensor == "variance"                  ? "running_var"
                                                               : "";
  if (t.empty()) throw fail();
  const auto layer = [&](std::string_view name) -> std::string {  // conv<K> -> conv<K>, batch_norm<K> -> bn<K>
    if (name.starts_with("conv")) return std::string(name);
    if (name.starts_with("batch_norm")) return "bn" + std::string(name.substr(10));
    throw fail();
  };
  if (path == "dense1") return "fc." + std::string(t);
  if (path.starts_with("stem.")) return layer(path.substr(5)) + "." + std::string(t);
  // stage<S>.block<B>.<layer> or stage<S>.block<B>.shortcut.<layer>
  if (!path.starts_with("stage")) throw fail();
  const std::size_t dot = path.find('.'), dot2 = path.find('.', dot + 1);
  if (dot == std::string_view::npos || dot2 == std::string_view::npos || !path.substr(dot + 1).starts_with("block")) throw fail();
  const std::string_view stage = path.substr(5, dot - 5), block = path.substr(dot + 6, dot2 - dot - 6);
  int b = 0;
  const auto [end, ec] = std::from_chars(block.data(), block.data() + block.size(), b);
  if (ec != std::errc{} || end != block.data() + block.size() || b < 1) throw fail();
  const std::string prefix = "layer" + std::string(stage) + "." + std::to_string(b - 1) + ".";
  const std::string_view rest = path.substr(dot2 + 1);
  if (rest == "shortcut.conv1") return prefix + "downsample.0." + std::string(t);
  if (rest == "shortcut.batch_norm1") return prefix + "downsample.1." + std::string(t);
  return prefix + layer(rest) + "." + std::string(t);
}

/// The weights of `G` from a safetensors file another framework wrote, e.g. a PyTorch
/// `state_dict` saved with `safetensors.torch.save_file`: weight tensor `tensor` of the layer
/// at `path` is the file's `names(path, tensor)` (a `std::string`; `torchvision_resnet_name`
/// for torchvision's ResNets), its kernels laid out as `layout` says and transposed to ipu's,
/// in F32, F16, BF16 or F64. The file's other tensors (e.g. batch norms'
/// `num_batches_tracked`) are ignored. Throws `checkpoint_error` naming the file, the tensor and
/// the ipu tensor it was read for if one is missing or of another shape, and for values that
/// `weights<G>::validate` refuses.
///
/// ```
/// auto w = ipu::import_weights<ipu::models::resnet50<ipu::f32, 1, 3, ipu::models::padding_convention::pytorch>>(
///     "resnet50.safetensors", ipu::torchvision_resnet_name);
/// ```
template <Graph G, class Names>
weights<G> import_weights(const std::filesystem::path& path, Names&& names, kernel_layout layout = kernel_layout::pytorch) {
  const safetensors::file file = safetensors::file::read(path);
  weights<G> w;
  for (layer_weights& layer : w)
    for (const weight_tensor& t : layer.tensors()) {
      const std::string key = names(layer.path(), t.name);
      const std::string ours = std::string(layer.path()) + "." + std::string(t.name);
      const safetensors::tensor* found = file.find(key);
      if (!found) throw checkpoint_error(file.source() + ": no tensor '" + key + "' (for " + ours + ")");
      // The file's shape: a PyTorch kernel's extents are ipu's reordered.
      const bool transpose = layout == kernel_layout::pytorch && t.name == "kernel";
      std::vector<std::int64_t> shape = t.shape;
      if (transpose && shape.size() == 4) shape = {t.shape[3], t.shape[2], t.shape[0], t.shape[1]};  // HWIO -> OIHW
      if (transpose && shape.size() == 2) shape = {t.shape[1], t.shape[0]};                          // [in, out] -> [out, in]
      if (found->shape != shape)
        throw checkpoint_error(file.source() + ": tensor '" + key + "' has shape " + found->shape_string() + "; " + ours +
                               " needs " + detail::extents_string(shape));
      const std::vector<float> v = found->to_floats();
      std::span<float> out = layer[t.name];
      if (!transpose) {
        std::copy(v.begin(), v.end(), out.begin());
      } else if (shape.size() == 4) {
        const std::int64_t o = shape[0], i = shape[1], kh = shape[2], kw = shape[3];
        for (std::int64_t a = 0; a < o; ++a)
          for (std::int64_t b = 0; b < i; ++b)
            for (std::int64_t y = 0; y < kh; ++y)
              for (std::int64_t x = 0; x < kw; ++x)
                out[static_cast<std::size_t>(((y * kw + x) * i + b) * o + a)] = v[static_cast<std::size_t>(((a * i + b) * kh + y) * kw + x)];
      } else {
        const std::int64_t o = shape[0], i = shape[1];
        for (std::int64_t a = 0; a < o; ++a)
          for (std::int64_t b = 0; b < i; ++b) out[static_cast<std::size_t>(b * o + a)] = v[static_cast<std::size_t>(a * i + b)];
      }
    }
  return detail::validated(file, std::move(w));
}

/// A trainer a checkpoint holds: `ipu::trainer`, or `ipu::replicated_trainer` (whose replicas
/// hold the same weights and state: a checkpoint of one continues them all, or one trainer).
template <class T>
concept CheckpointedTrainer = requires(T& t, const weights<typename T::graph_type>& w, const trainer_state& s) {
  { T::opts } -> std::convertible_to<train_options>;
  { std::as_const(t).weights() } -> std::convertible_to<const weights<typename T::graph_type>&>;
  { std::as_const(t).state() } -> std::same_as<trainer_state>;
  t.restore(w, s);
};

/// Writes `t`'s weights and state (`trainer::state`) to `path` (see the file comment). Throws
/// `checkpoint_error`.
template <CheckpointedTrainer T>
void save_checkpoint(const std::filesystem::path& path, const T& t) {
  using G = typename T::graph_type;
  constexpr train_options Opts = T::opts;
  const trainer_state s = t.state();
  safetensors::writer out;
  detail::add_weights(out, {t.weights().begin(), t.weights().end()}, network_description<G>(), safetensors::dtype::f32);
  const int slots = Opts.optimizer.state_tensors();
  std::size_t k = 0;
  for (const layer_weights& layer : t.weights())
    for (const weight_tensor& w : layer.tensors())
      for (int slot = 0; slot < slots; ++slot, ++k)
        if (w.trainable)
          out.add(detail::optimizer_key(layer, w.name, Opts.optimizer.kind, slot), w.shape, s.optimizer[k]);
  out.set_metadata("ipu.optimizer", std::string(detail::optimizer_name(Opts.optimizer.kind)));
  out.set_metadata("ipu.optimizer_slots", std::to_string(slots));
  out.set_metadata("ipu.steps", std::to_string(s.steps));
  out.set_metadata("ipu.skipped_steps", std::to_string(s.skipped_steps));
  out.set_metadata("ipu.clean_steps", std::to_string(s.clean_steps));
  out.set_metadata("ipu.loss_scale", detail::number_text(s.loss_scale));
  out.set_metadata("ipu.seed", std::to_string(s.seed));
  out.write(path);
}

/// Continues `t` from the trainer's checkpoint at `path` (`trainer::restore`): the next steps
/// give the bits the trainer that wrote it would have given. Throws `checkpoint_error` if the
/// file is not a checkpoint of this network, or was written with another optimiser (load its
/// weights alone with `load_weights` to start anew from them); `t` is then unchanged.
template <CheckpointedTrainer T>
void restore_checkpoint(const std::filesystem::path& path, T& t) {
  using G = typename T::graph_type;
  constexpr train_options Opts = T::opts;
  const safetensors::file file = safetensors::file::read(path);
  weights<G> w;
  detail::read_weights(file, {w.begin(), w.end()}, network_description<G>());
  const std::string_view ours = detail::optimizer_name(Opts.optimizer.kind);
  const int slots = Opts.optimizer.state_tensors();
  const auto theirs = file.metadata("ipu.optimizer");
  if (!theirs) throw checkpoint_error(file.source() + ": no metadata 'ipu.optimizer': not a trainer's checkpoint");
  if (*theirs != ours || detail::metadata_number<int>(file, "ipu.optimizer_slots") != slots)
    throw checkpoint_error(file.source() + ": written by a trainer with " + std::string(*theirs) + " (" +
                           std::string(*file.metadata("ipu.optimizer_slots")) + " state tensors per weight), this one has " +
                           std::string(ours) + " (" + std::to_string(slots) +
                           "); ipu::load_weights reads the weights alone");
  trainer_state s;
  s.steps = detail::metadata_number<std::int64_t>(file, "ipu.steps");
  s.skipped_steps = detail::metadata_number<std::int64_t>(file, "ipu.skipped_steps");
  s.clean_steps = detail::metadata_number<std::int64_t>(file, "ipu.clean_steps");
  s.loss_scale = detail::metadata_number<float>(file, "ipu.loss_scale");
  s.seed = detail::metadata_number<std::uint64_t>(file, "ipu.seed");
  for (const layer_weights& layer : w)
    for (const weight_tensor& x : layer.tensors())
      for (int slot = 0; slot < slots; ++slot)
        s.optimizer.push_back(x.trainable ? detail::read_tensor(file, detail::optimizer_key(layer, x.name, Opts.optimizer.kind, slot), x)
                                          : std::vector<float>{});
  try {
    t.restore(w, s);
  } catch (const std::invalid_argument& e) {
    throw checkpoint_error(file.source() + ": " + e.what());
  }
}

}  // namespace ipu
