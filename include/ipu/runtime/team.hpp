#pragma once
/// \file
/// `ipu::runtime::team`: a fixed set of host threads that run one phase of a BSP step
/// together. `run(f)` calls `f(thread)` on every thread (the caller is thread 0) and returns
/// when all have finished: the return is the sync between two phases. `run_items(n, f)` runs
/// `f(item)` for n work items in one phase, each thread its own share of them first.

#include <ipu/runtime/spin.hpp>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace ipu::runtime {

/// Starts a thread that runs `body` and returns it, as `std::thread(std::move(body))` does
/// (the default); throws `std::system_error` if it cannot. A team takes one, so that a
/// failure to start a thread can be tested.
using thread_starter = std::function<std::thread(std::function<void()> body)>;

/// A fixed set of host threads that run one phase of a BSP step together: the calling thread
/// and `size() - 1` workers that wait between phases. Not copyable; `run` is called by one
/// thread at a time.
///
/// A phase's wake-up and its end are two atomic counters. A waiting thread polls its counter
/// for as long as waking from sleep would take (`detail::wake_spins`), then sleeps; so
/// back-to-back phases, as an engine runs them, cost no system call, and an idle team gives
/// its cores back within that time. A team with more threads than the machine has hardware
/// threads polls 100 times (libgomp's count then): a poller would hold a core that a thread
/// it waits for needs.
class team {
 public:
  /// `threads` host threads (0: one per hardware thread), the workers started by `start`
  /// (empty: `std::thread`). If a worker cannot start, stops and joins those already started,
  /// then rethrows the error (`std::system_error` from `std::thread`).
  explicit team(unsigned threads = 0, const thread_starter& start = {})
      : size_(threads != 0 ? threads : hardware_threads()),
        spins_(size_ == 1               ? 0
               : size_ > hardware_threads() ? detail::gomp_oversubscribed_spins
                                            : detail::wake_spins()) {
    workers_.reserve(size_ - 1);
    try {
      for (unsigned k = 1; k < size_; ++k) {
        std::function<void()> body = [this, k] { work(k); };
        workers_.push_back(start ? start(std::move(body)) : std::thread(std::move(body)));
      }
    } catch (...) {
      stop_workers();
      throw;
    }
  }
  team(const team&) = delete;
  team& operator=(const team&) = delete;
  ~team() { stop_workers(); }

  /// Threads in the team, the calling thread included; at least 1.
  unsigned size() const noexcept { return size_; }

  /// Runs `f(thread)` on every thread; rethrows the first exception any of them threw.
  void run(const std::function<void(unsigned)>& f) {
    task_ = &f;
    error_ = nullptr;
    start_phase();
    guarded(0);
    finished_target_ += static_cast<std::uint32_t>(workers_.size());
    detail::spin_then_wait(finished_, [&](std::uint32_t n) { return n == finished_target_; }, spins_);
    task_ = nullptr;
    if (error_) std::rethrow_exception(error_);
  }

  /// Runs `work(item)` once for every item in `[0, items)`, spread over the threads, and
  /// rethrows as `run` does; a single item on the calling thread, without waking the others
  /// (a squeeze-and-excitation's 1x1 convolutions on one pixel take less time than a wake-up).
  ///
  /// Thread `t` takes the items of its own share first, `[items * t / size(), items * (t + 1)
  /// / size())` in order, then what is left of the others' shares. A kernel's items follow its
  /// output's positions, so each thread works on about the same part of the batch from one
  /// step to the next: the part whose output it has just written, and holds in its own L2.
  /// Taken from one counter, the items went to either thread, and MobileNetV2's depthwise
  /// layers on 2 threads (an Intel Xeon with AVX-512) ran up to 1.27 times slower: 14x14x576
  /// 1.25, 28x28x192 1.27, 56x56x144 1.12, 7x7x960 1.05.
  template <class F>
  void run_items(std::int64_t items, F&& work) {
    if (items <= 0) return;
    if (items == 1) return static_cast<void>(work(std::int64_t{0}));
    const auto threads = static_cast<std::int64_t>(size_);
    for (std::int64_t t = 0; t < threads; ++t) {
      share& s = shares_[static_cast<std::size_t>(t)];
      s.next.store(items * t / threads, std::memory_order_relaxed);
      s.end = items * (t + 1) / threads;
    }
    run([this, &work](unsigned t) {  // the phase's start orders the stores above before the reads
      for (std::size_t k = 0; k < shares_.size(); ++k) {
        share& s = shares_[(t + k) % shares_.size()];
        for (std::int64_t i = s.next.fetch_add(1, std::memory_order_relaxed); i < s.end;
             i = s.next.fetch_add(1, std::memory_order_relaxed))
          work(i);
      }
    });
  }

