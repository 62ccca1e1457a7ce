#pragma once
/// \file
/// Infeeds and outfeeds typed from the graph: the host side of `engine::run`, which like the
/// seed's `loops.repeat(n, body, infeed)` runs many batches per host call while data streams
/// in and results stream out.
///
/// ```cpp
/// ipu::infeed<G, /*prefetch depth*/ 8> in;           // elements: ipu::input_tensor_t<G>
/// ipu::outfeed<G, ipu::outfeed_mode::all> out;        // elements: ipu::output_tensor_t<G>
/// std::jthread producer([&](std::stop_token stop) { ipu::feed(in, dataset | ranges::views::transform(normalise), stop); });
/// ipu::run_stats stats = engine.run(in, out, 1000);   // stops early if the infeed ends
/// for (auto& y : out.drain()) use(y);
/// ```
///
/// - `infeed<G, Depth>` is an `ipu::channel` (`runtime/channel.hpp`) of `Depth` input
///   tensors. `Depth` is checked at compile time: 1 to 255 as TensorFlow's `prefetch_depth`,
///   and `Depth` x the element's bytes within the 128 MB host-device stream buffer.
/// - `outfeed<G, outfeed_mode::all>` keeps every result, in order; `outfeed_mode::last` keeps
///   only the latest. Neither ever makes the engine wait.
/// - `ipu::feed(in, range)` pushes an input range (anything a range-based `for` reads through
///   `std::begin` and `std::end`: a standard container or view, or a range-v3 pipeline) into an
///   infeed and closes it, forwarding an exception thrown by the range to the infeed's consumer.

#include <ipu/core/iterable.hpp>
#include <ipu/core/tensor.hpp>
#include <ipu/graph/compose.hpp>
#include <ipu/runtime/channel.hpp>
#include <ipu/runtime/io.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <concepts>
#include <iterator>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

namespace ipu {

/// The largest host-device stream buffer, in bytes: Graphcore caps each host<->device stream
/// buffer at 128 MB (a larger stream fails to allocate when the device is prepared, as in
/// github.com/graphcore/poptorch/issues/9, "Single stream of length 149766584"). Graphcore
/// counts in binary multiples (its "624KB" of Mk2 tile memory are 638,976 bytes), so 128 x 2^20.
inline constexpr std::int64_t stream_buffer_bytes = std::int64_t{128} << 20;

/// The largest infeed prefetch depth, as TensorFlow's `IPUInfeedQueue(prefetch_depth)`:
/// "prefetch_depth must be less than 256" (github.com/graphcore/tensorflow,
/// `tensorflow/python/ipu/ipu_infeed_queue.py`).
inline constexpr int max_prefetch_depth = 255;

namespace diag {
struct prefetch_depth { std::int64_t value; };
struct element_bytes { std::int64_t value; };
struct buffer_bytes { std::int64_t value; };
struct stream_buffer_limit { std::int64_t value; };

template <prefetch_depth Depth>
struct infeed_depth_must_be_1_to_255 {
  static_assert(Depth.value >= 1 && Depth.value <= max_prefetch_depth,
                "ipu::infeed: the prefetch depth must be 1 to 255, as TensorFlow's prefetch_depth");
  static constexpr bool value = true;
};

template <prefetch_depth Depth, element_bytes Element, buffer_bytes Buffer, stream_buffer_limit Limit>
struct infeed_exceeds_stream_buffer {
  static_assert(Buffer.value <= Limit.value,
                "ipu::infeed: depth x element bytes exceeds the 128 MB host-device stream buffer; lower the "
                "prefetch depth");
  static constexpr bool value = true;
};

template <element_bytes Element, stream_buffer_limit Limit>
struct outfeed_element_exceeds_stream_buffer {
  static_assert(Element.value <= Limit.value,
                "ipu::outfeed: one result exceeds the 128 MB host-device stream buffer; lower the batch size");
  static constexpr bool value = true;
};
}  // namespace diag

namespace detail {

/// The diagnostic of an infeed's depth `Depth` of elements of `ElementBytes`, if it is out of
/// range (a compile error with the numbers); true otherwise.
template <int Depth, std::int64_t ElementBytes>
consteval auto report_prefetch_depth() {
  if constexpr (Depth < 1 || Depth > max_prefetch_depth) {
    return diag::infeed_depth_must_be_1_to_255<diag::prefetch_depth{Depth}>::value;
  } else if constexpr (Depth * ElementBytes > stream_buffer_bytes) {
    return diag::infeed_exceeds_stream_buffer<diag::prefetch_depth{Depth}, diag::element_bytes{ElementBytes},
                                              diag::buffer_bytes{Depth * ElementBytes},
                                              diag::stream_buffer_limit{stream_buffer_bytes}>::value;
  } else {
    return true;
  }
}

/// `Depth`, after the compile-time checks. `decltype` instantiates the diagnostic without
/// using its value, and the depth stays a constant, so that the diagnostic is the only error
/// either compiler prints (see `graph_info::checked`).
template <int Depth, std::int64_t ElementBytes>
struct checked_prefetch_depth {
  using checked = decltype(report_prefetch_depth<Depth, ElementBytes>());
  static constexpr std::size_t value = Depth < 1 || Depth > max_prefetch_depth ? 1 : static_cast<std::size_t>(Depth);
};

/// The diagnostic of an outfeed whose results of `ElementBytes` exceed the stream buffer (a
/// compile error with the numbers); true otherwise.
template <std::int64_t ElementBytes>
consteval auto report_outfeed_element() {
  if constexpr (ElementBytes > stream_buffer_bytes) {
    return diag::outfeed_element_exceeds_stream_buffer<diag::element_bytes{ElementBytes},
                                                       diag::stream_buffer_limit{stream_buffer_bytes}>::value;
  } else {
    return true;
  }
}

/// Outfeed storage that keeps every result: a list of blocks of `block_slots` results, which
/// the producer appends to and the consumer frees once read. Never blocks the producer.
template <class T>
class result_list {
  static constexpr std::size_t block_slots = 16;
  struct block {
    std::array<T, block_slots> slots{};
    std::atomic<block*> next{nullptr};
  };

