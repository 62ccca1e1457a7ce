#pragma once
/// \file
/// `ipu::memory_report<G, Target, Options>()`: where a plan's tile memory goes. For each IPU: the
/// peak and its bytes by category, a histogram of the tiles' peaks, the fullest tiles, the
/// layers whose steps fill a tile the most, and the layers whose transients exceed the
/// available memory proportion.
///
/// The headline peak is the plan's: the highest byte its allocation reaches on any tile, with the
/// bytes in use there by category (and the alignment and gaps, if any). The plan is computed at
/// compile time and keeps only each IPU's peak; the report recomputes every tile's most bytes
/// in use at run time, in O(T x N) per IPU for T tiles and N nodes: a
/// tile's live activations are carried from step to step rather than summed again at every
/// step, as `plan::usage` does (which would make it O(T x N^2)).

#include <ipu/core/format.hpp>
#include <ipu/core/json.hpp>
#include <ipu/core/stream_state.hpp>
#include <ipu/graph/compose.hpp>
#include <ipu/graph/node.hpp>
#include <ipu/plan/memory.hpp>
#include <ipu/plan/plan.hpp>
#include <ipu/report/summary.hpp>
#include <ipu/target/chip.hpp>
#include <ipu/target/options.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iomanip>
#include <optional>
#include <ostream>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace ipu {

/// The memory report of a plan: the data as public members, printable with `<<` or `str()`.
///
/// Every figure is in bytes of one tile unless its name says otherwise. The tile numbers are
/// those of `plan::usage`: a tile's bytes at a step are its always-live bytes, the activations
/// live on its IPU at that step, and the step's transients.
struct memory_report_t {
  /// Histogram buckets up to capacity, each `100 / buckets` percent wide; one more bucket counts
  /// the tiles over capacity.
  static constexpr int buckets = 10;
  /// Fullest tiles kept and printed per IPU.
  static constexpr int fullest_tiles = 5;
  /// Layers printed per IPU (`ipu_report::layers` keeps all of them).
  static constexpr int printed_layers = 10;

  /// A tile's most bytes over the steps of its IPU.
  struct tile_peak {
    int tile = -1;          ///< the tile, numbered from 0 on its IPU
    int step = -1;          ///< the node running at the tile's peak (earliest on a tie); -1: the IPU runs none
    memory_bytes bytes{};   ///< the tile's bytes at its peak, by category; `bytes.total()` is the peak
  };

  /// The fullest tile while one node's step runs, and the IPU's memory then.
  struct layer_peak {
    int node = -1;          ///< the node (and step) index in the node table
    int tile = -1;          ///< lowest on a tie
    memory_bytes bytes{};   ///< that tile's bytes during the step, by category
    memory_bytes ipu_bytes{};  ///< the bytes of all the IPU's tiles during the step, by category
  };

  /// A layer whose fullest tile needs more transients than the available memory proportion.
  /// No split meets the bound, so the plan doubles it until one does, as PopLibs' planner does.
  struct bound_warning {
    int node = -1;                     ///< the layer's node index in the node table
    std::int64_t transient_bytes = 0;  ///< temporaries and exchange buffers of the layer's fullest tile
    std::int64_t bound = 0;            ///< the available memory proportion of a tile's bytes
  };

  /// The report of one IPU.
  struct ipu_report {
    int ipu = 0;                          ///< the IPU's index in the target
    ipu_memory plan{};                    ///< the plan's figures: capacity, totals, nodes, cycles, peak
    tile_peak peak{};                     ///< the tile with the most bytes in use at any step, as recomputed here
    std::vector<tile_peak> tiles;         ///< every tile's peak, indexed by tile
    std::array<int, buckets + 1> histogram{};  ///< tiles per bucket of `peak / capacity` (see `bucket_of`)
    std::vector<tile_peak> fullest;       ///< the fullest tiles, fullest first (lowest tile on a tie)
    std::vector<layer_peak> layers;       ///< every node on the IPU, in step order
    std::vector<bound_warning> warnings;  ///< the nodes on the IPU over the bound, in step order
    /// Every tile's bytes in use at every step of the IPU: `step_tiles[k * tiles.size() + t]`
    /// for tile `t` during `layers[k]`'s step (its memory map over time; see `bytes_at`).
    std::vector<std::int64_t> step_tiles;

