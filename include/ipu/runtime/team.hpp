#pragma once
/// \file
/// `ipu::runtime::team`: a fixed set of host threads that run one phase of a BSP step
/// together. `run(f)` calls `f(thread)` on every thread (the caller is thread 0) and returns
/// when all have finished: the return is the sync between two phases.

#include <algorithm>
#include <barrier>
#include <cstddef>
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
class team {
 public:
  /// `threads` host threads (0: one per hardware thread), the workers started by `start`
  /// (empty: `std::thread`). If a worker cannot start, stops and joins those already started,
  /// then rethrows the error (`std::system_error` from `std::thread`).
  explicit team(unsigned threads = 0, const thread_starter& start = {})
      : size_(threads != 0 ? threads : std::max(1u, std::thread::hardware_concurrency())),
        start_(static_cast<std::ptrdiff_t>(size_)),
        done_(static_cast<std::ptrdiff_t>(size_)) {
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
    start_.arrive_and_wait();
    guarded(0);
    done_.arrive_and_wait();
    task_ = nullptr;
    if (error_) std::rethrow_exception(error_);
  }

 private:
  /// Ends the workers started so far and joins them. A worker that never started arrives at
  /// the start barrier through the calling thread.
  void stop_workers() {
    stop_ = true;
    const auto missing = static_cast<std::ptrdiff_t>(size_ - 1 - workers_.size());
    if (missing > 0) static_cast<void>(start_.arrive(missing));
    start_.arrive_and_wait();
    for (std::thread& t : workers_) t.join();
  }

  void work(unsigned k) {
    for (;;) {
      start_.arrive_and_wait();
      if (stop_) return;
      guarded(k);
      done_.arrive_and_wait();
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

  unsigned size_;
  std::barrier<> start_, done_;
  std::vector<std::thread> workers_;
  const std::function<void(unsigned)>* task_ = nullptr;
  bool stop_ = false;  // written before a barrier phase the workers then read
  std::mutex error_mutex_;
  std::exception_ptr error_;
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
