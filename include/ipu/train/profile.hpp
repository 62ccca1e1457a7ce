#pragma once
/// \file
/// `ipu::training_profile`: a training step's steps as the training plan orders them, each with
/// the cycles the cycle model estimates on the target (`training_plan::cycles`) and the host
/// time a trainer measured for it (`trainer::profile()`), with totals by phase; the cycle model
/// of a window of `gradient_accumulation` micro-batches over the pipeline's stages
/// (`training_plan::timing`: ramp-up, steady state, ramp-down and each IPU's timeline); and the
/// simulated and measured samples per second.
///
/// The host runs the forward pass, the loss and each node's backward in the plan's order, and
/// each layer's update; it keeps every output, so it runs no recompute step (their host time is
/// 0), and the loss's time counts in the last node's backward step. A pipeline's stages run on
/// threads of their own: their host times are summed, as if one ran after another.

#include <ipu/core/json.hpp>
#include <ipu/core/stream_state.hpp>
#include <ipu/plan/pipeline_timing.hpp>
#include <ipu/plan/training.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <iomanip>
#include <ostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace ipu {

/// One step of a training step: what it does, the model's cycles and the host's time.
struct training_step_profile {
  step_phase phase = step_phase::forward;  ///< forward, backward, update or recompute
  int node = 0;                            ///< the node it runs
  path_string path{};                      ///< the node's layer path
  step_cycles cycles{};                    ///< the cycle model's estimate on the target
  double host_seconds = 0;                 ///< measured on the host, mean per training step
};

/// The simulated and measured profile of a trainer's steps (see the file comment).
class training_profile {
 public:
  /// Phases of a training step, in the order of `step_phase`.
  static constexpr int phase_count = 4;

  /// The cycle model of the training plan `p` of target `target` (a name that outlives the
  /// profile), with host times zero.
  template <std::size_t N, std::size_t S, int Ipus>
  training_profile(const training_plan<N, S, Ipus>& p, const char* target)
      : target_(target), batch_(p.at(0).out.dim[0]), clock_hz_(p.chip().clock_hz) {
    for (int s = 0; s < static_cast<int>(S); ++s) {
      const plan_step& st = p.steps[static_cast<std::size_t>(s)];
      steps_.push_back({st.phase, st.node, p.at(st.node).path, p.cycles(s), 0});
    }
    const pipeline_timing<Ipus> t = p.timing();
    window_ = {t.schedule, t.stages, t.micro_batches, t.slots, {t.ramp_up_slots, t.steady_slots, t.ramp_down_slots},
               {t.ramp_up, t.steady, t.ramp_down}, t.update_cycles, {}, {}};
    for (int s = 0; s < t.stages; ++s) {
      std::string line;
      for (std::int64_t slot = 0; slot < t.slots; ++slot) line += t.activity(s, slot);
      window_.timelines.push_back(std::move(line));
      window_.busy.push_back(t.busy(s));
    }
  }

  /// The cycle model of a window (`ipu::pipeline_timing`, copied).
  struct window_timing {
    pipeline_schedule schedule = pipeline_schedule::sequential;  ///< how the stages overlap
    int stages = 1;                  ///< one per IPU holding layers
    std::int64_t micro_batches = 1;  ///< the gradient accumulation count
    std::int64_t slots = 0;          ///< time slots
    std::array<std::int64_t, 3> part_slots{};   ///< slots of the ramp-up, the steady state, the ramp-down
    std::array<std::int64_t, 3> part_cycles{};  ///< their cycles
    std::int64_t update_cycles = 0;             ///< the update's, after the slots
    std::vector<std::string> timelines;  ///< by stage, a character per slot: `F`, `B`, `X` (both) or `.`
    std::vector<std::int64_t> busy;      ///< by stage, the cycles it computes in a window
    /// Cycles of the window.
    std::int64_t total() const noexcept { return part_cycles[0] + part_cycles[1] + part_cycles[2] + update_cycles; }
  };
  /// The cycle model of a window of `micro_batches` micro-batches over the stages.
  const window_timing& window() const& noexcept { return window_; }
  /// The cycle model of a window, moved out of a temporary profile (see `steps() &&`).
  window_timing window() && noexcept { return std::move(window_); }

  /// Sets the measured host time of the `phase` step of `node`, in seconds per training step;
  /// ignored if the plan has no such step.
  void set_host_seconds(step_phase phase, int node, double seconds) noexcept {
    for (training_step_profile& s : steps_)
      if (s.phase == phase && s.node == node) s.host_seconds = seconds;
  }
  /// Sets the micro-batches the host times of the forward and backward steps are the mean of
  /// (the update's are per step).
  void set_steps_measured(std::int64_t n) noexcept { measured_ = n; }

