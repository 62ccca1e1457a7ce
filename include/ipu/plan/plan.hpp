#pragma once
/// \file
/// The memory plan: `ipu::plan_v<G, Target, Options>`, a `constexpr` value computed from the
/// node table, and `ipu::fits_v`.
///
/// Each IPU runs its nodes as a sequence of steps (one per node, in table order). At step `s`,
/// tile `t` of IPU `i` holds
///
///   - **always live:** the weights of every node on `i` (each weight tensor mapped with the
///     linear rule from tile 0) and the code: the fixed-cost model of `options::fixed`, with
///     vertex state and exchange code for every step the tile works in;
///   - **not always live:** the activations live at `s` (an output lives on its IPU from the step
///     producing it to its last reader there; a copy on another IPU lives from that step to its
///     last reader on that IPU), and the transients of step `s` (`model.hpp`), plus a send buffer
///     when the step's output is read on another IPU.
///
/// A tile's peak is its most bytes over the steps; an IPU's peak is the largest tile peak. The
/// IPU's peak is found exactly without visiting every tile at every step: a step's bound (the
/// sum of each term's largest tile) orders the steps, the tiles of a step are visited only
/// while its bound can beat the best peak found, and steps that hold the same mappings (the
/// repeated blocks of a network) are visited once.

#include <ipu/core/dtype.hpp>
#include <ipu/graph/node.hpp>
#include <ipu/graph/queries.hpp>
#include <ipu/ops/registry.hpp>
#include <ipu/plan/cycles.hpp>
#include <ipu/plan/liveness.hpp>
#include <ipu/plan/diagnostics.hpp>
#include <ipu/plan/memory.hpp>
#include <ipu/plan/model.hpp>
#include <ipu/plan/node_plan.hpp>
#include <ipu/target/chip.hpp>
#include <ipu/target/mapping.hpp>
#include <ipu/target/options.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace ipu {

/// The plan of a graph of `N` nodes on `Ipus` IPUs. Obtain it as `ipu::plan_v<G, Target, Options>`;
/// steps and nodes share indices (step `j` runs node `j` of the table on that node's IPU).
///
/// \tparam N     nodes in the graph's node table
/// \tparam Ipus  IPUs of the target
template <std::size_t N, int Ipus>
struct plan {
  const std::array<node, N>* table = nullptr;  ///< the graph's node table
  chip_spec chip{};                  ///< the chip of each of the target's IPUs
  options opts{};                    ///< the options the plan was made with
  std::array<node_plan, N> nodes{};  ///< the plan of each node, indexed as the node table
  std::array<plan_step, N> steps{};  ///< the steps, in the order they run: one forward step per node
  /// `held[i][j]`: the last step node `j`'s output (on its own IPU) or a copy of it (on another)
  /// is held on IPU `i`; -1 if never.
  std::array<std::array<int, N>, static_cast<std::size_t>(Ipus)> held{};
  /// The memory plan of each IPU, indexed by IPU.
  std::array<ipu_memory, static_cast<std::size_t>(Ipus)> ipus{};
  int warnings = 0;   ///< nodes whose transients exceed the available memory proportion
  bool fits = true;   ///< every IPU fits
  plan_error error{};  ///< why the graph cannot be planned (`plan_v` then fails to compile); `kind == none` if it can

  static constexpr std::size_t size = N;  ///< nodes (and steps) of the plan
  static constexpr int ipu_count = Ipus;  ///< IPUs of the target

  /// Node \p j of the table (`0 <= j < N`, unchecked).
  constexpr const node& at(int j) const noexcept { return (*table)[static_cast<std::size_t>(j)]; }
  /// The plan of node \p j (`0 <= j < N`, unchecked).
  constexpr const node_plan& plan_of(int j) const noexcept { return nodes[static_cast<std::size_t>(j)]; }
  /// `held[ipu][j]`: the last step node \p j's output or its copy is held on IPU \p ipu; -1 if never.
  constexpr int held_to(int ipu, int j) const noexcept {
    return held[static_cast<std::size_t>(ipu)][static_cast<std::size_t>(j)];
  }

