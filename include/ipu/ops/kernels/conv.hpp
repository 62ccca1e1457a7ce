#pragma once
/// \file
/// `ops::matmul_kernel`, the kernel of `ops::conv` and `ops::dense` (a dense layer is a 1x1
/// convolution over its N positions, with a bias).
///
/// - Fast mode, f32 partials: `kernels::packed_conv` over whole tensors, the weights packed
///   once; the batch norm, residual add and ReLU the plan fuses into the step
///   (`node_plan::fused_end`) run in its epilogue, each through its op's `fuse`.
/// - Fast mode, f16 partials: `kernels::conv` over chunks of 64 positions per output-channel
///   block, the weights block-major `[block][kh][kw][ci][bc]`.
/// - Faithful mode: each working tile receives the weights (and bias) of the blocks it
///   computes, then per serial slice the input windows of its positions, and runs the
///   `kernels::conv` steps on each run of units of one block; a step split into phases over
///   kernel taps and input channels (`step_model::taps`, `in_parts`) receives each phase's
///   weights and window and continues the same partials.
/// - Training (`backward`): the gradients of the input, the kernel and the bias, each summed
///   in f32 in a fixed order, so the same on any number of threads. The kernel's: of a
///   grouped convolution whose groups lie within a vector (ResNeXt's, depthwise), per tap and
///   chunk of channels, the input's vector spread within each group (`small_group_gradient`);
///   of any other convolution or a dense layer, `X_tap^T dY` per group and tap, by blocks of
///   its rows and columns, each summed over the output positions in order in registers
///   (`kernel_gradient`). The bias's by block of output channels. The input's, at stride 1, is
///   itself a convolution (`input_gradient`): of the output's gradient, by the kernel flipped
///   along both axes with each group's input and output channels swapped, run by
///   `kernels::packed_conv` and added to the gradient in its epilogue; a 1x1 convolution at a
///   larger stride runs that convolution over the output's positions and adds each result to
///   the pixel the position read; other strides run it phase by phase, each phase of input
///   pixels (those the same taps reach) a stride-1 convolution by those taps
///   (`strided_phases`), or, with dilation or where a phase would need negative padding, over
///   the output's gradient spread at the stride onto a grid of the input's pitch, zeros between.

#include <ipu/core/arith.hpp>
#include <ipu/ops/conv.hpp>
#include <ipu/ops/dense.hpp>
#include <ipu/ops/kernels/kernel.hpp>

#include <algorithm>
#include <any>
#include <concepts>
#include <cstdint>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

namespace ipu::ops {

/// The kernel of `conv` and `dense` (see the file comment).
struct matmul_kernel : kernel_base {
  /// The device tensors by name: the kernel and the bias (empty for a conv without one).
  static constexpr std::size_t kernel_tensor = device_index<conv>("kernel");
  static_assert(kernel_tensor == device_index<dense>("kernel"));
  /// \copydoc kernel_tensor
  static constexpr std::size_t bias_tensor = device_index<dense>("bias");
  static_assert(bias_tensor == device_index<conv>("bias"));

  /// Fast mode, f32 partials: the packed weights and the bias, rounded to `T`.
  template <ElementType T>
  struct packed {
    kernels::packed_conv<T> conv;  ///< the weights, packed
    std::vector<float> bias;       ///< empty without a bias
  };
  /// Fast mode, f16 partials: the weights block-major and the bias, rounded to `T`.
  struct blocked {
    std::vector<float> kernel;  ///< `[block][kh][kw][ci][bc]`
    std::vector<float> bias;    ///< empty without a bias
  };

  /// The `packed_conv` shape of a conv node, or of a dense layer as a 1x1 conv over N positions.
  static kernels::conv_shape conv_shape_of(const node& n) noexcept {
    if (n.kind == op_of<dense>) return {n.in.dim[0], 1, 1, n.in.channels(), n.out.channels(), 1, 1, 1};
    return {.batch = n.in.dim[0],
            .in_height = n.in.dim[1],
            .in_width = n.in.dim[2],
            .in_channels = n.in.channels(),
            .out_channels = n.out.channels(),
            .kernel = n.layer.kernel,
            .stride = n.layer.stride,
            .groups = n.layer.groups,
            .pad = n.layer.pad,
            .dilation = n.layer.dilation};
  }

  /// `packed<T>` with f32 partials, else `blocked`. The weights are packed into the storage of
  /// `previous` where it holds them, as it does at each training step (see `scratch`).
  template <ElementType T, class Acc>
  static std::any prepare(const node& n, const node_plan& p, device_values tensors, std::any previous) {
    const std::vector<float>& kernel = tensors[kernel_tensor];
    std::vector<float> bias;
    if (n.layer.bias) bias = rounded<T>(tensors[bias_tensor]);
    if constexpr (std::same_as<Acc, float>) {
      const kernels::conv_shape shape = conv_shape_of(n);
      const std::int64_t cin_g = shape.in_channels / shape.groups, out = shape.out_channels;
      packed<T> q;
      if (auto* before = std::any_cast<packed<T>>(&previous)) q = std::move(*before);
      q.conv.assign(shape, [&](std::int64_t tap, std::int64_t ci, std::int64_t co) {
        return round_to<T>(kernel[static_cast<std::size_t>((tap * cin_g + ci) * out + co)]);
      });
      q.bias = std::move(bias);
      return q;
    } else {
      const std::int64_t rows = p.step.kernel_taps * p.step.in_channels, bc = p.step.block_channels;
      const std::int64_t out = n.out.channels();
      blocked q{std::vector<float>(static_cast<std::size_t>(p.step.blocks * rows * bc)), std::move(bias)};
      for (std::int64_t b = 0; b < p.step.blocks; ++b)
        for (std::int64_t r = 0; r < rows; ++r)
          for (std::int64_t c = 0; c < bc; ++c)
            q.kernel[static_cast<std::size_t>((b * rows + r) * bc + c)] =
                round_to<T>(kernel[static_cast<std::size_t>(r * out + b * bc + c)]);
      return q;
    }
  }

