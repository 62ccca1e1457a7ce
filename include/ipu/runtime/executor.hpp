#pragma once
/// \file
/// The BSP executor behind `ipu::engine`: one class per element type, driven by a `program`.
///
/// Each node is one step on its IPU: an exchange phase that gathers what the step's vertices
/// read into the exchange buffers of the tiles that work, a sync, a compute phase in which each
/// tile computes the outputs mapped to it, and a sync (a conv with serial slices repeats
/// exchange and compute per slice). An output read on another IPU is then gathered into a send
/// buffer and copied over the IPU-Link into the reading IPU's copy.
///
/// **Faithful mode.** Every tile owns a memory image of `bytes_per_tile`. Code and weights are
/// placed first (always live); activations, temporaries and exchange buffers are allocated
/// first-fit above them when their step begins and released when their last reader has run.
/// Every buffer has the size the plan gives it, so a tile's live bytes per category at each
/// step are measured (`measured_usage`) and can be compared with `plan::usage`. Exchange is a
/// copy between tile images; a vertex is handed only pointers into its own tile, checked.
///
/// **Fast mode.** The same steps over whole host tensors (NHWC), the step's work cut into
/// host-sized items that the threads take in turn; exchange is only accounted for.
/// Convolutions and dense layers run `kernels::packed_conv` (weights packed once, here), with
/// the batch norm, residual add and ReLU that follow a convolution fused into its epilogue when
/// nothing else reads the intermediate tensors: those steps then do nothing of their own. Each
/// output gets the same arithmetic in both modes, each fused step rounded as its own step
/// rounds, so the outputs are bit-identical to each other and independent of the threads.

#include <ipu/core/arith.hpp>
#include <ipu/core/dtype.hpp>
#include <ipu/graph/node.hpp>
#include <ipu/kernels/conv.hpp>
#include <ipu/kernels/packed_conv.hpp>
#include <ipu/kernels/pointwise.hpp>
#include <ipu/kernels/pool.hpp>
#include <ipu/kernels/views.hpp>
#include <ipu/ops/registry.hpp>
#include <ipu/plan/memory.hpp>
#include <ipu/plan/model.hpp>
#include <ipu/runtime/program.hpp>
#include <ipu/runtime/team.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace ipu {

/// How an engine executes its program.
enum class execution_mode : std::uint8_t {
  fast,      ///< host-sized work items over whole tensors; exchange only accounted
  faithful,  ///< every tile's memory image, real exchange between images, measured memory
};

/// `"fast"` or `"faithful"`.
constexpr std::string_view name_of(execution_mode m) noexcept { return m == execution_mode::fast ? "fast" : "faithful"; }

/// The executor found the plan's promise broken (a buffer too small, a tile out of memory, a
/// vertex reaching outside its tile). Never expected; reported rather than undefined.
struct execution_error : std::logic_error {
  using std::logic_error::logic_error;
};

namespace runtime {

/// First-fit allocation in one tile's memory image. Offsets and sizes are in bytes.
class tile_heap {
 public:
  static constexpr std::int64_t alignment = 4;  ///< every allocation starts at a multiple of this many bytes

  /// An empty image of `capacity` bytes.
  explicit tile_heap(std::int64_t capacity = 0) : capacity_(capacity) {}

  /// Offset of `bytes` new bytes, the lowest aligned one where they fit, or -1 when no gap
  /// holds them.
  std::int64_t allocate(std::int64_t bytes) {
    std::int64_t cursor = 0;
    auto it = used_.begin();
    for (; it != used_.end(); ++it) {
      if (align(cursor) + bytes <= it->first) break;
      cursor = it->first + it->second;
    }
    const std::int64_t at = align(cursor);
    if (at + bytes > capacity_) return -1;
    used_.insert(it, {at, bytes});
    return at;
  }
  /// Frees the allocation that starts at `offset`; throws `execution_error` if none does.
  void release(std::int64_t offset) {
    const auto it = std::lower_bound(used_.begin(), used_.end(), std::pair<std::int64_t, std::int64_t>{offset, 0});
    if (it == used_.end() || it->first != offset) throw execution_error("ipu: release of an unallocated offset");
    used_.erase(it);
  }
  /// Keeps the first `count` allocations (the always-live ones) and releases the rest.
  void truncate(std::size_t count) { used_.resize(std::min(count, used_.size())); }
  /// Number of live allocations.
  std::size_t allocations() const noexcept { return used_.size(); }
  /// One past the highest allocated byte.
  std::int64_t extent() const noexcept { return used_.empty() ? 0 : used_.back().first + used_.back().second; }

 private:
  static constexpr std::int64_t align(std::int64_t x) noexcept { return (x + alignment - 1) / alignment * alignment; }
  std::int64_t capacity_;
  std::vector<std::pair<std::int64_t, std::int64_t>> used_;  // (offset, bytes), by offset
};

/// The weights an executor is built from: `params[j]` holds node `j`'s tensors in f32, in the
/// order of `ipu::weights` with batch norm already folded into scale and shift.
using parameter_set = std::vector<std::vector<std::vector<float>>>;

/// Runs a `program` on the host, one batch at a time, in fast or faithful mode (see the file
/// comment); `ipu::engine` owns one. One call at a time: `run` is not reentrant.
/// \tparam T   storage element type, `f32` or `f16`
/// \tparam Acc partials type, `f32` or `f16`. With `f32` the fast mode runs convolutions with
///             `kernels::packed_conv`; otherwise, and always in faithful mode, the scalar
///             kernels accumulate in `Acc`
template <ElementType T, class Acc>
class executor {
 public:
  /// Takes over `prog` and lays out `params` (one entry per node, empty for nodes without
  /// parameters) for `mode`, on `threads` host threads (0: one per hardware thread). In
  /// faithful mode, allocates `bytes_per_tile` for every tile of every IPU and places code and
  /// weights; throws `execution_error` if a tile has no room for them.
  executor(program prog, const parameter_set& params, execution_mode mode, unsigned threads)
      : prog_(std::move(prog)), mode_(mode), team_(std::make_unique<team>(threads)), tiles_(prog_.chip.tiles) {
    prepare_parameters(params);
    if (mode_ == execution_mode::faithful) {
      prepare_devices();
      params_.clear();  // the tiles hold the weights now
    } else {
      prepare_host_buffers();
    }
  }

  /// The mode the executor runs in.
  execution_mode mode() const noexcept { return mode_; }
  /// The host threads of its team, the calling thread included.
  unsigned threads() const noexcept { return team_->size(); }
  /// The program it runs.
  const program& prog() const noexcept { return prog_; }

