#pragma once
/// \file
/// What engines log (`ipu/core/log.hpp`): the plan when one is built, each batch's steps, and
/// each run over the feeds.

#include <ipu/core/format.hpp>
#include <ipu/core/log.hpp>
#include <ipu/ops/op.hpp>
#include <ipu/plan/plan.hpp>
#include <ipu/runtime/execution.hpp>
#include <ipu/runtime/profile.hpp>

#include <cstddef>
#include <cstdint>
#include <iomanip>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace ipu::runtime {

/// The share of a tile's memory, in percent, above which `warn` flags the tile: the margin
/// left for what the plan does not model.
inline constexpr int full_tile_percent = 90;

/// At `warn`: for each of `ipus` IPUs of `tiles` tiles of `capacity` bytes, the tiles whose
/// memory reaches above `full_tile_percent` of it (`extent(ipu, tile)`: one past their
/// highest byte), how many and the fullest, as a line from `component`.
template <class Extent>
void warn_full_tiles(std::string_view component, int ipus, int tiles, std::int64_t capacity, Extent&& extent) {
  if (!logging::enabled(log_level::warn)) return;
  for (int i = 0; i < ipus; ++i) {
    int full = 0, fullest = 0;
    std::int64_t most = 0;
    for (int t = 0; t < tiles; ++t) {
      const std::int64_t bytes = extent(i, t);
      if (bytes * 100 > capacity * full_tile_percent) ++full;
      if (bytes > most) most = bytes, fullest = t;
    }
    if (full > 0)
      logging::warn(component, "IPU ", i, ": ", full, " of ", tiles, " tiles above ", full_tile_percent, "% of their ",
                    detail::grouped(capacity), " bytes; the fullest, tile ", fullest, ", holds ", detail::grouped(most),
                    " (", detail::percent(most, capacity), ")");
  }
}

/// At `info`, an engine built on `target` from plan `p`: its layers, batch, mode and threads,
/// each IPU's peak, and the cycle model's throughput (`prof`); at `warn`, its full tiles.
template <std::size_t N, int Ipus>
void log_engine_built(const plan<N, Ipus>& p, const profile& prof, std::string_view target, execution_mode mode,
                      unsigned threads, bool pipelined) {
  if (logging::enabled(log_level::info)) {
    std::ostringstream os;
    os << target << ", " << Ipus << (Ipus == 1 ? " IPU: " : " IPUs: ") << N << " layers, batch " << prof.batch_size() << ", "
       << name_of(mode) << " mode, " << threads << (threads == 1 ? " thread" : " threads") << (pipelined ? ", pipelined" : "");
    for (int i = 0; i < Ipus; ++i) {
      const ipu_memory& m = p.ipus[static_cast<std::size_t>(i)];
      os << "; IPU " << i << " peak " << detail::grouped(m.peak) << " of " << detail::grouped(m.capacity) << " bytes ("
         << detail::percent(m.peak, m.capacity) << ") on tile " << m.peak_tile;
    }
    os << std::fixed << std::setprecision(1) << "; " << (Ipus > 1 && pipelined ? prof.pipelined_images_per_second() : prof.simulated_images_per_second())
       << " images/s simulated";
    logging::info("engine", os.str());
  }
  warn_full_tiles("engine", Ipus, p.chip.tiles, p.chip.bytes_per_tile, [&](int i, int t) { return p.extent_on(i, t); });
}

/// At `debug`, the steps of the batch just run (the `batch`-th): each step's layer, op and host
/// time (`seconds`, by step, as `profile::record_batch` takes them).
inline void log_batch_steps(const profile& prof, const std::vector<double>& seconds, std::int64_t batch) {
  if (!logging::enabled(log_level::debug)) return;
  const std::vector<step_profile>& steps = prof.steps();
  for (std::size_t j = 0; j < steps.size() && j < seconds.size(); ++j) {
    std::ostringstream os;
    os << "batch " << batch << ", step " << j << ' ' << steps[j].path.view() << " (" << name_of(steps[j].kind) << "): "
       << std::fixed << std::setprecision(3) << seconds[j] * 1e3 << " ms";
    logging::debug("engine", os.str());
  }
}

}  // namespace ipu::runtime
