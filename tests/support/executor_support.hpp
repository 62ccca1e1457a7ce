// Helpers for the executor tests: targets with few tiles, random inputs, and a bridge from
// ipu::weights to the independent reference in reference.hpp.
#pragma once

#include "support/reference.hpp"

#include <ipu/ipu.hpp>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace ipu_test {

/// A Mk2 with `Tiles` tiles and `Ipus` IPUs, as the IPU Model allows.
template <int Tiles, int Ipus = 1>
struct small_target {
  static constexpr ipu::chip_spec chip = ipu::with_tiles(ipu::mk2::chip, Tiles);
  static constexpr int ipus = Ipus;
  static constexpr const char* name = "mk2-small";
};

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

/// A deterministic input with values in [-1, 1].
template <class G>
ipu::input_tensor_t<G> random_input(std::uint64_t seed) {
  ipu::input_tensor_t<G> x;
  std::mt19937_64 rng(seed);
  for (auto& v : x) v = static_cast<ipu::element_type_t<G>>(static_cast<double>(rng() >> 11) * 0x1.0p-52 - 1.0);
  return x;
}

/// The reference output of `G` for input `x` and weights `w`, computed in double; `other`
/// computes the nodes of user-defined ops.
template <class G>
std::vector<double> reference_output(const ipu::input_tensor_t<G>& x, const ipu::weights<G>& w,
                                     const ref::other_op& other = {}) {
  std::vector<double> in(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) in[i] = static_cast<double>(static_cast<float>(x[i]));
  const auto to_double = [](std::span<const float> v) { return std::vector<double>(v.begin(), v.end()); };
  return ref::forward(ipu::node_table_v<G>, in, [&](int j) {
    const ipu::layer_weights& l = w.of_node(j);
    ref::params p;
    if (l.kind() == ipu::op_of<ipu::ops::conv>) {
      p.kernel = to_double(l["kernel"]);
    } else if (l.kind() == ipu::op_of<ipu::ops::dense>) {
      p.kernel = to_double(l["kernel"]);
      p.bias = to_double(l["bias"]);
    } else {
      p.scale = to_double(l["scale"]);
      p.shift = to_double(l["shift"]);
      p.mean = to_double(l["mean"]);
      p.variance = to_double(l["variance"]);
    }
    return p;
  }, other);
}

}  // namespace ipu_test

namespace ipu_test {

/// Faithful mode: every tile's measured bytes, by category, at every step of its IPU equal
/// the plan's `usage`, and no buffer reached past the tile's memory.
template <class Engine>
void check_memory_matches_plan(const Engine& e) {
  const auto& plan = Engine::plan();
  const int tiles = Engine::target_type::chip.tiles;
  long mismatches = 0, compared = 0;
  std::string first;
  for (int i = 0; i < Engine::target_type::ipus; ++i) {
    for (int t = 0; t < tiles; ++t)
      if (e.measured_extent(i, t) > Engine::target_type::chip.bytes_per_tile) ++mismatches;
    for (int s = 0; s < static_cast<int>(plan.size); ++s) {
      if (plan.at(s).ipu != i) continue;
      for (int t = 0; t < tiles; ++t) {
        const ipu::memory_bytes measured = e.measured_usage(i, t, s), planned = plan.usage(i, t, s);
        ++compared;
        if (measured == planned) continue;
        if (mismatches++ == 0)
          first = "ipu " + std::to_string(i) + " tile " + std::to_string(t) + " step " + std::to_string(s) + " (" +
                  std::string(plan.at(s).path.view()) + "): measured " + std::to_string(measured.total()) +
                  " planned " + std::to_string(planned.total()) + " (exchange " + std::to_string(measured.exchange) +
                  " vs " + std::to_string(planned.exchange) + ", activations " +
                  std::to_string(measured.activations) + " vs " + std::to_string(planned.activations) + ")";
      }
    }
  }
  INFO(first);
  CHECK(compared > 0);
  CHECK(mismatches == 0);
}

/// Whether two tensors hold the same bits.
template <class Output>
bool same_bits(const Output& a, const Output& b) {
  return std::memcmp(a.data(), b.data(), a.size() * sizeof(a[0])) == 0;
}

/// Runs `G` on `Target` in both modes and checks them against the reference (`other` for
/// user-defined ops), each other and the plan.
template <class G, class Target, ipu::options Opts = ipu::options{}>
void check_engine(double tolerance, const ref::other_op& other = {}) {
  const auto w = ipu::weights<G>::random(7);
  const auto x = random_input<G>(11);
  const std::vector<double> expected = reference_output<G>(x, w, other);

  ipu::engine<G, Target, Opts> fast{w, {ipu::execution_mode::fast, 2}};
  ipu::engine<G, Target, Opts> faithful{w, {ipu::execution_mode::faithful, 2}};
  const auto y = fast.infer(x);
  REQUIRE(y.size() == expected.size());
  const double error = ref::max_relative_error(expected, y.data(), y.size());
  INFO("max relative error " << error);
  CHECK(error < tolerance);
  CHECK(same_bits(y, faithful.infer(x)));
  check_memory_matches_plan(faithful);
}

}  // namespace ipu_test