  /// Runs one batch: `input` holds the graph's input, `output` receives its output (both in
  /// logical NHWC or NC order). `step_seconds[j]` receives step `j`'s host time.
  void run(const T* input, T* output, std::vector<double>& step_seconds) {
    step_seconds.assign(static_cast<std::size_t>(prog_.size()), 0.0);
    input_ = input;
    for (int j = 0; j < prog_.size(); ++j) {
      const auto start = std::chrono::steady_clock::now();
      if (mode_ == execution_mode::faithful) {
        faithful_step(j);
      } else {
        fast_step(j);
      }
      step_seconds[static_cast<std::size_t>(j)] =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    if (mode_ == execution_mode::faithful) {
      read_output(output);
      for (device& d : devices_)
        for (std::size_t t = 0; t < d.heaps.size(); ++t) {
          d.heaps[t].truncate(d.always_count[t]);
          d.live[t] = d.always_live[t];
        }
      for (auto& per_ipu : placed_) std::fill(per_ipu.begin(), per_ipu.end(), placement{});
    } else {
      const std::vector<T>& y = host_[static_cast<std::size_t>(slot_[static_cast<std::size_t>(prog_.size() - 1)])];
      std::copy_n(y.begin(), prog_.at(prog_.size() - 1).out.elements(), output);
    }
  }

  /// Faithful mode: the bytes tile `tile` of IPU `ipu` held, by category, while step `step`
  /// ran there (measured from the allocations of the last run). Zero for other modes and for
  /// steps of other IPUs.
  memory_bytes measured_usage(int ipu, int tile, int step) const {
    if (mode_ != execution_mode::faithful || prog_.at(step).ipu != ipu) return {};
    return devices_[static_cast<std::size_t>(ipu)].trace[static_cast<std::size_t>(step) * static_cast<std::size_t>(tiles_) +
                                                         static_cast<std::size_t>(tile)];
  }
  /// Faithful mode: one past the highest byte any allocation of `tile` on `ipu` has reached
  /// since construction (each batch allocates the same way). Zero for other modes.
  std::int64_t measured_extent(int ipu, int tile) const {
    return mode_ == execution_mode::faithful ? devices_[static_cast<std::size_t>(ipu)].extent[static_cast<std::size_t>(tile)] : 0;
  }

 private:
  // ---- shared ------------------------------------------------------------------------

  struct packed_params {
    std::vector<float> kernel;  // fast mode, f16 partials: conv/dense kernels block-major [b][kh][kw][ci][bc]
    kernels::packed_conv<T> conv;  // fast mode, f32 partials
    std::vector<float> bias, scale, shift;
    std::vector<std::vector<T>> device;  // faithful mode: each tensor as the tiles store it
  };

  /// Fast mode: partials in f32, so convolutions run `packed_conv`.
  static constexpr bool packed = std::same_as<Acc, float>;

  // Device tensors by name (`ops::<op>::device_tensors`); conv and dense share the kernel's.
  static constexpr std::size_t kernel_tensor = ops::device_index<ops::conv>("kernel");
  static_assert(kernel_tensor == ops::device_index<ops::dense>("kernel"));
  static constexpr std::size_t bias_tensor = ops::device_index<ops::dense>("bias");
  static constexpr std::size_t scale_tensor = ops::device_index<ops::batch_norm>("scale");
  static constexpr std::size_t shift_tensor = ops::device_index<ops::batch_norm>("shift");
  static float round_to_t(float x) noexcept { return kernels::widen(static_cast<T>(x)); }

  kernels::window_geometry geometry(const node& n) const noexcept {
    if (n.kind == op::dense) return {};
    const std::int64_t k = n.kind == op::global_avg_pool ? 1 : n.layer.kernel;
    return kernels::window_geometry::same(n.in.dim[1], n.in.dim[2], n.out.dim[1], n.out.dim[2], k, n.layer.stride);
  }

  void prepare_parameters(const parameter_set& params) {
    params_.resize(static_cast<std::size_t>(prog_.size()));
    for (int j = 0; j < prog_.size(); ++j) {
      const node& n = prog_.at(j);
      const node_plan& p = prog_.plan_of(j);
      packed_params& q = params_[static_cast<std::size_t>(j)];
      const auto& src = params[static_cast<std::size_t>(j)];
      if (mode_ == execution_mode::faithful) {
        for (const auto& t : src) {
          std::vector<T> d(t.size());
          std::transform(t.begin(), t.end(), d.begin(), [](float x) { return static_cast<T>(x); });
          q.device.push_back(std::move(d));
        }
        continue;
      }
      if ((n.kind == op::conv || n.kind == op::dense) && packed) {
        std::vector<float> kernel(src[kernel_tensor].size());
        std::transform(src[kernel_tensor].begin(), src[kernel_tensor].end(), kernel.begin(), round_to_t);
        q.conv = kernels::packed_conv<T>(conv_shape_of(n), kernel);
        if (n.kind == op::dense)
          for (float x : src[bias_tensor]) q.bias.push_back(round_to_t(x));
      } else if (n.kind == op::conv || n.kind == op::dense) {
        const std::int64_t rows = p.step.kernel * p.step.kernel * p.step.in_channels, bc = p.step.block_channels;
        const std::int64_t out = n.out.channels();
        q.kernel.resize(static_cast<std::size_t>(p.step.blocks * rows * bc));
        for (std::int64_t b = 0; b < p.step.blocks; ++b)
          for (std::int64_t r = 0; r < rows; ++r)
            for (std::int64_t c = 0; c < bc; ++c)
              q.kernel[static_cast<std::size_t>((b * rows + r) * bc + c)] =
                  round_to_t(src[kernel_tensor][static_cast<std::size_t>(r * out + b * bc + c)]);
        if (n.kind == op::dense)
          for (float x : src[bias_tensor]) q.bias.push_back(round_to_t(x));
      } else if (n.kind == op::batch_norm) {
        for (float x : src[scale_tensor]) q.scale.push_back(round_to_t(x));
        for (float x : src[shift_tensor]) q.shift.push_back(round_to_t(x));
      }
    }
  }

  // ---- fast mode ---------------------------------------------------------------------

  static kernels::conv_shape conv_shape_of(const node& n) noexcept {
    if (n.kind == op::dense) return {n.in.dim[0], 1, 1, n.in.channels(), n.out.channels(), 1, 1, 1};
    return {n.in.dim[0], n.in.dim[1], n.in.dim[2], n.in.channels(), n.out.channels(), n.layer.kernel, n.layer.stride,
            n.layer.groups};
  }

  /// Fusion: each convolution absorbs the batch norm, residual add and ReLU that follow it, in
  /// that order, as long as each absorbed step reads the previous one's output and nothing else
  /// reads that output (an add's other operand must exist before the convolution runs).
  /// `fused_end_[j]` is the last step convolution `j` computes; `fused_into_[k]` the
  /// convolution that computes step `k`, or -1.
  void plan_fusion() {
    const int count = prog_.size();
    std::vector<int> readers(static_cast<std::size_t>(count), 0);
    for (int j = 0; j < count; ++j) {
      const node& n = prog_.at(j);
      if (n.input >= 0) ++readers[static_cast<std::size_t>(n.input)];
      if (n.shortcut >= 0) ++readers[static_cast<std::size_t>(n.shortcut)];
    }
    fused_end_.assign(static_cast<std::size_t>(count), -1);
    fused_into_.assign(static_cast<std::size_t>(count), -1);
    for (int j = 0; j < count; ++j) {
      const node& head = prog_.at(j);
      fused_end_[static_cast<std::size_t>(j)] = j;
      if (!packed || (head.kind != op::conv && head.kind != op::dense)) continue;
      // The epilogue's order: batch norm, add, ReLU, each at most once.
      const auto rank = [](op kind) {
        return kind == op::batch_norm ? 1 : kind == op::add ? 2 : kind == op::relu ? 3 : 0;
      };
      int end = j;
      op last = head.kind;
      for (int k = j + 1; k < count; ++k) {
        const node& n = prog_.at(k);
        const bool reads_end = n.input == end || n.shortcut == end;
        const bool in_order = rank(n.kind) > rank(last);
        const int other = n.kind == op::add ? (n.input == end ? n.shortcut : n.input) : -1;
        if (!reads_end || !in_order || readers[static_cast<std::size_t>(end)] != 1 || n.ipu != head.ipu ||
            (n.kind == op::add && (other >= j || other == end)) || (n.kind == op::relu && n.input != end))
          break;
        fused_into_[static_cast<std::size_t>(k)] = j;
        end = k;
        last = n.kind;
      }
      fused_end_[static_cast<std::size_t>(j)] = end;
      j = end;
    }
  }

  /// The step that writes node `j`'s output, or -1 when no step does (fused away).
  int written_at(int j) const noexcept {
    const int head = fused_into_[static_cast<std::size_t>(j)];
    if (head < 0) return j;
    return fused_end_[static_cast<std::size_t>(head)] == j ? head : -1;
  }

  /// Host buffers: each output a step writes gets a slot, from that step until its last
  /// reader has run, then the slot is reused.
  void prepare_host_buffers() {
    plan_fusion();
    const int n = prog_.size();
    slot_.assign(static_cast<std::size_t>(n), -1);
    std::vector<int> last(static_cast<std::size_t>(n));
    for (int j = 0; j < n; ++j) {
      last[static_cast<std::size_t>(j)] = j;
      for (int i = 0; i < prog_.ipus; ++i) last[static_cast<std::size_t>(j)] = std::max(last[static_cast<std::size_t>(j)], prog_.held_to(i, j));
    }
    std::vector<int> order;  // the written outputs, by the step that writes them
    for (int j = 0; j < n; ++j)
      if (written_at(j) >= 0) order.push_back(j);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return written_at(a) < written_at(b); });
    std::vector<int> busy_until;  // per slot
    std::vector<std::int64_t> sizes;
    for (int k : order) {
      const int j = written_at(k);
      const std::int64_t need = prog_.at(k).out.elements();
      int best = -1;
      for (int s = 0; s < static_cast<int>(busy_until.size()); ++s)
        if (busy_until[static_cast<std::size_t>(s)] < j && (best < 0 || sizes[static_cast<std::size_t>(s)] > sizes[static_cast<std::size_t>(best)]))
          best = s;
      if (best < 0) {
        best = static_cast<int>(busy_until.size());
        busy_until.push_back(0);
        sizes.push_back(0);
      }
      busy_until[static_cast<std::size_t>(best)] = last[static_cast<std::size_t>(k)];
      sizes[static_cast<std::size_t>(best)] = std::max(sizes[static_cast<std::size_t>(best)], need);
      slot_[static_cast<std::size_t>(k)] = best;
    }
    for (std::int64_t s : sizes) host_.emplace_back(static_cast<std::size_t>(s));
  }

