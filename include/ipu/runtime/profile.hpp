#pragma once
/// \file
/// `ipu::profile`: what the cycle model predicts for each step on the target, next to the
/// host time the executor measured.
///
/// **The cycle model.** A step on an IPU is an exchange phase, a sync, a compute phase and a
/// sync (a conv split into serial slices runs that loop once per slice). For the fullest tile:
///   - compute: conv and dense at the chip's MACs per cycle per tile (`chip_spec::f16_macs_per_cycle`
///     or `f32_macs_per_cycle`, the AMP's rate); every other op one vector per cycle per value
///     read (6 workers issue round-robin, one instruction per tile cycle);
///   - exchange: the bytes the tile receives (the plan's exchange buffers) at its share of
///     the chip's exchange bandwidth, `exchange_bytes_per_s / tiles`;
///   - sync: `options::cycles.sync_cycles` per sync (an assumption; see `cycle_costs`);
///   - IPU-Link: an output read on another IPU crosses at `link_bytes_per_s`;
///   - host link: a step of an `ipu::on_host` block moves what it reads from the IPUs and its
///     output to the IPUs that read it at `host_bytes_per_s`, between two syncs; its arithmetic
///     is host time, which the profile measures.
/// Cycles become seconds at `clock_hz`. One batch runs the IPUs' steps one after another, so
/// the simulated time per batch is the sum over all steps; with successive batches pipelined
/// across IPUs, throughput is set by the busiest IPU (`pipelined_images_per_second`).

#include <ipu/core/fixed_string.hpp>
#include <ipu/core/json.hpp>
#include <ipu/core/stream_state.hpp>
#include <ipu/graph/compose.hpp>
#include <ipu/graph/node.hpp>
#include <ipu/graph/queries.hpp>
#include <ipu/plan/plan.hpp>
#include <ipu/runtime/program.hpp>
#include <ipu/target/chip.hpp>
#include <ipu/target/options.hpp>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iomanip>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace ipu {

/// One step (one node) of the program: the cycles the model predicts for its fullest tile,
/// by phase, and the host time measured for it.
struct step_profile {
  int node = 0;                     ///< index of the node in the node table, which is its step
  path_string path{};               ///< the node's layer path, e.g. `"stage1.block1.conv2"`
  op kind{};                        ///< the node's operation
  int ipu = 0;                      ///< the IPU the step runs on, or `host_device` for a host step
  std::int64_t compute_cycles = 0;  ///< arithmetic of the fullest tile, over all serial slices
  std::int64_t exchange_cycles = 0; ///< receiving the fullest tile's exchange buffers
  std::int64_t sync_cycles = 0;     ///< `options::cycles.sync_cycles` per sync, two per slice; 0 for the input
  std::int64_t link_cycles = 0;     ///< sending the output over the IPU-Link; 0 unless read on another IPU
  std::int64_t host_cycles = 0;     ///< a host step's transfers over the host link; 0 for an IPU step
  double host_seconds = 0;  ///< measured host time per batch (mean over the batches run)

  /// Simulated cycles of the step: compute, exchange, sync, link and host link together.
  std::int64_t cycles() const noexcept { return compute_cycles + exchange_cycles + sync_cycles + link_cycles + host_cycles; }
};

/// Totals of one IPU (or of the host steps): the sums of its steps' `step_profile` figures.
struct ipu_profile {
  /// Simulated compute cycles of the IPU's steps, summed.
  std::int64_t compute_cycles = 0, exchange_cycles = 0, sync_cycles = 0, link_cycles = 0, host_cycles = 0;
  /// Steps (nodes) placed on the IPU.
  int steps = 0;
  /// Sum of the steps' mean measured host seconds per batch.
  double host_seconds = 0;
  /// Simulated cycles of one batch on the IPU: compute, exchange, sync, link and host link together.
  std::int64_t cycles() const noexcept { return compute_cycles + exchange_cycles + sync_cycles + link_cycles + host_cycles; }
  /// \var exchange_cycles
  /// \brief Simulated exchange cycles of the IPU's steps, summed.
  /// \var sync_cycles
  /// \brief Simulated sync cycles of the IPU's steps, summed.
  /// \var link_cycles
  /// \brief Simulated IPU-Link cycles of the IPU's steps, summed.
  /// \var host_cycles
  /// \brief Simulated host-link cycles of the host steps, summed (0 for an IPU).
};

