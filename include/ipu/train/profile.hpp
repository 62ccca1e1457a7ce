#pragma once
/// \file
/// `ipu::training_profile`: a training step's steps as the training plan orders them, each with
/// the cycles the cycle model estimates on the target (`training_plan::cycles`) and the host
/// time a trainer measured for it (`trainer::profile()`), with totals by phase and the
/// simulated and measured samples per second.
///
/// The host runs the forward pass, the loss and each node's backward in the plan's order, and
/// each layer's update; it keeps every output, so it runs no recompute step (their host time is
/// 0), and the loss's time counts in the last node's backward step.

#include <ipu/core/stream_state.hpp>
#include <ipu/plan/training.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <iomanip>
#include <ostream>
#include <sstream>
#include <string>
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
  }

  /// Sets the measured host time of the `phase` step of `node`, in seconds per training step;
  /// ignored if the plan has no such step.
  void set_host_seconds(step_phase phase, int node, double seconds) noexcept {
    for (training_step_profile& s : steps_)
      if (s.phase == phase && s.node == node) s.host_seconds = seconds;
  }
  /// Sets the training steps the host times are the mean of.
  void set_steps_measured(std::int64_t n) noexcept { measured_ = n; }

  /// The steps, in the plan's order.
  const std::vector<training_step_profile>& steps() const noexcept { return steps_; }
  /// Training steps the host times are the mean of (0: none measured).
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
  /// Samples a training step takes: the micro-batch.
  std::int64_t batch_size() const noexcept { return batch_; }
  /// Simulated samples per second on the target: the batch per `cycles_per_step()` at its clock.
  double simulated_samples_per_second() const noexcept {
    const std::int64_t c = cycles_per_step();
    return c > 0 ? static_cast<double>(batch_) * static_cast<double>(clock_hz_) / static_cast<double>(c) : 0;
  }
  /// Measured samples per second on the host (0 before a step is measured).
  double measured_samples_per_second() const noexcept {
    double t = 0;
    for (const training_step_profile& s : steps_) t += s.host_seconds;
    return t > 0 ? static_cast<double>(batch_) / t : 0;
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
    os << "training profile: " << p.target_ << ", micro-batch " << p.batch_ << ", host times the mean of "
       << p.measured_ << (p.measured_ == 1 ? " step\n" : " steps\n")
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
};

}  // namespace ipu
