#pragma once
/// \file
/// The kernels of the element-wise ops whose function is written over lanes (`Op::of<L>`, with
/// the node's hyper-parameters for `ops::leaky_relu`: every activation but ReLU, whose kernel
/// is in `ops/kernels/relu.hpp`): faithful mode's are `ops::unary_kernel`'s, one float at a
/// time (`kernels::scalar_lanes`); fast mode's run the same function on vectors
/// (`kernels::simd::lanes`), which gives the same bits lane by lane. Their backward passes, in
/// both modes, run the derivative on vectors: it is written over lanes too (`Op::d_of<L>`).

#include <ipu/kernels/simd.hpp>
#include <ipu/ops/gelu.hpp>
#include <ipu/ops/gelu_tanh.hpp>
#include <ipu/ops/hard_sigmoid.hpp>
#include <ipu/ops/hard_swish.hpp>
#include <ipu/ops/kernels/kernel.hpp>
#include <ipu/ops/leaky_relu.hpp>
#include <ipu/ops/relu6.hpp>
#include <ipu/ops/sigmoid.hpp>
#include <ipu/ops/silu.hpp>
#include <ipu/ops/tanh.hpp>
#include <ipu/ops/unary.hpp>

#include <cstdint>

namespace ipu::ops {

/// The kernel of `Op`, an element-wise op with `Op::of<L>` (see the file comment).
template <class Op>
struct lanes_unary_kernel : unary_kernel<Op> {
  /// `Op::of<L>` at `x`, with the node's hyper-parameters `p` if it takes them.
  template <class L>
  static typename L::value value(typename L::value x, const layer_params& p) noexcept {
    if constexpr (requires { Op::template of<L>(x, p); }) {
      return Op::template of<L>(x, p);
    } else {
      return Op::template of<L>(x);
    }
  }
  /// `Op::d_of<L>` at `x`, with the node's hyper-parameters `p` if it takes them.
  template <class L>
  static typename L::value derivative(typename L::value x, const layer_params& p) noexcept {
    if constexpr (requires { Op::template d_of<L>(x, p); }) {
      return Op::template d_of<L>(x, p);
    } else {
      return Op::template d_of<L>(x);
    }
  }
  /// The whole output, in parts over the threads, a vector at a time.
  template <class Ctx>
  static void fast(const Ctx& c) {
    namespace simd = kernels::simd;
    const auto* x = c.input();
    auto* y = c.output();
    c.parallel_ranges(c.n.out.elements(), [&](std::int64_t e0, std::int64_t e1) {
      for (std::int64_t e = e0; e < e1; e += simd::vec::width) {
        const int n = simd::lanes_from(e1 - e);
        simd::store_rounded(y + e, value<simd::lanes>(simd::load_widened(x + e, n), c.n.layer), n);
      }
    });
  }
  /// Training: `dx += dy * df(x)`, `x` the forward input, a vector at a time (`Op::d_of<L>`),
  /// with the bits of one float at a time; stored where nothing was added to `dx` yet (as
  /// adding to zeros).
  template <class Ctx>
  static void backward(const Ctx& c) {
    namespace simd = kernels::simd;
    const auto [dx, assign] = c.grad_input_target();
    if (dx == nullptr) return;
    const auto* x = c.input();
    const float* dy = c.grad_output();
    parallel_chunks(c, c.n.out.elements(), [&](std::int64_t e0, std::int64_t e1) {
      for (std::int64_t e = e0; e < e1; e += simd::vec::width) {
        const int n = simd::lanes_from(e1 - e);
        const simd::vec g = simd::mul(simd::load(dy + e, n), derivative<simd::lanes>(simd::load_widened(x + e, n), c.n.layer));
        simd::store(dx + e, simd::add(assign ? simd::zero() : simd::load(dx + e, n), g), n);
      }
    });
  }
};

/// The kernel of `relu6`; in a fused convolution's epilogue, the epilogue's last operation.
struct relu6::kernel : lanes_unary_kernel<relu6> {
  /// Node `k` fused into a convolution's epilogue: ReLU6 last.
  template <class T, class Ctx>
  static void fuse(kernels::epilogue<T>& e, const Ctx&, int, int) {
    e.activation = kernels::activation_kind::relu6;
  }
};
/// The kernel of `hard_sigmoid`.
struct hard_sigmoid::kernel : lanes_unary_kernel<hard_sigmoid> {};
/// The kernel of `hard_swish`.
struct hard_swish::kernel : lanes_unary_kernel<hard_swish> {};
/// The kernel of `silu`; in a fused convolution's epilogue, the epilogue's last operation.
struct silu::kernel : lanes_unary_kernel<silu> {
  /// Node `k` fused into a convolution's epilogue: SiLU last.
  template <class T, class Ctx>
  static void fuse(kernels::epilogue<T>& e, const Ctx&, int, int) {
    e.activation = kernels::activation_kind::silu;
  }
};
/// The kernel of `sigmoid`.
struct sigmoid::kernel : lanes_unary_kernel<sigmoid> {};
/// The kernel of `tanh`.
struct tanh::kernel : lanes_unary_kernel<tanh> {};
/// The kernel of `gelu`.
struct gelu::kernel : lanes_unary_kernel<gelu> {};
/// The kernel of `gelu_tanh`.
struct gelu_tanh::kernel : lanes_unary_kernel<gelu_tanh> {};
/// The kernel of `leaky_relu`.
struct leaky_relu::kernel : lanes_unary_kernel<leaky_relu> {};

}  // namespace ipu::ops