  std::vector<T>& host_of(int j) { return host_[static_cast<std::size_t>(slot_[static_cast<std::size_t>(j)])]; }

  /// Runs `work(item)` for `items` items spread over the threads.
  template <class F>
  void parallel_items(std::int64_t items, F&& work) {
    std::atomic<std::int64_t> next{0};
    team_->run([&](unsigned) {
      for (std::int64_t i = next.fetch_add(1); i < items; i = next.fetch_add(1)) work(i);
    });
  }

  /// A convolution (or dense layer) with the steps fused into it.
  void fast_fused_conv(int j) {
    const int end = fused_end_[static_cast<std::size_t>(j)];
    const packed_params& q = params_[static_cast<std::size_t>(j)];
    kernels::epilogue<T> e;
    if (!q.bias.empty()) e.bias = q.bias.data();
    int previous = j;
    for (int k = j + 1; k <= end; previous = k++) {
      const node& n = prog_.at(k);
      if (n.kind == op::batch_norm) {
        e.scale = params_[static_cast<std::size_t>(k)].scale.data();
        e.shift = params_[static_cast<std::size_t>(k)].shift.data();
      } else if (n.kind == op::add) {
        e.residual = host_of(n.input == previous ? n.shortcut : n.input).data();
      } else {
        e.relu = true;
      }
    }
    const T* x = host_of(prog_.at(j).input).data();
    T* y = host_of(end).data();
    parallel_items(q.conv.work_items(), [&](std::int64_t item) { q.conv.run(x, y, e, item); });
  }