  /// Training: adds `dx`, `d kernel` and `d bias` (see the file comment).
  template <class Ctx>
  static void backward(const Ctx& c) {
    const node& n = c.n;
    const kernels::window_geometry g = geometry_of(n);
    const std::int64_t groups = n.kind == op_of<conv> ? n.layer.groups : 1;
    const std::int64_t cin = n.in.channels(), cout = n.out.channels();
    const std::int64_t taps = g.kernel_h * g.kernel_w, per_image = g.positions_per_image();
    const std::int64_t positions = n.out.elements() / cout;
    const float* dy = c.grad_output();
    const std::span<float> dw = c.weight_grad("kernel");
    if (groups == 1 || !in_vector_groups(c, g, dw, cin / groups, cout / groups)) kernel_gradient(c, g, dw);
    if (n.layer.bias) {
      const std::span<float> db = c.weight_grad("bias");
      constexpr std::int64_t co_block = 64;  // output channels per work item
      c.parallel(detail::div_up(cout, co_block), [&](std::int64_t b) {
        const std::int64_t co0 = b * co_block, co1 = std::min(cout, co0 + co_block);
        std::vector<float> acc(static_cast<std::size_t>(co1 - co0));
        for (std::int64_t p = 0; p < positions; ++p) kernels::add_scaled(acc.data(), 1.0f, dy + p * cout + co0, co1 - co0);
        for (std::int64_t co = co0; co < co1; ++co) db[static_cast<std::size_t>(co)] += acc[static_cast<std::size_t>(co - co0)];
      });
    }
    const bool whole = g.stride_h == 1 && g.stride_w == 1;  // a convolution that writes all of `dx`
    const auto [dx, assign] = whole ? c.grad_input_target() : typename Ctx::gradient_target{c.grad_input(), false};
    if (dx == nullptr) return;
    const std::span<const float> w = c.weight("kernel");
    const auto span_less = [](std::int64_t span, std::int64_t pad) { return static_cast<int>(span - 1 - pad); };
    kernels::epilogue<float> into_dx;
    // Each element read, then written, by the one tile computing it; or only written, where
    // nothing was added to `dx` yet (the same bits: a convolution's sums are never -0).
    into_dx.residual = assign ? nullptr : dx;
    if (whole) {
      const kernels::packed_conv<float>& q =
          input_gradient(c, g, w, g.out_height, g.out_width,
                         explicit_padding(span_less(g.span_h(), g.pad_top), span_less(g.span_h(), g.pad_bottom),
                                          span_less(g.span_w(), g.pad_left), span_less(g.span_w(), g.pad_right)));
      c.parallel(q.work_items(), [&](std::int64_t item) { q.run(dy, dx, into_dx, item); });
      return;
    }
    if (taps == 1) {
      const kernels::packed_conv<float>& q = input_gradient(c, g, w, g.out_height, g.out_width, explicit_padding(0, 0, 0, 0));
      const std::span<float> at_positions = scratch(positions * cin);
      c.parallel(q.work_items(), [&](std::int64_t item) { q.run(dy, at_positions.data(), {}, item); });
      c.parallel(positions / per_image, [&](std::int64_t image) {
        for (std::int64_t p = image * per_image; p < (image + 1) * per_image; ++p)
          if (const std::int64_t pixel = g.tap_pixel(p, 0, 0); pixel >= 0)
            kernels::add_scaled(dx + pixel * cin, 1.0f, at_positions.data() + p * cin, cin);
      });
      return;
    }
    if (g.dilation_h == 1 && g.dilation_w == 1 && strided_phases(c, g, w, dx)) return;
    // Other strides: the output's gradient spread onto a grid of the input's pitch, each
    // position at its stride and zeros between, as far as a tap reaches the input; then the
    // stride-1 convolution of the grid that gives the input's shape, added to the gradient
    // (padding is smaller than the window, `graph_error_kind::padding_too_large`, so the grid
    // is padded before by `span - 1` less the forward's padding, as at stride 1).
    const std::int64_t rows = std::min((g.out_height - 1) * g.stride_h + 1, g.in_height + g.pad_top);
    const std::int64_t cols = std::min((g.out_width - 1) * g.stride_w + 1, g.in_width + g.pad_left);
    const std::span<float> grid = scratch(positions / per_image * rows * cols * cout);
    c.parallel(positions / per_image, [&](std::int64_t image) {
      float* to = grid.data() + image * rows * cols * cout;
      std::fill(to, to + rows * cols * cout, 0.0f);
      for (std::int64_t oh = 0; oh * g.stride_h < rows; ++oh)
        for (std::int64_t ow = 0; ow * g.stride_w < cols; ++ow)
          std::copy_n(dy + ((image * g.out_height + oh) * g.out_width + ow) * cout, cout,
                      to + (oh * g.stride_h * cols + ow * g.stride_w) * cout);
    });
    const kernels::packed_conv<float>& q = input_gradient(
        c, g, w, rows, cols,
        explicit_padding(span_less(g.span_h(), g.pad_top), static_cast<int>(g.in_height - rows + g.pad_top),
                         span_less(g.span_w(), g.pad_left), static_cast<int>(g.in_width - cols + g.pad_left)));
    c.parallel(q.work_items(), [&](std::int64_t item) { q.run(grid.data(), dx, into_dx, item); });
  }

