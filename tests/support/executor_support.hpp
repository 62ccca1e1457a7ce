// Helpers for the executor tests: targets with few tiles, random inputs, and a bridge from
// ipu::weights to the independent reference in reference.hpp.
#pragma once

#include "support/reference.hpp"
#include "support/targets.hpp"

#include <ipu/ipu.hpp>

#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace ipu_test {

/// A grouped residual net of every op kind but the joins: convolutions (grouped and not),
/// batch norms, ReLUs, a residual block, both poolings, global pooling, dense and softmax.
template <class T>
constexpr auto grouped_net = ipu::input<T, 2, 12, 12, 8>
    | ipu::nn::conv<16, 3, 1> | ipu::nn::batch_norm | ipu::nn::relu
    | ipu::nn::residual(ipu::nn::conv<16, 1> | ipu::nn::batch_norm | ipu::nn::relu
                        | ipu::nn::conv<16, 3, 1, 4> | ipu::nn::batch_norm | ipu::nn::relu
                        | ipu::nn::conv<16, 1> | ipu::nn::batch_norm)
    | ipu::nn::relu | ipu::nn::max_pool<3, 2>
    | ipu::nn::conv<32, 3, 2, 8> | ipu::nn::batch_norm | ipu::nn::relu | ipu::nn::avg_pool<3, 1>
    | ipu::nn::global_avg_pool | ipu::nn::dense<10> | ipu::nn::softmax;

/// A deterministic input with values in [-1, 1], or bytes in [0, 255] for an 8-bit stream.
template <class G>
ipu::input_tensor_t<G> random_input(std::uint64_t seed) {
  ipu::input_tensor_t<G> x;
  std::mt19937_64 rng(seed);
  for (auto& v : x) {
    if constexpr (ipu::input_stream_v<G>.eight_bit) {
      v = static_cast<std::uint8_t>(rng() >> 56);
    } else {
      v = static_cast<ipu::element_type_t<G>>(static_cast<double>(rng() >> 11) * 0x1.0p-52 - 1.0);
    }
  }
  return x;
}

/// The values `G`'s input step holds for input `x`, in double: from an 8-bit stream,
/// `(x / 255 - mean[c]) / stddev[c]` as `ipu::input_stream` defines it.
template <class G>
std::vector<double> input_values(const ipu::input_tensor_t<G>& x) {
  constexpr ipu::input_stream s = ipu::input_stream_v<G>;
  const std::size_t channels = static_cast<std::size_t>(ipu::input_shape_v<G>[3]);
  std::vector<double> in(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double v = static_cast<double>(static_cast<float>(x[i]));
    const std::size_t c = i % channels;
    in[i] = s.eight_bit ? (v / 255.0 - s.mean[c].value()) / s.stddev[c].value() : v;
  }
  return in;
}

/// The reference output of `G` for input `x` and weights `w`, computed in double; `other`
/// computes the nodes of user-defined ops.
template <class G>
std::vector<double> reference_output(const ipu::input_tensor_t<G>& x, const ipu::weights<G>& w,
                                     const ref::other_op& other = {}) {
  const std::vector<double> in = input_values<G>(x);
  const auto to_double = [](std::span<const float> v) { return std::vector<double>(v.begin(), v.end()); };
  return ref::forward(ipu::node_table_v<G>, in, [&](int j) {
    const ipu::layer_weights& l = w.of_node(j);
    ref::params p;
    if (l.kind() == ipu::op_of<ipu::ops::conv> || l.kind() == ipu::op_of<ipu::ops::dense>) {
      p.kernel = to_double(l["kernel"]);
      if (l.contains("bias")) p.bias = to_double(l["bias"]);
    } else {
      p.scale = to_double(l["scale"]);
      p.shift = to_double(l["shift"]);
      p.mean = to_double(l["mean"]);
      p.variance = to_double(l["variance"]);
    }
    return p;
  }, other);
}

/// What the summary prints after layer `Layer`'s op name (`ops::<op>::describe`): ` 3x3/2`.
template <class Layer>
std::string summary_column() {
  std::ostringstream os;
  ipu::ops::info_of<typename Layer::op_type>.describe(os, ipu::layer_params_of<Layer>);
  return os.str();
}

}  // namespace ipu_test

