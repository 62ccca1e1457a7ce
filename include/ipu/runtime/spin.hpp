#pragma once
/// \file
/// Spin-waiting. A thread that expects another to act within microseconds polls before it
/// asks the kernel to put it to sleep: waking a sleeping thread costs a system call on one
/// side and a reschedule on the other, tens of microseconds on a virtual machine, more than a
/// small layer's work. But a poller holds a core that another thread or process may need,
/// so a team polls only for as long as a sleep would cost (`wake_spins`). `ipu::runtime::team`
/// waits with `spin_then_wait`; the channels spin with `spin_pause`.

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

namespace ipu::detail {

/// One step of a spin-wait: tells the core this is a spin loop, where it can.
inline void spin_pause() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/// libgomp's spin counts without `OMP_WAIT_POLICY` (GCC's libgomp manual, `GOMP_SPINCOUNT`):
/// its default, and its count when there are more threads than CPUs.
inline constexpr std::uint32_t gomp_default_spins = 300'000, gomp_oversubscribed_spins = 100;

/// Waits until `done(value)` holds for `a`'s value, polling up to `spins` times, then sleeping
/// in `std::atomic::wait` until a `notify` changes it; returns the value it saw. The loads
/// acquire, so the writes made before the store that ended the wait are visible after it.
template <class Done>
std::uint32_t spin_then_wait(const std::atomic<std::uint32_t>& a, Done done, std::uint32_t spins) noexcept {
  std::uint32_t v = a.load(std::memory_order_acquire);
  for (std::uint32_t i = 0; i < spins && !done(v); ++i) {
    spin_pause();
    v = a.load(std::memory_order_acquire);
  }
  while (!done(v)) {
    a.wait(v, std::memory_order_acquire);
    v = a.load(std::memory_order_acquire);
  }
  return v;
}

/// How many times a waiting thread polls before it sleeps: as many `spin_pause`s as it takes
/// this machine to wake a thread that has slept in `std::atomic::wait` for a millisecond,
/// long enough for its core to go idle (the median of 8 wake-ups, measured once per process,
/// in about 10 ms), within libgomp's counts. Polling for as long as blocking costs is
/// competitive: a wait never costs more than twice what the better of polling and sleeping
/// would have cost, known in hindsight (Karlin, Li, Manasse and Owicki, "Empirical Studies of
/// Competitive Spinning for a Shared-Memory Multiprocessor", SOSP 1991).
inline std::uint32_t wake_spins() {
  static const std::uint32_t spins = [] {
    using clock = std::chrono::steady_clock;
    const auto nanoseconds = [](clock::duration d) { return std::chrono::duration<double, std::nano>(d).count(); };
    constexpr int pauses = 10'000;
    const clock::time_point p0 = clock::now();
    for (int i = 0; i < pauses; ++i) spin_pause();
    const double pause = std::max(1e-3, nanoseconds(clock::now() - p0) / pauses);

    constexpr std::uint32_t samples = 8;
    std::atomic<std::uint32_t> turn{0};  // odd: the sleeper's turn
    std::atomic<clock::rep> sent{0};     // when the waker notified
    std::array<double, samples> wake{};
    const auto await = [&](std::uint32_t mine) { spin_then_wait(turn, [mine](std::uint32_t v) { return v == mine; }, 0); };
    const auto pass = [&](std::uint32_t next) {
      turn.store(next, std::memory_order_release);
      turn.notify_one();
    };
    std::thread sleeper([&] {
      for (std::uint32_t k = 0; k < samples; ++k) {
        await(2 * k + 1);
        wake[k] = nanoseconds(clock::now().time_since_epoch() - clock::duration(sent.load(std::memory_order_relaxed)));
        pass(2 * k + 2);
      }
    });
    for (std::uint32_t k = 0; k < samples; ++k) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      sent.store(clock::now().time_since_epoch().count(), std::memory_order_relaxed);
      pass(2 * k + 1);
      await(2 * k + 2);
    }
    sleeper.join();
    std::nth_element(wake.begin(), wake.begin() + samples / 2, wake.end());
    return static_cast<std::uint32_t>(std::clamp(wake[samples / 2] / pause, double{gomp_oversubscribed_spins}, double{gomp_default_spins}));
  }();
  return spins;
}

}  // namespace ipu::detail