 public:
  result_list() : read_block_(new block), write_block_(read_block_) {}
  result_list(const result_list&) = delete;
  result_list& operator=(const result_list&) = delete;
  ~result_list() { free_blocks(); }

  /// Producer: `write(slot)` fills the next result in place; published when it returns.
  template <class F>
  void write(F& write) {
    const std::uint64_t n = written_.load(std::memory_order_relaxed);
    if (n - write_base_ == block_slots) {
      block* next = new block;
      write_block_->next.store(next, std::memory_order_release);
      write_block_ = next;
      write_base_ += block_slots;
    }
    write(write_block_->slots[static_cast<std::size_t>(n - write_base_)]);
    written_.store(n + 1, std::memory_order_release);
  }

  /// Consumer: moves the oldest result into `out`; false if there is none.
  bool take(T& out) {
    const std::uint64_t n = read_.load(std::memory_order_relaxed);
    if (n == written_.load(std::memory_order_acquire)) return false;
    if (n - read_base_ == block_slots) {
      block* next = read_block_->next.load(std::memory_order_acquire);  // linked before n was published
      delete read_block_;
      read_block_ = next;
      read_base_ += block_slots;
    }
    out = std::move(read_block_->slots[static_cast<std::size_t>(n - read_base_)]);
    read_.store(n + 1, std::memory_order_release);
    return true;
  }
  void take_all(std::vector<T>& out) {
    out.reserve(out.size() + available());
    for (T value; take(value);) out.push_back(std::move(value));
  }

  std::size_t available() const noexcept {
    const std::uint64_t read = read_.load(std::memory_order_acquire);
    return static_cast<std::size_t>(written_.load(std::memory_order_acquire) - read);
  }
  std::uint64_t written() const noexcept { return written_.load(std::memory_order_acquire); }

  /// Frees every block and starts again; no other call may run concurrently.
  void clear() {
    free_blocks();
    read_block_ = write_block_ = new block;
    read_base_ = write_base_ = 0;
    read_.store(0, std::memory_order_relaxed);
    written_.store(0, std::memory_order_relaxed);
  }

 private:
  void free_blocks() noexcept {
    for (block* b = read_block_; b != nullptr;) delete std::exchange(b, b->next.load(std::memory_order_relaxed));
  }

