#pragma once
/// \file
/// `ipu::memory_report<ipu::training<G, Opts>, Target, Options>()`: where a training step's tile
/// memory goes (`plan/training.hpp`). The plan's peak and its bytes by category, the IPU's
/// totals, the cycle model's time of a step by phase, the fullest tile of each phase (forward,
/// recompute, backward, update), a histogram of the tiles' peaks and the fullest tiles.
///
/// As for inference, the headline peak is the plan's, the highest byte its allocation reaches;
/// the report recomputes every tile's most bytes in use at run time, in O(T x (N + S)) for T
/// tiles, N nodes and S steps: each tile's buffers enter a difference array over the steps.

#include <ipu/plan/training.hpp>
#include <ipu/core/json.hpp>
#include <ipu/core/stream_state.hpp>
#include <ipu/report/memory_report.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <iomanip>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace ipu {

/// The memory report of a training plan: the data as public members, printable with `<<` or
/// `str()`. Every figure is in bytes of one tile unless its name says otherwise.
struct training_memory_report_t {
  /// Histogram buckets up to capacity, each `100 / buckets` percent wide; one more bucket counts
  /// the tiles over capacity.
  static constexpr int buckets = memory_report_t::buckets;
  /// Fullest tiles kept and printed.
  static constexpr int fullest_tiles = memory_report_t::fullest_tiles;
  /// Phases of a training step, in the order of `step_phase`.
  static constexpr int phase_count = 4;

  /// A tile's most bytes in use over some steps.
  struct tile_peak {
    int tile = -1;          ///< the tile
    int step = -1;          ///< the step at the tile's peak (earliest on a tie)
    training_bytes bytes{};  ///< the tile's bytes there, by category; `bytes.total()` is the peak
  };

  std::string target;          ///< the target's name
  chip_spec chip{};            ///< the chip of the target's IPUs
  options opts{};              ///< the plan's options
  train_options train{};       ///< the training options
  int state_shards = 1;        ///< the replicas sharing out the optimiser state (`training_plan::state_shards`)
  std::vector<node> nodes;     ///< the graph's node table
  std::vector<plan_step> steps;  ///< the training step's steps, in order
  training_memory plan{};      ///< the plan's figures for IPU 0: capacity, peak, totals
  std::vector<tile_peak> tiles;  ///< every tile's peak over all steps, indexed by tile
  tile_peak peak{};            ///< the fullest tile as recomputed here
  std::array<tile_peak, phase_count> phases{};  ///< the fullest tile during the steps of each phase
  std::array<int, phase_count> phase_steps{};   ///< steps of each phase
  std::array<step_cycles, phase_count> phase_cycles{};  ///< the cycle model's cycles of each phase's steps
  std::int64_t total_cycles = 0;                ///< of the whole step
  std::array<int, buckets + 1> histogram{};     ///< tiles per bucket of `peak / capacity`
  std::vector<tile_peak> fullest;  ///< the fullest tiles, fullest first (lowest tile on a tie)
  /// By step: the bytes of all the IPU's tiles while it runs, by category (its memory over time).
  std::vector<training_bytes> ipu_bytes;
  /// By step: the fullest tile while it runs (lowest on a tie), and its bytes.
  std::vector<tile_peak> step_peaks;
  /// Every tile's bytes in use at every step: `step_tiles[s * tiles.size() + t]` for tile `t`
  /// during step `s` (the memory map over time; see `bytes_at`).
  std::vector<std::int64_t> step_tiles;
  bool fits = true;            ///< the plan fits

  /// Tile `t`'s bytes in use during step `s`.
  std::int64_t bytes_at(int s, int t) const noexcept {
    return step_tiles[static_cast<std::size_t>(s) * tiles.size() + static_cast<std::size_t>(t)];
  }