 private:
  /// The items of one thread's share that are not yet taken: `[next, end)`. Each on a cache
  /// line of its own, as every thread takes from each.
  struct alignas(64) share {
    std::atomic<std::int64_t> next{0};
    std::int64_t end = 0;
  };

  /// Wakes the workers for the next phase: what the caller wrote before is visible to them.
  void start_phase() noexcept {
    phase_.fetch_add(1, std::memory_order_release);
    phase_.notify_all();
  }

  /// Ends the workers started so far and joins them.
  void stop_workers() {
    stop_ = true;
    start_phase();
    for (std::thread& t : workers_) t.join();
  }

  void work(unsigned k) {
    for (std::uint32_t seen = 0;;) {
      seen = detail::spin_then_wait(phase_, [seen](std::uint32_t p) { return p != seen; }, spins_);
      if (stop_) return;
      guarded(k);
      finished_.fetch_add(1, std::memory_order_release);
      finished_.notify_one();  // only the caller waits on it
    }
  }
  void guarded(unsigned k) {
    try {
      (*task_)(k);
    } catch (...) {
      std::lock_guard lock(error_mutex_);
      if (!error_) error_ = std::current_exception();
    }
  }

  static unsigned hardware_threads() noexcept { return std::max(1u, std::thread::hardware_concurrency()); }

  unsigned size_;
  std::uint32_t spins_;  // polls before sleeping
  std::vector<std::thread> workers_;
  const std::function<void(unsigned)>* task_ = nullptr;  // written before a phase starts
  bool stop_ = false;                                    // written before the last phase starts
  std::mutex error_mutex_;
  std::exception_ptr error_;
  // Each on a cache line of its own: the workers poll them while the caller works.
  alignas(64) std::atomic<std::uint32_t> phase_{0};     // phases started; a worker waits for the next
  alignas(64) std::atomic<std::uint32_t> finished_{0};  // workers' phase ends, all phases counted
  std::uint32_t finished_target_ = 0;                   // `finished_` when the current phase has ended
  std::vector<share> shares_ = std::vector<share>(size_);  // per thread, for `run_items`
};

/// Runs `body(k)` for every `k` in `[0, count)`, each on a thread of its own, as a pipeline
/// runs its stages, and returns when all have ended. A body's exception, or a thread that
/// cannot start, calls `fail()` inside the handler (where `std::current_exception()` is the
/// error), which must make the other bodies end; a body ends quietly by throwing `Stopped`.
template <class Stopped, class Body, class Fail>
void on_own_threads(int count, Body&& body, Fail&& fail) {
  std::vector<std::jthread> threads;
  threads.reserve(static_cast<std::size_t>(count));
  for (int k = 0; k < count; ++k) {
    try {
      threads.emplace_back([&, k] {
        try {
          body(k);
        } catch (const Stopped&) {
        } catch (...) {
          fail();
        }
      });
    } catch (...) {  // a thread that cannot start: the started ones stop
      fail();
      break;
    }
  }
}

}  // namespace ipu::runtime