  alignas(false_sharing_bytes) std::atomic<std::uint64_t> written_{0};
  std::uint64_t write_base_ = 0;  // index of write_block_'s first slot
  alignas(false_sharing_bytes) std::atomic<std::uint64_t> read_{0};
  std::uint64_t read_base_ = 0;
  block* read_block_;
  block* write_block_;
};

/// Outfeed storage that keeps the latest result: a triple buffer. The producer writes the
/// back buffer and swaps it with the middle one; the consumer swaps the middle one to the
/// front when the producer has written it since. Neither side ever waits.
template <class T>
class latest_result {
  static constexpr unsigned index_mask = 3, fresh = 4;

 public:
  template <class F>
  void write(F& write) {
    write(buffers_[back_]);
    back_ = middle_.exchange(back_ | fresh, std::memory_order_acq_rel) & index_mask;
    written_.store(written_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  }
  /// Copies the latest result into `out` (the buffers stay the outfeed's); false if the
  /// consumer has already taken it.
  bool take(T& out) {
    if (!take_front()) return false;
    out = buffers_[front_];
    return true;
  }
  /// Moves the latest result, if not yet taken, into `out`; the front buffer gets a new `T`.
  void take_all(std::vector<T>& out) {
    if (!take_front()) return;
    out.emplace_back();
    using std::swap;
    swap(out.back(), buffers_[front_]);
  }
  std::size_t available() const noexcept { return (middle_.load(std::memory_order_acquire) & fresh) ? 1 : 0; }
  std::uint64_t written() const noexcept { return written_.load(std::memory_order_acquire); }
  void clear() {
    middle_.store(1, std::memory_order_relaxed);
    back_ = 0;
    front_ = 2;
    written_.store(0, std::memory_order_relaxed);
  }

 private:
  /// Swaps the middle buffer to the front if the producer has written it since the last take.
  bool take_front() noexcept {
    if (!available()) return false;
    front_ = middle_.exchange(front_, std::memory_order_acq_rel) & index_mask;
    return true;
  }

  std::array<T, 3> buffers_{};
  alignas(false_sharing_bytes) std::atomic<unsigned> middle_{1};  // buffer index | fresh
  alignas(false_sharing_bytes) unsigned back_ = 0;               // the producer's
  std::atomic<std::uint64_t> written_{0};
  alignas(false_sharing_bytes) unsigned front_ = 2;  // the consumer's
};

}  // namespace detail

/// The infeed of graph `G`: a single-producer/single-consumer `ipu::channel` of `Depth`
/// input tensors (`ipu::input_tensor_t<G>`), which `engine::run` reads in place. `Depth` is
/// TensorFlow's `prefetch_depth`: 1 to 255, and `Depth` x the input's bytes at most
/// `ipu::stream_buffer_bytes`; both are compile errors that print the numbers. The slots
/// (`Depth` x the input's bytes) are allocated at construction.
template <Graph G, int Depth = 1>
class infeed : public channel<input_tensor_t<G>, detail::checked_prefetch_depth<Depth, input_tensor_t<G>::bytes>::value> {
 public:
  using graph_type = std::remove_cvref_t<G>;   ///< `G`
  static constexpr int prefetch_depth = Depth;  ///< the slots, as TensorFlow's `prefetch_depth`
};

/// What an outfeed keeps, as TensorFlow's `IPUOutfeedMode`.
enum class outfeed_mode {
  all,   ///< every result, in the order of the iterations
  last,  ///< only the latest result
};

/// The outfeed of graph `G`: results (`ipu::output_tensor_t<G>`) written by `engine::run`,
/// read by one consumer thread, concurrently or after the run.
/// - `outfeed_mode::all` keeps every result in order, in blocks allocated as results arrive;
///   `outfeed_mode::last` keeps the latest (a triple buffer). The engine never waits for the
///   consumer in either mode.
/// - `engine::run` closes the outfeed when the infeed ends, and aborts it with the run's
///   error if the run fails: a consumer blocked in `pop` learns either.
/// - Destroying the outfeed while an engine run or a call (a `pop`, waiting or not) uses it
///   is diagnosed as for `ipu::channel`.
template <Graph G, outfeed_mode Mode = outfeed_mode::all>
class outfeed {
  using checked = decltype(detail::report_outfeed_element<output_tensor_t<G>::bytes>());  // a compile error if too large