    /// Tile `t`'s bytes in use during the IPU's `k`-th step, `layers[k]`.
    std::int64_t bytes_at(int k, int t) const noexcept {
      return step_tiles[static_cast<std::size_t>(k) * tiles.size() + static_cast<std::size_t>(t)];
    }
  };

  std::string target;          ///< the target's name
  int ipu_count = 0;           ///< IPUs of the target
  chip_spec chip{};            ///< the chip of each of the target's IPUs
  options opts{};              ///< the options the plan was made with
  std::vector<node> nodes;     ///< the graph's node table
  bool fits = true;            ///< every IPU fits
  std::vector<ipu_report> ipus;  ///< one report per IPU, indexed by IPU

  /// The histogram bucket of a tile peaking at `bytes` of `capacity > 0`: `k` for
  /// `[k, k + 1) x 100 / buckets` percent (a full tile in the last), `buckets` over capacity.
  static constexpr int bucket_of(std::int64_t bytes, std::int64_t capacity) noexcept {
    if (bytes > capacity) return buckets;
    return static_cast<int>(std::min<std::int64_t>(buckets - 1, bytes * buckets / capacity));
  }

  /// Layers over the available memory proportion, on all IPUs.
  int warnings() const noexcept {
    std::size_t n = 0;
    for (const ipu_report& r : ipus) n += r.warnings.size();
    return static_cast<int>(n);
  }

  /// The path of node `j`.
  std::string_view path_of(int j) const noexcept { return nodes[static_cast<std::size_t>(j)].path.view(); }

  /// The report as text.
  std::string str() const;

  /// Writes the report as JSON, every name through `detail::json_string`:
  ///
  ///     {"target": "mk2", "tiles": 1472, "bytes_per_tile": 638976, "fits": true,
  ///      "categories": ["weights", "code", "activations", "temporaries", "exchange"],
  ///      "layers": [{"node": 0, "path": "input", "op": "input", "layer": "input", "ipu": 0,
  ///                  "shape": "[4, 224, 224, 4]", "type": "f16", "params": 0, "macs": 0}, ...],
  ///      "ipus": 1, "ipu_reports": [{"ipu": 0, "capacity": 638976, "cycles": ..., "peak": ..., "peak_tile": ...,
  ///                       "peak_step": ..., "at_peak": [...], "totals": [...], "histogram": [...],
  ///                       "tiles": [[step, weights, code, activations, temporaries, exchange], ...],
  ///                       "steps": [{"node": 3, "tile": 17, "bytes": [...], "ipu_bytes": [...]}, ...],
  ///                       "over_bound": [{"node": 5, "transient_bytes": ..., "bound": ...}]}]}
  ///
  /// Bytes by category are arrays in the order of `"categories"`. Per tile: the node at its
  /// peak (-1 if its IPU runs none) and its bytes there; per step of the IPU: the fullest tile
  /// and its bytes, and the IPU's, all its tiles summed (its memory over time). A tile's bytes
  /// are those in use (`plan::usage`); `"peak"` is the plan's, alignment and gaps included.
  void write_json(std::ostream& os) const;
  /// Writes the JSON report to `path`; throws `std::runtime_error` if it cannot.
  void write_json(const std::string& path) const {
    detail::write_file(path, "ipu::memory_report", [&](std::ostream& os) { write_json(os); });
  }

  /// Prints the report.
  friend std::ostream& operator<<(std::ostream& os, const memory_report_t& r) { return os << r.str(); }
};

