#pragma once
/// \file
/// `ipu::auto_shard<G, Target>`: `G` with its blocks placed over the fewest IPUs of `Target`
/// that hold it, as a graph type of its own (`ipu::on<I>` around runs of blocks), balancing
/// estimated cycles over them.
///
/// The units of placement are the atoms of `G`: its layers and residual blocks, found through
/// sequences, scopes and `on<>` (whose placement is replaced), each copy of a `repeat<N>` being
/// one atom. Node paths are unchanged. An `ipu::on_host` block stays on the host as written;
/// its atoms count in the runs for their transfers' cycles and the copies of their outputs.
///
/// A sharded graph runs one IPU at a time, so every IPU beyond the fewest that hold the model
/// only adds exchange: a graph whose exact plan fits one IPU stays on IPU 0. Otherwise the
/// placement splits the atoms into the fewest runs that each fit one IPU by a per-tile upper
/// bound (each term at its fullest tile; the codelets of the ops the run has; a send buffer for
/// an output only if another atom reads it), and among the splits into that many runs takes one
/// that minimises the largest run's estimated cycles (what a pipeline's throughput would depend
/// on). The bound is monotone, so a greedy fill finds the fewest runs, and a greedy fill per
/// candidate bottleneck, inside a binary search, the best split over them.
/// `require_fit<auto_shard<G, Target>, Target>` then checks the result exactly.

#include <ipu/graph/compose.hpp>
#include <ipu/graph/detail/lower.hpp>
#include <ipu/graph/diagnostics.hpp>
#include <ipu/plan/plan.hpp>
#include <ipu/target/chip.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace ipu {

namespace diag {
struct atoms_in_graph { std::int64_t value; };
struct bytes_needed_alone { std::int64_t value; };

template <auto Layer, ipus_in_target Ipus, bytes_needed_alone Needed, bytes_available Available>
struct auto_shard_found_no_placement {
  static_assert(Needed.value <= Available.value && Ipus.value < 0,
                "ipu: auto_shard found no placement of the graph on the target's IPUs where every IPU fits; "
                "the layer named here has the step that needs the most memory; use more IPUs or a smaller batch");
  static constexpr bool value = false;
};
}  // namespace diag

