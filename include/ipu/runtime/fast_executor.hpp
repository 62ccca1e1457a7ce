#pragma once
/// \file
/// `runtime::fast_executor`: the fast mode of `ipu::engine`. The plan's steps over whole host
/// tensors (NHWC), each step's work cut into host-sized items that the threads take in turn;
/// exchange is only accounted for. With f32 partials, convolutions and dense layers run
/// `kernels::packed_conv` (weights packed once, at construction), and the batch norm, residual
/// add and ReLU that the plan fuses into a convolution (`node_plan::fused_into`) run in its
/// epilogue: those steps then do nothing of their own. Each output gets the arithmetic of the
/// faithful mode, each fused step rounded as its own step rounds, so the two modes agree bit
/// for bit, whatever the number of threads.

#include <ipu/core/arith.hpp>
#include <ipu/core/dtype.hpp>
#include <ipu/kernels/conv.hpp>
#include <ipu/kernels/packed_conv.hpp>
#include <ipu/kernels/pointwise.hpp>
#include <ipu/kernels/pool.hpp>
#include <ipu/kernels/views.hpp>
#include <ipu/runtime/execution.hpp>
#include <ipu/runtime/program.hpp>
#include <ipu/runtime/team.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace ipu::runtime {

/// Runs a `program`'s steps over host tensors (see the file comment).
/// \tparam T   storage element type, `f32` or `f16`
/// \tparam Acc partials type: with `f32`, convolutions run `kernels::packed_conv` with the
///             plan's fusion; with `f16`, the scalar kernels accumulate in f16
template <ElementType T, class Acc>
class fast_executor {
 public:
  /// Lays out `params` (one entry per node) for `prog`, run on `threads`; both must outlive
  /// the executor.
  fast_executor(const program& prog, const parameter_set& params, team& threads) : prog_(prog), team_(threads) {
    prepare_parameters(params);
    prepare_host_buffers();
  }

  /// Sets the batch the input step reads.
  void begin(const T* input) noexcept { input_ = input; }

  /// Runs step `j` over whole host tensors.
  void step(int j) {
    if (prog_.plan_of(j).fused_into >= 0) return;  // computed by its convolution
    const node& n = prog_.at(j);
    if constexpr (packed) {
      if (n.kind == op::conv || n.kind == op::dense) return fused_conv(j);
    }
    const node_plan& p = prog_.plan_of(j);
    T* y = host_of(j).data();
    const std::int64_t elements = n.out.elements(), channels = n.out.channels();
    const std::int64_t positions = elements / channels;
    const std::int64_t items_per_thread = 8;
    const std::int64_t items = std::max<std::int64_t>(1, std::min<std::int64_t>(positions, team_.size() * items_per_thread));
    const auto range = [&](std::int64_t item, std::int64_t count) {
      return std::pair{item * count / items, (item + 1) * count / items};
    };
    const T* x = n.input_count > 0 ? host_of(n.input()).data() : nullptr;
    switch (n.kind) {
      case op::input: std::copy_n(input_, elements, y); break;
      case op::conv:
      case op::dense: {
        const packed_params& q = params_[static_cast<std::size_t>(j)];
        const kernels::window_geometry g = geometry_of(n);
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
        parallel_items(items, [&](std::int64_t item) {
          const auto [e0, e1] = range(item, elements);
          kernels::relu(x + e0, y + e0, e1 - e0);
        });
        break;
      case op::add:
      case op::multiply: {
        std::array<const T*, max_inputs> inputs{};
        for (int k = 0; k < n.input_count; ++k) inputs[static_cast<std::size_t>(k)] = host_of(n.inputs[static_cast<std::size_t>(k)]).data();
        parallel_items(items, [&](std::int64_t item) {
          const auto [e0, e1] = range(item, elements);
          std::array<const T*, max_inputs> from{};
          for (int k = 0; k < n.input_count; ++k) from[static_cast<std::size_t>(k)] = inputs[static_cast<std::size_t>(k)] + e0;
          if (n.kind == op::add) {
            kernels::sum(from.data(), n.input_count, y + e0, e1 - e0);
          } else {
            kernels::product(from.data(), n.input_count, y + e0, e1 - e0);
          }
        });
        break;
      }
      case op::concat:
        parallel_items(items, [&](std::int64_t item) {
          const auto [p0, p1] = range(item, positions);
          for (std::int64_t pos = p0; pos < p1; ++pos) {
            T* to = y + pos * channels;
            for (int src : n.sources()) {
              const std::int64_t c = prog_.at(src).out.channels();
              to = std::copy_n(host_of(src).data() + pos * c, c, to);
            }
          }
        });
        break;
      case op::max_pool:
      case op::avg_pool: {
        const kernels::window_geometry g = geometry_of(n);
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

  /// Copies the graph's output, in logical order, to `output`.
  void end(T* output) const {
    const int last = prog_.size() - 1;
    const std::vector<T>& y = host_[static_cast<std::size_t>(slot_[static_cast<std::size_t>(last)])];
    std::copy_n(y.begin(), prog_.at(last).out.elements(), output);
  }

 private:
  struct packed_params {
    std::vector<float> kernel;  // f16 partials: conv/dense kernels block-major [b][kh][kw][ci][bc]
    kernels::packed_conv<T> conv;  // f32 partials
    std::vector<float> bias, scale, shift;
  };

  /// Partials in f32, so convolutions run `packed_conv`.
  static constexpr bool packed = std::same_as<Acc, float>;

  void prepare_parameters(const parameter_set& params) {
    params_.resize(static_cast<std::size_t>(prog_.size()));
    const auto round_to_t = round_to<T>;
    for (int j = 0; j < prog_.size(); ++j) {
      const node& n = prog_.at(j);
      const node_plan& p = prog_.plan_of(j);
      packed_params& q = params_[static_cast<std::size_t>(j)];
      const auto& src = params[static_cast<std::size_t>(j)];
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

  /// The step that writes node `j`'s output, or -1 when no step does (fused away).
  int written_at(int j) const noexcept {
    const int head = prog_.plan_of(j).fused_into;
    if (head < 0) return j;
    return prog_.plan_of(head).fused_end == j ? head : -1;
  }

  /// Host buffers: each output a step writes gets a slot, from that step until its last
  /// reader has run, then the slot is reused.
  void prepare_host_buffers() {
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

  /// The host buffer of node `j`'s output.
  std::vector<T>& host_of(int j) { return host_[static_cast<std::size_t>(slot_[static_cast<std::size_t>(j)])]; }


  /// Runs `work(item)` for `items` items spread over the threads.
  template <class F>
  void parallel_items(std::int64_t items, F&& work) {
    std::atomic<std::int64_t> next{0};
    team_.run([&](unsigned) {
      for (std::int64_t i = next.fetch_add(1); i < items; i = next.fetch_add(1)) work(i);
    });
  }

  /// A convolution (or dense layer) with the steps fused into it.
  void fused_conv(int j) {
    const int end = prog_.plan_of(j).fused_end;
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
        e.residual = host_of(n.inputs[0] == previous ? n.inputs[1] : n.inputs[0]).data();
      } else {
        e.relu = true;
      }
    }
    const T* x = host_of(prog_.at(j).input()).data();
    T* y = host_of(end).data();
    parallel_items(q.conv.work_items(), [&](std::int64_t item) { q.conv.run(x, y, e, item); });
  }

  const program& prog_;
  team& team_;
  const T* input_ = nullptr;
  std::vector<packed_params> params_;
  std::vector<int> slot_;  // per node: the host buffer its output is written to
  std::vector<std::vector<T>> host_;
};

}  // namespace ipu::runtime