namespace detail {

/// The report of IPU `ipu` of plan `p`.
template <std::size_t N, int Ipus>
memory_report_t::ipu_report report_ipu(const plan<N, Ipus>& p, int ipu) {
  using tile_peak = memory_report_t::tile_peak;
  memory_report_t::ipu_report r;
  r.ipu = ipu;
  r.plan = p.ipus[static_cast<std::size_t>(ipu)];
  const int steps = static_cast<int>(N);
  const int tiles = p.chip.tiles;
  for (int j = 0; j < steps; ++j) {
    if (p.at(j).ipu != ipu) continue;
    r.layers.push_back({j, -1, {}});
    const node_plan& np = p.plan_of(j);
    if (np.over_bound) r.warnings.push_back({j, np.transient_max.total(), np.transient_bound});
  }

  // Tile by tile, the steps in order: an output (or a copy) joins the live activations at the
  // step producing it and leaves after the last step holding it on this IPU.
  r.tiles.resize(static_cast<std::size_t>(tiles));
  r.step_tiles.resize(r.layers.size() * static_cast<std::size_t>(tiles));
  std::vector<std::int64_t> leaving(N);  // activation bytes leaving the tile after each step
  for (int t = 0; t < tiles; ++t) {
    const memory_bytes always = p.always_live_on(ipu, t);
    tile_peak& tp = r.tiles[static_cast<std::size_t>(t)];
    tp = {t, -1, always};
    std::fill(leaving.begin(), leaving.end(), std::int64_t{0});
    std::int64_t live = 0;
    std::size_t layer = 0;
    for (int s = 0; s < steps; ++s) {
      const int held_to = p.held_to(ipu, s);
      if (held_to >= s) {
        const std::int64_t b = p.activation_bytes_on(ipu, s, t);
        live += b;
        leaving[static_cast<std::size_t>(held_to)] += b;
      }
      if (p.at(s).ipu == ipu) {
        memory_bytes m = always;
        m.activations = live;
        m += p.step_transients_on(s, t);
        if (tp.step < 0 || m.total() > tp.bytes.total()) tp.step = s, tp.bytes = m;
        r.step_tiles[layer * static_cast<std::size_t>(tiles) + static_cast<std::size_t>(t)] = m.total();
        memory_report_t::layer_peak& lp = r.layers[layer++];
        if (lp.tile < 0 || m.total() > lp.bytes.total()) lp.tile = t, lp.bytes = m;
        lp.ipu_bytes += m;
      }
      live -= leaving[static_cast<std::size_t>(s)];
    }
  }

  // The IPU's peak breaks ties as the plan does: the earliest step, then the lowest tile.
  const auto fuller = [](const tile_peak& a, const tile_peak& b) {
    if (a.bytes.total() != b.bytes.total()) return a.bytes.total() > b.bytes.total();
    return a.step != b.step ? a.step < b.step : a.tile < b.tile;
  };
  for (const tile_peak& tp : r.tiles) {
    if (r.peak.tile < 0 || fuller(tp, r.peak)) r.peak = tp;
    ++r.histogram[static_cast<std::size_t>(memory_report_t::bucket_of(tp.bytes.total(), r.plan.capacity))];
  }
  r.fullest = r.tiles;
  const auto kept = std::min<std::size_t>(r.fullest.size(), memory_report_t::fullest_tiles);
  std::partial_sort(r.fullest.begin(), r.fullest.begin() + static_cast<std::ptrdiff_t>(kept), r.fullest.end(),
                    [](const tile_peak& a, const tile_peak& b) {
                      return a.bytes.total() != b.bytes.total() ? a.bytes.total() > b.bytes.total()
                                                                : a.tile < b.tile;
                    });
  r.fullest.resize(kept);
  return r;
}

/// `weights 1,234  code 567  ...`: the bytes of `m` in `categories`.
inline void print_categories(std::ostream& os, const memory_bytes& m, std::initializer_list<memory_category> categories) {
  for (memory_category c : categories) os << "  " << name_of(c) << ' ' << grouped(m[c]);
}

inline void print_ipu(std::ostream& os, const memory_report_t& r, const memory_report_t::ipu_report& ir) {
  using rep = memory_report_t;
  const ipu_memory& pm = ir.plan;
  const std::int64_t capacity = pm.capacity;
  // The headline is the plan's peak: the highest byte its allocation reaches, what must fit.
  const std::int64_t peak = pm.peak;
  os << "IPU " << ir.ipu << ": " << (peak <= capacity ? "fits" : "does not fit") << "; " << pm.nodes << " nodes, "
     << grouped(pm.cycles) << " cycles (estimated)\n";

  // 1. The peak and the IPU's totals.
  os << "  peak " << grouped(peak) << " of " << grouped(capacity) << " bytes (" << percent(peak, capacity)
     << ") on tile " << pm.peak_tile;
  if (pm.peak_step >= 0) os << ", during " << r.path_of(pm.peak_step) << " (node " << pm.peak_step << ')';
  if (peak > capacity) os << ": " << grouped(peak - capacity) << " bytes over";
  os << '\n'
     << "    always live     " << std::setw(12) << grouped(pm.at_peak.always_live());
  print_categories(os, pm.at_peak, {memory_category::weights, memory_category::code});
  os << "\n    not always live " << std::setw(12) << grouped(pm.at_peak.not_always_live());
  print_categories(os, pm.at_peak,
                   {memory_category::activations, memory_category::temporaries, memory_category::exchange});
  if (pm.unused_at_peak() > 0) os << "\n    alignment and gaps " << std::setw(9) << grouped(pm.unused_at_peak());
  os << "\n  IPU totals (summed over tiles; activations, temporaries, exchange at their largest step):\n   ";
  print_categories(os, pm.totals,
                   {memory_category::weights, memory_category::code, memory_category::activations,
                    memory_category::temporaries, memory_category::exchange});
  os << "\n    largest always-live bytes of a tile: " << grouped(pm.max_always_live) << '\n';

  // 2. The histogram of the tiles' peaks.
  constexpr int bar_width = 50;
  const int most = *std::max_element(ir.histogram.begin(), ir.histogram.end());
  os << "  tile peaks, by share of a tile's " << grouped(capacity) << " bytes (" << grouped(static_cast<std::int64_t>(ir.tiles.size()))
     << " tiles):\n";
  for (int b = 0; b <= rep::buckets; ++b) {
    const int count = ir.histogram[static_cast<std::size_t>(b)];
    std::ostringstream label;
    if (b < rep::buckets)
      label << b * 100 / rep::buckets << '-' << (b + 1) * 100 / rep::buckets << '%';
    else
      label << "over 100%";
    const int bar = count == 0 ? 0 : std::max(1, count * bar_width / most);
    os << "    " << std::left << std::setw(10) << label.str() << std::right << std::setw(6) << count;
    if (bar > 0) os << ' ' << std::string(static_cast<std::size_t>(bar), '#');
    os << '\n';
  }

  // Paths are the widest column of the two tables below.
  std::vector<memory_report_t::layer_peak> layers = ir.layers;
  const auto shown_layers = std::min<std::size_t>(layers.size(), rep::printed_layers);
  std::partial_sort(layers.begin(), layers.begin() + static_cast<std::ptrdiff_t>(shown_layers), layers.end(),
                    [](const rep::layer_peak& a, const rep::layer_peak& b) {
                      return a.bytes.total() != b.bytes.total() ? a.bytes.total() > b.bytes.total() : a.node < b.node;
                    });
  layers.resize(shown_layers);
  std::size_t path_width = 5;
  for (const rep::tile_peak& tp : ir.fullest)
    if (tp.step >= 0) path_width = std::max(path_width, r.path_of(tp.step).size());
  for (const rep::layer_peak& lp : layers) path_width = std::max(path_width, r.path_of(lp.node).size());
  const int pw = static_cast<int>(path_width + 2);
  const auto category_header = [&] {
    for (int c = 0; c < memory_category_count; ++c)
      os << std::setw(13) << name_of(memory_category{static_cast<std::uint8_t>(c)});
    os << '\n';
  };
  const auto category_columns = [&](const memory_bytes& m) {
    for (int c = 0; c < memory_category_count; ++c)
      os << std::setw(13) << grouped(m[memory_category{static_cast<std::uint8_t>(c)}]);
    os << '\n';
  };

  // 3. The fullest tiles.
  os << "  fullest tiles:\n    " << std::setw(6) << "tile" << std::setw(12) << "peak" << "  " << std::left
     << std::setw(pw) << "layer" << std::right;
  category_header();
  for (const rep::tile_peak& tp : ir.fullest) {
    os << "    " << std::setw(6) << tp.tile << std::setw(12) << grouped(tp.bytes.total()) << "  " << std::left
       << std::setw(pw) << (tp.step >= 0 ? r.path_of(tp.step) : std::string_view("-")) << std::right;
    category_columns(tp.bytes);
  }

  // 4. The layers whose steps fill a tile the most.
  os << "  fullest layers (" << shown_layers << " of " << ir.layers.size() << "):\n    " << std::left << std::setw(pw)
     << "layer" << std::right << std::setw(6) << "tile" << std::setw(12) << "peak" << std::setw(8) << "share";
  category_header();
  for (const rep::layer_peak& lp : layers) {
    os << "    " << std::left << std::setw(pw) << r.path_of(lp.node) << std::right << std::setw(6) << lp.tile
       << std::setw(12) << grouped(lp.bytes.total()) << std::setw(8) << percent(lp.bytes.total(), capacity);
    category_columns(lp.bytes);
  }

  // 5. Layers over the available memory proportion.
  const ratio amp = r.opts.available_memory_proportion;
  if (ir.warnings.empty())
    os << "  no layer's transients exceed the available memory proportion " << amp.num << '/' << amp.den << '\n';
  for (const rep::bound_warning& w : ir.warnings)
    os << "  warning: " << r.path_of(w.node) << ": its fullest tile needs " << grouped(w.transient_bytes)
       << " bytes of transients, over the available memory proportion " << amp.num << '/' << amp.den << " ("
       << grouped(w.bound) << " bytes); no split meets it, so, as in PopLibs, the bound is doubled until one does\n";
}

/// Writes `m`'s bytes of each of its `Count` categories (`Category` 0 to `Count - 1`) as a
/// JSON array, after `step` if given: `[step, bytes...]`.
template <class Category, int Count, class Bytes>
void write_json_bytes(std::ostream& os, const Bytes& m, std::optional<int> step = std::nullopt) {
  os << '[';
  if (step) os << *step << ", ";
  for (int c = 0; c < Count; ++c) os << (c ? ", " : "") << m[Category{static_cast<std::uint8_t>(c)}];
  os << ']';
}

/// Writes the head every JSON memory report starts with: `{"target": ..., "tiles": ...,
/// "bytes_per_tile": ..., "fits": ..., "categories": [...], "layers": [...]`, the names of the
/// `Count` categories of type `Category`, and each node's index, path, op (with its
/// hyper-parameters in `"layer"`, e.g. `"conv 3x3/2 g32"`), IPU, output shape, element type,
/// trainable parameters and MACs per batch.
template <class Category, int Count>
void write_json_head(std::ostream& os, std::string_view target, const chip_spec& chip, bool fits, std::span<const node> nodes) {
  os << "{\n  \"target\": " << json_string{target} << ",\n  \"tiles\": " << chip.tiles << ",\n  \"bytes_per_tile\": "
     << chip.bytes_per_tile << ",\n  \"fits\": " << (fits ? "true" : "false") << ",\n  \"categories\": [";
  for (int c = 0; c < Count; ++c) os << (c ? ", " : "") << json_string{name_of(Category{static_cast<std::uint8_t>(c)})};
  os << "],\n  \"layers\": [";
  for (std::size_t j = 0; j < nodes.size(); ++j)
    os << (j ? "," : "") << "\n    {\"node\": " << j << ", \"path\": " << json_string{nodes[j].path.view()}
       << ", \"op\": " << json_string{name_of(nodes[j].kind)} << ", \"layer\": " << json_string{describe_op(nodes[j])}
       << ", \"ipu\": " << nodes[j].ipu << ", \"shape\": " << json_string{to_string(nodes[j].out)}
       << ", \"type\": " << json_string{name_of(nodes[j].type)} << ", \"params\": " << nodes[j].params
       << ", \"macs\": " << nodes[j].macs << "}";
  os << "\n  ]";
}

}  // namespace detail