  void fast_step(int j) {
    if (fused_into_[static_cast<std::size_t>(j)] >= 0) return;  // computed by its convolution
    const node& n = prog_.at(j);
    if constexpr (packed) {
      if (n.kind == op::conv || n.kind == op::dense) return fast_fused_conv(j);
    }
    const node_plan& p = prog_.plan_of(j);
    T* y = host_of(j).data();
    const std::int64_t elements = n.out.elements(), channels = n.out.channels();
    const std::int64_t positions = elements / channels;
    const std::int64_t items_per_thread = 8;
    const std::int64_t items = std::max<std::int64_t>(1, std::min<std::int64_t>(positions, team_->size() * items_per_thread));
    const auto range = [&](std::int64_t item, std::int64_t count) {
      return std::pair{item * count / items, (item + 1) * count / items};
    };
    const T* x = n.input >= 0 ? host_of(n.input).data() : nullptr;
    switch (n.kind) {
      case op::input: std::copy_n(input_, elements, y); break;
      case op::conv:
      case op::dense: {
        const packed_params& q = params_[static_cast<std::size_t>(j)];
        const kernels::window_geometry g = geometry(n);
        const std::int64_t bc = p.step.block_channels, cin = p.step.in_channels, c = n.in.channels();
        const std::int64_t rows = p.step.kernel * p.step.kernel * cin;
        const bool grouped = n.kind == op::conv && n.layer.groups > 1;
        constexpr std::int64_t chunk = 64;  // positions per kernel call: the partials stay in cache
        const std::int64_t per_block = detail::div_up(positions, chunk);
        parallel_items(p.step.blocks * per_block, [&](std::int64_t item) {
          thread_local std::vector<Acc> partials;
          partials.resize(static_cast<std::size_t>(chunk * bc));
          const std::int64_t b = item / per_block, p0 = item % per_block * chunk, p1 = std::min(positions, p0 + chunk);
          const kernels::image_view<T> in{x + (grouped ? b * cin : 0), 0, g.in_width * c, c};
          const kernels::weight_view<float> w{q.kernel.data() + b * rows * bc, cin, bc};
          kernels::conv<T, Acc, float>(g, in, w, bc, q.bias.empty() ? nullptr : q.bias.data() + b * bc, p0, p1,
                                       partials.data(), y + p0 * n.out.channels() + b * bc, n.out.channels());
        });
        break;
      }
      case op::batch_norm: {
        const packed_params& q = params_[static_cast<std::size_t>(j)];
        parallel_items(items, [&](std::int64_t item) {
          const auto [p0, p1] = range(item, positions);
          for (std::int64_t pos = p0; pos < p1; ++pos)
            kernels::affine(x + pos * channels, y + pos * channels, channels, q.scale.data(), q.shift.data());
        });
        break;
      }
      case op::relu:
      case op::add: {
        const T* s = n.kind == op::add ? host_of(n.shortcut).data() : nullptr;
        parallel_items(items, [&](std::int64_t item) {
          const auto [e0, e1] = range(item, elements);
          if (s != nullptr) {
            kernels::add(x + e0, s + e0, y + e0, e1 - e0);
          } else {
            kernels::relu(x + e0, y + e0, e1 - e0);
          }
        });
        break;
      }
      case op::max_pool:
      case op::avg_pool: {
        const kernels::window_geometry g = geometry(n);
        const auto kind = n.kind == op::max_pool ? kernels::pool_kind::max : kernels::pool_kind::average;
        parallel_items(items, [&](std::int64_t item) {
          const auto [p0, p1] = range(item, positions);
          kernels::pool_positions(kind, g, kernels::image_view<T>{x, 0, g.in_width * channels, channels}, channels, p0, p1,
                                  y + p0 * channels);
        });
        break;
      }
      case op::global_avg_pool: {
        const std::int64_t hw = n.in.dim[1] * n.in.dim[2];
        parallel_items(n.out.dim[0], [&](std::int64_t image) {
          kernels::mean_pixels(x + image * hw * channels, channels, hw, y + image * channels);
        });
        break;
      }
      case op::softmax:
        parallel_items(items, [&](std::int64_t item) {
          const auto [r0, r1] = range(item, positions);
          for (std::int64_t r = r0; r < r1; ++r)
            kernels::softmax_row(x + r * channels, channels, 0, channels, y + r * channels);
        });
        break;
    }
  }

  // ---- faithful mode -----------------------------------------------------------------

  /// Where one tensor lives on one IPU: its mapping, storage order and offset per tile.
  struct placement {
    const tensor_mapping* mapping = nullptr;
    storage_order order{};
    std::vector<std::int64_t> offset;  // per tile; -1 where the tensor has no elements
    bool present() const noexcept { return mapping != nullptr; }
  };

  /// The transient buffers of the running step on one tile.
  struct tile_step {
    std::int64_t temporaries = -1, exchange = -1, send = -1;  // offsets
    std::int64_t temporaries_bytes = 0, exchange_bytes = 0, send_bytes = 0;
  };

  struct device {
    std::unique_ptr<std::byte[]> memory;
    std::vector<tile_heap> heaps;
    std::vector<std::size_t> always_count;
    std::vector<memory_bytes> always_live, live;
    std::vector<memory_bytes> trace;      // [step][tile]
    std::vector<std::int64_t> extent;     // per tile: highest byte reached
    std::vector<tile_step> step;          // per tile: the running step's transients
    std::vector<std::vector<placement>> weights;  // [node][tensor]
  };

  std::byte* image(int ipu, int tile) const noexcept {
    return devices_[static_cast<std::size_t>(ipu)].memory.get() +
           static_cast<std::size_t>(tile) * static_cast<std::size_t>(prog_.chip.bytes_per_tile);
  }

  /// Owned tiles of thread `k`: `k, k + threads, ...`.
  template <class F>
  void for_owned_tiles(unsigned k, int tiles, F&& f) {
    for (int t = static_cast<int>(k); t < tiles; t += static_cast<int>(team_->size())) f(t);
  }

  std::int64_t allocate(int ipu, int tile, std::int64_t bytes, memory_category category, const char* what) {
    if (bytes <= 0) return -1;
    device& d = devices_[static_cast<std::size_t>(ipu)];
    const std::int64_t at = d.heaps[static_cast<std::size_t>(tile)].allocate(bytes);
    if (at < 0)
      throw execution_error("ipu: tile " + std::to_string(tile) + " of IPU " + std::to_string(ipu) + " cannot place " +
                            std::to_string(bytes) + " bytes of " + what + " (" + std::string(name_of(category)) +
                            "): its memory is too fragmented or full");
    memory_bytes& live = d.live[static_cast<std::size_t>(tile)];
    switch (category) {
      case memory_category::weights: live.weights += bytes; break;
      case memory_category::code: live.code += bytes; break;
      case memory_category::activations: live.activations += bytes; break;
      case memory_category::temporaries: live.temporaries += bytes; break;
      case memory_category::exchange: live.exchange += bytes; break;
    }
    std::int64_t& extent = d.extent[static_cast<std::size_t>(tile)];
    extent = std::max(extent, at + bytes);
    return at;
  }
  void release(int ipu, int tile, std::int64_t offset, std::int64_t bytes, memory_category category) {
    if (offset < 0) return;
    device& d = devices_[static_cast<std::size_t>(ipu)];
    d.heaps[static_cast<std::size_t>(tile)].release(offset);
    memory_bytes& live = d.live[static_cast<std::size_t>(tile)];
    (category == memory_category::activations ? live.activations
     : category == memory_category::temporaries ? live.temporaries
                                                : live.exchange) -= bytes;
  }