namespace detail {

// ---- atoms ----------------------------------------------------------------------------------

template <class T> inline constexpr int atom_count = 1;  // a layer or a residual block
template <class... B> inline constexpr int atom_count<nn::seq_t<B...>> = [] {
  int n = 0;
  for (int c : {0, atom_count<B>...}) n += c;
  return n;
}();
template <fixed_string Name, class B> inline constexpr int atom_count<nn::scope_t<Name, B>> = atom_count<B>;
template <int I, class B> inline constexpr int atom_count<on_t<I, B>> = atom_count<B>;
template <int C, class B> inline constexpr int atom_count<nn::repeat_t<C, B>> = C;

/// Writes the node count of each atom of `T`, from `atoms[at]` on.
template <class T>
struct atom_sizes {
  template <std::size_t A>
  static constexpr void write(std::array<int, A>& atoms, int& at) {
    atoms[static_cast<std::size_t>(at++)] = node_count<T>;
  }
};
template <class... B>
struct atom_sizes<nn::seq_t<B...>> {
  template <std::size_t A>
  static constexpr void write(std::array<int, A>& atoms, int& at) {
    (void)std::initializer_list<int>{0, (atom_sizes<B>::write(atoms, at), 0)...};
  }
};
template <fixed_string Name, class B>
struct atom_sizes<nn::scope_t<Name, B>> : atom_sizes<B> {};
template <int I, class B>
struct atom_sizes<on_t<I, B>> : atom_sizes<B> {};
template <int C, class B>
struct atom_sizes<nn::repeat_t<C, B>> {
  template <std::size_t A>
  static constexpr void write(std::array<int, A>& atoms, int& at) {
    for (int i = 0; i < C; ++i) atoms[static_cast<std::size_t>(at++)] = node_count<B>;
  }
};

/// A chip target of one IPU, for planning a graph before it is placed.
template <Target T>
struct one_ipu {
  static constexpr chip_spec chip = T::chip;
  static constexpr int ipus = 1;
  static constexpr const char* name = T::name;
};

/// The placement: the IPU of each atom, or, when there is none, the step that needs the most.
template <std::size_t A>
struct placement {
  std::array<int, A> ipu{};
  bool found = true;
  std::int64_t failed_bytes = 0; ///< the upper bound of the blamed step's atom alone
  int blamed_node = 0;           ///< the layer of the one-IPU plan's peak (`require_fit`'s)
};

/// Splits the atoms (node counts `sizes`, after the input node) of the unplaced plan `p` over
/// `ipus` IPUs; see the file comment.
template <std::size_t A, std::size_t N>
constexpr placement<A> place_atoms(const std::array<int, A>& sizes, const plan<N, 1>& p, int ipus) {
  // The atom of each node; atom 0 also holds the input node.
  std::array<int, N> atom_of{};
  for (int a = 0, node = 0; a < static_cast<int>(A); ++a) {
    for (const int end = node + sizes[static_cast<std::size_t>(a)] + (a == 0 ? 1 : 0); node < end; ++node)
      atom_of[static_cast<std::size_t>(node)] = a;
  }
  // Whether a node's output is read in another atom: only then can a cut make its step send it.
  std::array<bool, N> read_elsewhere{};
  for (int j = 0; j < static_cast<int>(N); ++j)
    for (int src : p.at(j).sources())
      read_elsewhere[static_cast<std::size_t>(src)] = read_elsewhere[static_cast<std::size_t>(src)] ||
                                                      atom_of[static_cast<std::size_t>(src)] != atom_of[static_cast<std::size_t>(j)];
  // The codelets an IPU loads are those of the ops it runs: bit k of a node's mask is the k-th
  // distinct op on the tiles (ops past the 64th are charged to every IPU).
  const tile_ops<N> ops = ops_on_tiles(*p.table, -1);
  std::array<std::uint64_t, N> op_bit{};
  for (std::size_t j = 0; j < N; ++j)
    if (ops.of[j] >= 0 && ops.of[j] < 64) op_bit[j] = std::uint64_t{1} << ops.of[j];
  const fixed_costs& fixed = p.opts.fixed;
  const std::int64_t base = fixed.runtime_bytes + std::max(0, ops.count - 64) * fixed.codelet_bytes;
  const auto codelets = [&](std::uint64_t mask) { return std::popcount(mask) * fixed.codelet_bytes; };
  // Per node: cycles, always-live upper bound, and the bound of its step's not-always-live bytes.
  std::array<std::int64_t, N> cycles{}, always{}, step{};
  const std::array<int, N> last = last_use(*p.table);
  std::array<std::int64_t, N> dies{};
  std::int64_t live = 0;
  for (int j = 0; j < static_cast<int>(N); ++j) {
    const node_plan& np = p.plan_of(j);
    const std::int64_t bytes = size_of(p.at(j).type);
    const std::int64_t act = std::max(np.output.max_elements_per_tile(), np.copy.max_elements_per_tile()) * bytes;
    live += act;
    dies[static_cast<std::size_t>(last[static_cast<std::size_t>(j)])] += act;
    cycles[static_cast<std::size_t>(j)] = np.cycles.total();
    if (p.at(j).on_host()) {  // no code, weights or transients on the tiles; its output is a copy
      step[static_cast<std::size_t>(j)] = live;
      live -= dies[static_cast<std::size_t>(j)];
      continue;
    }
    always[static_cast<std::size_t>(j)] = fixed.control_bytes + p.step_code_on(j, 0);
    for (int w = 0; w < np.weight_tensors; ++w)
      always[static_cast<std::size_t>(j)] +=
          np.weights[static_cast<std::size_t>(w)].max_elements_per_tile() * np.weight_bytes[static_cast<std::size_t>(w)];
    const std::int64_t send = read_elsewhere[static_cast<std::size_t>(j)] ? np.copy.max_elements_per_tile() * bytes : 0;
    step[static_cast<std::size_t>(j)] = live + np.transient_max.total() + send;
    live -= dies[static_cast<std::size_t>(j)];
  }
  // Per atom: its cycles, always-live bytes, largest step and ops.
  std::array<std::int64_t, A> atom_cycles{}, atom_always{}, atom_step{};
  std::array<std::uint64_t, A> atom_ops{};
  for (int j = 0; j < static_cast<int>(N); ++j) {
    const std::size_t a = static_cast<std::size_t>(atom_of[static_cast<std::size_t>(j)]);
    atom_cycles[a] += cycles[static_cast<std::size_t>(j)];
    atom_always[a] += always[static_cast<std::size_t>(j)];
    atom_step[a] = std::max(atom_step[a], step[static_cast<std::size_t>(j)]);
    atom_ops[a] |= op_bit[static_cast<std::size_t>(j)];
  }
  const std::int64_t capacity = p.chip.bytes_per_tile;
  placement<A> result;
  if (p.fits) return result;  // the exact plan holds the whole graph on one IPU
  // Greedy fill under a cycle bottleneck: the number of runs it needs, and the assignment.
  const auto fill = [&](std::int64_t bottleneck, std::array<int, A>& assign) {
    int run = 0;
    std::int64_t run_cycles = 0, run_always = 0, run_step = 0;
    std::uint64_t run_ops = 0;
    for (std::size_t a = 0; a < A; ++a) {
      const bool fits = run_cycles + atom_cycles[a] <= bottleneck &&
                        base + codelets(run_ops | atom_ops[a]) + run_always + atom_always[a] +
                                std::max(run_step, atom_step[a]) <= capacity;
      if (a > 0 && !fits) ++run, run_cycles = run_always = run_step = 0, run_ops = 0;
      run_cycles += atom_cycles[a];
      run_always += atom_always[a];
      run_step = std::max(run_step, atom_step[a]);
      run_ops |= atom_ops[a];
      assign[a] = run;
    }
    return run + 1;
  };
  std::int64_t lo = 0, hi = 0;
  bool alone = true;  // every atom fits an IPU on its own
  for (std::size_t a = 0; a < A; ++a) {
    lo = std::max(lo, atom_cycles[a]), hi += atom_cycles[a];
    alone = alone && base + codelets(atom_ops[a]) + atom_always[a] + atom_step[a] <= capacity;
  }
  std::array<int, A> assign{};
  const int runs = alone ? fill(hi, assign) : ipus + 1;  // the fewest runs that fit
  if (runs > ipus) {
    // Blame the layer of the one-IPU plan's peak, the layer require_fit names (or, when the
    // peak is always-live memory, the step whose bound is largest), with its atom's bound.
    result.found = false;
    const auto need_of = [&](int j) {
      const std::size_t a = static_cast<std::size_t>(atom_of[static_cast<std::size_t>(j)]);
      return base + codelets(atom_ops[a]) + atom_always[a] + step[static_cast<std::size_t>(j)];
    };
    if (const int peak = p.ipus[0].peak_step; peak >= 0) {
      result.blamed_node = p.steps[static_cast<std::size_t>(peak)].node;
      result.failed_bytes = need_of(result.blamed_node);
      return result;
    }
    for (int j = 0; j < static_cast<int>(N); ++j)
      if (const std::int64_t need = need_of(j); need > result.failed_bytes) result.failed_bytes = need, result.blamed_node = j;
    return result;
  }
  while (lo < hi) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    if (fill(mid, assign) <= runs) hi = mid;
    else lo = mid + 1;
  }
  fill(lo, result.ipu);
  return result;
}