  /// Adds the input's gradient of a convolution at a stride above 1 (dilation 1) to `dx`, phase
  /// by phase, and returns true; returns false, computing nothing, when a phase would need
  /// negative padding. Input pixels whose row and column leave the same residues modulo the
  /// strides (a phase) are reached by the same taps; each phase's gradient is the stride-1
  /// convolution of the output's gradient by those taps (`input_gradient` with `first` and
  /// `step`), computed into a buffer and added to its pixels. Unlike a convolution over the
  /// gradient spread onto the input's grid, no product is by a zero.
  template <class Ctx>
  static bool strided_phases(const Ctx& c, const kernels::window_geometry& g, std::span<const float> w, float* dx) {
    const node& n = c.n;
    const std::int64_t cin = n.in.channels(), images = n.out.dim[0];
    struct phase {
      int rh, rw;
      phase_axis v, h;
    };
    std::vector<phase> phases;
    for (int rh = 0; rh < g.stride_h; ++rh)
      for (int rw = 0; rw < g.stride_w; ++rw) {
        const phase_axis v = phase_along(rh, g.in_height, g.out_height, g.kernel_h, g.stride_h, g.pad_top);
        const phase_axis h = phase_along(rw, g.in_width, g.out_width, g.kernel_w, g.stride_w, g.pad_left);
        if (v.taps == 0 || h.taps == 0 || v.count == 0 || h.count == 0) continue;  // no tap reaches these pixels
        const auto fits = [](const phase_axis& a) { return a.before >= 0 && a.after >= 0 && a.before < a.taps && a.after < a.taps; };
        if (!fits(v) || !fits(h)) return false;
        phases.push_back({rh, rw, v, h});
      }
    const float* dy = c.grad_output();
    for (const auto& [rh, rw, v, h] : phases) {
      const kernels::packed_conv<float>& q = input_gradient(
          c, g, w, g.out_height, g.out_width,
          explicit_padding(static_cast<int>(v.before), static_cast<int>(v.after), static_cast<int>(h.before), static_cast<int>(h.after)),
          hw{rh, rw}, hw{static_cast<int>(g.stride_h), static_cast<int>(g.stride_w)});
      const std::span<float> out = scratch(images * v.count * h.count * cin);
      c.parallel(q.work_items(), [&](std::int64_t item) { q.run(dy, out.data(), {}, item); });
      c.parallel(images * v.count, [&](std::int64_t row) {
        const std::int64_t image = row / v.count, ih = (v.first + row % v.count) * g.stride_h + rh - g.pad_top;
        for (std::int64_t k = 0; k < h.count; ++k) {
          const std::int64_t iw = (h.first + k) * g.stride_w + rw - g.pad_left;
          kernels::add_scaled(dx + ((image * g.in_height + ih) * g.in_width + iw) * cin, 1.0f, out.data() + (row * h.count + k) * cin, cin);
        }
      });
    }
    return true;
  }

  /// Adds the kernel's gradient of a grouped convolution whose groups lie within a vector (as
  /// many input as output channels per group, a power of two dividing the vector's width:
  /// ResNeXt's and depthwise convolutions) to `dw`, and returns true; returns false for other
  /// groups. See `small_group_gradient`.
  template <class Ctx>
  static bool in_vector_groups(const Ctx& c, const kernels::window_geometry& g, std::span<float> dw, std::int64_t cin_g,
                               std::int64_t cout_g) {
    if (cin_g != cout_g) return false;
    bool done = false;
    const auto try_group = [&]<int Group>(std::integral_constant<int, Group>) {
      if constexpr (Group <= kernels::simd::vec::width)
        if (cin_g == Group) small_group_gradient<Group>(c, g, dw), done = true;
    };
    try_group(std::integral_constant<int, 1>{}), try_group(std::integral_constant<int, 2>{});
    try_group(std::integral_constant<int, 4>{}), try_group(std::integral_constant<int, 8>{});
    try_group(std::integral_constant<int, 16>{});
    return done;
  }

