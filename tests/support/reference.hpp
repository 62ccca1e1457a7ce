#pragma once
/// \file
/// An independent, plain-loop reference implementation of the network ops, in `double`, for
/// checking the executor. It shares no kernel code with the library: only the node table
/// structs (`ipu::node`, `ipu::op`, `ipu::shape`) come from <ipu/graph/node.hpp>.
///
/// Layouts: activations NHWC flattened row-major, 2-D tensors [N, C]. Conv weights HWIO
/// `[kh, kw, in_channels / groups, out_channels]`; dense kernel `[in, out]`, bias `[out]`.
/// Convolution and pooling use TensorFlow's SAME padding unless a node's is explicit: out =
/// ceil(in / stride), pad_total = max((out - 1) * stride + span - in, 0), pad_before =
/// pad_total / 2 (the extra cell, if any, goes at the bottom / right); explicit padding
/// `before, after` gives out = floor((in + before + after - span) / stride) + 1. Along each
/// axis a window of k taps `d` cells apart (its dilation) spans `span = d * (k - 1) + 1` cells,
/// and tap `t` of output `o` reads input `o * stride - pad_before + t * d`.

#include <ipu/graph/layers.hpp>
#include <ipu/graph/node.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <functional>
#include <limits>
#include <numbers>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ipu_test::ref {

using tensor = std::vector<double>;

/// The padding of a window: TensorFlow's SAME, or explicit amounts per side.
struct padding {
  bool same = true;
  int top = 0, bottom = 0, left = 0, right = 0;
};

/// A window's taps (kh rows by kw columns), its strides and its dilations along height and width.
struct window {
  int kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1;
};

namespace detail {

inline std::size_t sz(std::int64_t i) { return static_cast<std::size_t>(i); }

/// Flat index of (a, b, c, d) in a row-major [*, B, C, D] tensor.
inline std::size_t at(int a, int b, int c, int d, int B, int C, int D) {
  return sz(((std::int64_t{a} * B + b) * C + c) * D + d);
}

/// One axis of a window: the output extent, the padding before the first cell, and the end
/// of the padded axis (the input and the padding on both sides).
struct axis {
  int out, pad_before, padded_end;
  /// TensorFlow's SAME when `same`, else `before` and `after` cells (PyTorch's `padding`), for
  /// `k` taps `dilation` apart at `stride`.
  axis(int in, int k, int stride, int dilation, bool same = true, int before = 0, int after = 0) {
    k = dilation * (k - 1) + 1;  // the cells the window spans
    if (same) {
      out = (in + stride - 1) / stride;
      const int total = std::max((out - 1) * stride + k - in, 0);
      pad_before = total / 2;
      padded_end = in + total;
    } else {
      out = (in + before + after - k) / stride + 1;
      pad_before = before;
      padded_end = in + before + after;
    }
  }
};

inline void expect_size(const tensor& x, std::int64_t n, const char* what) {
  if (static_cast<std::int64_t>(x.size()) != n)
    throw std::invalid_argument(std::string("ipu_test::ref: ") + what + " has " +
                                std::to_string(x.size()) + " elements, expected " +
                                std::to_string(n));
}

enum class pool_kind { max, avg, avg_counting_padding };

inline tensor pool(pool_kind kind, const tensor& x, int n, int h, int w, int c, const window& win, const padding& pad) {
  expect_size(x, std::int64_t{n} * h * w * c, "pool input");
  const axis ph(h, win.kh, win.sh, 1, pad.same, pad.top, pad.bottom), pw(w, win.kw, win.sw, 1, pad.same, pad.left, pad.right);
  tensor y(sz(std::int64_t{n} * ph.out * pw.out * c));
  for (int b = 0; b < n; ++b)
    for (int oy = 0; oy < ph.out; ++oy)
      for (int ox = 0; ox < pw.out; ++ox)
        for (int ch = 0; ch < c; ++ch) {
          double acc = kind == pool_kind::max ? -std::numeric_limits<double>::infinity() : 0.0;
          int count = 0, padded = 0;
          for (int ky = 0; ky < win.kh; ++ky)
            for (int kx = 0; kx < win.kw; ++kx) {
              const int iy = oy * win.sh - ph.pad_before + ky;
              const int ix = ox * win.sw - pw.pad_before + kx;
              // Cells of the padded image count in PyTorch's divisor; only the image's are read.
              if (iy + ph.pad_before < ph.padded_end && ix + pw.pad_before < pw.padded_end) ++padded;
              if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
              const double v = x[at(b, iy, ix, ch, h, w, c)];
              acc = kind == pool_kind::max ? std::max(acc, v) : acc + v;
              ++count;
            }
          y[at(b, oy, ox, ch, ph.out, pw.out, c)] =
              kind == pool_kind::max ? acc : acc / (kind == pool_kind::avg ? count : padded);
        }
  return y;
}

}  // namespace detail