  /// Places node `j`'s output (or copy) on tile `tile` of `ipu`.
  void place_activation(int ipu, int j, int tile) {
    placement& pl = placed_[static_cast<std::size_t>(ipu)][static_cast<std::size_t>(j)];
    const tensor_mapping& m = prog_.mapping_on(ipu, j);
    pl.offset[static_cast<std::size_t>(tile)] =
        allocate(ipu, tile, m.elements_on(tile) * static_cast<std::int64_t>(sizeof(T)), memory_category::activations,
                 "an activation");
  }

  void prepare_devices() {
    const std::int64_t bytes = prog_.chip.bytes_per_tile;
    devices_.resize(static_cast<std::size_t>(prog_.ipus));
    dies_.assign(static_cast<std::size_t>(prog_.ipus), std::vector<std::vector<int>>(static_cast<std::size_t>(prog_.size())));
    for (int i = 0; i < prog_.ipus; ++i)
      for (int j = 0; j < prog_.size(); ++j)
        if (prog_.held_to(i, j) >= 0) dies_[static_cast<std::size_t>(i)][static_cast<std::size_t>(prog_.held_to(i, j))].push_back(j);
    placed_.assign(static_cast<std::size_t>(prog_.ipus), std::vector<placement>(static_cast<std::size_t>(prog_.size())));
    for (int i = 0; i < prog_.ipus; ++i) {
      device& d = devices_[static_cast<std::size_t>(i)];
      d.memory = std::make_unique<std::byte[]>(static_cast<std::size_t>(bytes * tiles_));
      d.heaps.assign(static_cast<std::size_t>(tiles_), tile_heap(bytes));
      d.live.assign(static_cast<std::size_t>(tiles_), {});
      d.extent.assign(static_cast<std::size_t>(tiles_), 0);
      d.step.assign(static_cast<std::size_t>(tiles_), {});
      d.trace.assign(static_cast<std::size_t>(prog_.size()) * static_cast<std::size_t>(tiles_), {});
      d.weights.resize(static_cast<std::size_t>(prog_.size()));
      for (int t = 0; t < tiles_; ++t) {  // code: the plan's bytes, reserved
        allocate(i, t, prog_.always[static_cast<std::size_t>(i)][static_cast<std::size_t>(t)].code, memory_category::code,
                 "code");
      }
      for (int j = 0; j < prog_.size(); ++j) {
        if (prog_.at(j).ipu != i) continue;
        const node_plan& p = prog_.plan_of(j);
        for (int w = 0; w < p.weight_tensors; ++w) {
          const tensor_mapping& m = p.weights[static_cast<std::size_t>(w)];
          placement pl{&m, storage_order{m.elements(), 1, 1, 1}, std::vector<std::int64_t>(static_cast<std::size_t>(tiles_), -1)};
          const std::vector<T>& values = params_[static_cast<std::size_t>(j)].device[static_cast<std::size_t>(w)];
          for (int t = 0; t < m.tiles(); ++t) {
            const std::int64_t count = m.elements_on(t);
            const std::int64_t at = allocate(i, t, count * static_cast<std::int64_t>(sizeof(T)), memory_category::weights, "weights");
            pl.offset[static_cast<std::size_t>(t)] = at;
            std::memcpy(image(i, t) + at, values.data() + m.units.begin(t), static_cast<std::size_t>(count) * sizeof(T));
          }
          d.weights[static_cast<std::size_t>(j)].push_back(std::move(pl));
        }
      }
      d.always_live = d.live;
      for (const tile_heap& h : d.heaps) d.always_count.push_back(h.allocations());
    }
  }

  /// Copies storage elements `[s, s + n)` of `pl` (on `ipu`) to `dst`: an exchange read.
  void read_storage(int ipu, const placement& pl, std::int64_t s, std::int64_t n, T* dst) const {
    const tensor_mapping& m = *pl.mapping;
    const std::int64_t unit = m.unit_elements;
    while (n > 0) {
      const int tile = m.units.tile_of(s / unit);
      const std::int64_t begin = m.units.begin(tile) * unit, end = m.units.end(tile) * unit;
      const std::int64_t k = std::min(n, end - s);
      std::memcpy(dst, image(ipu, tile) + pl.offset[static_cast<std::size_t>(tile)] + (s - begin) * static_cast<std::int64_t>(sizeof(T)),
                  static_cast<std::size_t>(k) * sizeof(T));
      dst += k, s += k, n -= k;
    }
  }
  /// Copies channels `[c, c + n)` of position `pos` of `pl` to `dst`.
  void read_channels(int ipu, const placement& pl, std::int64_t pos, std::int64_t c, std::int64_t n, T* dst) const {
    while (n > 0) {
      const std::int64_t k = pl.order.run(c, n);
      read_storage(ipu, pl, pl.order.index(pos, c), k, dst);
      dst += k, c += k, n -= k;
    }
  }

  /// `[begin, end)` of tile `tile` in storage elements of mapping `m`.
  static std::pair<std::int64_t, std::int64_t> segment(const tensor_mapping& m, int tile) noexcept {
    if (tile >= m.tiles()) return {0, 0};
    return {m.units.begin(tile) * m.unit_elements, m.units.end(tile) * m.unit_elements};
  }

  /// A pointer into tile `tile`'s own image, checked to lie inside it.
  template <class U = T>
  U* own(int ipu, int tile, std::int64_t offset, std::int64_t count) const {
    const std::int64_t bytes = count * static_cast<std::int64_t>(sizeof(U));
    if (offset < 0 || offset + bytes > prog_.chip.bytes_per_tile)
      throw execution_error("ipu: a vertex on tile " + std::to_string(tile) + " reached outside its tile");
    return reinterpret_cast<U*>(image(ipu, tile) + offset);
  }
  T* own_exchange(int ipu, int tile, std::int64_t from, std::int64_t count) const {
    const tile_step& ts = devices_[static_cast<std::size_t>(ipu)].step[static_cast<std::size_t>(tile)];
    if ((from + count) * static_cast<std::int64_t>(sizeof(T)) > ts.exchange_bytes)
      throw execution_error("ipu: tile " + std::to_string(tile) + " needs more exchange memory than the plan gives it");
    return own(ipu, tile, ts.exchange + from * static_cast<std::int64_t>(sizeof(T)), count);
  }
  T* own_activation(int ipu, int j, int tile) const {
    const placement& pl = placed_[static_cast<std::size_t>(ipu)][static_cast<std::size_t>(j)];
    return own(ipu, tile, pl.offset[static_cast<std::size_t>(tile)], pl.mapping->elements_on(tile));
  }

