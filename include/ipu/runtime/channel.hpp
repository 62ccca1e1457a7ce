#pragma once
/// \file
/// `ipu::channel<T, Capacity>`: a bounded single-producer/single-consumer queue of `T`, the
/// storage of an infeed (`ipu/runtime/feeds.hpp`).
///
/// ```cpp
/// ipu::channel<ipu::tensor<float, 2, 2>, 8> c;
/// std::jthread producer([&] { for (int i = 0; i < 100; ++i) c.emplace([&](auto& slot) { slot[0] = i; }); c.close(); });
/// while (c.consume([](const auto& x) { use(x); })) {}   // false once closed and drained
/// ```
///
/// - The `Capacity` slots are allocated once, at construction; elements are written and read
///   in place (`emplace`, `consume`), so passing an element costs no allocation and, with
///   those two calls, no copy.
/// - The data path is lock-free: two monotonic indices, each written by one side only, on
///   separate cache lines. A side that must wait spins briefly, then parks on a condition
///   variable; the other side wakes it only when it is parked, and finding that out costs
///   the publishing side no memory barrier (see `channel_core::wake`).
/// - Every operation comes as a blocking call (optionally cancelled by a `std::stop_token`),
///   a `try_` call that never waits, and `try_..._for` / `try_..._until` calls with timeouts.
/// - The stream ends with `close()` (the consumer still receives every element pushed before
///   it) or with `abort(error)` (the same, then the consumer's next read rethrows `error`).
///   The consumer can `cancel()`: waiting and later pushes then return `false`.
/// - A channel destroyed while a thread waits on it, or while an `attach()`ed user (an
///   `engine::run`, an `ipu::feed`) holds it, wakes those users, waits until they have let
///   go, and they see `ipu::channel_error` instead of touching freed memory.

#include <ipu/runtime/spin.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <concepts>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <ratio>
#include <stdexcept>
#include <stop_token>
#include <thread>
#include <utility>

// Define IPU_NO_MEMBARRIER to use the portable wake-up handshake everywhere (the
// ThreadSanitizer configuration of the tests does, so that both handshakes are tested).
#if defined(__linux__) && !defined(IPU_NO_MEMBARRIER)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif
/// 1 when channels use `membarrier(2)` for their wake-up handshake (Linux, unless
/// `IPU_NO_MEMBARRIER` is defined), else 0.
#if defined(__linux__) && !defined(IPU_NO_MEMBARRIER) && defined(__NR_membarrier)
#define IPU_HAS_MEMBARRIER 1
#else
#define IPU_HAS_MEMBARRIER 0
#endif

namespace ipu {

/// A channel used against its contract: a push after `close()`, a channel destroyed while in
/// use, `reset()` while in use.
struct channel_error : std::logic_error {
  using std::logic_error::logic_error;
};

namespace detail {

/// How long a channel call may wait: not at all, until a deadline, or until it can proceed;
/// a requested stop ends any wait.
struct wait_limit {
  using time_point = std::chrono::steady_clock::time_point;
  enum class kind { no_wait, deadline, forever };
  kind how = kind::forever;
  time_point until{};
  const std::stop_token* stop = nullptr;  // the caller's: no reference count touched per element

  static wait_limit none() noexcept { return {kind::no_wait, {}, nullptr}; }
  static wait_limit forever(const std::stop_token& stop) noexcept { return {kind::forever, {}, &stop}; }
  /// Until `t`, of any clock and duration type (see `saturated`).
  template <class Clock, class Duration>
  static wait_limit deadline(std::chrono::time_point<Clock, Duration> t) {
    if constexpr (std::same_as<Clock, std::chrono::steady_clock>) {
      return at(saturated(time_point{}, t.time_since_epoch()));
    } else {
      // The difference of the two times, where no duration type overflows.
      using wide = std::chrono::duration<long double, time_point::period>;
      return at(saturated(std::chrono::steady_clock::now(),
                          wide(t.time_since_epoch()) - wide(Clock::now().time_since_epoch())));
    }
  }
  /// For `d` from now, of any duration type (see `saturated`).
  template <class Rep, class Period>
  static wait_limit after(std::chrono::duration<Rep, Period> d) {
    return at(saturated(std::chrono::steady_clock::now(), d));
  }