  /// The steps, in the plan's order.
  const std::vector<training_step_profile>& steps() const& noexcept { return steps_; }
  /// The steps, moved out of a temporary profile: in `for (const auto& s :
  /// trainer.profile().steps())` the profile is destroyed before the loop's body runs, and the
  /// loop reads the vector this returns, not the destroyed profile's.
  std::vector<training_step_profile> steps() && noexcept { return std::move(steps_); }
  /// Micro-batches the host times of the forward and backward steps are the mean of (0: none
  /// measured).
  std::int64_t steps_measured() const noexcept { return measured_; }
  /// The model's cycles of a phase's steps, summed.
  std::int64_t phase_cycles(step_phase ph) const noexcept {
    std::int64_t c = 0;
    for (const training_step_profile& s : steps_)
      if (s.phase == ph) c += s.cycles.total();
    return c;
  }
  /// The host's seconds of a phase's steps, summed.
  double phase_host_seconds(step_phase ph) const noexcept {
    double t = 0;
    for (const training_step_profile& s : steps_)
      if (s.phase == ph) t += s.host_seconds;
    return t;
  }
  /// The model's cycles of a training step.
  std::int64_t cycles_per_step() const noexcept {
    std::int64_t c = 0;
    for (const training_step_profile& s : steps_) c += s.cycles.total();
    return c;
  }
  /// Samples a pass takes: the micro-batch.
  std::int64_t batch_size() const noexcept { return batch_; }
  /// Simulated samples per second on the target: a window's micro-batches per
  /// `window().total()` cycles at its clock.
  double simulated_samples_per_second() const noexcept {
    const std::int64_t c = window_.total();
    return c > 0 ? static_cast<double>(batch_ * window_.micro_batches) * static_cast<double>(clock_hz_) / static_cast<double>(c) : 0;
  }
  /// Measured samples per second on the host (0 before a step is measured): a window's
  /// micro-batches per the host time of their passes and of the update.
  double measured_samples_per_second() const noexcept {
    double t = 0;
    for (const training_step_profile& s : steps_)
      t += s.host_seconds * (s.phase == step_phase::update ? 1.0 : static_cast<double>(window_.micro_batches));
    return t > 0 ? static_cast<double>(batch_ * window_.micro_batches) / t : 0;
  }

  /// The profile as JSON: the target, the micro-batch, the clock, the micro-batches measured,
  /// the cycles of a step, the simulated and measured samples per second, the window's cycle
  /// model (`"window"`: schedule, stages, micro-batches, slots, the ramp-up's, steady state's
  /// and ramp-down's slots and cycles, the update's cycles, each stage's timeline as a string of
  /// `F`, `B`, `X` and `.` and its busy cycles), each phase's steps, cycles and host seconds, and
  /// each step's phase, node, path, cycles (compute, exchange, sync, link) and host seconds.
  void write_json(std::ostream& os) const {
    using detail::json_string;
    const detail::stream_state keep(os);
    const window_timing& w = window_;
    os << std::setprecision(9) << "{\n  \"target\": " << json_string{target_} << ",\n  \"batch_size\": " << batch_
       << ",\n  \"clock_hz\": " << clock_hz_ << ",\n  \"steps_measured\": " << measured_
       << ",\n  \"cycles_per_step\": " << cycles_per_step()
       << ",\n  \"simulated_samples_per_second\": " << simulated_samples_per_second()
       << ",\n  \"measured_samples_per_second\": " << measured_samples_per_second()
       << ",\n  \"window\": {\"schedule\": " << json_string{name_of(w.schedule)} << ", \"stages\": " << w.stages
       << ", \"micro_batches\": " << w.micro_batches << ", \"slots\": " << w.slots << ", \"part_slots\": ["
       << w.part_slots[0] << ", " << w.part_slots[1] << ", " << w.part_slots[2] << "], \"part_cycles\": ["
       << w.part_cycles[0] << ", " << w.part_cycles[1] << ", " << w.part_cycles[2] << "], \"update_cycles\": "
       << w.update_cycles << ", \"cycles\": " << w.total() << ", \"timelines\": [";
    for (std::size_t s = 0; s < w.timelines.size(); ++s) os << (s ? ", " : "") << json_string{w.timelines[s]};
    os << "], \"busy\": [";
    for (std::size_t s = 0; s < w.busy.size(); ++s) os << (s ? ", " : "") << w.busy[s];
    os << "]},\n  \"phases\": [";
    for (int ph = 0; ph < phase_count; ++ph) {
      const auto phase = step_phase{static_cast<std::uint8_t>(ph)};
      const auto n = std::count_if(steps_.begin(), steps_.end(), [&](const training_step_profile& s) { return s.phase == phase; });
      os << (ph ? ", " : "") << "{\"phase\": " << json_string{name_of(phase)} << ", \"steps\": " << n
         << ", \"cycles\": " << phase_cycles(phase) << ", \"host_seconds\": " << phase_host_seconds(phase) << '}';
    }
    os << "],\n  \"steps\": [";
    for (std::size_t k = 0; k < steps_.size(); ++k) {
      const training_step_profile& s = steps_[k];
      os << (k ? "," : "") << "\n    {\"phase\": " << json_string{name_of(s.phase)} << ", \"node\": " << s.node
         << ", \"path\": " << json_string{s.path.view()} << ", \"compute_cycles\": " << s.cycles.compute
         << ", \"exchange_cycles\": " << s.cycles.exchange << ", \"sync_cycles\": " << s.cycles.sync
         << ", \"link_cycles\": " << s.cycles.link << ", \"host_cycles\": " << s.cycles.host
         << ", \"host_seconds\": " << s.host_seconds << '}';
    }
    os << "\n  ]\n}\n";
  }
  /// Writes the JSON profile to `path`; throws `std::runtime_error` if it cannot.
  void write_json(const std::string& path) const {
    detail::write_file(path, "ipu::training_profile", [&](std::ostream& os) { write_json(os); });
  }