inline void memory_report_t::write_json(std::ostream& os) const {
  const detail::stream_state keep(os);
  const auto bytes = [&](const memory_bytes& m, std::optional<int> step = std::nullopt) {
    detail::write_json_bytes<memory_category, memory_category_count>(os, m, step);
  };
  detail::write_json_head<memory_category, memory_category_count>(os, target, chip, fits, nodes);
  os << ",\n  \"ipus\": " << ipu_count << ",\n  \"ipu_reports\": [";
  for (std::size_t i = 0; i < ipus.size(); ++i) {
    const ipu_report& r = ipus[i];
    os << (i ? "," : "") << "\n    {\"ipu\": " << r.ipu << ", \"capacity\": " << r.plan.capacity << ", \"cycles\": " << r.plan.cycles
       << ", \"peak\": " << r.plan.peak << ", \"peak_tile\": " << r.plan.peak_tile << ", \"peak_step\": " << r.plan.peak_step
       << ", \"at_peak\": ";
    bytes(r.plan.at_peak);
    os << ", \"totals\": ";
    bytes(r.plan.totals);
    os << ", \"histogram\": [";
    for (std::size_t b = 0; b < r.histogram.size(); ++b) os << (b ? ", " : "") << r.histogram[b];
    os << "],\n     \"tiles\": [";
    for (std::size_t t = 0; t < r.tiles.size(); ++t) {
      os << (t ? ", " : "");
      bytes(r.tiles[t].bytes, r.tiles[t].step);
    }
    os << "],\n     \"steps\": [";
    for (std::size_t k = 0; k < r.layers.size(); ++k) {
      const layer_peak& l = r.layers[k];
      os << (k ? "," : "") << "\n       {\"node\": " << l.node << ", \"tile\": " << l.tile << ", \"bytes\": ";
      bytes(l.bytes);
      os << ", \"ipu_bytes\": ";
      bytes(l.ipu_bytes);
      os << '}';
    }
    os << "],\n     \"over_bound\": [";
    for (std::size_t k = 0; k < r.warnings.size(); ++k)
      os << (k ? ", " : "") << "{\"node\": " << r.warnings[k].node << ", \"transient_bytes\": " << r.warnings[k].transient_bytes
         << ", \"bound\": " << r.warnings[k].bound << '}';
    os << "]}";
  }
  os << "\n  ]\n}\n";
}