  /// `t + d` rounded up to the steady clock's ticks, saturated to its range: a time past the
  /// clock's end (`std::chrono::hours::max()` from now, say) is `time_point::max()`, one before
  /// its start (or a NaN) `time_point::min()`. The bounds are checked in `long double`, where
  /// no duration overflows, with a second to spare for its rounding; within them the sum is
  /// formed exactly where the conversion to ticks is exact.
  template <class Rep, class Period>
  static time_point saturated(time_point t, std::chrono::duration<Rep, Period> d) {
    using ticks = time_point::duration;
    const std::chrono::duration<long double, ticks::period> wide = d;
    const long double lowest = static_cast<long double>(time_point::min().time_since_epoch().count());
    const long double highest = static_cast<long double>(time_point::max().time_since_epoch().count());
    const long double spare = static_cast<long double>(ticks(std::chrono::seconds(1)).count());
    const long double end = static_cast<long double>(t.time_since_epoch().count()) + wide.count();
    if (!(end > lowest + spare && wide.count() > lowest + spare)) return time_point::min();
    if (!(end < highest - spare && wide.count() < highest - spare)) return time_point::max();
    using ratio = std::ratio_divide<Period, typename ticks::period>;
    if constexpr (!std::chrono::treat_as_floating_point_v<Rep> && (ratio::num == 1 || ratio::den == 1)) {
      return t + std::chrono::ceil<ticks>(d);
    } else {
      return t + std::chrono::ceil<ticks>(wide);
    }
  }

 private:
  /// Until `t`; the end of the clock is no deadline.
  static wait_limit at(time_point t) noexcept {
    return {t == time_point::max() ? kind::forever : kind::deadline, t, nullptr};
  }
};

/// Bytes between data that two threads write: two 64-byte x86 cache lines, because Intel's
/// L2 spatial prefetcher fetches lines in adjacent pairs (Intel 64 and IA-32 Architectures
/// Optimization Reference Manual, "Data Prefetching"). `std::hardware_destructive_
/// interference_size` is avoided: g++ warns that its value may differ between builds.
inline constexpr std::size_t false_sharing_bytes = 128;

/// Whether `process_barrier()` works: Linux's `membarrier(2)` with
/// `MEMBARRIER_CMD_PRIVATE_EXPEDITED`, registered once per process (Linux 4.14 and later;
/// a seccomp filter may forbid it).
inline bool process_barrier_available() noexcept {
#if IPU_HAS_MEMBARRIER
  static const bool available =
      syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
  return available;
#else
  return false;
#endif
}

/// A full memory barrier on every running thread of this process, as if each had executed
/// `std::atomic_thread_fence(std::memory_order_seq_cst)` where it is (`membarrier(2)`). It
/// turns the other threads' compiler barriers (`std::atomic_signal_fence`) into full
/// barriers, for the price of one system call here. Requires `process_barrier_available()`.
inline void process_barrier() noexcept {
#if IPU_HAS_MEMBARRIER
  syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
#endif
}

/// Everything of a single-producer/single-consumer channel except its elements: the stream
/// state, the producer's error, parking for a side that must wait, and the count of users a
/// destructor must wait for.
class channel_core {
 public:
  enum state_bit : unsigned {
    closed = 1,     ///< the producer called close(): no more elements
    failed = 2,     ///< the producer called abort(error)
    cancelled = 4,  ///< the consumer called cancel(): it reads no more
    destroyed = 8,  ///< the channel's destructor runs
  };

  /// The side that waits or is woken.
  enum class party { producer, consumer };

  channel_core() = default;
  channel_core(const channel_core&) = delete;
  channel_core& operator=(const channel_core&) = delete;

  unsigned state() const noexcept { return state_.load(std::memory_order_acquire); }
  /// `state()` for a call about to use the channel: throws `channel_error` if it is being
  /// destroyed.
  unsigned usable_state() const {
    const unsigned s = state();
    if (s & destroyed) throw channel_error(destroyed_message);
    return s;
  }

  /// Sets `bit`, with the producer's `error` for `failed`; wakes every waiting side. Notifies
  /// under the lock, which a destructor must take before it may return.
  void set(state_bit bit, std::exception_ptr error = nullptr) {
    std::lock_guard lock(mutex_);
    if (bit == failed && !(state_.load(std::memory_order_relaxed) & failed)) error_ = std::move(error);
    state_.fetch_or(bit, std::memory_order_release);
    wakeup_.notify_all();
  }

  /// The error given to abort(); read only after `state()` showed `failed`.
  const std::exception_ptr& error() const noexcept { return error_; }