/// 2-D convolution over window `win`, SAME padding unless `pad` is explicit, plus `bias` unless
/// it is empty. `x` is [n, h, w, c]; `kernel` is [kh, kw, c / groups, filters]; with SAME
/// padding the result is [n, ceil(h / sh), ceil(w / sw), filters]. Group g reads input channels
/// [g*c/groups, (g+1)*c/groups) and writes output channels [g*filters/groups, (g+1)*filters/groups).
inline tensor conv2d(const tensor& x, int n, int h, int w, int c, const tensor& kernel, const window& win, int filters,
                     int groups, const padding& pad = {}, const tensor& bias = {}) {
  using detail::at;
  if (groups < 1 || c % groups != 0 || filters % groups != 0)
    throw std::invalid_argument("ipu_test::ref::conv2d: groups must divide channels and filters");
  const int cin_g = c / groups, cout_g = filters / groups;
  detail::expect_size(x, std::int64_t{n} * h * w * c, "conv2d input");
  detail::expect_size(kernel, std::int64_t{win.kh} * win.kw * cin_g * filters, "conv2d kernel");
  if (!bias.empty()) detail::expect_size(bias, filters, "conv2d bias");
  const detail::axis ph(h, win.kh, win.sh, win.dh, pad.same, pad.top, pad.bottom);
  const detail::axis pw(w, win.kw, win.sw, win.dw, pad.same, pad.left, pad.right);
  tensor y(detail::sz(std::int64_t{n} * ph.out * pw.out * filters));
  for (int b = 0; b < n; ++b)
    for (int oy = 0; oy < ph.out; ++oy)
      for (int ox = 0; ox < pw.out; ++ox)
        for (int co = 0; co < filters; ++co) {
          const int g = co / cout_g;
          double acc = 0;
          for (int ky = 0; ky < win.kh; ++ky)
            for (int kx = 0; kx < win.kw; ++kx) {
              const int iy = oy * win.sh - ph.pad_before + ky * win.dh;
              const int ix = ox * win.sw - pw.pad_before + kx * win.dw;
              if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;  // zero padding
              for (int ci = 0; ci < cin_g; ++ci)
                acc += x[at(b, iy, ix, g * cin_g + ci, h, w, c)] *
                       kernel[at(ky, kx, ci, co, win.kw, cin_g, filters)];
            }
          y[at(b, oy, ox, co, ph.out, pw.out, filters)] = acc + (bias.empty() ? 0.0 : bias[detail::sz(co)]);
        }
  return y;
}

/// `conv2d` over a square `k x k` window at `stride` along both axes, undilated.
inline tensor conv2d(const tensor& x, int n, int h, int w, int c, const tensor& kernel, int k, int filters, int stride,
                     int groups, const padding& pad = {}, const tensor& bias = {}) {
  return conv2d(x, n, h, w, c, kernel, window{k, k, stride, stride}, filters, groups, pad, bias);
}