/// The simulated and measured profile of an engine.
class profile {
 public:
  profile() = default;

  /// The cycle model of `prog` (host times zero until batches run). `batch` is the images per
  /// batch; `target` and `mode` are names for the reports and must outlive the profile.
  explicit profile(const runtime::program& prog, std::int64_t batch, const char* target, const char* mode)
      : batch_(batch), clock_hz_(prog.chip.clock_hz), target_(target), mode_(mode) {
    ipus_.resize(static_cast<std::size_t>(prog.ipus));
    for (int j = 0; j < prog.size(); ++j) {
      const node& n = prog.at(j);
      const node_plan& p = prog.plan_of(j);
      step_profile s;
      s.node = j;
      s.path = n.path;
      s.kind = n.kind;
      s.ipu = n.ipu;
      s.compute_cycles = p.cycles.compute;  // the plan's figures (plan/cycles.hpp)
      s.exchange_cycles = p.cycles.exchange;
      s.sync_cycles = p.cycles.sync;
      s.link_cycles = p.cycles.link;
      s.host_cycles = p.cycles.host;
      steps_.push_back(s);
      ipu_profile& i = totals_of(s);
      i.compute_cycles += s.compute_cycles;
      i.exchange_cycles += s.exchange_cycles;
      i.sync_cycles += s.sync_cycles;
      i.link_cycles += s.link_cycles;
      i.host_cycles += s.host_cycles;
      ++i.steps;
    }
  }

  /// One entry per node, in node-table order (`steps()[j]` is node `j`).
  const std::vector<step_profile>& steps() const& noexcept { return steps_; }
  /// The steps, moved out of a temporary profile: in `for (const auto& s :
  /// ipu::plan_profile<G, T>().steps())` the profile is destroyed before the loop's body runs,
  /// and the loop reads the vector this returns, not the destroyed profile's.
  std::vector<step_profile> steps() && noexcept { return std::move(steps_); }
  /// One entry per IPU, indexed by IPU.
  const std::vector<ipu_profile>& ipus() const& noexcept { return ipus_; }
  /// The IPUs' entries, moved out of a temporary profile (see `steps() &&`).
  std::vector<ipu_profile> ipus() && noexcept { return std::move(ipus_); }
  /// The totals of the host steps (`ipu::on_host`); no steps when the graph has none.
  const ipu_profile& host() const& noexcept { return host_; }
  /// The host steps' totals, copied out of a temporary profile (see `steps() &&`).
  ipu_profile host() && noexcept { return host_; }
  /// Images per batch.
  std::int64_t batch_size() const noexcept { return batch_; }
  /// The target's clock, in cycles per second, at which cycles become seconds.
  std::int64_t clock_hz() const noexcept { return clock_hz_; }

  /// Simulated cycles of one batch: every step of every IPU and of the host, one after another.
  std::int64_t cycles_per_batch() const noexcept {
    std::int64_t c = host_.cycles();
    for (const ipu_profile& i : ipus_) c += i.cycles();
    return c;
  }
  /// Simulated seconds of one batch: `cycles_per_batch()` at `clock_hz()`.
  double simulated_seconds_per_batch() const noexcept {
    return static_cast<double>(cycles_per_batch()) / static_cast<double>(clock_hz_);
  }
  /// Simulated throughput without pipelining: `batch_size()` images per simulated batch time;
  /// 0 for a profile without cycles, as the host figures are without batches.
  double simulated_images_per_second() const noexcept {
    const double seconds = simulated_seconds_per_batch();
    return seconds > 0 ? static_cast<double>(batch_) / seconds : 0;
  }
  /// Throughput with successive batches pipelined over the IPUs (and the host steps, as one
  /// more stage): the busiest sets it.
  double pipelined_images_per_second() const noexcept {
    std::int64_t busiest = std::max<std::int64_t>(1, host_.cycles());
    for (const ipu_profile& i : ipus_) busiest = std::max(busiest, i.cycles());
    return static_cast<double>(batch_) * static_cast<double>(clock_hz_) / static_cast<double>(busiest);
  }

