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
#include <thread>
#include <vector>

namespace ipu::runtime {

/// A fixed set of host threads that run one phase of a BSP step together: the calling thread
/// and `size() - 1` workers that wait between phases. Not copyable; `run` is called by one
/// thread at a time.
class team {
 public:
  /// `threads` host threads (0: one per hardware thread).
  explicit team(unsigned threads = 0)
      : size_(threads != 0 ? threads : std::max(1u, std::thread::hardware_concurrency())),
        start_(static_cast<std::ptrdiff_t>(size_)),
        done_(static_cast<std::ptrdiff_t>(size_)) {
    workers_.reserve(size_ - 1);
    for (unsigned k = 1; k < size_; ++k) workers_.emplace_back([this, k] { work(k); });
  }
  team(const team&) = delete;
  team& operator=(const team&) = delete;
  ~team() {
    stop_ = true;
    start_.arrive_and_wait();
    for (std::thread& t : workers_) t.join();
  }

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

}  // namespace ipu::runtime