  /// The kernel's gradient of a convolution with groups of `Group` input and output channels
  /// (`Group` a power of two dividing the vector's width): `dw[tap][j][co] += x[pixel][co - co %
  /// Group + j] * dy[p][co]` for each `j < Group`, the input's vector spread within each group
  /// (`simd::spread`), or each input channel broadcast from memory where a group is the whole
  /// vector and the input f32 (the same products, no shuffle). The output positions run in
  /// parts whose input rows and gradient stay in L2, one work item each: per tap and chunk of
  /// `vectors` vectors of channels, the part's positions in order, summed in registers. The
  /// parts' sums are then added to `dw` in order.
  template <int Group, class Ctx>
  static void small_group_gradient(const Ctx& c, const kernels::window_geometry& g, std::span<float> dw) {
    using kernels::simd::vec;
    constexpr int vectors = std::max(1, 8 / Group);  // Group x vectors accumulators
    const std::int64_t channels = c.n.out.channels(), taps = g.kernel_h * g.kernel_w;
    const std::int64_t positions = c.n.out.elements() / channels, per_image = g.positions_per_image();
    const std::int64_t part = std::max<std::int64_t>(64, (128 << 10) / (static_cast<std::int64_t>(sizeof(float)) * channels));
    const std::int64_t parts = detail::div_up(positions, part), per_part = taps * Group * channels;
    const auto* x = c.input();
    const float* dy = c.grad_output();
    const std::span<float> sums = scratch(parts * per_part);
    c.parallel(parts, [&](std::int64_t item) {
      const std::int64_t p0 = item * part, p1 = std::min(positions, p0 + part);
      for (std::int64_t tap = 0; tap < taps; ++tap)
        for (std::int64_t ch0 = 0; ch0 < channels; ch0 += vectors * vec::width) {
          const std::int64_t down = tap / g.kernel_w * g.dilation_h - g.pad_top, right = tap % g.kernel_w * g.dilation_w - g.pad_left;
          int lanes[vectors];
          for (int v = 0; v < vectors; ++v) lanes[v] = kernels::simd::lanes_from(channels - ch0 - v * vec::width);
          vec acc[Group][vectors];  // every index a constant (`each_sum`), so that it lives in registers
          const auto each_sum = [&](auto&& f) __attribute__((always_inline)) {
            kernels::detail::unroll<Group>([&](auto j) __attribute__((always_inline)) {
              kernels::detail::unroll<vectors>([&](auto v) __attribute__((always_inline)) { f(j, v); });
            });
          };
          each_sum([&](auto j, auto v) __attribute__((always_inline)) { acc[j][v] = kernels::simd::zero(); });
          std::int64_t image = p0 / per_image, oh = p0 % per_image / g.out_width, ow = p0 % g.out_width;
          for (std::int64_t p = p0; p < p1; ++p) {
            const std::int64_t ih = oh * g.stride_h + down, iw = ow * g.stride_w + right;
            if (ih >= 0 && ih < g.in_height && iw >= 0 && iw < g.in_width) {
              const auto* xp = x + ((image * g.in_height + ih) * g.in_width + iw) * channels + ch0;
              const float* dyp = dy + p * channels + ch0;
              kernels::detail::unroll<vectors>([&](auto v) __attribute__((always_inline)) {
                if (lanes[v] == 0) return;
                const vec d = kernels::simd::load(dyp + v * vec::width, lanes[v]);
                if constexpr (Group == vec::width && std::is_same_v<std::remove_cvref_t<decltype(*xp)>, float>) {
                  // A group spans the vector: each input channel broadcast from memory, no shuffle.
                  kernels::detail::unroll<Group>([&](auto j) __attribute__((always_inline)) {
                    acc[j][v] = kernels::simd::madd(kernels::simd::splat(xp[v * vec::width + j]), d, acc[j][v]);
                  });
                } else {
                  const vec xv = kernels::simd::load_widened(xp + v * vec::width, lanes[v]);
                  kernels::detail::unroll<Group>([&](auto j) __attribute__((always_inline)) {
                    acc[j][v] = kernels::simd::madd(kernels::simd::spread<Group, j>(xv), d, acc[j][v]);
                  });
                }
              });
            }
            if (++ow == g.out_width) ow = 0, oh = oh + 1 == g.out_height ? (++image, 0) : oh + 1;
          }
          float* to = sums.data() + item * per_part + tap * Group * channels + ch0;
          each_sum([&](auto j, auto v) __attribute__((always_inline)) {
            if (lanes[v] > 0) kernels::simd::store(to + j * channels + v * vec::width, acc[j][v], lanes[v]);
          });
        }
    });
    add_parts(c, sums, parts, dw);
  }

  /// Adds the kernel's gradient of a convolution or dense layer to `dw`: per group and tap,
  /// `dw[tap] += X_tap^T dY`, where row `p` of `X_tap` is the input pixel output position `p`
  /// reads through the tap (zeros outside the image). The rows of a group's gradient
  /// (`[tap][ci]`) and its columns (the group's output channels) are cut into blocks of at
  /// most `block_rows` rows, as many as that takes and of near-equal height (a multiple of
  /// `tile_rows`), by `block_columns`, each block a work item. An item runs over the output
  /// positions in chunks of `chunk`: it gathers the chunk's values of X for its rows
  /// (`[position][row]`, read in place for a 1x1 convolution at stride 1) and adds their
  /// products to its sums, `tile_rows` rows by `tile_vectors` vectors of columns in registers at
  /// a time, position after position in order. A gradient with fewer blocks than
  /// `kernels::min_work_items` splits the positions into parts too, at most one per `min_part`
  /// chunks, whose sums are added to `dw` part after part. Neither the blocks nor the parts
  /// depend on the threads.
  template <class Ctx>
  static void kernel_gradient(const Ctx& c, const kernels::window_geometry& g, std::span<float> dw) {
    using kernels::simd::vec;
    using value = std::remove_cvref_t<decltype(*c.input())>;
    const node& n = c.n;
    const std::int64_t groups = n.kind == op_of<conv> ? n.layer.groups : 1;
    const std::int64_t cin = n.in.channels(), cout = n.out.channels(), cin_g = cin / groups, cout_g = cout / groups;
    const std::int64_t taps = g.kernel_h * g.kernel_w, positions = n.out.elements() / cout, rows = taps * cin_g;
    const std::int64_t row_blocks = detail::div_up(rows, block_rows), column_blocks = detail::div_up(cout_g, block_columns);
    const std::int64_t block_height = detail::div_up(detail::div_up(rows, row_blocks), tile_rows) * tile_rows;
    const std::int64_t blocks = groups * row_blocks * column_blocks, chunks = detail::div_up(positions, chunk);
    const std::int64_t parts = std::clamp<std::int64_t>(detail::div_up(kernels::min_work_items, blocks), 1, std::max<std::int64_t>(1, chunks / min_part));
    const bool in_place = std::is_same_v<value, float> && g.pointwise() && g.pad_top == 0 && g.pad_left == 0 &&
                          g.in_height == g.out_height && g.in_width == g.out_width;
    const value* x = c.input();
    const float* dy = c.grad_output();
    const std::span<float> sums = scratch(parts > 1 ? parts * rows * cout : 0);  // per part, as `dw`
    c.parallel(blocks * parts, [&](std::int64_t item) {
      const std::int64_t part = item % parts, block = item / parts;
      const std::int64_t grp = block / (row_blocks * column_blocks), rb = block / column_blocks % row_blocks;
      const std::int64_t r0 = rb * block_height, height = std::min(rows, r0 + block_height) - r0;
      const std::int64_t c0 = block % column_blocks * block_columns, width = std::min(cout_g, c0 + block_columns) - c0;
      thread_local std::vector<float> gathered, acc;
      acc.assign(static_cast<std::size_t>(block_height * block_columns), 0.0f);
      if (!in_place) gathered.resize(static_cast<std::size_t>(chunk * block_height));
      for (std::int64_t p0 = part * chunks / parts * chunk, end = std::min(positions, (part + 1) * chunks / parts * chunk);
           p0 < end; p0 += chunk) {
        const std::int64_t count = std::min(chunk, end - p0);
        const float* a = nullptr;
        std::int64_t lda = block_height;
        if constexpr (std::is_same_v<value, float>)
          if (in_place) a = x + p0 * cin + grp * cin_g + r0, lda = cin;
        if (a == nullptr) {
          gather_rows(g, x + grp * cin_g, cin, cin_g, p0, count, r0, height, gathered.data(), block_height);
          a = gathered.data();
        }
        const float* b = dy + p0 * cout + grp * cout_g + c0;
        for (std::int64_t col = 0; col < width; col += tile_vectors * vec::width) {
          int lanes[tile_vectors];
          for (int v = 0; v < tile_vectors; ++v) lanes[v] = kernels::simd::lanes_from(width - col - v * vec::width);
          for (std::int64_t r = 0; r < height; r += tile_rows)
            kernels::add_product_tile(std::min(tile_rows, height - r), a + r, lda, b + col, cout, count,
                                      acc.data() + r * block_columns + col, block_columns, lanes);
        }
      }
      float* to = (parts > 1 ? sums.data() + part * rows * cout : dw.data()) + r0 * cout + grp * cout_g + c0;
      for (std::int64_t r = 0; r < height; ++r) {
        if (parts > 1) {
          std::copy_n(acc.data() + r * block_columns, width, to + r * cout);
        } else {
          kernels::add_scaled(to + r * cout, 1.0f, acc.data() + r * block_columns, width);
        }
      }
    });
    if (parts > 1) add_parts(c, sums, parts, dw);
  }