  /// The slices of tile `tile`'s units in a conv step: `[begin, end)` of slice `k`.
  static std::pair<std::int64_t, std::int64_t> slice(const node_plan& p, int tile, std::int64_t k) noexcept {
    const std::int64_t begin = p.work.units.begin(tile), end = p.work.units.end(tile);
    const std::int64_t len = detail::div_up(end - begin, p.step.serial);
    return {std::min(end, begin + k * len), std::min(end, begin + (k + 1) * len)};
  }

  /// Calls `f(block, first position, last position, first unit)` for each block run of units `[u0, u1)`.
  template <class F>
  static void block_runs(const node_plan& p, std::int64_t u0, std::int64_t u1, F&& f) {
    const std::int64_t positions = p.step.positions;
    for (std::int64_t u = u0; u < u1;) {
      const std::int64_t b = u / positions, end = std::min(u1, (b + 1) * positions);
      f(b, u - b * positions, end - b * positions, u);
      u = end;
    }
  }

  void faithful_step(int j) {
    const node& n = prog_.at(j);
    const node_plan& p = prog_.plan_of(j);
    const int ipu = n.ipu;
    for (int b = 0; b < prog_.ipus; ++b)  // where the output (and its copies) will live
      if (b == ipu || prog_.copies(b, j)) {
        const tensor_mapping& m = prog_.mapping_on(b, j);
        placed_[static_cast<std::size_t>(b)][static_cast<std::size_t>(j)] =
            placement{&m, storage_order::of(m, n.out), std::vector<std::int64_t>(static_cast<std::size_t>(tiles_), -1)};
      }
    // Phase 1: release what step j - 1 left behind, allocate step j, exchange (slice 0).
    team_->run([&](unsigned k) {
      for (int i = 0; i < prog_.ipus; ++i)
        for_owned_tiles(k, tiles_, [&](int t) { end_of_step(i, j - 1, t); });
      for_owned_tiles(k, tiles_, [&](int t) {
        begin_step(j, t);
        exchange(j, t, 0);
      });
    });
    const std::int64_t slices = p.step.kind == step_kind::conv ? p.step.serial : 1;
    for (std::int64_t s = 0; s < slices; ++s) {
      if (s > 0) team_->run([&](unsigned k) { for_owned_tiles(k, tiles_, [&](int t) { exchange(j, t, s); }); });
      team_->run([&](unsigned k) { for_owned_tiles(k, tiles_, [&](int t) { compute(j, t, s); }); });
    }
    if (p.sends) {
      // The send buffer: this tile's share of the output in logical order, for the IPU-Link.
      team_->run([&](unsigned k) {
        for_owned_tiles(k, p.copy.tiles(), [&](int t) {
          const auto [e0, e1] = segment(p.copy, t);
          T* dst = own(ipu, t, devices_[static_cast<std::size_t>(ipu)].step[static_cast<std::size_t>(t)].send, e1 - e0);
          const placement& out = placed_[static_cast<std::size_t>(ipu)][static_cast<std::size_t>(j)];
          const std::int64_t c = n.out.channels();
          for (std::int64_t e = e0; e < e1;) {
            const std::int64_t len = std::min(e1 - e, c - e % c);
            read_channels(ipu, out, e / c, e % c, len, dst + (e - e0));
            e += len;
          }
        });
      });
      team_->run([&](unsigned k) {
        for (int b = 0; b < prog_.ipus; ++b) {
          if (!prog_.copies(b, j)) continue;
          for_owned_tiles(k, p.copy.tiles(), [&](int t) {
            place_activation(b, j, t);
            const std::int64_t count = p.copy.elements_on(t);
            std::memcpy(own(b, t, placed_[static_cast<std::size_t>(b)][static_cast<std::size_t>(j)].offset[static_cast<std::size_t>(t)], count),
                        own(ipu, t, devices_[static_cast<std::size_t>(ipu)].step[static_cast<std::size_t>(t)].send, count),
                        static_cast<std::size_t>(count) * sizeof(T));
          });
        }
      });
    }
    if (j + 1 == prog_.size())
      team_->run([&](unsigned k) {
        for (int i = 0; i < prog_.ipus; ++i) for_owned_tiles(k, tiles_, [&](int t) { end_of_step(i, j, t); });
      });
  }

  /// Releases step `j`'s transients on its IPU and, on IPU `ipu`, the activations whose last
  /// reader there was step `j` (the graph's output excepted: it is read back after the run).
  void end_of_step(int ipu, int j, int tile) {
    if (j < 0) return;
    device& d = devices_[static_cast<std::size_t>(ipu)];
    if (prog_.at(j).ipu == ipu) {
      tile_step& ts = d.step[static_cast<std::size_t>(tile)];
      release(ipu, tile, ts.temporaries, ts.temporaries_bytes, memory_category::temporaries);
      release(ipu, tile, ts.exchange, ts.exchange_bytes, memory_category::exchange);
      release(ipu, tile, ts.send, ts.send_bytes, memory_category::exchange);
      ts = {};
    }
    if (j + 1 == prog_.size()) return;
    for (int src : dies_[static_cast<std::size_t>(ipu)][static_cast<std::size_t>(j)]) {
      placement& pl = placed_[static_cast<std::size_t>(ipu)][static_cast<std::size_t>(src)];
      if (!pl.present()) continue;
      release(ipu, tile, pl.offset[static_cast<std::size_t>(tile)], pl.mapping->elements_on(tile) * static_cast<std::int64_t>(sizeof(T)),
              memory_category::activations);
      pl.offset[static_cast<std::size_t>(tile)] = -1;
    }
  }

  /// Allocates step `j`'s output and transients on `tile` and records the tile's bytes.
  void begin_step(int j, int tile) {
    const node& n = prog_.at(j);
    const node_plan& p = prog_.plan_of(j);
    const int ipu = n.ipu;
    device& d = devices_[static_cast<std::size_t>(ipu)];
    if (tile < p.output.tiles()) place_activation(ipu, j, tile);
    const transient_bytes tr = transient_on(p.step, p.work.units.elements_on(tile));
    tile_step& ts = d.step[static_cast<std::size_t>(tile)];
    ts.temporaries_bytes = tr.temporaries;
    ts.exchange_bytes = tr.exchange;
    ts.send_bytes = p.sends ? p.copy.elements_on(tile) * static_cast<std::int64_t>(sizeof(T)) : 0;
    ts.temporaries = allocate(ipu, tile, ts.temporaries_bytes, memory_category::temporaries, "partials");
    ts.exchange = allocate(ipu, tile, ts.exchange_bytes, memory_category::exchange, "exchange buffers");
    ts.send = allocate(ipu, tile, ts.send_bytes, memory_category::exchange, "a send buffer");
    d.trace[static_cast<std::size_t>(j) * static_cast<std::size_t>(tiles_) + static_cast<std::size_t>(tile)] =
        d.live[static_cast<std::size_t>(tile)];
  }