template <class G, class T>
struct shard_info;
template <class In, class... Bs, class T>
struct shard_info<graph<In, Bs...>, T> {
  using graph_t = graph<In, Bs...>;
  static constexpr std::size_t atoms = static_cast<std::size_t>(atom_count<nn::seq_t<Bs...>>);
  static constexpr std::array<int, atoms> sizes = [] {
    std::array<int, atoms> s{};
    int at = 0;
    atom_sizes<nn::seq_t<Bs...>>::write(s, at);
    return s;
  }();
  static constexpr const auto& unplaced = plan_v<graph_t, one_ipu<T>>;
  static constexpr placement<atoms> raw = place_atoms(sizes, unplaced, T::ipus);
  static constexpr bool valid = [] {
    if constexpr (raw.found) {
      return true;
    } else {
      constexpr path_string path = unplaced.at(raw.blamed_node).path;
      return diag::auto_shard_found_no_placement<diag::in_layer<path.length + 1>{path},
                                                 diag::ipus_in_target{T::ipus},
                                                 diag::bytes_needed_alone{raw.failed_bytes},
                                                 diag::bytes_available{T::chip.bytes_per_tile}>::value;
    }
  }();
  static constexpr const std::array<int, atoms>& assign = raw.ipu;
};

// ---- the placed type ------------------------------------------------------------------------