  /// Called by a side after it published an index: wakes `who` if it is parked. Either the
  /// parked side sees the new index before it sleeps, or this side sees it parked: the two
  /// sides form a Dekker pair (store the index, then load the parked count; store the count,
  /// then load the index), which needs a store-load barrier on both sides. The parking side
  /// is already slow and pays for both with `process_barrier()`; this side, which runs once
  /// per element, then needs only a compiler barrier. Without `process_barrier` this side
  /// reads the count with a read-modify-write, which pairs with the parking side's one.
  void wake(party who) noexcept {
    std::atomic<int>& parked = parked_[index(who)].count;
    int n = 0;
    if (barrier_) {
      std::atomic_signal_fence(std::memory_order_seq_cst);
      n = parked.load(std::memory_order_relaxed);
    } else {
      n = parked.fetch_add(0, std::memory_order_acq_rel);
    }
    if (n != 0) [[unlikely]]
      notify_parked();
  }

  /// Waits, as `who`, until `ready()` (which must also turn true on any state change the
  /// caller cares about), within `limit`. Returns `ready()`: false after a timeout, a
  /// requested stop, or at once for `wait_limit::none()`. Throws `channel_error` if the
  /// channel is destroyed.
  template <class Ready>
  bool wait(party who, Ready ready, const wait_limit& limit) {
    if (limit.how == wait_limit::kind::no_wait) return false;
    for (int i = 0; i < spin_iterations; ++i) {
      if (ready()) return true;
      spin_pause();
    }
    for (int i = 0; i < yield_iterations; ++i) {
      if (ready()) return true;
      std::this_thread::yield();
    }
    std::unique_lock lock(mutex_);
    ++active_;
    std::atomic<int>& parked = parked_[index(who)].count;
    parked.fetch_add(1, std::memory_order_acq_rel);
    if (barrier_) process_barrier();
    const auto done = [&] { return ready() || (state_.load(std::memory_order_acquire) & destroyed); };
    const std::stop_token stop = limit.stop ? *limit.stop : std::stop_token{};
    bool ok = limit.how == wait_limit::kind::forever ? wakeup_.wait(lock, stop, done)
                                                     : wakeup_.wait_until(lock, stop, limit.until, done);
    parked.fetch_sub(1, std::memory_order_relaxed);
    leave(lock);
    return ok;
  }