  /// The placement of node `src`'s output as read on `ipu`.
  const placement& input_on(int ipu, int src) const { return placed_[static_cast<std::size_t>(ipu)][static_cast<std::size_t>(src)]; }

  /// The channels of a batch norm's exchange buffer on a tile holding storage `[s0, s1)`:
  /// `(first channel, count)`; buffer index `k` holds channel `(first + k) % channels`.
  static std::pair<std::int64_t, std::int64_t> norm_channels(const storage_order& o, std::int64_t s0, std::int64_t s1) noexcept {
    if (o.blocks > 1) {
      const std::int64_t per_block = o.positions * o.block_channels;
      return {s0 / per_block * o.block_channels, ((s1 - 1) / per_block - s0 / per_block + 1) * o.block_channels};
    }
    const std::int64_t n = std::min(o.channels, s1 - s0);
    return {n == o.channels ? 0 : s0 % o.channels, n};
  }

  /// A working conv tile's exchange layout: each block it computes has `per_block` elements
  /// of weights (and bias) at the start of the buffer, blocks `[first, last]`; the input
  /// windows follow them.
  struct conv_block_layout {
    std::int64_t per_block, first, last;
  };
  static conv_block_layout conv_blocks(const node_plan& p, int tile) noexcept {
    const std::int64_t k = p.step.kernel;
    const std::int64_t per_block = (k * k * p.step.in_channels + (p.step.bias ? 1 : 0)) * p.step.block_channels;
    return {per_block, p.work.units.begin(tile) / p.step.positions, (p.work.units.end(tile) - 1) / p.step.positions};
  }

  /// A pooling's geometry and the input rows `[first, last)` its output elements `[o0, o1)` read.
  std::tuple<kernels::window_geometry, std::int64_t, std::int64_t> pooling_window(const node& n, std::int64_t o0,
                                                                                   std::int64_t o1) const noexcept {
    const kernels::window_geometry g = geometry(n);
    const std::int64_t c = n.out.channels();
    const auto [first, last] = g.input_rows(o0 / c, (o1 - 1) / c + 1);
    return {g, first, last};
  }

  /// Exchange phase of step `j` (slice `s`) for `tile`: gathers what its vertices read.
  void exchange(int j, int tile, std::int64_t s) {
    const node& n = prog_.at(j);
    const node_plan& p = prog_.plan_of(j);
    const int ipu = n.ipu;
    const auto [o0, o1] = segment(p.output, tile);
    if (o0 == o1 && n.kind != op::conv && n.kind != op::dense) return;
    switch (n.kind) {
      case op::input: break;
      case op::conv:
      case op::dense: {
        if (tile >= p.work.tiles() || p.work.units.elements_on(tile) == 0) return;
        const std::int64_t bc = p.step.block_channels, cin = p.step.in_channels, k = p.step.kernel;
        const auto [per_block, b_first, b_last] = conv_blocks(p, tile);
        const device& d = devices_[static_cast<std::size_t>(ipu)];
        const auto& w = d.weights[static_cast<std::size_t>(j)];
        if (s == 0) {  // the weights (and bias) of every block the tile computes
          for (std::int64_t b = b_first; b <= b_last; ++b) {
            T* dst = own_exchange(ipu, tile, (b - b_first) * per_block, per_block);
            for (std::int64_t r = 0; r < k * k * cin; ++r) read_storage(ipu, w[kernel_tensor], r * n.out.channels() + b * bc, bc, dst + r * bc);
            if (p.step.bias) read_storage(ipu, w[bias_tensor], b * bc, bc, dst + k * k * cin * bc);
          }
        }
        const auto [a, e] = slice(p, tile, s);
        const kernels::window_geometry g = geometry(n);
        const placement& in = input_on(ipu, n.input);
        const bool grouped = n.kind == op::conv && n.layer.groups > 1;
        std::int64_t at = (b_last - b_first + 1) * per_block;  // the windows follow the weights
        block_runs(p, a, e, [&](std::int64_t b, std::int64_t p0, std::int64_t p1, std::int64_t) {
          const auto [r0, r1] = g.input_rows(p0, p1);
          T* dst = own_exchange(ipu, tile, at, (r1 - r0) * g.in_width * cin);
          for (std::int64_t r = r0; r < r1; ++r)
            for (std::int64_t x = 0; x < g.in_width; ++x, dst += cin)
              read_channels(ipu, in, r * g.in_width + x, grouped ? b * cin : 0, cin, dst);
          at += (r1 - r0) * g.in_width * cin;
        });
        break;
      }
      case op::batch_norm: {
        const storage_order o = storage_order::of(p.output, n.out);
        const auto [first, count] = norm_channels(o, o0, o1);
        const auto& w = devices_[static_cast<std::size_t>(ipu)].weights[static_cast<std::size_t>(j)];
        T* dst = own_exchange(ipu, tile, 0, 2 * count);
        for (const std::size_t t : {scale_tensor, shift_tensor}) {  // scales first, then shifts
          T* to = dst + (t == scale_tensor ? 0 : count);
          const std::int64_t head = std::min(count, o.channels - first);
          read_storage(ipu, w[t], first, head, to);
          if (head < count) read_storage(ipu, w[t], 0, count - head, to + head);
        }
        break;
      }
      case op::add: {
        if (p.step.kind != step_kind::remap) break;
        const storage_order o = storage_order::of(p.output, n.out);
        const placement& sc = input_on(ipu, n.shortcut);
        T* dst = own_exchange(ipu, tile, 0, o1 - o0);
        for (std::int64_t q = o0; q < o1;) {
          const auto [pos, c] = o.locate(q);
          const std::int64_t len = std::min(o1 - q, o.run(c, o.channels - c));
          read_channels(ipu, sc, pos, c, len, dst + (q - o0));
          q += len;
        }
        break;
      }
      case op::max_pool:
      case op::avg_pool: {
        const auto [g, r0, r1] = pooling_window(n, o0, o1);
        const std::int64_t c = n.out.channels();
        T* dst = own_exchange(ipu, tile, 0, (r1 - r0) * g.in_width * c);
        const placement& in = input_on(ipu, n.input);
        for (std::int64_t r = r0; r < r1; ++r)
          for (std::int64_t x = 0; x < g.in_width; ++x, dst += c) read_channels(ipu, in, r * g.in_width + x, 0, c, dst);
        break;
      }
      case op::global_avg_pool: {
        const std::int64_t c = n.out.channels(), hw = n.in.dim[1] * n.in.dim[2];
        T* dst = own_exchange(ipu, tile, 0, (o1 - o0) * hw);
        const placement& in = input_on(ipu, n.input);
        for (std::int64_t e = o0; e < o1; ++e)
          for (std::int64_t q = 0; q < hw; ++q) read_channels(ipu, in, e / c * hw + q, e % c, 1, dst++);
        break;
      }
      case op::softmax: {
        const std::int64_t c = n.out.channels();
        const std::int64_t r0 = o0 / c, r1 = (o1 - 1) / c + 1;
        T* dst = own_exchange(ipu, tile, 0, (r1 - r0) * c);
        const placement& in = input_on(ipu, n.input);
        for (std::int64_t r = r0; r < r1; ++r) read_channels(ipu, in, r, 0, c, dst + (r - r0) * c);
        break;
      }
      case op::relu: break;
    }
  }

