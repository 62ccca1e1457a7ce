// The user-defined op of docs/graph-language.md ("Your own ops"), compiled and run. Keep the
// two in step (tests/docs/examples_in_step.py checks that they are). The op is defined here,
// outside ipu, and runs in both modes against the independent reference.
#include <ipu/ipu.hpp>
namespace nn = ipu::nn;

#include <catch2/catch.hpp>

#include "support/executor_support.hpp"

#include <cmath>
#include <cstdint>
#include <string_view>
#include <vector>

// A namespace of its own: the guides' examples that run engines are one translation unit
// (tests/CMakeLists.txt).
namespace user_op_doc {

namespace my_ops {

/// TensorFlow's `tf.nn.softsign` (PyTorch's `nn.Softsign`): `x / (1 + |x|)`.
struct softsign : ipu::ops::op_base {              // shape-preserving, no weights, on its input's tiles
  static constexpr std::string_view name = "softsign";  // paths: softsign1, softsign2, ...

  struct kernel : ipu::ops::kernel_base {          // how the host computes it
    template <class T>
    static void apply(const T* x, T* y, std::int64_t count) {
      for (std::int64_t e = 0; e < count; ++e) {
        const float v = static_cast<float>(x[e]);  // in f32, rounded once to the element type
        y[e] = static_cast<T>(v / (1.0f + std::abs(v)));
      }
    }
    template <class Ctx>  // fast mode: the whole tensor, in parts over the host threads
    static void fast(const Ctx& c) {
      const auto* x = c.input();
      auto* y = c.output();
      c.parallel_ranges(c.n.out.elements(), [&](std::int64_t e0, std::int64_t e1) { apply(x + e0, y + e0, e1 - e0); });
    }
    template <class Ctx>  // faithful mode: each tile's elements, from its own memory
    static void compute(const Ctx& c) {
      apply(c.operand(c.n.input()), c.output(), c.last - c.first);
    }
  };
};

/// The layer users write: `| my_ops::squash`.
struct squash_t {
  using op_type = softsign;
};
inline constexpr squash_t squash{};

}  // namespace my_ops

namespace {

template <class T>
constexpr auto net = ipu::input<T, 2, 12, 12, 8>
    | nn::conv<16, 3> | nn::batch_norm | my_ops::squash
    | nn::residual(nn::conv<16, 1> | nn::batch_norm | my_ops::squash)
    | nn::global_avg_pool | nn::dense<10> | nn::softmax;
using net_t = decltype(net<ipu::f32>);

static_assert(ipu::node_table_v<net_t>[3].kind == ipu::op_of<my_ops::softsign>);
static_assert(ipu::node_table_v<net_t>[3].path.view() == "softsign1");
static_assert(ipu::node_table_v<net_t>[6].path.view() == "block1.softsign1");

/// The reference: softsign in double.
ipu_test::ref::tensor softsign_reference(const ipu::node&, const std::vector<const ipu_test::ref::tensor*>& inputs) {
  ipu_test::ref::tensor y = *inputs[0];
  for (double& v : y) v = v / (1 + std::abs(v));
  return y;
}

}  // namespace

TEST_CASE("a user-defined op lowers, plans and runs in both modes against the reference") {
  // Fast and faithful modes, bit-identical; faithful memory as planned.
  ipu_test::check_engine<net_t, ipu_test::small_target<16>>(1e-5, softsign_reference);
  ipu_test::check_engine<decltype(net<ipu::f16>), ipu_test::small_target<16>>(1e-2, softsign_reference);
}

TEST_CASE("a user-defined op is named, planned and reported like the library's own") {
  constexpr const auto& plan = ipu::plan_v<net_t, ipu_test::small_target<16>>;
  static_assert(plan.fits);
  static_assert(plan.plan_of(3).cycles.compute > 0);  // the default cost: one vector per cycle
  static_assert(plan.codelets[0] == 7);  // conv, batch_norm, softsign, add, global_avg_pool, dense, softmax
  const std::string summary = ipu::summary<net_t>().str();
  CHECK(summary.find("softsign") != std::string::npos);
}

}  // namespace user_op_doc