  /// `dw[e] += sums[e] + sums[size + e] + ...`: the sums of `parts` parts of the positions,
  /// each laid out as `dw`, added in order (the same bits on any number of threads).
  template <class Ctx>
  static void add_parts(const Ctx& c, std::span<const float> sums, std::int64_t parts, std::span<float> dw) {
    const std::int64_t size = static_cast<std::int64_t>(dw.size());
    parallel_chunks(c, size, [&](std::int64_t e0, std::int64_t e1) {
      for (std::int64_t e = e0; e < e1; ++e) {
        float s = sums[static_cast<std::size_t>(e)];
        for (std::int64_t part = 1; part < parts; ++part) s += sums[static_cast<std::size_t>(part * size + e)];
        dw[static_cast<std::size_t>(e)] += s;
      }
    });
  }

  // The blocks of `kernel_gradient`: sums of up to 192 rows by two register tiles of columns
  // (on AVX-512 128 columns, 96 KiB), in L2 beside a chunk's 256 gathered positions of those
  // rows (192 KiB) and its output gradient of those columns (128 KiB); register tiles as
  // `kernels::packed_conv`'s widest (6 rows by 4 vectors on AVX-512, 24 of its 32 registers).
  // Each block reads the whole output gradient of its columns, from memory where the layer's
  // is larger than the caches: blocks of 48 rows read it four times as often, and ResNet-50's
  // kernel gradients took 1.12 times as long (one process, alternating steps, batch 8, 2
  // threads; its 56x56 3x3 convolutions 1.4 times, the stem's 1.2). 384 rows gained no more.
  /// `kernel_gradient`'s register tile: vectors of columns (4 on AVX-512, 3 otherwise).
  static constexpr std::int64_t tile_vectors = kernels::product_tile_vectors;
  /// `kernel_gradient`'s register tile: rows (6 on AVX-512 with 4 vectors).
  static constexpr std::int64_t tile_rows = kernels::product_tile_rows;
  /// `kernel_gradient`: output positions per pass over a block's sums.
  static constexpr std::int64_t chunk = 256;
  /// `kernel_gradient`: rows (`[tap][ci]`) of a block at most, one work item.
  static constexpr std::int64_t block_rows = 192;
  /// `kernel_gradient`: columns (output channels) of a block, two register tiles wide.
  static constexpr std::int64_t block_columns = 2 * tile_vectors * kernels::simd::vec::width;
  /// `kernel_gradient`: chunks per part at least.
  static constexpr std::int64_t min_part = 4;