 public:
  using graph_type = std::remove_cvref_t<G>;   ///< `G`
  using value_type = output_tensor_t<G>;       ///< a result: `ipu::output_tensor_t<G>`
  static constexpr outfeed_mode mode = Mode;   ///< what the outfeed keeps

  outfeed() = default;
  outfeed(const outfeed&) = delete;
  outfeed& operator=(const outfeed&) = delete;
  ~outfeed() { core_.destroy(); }

  // ---- producer (engine::run) ------------------------------------------------------------

  /// Appends a result, written in place by `write(slot)`; never waits. `slot` may hold an
  /// earlier result: `write` must set every value. If `write` throws, nothing is published.
  /// Throws `channel_error` after `close()` or `abort()`.
  template <std::invocable<value_type&> F>
  void emplace(F&& write) {
    const detail::channel_call call(core_, detail::channel_core::party::producer);
    const unsigned state = core_.usable_state();
    if (state & (detail::channel_core::closed | detail::channel_core::failed))
      throw channel_error(
          "ipu::outfeed: a result written after the outfeed was closed (engine::run closes it at the end of the "
          "infeed's stream; reset() both channels to start a new stream)");
    store_.write(write);
    core_.wake(detail::channel_core::party::consumer);
  }
  /// `emplace` with a copy of `value`.
  void push(const value_type& value) {
    emplace([&](value_type& slot) { slot = value; });
  }
  /// Ends the stream: a consumer receives the results so far, then the end.
  void close() { core_.set(detail::channel_core::closed); }
  /// Ends the stream with `error`, which a consumer's `pop` rethrows after the results so far.
  void abort(std::exception_ptr error) {
    if (!error) throw std::invalid_argument("ipu::outfeed::abort: the exception_ptr is null");
    core_.set(detail::channel_core::failed, std::move(error));
  }

  // ---- consumer --------------------------------------------------------------------------

  /// Waits for the next result (`all`) or a result not yet taken (`last`) and moves or copies
  /// it into `out`. False once the outfeed is closed and drained, or if `stop` is requested;
  /// rethrows the error of `abort` once drained.
  bool pop(value_type& out, const std::stop_token& stop = {}) { return pop_within(out, detail::wait_limit::forever(stop)); }
  /// `pop` if a result is there now; false if none is.
  bool try_pop(value_type& out) { return pop_within(out, detail::wait_limit::none()); }
  /// `pop`, waiting at most `timeout`; false if no result came.
  template <class Rep, class Period>
  bool try_pop_for(value_type& out, std::chrono::duration<Rep, Period> timeout) {
    return pop_within(out, detail::wait_limit::after(timeout));
  }
  /// `pop`, waiting until `deadline` at most; false if no result came.
  template <class Clock, class Duration>
  bool try_pop_until(value_type& out, std::chrono::time_point<Clock, Duration> deadline) {
    return pop_within(out, detail::wait_limit::deadline(deadline));
  }

  /// Every result available now, oldest first (`all`), or the latest if not yet taken
  /// (`last`: at most one). Never waits and never throws the run's error (only
  /// `channel_error` if the outfeed is being destroyed).
  std::vector<value_type> drain() {
    const detail::channel_call call(core_, detail::channel_core::party::consumer);
    std::vector<value_type> results;
    store_.take_all(results);
    return results;
  }

  // ---- both sides ------------------------------------------------------------------------

  /// Results available to the consumer now.
  std::size_t size() const noexcept { return store_.available(); }
  /// `size() == 0`.
  bool empty() const noexcept { return size() == 0; }
  /// Results written since construction or `reset()`.
  std::uint64_t pushed() const noexcept { return store_.written(); }
  /// The outfeed was closed or aborted.
  bool closed() const noexcept { return core_.state() & (detail::channel_core::closed | detail::channel_core::failed); }

  /// See `channel::attach`.
  [[nodiscard]] channel_use attach() { return channel_use(core_); }
  /// See `channel::in_use`.
  bool in_use() const { return core_.in_use(); }
  /// Drops every result and reopens the outfeed; throws `channel_error` if it is in use.
  void reset() {
    core_.reset();
    store_.clear();
  }