  /// Counts a call of `who` (the producer's or the consumer's) as a user of the channel, from
  /// here to `end_call`, waits included: the destructor waits for it as for an attached user.
  /// Throws `channel_error` (and counts nothing) if the channel is being destroyed. The count
  /// pairs with `destroy()` as `wake` does with `wait`: either the destructor sees the call or
  /// the call sees `destroyed`; with `process_barrier()` this side needs only a compiler
  /// barrier. One call per party at a time, as the channel's contract says: the count is
  /// written without a read-modify-write.
  void begin_call(party who) {
    std::atomic<int>& calls = calls_[index(who)].count;
    unsigned s = 0;
    if (barrier_) {
      calls.store(calls.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      std::atomic_signal_fence(std::memory_order_seq_cst);
      s = state_.load(std::memory_order_acquire);
    } else {
      calls.fetch_add(1, std::memory_order_seq_cst);
      s = state_.load(std::memory_order_seq_cst);
    }
    if (s & destroyed) [[unlikely]] {
      end_call(who);
      throw channel_error(destroyed_message);
    }
  }
  /// Ends a call counted by `begin_call`: its last touch of the channel. A destructor already
  /// waiting is woken; one that starts just as the count drops finds it on its next poll.
  void end_call(party who) noexcept {
    std::atomic<int>& calls = calls_[index(who)].count;
    if (state_.load(std::memory_order_acquire) & destroyed) [[unlikely]] {
      std::lock_guard lock(mutex_);
      calls.fetch_sub(1, std::memory_order_release);
      wakeup_.notify_all();
    } else if (barrier_) {
      calls.store(calls.load(std::memory_order_relaxed) - 1, std::memory_order_release);
    } else {
      calls.fetch_sub(1, std::memory_order_release);
    }
  }

  /// Registers a user that must leave before the channel is destroyed (see `channel_use`).
  void enter() {
    std::lock_guard lock(mutex_);
    if (state_.load(std::memory_order_relaxed) & destroyed) throw channel_error(destroyed_message);
    ++active_;
  }
  void exit() noexcept {
    std::unique_lock lock(mutex_);
    const bool dying = state_.load(std::memory_order_relaxed) & destroyed;
    --active_;
    if (dying) wakeup_.notify_all();
  }

  /// Called first by the owning channel's destructor: if anyone uses the channel (a call in
  /// progress, an attached user), tells them, requests a stop on `destruction_token()` and
  /// waits until they have left.
  void destroy() noexcept {
    {
      std::lock_guard lock(mutex_);
      state_.fetch_or(destroyed, std::memory_order_seq_cst);
    }
    if (barrier_) process_barrier();  // pairs with begin_call's compiler barrier
    std::unique_lock lock(mutex_);
    if (unused()) return;
    wakeup_.notify_all();
    lock.unlock();
    destroying_.request_stop();  // outside the lock: it wakes waits on other channels
    lock.lock();
    while (!wakeup_.wait_for(lock, destroy_poll, [&] { return unused(); })) {}
  }

  /// A token whose stop is requested when the channel's destructor starts while the channel
  /// is in use: an attached user waiting on another channel passes it to that wait.
  std::stop_token destruction_token() const noexcept { return destroying_.get_token(); }

  /// Whether a thread waits on the channel or a user is attached.
  bool in_use() const {
    std::lock_guard lock(mutex_);
    return active_ != 0;
  }

  /// Back to an open, empty stream; throws `channel_error` if anyone is using the channel.
  void reset() {
    std::lock_guard lock(mutex_);
    if (active_ != 0) throw channel_error("ipu::channel: reset() while the channel is in use");
    state_.store(0, std::memory_order_release);
    error_ = nullptr;
  }

  static constexpr const char* destroyed_message =
      "ipu::channel: the channel was destroyed while in use; destroy a channel only after the threads, "
      "engine runs and ipu::feed calls using it have finished";

 private:
  [[gnu::noinline]] void notify_parked() noexcept {
    { std::lock_guard lock(mutex_); }  // the parked side is inside wait() by now
    wakeup_.notify_all();
  }

  /// Whether no call is in progress and no user attached; called with `mutex_` held.
  bool unused() const noexcept {
    return active_ == 0 && calls_[0].count.load(std::memory_order_seq_cst) == 0 &&
           calls_[1].count.load(std::memory_order_seq_cst) == 0;
  }

  /// Leaves a wait: it throws if the channel is being destroyed.
  void leave(std::unique_lock<std::mutex>& lock) {
    --active_;
    if (state_.load(std::memory_order_relaxed) & destroyed) {
      wakeup_.notify_all();
      lock.unlock();
      throw channel_error(destroyed_message);
    }
  }

  // A waiting side first spins (cheap when the other side is about to publish), then yields,
  // then parks. The counts trade a little CPU for latency; parking costs a system call each
  // way.
  static constexpr int spin_iterations = 256;
  static constexpr int yield_iterations = 16;

  static constexpr std::size_t index(party p) noexcept { return p == party::producer ? 0 : 1; }

  // How often a destructor waiting for calls checks their counts: a call that ends as the
  // destructor starts lowers its count without notifying (see end_call).
  static constexpr std::chrono::milliseconds destroy_poll{1};

  struct padded_count {
    alignas(false_sharing_bytes) std::atomic<int> count{0};
  };

  std::atomic<unsigned> state_{0};
  const bool barrier_ = process_barrier_available();  // read on every element: kept beside state_
  std::array<padded_count, 2> parked_{};              // threads parked, per party
  std::array<padded_count, 2> calls_{};               // calls in progress, per party (begin_call)
  mutable std::mutex mutex_;
  std::condition_variable_any wakeup_;
  int active_ = 0;  // guarded by mutex_: threads waiting plus attached users
  std::exception_ptr error_;
  std::stop_source destroying_;  // see destruction_token()
};

/// One call of a channel's producer or consumer, counted as a user of the channel for its
/// whole duration (`channel_core::begin_call`): a destructor that starts meanwhile waits for it.
/// A call that never waits (`try_push`, `try_consume`, ...) is not counted when `counted` is
/// false: it keeps the non-blocking path to its two index reads, and destroying a channel
/// during such a call is a data race of the caller's, as for any object.
class channel_call {
 public:
  /// Starts the call; throws `channel_error` if the channel is being destroyed.
  channel_call(channel_core& core, channel_core::party who, bool counted = true) : core_(core), who_(who), counted_(counted) {
    if (counted_) core.begin_call(who);
  }
  channel_call(const channel_call&) = delete;
  channel_call& operator=(const channel_call&) = delete;
  ~channel_call() {
    if (counted_) core_.end_call(who_);
  }

