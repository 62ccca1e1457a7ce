#pragma once
/// \file
/// The memory plan: `ipu::plan_v<G, Target, Options>`, a `constexpr` value computed from the
/// node table, and `ipu::fits_v`.
///
/// Each IPU runs its nodes as a sequence of steps (one per node, in table order); the nodes of
/// an `ipu::on_host` block run on the host, and take no tile memory but the copies of their
/// outputs on the IPUs that read them. At step `s`, tile `t` of IPU `i` holds
///
///   - **always live:** the weights of every node on `i` (each weight tensor mapped with the
///     linear rule from tile 0) and the code: the fixed-cost model of `options::fixed`, with
///     vertex state and exchange code for every step the tile works in;
///   - **not always live:** the activations live at `s` (an output lives on its IPU from the step
///     producing it to its last reader there; a copy on another IPU lives from that step to its
///     last reader on that IPU), and the transients of step `s` (`model.hpp`), plus a send buffer
///     when the step's output is read on another IPU.
///
/// The plan is also the allocation (`allocation.hpp`): it gives every buffer its offset on
/// every tile, and the faithful executor places each buffer there. A tile's peak is the
/// highest byte its buffers reach, which is at least its most bytes in use at any step
/// (`usage`): buffers are aligned, and one buffer's room serves its fullest tile. An IPU's peak
/// is the largest tile peak; it is what must fit. It is found without visiting every tile for
/// every buffer: buffers are visited from the highest down while one can still beat the best
/// peak found.