namespace ipu_test {

/// The faithful engine's measured memory against the plan, as data (`check_memory`).
struct memory_comparison {
  long compared = 0;    ///< (tile, step) pairs compared
  long mismatches = 0;  ///< pairs whose bytes differ, and tiles whose buffers reach past the tile
  std::string first;    ///< the first mismatching pair, described
};

namespace detail {
/// Compares every tile's measured bytes (`usage(ipu, tile, step)`), by category, at every
/// step of its IPU with the plan's `usage`, and each tile's measured extent (`extent(ipu,
/// tile)`) with its memory. Compiled once per plan size: the plan is read through a volatile
/// pointer, so that the optimiser does not specialise the loops for each (constant) plan.
template <class Plan>
memory_comparison compare_memory(const Plan* plan_address, const std::function<ipu::memory_bytes(int, int, int)>& usage,
                                 const std::function<std::int64_t(int, int)>& extent) {
  const Plan* volatile opaque = plan_address;
  const Plan& plan = *opaque;
  memory_comparison r;
  for (int i = 0; i < Plan::ipu_count; ++i) {
    for (int t = 0; t < plan.chip.tiles; ++t)
      if (extent(i, t) > plan.chip.bytes_per_tile) ++r.mismatches;
    for (int s = 0; s < static_cast<int>(plan.size); ++s) {
      if (plan.at(s).ipu != i) continue;
      for (int t = 0; t < plan.chip.tiles; ++t) {
        const ipu::memory_bytes measured = usage(i, t, s), planned = plan.usage(i, t, s);
        ++r.compared;
        if (measured == planned) continue;
        if (r.mismatches++ == 0)
          r.first = "ipu " + std::to_string(i) + " tile " + std::to_string(t) + " step " + std::to_string(s) + " (" +
                    std::string(plan.at(s).path.view()) + "): measured " + std::to_string(measured.total()) +
                    " planned " + std::to_string(planned.total()) + " (exchange " + std::to_string(measured.exchange) +
                    " vs " + std::to_string(planned.exchange) + ", activations " +
                    std::to_string(measured.activations) + " vs " + std::to_string(planned.activations) + ")";
      }
    }
  }
  return r;
}
}  // namespace detail

/// Faithful engine `e`'s measured memory against its plan.
template <class Engine>
memory_comparison compare_memory(const Engine& e) {
  return detail::compare_memory(&Engine::plan(), [&](int i, int t, int s) { return e.measured_usage(i, t, s); },
                                [&](int i, int t) { return e.measured_extent(i, t); });
}

/// Every pair was compared equal, and no buffer reached past its tile's memory.
inline void check_memory(const memory_comparison& m) {
  INFO(m.first);
  CHECK(m.compared > 0);
  CHECK(m.mismatches == 0);
}

/// Faithful mode: every tile's measured bytes, by category, at every step of its IPU equal
/// the plan's `usage`, and no buffer reached past the tile's memory.
template <class Engine>
void check_memory_matches_plan(const Engine& e) {
  check_memory(compare_memory(e));
}

/// Whether two tensors hold the same bits.
template <class Output>
bool same_bits(const Output& a, const Output& b) {
  return std::memcmp(a.data(), b.data(), a.size() * sizeof(a[0])) == 0;
}

/// One graph run in both modes, with its reference output, as data: the checks on it
/// (`check_runs`) are compiled once rather than per graph.
struct two_runs {
  std::vector<double> expected;  ///< the reference output
  std::vector<double> fast;      ///< the fast mode's output, widened
  bool same_bits = false;        ///< fast and faithful outputs hold the same bits
  memory_comparison memory;      ///< the faithful engine's memory against the plan
};

/// Runs `G` on `Target` with random weights and input, in fast mode on `fast_threads` threads
/// and in faithful mode on 2; `other` computes user-defined ops in the reference.
template <class G, class Target, ipu::options Opts = ipu::options{}>
two_runs run_both(unsigned fast_threads = 2, const ref::other_op& other = {}) {
  const auto w = ipu::weights<G>::random(7);
  const auto x = random_input<G>(11);
  two_runs r;
  r.expected = reference_output<G>(x, w, other);
  ipu::engine<G, Target, Opts> fast{w, {ipu::execution_mode::fast, fast_threads}};
  ipu::engine<G, Target, Opts> faithful{w, {ipu::execution_mode::faithful, 2}};
  const auto y = fast.infer(x);
  r.fast.resize(y.size());
  for (std::size_t i = 0; i < y.size(); ++i) r.fast[i] = static_cast<double>(static_cast<float>(y[i]));
  r.same_bits = same_bits(y, faithful.infer(x));
  r.memory = compare_memory(faithful);
  return r;
}

/// The runs agree with the reference to `tolerance` (relative, values below `floor` compared
/// against it; by default a thousandth of the largest expected value), with each other bit for
/// bit, and with the plan.
inline void check_runs(const two_runs& r, double tolerance, double floor = -1) {
  REQUIRE(r.fast.size() == r.expected.size());
  const double error = ref::max_relative_error(r.expected, r.fast.data(), r.fast.size(), floor);
  INFO("max relative error " << error << " (tolerance " << tolerance << ")");
  CHECK(error < tolerance);
  CHECK(r.same_bits);
  check_memory(r.memory);
}

/// Runs `G` on `Target` in both modes and checks them against the reference (`other` for
/// user-defined ops), each other and the plan.
template <class G, class Target, ipu::options Opts = ipu::options{}>
void check_engine(double tolerance, const ref::other_op& other = {}) {
  check_runs(run_both<G, Target, Opts>(2, other), tolerance);
}

}  // namespace ipu_test