 private:
  channel_core& core_;
  channel_core::party who_;
  bool counted_;
};

}  // namespace detail

/// Keeps a channel from being destroyed unnoticed while it is used: `attach()` returns one;
/// the channel's destructor waits until every `channel_use` is gone and makes the holder's
/// next call throw `channel_error`. Movable, not copyable.
class channel_use {
 public:
  /// Attaches to `core`; throws `channel_error` if its channel is being destroyed.
  explicit channel_use(detail::channel_core& core) : core_(&core) { core.enter(); }
  /// Takes over `other`'s attachment.
  channel_use(channel_use&& other) noexcept : core_(std::exchange(other.core_, nullptr)) {}
  channel_use& operator=(channel_use&&) = delete;
  channel_use(const channel_use&) = delete;
  ~channel_use() {
    if (core_) core_->exit();
  }

  /// A token whose stop is requested when the channel's destructor starts: a user waiting on
  /// another channel meanwhile (`engine::run` waits on its infeed while it holds its outfeed)
  /// passes it to that wait to be woken then. An empty token for a moved-from `channel_use`.
  std::stop_token destruction_token() const noexcept { return core_ ? core_->destruction_token() : std::stop_token{}; }

 private:
  detail::channel_core* core_;
};

/// A bounded single-producer/single-consumer queue of `Capacity` elements of `T` (see the
/// file comment). One thread may produce and one thread consume at a time.
template <class T, std::size_t Capacity>
  requires(Capacity > 0 && std::default_initializable<T> && std::copyable<T>)
class channel {
 public:
  using value_type = T;                              ///< the elements
  static constexpr std::size_t capacity = Capacity;  ///< the slots

  /// Allocates the `Capacity` slots, each a value-initialised `T`.
  channel() : slots_(std::make_unique<T[]>(Capacity)) {}
  channel(const channel&) = delete;
  channel& operator=(const channel&) = delete;
  /// If the channel is in use, wakes its users with `channel_error` and waits for them.
  ~channel() { core_.destroy(); }

  // ---- producer ------------------------------------------------------------------------

  /// Waits for a free slot, calls `write(slot)` to fill it in place, then publishes it.
  /// `slot` holds an earlier element's values: `write` must set every value it needs. If
  /// `write` throws, nothing is published. Returns false, without calling `write`, if the
  /// consumer has cancelled or `stop` is requested. Throws `channel_error` after `close()`.
  template <std::invocable<T&> F>
  bool emplace(F&& write, const std::stop_token& stop = {}) {
    return produce(write, detail::wait_limit::forever(stop));
  }
  /// `emplace` if a slot is free now; false if none is (or the consumer has cancelled).
  template <std::invocable<T&> F>
  bool try_emplace(F&& write) {
    return produce(write, detail::wait_limit::none());
  }
  /// `emplace`, waiting at most `timeout` for a free slot; false if none came.
  template <std::invocable<T&> F, class Rep, class Period>
  bool try_emplace_for(F&& write, std::chrono::duration<Rep, Period> timeout) {
    return produce(write, detail::wait_limit::after(timeout));
  }
  /// `emplace`, waiting until `deadline` at most for a free slot; false if none came.
  template <std::invocable<T&> F, class Clock, class Duration>
  bool try_emplace_until(F&& write, std::chrono::time_point<Clock, Duration> deadline) {
    return produce(write, detail::wait_limit::deadline(deadline));
  }