template <class T, auto Assign, int First>
struct placed {
  using type = on_t<Assign[static_cast<std::size_t>(First)], as_seq_t<T>>;
};
template <class... B, auto Assign, int First>
struct placed<nn::seq_t<B...>, Assign, First> {
  static constexpr std::array<int, sizeof...(B) + 1> offsets = [] {
    std::array<int, sizeof...(B) + 1> o{};
    int at = First, i = 0;
    for (int c : {atom_count<B>...}) o[static_cast<std::size_t>(i++)] = at, at += c;
    o[sizeof...(B)] = at;
    return o;
  }();
  template <std::size_t... I>
  static auto make(std::index_sequence<I...>)
      -> nn::seq_t<typename placed<B, Assign, offsets[I]>::type...>;
  using type = decltype(make(std::index_sequence_for<B...>{}));
};
template <fixed_string Name, class B, auto Assign, int First>
struct placed<nn::scope_t<Name, B>, Assign, First> {
  using type = nn::scope_t<Name, as_seq_t<typename placed<B, Assign, First>::type>>;
};
template <int I, class B, auto Assign, int First>
struct placed<on_t<I, B>, Assign, First> : placed<B, Assign, First> {};
template <class B, auto Assign, int First>
struct placed<on_t<host_device, B>, Assign, First> {  // stays on the host, as written
  using type = on_t<host_device, B>;
};
template <int C, class B, auto Assign, int First>
struct placed<nn::repeat_t<C, B>, Assign, First> {
  // Runs of consecutive copies on one IPU: [start of run r, start of run r + 1).
  static constexpr auto runs = [] {
    std::array<int, static_cast<std::size_t>(C) + 1> starts{};
    int n = 0;
    for (int i = 0; i < C; ++i)
      if (i == 0 || Assign[static_cast<std::size_t>(First + i)] != Assign[static_cast<std::size_t>(First + i - 1)])
        starts[static_cast<std::size_t>(n++)] = i;
    starts[static_cast<std::size_t>(n)] = C;
    return std::pair{starts, n};
  }();
  template <std::size_t... R>
  static auto make(std::index_sequence<R...>)
      -> nn::seq_t<on_t<Assign[static_cast<std::size_t>(First + runs.first[R])],
                        nn::seq_t<nn::repeat_t<runs.first[R + 1] - runs.first[R], B>>>...>;
  using type = decltype(make(std::make_index_sequence<static_cast<std::size_t>(runs.second)>{}));
};

template <class G, class T>
struct auto_shard_of;
template <class In, class... Bs, class T>
struct auto_shard_of<graph<In, Bs...>, T> {
  using seq = typename placed<nn::seq_t<Bs...>, shard_info<graph<In, Bs...>, T>::assign, 0>::type;
  template <class... P>
  static auto make(nn::seq_t<P...>) -> graph<In, P...>;
  using placed_t = decltype(make(seq{}));
  // Naming `valid` reports a failed placement; the type is then the unplaced one.
  using type = std::conditional_t<shard_info<graph<In, Bs...>, T>::valid, placed_t, graph<In, Bs...>>;
};

}  // namespace detail

/// `G` placed over the fewest IPUs of `T` that hold it (see the file comment); when there is no
/// such placement, a compile error names the layer whose step needs the most memory.
template <Graph G, Target T>
using auto_shard = typename detail::auto_shard_of<std::remove_cvref_t<G>, T>::type;

}  // namespace ipu