  /// The profile as text.
  std::string str() const {
    std::ostringstream os;
    os << *this;
    return os.str();
  }

  /// Prints the phases' totals, both throughputs and the steps taking most host time.
  friend std::ostream& operator<<(std::ostream& os, const training_profile& p) {
    const detail::stream_state keep(os);
    const double clock = static_cast<double>(p.clock_hz_);
    const std::int64_t steps = p.measured_ / std::max<std::int64_t>(1, p.window_.micro_batches);
    os << "training profile: " << p.target_ << ", micro-batch " << p.batch_ << ", host times the mean of "
       << p.measured_ << (p.measured_ == 1 ? " micro-batch" : " micro-batches") << " in " << steps
       << (steps == 1 ? " step\n" : " steps\n")
       << "  phase       steps        cycles  simulated ms   host ms\n";
    std::fixed(os);
    for (int ph = 0; ph < phase_count; ++ph) {
      const auto phase = step_phase{static_cast<std::uint8_t>(ph)};
      const auto n = std::count_if(p.steps_.begin(), p.steps_.end(), [&](const training_step_profile& s) { return s.phase == phase; });
      if (n == 0) continue;
      os << "  " << std::left << std::setw(10) << name_of(phase) << std::right << std::setw(7) << n << std::setw(14)
         << p.phase_cycles(phase) << std::setw(14) << std::setprecision(3) << static_cast<double>(p.phase_cycles(phase)) / clock * 1e3
         << std::setw(10) << p.phase_host_seconds(phase) * 1e3 << '\n';
    }
    const window_timing& w = p.window_;
    if (w.stages > 1 || w.micro_batches > 1) {
      os << "  window: " << w.micro_batches << " micro-batches, " << name_of(w.schedule) << " over " << w.stages
         << (w.stages == 1 ? " stage" : " stages") << ", " << w.slots << " slots, " << w.total() << " cycles\n";
      constexpr const char* parts[3] = {"ramp-up", "steady", "ramp-down"};
      for (int k = 0; k < 3; ++k)
        os << "    " << std::left << std::setw(10) << parts[k] << std::right << std::setw(7) << w.part_slots[static_cast<std::size_t>(k)]
           << " slots" << std::setw(14) << w.part_cycles[static_cast<std::size_t>(k)] << " cycles\n";
      os << "    " << std::left << std::setw(10) << "update" << std::right << std::setw(27) << w.update_cycles << " cycles\n";
      constexpr std::size_t shown = 96;  // slots of the timeline printed
      for (int s = 0; s < w.stages; ++s) {
        const std::string& line = w.timelines[static_cast<std::size_t>(s)];
        os << "    IPU " << std::left << std::setw(3) << s << std::right << line.substr(0, shown) << (line.size() > shown ? "..." : "")
           << "  busy " << std::setprecision(1)
           << (w.total() > 0 ? 100.0 * static_cast<double>(w.busy[static_cast<std::size_t>(s)]) / static_cast<double>(w.total()) : 0.0)
           << "%\n";
      }
    }
    os << "  simulated " << std::setprecision(1) << p.simulated_samples_per_second() << " samples/s, host "
       << p.measured_samples_per_second() << " samples/s\n";
    std::vector<training_step_profile> slowest = p.steps_;
    std::stable_sort(slowest.begin(), slowest.end(),
                     [](const training_step_profile& a, const training_step_profile& b) { return a.host_seconds > b.host_seconds; });
    os << "  most host time:\n";
    for (std::size_t k = 0; k < std::min<std::size_t>(5, slowest.size()) && slowest[k].host_seconds > 0; ++k)
      os << "    " << std::left << std::setw(10) << name_of(slowest[k].phase) << std::setw(28) << slowest[k].path.view()
         << std::right << std::setprecision(3) << std::setw(10) << slowest[k].host_seconds * 1e3 << " ms" << std::setw(12)
         << slowest[k].cycles.total() << " cycles\n";
    return os;
  }

 private:
  const char* target_ = "";
  std::int64_t batch_ = 0;
  std::int64_t clock_hz_ = 0;
  std::int64_t measured_ = 0;
  std::vector<training_step_profile> steps_;
  window_timing window_;
};

}  // namespace ipu