/// Inference batch norm over the last axis (c channels):
/// y = (x - mean) / sqrt(variance + eps) * scale + shift.
inline tensor batch_norm(const tensor& x, int c, const tensor& scale, const tensor& shift,
                         const tensor& mean, const tensor& variance, double eps = 1e-5) {
  for (const tensor* p : {&scale, &shift, &mean, &variance})
    detail::expect_size(*p, c, "batch_norm parameter");
  tensor y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::size_t ch = i % detail::sz(c);
    y[i] = (x[i] - mean[ch]) / std::sqrt(variance[ch] + eps) * scale[ch] + shift[ch];
  }
  return y;
}

/// Training batch norm over the last axis (c channels): normalised with the batch's mean and
/// biased variance over every other axis, y = (x - mean) / sqrt(variance + eps) * scale + shift.
inline tensor batch_norm_training(const tensor& x, int c, const tensor& scale, const tensor& shift, double eps = 1e-5) {
  const std::size_t channels = detail::sz(c), m = x.size() / channels;
  tensor mean(channels), variance(channels), y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) mean[i % channels] += x[i] / static_cast<double>(m);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double d = x[i] - mean[i % channels];
    variance[i % channels] += d * d / static_cast<double>(m);
  }
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::size_t ch = i % channels;
    y[i] = (x[i] - mean[ch]) / std::sqrt(variance[ch] + eps) * scale[ch] + shift[ch];
  }
  return y;
}

/// The element-wise activation named `op` (as `ipu::name_of` names its op) at `v`, from its
/// published definition; NaN for a name that is not one. GELU's `1 + erf(v / sqrt(2))` is
/// written `erfc(-v / sqrt(2))` and its tanh form's `(1 + tanh(u)) / 2` as `1 / (1 + e^{-2u})`,
/// the same functions, so that the negative tails keep double precision's digits.
inline double activation(std::string_view op, double v) {
  const auto relu6 = [](double x) { return std::min(std::max(x, 0.0), 6.0); };
  if (op == "relu6") return relu6(v);
  if (op == "hard_sigmoid") return relu6(v + 3) / 6;
  if (op == "hard_swish") return v * relu6(v + 3) / 6;
  if (op == "silu") return v / (1 + std::exp(-v));
  if (op == "gelu") return 0.5 * v * std::erfc(-v / std::sqrt(2.0));
  if (op == "gelu_tanh") return v / (1 + std::exp(-2 * std::sqrt(2 / std::numbers::pi) * (v + 0.044715 * v * v * v)));
  if (op == "tanh") return std::tanh(v);
  if (op == "sigmoid") return 1 / (1 + std::exp(-v));
  return std::numeric_limits<double>::quiet_NaN();
}
/// Whether `activation` defines `op`.
inline bool is_activation(std::string_view op) { return !std::isnan(activation(op, 0.0)); }

/// max(x, 0), element-wise.
inline tensor relu(tensor x) {
  for (double& v : x) v = std::max(v, 0.0);
  return x;
}

/// a + b, element-wise (same sizes).
inline tensor add(const tensor& a, const tensor& b) {
  detail::expect_size(b, static_cast<std::int64_t>(a.size()), "add operand");
  tensor y(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) y[i] = a[i] + b[i];
  return y;
}

/// a * b, element-wise (same sizes).
inline tensor multiply(const tensor& a, const tensor& b) {
  detail::expect_size(b, static_cast<std::int64_t>(a.size()), "multiply operand");
  tensor y(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) y[i] = a[i] * b[i];
  return y;
}