  /// Weight bytes of node `j` on `tile` of its IPU.
  constexpr std::int64_t weight_bytes_on(int j, int tile) const noexcept {
    const node_plan& p = plan_of(j);
    std::int64_t b = 0;
    for (int w = 0; w < p.weight_tensors; ++w)
      b += p.weights[static_cast<std::size_t>(w)].elements_on(tile) * p.weight_bytes[static_cast<std::size_t>(w)];
    return b;
  }
  /// Bytes of node `j`'s output (or of its copy) on `tile` of IPU `ipu`.
  constexpr std::int64_t activation_bytes_on(int ipu, int j, int tile) const noexcept {
    const node_plan& p = plan_of(j);
    const tensor_mapping& m = at(j).ipu == ipu ? p.output : p.copy;
    return m.elements_on(tile) * size_of(at(j).type);
  }
  /// Vertex state and exchange code of step `j` on `tile` of its IPU (zero if the tile does
  /// not work in it); the control entry every tile has is counted by `code_on`.
  constexpr std::int64_t step_code_on(int j, int tile) const noexcept {
    const node_plan& p = plan_of(j);
    if (at(j).kind == op::input || tile >= p.work.tiles()) return 0;
    return opts.fixed.vertex_state_bytes * chip.workers + opts.fixed.exchange_code_bytes;
  }
  /// Transients and send buffer of step `j` on `tile` of its IPU.
  constexpr memory_bytes step_transients_on(int j, int tile) const noexcept {
    const node_plan& p = plan_of(j);
    const transient_bytes t = transient_on(p.step, p.work.units.elements_on(tile));
    memory_bytes m;
    m.temporaries = t.temporaries;
    m.exchange = t.exchange + (p.sends ? p.copy.elements_on(tile) * size_of(at(j).type) : 0);
    return m;
  }

  /// The code every tile of IPU `ipu` holds: runtime, a codelet per op kind, control per step.
  constexpr std::int64_t shared_code_on(int ipu) const noexcept {
    std::array<bool, op_count> kinds{};
    std::int64_t code = opts.fixed.runtime_bytes;
    for (int j = 0; j < static_cast<int>(N); ++j) {
      if (at(j).ipu != ipu) continue;
      code += opts.fixed.control_bytes;
      kinds[static_cast<std::size_t>(at(j).kind)] = at(j).kind != op::input;
    }
    for (bool k : kinds) code += k ? opts.fixed.codelet_bytes : 0;
    return code;
  }
  /// Always-live bytes of `tile` on IPU `ipu`: weights and code.
  constexpr memory_bytes always_live_on(int ipu, int tile) const noexcept {
    memory_bytes m;
    m.code = shared_code_on(ipu);
    for (int j = 0; j < static_cast<int>(N); ++j) {
      if (at(j).ipu != ipu) continue;
      m.weights += weight_bytes_on(j, tile);
      m.code += step_code_on(j, tile);
    }
    return m;
  }
  /// Bytes of `tile` on IPU `ipu` while step `step` runs there, by category.
  constexpr memory_bytes usage(int ipu, int tile, int step) const noexcept {
    memory_bytes m = always_live_on(ipu, tile);
    for (int j = 0; j <= step; ++j)
      if (held_to(ipu, j) >= step) m.activations += activation_bytes_on(ipu, j, tile);
    if (at(step).ipu == ipu) m += step_transients_on(step, tile);
    return m;
  }
};