  /// `"backward stage4.block1.conv2"`: the phase and layer of step `s`, or `"-"` for none.
  std::string step_name(int s) const {
    if (s < 0) return "-";
    const plan_step& st = steps[static_cast<std::size_t>(s)];
    return std::string(name_of(st.phase)) + ' ' + std::string(nodes[static_cast<std::size_t>(st.node)].path.view());
  }

  /// The report as text.
  std::string str() const;

  /// Writes the report as JSON, as `memory_report_t::write_json` does, with the training
  /// plan's nine categories: the head (target, tiles, `"categories"`, `"layers"`), then
  /// `"training"` (the configuration in words), `"state_shards"`, the plan's `"capacity"`,
  /// `"peak"`, `"peak_tile"`, `"peak_step"`, `"at_peak"` and `"totals"`, `"histogram"`;
  /// `"steps"`: each step's node, phase, fullest `"tile"` and its `"bytes"`, and `"ipu_bytes"`
  /// (all the tiles summed); `"phases"`: each phase's steps, cycles (compute, exchange, sync)
  /// and fullest tile; `"tile_peaks"`: each tile's peak as `[step, bytes...]`. Bytes by
  /// category are arrays in the order of `"categories"`.
  void write_json(std::ostream& os) const;
  /// Writes the JSON report to `path`; throws `std::runtime_error` if it cannot.
  void write_json(const std::string& path) const {
    detail::write_file(path, "ipu::memory_report", [&](std::ostream& os) { write_json(os); });
  }

  /// Prints the report.
  friend std::ostream& operator<<(std::ostream& os, const training_memory_report_t& r) { return os << r.str(); }
};

namespace detail {

/// `weights 1,234  code 567  ...`: the bytes of every category of `m`.
inline void print_training_categories(std::ostream& os, const training_bytes& m) {
  for (int c = 0; c < training_category_count; ++c) {
    const auto category = training_category{static_cast<std::uint8_t>(c)};
    os << "  " << name_of(category) << ' ' << grouped(m[category]);
  }
}

}  // namespace detail

inline void training_memory_report_t::write_json(std::ostream& os) const {
  const detail::stream_state keep(os);
  const auto bytes = [&](const training_bytes& m, std::optional<int> step = std::nullopt) {
    detail::write_json_bytes<training_category, training_category_count>(os, m, step);
  };
  detail::write_json_head<training_category, training_category_count>(os, target, chip, fits, nodes);
  os << ",\n  \"training\": " << detail::json_string{detail::describe(train)} << ",\n  \"state_shards\": " << state_shards
     << ",\n  \"capacity\": " << plan.capacity << ",\n  \"peak\": " << plan.peak << ",\n  \"peak_tile\": " << plan.peak_tile
     << ",\n  \"peak_step\": " << plan.peak_step << ",\n  \"at_peak\": ";
  bytes(plan.at_peak);
  os << ",\n  \"totals\": ";
  bytes(plan.totals);
  os << ",\n  \"histogram\": [";
  for (std::size_t b = 0; b < histogram.size(); ++b) os << (b ? ", " : "") << histogram[b];
  os << "],\n  \"steps\": [";
  for (std::size_t s = 0; s < steps.size(); ++s) {
    os << (s ? "," : "") << "\n    {\"node\": " << steps[s].node << ", \"phase\": " << detail::json_string{name_of(steps[s].phase)}
       << ", \"tile\": " << step_peaks[s].tile << ", \"bytes\": ";
    bytes(step_peaks[s].bytes);
    os << ", \"ipu_bytes\": ";
    bytes(ipu_bytes[s]);
    os << '}';
  }
  os << "\n  ],\n  \"phases\": [";
  for (int ph = 0; ph < phase_count; ++ph) {
    const step_cycles& c = phase_cycles[static_cast<std::size_t>(ph)];
    const tile_peak& f = phases[static_cast<std::size_t>(ph)];
    os << (ph ? "," : "") << "\n    {\"phase\": " << detail::json_string{name_of(step_phase{static_cast<std::uint8_t>(ph)})}
       << ", \"steps\": " << phase_steps[static_cast<std::size_t>(ph)] << ", \"compute_cycles\": " << c.compute
       << ", \"exchange_cycles\": " << c.exchange << ", \"sync_cycles\": " << c.sync << ", \"fullest_tile\": " << f.tile
       << ", \"fullest\": ";
    bytes(f.bytes, f.step);
    os << '}';
  }
  os << "\n  ],\n  \"tile_peaks\": [";
  for (std::size_t t = 0; t < tiles.size(); ++t) {
    os << (t ? ", " : "");
    bytes(tiles[t].bytes, tiles[t].step);
  }
  os << "]\n}\n";
}