/// `x` of shape `from` repeated along each axis where `from` has extent 1 and `to` more, to
/// shape `to` (both rank 4, or rank 2 with the last two extents 1).
inline tensor broadcast(const tensor& x, const std::array<std::int64_t, 4>& from, const std::array<std::int64_t, 4>& to) {
  detail::expect_size(x, from[0] * from[1] * from[2] * from[3], "broadcast input");
  tensor y(detail::sz(to[0] * to[1] * to[2] * to[3]));
  const auto pick = [&](int axis, std::int64_t i) { return from[detail::sz(axis)] == 1 ? 0 : i; };
  for (std::int64_t a = 0; a < to[0]; ++a)
    for (std::int64_t b = 0; b < to[1]; ++b)
      for (std::int64_t c = 0; c < to[2]; ++c)
        for (std::int64_t d = 0; d < to[3]; ++d)
          y[detail::sz(((a * to[1] + b) * to[2] + c) * to[3] + d)] =
              x[detail::sz(((pick(0, a) * from[1] + pick(1, b)) * from[2] + pick(2, c)) * from[3] + pick(3, d))];
  return y;
}

/// Tensors of `positions` x `channels[k]` each, concatenated along the last axis.
inline tensor concat(const std::vector<const tensor*>& parts, const std::vector<int>& channels, std::int64_t positions) {
  std::int64_t total = 0;
  for (std::size_t k = 0; k < parts.size(); ++k) {
    detail::expect_size(*parts[k], positions * channels[k], "concat operand");
    total += channels[k];
  }
  tensor y(detail::sz(positions * total));
  for (std::int64_t p = 0; p < positions; ++p) {
    std::int64_t at = p * total;
    for (std::size_t k = 0; k < parts.size(); ++k)
      for (int c = 0; c < channels[k]; ++c) y[detail::sz(at++)] = (*parts[k])[detail::sz(p * channels[k] + c)];
  }
  return y;
}

/// Max pooling over window `win` (undilated), SAME padding unless `pad` is explicit; padded
/// positions are ignored.
inline tensor max_pool(const tensor& x, int n, int h, int w, int c, const window& win, const padding& pad = {}) {
  return detail::pool(detail::pool_kind::max, x, n, h, w, c, win, pad);
}
/// `max_pool` over a square `k x k` window at `stride`.
inline tensor max_pool(const tensor& x, int n, int h, int w, int c, int k, int stride, const padding& pad = {}) {
  return max_pool(x, n, h, w, c, window{k, k, stride, stride}, pad);
}

/// Average pooling, k x k window, SAME padding unless `pad` is explicit; divides by the number
/// of non-padded cells, or with `count_padding` by the window's cells in the padded image
/// (PyTorch's `count_include_pad=True`).
inline tensor avg_pool(const tensor& x, int n, int h, int w, int c, const window& win, const padding& pad = {},
                       bool count_padding = false) {
  return detail::pool(count_padding ? detail::pool_kind::avg_counting_padding : detail::pool_kind::avg, x, n, h, w, c,
                      win, pad);
}
/// `avg_pool` over a square `k x k` window at `stride`.
inline tensor avg_pool(const tensor& x, int n, int h, int w, int c, int k, int stride, const padding& pad = {},
                       bool count_padding = false) {
  return avg_pool(x, n, h, w, c, window{k, k, stride, stride}, pad, count_padding);
}

/// Mean over H and W: [n, h, w, c] -> [n, c].
inline tensor global_avg_pool(const tensor& x, int n, int h, int w, int c) {
  detail::expect_size(x, std::int64_t{n} * h * w * c, "global_avg_pool input");
  tensor y(detail::sz(std::int64_t{n} * c));
  for (int b = 0; b < n; ++b)
    for (int ch = 0; ch < c; ++ch) {
      double acc = 0;
      for (int iy = 0; iy < h; ++iy)
        for (int ix = 0; ix < w; ++ix) acc += x[detail::at(b, iy, ix, ch, h, w, c)];
      y[detail::sz(std::int64_t{b} * c + ch)] = acc / (double(h) * w);
    }
  return y;
}