  /// Batches whose host time the profile holds.
  std::int64_t batches_measured() const noexcept { return batches_; }
  /// Mean measured host seconds per batch (0 before the first batch).
  double host_seconds_per_batch() const noexcept { return batches_ > 0 ? host_total_ / static_cast<double>(batches_) : 0; }
  /// Measured throughput: images run per host second over the batches measured (0 before
  /// the first batch).
  double host_images_per_second() const noexcept {
    return host_total_ > 0 ? static_cast<double>(batch_ * batches_) / host_total_ : 0;
  }

  /// Adds one batch's measured host seconds per step (`seconds[j]` for node `j`); throws
  /// `std::logic_error` unless there is one time per step.
  void record_batch(const std::vector<double>& seconds) {
    if (seconds.size() != steps_.size()) throw std::logic_error("ipu::profile: one time per step expected");
    ++batches_;
    double total = 0;
    for (ipu_profile& i : ipus_) i.host_seconds = 0;
    host_.host_seconds = 0;
    for (std::size_t j = 0; j < seconds.size(); ++j) {
      step_profile& s = steps_[j];
      s.host_seconds += (seconds[j] - s.host_seconds) / static_cast<double>(batches_);
      totals_of(s).host_seconds += s.host_seconds;
      total += seconds[j];
    }
    host_total_ += total;
  }

  /// The profile as JSON: the target, the model's totals, the measured figures, one object
  /// per IPU, one for the host steps if the graph has any (`"host"`), and one per step (a host
  /// step's `"ipu"` is -1). Names (the target's, the layer paths) are JSON strings, escaped as
  /// RFC 8259 requires.
  void write_json(std::ostream& os) const {
    using detail::json_string;
    const detail::stream_state keep(os);
    os << std::setprecision(9) << "{\n  \"target\": " << json_string{target_} << ",\n  \"mode\": "
       << json_string{mode_} << ",\n  \"batch_size\": " << batch_ << ",\n  \"clock_hz\": " << clock_hz_
       << ",\n  \"cycles_per_batch\": " << cycles_per_batch()
       << ",\n  \"simulated_seconds_per_batch\": " << simulated_seconds_per_batch()
       << ",\n  \"simulated_images_per_second\": " << simulated_images_per_second()
       << ",\n  \"pipelined_images_per_second\": " << pipelined_images_per_second()
       << ",\n  \"batches_measured\": " << batches_ << ",\n  \"host_seconds_per_batch\": " << host_seconds_per_batch()
       << ",\n  \"host_images_per_second\": " << host_images_per_second() << ",\n  \"ipus\": [";
    const auto totals = [&](const ipu_profile& p) {
      os << "\"steps\": " << p.steps << ", \"compute_cycles\": " << p.compute_cycles << ", \"exchange_cycles\": "
         << p.exchange_cycles << ", \"sync_cycles\": " << p.sync_cycles << ", \"link_cycles\": " << p.link_cycles
         << ", \"host_cycles\": " << p.host_cycles << ", \"host_seconds\": " << p.host_seconds << "}";
    };
    for (std::size_t i = 0; i < ipus_.size(); ++i) {
      os << (i ? "," : "") << "\n    {\"ipu\": " << i << ", ";
      totals(ipus_[i]);
    }
    os << "\n  ],";
    if (host_.steps > 0) {
      os << "\n  \"host\": {";
      totals(host_);
      os << ",";
    }
    os << "\n  \"steps\": [";
    for (std::size_t j = 0; j < steps_.size(); ++j) {
      const step_profile& s = steps_[j];
      os << (j ? "," : "") << "\n    {\"node\": " << s.node << ", \"path\": " << json_string{s.path.view()}
         << ", \"op\": " << json_string{name_of(s.kind)} << ", \"ipu\": " << s.ipu
         << ", \"compute_cycles\": " << s.compute_cycles << ", \"exchange_cycles\": " << s.exchange_cycles
         << ", \"sync_cycles\": " << s.sync_cycles << ", \"link_cycles\": " << s.link_cycles
         << ", \"host_cycles\": " << s.host_cycles << ", \"host_seconds\": " << s.host_seconds << "}";
    }
    os << "\n  ]\n}\n";
  }
  /// Writes the JSON profile to `path`; throws `std::runtime_error` if it cannot.
  void write_json(const std::string& path) const {
    detail::write_file(path, "ipu::profile", [&](std::ostream& os) { write_json(os); });
  }