inline std::string training_memory_report_t::str() const {
  using detail::grouped, detail::percent;
  std::ostringstream os;
  const std::int64_t capacity = plan.capacity;
  os << "training memory report: " << target << ", 1 IPU of " << grouped(chip.tiles) << " tiles x "
     << grouped(chip.bytes_per_tile) << " bytes, " << nodes.size() << " nodes\n"
     << "  " << detail::describe(train);
  if (state_shards > 1) os << ", optimiser state shared out over " << state_shards << " replicas";
  os << '\n'
     << "  " << steps.size() << " steps:";
  for (int ph = 0; ph < phase_count; ++ph)
    if (phase_steps[static_cast<std::size_t>(ph)] > 0)
      os << ' ' << phase_steps[static_cast<std::size_t>(ph)] << ' ' << name_of(step_phase{static_cast<std::uint8_t>(ph)});
  os << '\n';

  // 1. The plan's peak and the IPU's totals.
  os << "  peak " << grouped(plan.peak) << " of " << grouped(capacity) << " bytes (" << percent(plan.peak, capacity)
     << ") on tile " << plan.peak_tile;
  if (plan.peak_step >= 0) os << ", during the " << step_name(plan.peak_step) << " step";
  if (plan.peak > capacity) os << ": " << grouped(plan.peak - capacity) << " bytes over";
  os << "\n   ";
  detail::print_training_categories(os, plan.at_peak);
  if (plan.unused_at_peak() > 0) os << "  alignment and gaps " << grouped(plan.unused_at_peak());
  if (plan.peak_node >= 0)
    os << "\n    most bytes there: " << name_of(plan.peak_category) << ", the largest of "
       << nodes[static_cast<std::size_t>(plan.peak_node)].path.view();
  os << "\n  IPU totals (summed over tiles; the categories that come and go at their largest step):\n   ";
  detail::print_training_categories(os, plan.totals);
  os << '\n';

  // 2. The cycle model's time of a step.
  const std::int64_t batch = nodes.front().out.dim[0];
  os << "  cycles of a step (cycle model): " << grouped(total_cycles);
  for (int ph = 0; ph < phase_count; ++ph)
    if (phase_steps[static_cast<std::size_t>(ph)] > 0)
      os << (ph == 0 ? ": " : ", ") << name_of(step_phase{static_cast<std::uint8_t>(ph)}) << ' '
         << grouped(phase_cycles[static_cast<std::size_t>(ph)].total());
  if (total_cycles > 0 && chip.clock_hz > 0) {
    const double seconds = static_cast<double>(total_cycles) / static_cast<double>(chip.clock_hz);
    os << "\n    " << std::fixed << std::setprecision(3) << seconds * 1e3 << " ms at " << std::setprecision(2)
       << static_cast<double>(chip.clock_hz) / 1e9 << " GHz: " << std::setprecision(1)
       << static_cast<double>(batch) / seconds << " samples/s" << std::defaultfloat;
  }
  os << '\n';

  // 3. The fullest tile of each phase.
  os << "  fullest tile by phase:\n";
  for (int ph = 0; ph < phase_count; ++ph) {
    const tile_peak& tp = phases[static_cast<std::size_t>(ph)];
    if (tp.step < 0) continue;
    os << "    " << std::left << std::setw(10) << name_of(step_phase{static_cast<std::uint8_t>(ph)}) << std::right
       << std::setw(12) << grouped(tp.bytes.total()) << std::setw(8) << percent(tp.bytes.total(), capacity) << "  tile "
       << tp.tile << ", " << step_name(tp.step) << '\n';
  }

  // 4. The histogram of the tiles' peaks.
  constexpr int bar_width = 50;
  const int most = std::max(1, *std::max_element(histogram.begin(), histogram.end()));
  os << "  tile peaks, by share of a tile's " << grouped(capacity) << " bytes (" << grouped(static_cast<std::int64_t>(tiles.size()))
     << " tiles):\n";
  for (int b = 0; b <= buckets; ++b) {
    const int count = histogram[static_cast<std::size_t>(b)];
    std::ostringstream label;
    if (b < buckets) label << b * 100 / buckets << '-' << (b + 1) * 100 / buckets << '%';
    else label << "over 100%";
    const int bar = count == 0 ? 0 : std::max(1, count * bar_width / most);
    os << "    " << std::left << std::setw(10) << label.str() << std::right << std::setw(6) << count;
    if (bar > 0) os << ' ' << std::string(static_cast<std::size_t>(bar), '#');
    os << '\n';
  }

  // 5. The fullest tiles.
  os << "  fullest tiles:\n";
  for (const tile_peak& tp : fullest) {
    os << "    tile " << std::setw(5) << tp.tile << std::setw(12) << grouped(tp.bytes.total()) << "  " << step_name(tp.step)
       << "\n     ";
    detail::print_training_categories(os, tp.bytes);
    os << '\n';
  }
  os << (fits ? "fits" : "does not fit") << '\n';
  return os.str();
}