  /// Gathers rows `[r0, r0 + height)` (`[tap][ci]`, `cin_g` channels per tap) of `X_tap` for
  /// output positions `[p0, p0 + count)`, widened, into `to` (`[position][row]`, `pitch`
  /// floats per position); `x` points at the group's first channel, `cin` apart per pixel.
  ///
  /// Without groups and dilated columns, the taps of a kernel row read adjacent pixels, so
  /// that a position's rows of a kernel row are one run of the input where they lie inside
  /// the image: one copy, not one per tap. ResNet-50's stem (7 taps of 3 channels a kernel
  /// row) took 0.5 to 0.6 times as long for its kernel gradient, 9.8 to 12.7 ms a step against
  /// 19.6 to 20.7 (one process, alternating steps, batch 8, 2 threads); its other layers as
  /// before.
  template <class T>
  static void gather_rows(const kernels::window_geometry& g, const T* x, std::int64_t cin, std::int64_t cin_g, std::int64_t p0,
                          std::int64_t count, std::int64_t r0, std::int64_t height, float* to, std::int64_t pitch) {
    const std::int64_t per_image = g.positions_per_image();
    const auto copy = [](float* row, const T* from, std::int64_t n) {
      for (std::int64_t k = 0; k < n; k += kernels::simd::vec::width) {
        const int lanes = kernels::simd::lanes_from(n - k);
        kernels::simd::store(row + k, kernels::simd::load_widened(from + k, lanes), lanes);
      }
    };
    const bool adjacent = cin_g == cin && g.dilation_w == 1;  // a kernel row's taps read one run
    const std::int64_t span = adjacent ? g.kernel_w * cin_g : cin_g;  // rows gathered as one run
    const auto column = [&](std::int64_t tap) { return tap % g.kernel_w * g.dilation_w - g.pad_left; };
    for (std::int64_t s0 = r0 / span * span; s0 < r0 + height; s0 += span) {
      const std::int64_t lo = std::max(r0, s0), hi = std::min(r0 + height, s0 + span), n = hi - lo;
      const std::int64_t first = lo / cin_g, last = (hi - 1) / cin_g;  // the run's taps, of one kernel row
      const std::int64_t down = first / g.kernel_w * g.dilation_h - g.pad_top, right = column(first), reach = column(last) - right;
      std::int64_t image = p0 / per_image, oh = p0 % per_image / g.out_width, ow = p0 % g.out_width;  // of position p0 + p
      for (std::int64_t p = 0; p < count; ++p) {
        float* row = to + p * pitch + (lo - r0);
        const std::int64_t ih = oh * g.stride_h + down, iw = ow * g.stride_w + right;
        const T* pixels = ih < 0 || ih >= g.in_height ? nullptr : x + (image * g.in_height + ih) * g.in_width * cin;  // row ih
        if (pixels == nullptr) {
          std::fill(row, row + n, 0.0f);
        } else if (iw >= 0 && iw + reach < g.in_width) {
          copy(row, pixels + iw * cin + (lo - first * cin_g), n);
        } else {  // tap by tap, those outside the image zeros
          for (std::int64_t tap = first; tap <= last; ++tap) {
            const std::int64_t a = std::max(lo, tap * cin_g), b = std::min(hi, (tap + 1) * cin_g);
            const std::int64_t at = ow * g.stride_w + column(tap);
            if (at < 0 || at >= g.in_width) {
              std::fill(row + (a - lo), row + (b - lo), 0.0f);
            } else {
              copy(row + (a - lo), pixels + at * cin + (a - tap * cin_g), b - a);
            }
          }
        }
        if (++ow == g.out_width) ow = 0, oh = oh + 1 == g.out_height ? (++image, 0) : oh + 1;
      }
    }
  }

  /// Packs the convolution giving the input's gradient of node `c.n` (geometry `g`, kernel
  /// `w` as the forward pass used it) from its output's gradient, or from that gradient
  /// spread at the stride: over `height` x `width` positions with padding `pad`, the kernel
  /// flipped along both axes, each group's input and output channels swapped, at stride 1.
  /// With `first` and `step`, of the kernel's taps `first + m * step` only (a phase of a
  /// strided convolution). The convolution is the calling thread's, packed again in its
  /// storage at each step (see `scratch`), its panels over the threads.
  template <class Ctx>
  static const kernels::packed_conv<float>& input_gradient(const Ctx& c, const kernels::window_geometry& g, std::span<const float> w,
                                                           std::int64_t height, std::int64_t width, padding pad, hw first = {0, 0},
                                                           hw step = {1, 1}) {
    const node& n = c.n;
    const std::int64_t groups = n.kind == op_of<conv> ? n.layer.groups : 1;
    const std::int64_t cin = n.in.channels(), cout = n.out.channels(), cin_g = cin / groups, cout_g = cout / groups;
    const std::int64_t kh = g.kernel_h, kw = g.kernel_w;
    const std::int64_t rows = detail::div_up(kh - first.h, step.h), cols = detail::div_up(kw - first.w, step.w);
    // The weight of tap (r, t), input channel `ci` (an output channel of the forward pass,
    // within its group) and output channel `co` (an input channel): the forward kernel's tap
    // (rows - 1 - r, cols - 1 - t) of the phase, channels swapped.
    std::vector<std::int64_t> tap_at(static_cast<std::size_t>(rows * cols));
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t t = 0; t < cols; ++t)
        tap_at[static_cast<std::size_t>(r * cols + t)] =
            ((first.h + (rows - 1 - r) * step.h) * kw + first.w + (cols - 1 - t) * step.w) * cin_g * cout;
    const auto flipped = [&](std::int64_t tap, std::int64_t ci, std::int64_t co) {
      const std::int64_t grp = groups == 1 ? 0 : co / cin_g;
      return w[static_cast<std::size_t>(tap_at[static_cast<std::size_t>(tap)] + (co - grp * cin_g) * cout + grp * cout_g + ci)];
    };
    const kernels::conv_shape shape{.batch = n.out.dim[0],
                                    .in_height = height,
                                    .in_width = width,
                                    .in_channels = cout,
                                    .out_channels = cin,
                                    .kernel = hw{static_cast<int>(rows), static_cast<int>(cols)},
                                    .stride = 1,
                                    .groups = groups,
                                    .pad = pad,
                                    .dilation = hw{static_cast<int>(g.dilation_h), static_cast<int>(g.dilation_w)}};
    thread_local kernels::packed_conv<float> q;
    q.assign(shape, flipped, [&](std::int64_t panels, auto&& pack) { c.parallel(panels, pack); });
    return q;
  }
  /// `size` floats of the calling thread's buffer, kept from one backward step to the next as
  /// `input_gradient`'s convolution is, so that a training step's buffers and packed weights
  /// reuse the memory of the step before. Allocated afresh at each step, they took the pages
  /// from the system again and again: ResNet-50's step spent 4% of its time in page faults and
  /// as much in filling new pages, about 10% of its time in all.
  static std::span<float> scratch(std::int64_t size) {
    thread_local std::vector<float> buffer;
    buffer.resize(static_cast<std::size_t>(size));
    return buffer;
  }

