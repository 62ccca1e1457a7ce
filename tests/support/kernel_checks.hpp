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
#include <functional>
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

/// Runs `run` and checks its runs as `check` says, with `description` in failure messages;
/// an executor error fails this graph only.
inline void check_described(const std::string& description, double tolerance, const std::function<two_runs()>& run) {
  INFO(description);
  try {
    const two_runs r = run();
    double largest = 0;  // values below a tenth of the largest are compared against that tenth
    for (double e : r.expected) largest = std::max(largest, std::abs(e));
    check_runs(r, tolerance, largest > 0 ? 0.1 * largest : 1.0);
  } catch (const std::exception& e) {
    FAIL_CHECK("exception: " << e.what());
  }
}

/// Runs `G` on `Target` in both modes: against the reference to `tolerance`, fast against
/// faithful bit for bit, and the faithful engine's memory against the plan.
template <class G, class Target, ipu::options Opts = ipu::options{}>
void check(double tolerance) {
  check_described(describe(ipu::node_table_v<G>, ipu::plan_v<G, Target, Opts>.nodes, Target::chip.tiles), tolerance,
                  [] { return run_both<G, Target, Opts>(3); });
}

/// Each of `Nets<T>` in f32 (to 1e-5) and in f16 with f32 partials (to 1e-2), on `Target`.
template <class Target, template <class> class... Nets>
void check_nets() {
  (check<Nets<ipu::f32>, Target>(1e-5), ...);
  (check<Nets<ipu::f16>, Target>(1e-2), ...);
}

}  // namespace ipu_test