#include <ipu/core/dtype.hpp>
#include <ipu/graph/node.hpp>
#include <ipu/graph/queries.hpp>
#include <ipu/ops/input.hpp>
#include <ipu/ops/op.hpp>
#include <ipu/plan/allocation.hpp>
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
#include <span>
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
  /// `activation_offset[i][j]`: the offset of node `j`'s output (or of its copy) on every tile of
  /// IPU `i`, in bytes from the tile's dynamic base (`dynamic_base`); -1 where `i` never holds
  /// it. The offsets of a step's transients are its `node_plan::buffers`.
  std::array<std::array<std::int64_t, N>, static_cast<std::size_t>(Ipus)> activation_offset{};
  /// `codelets[i]`: the ops with a step on IPU `i` (the input only from an 8-bit stream), each
  /// of which puts its codelets on every tile of it.
  std::array<int, static_cast<std::size_t>(Ipus)> codelets{};
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

  /// Bytes host step `j` (`ipu::on_host`) moves over the host link: each input held on an IPU,
  /// to the host, and its output to each IPU that reads it; 0 for a step on an IPU.
  constexpr std::int64_t host_bytes(int j) const noexcept {
    const node& n = at(j);
    if (!n.on_host()) return 0;
    std::int64_t bytes = 0;
    for (int src : n.sources())
      if (!at(src).on_host()) bytes += at(src).out.elements() * size_of(at(src).type);
    for (int i = 0; i < Ipus; ++i)
      if (held_to(i, j) >= j) bytes += n.out.elements() * size_of(n.type);
    return bytes;
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
  /// Vertex state, worklists and exchange code of step `j` on `tile` of its IPU (zero if the
  /// tile does not work in it): per compute set of the step (two for a reduction in stages), a
  /// vertex and its exchange code; for a conv or dense step, a worklist entry per worker and
  /// kernel tap. The control entry every tile has is counted by `shared_code_on`.
  constexpr std::int64_t step_code_on(int j, int tile) const noexcept {
    const node_plan& p = plan_of(j);
    if ((at(j).kind == op_of<ops::input> && p.step.kind == step_kind::none) || tile >= p.work.tiles()) return 0;
    const fixed_costs& f = opts.fixed;
    const std::int64_t worklists =
        p.step.kind == step_kind::conv ? chip.workers * p.step.kernel_taps * f.worklist_entry_bytes : 0;
    return p.step.compute_sets() * (f.vertex_state_bytes + f.exchange_code_bytes) + worklists;
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

  /// The code every tile of IPU `ipu` holds: runtime, the codelets of each op (`codelets`),
  /// control per step.
  constexpr std::int64_t shared_code_on(int ipu) const noexcept {
    std::int64_t code = opts.fixed.runtime_bytes + codelets[static_cast<std::size_t>(ipu)] * opts.fixed.codelet_bytes;
    for (int j = 0; j < static_cast<int>(N); ++j) code += at(j).ipu == ipu ? opts.fixed.control_bytes : 0;
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
  /// The always-live region of `tile` on IPU `ipu` (`lay_out_always_live`): calls
  /// `place(j, w, offset)` for weight tensor `w` of each node `j` on the IPU, and returns the
  /// tile's dynamic base.
  template <class Place>
  constexpr std::int64_t always_layout(int ipu, int tile, Place&& place) const {
    return lay_out_always_live(std::span<const node>(*table), std::span<const node_plan>(nodes), ipu, tile,
                               always_live_on(ipu, tile).code, place);
  }
  /// Where the dynamic region of `tile` on IPU `ipu` starts: the end of its always-live region.
  constexpr std::int64_t dynamic_base(int ipu, int tile) const {
    return always_layout(ipu, tile, [](int, int, std::int64_t) {});
  }
  /// One past the highest byte of `tile` on IPU `ipu` that any buffer of the plan reaches (its
  /// aligned size from its offset). The largest over the tiles is the IPU's `ipu_memory::peak`.
  constexpr std::int64_t extent_on(int ipu, int tile) const {
    const std::int64_t base = dynamic_base(ipu, tile);
    std::int64_t extent = base;
    const auto reach = [&](std::int64_t offset, std::int64_t bytes) {
      if (bytes > 0) extent = std::max(extent, base + offset + aligned(bytes));
    };
    for (int j = 0; j < static_cast<int>(N); ++j) {
      if (held_to(ipu, j) >= j) reach(activation_offset[static_cast<std::size_t>(ipu)][static_cast<std::size_t>(j)], activation_bytes_on(ipu, j, tile));
      if (at(j).ipu != ipu) continue;
      const node_plan& p = plan_of(j);
      const transient_bytes t = transient_on(p.step, p.work.units.elements_on(tile));
      reach(p.buffers.temporaries, t.temporaries);
      reach(p.buffers.exchange, t.exchange);
      if (p.sends) reach(p.buffers.send, p.copy.elements_on(tile) * size_of(at(j).type));
    }
    return extent;
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

/// Weight tensors of one mapping and element size: `count` tensors of `bytes` per element.
struct weight_term {
  tensor_mapping mapping{};
  std::int64_t bytes = 0;
  int count = 0;
};

/// Plans node `j`: every output starts mapped element by element, then its op plans its step
/// (`ops::<op>::plan`); the fullest tile's transients follow from the step. Everything is
/// mapped over the tiles that are not I/O tiles (`options::io_tiles`).
template <std::size_t N, int Ipus>
constexpr void place_node(plan<N, Ipus>& p, int j) {
  const chip_spec chip = with_tiles(p.chip, p.chip.tiles - p.opts.io_tiles);
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
  n.kind.info->plan(in, np);
  np.transient_max = transient_on(np.step, np.work.units.max_elements_per_tile());
}

/// Calls `f(tile, units)` for each tile holding units of `u`, in ascending order.
template <class F>
constexpr void for_each_part(const linear_mapping& u, F&& f) {
  for (std::int64_t part = 0; part < u.parts; ++part)
    f(u.first_tile + static_cast<int>(part), u.part_elements(part));
}

/// Adds `bytes` per element of `m` to `acc`, tile by tile (one pass over its parts).
template <std::size_t T>
constexpr void accumulate(std::array<std::int64_t, T>& acc, const tensor_mapping& m, std::int64_t bytes) noexcept {
  const linear_mapping& u = m.units;
  if (u.parts == 0) return;
  const std::int64_t per_grain = u.grain * m.unit_elements * bytes, sp = u.segment_parts();
  for (std::int64_t segment = 0; segment < u.segments; ++segment) {
    std::int64_t* a = acc.data() + u.first_tile + segment * sp;
    std::int64_t prev = 0;
    for (std::int64_t part = 0; part < sp; ++part) {
      const std::int64_t next = (part + 1) * u.grains / sp;
      a[part] += (next - prev) * per_grain;
      prev = next;
    }
    a[sp - 1] -= (u.grains * u.grain - u.segment_elements()) * m.unit_elements * bytes;
  }
}

/// Adds to `acc` what aligning each tile's share of `m` (`bytes` per element) to
/// `buffer_alignment` adds, `count` times. When a grain is a whole number of aligned units,
/// only the last part can end off the alignment.
template <std::size_t T>
constexpr void accumulate_padding(std::array<std::int64_t, T>& acc, const tensor_mapping& m, std::int64_t bytes,
                                  int count) noexcept {
  const linear_mapping& u = m.units;
  if (u.parts == 0) return;
  const auto pad = [&](std::int64_t units) {
    const std::int64_t b = units * m.unit_elements * bytes;
    return count * (aligned(b) - b);
  };
  if (u.grain * m.unit_elements * bytes % buffer_alignment == 0) {
    for (std::int64_t last = u.segment_parts() - 1; last < u.parts; last += u.segment_parts())
      acc[static_cast<std::size_t>(u.first_tile + last)] += pad(u.part_elements(last));
    return;
  }
  for_each_part(u, [&](int tile, std::int64_t units) { acc[static_cast<std::size_t>(tile)] += pad(units); });
}

/// The temporaries and the exchange buffers of a step over all the tiles of its work `u`,
/// without visiting them: every segment alike, `big` parts of `q + 1` grains, `small` of `q`,
/// and the last.
constexpr transient_bytes transient_sum(const step_model& step, const linear_mapping& u) noexcept {
  if (u.parts == 0) return {};
  const std::int64_t sp = u.segment_parts(), q = u.grains / sp, r = u.grains % sp;
  const std::int64_t last = u.part_elements(sp - 1);
  const std::int64_t big = r > 0 ? r - 1 : 0, small = sp - 1 - big;
  const transient_bytes b = transient_on(step, (q + 1) * u.grain), s = transient_on(step, q * u.grain),
                        l = transient_on(step, last);
  return {u.segments * (big * b.temporaries + small * s.temporaries + l.temporaries),
          u.segments * (big * b.exchange + small * s.exchange + l.exchange)};
}

/// The always-live region of every tile of an IPU: `base[t]`, where tile `t`'s dynamic region
/// starts, and `always[t]`, its always-live bytes. Made from the distinct weight terms (each
/// `count` tensors of one mapping and element size) and a difference array of the code over the
/// tiles, `code_steps`, on top of `fixed_code` on every tile.
template <std::size_t T>
struct always_live_region {
  std::array<std::int64_t, T> base{}, always{};
  std::int64_t max_base = 0;     ///< the highest base
  std::int64_t max_always = 0;   ///< the most always-live bytes of a tile
  std::int64_t code_total = 0;   ///< the code summed over the tiles
};

template <std::size_t T, std::size_t D>
constexpr always_live_region<T> lay_out_always_live_region(const std::array<weight_term, D>& distinct, int distinct_count,
                                                           const std::array<std::int64_t, T + 1>& code_steps,
                                                           std::int64_t fixed_code) noexcept {
  always_live_region<T> r;
  for (int k = 0; k < distinct_count; ++k) {
    const weight_term& w = distinct[static_cast<std::size_t>(k)];
    accumulate(r.always, w.mapping, w.count * w.bytes);
    accumulate_padding(r.base, w.mapping, w.bytes, w.count);
  }
  // Tile by tile, through plain pointers: the constant evaluator pays for each call,
  // `std::array::operator[]` included.
  std::int64_t running = 0;
  const std::int64_t* steps = code_steps.data();
  std::int64_t *base = r.base.data(), *always = r.always.data();
  for (std::size_t t = 0; t < T; ++t) {
    running += steps[t];
    const std::int64_t code = fixed_code + running;
    r.code_total += code;
    base[t] += always[t] + aligned(code);
    always[t] += code;
    if (always[t] > r.max_always) r.max_always = always[t];
    if (base[t] > r.max_base) r.max_base = base[t];
  }
  return r;
}

/// Adds `count` tensors of mapping `m` and `bytes` per element to the distinct weight terms.
template <std::size_t D>
constexpr void add_weight_term(std::array<weight_term, D>& distinct, int& distinct_count, const tensor_mapping& m,
                               std::int64_t bytes, int count) noexcept {
  weight_term* terms = distinct.data();
  int k = 0;
  while (k < distinct_count && !(terms[k].bytes == bytes && terms[k].mapping == m)) ++k;
  if (k == distinct_count) terms[distinct_count++] = {m, bytes, 0};
  terms[k].count += count;
}

/// The peak of an IPU's allocation: the highest byte any buffer reaches on any tile, a tile's
/// dynamic region starting at `region.base`. Each of the `count` buffers is bounded by the
/// highest base among its tiles `tiles_of(k)` (a `[first, end)` pair; mappings start at tile 0)
/// plus its offset and room; buffers are visited from the highest bound down, while one can
/// still beat the best peak found, `visit(k, consider)` calling `consider(tile, offset, bytes)`
/// for each part of buffer `k`. Sets `peak` and `peak_tile`; returns the buffer reaching the
/// peak, or -1 when no buffer reaches above the always-live region.
template <std::size_t T, std::size_t M, class TilesOf, class Visit>
constexpr int find_peak(const always_live_region<T>& region, const std::array<std::int64_t, M>& offset,
                        const std::array<buffer_request, M>& requests, int count, TilesOf&& tiles_of, Visit&& visit,
                        std::int64_t& peak, int& peak_tile) {
  peak = region.max_base;
  const std::int64_t* base = region.base.data();
  for (std::size_t t = 0; t < T; ++t)
    if (base[t] == region.max_base) {
      peak_tile = static_cast<int>(t);
      break;
    }
  std::array<std::int64_t, T> highest_before_storage{};  // highest base of tiles [0, t]
  std::int64_t* highest_before = highest_before_storage.data();
  for (std::size_t t = 0; t < T; ++t) highest_before[t] = t > 0 && highest_before[t - 1] > base[t] ? highest_before[t - 1] : base[t];
  std::array<std::int64_t, M> keys{};  // bound descending, then buffer
  int bounded = 0;
  for (int k = 0; k < count; ++k) {
    const auto [first, end] = tiles_of(k);
    if (first >= end) continue;
    const std::int64_t highest = first == 0 ? highest_before[end - 1] : region.max_base;
    const std::int64_t bound = highest + offset[static_cast<std::size_t>(k)] + requests[static_cast<std::size_t>(k)].bytes;
    if (bound > peak) keys[static_cast<std::size_t>(bounded++)] = ((std::int64_t{1} << 46) - bound) << 16 | k;
  }
  // The next buffer is the least key left: a selection rather than a sort, as the first few
  // visits usually end the search, and each visit costs more than a pass over the keys.
  std::int64_t* left = keys.data();
  int top = -1;
  while (bounded > 0) {
    int least = 0;
    for (int c = 1; c < bounded; ++c) least = left[c] < left[least] ? c : least;
    const std::int64_t key = left[least];
    left[least] = left[--bounded];
    const int k = static_cast<int>(key & 0xffff);
    if ((std::int64_t{1} << 46) - (key >> 16) <= peak) break;
    visit(k, [&](int tile, std::int64_t offset_on_tile, std::int64_t bytes) {
      const std::int64_t reach = base[tile] + offset_on_tile + aligned(bytes);
      if (bytes > 0 && reach > peak) peak = reach, peak_tile = tile, top = k;
    });
  }
  return top;
}

/// The dynamic buffers of IPU `ipu` and their offsets: what `plan_ipu` adds to a plan.
template <std::size_t N>
struct ipu_allocation {
  ipu_memory memory{};
  std::array<std::int64_t, N> activation{};  ///< offset of each node's output (or copy); -1 if not held
  std::array<step_buffers, N> steps{};       ///< offsets of the transients of each step on the IPU
};

/// The plan of IPU `ipu`: always-live bytes per tile, totals, the offsets of its dynamic
/// buffers (`pack`), and its peak: the highest byte the allocation reaches on any tile.
template <std::size_t N, int Ipus, int Tiles>
constexpr ipu_allocation<N> plan_ipu(const plan<N, Ipus>& p, int ipu) {
  constexpr std::size_t T = static_cast<std::size_t>(Tiles);
  ipu_allocation<N> result;
  ipu_memory& im = result.memory;
  im.capacity = p.chip.bytes_per_tile;
  const auto mapping_on_ipu = [&](int j) -> const tensor_mapping& {
    return p.at(j).ipu == ipu ? p.plan_of(j).output : p.plan_of(j).copy;
  };

  // Always live: code (a difference array over tiles), then the weights (each distinct
  // mapping once).
  std::array<std::int64_t, T + 1> code_steps{};
  std::array<weight_term, 2 * N + 1> distinct{};
  int distinct_count = 0;
  for (int j = 0; j < static_cast<int>(N); ++j) {
    if (p.at(j).ipu != ipu) continue;
    const node_plan& np = p.plan_of(j);
    ++im.nodes;
    im.cycles += np.cycles.total();
    for (int w = 0; w < np.weight_tensors; ++w) {
      const tensor_mapping& m = np.weights[static_cast<std::size_t>(w)];
      const std::int64_t bytes = np.weight_bytes[static_cast<std::size_t>(w)];
      im.totals.weights += m.elements() * bytes;
      add_weight_term(distinct, distinct_count, m, bytes, 1);
    }
    const std::int64_t per_step = p.step_code_on(j, 0);
    code_steps[0] += per_step;
    code_steps[static_cast<std::size_t>(std::min(Tiles, np.work.tiles()))] -= per_step;
  }
  const always_live_region<T> region = lay_out_always_live_region<T>(distinct, distinct_count, code_steps, p.shared_code_on(ipu));
  im.totals.code = region.code_total;
  im.max_always_live = region.max_always;

  // Not always live: the IPU's totals, and the dynamic buffers to place: each output (or
  // copy) held on the IPU, and each step's scratch (temporaries, exchange, send buffer).
  std::array<buffer_request, 2 * N> requests{};
  std::array<int, 2 * N> owner{};  // the node of each request; -1 - node for a step's scratch
  int count = 0;
  const auto request = [&](int owned_by, int first, int last, std::int64_t bytes) {
    if (bytes <= 0) return;
    requests[static_cast<std::size_t>(count)] = {first, last, bytes};
    owner[static_cast<std::size_t>(count++)] = owned_by;
  };
  // A step's scratch: temporaries, then exchange, then send buffer, each with its fullest tile's room.
  const auto scratch = [&](int s) {
    const node_plan& np = p.plan_of(s);
    const std::int64_t send = np.sends ? aligned(np.copy.max_elements_per_tile() * size_of(p.at(s).type)) : 0;
    return std::array<std::int64_t, 3>{aligned(np.transient_max.temporaries), aligned(np.transient_max.exchange), send};
  };
  std::array<std::int64_t, N> dies_total{};
  std::int64_t live_total = 0;
  for (int s = 0; s < static_cast<int>(N); ++s) {
    const std::int64_t bytes = size_of(p.at(s).type);
    if (p.held_to(ipu, s) >= s) {
      const tensor_mapping& m = mapping_on_ipu(s);
      request(s, s, p.held_to(ipu, s), aligned(m.max_elements_per_tile() * bytes));
      live_total += m.elements() * bytes;
      dies_total[static_cast<std::size_t>(p.held_to(ipu, s))] += m.elements() * bytes;
    }
    if (p.at(s).ipu == ipu) {
      const node_plan& np = p.plan_of(s);
      const std::array<std::int64_t, 3> parts = scratch(s);
      request(-1 - s, s, s, parts[0] + parts[1] + parts[2]);
      im.totals.activations = std::max(im.totals.activations, live_total);
      const transient_bytes sum = transient_sum(np.step, np.work.units);
      im.totals.temporaries = std::max(im.totals.temporaries, sum.temporaries);
      im.totals.exchange = std::max(im.totals.exchange, sum.exchange + (np.sends ? np.copy.elements() * bytes : 0));
    }
    live_total -= dies_total[static_cast<std::size_t>(s)];
  }
  const std::array<std::int64_t, 2 * N> offset = pack(requests, count);
  result.activation.fill(-1);
  for (int k = 0; k < count; ++k) {
    const int o = owner[static_cast<std::size_t>(k)];
    const std::int64_t at = offset[static_cast<std::size_t>(k)];
    if (o >= 0) {
      result.activation[static_cast<std::size_t>(o)] = at;
      continue;
    }
    const int s = -1 - o;
    const node_plan& np = p.plan_of(s);
    const std::array<std::int64_t, 3> parts = scratch(s);
    step_buffers& sb = result.steps[static_cast<std::size_t>(s)];
    if (np.transient_max.temporaries > 0) sb.temporaries = at;
    if (np.transient_max.exchange > 0) sb.exchange = at + parts[0];
    if (np.sends) sb.send = at + parts[0] + parts[1];
  }

  // The peak: a tile's highest byte is its base plus the top of its highest buffer.
  const auto tiles_of = [](const linear_mapping& u) { return std::pair<int, int>{u.first_tile, u.first_tile + static_cast<int>(u.parts)}; };
  const int top = find_peak(
      region, offset, requests, count,
      [&](int k) {
        const int o = owner[static_cast<std::size_t>(k)];
        const int j = o >= 0 ? o : -1 - o;
        auto [first, end] = tiles_of(o >= 0 ? mapping_on_ipu(j).units : p.plan_of(j).work.units);
        if (o < 0 && p.plan_of(j).sends) {
          const auto [c0, c1] = tiles_of(p.plan_of(j).copy.units);
          first = std::min(first, c0), end = std::max(end, c1);
        }
        return std::pair<int, int>{first, end};
      },
      [&](int k, auto&& consider) {
        const int o = owner[static_cast<std::size_t>(k)];
        const int j = o >= 0 ? o : -1 - o;
        const std::int64_t element_bytes = size_of(p.at(j).type);
        const std::int64_t at = offset[static_cast<std::size_t>(k)];
        if (o >= 0) {
          const tensor_mapping& m = mapping_on_ipu(j);
          for_each_part(m.units, [&](int tile, std::int64_t units) { consider(tile, at, units * m.unit_elements * element_bytes); });
          return;
        }
        const node_plan& np = p.plan_of(j);
        const step_buffers& sb = result.steps[static_cast<std::size_t>(j)];
        std::int64_t cached_units = -1;  // parts hold one of few unit counts
        transient_bytes tr{};
        for_each_part(np.work.units, [&](int tile, std::int64_t units) {
          if (units != cached_units) cached_units = units, tr = transient_on(np.step, units);
          consider(tile, sb.temporaries, tr.temporaries);
          consider(tile, sb.exchange, tr.exchange);
        });
        if (np.sends)
          for_each_part(np.copy.units, [&](int tile, std::int64_t units) { consider(tile, sb.send, units * np.copy.unit_elements * element_bytes); });
      },
      im.peak, im.peak_tile);
  // The peak's step: of the steps of this IPU the highest buffer lives through, the one with
  // the most bytes in use on the peak tile (the layer that fills it; one pass over the steps).
  if (top >= 0) {
    const int tile = im.peak_tile;
    std::array<std::int64_t, N> born{}, dies{};  // activation bytes on the tile
    for (int j = 0; j < static_cast<int>(N); ++j)
      if (p.held_to(ipu, j) >= j) {
        const std::int64_t b = p.activation_bytes_on(ipu, j, tile);
        born[static_cast<std::size_t>(j)] += b;
        dies[static_cast<std::size_t>(p.held_to(ipu, j))] += b;
      }
    const buffer_request& r = requests[static_cast<std::size_t>(top)];
    std::int64_t live = 0, most = -1;
    for (int s = 0; s <= r.last; ++s) {
      live += born[static_cast<std::size_t>(s)];
      if (s >= r.first && p.at(s).ipu == ipu) {
        const std::int64_t in_use = live + p.step_transients_on(s, tile).total();
        if (in_use > most) most = in_use, im.peak_step = s;
      }
      live -= dies[static_cast<std::size_t>(s)];
    }
  }
  if (im.peak_step >= 0) im.at_peak = p.usage(ipu, im.peak_tile, im.peak_step);
  else im.at_peak = p.always_live_on(ipu, im.peak_tile);
  im.fits = im.peak <= im.capacity;
  return result;
}

/// Fast mode's fusion, with f32 partials (the packed kernels' epilogue): each convolution or
/// dense layer absorbs the batch norm, residual add and activation (ReLU, ReLU6 or SiLU) that
/// follow it, in that order and each at most once (`ops::<op>::epilogue_order`), as long as
/// each absorbed step reads the previous one's output, nothing else reads that output, and an
/// add's other operand exists before the convolution runs.
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
  const auto head = [](op kind) { return kind.info->epilogue_head; };
  const auto order = [](op kind) { return kind.info->epilogue_order; };
  for (int j = 0; j < count; ++j) {
    if (!head(p.at(j).kind)) continue;
    int end = j, last = 0;
    for (int k = j + 1; k < count; ++k) {
      const node& n = p.at(k);
      if (!n.reads(end) || order(n.kind) <= last || readers[static_cast<std::size_t>(end)] != 1 ||
          n.ipu != p.at(j).ipu || n.input_count > 2 || (n.input_count == 2 && n.inputs[0] == n.inputs[1]))
        break;
      // A join absorbs as the epilogue's add: its other operands exist before the convolution,
      // shaped as the output (the epilogue adds element by element, never broadcasting).
      bool others_ready = true;
      for (int src : n.sources()) others_ready = others_ready && (src == end || src < j) && p.at(src).out == n.out;
      if (!others_ready) break;
      p.nodes[static_cast<std::size_t>(k)].fused_into = j;
      end = k;
      last = order(n.kind);
    }
    p.nodes[static_cast<std::size_t>(j)].fused_end = end;
    j = end;
  }
}

/// The distinct ops that run on the tiles of IPU `ipu` (of every IPU when `ipu < 0`): those
/// whose codelets the IPU loads. Host steps run none, nor does the input unless it converts
/// an 8-bit stream.
template <std::size_t N>
struct tile_ops {
  std::array<op, N> kinds{};  ///< in the order of their first node
  int count = 0;              ///< how many
  std::array<int, N> of{};    ///< each node's index in `kinds`; -1 for a node that runs none there
};

template <std::size_t N>
constexpr tile_ops<N> ops_on_tiles(const std::array<node, N>& table, int ipu) noexcept {
  tile_ops<N> result;
  for (std::size_t j = 0; j < N; ++j) {
    const node& n = table[j];
    result.of[j] = -1;
    if ((ipu >= 0 && n.ipu != ipu) || n.on_host() || (n.kind == op_of<ops::input> && !n.layer.stream.eight_bit)) continue;
    int k = 0;
    while (k < result.count && !(result.kinds[static_cast<std::size_t>(k)] == n.kind)) ++k;
    if (k == result.count) result.kinds[static_cast<std::size_t>(result.count++)] = n.kind;
    result.of[j] = k;
  }
  return result;
}

/// Everything but the IPUs' memory, which `plan_ipu` adds, one IPU per constant evaluation.
/// (Constexpr rather than consteval, as `plan_ipu`: clang evaluates a consteval call that
/// initializes a constexpr variable twice; docs/contributing.md.)
template <std::size_t N, int Ipus>
constexpr plan<N, Ipus> make_plan(const std::array<node, N>& table, const chip_spec& chip, const options& opts) {
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
  if (opts.io_tiles < 0 || opts.io_tiles >= chip.tiles) {
    p.error = {plan_error_kind::bad_io_tiles, -1, opts.io_tiles, chip.tiles};
    p.fits = false;
    return p;
  }
  if (chip.bytes_per_tile % buffer_alignment != 0) {
    p.error = {plan_error_kind::tile_bytes_not_aligned, -1, chip.bytes_per_tile, buffer_alignment};
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
  for (int i = 0; i < Ipus; ++i) p.codelets[static_cast<std::size_t>(i)] = ops_on_tiles(table, i).count;
  // Who holds what until when. An IPU holds a node's output from its step to its last reader
  // there (a host step reading it included); a copy from another IPU or from the host, from
  // the producing step on. Only IPU-to-IPU copies need a send buffer: the host link reads and
  // writes tile memory directly.
  for (auto& h : p.held) h.fill(-1);
  const std::array<int, N> last = last_use(table);
  for (int j = 0; j < static_cast<int>(N); ++j) {
    const node& n = table[static_cast<std::size_t>(j)];
    if (!n.on_host()) {
      p.held[static_cast<std::size_t>(n.ipu)][static_cast<std::size_t>(j)] = j;
      if (j + 1 == static_cast<int>(N)) p.held[static_cast<std::size_t>(n.ipu)][static_cast<std::size_t>(j)] = last[static_cast<std::size_t>(j)];
    }
    for (int src : n.sources()) {
      const node& from = table[static_cast<std::size_t>(src)];
      const int holder = n.on_host() ? from.ipu : n.ipu;
      if (holder == host_device) continue;
      int& h = p.held[static_cast<std::size_t>(holder)][static_cast<std::size_t>(src)];
      h = std::max(h, j);
      if (!n.on_host() && !from.on_host() && from.ipu != n.ipu) p.nodes[static_cast<std::size_t>(src)].sends = true;
    }
  }
  for (int j = 0; j < static_cast<int>(N); ++j) {  // once whether each step sends is known
    node_plan& np = p.nodes[static_cast<std::size_t>(j)];
    const node& n = table[static_cast<std::size_t>(j)];
    np.cycles = n.on_host() ? host_step_cycles(p.host_bytes(j), chip, opts) : cycles_of(n, np, chip, opts);
    p.warnings += np.over_bound && !n.on_host() ? 1 : 0;
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
  static constexpr bool valid = base.error.kind == plan_error_kind::none;
  /// The diagnostic of the plan's error, if it has one (a compile error); `decltype` instantiates
  /// it without using its value, so that it is the only error either compiler prints (see
  /// `graph_info::checked`).
  using checked = decltype(report_plan_error<base.error, base.error.node >= 0 ? base.at(base.error.node).path : path_string{}>());
  template <int Ipu>
  static constexpr ipu_allocation<size> ipu_plan = plan_ipu<size, Target::ipus, Target::chip.tiles>(base, Ipu);
  static constexpr plan<size, Target::ipus> complete = [] {
    if constexpr (!valid) {
      return base;
    } else {
      return []<int... I>(std::integer_sequence<int, I...>) {
        plan<size, Target::ipus> p = base;
        p.ipus = {ipu_plan<I>.memory...};
        p.activation_offset = {ipu_plan<I>.activation...};
        for (int j = 0; j < static_cast<int>(size); ++j)
          if (!p.at(j).on_host())
            p.nodes[static_cast<std::size_t>(j)].buffers =
                std::array<step_buffers, Target::ipus>{ipu_plan<I>.steps[static_cast<std::size_t>(j)]...}[static_cast<std::size_t>(p.at(j).ipu)];
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

/// Graph `G` with batch size `N`.
template <class G, int N>
struct with_batch;
template <ElementType D, int B, int H, int W, int C, input_stream S, class... Bs, int N>
struct with_batch<graph<input_spec<D, B, H, W, C, S>, Bs...>, N> {
  using type = graph<input_spec<D, N, H, W, C, S>, Bs...>;
};

/// What holds for graph `G` on `Target` at batch size 1, which its out-of-memory error
/// advises from: planned only when `G` does not fit.
template <class G, class Target, options Opts>
consteval memory_advice advice_for() {
  if constexpr (batch_size_v<G> == 1) {
    constexpr const auto& p = plan_info<G, Target, Opts>::value;
    constexpr ipu_memory m = p.ipus[static_cast<std::size_t>(first_overfull_ipu(p))];
    return m.at_peak.temporaries + m.at_peak.exchange > m.capacity ? memory_advice::neither : memory_advice::not_batch;
  } else {
    using one = typename with_batch<G, 1>::type;
    if constexpr (plan_info<one, Target, Opts>::value.fits) {
      return memory_advice::any;
    } else {
      return advice_for<one, Target, Opts>();
    }
  }
}

/// The out-of-memory diagnostic of IPU `Ipu` of `G`'s plan `P`, if `Ipu >= 0` (a compile
/// error), advising only what can help (`advice_for`). Where one step cannot fit at any batch
/// size, the error names that step and its bytes at batch size 1.
template <class G, class Target, options Opts, const auto& P, int Ipu>
consteval auto report_fit() {
  if constexpr (Ipu < 0) {
    return true;
  } else if constexpr (constexpr memory_advice advice = advice_for<G, Target, Opts>();
                       advice == memory_advice::neither && batch_size_v<G> != 1) {
    using one = typename with_batch<G, 1>::type;
    constexpr const auto& p = plan_info<one, Target, Opts>::value;
    return report_fit<one, Target, Opts, p, first_overfull_ipu(p)>();
  } else {
    constexpr ipu_memory m = P.ipus[static_cast<std::size_t>(Ipu)];
    return report_out_of_memory<Ipu, m, m.peak_step >= 0 ? P.at(m.peak_step).path : path_string("always-live"), advice>();
  }
}

/// `require_fit`: true, or the out-of-memory diagnostic of the first IPU that does not fit.
/// `decltype` instantiates the diagnostic without using its value, so that it is the only
/// error either compiler prints.
template <class G, class Target, options Opts>
struct fit_check {
  using checked = decltype(report_fit<G, Target, Opts, plan_info<G, Target, Opts>::value,
                                      first_overfull_ipu(plan_info<G, Target, Opts>::value)>());
  static constexpr bool value = true;
};

}  // namespace detail

namespace detail {
/// Whether `T` is an `ipu::training<G, Opts>` (`plan/training.hpp`).
template <class T>
struct is_training_spec : std::false_type {};
}  // namespace detail

/// What the plan accepts: a graph, or a graph trained (`ipu::training<G, Opts>`).
template <class T>
concept Plannable = Graph<T> || detail::is_training_spec<std::remove_cvref_t<T>>::value;

/// The memory plan of graph `G` on `Target` with `Opts`, computed at compile time; for
/// `ipu::training<G, TrainOpts>`, the plan of a training step (`ipu::training_plan`).
template <Plannable G, Target T, options Opts = options{}>
inline constexpr const auto& plan_v = detail::plan_info<G, T, Opts>::value;

/// Whether every tile of every IPU of `T` holds `G`'s plan (or its training step's).
template <Plannable G, Target T, options Opts = options{}>
inline constexpr bool fits_v = plan_v<G, T, Opts>.fits;

/// `true` when `G` fits `T`; otherwise a compile error naming the IPU, the tile, the layer at
/// the tile's peak, the largest category and the bytes needed and available. Use it as
/// `static_assert(ipu::require_fit<G, ipu::mk2>);`. For `ipu::training<G, TrainOpts>`, the
/// error names the category with the most bytes at the peak, the layer of its largest buffer,
/// and the step.
template <Plannable G, Target T, options Opts = options{}>
inline constexpr bool require_fit = detail::fit_check<std::remove_cvref_t<G>, T, Opts>::value;

}  // namespace ipu