  /// Compute phase of step `j` (slice `s`) on `tile`: its vertices, reading only its memory.
  void compute(int j, int tile, std::int64_t s) {
    const node& n = prog_.at(j);
    const node_plan& p = prog_.plan_of(j);
    const int ipu = n.ipu;
    const auto [o0, o1] = segment(p.output, tile);
    if (o0 == o1) return;
    T* y = own_activation(ipu, j, tile);
    const auto operand = [&](int src) { return own_activation(ipu, src, tile); };
    switch (n.kind) {
      case op::input: std::copy_n(input_ + o0, o1 - o0, y); break;
      case op::conv:
      case op::dense: {
        const std::int64_t u_begin = p.work.units.begin(tile);
        const std::int64_t bc = p.step.block_channels, cin = p.step.in_channels, k = p.step.kernel;
        const auto [per_block, b_first, b_last] = conv_blocks(p, tile);
        const auto [a, e] = slice(p, tile, s);
        const kernels::window_geometry g = geometry(n);
        const tile_step& ts = devices_[static_cast<std::size_t>(ipu)].step[static_cast<std::size_t>(tile)];
        Acc* partials = own<Acc>(ipu, tile, ts.temporaries, (e - a) * bc);
        std::int64_t at = (b_last - b_first + 1) * per_block;
        block_runs(p, a, e, [&](std::int64_t b, std::int64_t p0, std::int64_t p1, std::int64_t u) {
          const auto [r0, r1] = g.input_rows(p0, p1);
          const std::int64_t window = (r1 - r0) * g.in_width * cin;
          const T* w = own_exchange(ipu, tile, (b - b_first) * per_block, per_block);
          const kernels::image_view<T> in{own_exchange(ipu, tile, at, window), r0, g.in_width * cin, cin};
          kernels::conv<T, Acc, T>(g, in, kernels::weight_view<T>{w, cin, bc}, bc, p.step.bias ? w + k * k * cin * bc : nullptr,
                                   p0, p1, partials, y + (u - u_begin) * bc, bc);
          at += window;
        });
        break;
      }
      case op::batch_norm: {
        const storage_order o = storage_order::of(p.output, n.out);
        const auto [first, count] = norm_channels(o, o0, o1);
        const T* params = own_exchange(ipu, tile, 0, 2 * count);
        const T* x = operand(n.input);
        for (std::int64_t q = o0; q < o1;) {
          const auto [pos, c] = o.locate(q);
          const std::int64_t len = std::min(o1 - q, o.run(c, o.channels - c));
          const std::int64_t at = (c - first + o.channels) % o.channels;
          kernels::affine(x + (q - o0), y + (q - o0), len, params + at, params + count + at);
          q += len;
        }
        break;
      }
      case op::relu: kernels::relu(operand(n.input), y, o1 - o0); break;
      case op::add:
        kernels::add(operand(n.input),
                     p.step.kind == step_kind::remap ? own_exchange(ipu, tile, 0, o1 - o0) : operand(n.shortcut), y,
                     o1 - o0);
        break;
      case op::max_pool:
      case op::avg_pool: {
        const auto [g, r0, r1] = pooling_window(n, o0, o1);
        const std::int64_t c = n.out.channels();
        const kernels::image_view<T> in{own_exchange(ipu, tile, 0, (r1 - r0) * g.in_width * c), r0, g.in_width * c, c};
        kernels::pool(n.kind == op::max_pool ? kernels::pool_kind::max : kernels::pool_kind::average, g, in, c, o0, o1, y);
        break;
      }
      case op::global_avg_pool: {
        const std::int64_t hw = n.in.dim[1] * n.in.dim[2];
        const T* x = own_exchange(ipu, tile, 0, (o1 - o0) * hw);
        for (std::int64_t e = o0; e < o1; ++e) y[e - o0] = kernels::mean(x + (e - o0) * hw, 1, hw);
        break;
      }
      case op::softmax: {
        const std::int64_t c = n.out.channels();
        const std::int64_t r0 = o0 / c, r1 = (o1 - 1) / c + 1;
        const T* x = own_exchange(ipu, tile, 0, (r1 - r0) * c);
        for (std::int64_t r = r0; r < r1; ++r) {
          const std::int64_t c0 = std::max(o0, r * c) - r * c, c1 = std::min(o1, (r + 1) * c) - r * c;
          kernels::softmax_row(x + (r - r0) * c, c, c0, c1, y + (r * c + c0 - o0));
        }
        break;
      }
    }
  }

  /// Reads the graph's output back from its tiles, in logical order.
  void read_output(T* output) const {
    const int last = prog_.size() - 1;
    const node& n = prog_.at(last);
    const placement& pl = placed_[static_cast<std::size_t>(n.ipu)][static_cast<std::size_t>(last)];
    const std::int64_t c = n.out.channels();
    for (std::int64_t pos = 0; pos < n.out.elements() / c; ++pos) read_channels(n.ipu, pl, pos, 0, c, output + pos * c);
  }

  program prog_;
  execution_mode mode_;
  std::unique_ptr<team> team_;  // held by pointer: an executor (and an engine) can move
  int tiles_;
  const T* input_ = nullptr;
  std::vector<packed_params> params_;
  // fast mode
  std::vector<int> slot_;
  std::vector<std::vector<T>> host_;
  std::vector<int> fused_end_, fused_into_;
  // faithful mode
  std::vector<device> devices_;
  std::vector<std::vector<placement>> placed_;  // [ipu][node]
  std::vector<std::vector<std::vector<int>>> dies_;  // [ipu][step]: outputs whose last reader there it is
};

}  // namespace runtime
}  // namespace ipu
