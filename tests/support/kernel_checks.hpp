// The check every kernel test runs: one graph, both modes, against the reference, bit for bit,
// and memory against the plan. Shared by tests/executor/kernels_*.cpp.
#pragma once

#include "support/executor_support.hpp"

#include <ipu/ipu.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <span>
#include <sstream>
#include <string>
#include <vector>

namespace ipu_test {

/// `input[2, 7, 5, 6] f32 | conv<12,3,1,1> [2, 7, 5, 12] {tiles 16, blocks 2} | ...`, for
/// failure messages.
inline std::string describe(std::span<const ipu::node> nodes, std::span<const ipu::node_plan> plans, int tiles) {
  std::ostringstream os;
  for (std::size_t j = 0; j < nodes.size(); ++j) {
    const ipu::node& n = nodes[j];
    const ipu::node_plan& p = plans[j];
    if (n.kind == ipu::op_of<ipu::ops::input>) {
      os << "input" << n.out << ' ' << ipu::name_of(n.type);
      continue;
    }
    os << " | " << n.path.view() << ' ' << ipu::name_of(n.kind);
    n.kind.info->describe(os, n.layer);
    os << ' ' << n.out << " {tiles " << p.output.tiles() << ", blocks " << p.output.blocks;
    if (p.step.kind == ipu::step_kind::conv)
      os << ", serial " << p.step.serial << ", taps " << p.step.taps << ", channel parts " << p.step.in_parts;
    if (p.step.kind == ipu::step_kind::remap) os << ", remap";
    os << '}';
  }
  os << " on " << tiles << " tiles";
  return os.str();
}

/// The largest relative error, values below a tenth of the largest expected one being compared
/// against that tenth (see the top of the file).
inline double scaled_error(const std::vector<double>& expected, const std::vector<double>& actual) {
  double largest = 0;
  for (double e : expected) largest = std::max(largest, std::abs(e));
  return ipu_test::ref::max_relative_error(expected, actual.data(), actual.size(), largest > 0 ? 0.1 * largest : 1.0);
}

template <class Tensor>
std::vector<double> widened(const Tensor& y) {
  std::vector<double> v(y.size());
  for (std::size_t i = 0; i < y.size(); ++i) v[i] = static_cast<double>(static_cast<float>(y[i]));
  return v;
}

/// Runs `G` on `Target` in both modes: against the reference to `tolerance`, fast against
/// faithful bit for bit, and the faithful engine's memory against the plan.
template <class G, class Target, ipu::options Opts = ipu::options{}>
void check(double tolerance) {
  using engine_t = ipu::engine<G, Target, Opts>;
  INFO(describe(ipu::node_table_v<G>, engine_t::plan().nodes, Target::chip.tiles));
  const auto w = ipu::weights<G>::random(7);
  const auto x = ipu_test::random_input<G>(11);
  try {  // an executor error fails this graph only
    engine_t fast{w, {ipu::execution_mode::fast, 3}};
    engine_t faithful{w, {ipu::execution_mode::faithful, 2}};
    const auto y = fast.infer(x);
    const auto z = faithful.infer(x);
    const std::vector<double> expected = ipu_test::reference_output<G>(x, w);
    REQUIRE(y.size() == expected.size());
    const double error = scaled_error(expected, widened(y));
    INFO("max relative error " << error << " (tolerance " << tolerance << ")");
    CHECK(error < tolerance);
    CHECK(std::memcmp(y.data(), z.data(), y.size() * sizeof(y[0])) == 0);
    ipu_test::check_memory_matches_plan(faithful);
  } catch (const std::exception& e) {
    FAIL_CHECK("exception: " << e.what());
  }
}

/// Each of `Nets<T>` in f32 (to 1e-5) and in f16 with f32 partials (to 1e-2), on `Target`.
template <class Target, template <class> class... Nets>
void check_nets() {
  (check<Nets<ipu::f32>, Target>(1e-5), ...);
  (check<Nets<ipu::f16>, Target>(1e-2), ...);
}

}  // namespace ipu_test