namespace detail {

/// One term of a step's memory on a tile: `bytes` times the elements `mapping` puts there.
struct live_term {
  tensor_mapping mapping{};
  std::int64_t bytes = 0;
  constexpr bool operator==(const live_term&) const = default;
};

/// Adds `bytes x mapping` to `terms[0, count)`, merging equal mappings.
template <std::size_t M>
constexpr void add_term(std::array<live_term, M>& terms, int& count, const tensor_mapping& m, std::int64_t bytes) {
  if (bytes == 0 || m.tiles() == 0) return;
  for (int k = 0; k < count; ++k)
    if (terms[static_cast<std::size_t>(k)].mapping == m) {
      terms[static_cast<std::size_t>(k)].bytes += bytes;
      return;
    }
  terms[static_cast<std::size_t>(count++)] = {m, bytes};
}

/// What a step holds besides the always-live bytes, in a form two steps can be compared by.
template <std::size_t M>
struct step_signature {
  std::array<live_term, M> live{};
  int count = 0;
  step_model step{};
  tensor_mapping work{};
  live_term send{};
  constexpr bool operator==(const step_signature&) const = default;
};

/// Plans node `j`: every output starts mapped element by element, then its op plans its step
/// (`ops::<op>::plan`); the fullest tile's transients follow from the step.
template <std::size_t N, int Ipus>
consteval void place_node(plan<N, Ipus>& p, int j) {
  const chip_spec& chip = p.chip;
  const node& n = p.at(j);
  node_plan& np = p.nodes[static_cast<std::size_t>(j)];
  np = node_plan{};
  np.copy = map_elements(n.out.elements(), size_of(n.type), chip);
  np.output = np.work = np.copy;
  np.step.element_bytes = size_of(n.type);
  np.step.partial_bytes = size_of(p.opts.partials);
  ops::plan_inputs in{n, chip, p.opts};
  in.mappings[0] = &np.copy;  // the graph input's own
  for (int k = 0; k < n.input_count; ++k) {
    const int src = n.inputs[static_cast<std::size_t>(k)];
    const node_plan& q = p.nodes[static_cast<std::size_t>(src)];
    in.mappings[static_cast<std::size_t>(k)] = p.at(src).ipu == n.ipu ? &q.output : &q.copy;
  }
  ops::visit(n.kind, [&]<class Op>(Op) { Op::plan(in, np); });
  np.transient_max = transient_on(np.step, np.work.units.max_elements_per_tile());
}

/// Adds `bytes` per element of `m` to `acc`, tile by tile (one pass over its parts).
template <std::size_t T>
constexpr void accumulate(std::array<std::int64_t, T>& acc, const tensor_mapping& m, std::int64_t bytes) noexcept {
  const linear_mapping& u = m.units;
  if (u.parts == 0) return;
  const std::int64_t per_grain = u.grain * m.unit_elements * bytes;
  std::int64_t prev = 0;
  for (std::int64_t part = 0; part < u.parts; ++part) {
    const std::int64_t next = (part + 1) * u.grains / u.parts;
    acc[static_cast<std::size_t>(part)] += (next - prev) * per_grain;
    prev = next;
  }
  acc[static_cast<std::size_t>(u.parts - 1)] -= (u.grains * u.grain - u.elements) * m.unit_elements * bytes;
}

/// Adds the transients of `step` on the tiles of `work` to `acc`.
template <std::size_t T>
constexpr void accumulate_transients(std::array<std::int64_t, T>& acc, const step_model& step,
                                     const tensor_mapping& work) noexcept {
  const linear_mapping& u = work.units;
  if (step.kind == step_kind::none || u.parts == 0) return;
  std::int64_t prev = 0, cached_units = -1, cached_bytes = 0;
  for (std::int64_t part = 0; part < u.parts; ++part) {
    const std::int64_t next = (part + 1) * u.grains / u.parts;
    const std::int64_t units = part + 1 == u.parts ? u.elements - prev * u.grain : (next - prev) * u.grain;
    if (units != cached_units) cached_units = units, cached_bytes = transient_on(step, units).total();
    acc[static_cast<std::size_t>(part)] += cached_bytes;
    prev = next;
  }
}

/// The plan of IPU `ipu`: always-live bytes per tile, totals, and the exact peak.
template <std::size_t N, int Ipus, int Tiles>
consteval ipu_memory plan_ipu(const plan<N, Ipus>& p, int ipu) {
  constexpr std::size_t T = static_cast<std::size_t>(Tiles);
  ipu_memory im;
  im.capacity = p.chip.bytes_per_tile;
  const auto mapping_on_ipu = [&](int j) -> const tensor_mapping& {
    return p.at(j).ipu == ipu ? p.plan_of(j).output : p.plan_of(j).copy;
  };

  // Always live: weights (each distinct mapping once) and code (a difference array over tiles).
  std::array<std::int64_t, T> always{};
  std::array<std::int64_t, T + 1> code_steps{};
  std::array<live_term, 2 * N + 1> distinct{};
  int distinct_count = 0;
  for (int j = 0; j < static_cast<int>(N); ++j) {
    if (p.at(j).ipu != ipu) continue;
    const node_plan& np = p.plan_of(j);
    ++im.nodes;
    im.cycles += np.cycles.total();
    for (int w = 0; w < np.weight_tensors; ++w) {
      const tensor_mapping& m = np.weights[static_cast<std::size_t>(w)];
      const std::int64_t bytes = np.weight_bytes[static_cast<std::size_t>(w)];
      add_term(distinct, distinct_count, m, bytes);
      im.totals.weights += m.elements() * bytes;
    }
    const std::int64_t per_step = p.step_code_on(j, 0);
    code_steps[0] += per_step;
    code_steps[static_cast<std::size_t>(std::min(Tiles, np.work.tiles()))] -= per_step;
  }
  for (int k = 0; k < distinct_count; ++k)
    accumulate(always, distinct[static_cast<std::size_t>(k)].mapping, distinct[static_cast<std::size_t>(k)].bytes);
  const std::int64_t fixed_code = p.shared_code_on(ipu);
  std::int64_t running = 0;
  for (std::size_t t = 0; t < T; ++t) {
    running += code_steps[t];
    im.totals.code += fixed_code + running;
    always[t] += fixed_code + running;
    im.max_always_live = std::max(im.max_always_live, always[t]);
  }

  // Not always live: a bound per step (the sum of each term's fullest tile), and the sums
  // over tiles; live sets are kept incrementally, so this is one pass over the steps.
  struct candidate {
    std::int64_t bound = 0;
    int step = 0;
  };
  std::array<candidate, N> order{};
  std::array<std::int64_t, N> dies_max{}, dies_total{};
  std::int64_t live_max = 0, live_total = 0;
  int count = 0;
  const auto tile_sum = [](const step_model& step, const linear_mapping& u, bool temporaries) {
    if (u.parts == 0) return std::int64_t{0};
    const auto f = [&](std::int64_t units) {
      const transient_bytes t = transient_on(step, units);
      return temporaries ? t.temporaries : t.exchange;
    };
    const std::int64_t q = u.grains / u.parts, r = u.grains % u.parts;
    const std::int64_t last = u.end(u.parts - 1) - u.begin(u.parts - 1);
    const std::int64_t big = r > 0 ? r - 1 : 0, small = u.parts - 1 - big;
    return big * f((q + 1) * u.grain) + small * f(q * u.grain) + f(last);
  };
  for (int s = 0; s < static_cast<int>(N); ++s) {
    if (p.held_to(ipu, s) >= s) {
      const tensor_mapping& m = mapping_on_ipu(s);
      const std::int64_t bytes = size_of(p.at(s).type);
      live_max += m.max_elements_per_tile() * bytes;
      live_total += m.elements() * bytes;
      dies_max[static_cast<std::size_t>(p.held_to(ipu, s))] += m.max_elements_per_tile() * bytes;
      dies_total[static_cast<std::size_t>(p.held_to(ipu, s))] += m.elements() * bytes;
    }
    if (p.at(s).ipu == ipu) {
      const node_plan& np = p.plan_of(s);
      const std::int64_t bytes = size_of(p.at(s).type);
      const std::int64_t send = np.sends ? np.copy.max_elements_per_tile() * bytes : 0;
      order[static_cast<std::size_t>(count++)] = {im.max_always_live + live_max + np.transient_max.total() + send, s};
      im.totals.activations = std::max(im.totals.activations, live_total);
      im.totals.temporaries = std::max(im.totals.temporaries, tile_sum(np.step, np.work.units, true));
      im.totals.exchange =
          std::max(im.totals.exchange, tile_sum(np.step, np.work.units, false) +
                                           (np.sends ? np.copy.elements() * bytes : 0));
    }
    live_max -= dies_max[static_cast<std::size_t>(s)];
    live_total -= dies_total[static_cast<std::size_t>(s)];
  }
  std::sort(order.begin(), order.begin() + count, [](const candidate& a, const candidate& b) {
    return a.bound != b.bound ? a.bound > b.bound : a.step < b.step;
  });

  // Exact peaks, in the order of the bounds, until no bound can beat the best peak. Steps
  // holding the same mappings as a visited one (the repeated blocks) reuse its peak.
  constexpr std::size_t M = 24;  // distinct live mappings a signature holds
  constexpr std::size_t S = 32;  // signatures remembered
  std::array<step_signature<M>, S> seen{};
  std::array<std::int64_t, S> seen_peak{};
  std::array<int, S> seen_tile{};
  int seen_count = 0;
  for (int c = 0; c < count; ++c) {
    const candidate cand = order[static_cast<std::size_t>(c)];
    if (im.peak_step >= 0 && (cand.bound < im.peak || (cand.bound == im.peak && cand.step > im.peak_step))) break;
    const node_plan& np = p.plan_of(cand.step);
    step_signature<M> sig;
    bool complete = true;
    for (int j = 0; j <= cand.step; ++j) {
      if (p.held_to(ipu, j) < cand.step) continue;
      if (sig.count == static_cast<int>(M)) {
        complete = false;
        break;
      }
      add_term(sig.live, sig.count, mapping_on_ipu(j), size_of(p.at(j).type));
    }
    sig.step = np.step;
    sig.work = np.work;
    if (np.sends) sig.send = {np.copy, size_of(p.at(cand.step).type)};
    std::int64_t peak = -1;
    int tile = 0;
    for (int k = 0; complete && k < seen_count; ++k)
      if (seen[static_cast<std::size_t>(k)] == sig) {
        peak = seen_peak[static_cast<std::size_t>(k)];
        tile = seen_tile[static_cast<std::size_t>(k)];
        break;
      }
    if (peak < 0) {
      std::array<std::int64_t, T> acc = always;
      if (complete) {
        for (int k = 0; k < sig.count; ++k)
          accumulate(acc, sig.live[static_cast<std::size_t>(k)].mapping, sig.live[static_cast<std::size_t>(k)].bytes);
      } else {
        for (int j = 0; j <= cand.step; ++j)
          if (p.held_to(ipu, j) >= cand.step) accumulate(acc, mapping_on_ipu(j), size_of(p.at(j).type));
      }
      accumulate_transients(acc, np.step, np.work);
      accumulate(acc, sig.send.mapping, sig.send.bytes);
      for (std::size_t t = 0; t < T; ++t)
        if (acc[t] > peak) peak = acc[t], tile = static_cast<int>(t);
      if (complete && seen_count < static_cast<int>(S)) {
        seen[static_cast<std::size_t>(seen_count)] = sig;
        seen_peak[static_cast<std::size_t>(seen_count)] = peak;
        seen_tile[static_cast<std::size_t>(seen_count++)] = tile;
      }
    }
    if (peak > im.peak || (peak == im.peak && (im.peak_step < 0 || cand.step < im.peak_step))) {
      im.peak = peak;
      im.peak_tile = tile;
      im.peak_step = cand.step;
    }
  }
  if (im.peak_step < 0) {  // no node on this IPU: its peak is its always-live memory
    for (std::size_t t = 0; t < T; ++t)
      if (always[t] > im.peak) im.peak = always[t], im.peak_tile = static_cast<int>(t);
  } else {
    im.at_peak = p.usage(ipu, im.peak_tile, im.peak_step);
  }
  im.fits = im.peak <= im.capacity;
  return im;
}

/// Fast mode's fusion, with f32 partials (the packed kernels' epilogue): each convolution or
/// dense layer absorbs the batch norm, residual add and ReLU that follow it, in that order and
/// each at most once (`ops::<op>::epilogue_order`), as long as each absorbed step reads the
/// previous one's output, nothing else reads that output, and an add's other operand exists
/// before the convolution runs.
template <std::size_t N, int Ipus>
constexpr void plan_fusion(plan<N, Ipus>& p) {
  constexpr int count = static_cast<int>(N);
  std::array<int, N> readers{};
  for (int j = 0; j < count; ++j) {
    node_plan& np = p.nodes[static_cast<std::size_t>(j)];
    np.fused_into = -1;
    np.fused_end = j;
    for (int src : p.at(j).sources()) ++readers[static_cast<std::size_t>(src)];
  }
  if (p.opts.partials != dtype::f32) return;
  const auto head = [](op kind) { return ops::visit(kind, []<class Op>(Op) { return Op::epilogue_head; }); };
  const auto order = [](op kind) { return ops::visit(kind, []<class Op>(Op) { return Op::epilogue_order; }); };
  for (int j = 0; j < count; ++j) {
    if (!head(p.at(j).kind)) continue;
    int end = j, last = 0;
    for (int k = j + 1; k < count; ++k) {
      const node& n = p.at(k);
      // A join absorbs as the epilogue's add: its other operands exist before the convolution.
      bool others_ready = true;
      for (int src : n.sources()) others_ready = others_ready && (src == end || src < j);
      if (!n.reads(end) || order(n.kind) <= last || readers[static_cast<std::size_t>(end)] != 1 ||
          n.ipu != p.at(j).ipu || !others_ready || n.input_count > 2 || (n.input_count == 2 && n.inputs[0] == n.inputs[1]))
        break;
      p.nodes[static_cast<std::size_t>(k)].fused_into = j;
      end = k;
      last = order(n.kind);
    }
    p.nodes[static_cast<std::size_t>(j)].fused_end = end;
    j = end;
  }
}

/// Everything but the IPUs' memory, which `plan_ipu` adds, one IPU per constant evaluation.
template <std::size_t N, int Ipus>
consteval plan<N, Ipus> make_plan(const std::array<node, N>& table, const chip_spec& chip, const options& opts) {
  plan<N, Ipus> p;
  p.table = &table;
  p.chip = chip;
  p.opts = opts;
  if (!opts.available_memory_proportion.valid_proportion()) {
    p.error = {plan_error_kind::bad_memory_proportion, -1, opts.available_memory_proportion.num,
               opts.available_memory_proportion.den};
    p.fits = false;
    return p;
  }
  for (int j = 0; j < static_cast<int>(N); ++j)
    if (table[static_cast<std::size_t>(j)].ipu >= Ipus) {
      p.error = {plan_error_kind::ipu_outside_system, j, table[static_cast<std::size_t>(j)].ipu, Ipus};
      p.fits = false;
      return p;
    }
  for (int j = 0; j < static_cast<int>(N); ++j) place_node(p, j);
  for (auto& h : p.held) h.fill(-1);
  const std::array<int, N> last = last_use(table);
  for (int j = 0; j < static_cast<int>(N); ++j) {
    const node& n = table[static_cast<std::size_t>(j)];
    p.held[static_cast<std::size_t>(n.ipu)][static_cast<std::size_t>(j)] = j;
    if (j + 1 == static_cast<int>(N)) p.held[static_cast<std::size_t>(n.ipu)][static_cast<std::size_t>(j)] = last[static_cast<std::size_t>(j)];
    for (int src : n.sources()) {
      int& h = p.held[static_cast<std::size_t>(n.ipu)][static_cast<std::size_t>(src)];
      h = std::max(h, j);
      if (table[static_cast<std::size_t>(src)].ipu != n.ipu) p.nodes[static_cast<std::size_t>(src)].sends = true;
    }
  }
  for (int j = 0; j < static_cast<int>(N); ++j) {  // once whether each step sends is known
    node_plan& np = p.nodes[static_cast<std::size_t>(j)];
    np.cycles = cycles_of(table[static_cast<std::size_t>(j)], np, chip, opts);
    p.warnings += np.over_bound ? 1 : 0;
  }
  for (int j = 0; j < static_cast<int>(N); ++j)
    p.steps[static_cast<std::size_t>(j)] = {j, step_phase::forward, table[static_cast<std::size_t>(j)].ipu};
  plan_fusion(p);
  return p;
}

template <class G, class Target, options Opts>
struct plan_info {
  using graph_t = std::remove_cvref_t<G>;
  static constexpr std::size_t size = graph_info<graph_t>::size;
  static constexpr plan<size, Target::ipus> base =
      make_plan<size, Target::ipus>(graph_info<graph_t>::nodes, Target::chip, Opts);
  static constexpr bool valid =
      report_plan_error<base.error, base.error.node >= 0 ? base.at(base.error.node).path : path_string{}>();
  template <int Ipu>
  static constexpr ipu_memory ipu_plan = plan_ipu<size, Target::ipus, Target::chip.tiles>(base, Ipu);
  static constexpr plan<size, Target::ipus> complete = [] {
    if constexpr (!valid) {
      return base;
    } else {
      return []<int... I>(std::integer_sequence<int, I...>) {
        plan<size, Target::ipus> p = base;
        p.ipus = {ipu_plan<I>...};
        for (const ipu_memory& m : p.ipus) p.fits = p.fits && m.fits;
        return p;
      }(std::make_integer_sequence<int, Target::ipus>{});
    }
  }();
  static constexpr const plan<size, Target::ipus>& value = complete;
};

/// The first IPU of `P` that does not fit, or -1.
template <std::size_t N, int Ipus>
constexpr int first_overfull_ipu(const plan<N, Ipus>& p) noexcept {
  for (int i = 0; i < Ipus; ++i)
    if (!p.ipus[static_cast<std::size_t>(i)].fits) return i;
  return -1;
}

template <class G, class Target, options Opts>
consteval bool require_fit() {
  constexpr const auto& p = plan_info<G, Target, Opts>::value;
  constexpr int ipu = first_overfull_ipu(p);
  if constexpr (ipu < 0) {
    return true;
  } else {
    constexpr ipu_memory m = p.ipus[static_cast<std::size_t>(ipu)];
    return report_out_of_memory<ipu, m, m.peak_step >= 0 ? p.at(m.peak_step).path : path_string("always-live")>();
  }
}

}  // namespace detail

/// The memory plan of graph `G` on `Target` with `Opts`, computed at compile time.
template <Graph G, Target T, options Opts = options{}>
inline constexpr const auto& plan_v = detail::plan_info<G, T, Opts>::value;

/// Whether every tile of every IPU of `T` holds `G`'s plan.
template <Graph G, Target T, options Opts = options{}>
inline constexpr bool fits_v = plan_v<G, T, Opts>.fits;

/// `true` when `G` fits `T`; otherwise a compile error naming the IPU, the tile, the layer at
/// the tile's peak, the largest category and the bytes needed and available. Use it as
/// `static_assert(ipu::require_fit<G, ipu::mk2>);`.
template <Graph G, Target T, options Opts = options{}>
inline constexpr bool require_fit = detail::require_fit<std::remove_cvref_t<G>, T, Opts>();

}  // namespace ipu