/// Adaptive average pooling to [n, oh, ow, c] (PyTorch's AdaptiveAvgPool2d): output row i
/// averages input rows [floor(i * h / oh), ceil((i + 1) * h / oh)), columns likewise.
inline tensor adaptive_avg_pool(const tensor& x, int n, int h, int w, int c, int oh, int ow) {
  detail::expect_size(x, std::int64_t{n} * h * w * c, "adaptive_avg_pool input");
  tensor y(detail::sz(std::int64_t{n} * oh * ow * c));
  for (int b = 0; b < n; ++b)
    for (int i = 0; i < oh; ++i)
      for (int j = 0; j < ow; ++j) {
        const int r0 = i * h / oh, r1 = ((i + 1) * h + oh - 1) / oh;
        const int c0 = j * w / ow, c1 = ((j + 1) * w + ow - 1) / ow;
        for (int ch = 0; ch < c; ++ch) {
          double acc = 0;
          for (int r = r0; r < r1; ++r)
            for (int col = c0; col < c1; ++col) acc += x[detail::at(b, r, col, ch, h, w, c)];
          y[detail::at(b, i, j, ch, oh, ow, c)] = acc / ((r1 - r0) * (c1 - c0));
        }
      }
  return y;
}

/// Maximum over H and W: [n, h, w, c] -> [n, c].
inline tensor global_max_pool(const tensor& x, int n, int h, int w, int c) {
  detail::expect_size(x, std::int64_t{n} * h * w * c, "global_max_pool input");
  tensor y(detail::sz(std::int64_t{n} * c), -std::numeric_limits<double>::infinity());
  for (int b = 0; b < n; ++b)
    for (int iy = 0; iy < h; ++iy)
      for (int ix = 0; ix < w; ++ix)
        for (int ch = 0; ch < c; ++ch) {
          double& m = y[detail::sz(std::int64_t{b} * c + ch)];
          m = std::max(m, x[detail::at(b, iy, ix, ch, h, w, c)]);
        }
  return y;
}

/// Fully connected: [n, in] x [in, out] + bias[out] -> [n, out].
inline tensor dense(const tensor& x, int n, int in, const tensor& kernel, int out,
                    const tensor& bias) {
  detail::expect_size(x, std::int64_t{n} * in, "dense input");
  detail::expect_size(kernel, std::int64_t{in} * out, "dense kernel");
  detail::expect_size(bias, out, "dense bias");
  tensor y(detail::sz(std::int64_t{n} * out));
  for (int b = 0; b < n; ++b)
    for (int o = 0; o < out; ++o) {
      double acc = bias[detail::sz(o)];
      for (int i = 0; i < in; ++i)
        acc += x[detail::sz(std::int64_t{b} * in + i)] *
               kernel[detail::sz(std::int64_t{i} * out + o)];
      y[detail::sz(std::int64_t{b} * out + o)] = acc;
    }
  return y;
}

/// Softmax over the last axis of a [rows, c] tensor (the row max is subtracted first).
inline tensor softmax(const tensor& x, int rows, int c) {
  detail::expect_size(x, std::int64_t{rows} * c, "softmax input");
  tensor y(x.size());
  for (int r = 0; r < rows; ++r) {
    const auto first = x.begin() + static_cast<std::ptrdiff_t>(r) * c;
    const double m = *std::max_element(first, first + c);
    double sum = 0;
    for (int i = 0; i < c; ++i) {
      const std::size_t j = detail::sz(std::int64_t{r} * c + i);
      y[j] = std::exp(x[j] - m);
      sum += y[j];
    }
    for (int i = 0; i < c; ++i) y[detail::sz(std::int64_t{r} * c + i)] /= sum;
  }
  return y;
}

/// The parameters of one node, in the layouts above; fields a node does not use stay empty.
struct params {
  tensor kernel, bias, scale, shift, mean, variance;
};

/// The reference of an op the library does not have (a user-defined op): node `n`'s output
/// from its inputs' outputs, in order.
using other_op = std::function<tensor(const ipu::node& n, const std::vector<const tensor*>& inputs)>;

/// Whether dropout `d` keeps value `i` of its input.
using dropout_mask = std::function<bool(const ipu::input_dropout& d, std::int64_t i)>;