namespace detail {

/// The report of training plan `p` on target `T`.
template <class T, std::size_t N, std::size_t S, int Ipus>
training_memory_report_t report_training(const training_plan<N, S, Ipus>& p) {
  using tile_peak = training_memory_report_t::tile_peak;
  training_memory_report_t r;
  r.target = T::name;
  r.chip = p.chip();
  r.opts = p.inference->opts;
  r.train = p.train;
  r.state_shards = p.state_shards;
  r.nodes.assign(p.inference->table->begin(), p.inference->table->end());
  r.steps.assign(p.steps.begin(), p.steps.end());
  r.plan = p.ipus[0];
  r.fits = p.fits;
  for (const plan_step& s : p.steps) ++r.phase_steps[static_cast<std::size_t>(s.phase)];
  r.phase_cycles = p.phase_cycles();
  r.total_cycles = p.total_cycles();

  // Tile by tile: each buffer adds its bytes over its steps to a difference array, whose running
  // sum is the tile's dynamic bytes at each step.
  const int tiles = p.chip().tiles;
  r.tiles.resize(static_cast<std::size_t>(tiles));
  std::vector<training_bytes> delta(S + 1);
  r.ipu_bytes.assign(S, training_bytes{});
  r.step_tiles.resize(S * static_cast<std::size_t>(tiles));
  std::vector<std::int64_t> step_most(S, -1);  // by step: the fullest tile's bytes, and the tile
  std::vector<int> step_tile(S, -1);
  for (int t = 0; t < tiles; ++t) {
    std::fill(delta.begin(), delta.end(), training_bytes{});
    p.for_each_buffer([&](const training_buffer& b) {
      const training_bytes bytes = p.bytes_on(b, t);
      delta[static_cast<std::size_t>(b.first)] += bytes;
      delta[static_cast<std::size_t>(b.last) + 1] -= bytes;
    });
    training_bytes always_bytes = p.tensors_on(t);  // a pipeline stage's stash too
    always_bytes.code = p.code_on(t);
    const std::int64_t always = always_bytes.total();
    training_bytes dynamic{};
    std::array<std::int64_t, training_memory_report_t::phase_count> phase_most{-1, -1, -1, -1};
    std::array<int, training_memory_report_t::phase_count> phase_step{-1, -1, -1, -1};
    int best = -1;
    std::int64_t most = -1;
    for (int s = 0; s < static_cast<int>(S); ++s) {
      dynamic += delta[static_cast<std::size_t>(s)];
      const std::int64_t live = dynamic.not_always_live();
      training_bytes& on_ipu = r.ipu_bytes[static_cast<std::size_t>(s)];
      on_ipu += always_bytes;
      on_ipu += dynamic;
      if (live > most) most = live, best = s;
      const auto at = static_cast<std::size_t>(s);
      r.step_tiles[at * static_cast<std::size_t>(tiles) + static_cast<std::size_t>(t)] = always + live;
      if (always + live > step_most[at]) step_most[at] = always + live, step_tile[at] = t;
      const auto ph = static_cast<std::size_t>(p.steps[static_cast<std::size_t>(s)].phase);
      if (live > phase_most[ph]) phase_most[ph] = live, phase_step[ph] = s;
    }
    r.tiles[static_cast<std::size_t>(t)] = {t, best, p.usage(t, best)};
    for (std::size_t ph = 0; ph < phase_most.size(); ++ph) {
      tile_peak& fp = r.phases[ph];
      if (phase_step[ph] >= 0 && always + phase_most[ph] > (fp.step < 0 ? -1 : fp.bytes.total()))
        fp = {t, phase_step[ph], p.usage(t, phase_step[ph])};
    }
  }
  for (int s = 0; s < static_cast<int>(S); ++s) {
    const int t = step_tile[static_cast<std::size_t>(s)];
    r.step_peaks.push_back({t, s, p.usage(t, s)});
  }
  for (const tile_peak& tp : r.tiles) {
    if (r.peak.tile < 0 || tp.bytes.total() > r.peak.bytes.total()) r.peak = tp;
    ++r.histogram[static_cast<std::size_t>(memory_report_t::bucket_of(tp.bytes.total(), r.plan.capacity))];
  }
  r.fullest = r.tiles;
  const auto kept = std::min<std::size_t>(r.fullest.size(), training_memory_report_t::fullest_tiles);
  std::partial_sort(r.fullest.begin(), r.fullest.begin() + static_cast<std::ptrdiff_t>(kept), r.fullest.end(),
                    [](const tile_peak& a, const tile_peak& b) {
                      return a.bytes.total() != b.bytes.total() ? a.bytes.total() > b.bytes.total() : a.tile < b.tile;
                    });
  r.fullest.resize(kept);
  return r;
}

}  // namespace detail