  /// `emplace` with a copy of `value`.
  bool push(const T& value, const std::stop_token& stop = {}) { return emplace(copy_from(value), stop); }
  /// `emplace` with `value` moved in.
  bool push(T&& value, const std::stop_token& stop = {}) { return emplace(move_from(value), stop); }
  /// `try_emplace` with a copy of `value`.
  bool try_push(const T& value) { return try_emplace(copy_from(value)); }
  /// `try_emplace` with `value` moved in (left as it was if no slot is free).
  bool try_push(T&& value) { return try_emplace(move_from(value)); }
  /// `try_emplace_for` with a copy of `value`.
  template <class Rep, class Period>
  bool try_push_for(const T& value, std::chrono::duration<Rep, Period> timeout) {
    return try_emplace_for(copy_from(value), timeout);
  }
  /// `try_emplace_for` with `value` moved in (left as it was if no slot came).
  template <class Rep, class Period>
  bool try_push_for(T&& value, std::chrono::duration<Rep, Period> timeout) {
    return try_emplace_for(move_from(value), timeout);
  }
  /// `try_emplace_until` with a copy of `value`.
  template <class Clock, class Duration>
  bool try_push_until(const T& value, std::chrono::time_point<Clock, Duration> deadline) {
    return try_emplace_until(copy_from(value), deadline);
  }
  /// `try_emplace_until` with `value` moved in (left as it was if no slot came).
  template <class Clock, class Duration>
  bool try_push_until(T&& value, std::chrono::time_point<Clock, Duration> deadline) {
    return try_emplace_until(move_from(value), deadline);
  }

  /// Ends the stream: the consumer receives the elements pushed so far, then the end.
  void close() { core_.set(detail::channel_core::closed); }
  /// Ends the stream with an error: the consumer receives the elements pushed so far, then
  /// its next read rethrows `error`. Call it from a producer's `catch (...)` with
  /// `std::current_exception()`.
  void abort(std::exception_ptr error) {
    if (!error) throw std::invalid_argument("ipu::channel::abort: the exception_ptr is null");
    core_.set(detail::channel_core::failed, std::move(error));
  }

  // ---- consumer ------------------------------------------------------------------------

  /// Waits for an element, calls `read(element)` in place, then frees its slot. Returns false
  /// at the end of the stream (closed and drained, or cancelled) or if `stop` is requested;
  /// rethrows the producer's error once the elements before it are read. If `read` throws,
  /// the element stays in the channel.
  template <std::invocable<const T&> F>
  bool consume(F&& read, const std::stop_token& stop = {}) {
    return take(read, detail::wait_limit::forever(stop));
  }
  /// `consume` if an element is there now; false if none is (or the stream has ended).
  template <std::invocable<const T&> F>
  bool try_consume(F&& read) {
    return take(read, detail::wait_limit::none());
  }
  /// `consume`, waiting at most `timeout` for an element; false if none came.
  template <std::invocable<const T&> F, class Rep, class Period>
  bool try_consume_for(F&& read, std::chrono::duration<Rep, Period> timeout) {
    return take(read, detail::wait_limit::after(timeout));
  }
  /// `consume`, waiting until `deadline` at most for an element; false if none came.
  template <std::invocable<const T&> F, class Clock, class Duration>
  bool try_consume_until(F&& read, std::chrono::time_point<Clock, Duration> deadline) {
    return take(read, detail::wait_limit::deadline(deadline));
  }

  /// `consume` into `out` (copy-assigned: the slot stays the channel's).
  bool pop(T& out, const std::stop_token& stop = {}) { return consume(copy_to(out), stop); }
  /// `try_consume` into `out`.
  bool try_pop(T& out) { return try_consume(copy_to(out)); }
  /// `try_consume_for` into `out`.
  template <class Rep, class Period>
  bool try_pop_for(T& out, std::chrono::duration<Rep, Period> timeout) {
    return try_consume_for(copy_to(out), timeout);
  }
  /// `try_consume_until` into `out`.
  template <class Clock, class Duration>
  bool try_pop_until(T& out, std::chrono::time_point<Clock, Duration> deadline) {
    return try_consume_until(copy_to(out), deadline);
  }

  /// The consumer stops reading: a producer waiting for a slot, and every later push, gets
  /// `false`; reads return false.
  void cancel() { core_.set(detail::channel_core::cancelled); }

  // ---- both sides ----------------------------------------------------------------------

  /// Elements pushed and not yet consumed (a snapshot while the other side runs).
  std::size_t size() const noexcept {
    const std::uint64_t popped = head_.load(std::memory_order_acquire);
    return static_cast<std::size_t>(tail_.load(std::memory_order_acquire) - popped);
  }
  /// `size() == 0`.
  bool empty() const noexcept { return size() == 0; }
  /// Elements pushed since construction or `reset()`.
  std::uint64_t pushed() const noexcept { return tail_.load(std::memory_order_acquire); }
  /// Elements consumed since construction or `reset()`.
  std::uint64_t popped() const noexcept { return head_.load(std::memory_order_acquire); }
  /// The producer has called `close()` or `abort()`.
  bool closed() const noexcept { return core_.state() & (detail::channel_core::closed | detail::channel_core::failed); }
  /// The consumer has called `cancel()`.
  bool cancelled() const noexcept { return core_.state() & detail::channel_core::cancelled; }