inline std::string memory_report_t::str() const {
  std::ostringstream os;
  const ratio amp = opts.available_memory_proportion;
  os << "memory report: " << target << ", " << ipu_count << (ipu_count == 1 ? " IPU" : " IPUs") << " of "
     << detail::grouped(chip.tiles) << " tiles x " << detail::grouped(chip.bytes_per_tile) << " bytes";
  if (opts.io_tiles > 0) os << " (" << detail::grouped(opts.io_tiles) << " of them I/O tiles)";
  os << ", " << nodes.size() << " nodes, available memory proportion " << amp.num << '/' << amp.den << '\n';
  for (const ipu_report& r : ipus) detail::print_ipu(os, *this, r);
  // The word "warning" appears only when there is one.
  os << (fits ? "fits" : "does not fit");
  if (warnings() > 0) os << "; " << warnings() << (warnings() == 1 ? " warning" : " warnings");
  os << '\n';
  return os.str();
}

/// The memory report of graph `G` on `T` with `Opts`, from `plan_v<G, T, Opts>`.
///
/// Runs at run time in O(T x N) per IPU (T tiles, N nodes); the plan itself is a compile-time
/// constant.
template <Graph G, Target T, options Opts = options{}>
memory_report_t memory_report() {
  const auto& p = plan_v<G, T, Opts>;
  memory_report_t r;
  r.target = T::name;
  r.ipu_count = T::ipus;
  r.chip = p.chip;
  r.opts = p.opts;
  r.nodes.assign(p.table->begin(), p.table->end());
  r.fits = p.fits;
  for (int i = 0; i < T::ipus; ++i) r.ipus.push_back(detail::report_ipu(p, i));
  return r;
}

}  // namespace ipu