/// The memory report of a training step, `ipu::training<G, TrainOpts>`, on `T` with `Opts`,
/// from `plan_v<ipu::training<G, TrainOpts>, T, Opts>`. Runs at run time in O(T x (N + S)).
template <class Training, Target T, options Opts = options{}>
  requires detail::is_training_spec<Training>::value
training_memory_report_t memory_report() {
  return detail::report_training<T>(plan_v<Training, T, Opts>);
}

/// The summary of graph `G` trained with `Opts` (`ipu::summary<ipu::training<G, Opts>>()`): the
/// graph's table, then the optimiser, the precision, the loss scaling, the recomputation, the
/// loss and the schedule, the values training updates and keeps, and the MACs of a step
/// (forward, recomputed: those of the nodes whose outputs are not kept, and backward).
template <class Spec>
  requires detail::is_training_spec<Spec>::value
model_summary summary() {
  constexpr const auto& table = node_table_v<typename Spec::graph_type>;
  constexpr auto kept = detail::kept_outputs(table, Spec::options.recompute);
  std::int64_t recomputed = 0;
  for (std::size_t j = 0; j < table.size(); ++j)
    if (!kept[j]) recomputed += table[j].macs;
  return model_summary(table, Spec::options, recomputed);
}

}  // namespace ipu