  /// One phase of a strided convolution's input gradient along an axis: the input cells
  /// `q * stride + residue - pad_before` for `q` in `[first, first + count)`, which the taps
  /// `residue + m * stride` (`taps` of them) reach from the output cells `q - m`; as a stride-1
  /// convolution of the output's gradient, its padding `before` and `after`.
  struct phase_axis {
    std::int64_t taps;    ///< the taps that reach the phase's cells
    std::int64_t first;   ///< the first `q`
    std::int64_t count;   ///< cells in the phase
    std::int64_t before;  ///< padding of the stride-1 convolution before the output's gradient
    std::int64_t after;   ///< and after it
  };
  /// The phase of residue `residue` along an axis of `in` input cells, `out` output cells,
  /// `kernel` taps at `stride` after `pad_before` cells of padding (dilation 1).
  static phase_axis phase_along(std::int64_t residue, std::int64_t in, std::int64_t out, std::int64_t kernel, std::int64_t stride,
                                std::int64_t pad_before) noexcept {
    const auto floor_div = [](std::int64_t a, std::int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); };
    const std::int64_t taps = residue < kernel ? detail::div_up(kernel - residue, stride) : 0;
    const std::int64_t first = -floor_div(residue - pad_before, stride);  // the first q whose cell is >= 0
    const std::int64_t last = floor_div(in - 1 + pad_before - residue, stride);
    const std::int64_t count = std::max<std::int64_t>(0, last - first + 1);
    return {taps, first, count, taps - 1 - first, count - 1 + first - (out - 1)};
  }

  /// The whole step (and, with f32 partials, the steps fused into it).
  template <class Ctx>
  static void fast(const Ctx& c) {
    using T = typename Ctx::value_type;
    using Acc = typename Ctx::partials_type;
    const T* x = c.input();
    if constexpr (std::same_as<Acc, float>) {
      const auto& q = c.template params<packed<T>>();
      kernels::epilogue<T> e;
      if (!q.bias.empty()) e.bias = q.bias.data();
      const int end = c.p.fused_end;
      for (int k = c.index + 1, previous = c.index; k <= end; previous = k++) c.fuse(e, k, previous);
      T* y = c.host(end);
      c.parallel(q.conv.work_items(), [&](std::int64_t item) { q.conv.run(x, y, e, item); });
    } else {
      const auto& q = c.template params<blocked>();
      const node& n = c.n;
      const step_model& s = c.p.step;
      const kernels::window_geometry g = geometry_of(n);
      const std::int64_t bc = s.block_channels, cin = s.in_channels, channels = n.in.channels();
      const std::int64_t rows = s.kernel_taps * cin, positions = n.out.elements() / n.out.channels();
      const bool grouped = n.kind == op_of<conv> && n.layer.groups > 1;
      constexpr std::int64_t chunk = 64;  // positions per kernel call: the partials stay in cache
      const std::int64_t per_block = detail::div_up(positions, chunk);
      T* y = c.output();
      c.parallel(s.blocks * per_block, [&](std::int64_t item) {
        thread_local std::vector<Acc> partials;
        partials.resize(static_cast<std::size_t>(chunk * bc));
        const std::int64_t b = item / per_block, p0 = item % per_block * chunk, p1 = std::min(positions, p0 + chunk);
        const kernels::image_view<T> in{x + (grouped ? b * cin : 0), 0, g.in_width * channels, channels};
        const kernels::weight_view<float> w{q.kernel.data() + b * rows * bc, cin, bc};
        kernels::conv<T, Acc, float>(g, in, w, bc, q.bias.empty() ? nullptr : q.bias.data() + b * bc, p0, p1,
                                     partials.data(), y + p0 * n.out.channels() + b * bc, n.out.channels());
      });
    }
  }

  /// Gathers the weights (and bias) of each block the tile computes, once, or in each phase
  /// when the step has several per slice (`step_model::taps`, `in_parts`); then the input
  /// windows of the slice's positions: whole rows of the phase's channels, or one pixel per
  /// position for a phase of one tap (`step_model::pixel_window`). The windows follow the
  /// weights.
  template <class Ctx>
  static void exchange(const Ctx& c) {
    using T = typename Ctx::value_type;
    const node& n = c.n;
    const node_plan& p = c.p;
    const step_model& s = p.step;
    if (c.tile >= p.work.tiles() || p.work.units.elements_on(c.tile) == 0) return;
    const std::int64_t bc = s.block_channels, cin = s.in_channels, ci = s.phase_channels(), taps = s.phase_taps();
    const phase ph = phase_of(s, c.slice);
    const auto [per_block, b_first, b_last] = blocks_on(p, c.tile);
    if (c.slice == 0 || s.phases_per_slice() > 1)
      for (std::int64_t b = b_first; b <= b_last; ++b) {
        T* dst = c.exchange_buffer((b - b_first) * per_block, per_block);
        for (std::int64_t t = 0; t < taps; ++t)
          for (std::int64_t i = 0; i < ci; ++i) {
            const std::int64_t row = ((s.taps > 1 ? ph.tap : t) * cin + ph.part * ci + i) * n.out.channels();
            c.read_storage(c.weights(kernel_tensor), row + b * bc, bc, dst + (t * ci + i) * bc);
          }
        if (s.bias) c.read_storage(c.weights(bias_tensor), b * bc, bc, dst + taps * ci * bc);
      }
    const auto [a, e] = slice_of(p, c.tile, ph.slice);
    const kernels::window_geometry g = geometry_of(n);
    const auto& in = c.input(n.input());
    const bool grouped = n.kind == op_of<conv> && n.layer.groups > 1;
    std::int64_t at = (b_last - b_first + 1) * per_block;
    block_runs(p, a, e, [&](std::int64_t b, std::int64_t p0, std::int64_t p1, std::int64_t) {
      const std::int64_t first_channel = (grouped ? b * cin : 0) + ph.part * ci;
      if (s.pixel_window()) {
        T* dst = c.exchange_buffer(at, (p1 - p0) * ci);
        for (std::int64_t q = p0; q < p1; ++q)
          if (const std::int64_t pixel = g.tap_pixel(q, ph.tap / g.kernel_w, ph.tap % g.kernel_w); pixel >= 0)
            c.read_channels(in, pixel, first_channel, ci, dst + (q - p0) * ci);
        at += (p1 - p0) * ci;
        return;
      }
      const auto [r0, r1] = g.input_rows(p0, p1);
      T* dst = c.exchange_buffer(at, (r1 - r0) * g.in_width * ci);
      for (std::int64_t r = r0; r < r1; ++r)
        for (std::int64_t x = 0; x < g.in_width; ++x, dst += ci) c.read_channels(in, r * g.in_width + x, first_channel, ci, dst);
      at += (r1 - r0) * g.in_width * ci;
    });
  }

  /// On each run of the slice's units of one block, adds the phase's products to the partials
  /// in the tile's temporaries (`kernels::conv_accumulate`, `conv_tap_accumulate`), starting
  /// from zero in the slice's first phase and rounding to the output in its last.
  template <class Ctx>
  static void compute(const Ctx& c) {
    using T = typename Ctx::value_type;
    using Acc = typename Ctx::partials_type;
    const node_plan& p = c.p;
    const step_model& s = p.step;
    const std::int64_t u_begin = p.work.units.begin(c.tile);
    const std::int64_t bc = s.block_channels, ci = s.phase_channels();
    const phase ph = phase_of(s, c.slice);
    const std::int64_t phase_index = c.slice % s.phases_per_slice();
    const bool first = phase_index == 0, last = phase_index + 1 == s.phases_per_slice();
    const auto [per_block, b_first, b_last] = blocks_on(p, c.tile);
    const auto [a, e] = slice_of(p, c.tile, ph.slice);
    const kernels::window_geometry g = geometry_of(c.n);
    Acc* partials = c.partials((e - a) * bc);
    T* y = c.output();
    std::int64_t at = (b_last - b_first + 1) * per_block;
    block_runs(p, a, e, [&](std::int64_t b, std::int64_t p0, std::int64_t p1, std::int64_t u) {
      const T* w = c.exchange_buffer((b - b_first) * per_block, per_block);
      Acc* acc = partials + (u - a) * bc;
      if (first) std::fill(acc, acc + (p1 - p0) * bc, Acc{});
      if (s.pixel_window()) {
        kernels::conv_tap_accumulate(g, ph.tap / g.kernel_w, ph.tap % g.kernel_w, c.exchange_buffer(at, (p1 - p0) * ci), ci, w,
                                     bc, p0, p1, acc);
        at += (p1 - p0) * ci;
      } else {
        const auto [r0, r1] = g.input_rows(p0, p1);
        const std::int64_t window = (r1 - r0) * g.in_width * ci;
        const kernels::image_view<T> in{c.exchange_buffer(at, window), r0, g.in_width * ci, ci};
        kernels::conv_accumulate(g, in, kernels::weight_view<T>{w, ci, bc}, bc, p0, p1, acc);
        at += window;
      }
      if (last) kernels::conv_store(acc, s.bias ? w + s.phase_taps() * ci * bc : nullptr, bc, p1 - p0, y + (u - u_begin) * bc, bc);
    });
  }

 private:
  /// A working tile's exchange layout: each block it computes has `per_block` elements of
  /// weights (and bias) for the phase at the start of the buffer, blocks `[first, last]`.
  struct block_layout {
    std::int64_t per_block, first, last;
  };
  static block_layout blocks_on(const node_plan& p, int tile) noexcept {
    const step_model& s = p.step;
    const std::int64_t per_block = (s.phase_taps() * s.phase_channels() + (s.bias ? 1 : 0)) * s.block_channels;
    return {per_block, p.work.units.begin(tile) / s.positions, (p.work.units.end(tile) - 1) / s.positions};
  }

  /// Phase `k` of a step (the executor's slice index): its serial slice, its tap (when the
  /// step has one tap per phase) and its part of the input channels.
  struct phase {
    std::int64_t slice, tap, part;
  };
  static constexpr phase phase_of(const step_model& s, std::int64_t k) noexcept {
    const std::int64_t in_slice = k % s.phases_per_slice();
    return {k / s.phases_per_slice(), in_slice / s.in_parts, in_slice % s.in_parts};
  }

  /// Units `[begin, end)` of serial slice `k` of tile `tile`.
  static std::pair<std::int64_t, std::int64_t> slice_of(const node_plan& p, int tile, std::int64_t k) noexcept {
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
};

}  // namespace ipu::ops
