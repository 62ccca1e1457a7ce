#pragma once
/// \file
/// `ipu::runtime::program`: what an engine executes, copied out of a compile-time plan into
/// run-time containers, so that the executor is compiled once per element type rather than
/// once per graph.

#include <ipu/graph/node.hpp>
#include <ipu/plan/allocation.hpp>
#include <ipu/plan/memory.hpp>
#include <ipu/plan/model.hpp>
#include <ipu/plan/plan.hpp>
#include <ipu/target/chip.hpp>
#include <ipu/target/layout.hpp>
#include <ipu/target/options.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace ipu::runtime {

/// The plan, as run-time data. Node `j` is step `j` on its IPU; the accessors take node
/// indices and IPU indices without checking them.
struct program {
  std::vector<node> nodes;             ///< the graph's node table, in step order
  std::vector<node_plan> plans;        ///< `plans[j]`: the plan of node `j`
  std::vector<plan_step> steps;        ///< the steps, in the order they run
  std::vector<std::vector<int>> held;  ///< `held[ipu][j]`, as `plan::held`
  chip_spec chip{};                    ///< the chip of each IPU of the target
  options opts{};                      ///< the options the plan was made with
  int ipus = 1;                        ///< \brief IPUs of the target
  /// Always-live bytes the plan gives each tile: `always[ipu][tile]`.
  std::vector<std::vector<memory_bytes>> always;
  /// `dynamic_base[ipu][tile]`: where the tile's dynamic region starts (`plan::dynamic_base`).
  std::vector<std::vector<std::int64_t>> dynamic_base;
  /// `activation_offset[ipu][j]`: node `j`'s output (or copy) on IPU `ipu`, in bytes from each
  /// tile's dynamic base; -1 where the IPU never holds it (`plan::activation_offset`).
  std::vector<std::vector<std::int64_t>> activation_offset;

  /// Copies plan `p` of a graph of `N` nodes on `Ipus` IPUs, with each tile's always-live
  /// bytes (`plan::always_live_on`) and dynamic base.
  template <std::size_t N, int Ipus>
  static program from(const plan<N, Ipus>& p) {
    program r;
    r.nodes.assign(p.table->begin(), p.table->end());
    r.plans.assign(p.nodes.begin(), p.nodes.end());
    r.steps.assign(p.steps.begin(), p.steps.end());
    for (const auto& h : p.held) r.held.emplace_back(h.begin(), h.end());
    r.chip = p.chip;
    r.opts = p.opts;
    r.ipus = Ipus;
    r.always.resize(static_cast<std::size_t>(Ipus));
    r.dynamic_base.resize(static_cast<std::size_t>(Ipus));
    for (int i = 0; i < Ipus; ++i)
      for (int t = 0; t < p.chip.tiles; ++t) {
        r.always[static_cast<std::size_t>(i)].push_back(p.always_live_on(i, t));
        r.dynamic_base[static_cast<std::size_t>(i)].push_back(r.always_layout(i, t, [](int, int, std::int64_t) {}));
      }
    for (const auto& offsets : p.activation_offset) r.activation_offset.emplace_back(offsets.begin(), offsets.end());
    return r;
  }

  /// Nodes of the graph, which is the number of steps.
  int size() const noexcept { return static_cast<int>(nodes.size()); }
  /// Node `j`.
  const node& at(int j) const noexcept { return nodes[static_cast<std::size_t>(j)]; }
  /// The plan of node `j`.
  const node_plan& plan_of(int j) const noexcept { return plans[static_cast<std::size_t>(j)]; }
  /// The last step at which IPU `ipu` holds node `j`'s output (or its copy); -1 if never.
  int held_to(int ipu, int j) const noexcept {
    return held[static_cast<std::size_t>(ipu)][static_cast<std::size_t>(j)];
  }
  /// The mapping of node `j`'s output as held on IPU `ipu` (its own, or the copy).
  const tensor_mapping& mapping_on(int ipu, int j) const noexcept {
    return at(j).ipu == ipu ? plan_of(j).output : plan_of(j).copy;
  }
  /// The storage order of node `j`'s output as held on IPU `ipu` (see `mapping_on`).
  storage_order order_on(int ipu, int j) const noexcept { return storage_order::of(mapping_on(ipu, j), at(j).out); }
  /// The always-live region of `tile` on IPU `ipu`, as the plan lays it out
  /// (`lay_out_always_live`): calls `place(j, w, offset)` for each weight tensor; returns the
  /// tile's dynamic base.
  template <class Place>
  std::int64_t always_layout(int ipu, int tile, Place&& place) const {
    return lay_out_always_live(std::span<const node>(nodes), std::span<const node_plan>(plans), ipu, tile,
                               always[static_cast<std::size_t>(ipu)][static_cast<std::size_t>(tile)].code, place);
  }
  /// Whether IPU `ipu` holds a copy of node `j`'s output made on another IPU.
  bool copies(int ipu, int j) const noexcept { return at(j).ipu != ipu && held_to(ipu, j) >= j; }
};

}  // namespace ipu::runtime