 private:
  bool pop_within(value_type& out, const detail::wait_limit& limit) {
    using core = detail::channel_core;
    const detail::channel_call call(core_, core::party::consumer);
    for (;;) {
      const unsigned state = core_.usable_state();
      if (store_.take(out)) return true;
      if (state & (core::closed | core::failed)) {  // read before take(): nothing came after
        if (state & core::failed) std::rethrow_exception(core_.error());
        return false;
      }
      const auto ready = [&] {
        return store_.available() != 0 || (core_.state() & (core::closed | core::failed | core::destroyed));
      };
      if (!core_.wait(detail::channel_core::party::consumer, ready, limit)) return false;
    }
  }

  using store_type =
      std::conditional_t<Mode == outfeed_mode::all, detail::result_list<value_type>, detail::latest_result<value_type>>;
  store_type store_;
  alignas(detail::false_sharing_bytes) detail::channel_core core_;
};

/// How `ipu::feed` ended.
enum class feed_end {
  closed,     ///< the range was exhausted; the infeed is closed
  cancelled,  ///< the consumer cancelled the infeed
  stopped,    ///< a stop was requested; the infeed is aborted with a `channel_error`
  failed,     ///< the range (or an element's conversion) threw; the infeed is aborted with it
};

/// What `ipu::feed` did.
struct feed_result {
  std::uint64_t pushed = 0;         ///< elements pushed by this call
  feed_end end = feed_end::closed;  ///< how it ended
};

/// Elements `feed` can push into a channel of `T`: a `T`, anything assignable to one, or a
/// range of values that `T::assign` takes: for a tensor, a `std::vector` of its elements, a
/// range of floats for an f16 tensor (each rounded to nearest even), or a range-v3
/// `views::chunk` of a flat range of values.
template <class Ref, class T>
concept Feedable = std::assignable_from<T&, Ref> || requires(T& slot, Ref&& value) {
  slot.assign(std::forward<Ref>(value));
};

/// Pushes every element of `range` into `in`, in order, then closes it; returns the number
/// pushed and how it ended. Runs on the calling thread, typically a `std::jthread` whose
/// stop token is passed as `stop`.
/// - An exception thrown by the range, one of its views or an element's conversion (a wrong
///   size, say) aborts the infeed with that exception: the consumer (`engine::run`) receives
///   the elements pushed before it, then rethrows it. `feed` itself returns `failed`.
/// - A cancelled infeed ends `feed` with `cancelled`; a requested stop with `stopped`, after
///   aborting the infeed with a `channel_error` saying so, since the stream is incomplete.
/// - Misuse of the channel (it was already closed, or destroyed meanwhile) throws
///   `channel_error`.
template <class T, std::size_t Capacity, InputIterable R>
  requires Feedable<iterable_reference_t<R>, T>
feed_result feed(channel<T, Capacity>& in, R&& range, const std::stop_token& stop = {}) {
  feed_result result;
  const channel_use use = in.attach();
  // Whether an exception comes from the channel itself (misuse: rethrown) or from the range,
  // its views or a conversion (aborts the infeed), whatever its type.
  bool in_channel = false;
  try {
    for (auto&& value : range) {
      in_channel = true;
      const bool pushed = in.emplace(
          [&](T& slot) {
            in_channel = false;
            if constexpr (std::assignable_from<T&, decltype(value)>) {
              slot = std::forward<decltype(value)>(value);
            } else {
              slot.assign(std::forward<decltype(value)>(value));
            }
            in_channel = true;
          },
          stop);
      in_channel = false;
      if (!pushed) {
        if (in.cancelled()) {
          result.end = feed_end::cancelled;
        } else {
          result.end = feed_end::stopped;
          in.abort(std::make_exception_ptr(channel_error("ipu::feed: stopped after " + std::to_string(result.pushed) +
                                                         " elements, before the end of its range")));
        }
        return result;
      }
      ++result.pushed;
    }
  } catch (...) {
    if (in_channel) throw;
    in.abort(std::current_exception());
    result.end = feed_end::failed;
    return result;
  }
  in.close();
  return result;
}

}  // namespace ipu