  /// A summary: the model's totals and per IPU, the measured host figures, and the ten
  /// steps with the most simulated cycles.
  friend std::ostream& operator<<(std::ostream& os, const profile& p) {
    const detail::stream_state keep(os);
    os << "profile on " << p.target_ << " (" << p.mode_ << " mode), batch " << p.batch_ << "\n"
       << std::fixed << std::setprecision(3) << "  simulated: " << p.cycles_per_batch() << " cycles, "
       << p.simulated_seconds_per_batch() * 1e3 << " ms per batch, " << std::setprecision(1)
       << p.simulated_images_per_second() << " images/s";
    if (p.ipus_.size() > 1) os << " (" << p.pipelined_images_per_second() << " images/s pipelined)";
    os << "\n";
    if (p.batches_ > 0)
      os << std::setprecision(3) << "  host:      " << p.host_seconds_per_batch() * 1e3 << " ms per batch, "
         << std::setprecision(2) << p.host_images_per_second() << " images/s over " << p.batches_ << " batches\n";
    for (std::size_t i = 0; i < p.ipus_.size(); ++i) {
      const ipu_profile& q = p.ipus_[i];
      os << "  ipu " << i << ": " << q.steps << " steps, compute " << q.compute_cycles << ", exchange "
         << q.exchange_cycles << ", sync " << q.sync_cycles << ", link " << q.link_cycles << " cycles\n";
    }
    if (p.host_.steps > 0)
      os << "  host:  " << p.host_.steps << " steps, host link " << p.host_.host_cycles << ", sync "
         << p.host_.sync_cycles << " cycles\n";
    std::vector<const step_profile*> top;
    for (const step_profile& s : p.steps_) top.push_back(&s);
    std::stable_sort(top.begin(), top.end(), [](auto* a, auto* b) { return a->cycles() > b->cycles(); });
    top.resize(std::min<std::size_t>(top.size(), 10));
    os << "  steps with the most cycles:\n";
    for (const step_profile* s : top) {
      std::ostringstream line;
      line << "    " << std::left << std::setw(32) << s->path.view() << std::right << std::setw(10) << s->cycles()
           << " cycles (compute " << s->compute_cycles << ", exchange " << s->exchange_cycles << ")";
      os << line.str() << "\n";
    }
    return os;
  }

 private:
  /// The totals step `s` counts in: its IPU's, or the host steps'.
  ipu_profile& totals_of(const step_profile& s) {
    return s.ipu == host_device ? host_ : ipus_[static_cast<std::size_t>(s.ipu)];
  }

  std::vector<step_profile> steps_;
  std::vector<ipu_profile> ipus_;
  ipu_profile host_;
  std::int64_t batch_ = 1;
  std::int64_t clock_hz_ = 1;
  std::int64_t batches_ = 0;
  double host_total_ = 0;
  const char* target_ = "";
  const char* mode_ = "";
};

/// The cycle model's profile of graph `G` on `T` with `Opts`, from its plan alone, without an
/// engine: the cycles of every step, no host times (its mode is `"plan"`).
template <Graph G, Target T, options Opts = options{}>
profile plan_profile() {
  return profile(runtime::program::from(plan_v<G, T, Opts>), batch_size_v<G>, T::name, "plan");
}

}  // namespace ipu