/// Runs a node table (e.g. `ipu::node_table_v<G>`) on `input`, node by node, in `double`.
/// `params_of(i)` gives node i's parameters (called for conv, batch_norm and dense nodes);
/// `other` computes the nodes of ops not in the library; with `training`, batch norms
/// normalise with the batch's statistics (`batch_norm_training`), and with `keeps` too, an
/// input with a dropout is read with the values `keeps` drops zeroed and the others divided by
/// `1 - rate`. Every node's output is kept; the last
/// node's is returned. Throws std::invalid_argument if a tensor's size disagrees with the
/// table, or for an op it has no reference for.
template <std::size_t N>
tensor forward(const std::array<ipu::node, N>& table, const tensor& input,
               const std::function<params(int node_index)>& params_of, const other_op& other = {},
               bool training = false, const dropout_mask& keeps = {}) {
  static_assert(N > 0, "empty node table");
  std::vector<tensor> out(N);
  for (std::size_t i = 0; i < N; ++i) {
    const ipu::node& nd = table[i];
    const auto d = [&](int axis) { return static_cast<int>(nd.in.dim[detail::sz(axis)]); };
    const auto src = [&](int j) -> const tensor& {
      if (j < 0 || detail::sz(j) >= i)
        throw std::invalid_argument("ipu_test::ref::forward: node " + std::to_string(i) +
                                    " reads node " + std::to_string(j));
      return out[detail::sz(j)];
    };
    std::array<tensor, ipu::max_inputs> dropped{};
    const auto in = [&](int k) -> const tensor& {  // input k as the node reads it
      const ipu::input_dropout& drop = nd.dropout[detail::sz(k)];
      const tensor& x = src(nd.inputs[detail::sz(k)]);
      if (!training || !keeps || !drop.active()) return x;
      tensor& y = dropped[detail::sz(k)];
      y = x;
      for (std::size_t e = 0; e < y.size(); ++e) y[e] = keeps(drop, static_cast<std::int64_t>(e)) ? x[e] / (1 - drop.rate) : 0.0;
      return y;
    };
    const int self = static_cast<int>(i);
    const padding pad{nd.layer.pad.same, nd.layer.pad.top, nd.layer.pad.bottom, nd.layer.pad.left, nd.layer.pad.right};
    const ipu::layer_params& l = nd.layer;
    const window win{l.kernel.h, l.kernel.w, l.stride.h, l.stride.w, l.dilation.h, l.dilation.w};
    const auto is = [&]<class Op>(Op) { return nd.kind == ipu::op_of<Op>; };
    namespace ops = ipu::ops;
    if (is(ops::input{})) {
      out[i] = input;
    } else if (is(ops::conv{})) {
      const params p = params_of(self);
      out[i] = conv2d(in(0), d(0), d(1), d(2), d(3), p.kernel, win, l.filters, l.groups, pad, p.bias);
    } else if (is(ops::batch_norm{})) {
      const params p = params_of(self);
      out[i] = training ? batch_norm_training(in(0), static_cast<int>(nd.in.channels()), p.scale, p.shift)
                        : batch_norm(in(0), static_cast<int>(nd.in.channels()), p.scale, p.shift, p.mean, p.variance);
    } else if (is(ops::relu{})) {
      out[i] = relu(in(0));
    } else if (is(ops::max_pool{})) {
      out[i] = max_pool(in(0), d(0), d(1), d(2), d(3), win, pad);
    } else if (is(ops::avg_pool{})) {
      out[i] = avg_pool(in(0), d(0), d(1), d(2), d(3), win, pad, l.count_padding);
    } else if (is(ops::adaptive_avg_pool{})) {
      out[i] = adaptive_avg_pool(in(0), d(0), d(1), d(2), d(3), static_cast<int>(nd.out.dim[1]),
                                 static_cast<int>(nd.out.dim[2]));
    } else if (is_activation(ipu::name_of(nd.kind))) {
      out[i] = in(0);
      for (double& v : out[i]) v = activation(ipu::name_of(nd.kind), v);
    } else if (is(ops::global_max_pool{})) {
      out[i] = global_max_pool(in(0), d(0), d(1), d(2), d(3));
    } else if (is(ops::flatten{}) || is(ops::reshape{})) {
      out[i] = in(0);  // NHWC row-major is [N, H*W*C] row-major
    } else if (is(ops::leaky_relu{})) {
      out[i] = in(0);
      for (double& v : out[i]) v = v < 0 ? nd.layer.alpha * v : v;
    } else if (is(ops::global_avg_pool{})) {
      out[i] = global_avg_pool(in(0), d(0), d(1), d(2), d(3));
    } else if (is(ops::dense{})) {
      const params p = params_of(self);
      out[i] = dense(in(0), d(0), d(1), p.kernel, nd.layer.filters, p.bias);
    } else if (is(ops::softmax{})) {
      const int c = static_cast<int>(nd.in.channels());
      out[i] = softmax(in(0), static_cast<int>(nd.in.elements() / c), c);
    } else if (is(ops::add{}) || is(ops::multiply{})) {
      const auto dims = [](const ipu::shape& s) {
        return std::array<std::int64_t, 4>{s.dim[0], s.dim[1], s.rank == 4 ? s.dim[2] : 1, s.rank == 4 ? s.dim[3] : 1};
      };
      tensor y = in(0);
      for (int k = 1; k < nd.input_count; ++k) {
        const int j = nd.inputs[detail::sz(k)];
        const tensor operand = broadcast(in(k), dims(table[detail::sz(j)].out), dims(nd.out));
        y = is(ops::add{}) ? add(y, operand) : multiply(y, operand);
      }
      out[i] = std::move(y);
    } else if (is(ops::concat{})) {
      std::vector<const tensor*> parts;
      std::vector<int> channels;
      for (int k = 0; k < nd.input_count; ++k) {
        parts.push_back(&in(k));
        channels.push_back(static_cast<int>(table[detail::sz(nd.inputs[detail::sz(k)])].out.channels()));
      }
      out[i] = concat(parts, channels, nd.out.elements() / nd.out.channels());
    } else if (other) {
      std::vector<const tensor*> inputs;
      for (int k = 0; k < nd.input_count; ++k) inputs.push_back(&in(k));
      out[i] = other(nd, inputs);
    } else {
      throw std::invalid_argument("ipu_test::ref::forward: no reference for op " + std::string(ipu::name_of(nd.kind)));
    }
    const std::string what = "node " + std::to_string(i) + " output";
    detail::expect_size(out[i], nd.out.elements(), what.c_str());
  }
  return out[N - 1];
}

/// The largest relative error max_i |actual[i] - expected[i]| / max(|expected[i]|, floor).
/// `floor` keeps near-zero expected values from dominating: by default (a negative value)
/// it is 1e-3 * max_i |expected[i]|, or 1 if every expected value is 0 (then the result is
/// the largest absolute error). A NaN in `actual` makes the result NaN. `T` is anything
/// explicitly convertible to double (float, double, ipu::half).
template <class T>
double max_relative_error(const std::vector<double>& expected, const T* actual, std::size_t n,
                          double floor = -1) {
  detail::expect_size(expected, static_cast<std::int64_t>(n), "expected tensor");
  if (floor < 0) {
    double largest = 0;
    for (double e : expected) largest = std::max(largest, std::abs(e));
    floor = largest > 0 ? 1e-3 * largest : 1.0;
  }
  double worst = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double e = expected[i];
    const double err = std::abs(static_cast<double>(actual[i]) - e) / std::max(std::abs(e), floor);
    if (std::isnan(err)) return err;  // std::max would skip it
    worst = std::max(worst, err);
  }
  return worst;
}

}  // namespace ipu_test::ref