  /// Marks a user for the channel's lifetime check (`engine::run` and `ipu::feed` hold one):
  /// destroying the channel while the returned object lives is diagnosed, not undefined.
  [[nodiscard]] channel_use attach() { return channel_use(core_); }
  /// Whether a thread waits on the channel or a user is attached (a snapshot).
  bool in_use() const { return core_.in_use(); }

  /// Empties the channel and reopens it, for a new stream. Throws `channel_error` if a
  /// thread waits on it or a user is attached; no other call may run concurrently.
  void reset() {
    core_.reset();
    head_.store(0, std::memory_order_relaxed);
    tail_.store(0, std::memory_order_relaxed);
    head_mine_ = tail_mine_ = head_seen_ = tail_seen_ = 0;
  }

 private:
  static auto copy_from(const T& value) {
    return [&value](T& slot) { slot = value; };
  }
  static auto move_from(T& value) {
    return [&value](T& slot) { slot = std::move(value); };
  }
  static auto copy_to(T& out) {
    return [&out](const T& element) { out = element; };
  }

  using party = detail::channel_core::party;

  template <class F>
  bool produce(F& write, const detail::wait_limit& limit) {
    using core = detail::channel_core;
    const detail::channel_call call(core_, party::producer, limit.how != detail::wait_limit::kind::no_wait);
    const std::uint64_t tail = tail_mine_;
    for (;;) {
      const unsigned state = core_.usable_state();
      if (state & (core::closed | core::failed))
        throw channel_error("ipu::channel: push after the producer closed the channel");
      if (state & core::cancelled) return false;
      if (tail - head_seen_ < Capacity) break;
      head_seen_ = head_.load(std::memory_order_acquire);
      if (tail - head_seen_ < Capacity) break;
      const auto ready = [&] {
        return tail - head_.load(std::memory_order_acquire) < Capacity ||
               (core_.state() & (core::cancelled | core::destroyed));
      };
      if (!core_.wait(party::producer, ready, limit)) return false;
    }
    write(slots_[static_cast<std::size_t>(tail % Capacity)]);
    tail_mine_ = tail + 1;
    tail_.store(tail + 1, std::memory_order_release);
    core_.wake(party::consumer);
    return true;
  }

  template <class F>
  bool take(F& read, const detail::wait_limit& limit) {
    using core = detail::channel_core;
    const detail::channel_call call(core_, party::consumer, limit.how != detail::wait_limit::kind::no_wait);
    const std::uint64_t head = head_mine_;
    for (;;) {
      const unsigned state = core_.usable_state();
      if (state & core::cancelled) return false;
      if (head != tail_seen_) break;
      tail_seen_ = tail_.load(std::memory_order_acquire);
      if (head != tail_seen_) break;
      if (state & (core::closed | core::failed)) {
        // The tail was loaded after the state: it includes every element pushed before the end.
        if (state & core::failed) std::rethrow_exception(core_.error());
        return false;
      }
      const auto ready = [&] {
        return tail_.load(std::memory_order_acquire) != head ||
               (core_.state() & (core::closed | core::failed | core::cancelled | core::destroyed));
      };
      if (!core_.wait(party::consumer, ready, limit)) return false;
    }
    read(std::as_const(slots_[static_cast<std::size_t>(head % Capacity)]));
    head_mine_ = head + 1;
    head_.store(head + 1, std::memory_order_release);
    core_.wake(party::producer);
    return true;
  }

  // The published indices, each on its own line: written by one side, read by the other.
  alignas(detail::false_sharing_bytes) std::atomic<std::uint64_t> tail_{0};
  alignas(detail::false_sharing_bytes) std::atomic<std::uint64_t> head_{0};
  // Each side's private line: its own index (read without touching the published line,
  // which the other side may be polling) and its last view of the other side's.
  alignas(detail::false_sharing_bytes) std::uint64_t tail_mine_ = 0;
  std::uint64_t head_seen_ = 0;
  alignas(detail::false_sharing_bytes) std::uint64_t head_mine_ = 0;
  std::uint64_t tail_seen_ = 0;
  alignas(detail::false_sharing_bytes) detail::channel_core core_;
  std::unique_ptr<T[]> slots_;
};

}  // namespace ipu
