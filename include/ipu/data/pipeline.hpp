#pragma once
/// \file
/// Host input pipelines: the pieces that range-v3 (or the standard's views) composes into a
/// stream of batches, and `ipu::prefetcher`, the thread that pushes them into an infeed ahead
/// of the device (TensorFlow's `dataset.shuffle(...).map(normalise).batch(B,
/// drop_remainder=True).prefetch(...)` into an `IPUInfeedQueue`).
///
/// ```
/// namespace rv = ranges::views;
/// constexpr std::int64_t batch = ipu::batch_size_v<net_t>, pixels = 28 * 28;
/// const std::vector<std::int64_t> order = ipu::data::shuffled(images.size() / pixels, seed, epoch);
/// auto batches = order | rv::take(order.size() / batch * batch)         // whole batches only
///              | rv::transform([&](std::int64_t i) { return images.subspan(i * pixels, pixels); })
///              | rv::join                                                 // bytes, in the new order
///              | rv::transform(ipu::data::normalise{.scale = 1 / 255.0f, .mean = 0.286f, .stddev = 0.353f})
///              | rv::chunk(batch * pixels);                               // a batch's floats
/// ipu::infeed<net_t, 8> in;                                               // an f16 input: rounded as pushed
/// ipu::prefetcher feeding(in, batches);                                   // a thread fills the infeed
/// engine.run(in, out, order.size() / batch);
/// ```
///
/// - `data::shuffled(n, seed, epoch)` is the order of `n` samples in an epoch: a permutation
///   drawn from the seed and the epoch, the same on every platform and standard library.
/// - `data::normalise` maps a value `v` to `(v * scale - mean) / stddev`, in float;
///   `data::cast<T>` converts to `T` (`ipu::f16`: rounded to nearest, ties to even). An infeed
///   of f16 tensors also takes floats directly (`tensor::assign` converts them).
/// - A batch is any range of the input tensor's values, such as range-v3's `views::chunk` of a
///   flat range: `tensor::assign` takes it and checks that it holds exactly a batch, so a short
///   last chunk is an error the consumer receives. Take whole batches, as a static-shape device
///   needs (`drop_remainder=True`).
/// - `ipu::prefetcher` runs `ipu::feed` on its own thread, so that reading, decoding and
///   normalising overlap the device's steps; the infeed's depth is the prefetch depth.

#include <ipu/core/iterable.hpp>
#include <ipu/runtime/channel.hpp>
#include <ipu/runtime/feeds.hpp>
#include <ipu/runtime/weights.hpp>  // detail::mt19937_64
#include <ipu/train/precision.hpp>  // detail::mix64

#include <cstddef>
#include <cstdint>
#include <exception>
#include <numeric>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace ipu {
namespace data {

/// The order of `n` samples in epoch `epoch`: a Fisher-Yates shuffle drawn from a 64-bit
/// Mersenne Twister (which gives `std::mt19937_64`'s sequence) seeded with
/// `mix64(seed ^ mix64(epoch + 1))`, SplitMix64's finaliser; the same on every platform and
/// standard library. Throws `std::invalid_argument` if `n` is negative.
inline std::vector<std::int64_t> shuffled(std::int64_t n, std::uint64_t seed, std::int64_t epoch = 0) {
  if (n < 0) throw std::invalid_argument("ipu::data::shuffled: " + std::to_string(n) + " samples");
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), std::int64_t{0});
  detail::mt19937_64 engine(detail::mix64(seed ^ detail::mix64(static_cast<std::uint64_t>(epoch) + 1)));
  for (std::int64_t i = n - 1; i > 0; --i) {
    // j uniform in [0, i]; the modulo's bias is below (i + 1) / 2^64.
    const auto j = static_cast<std::int64_t>(engine() % static_cast<std::uint64_t>(i + 1));
    std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(j)]);
  }
  return order;
}

/// Maps a value `v` to `(v * scale - mean) / stddev`, in float: `scale` 1/255 reads 8-bit
/// pixels as [0, 1], then `mean` and `stddev` standardise them (the data set's statistics).
struct normalise {
  float scale = 1.0f;   ///< applied first
  float mean = 0.0f;    ///< subtracted from the scaled value
  float stddev = 1.0f;  ///< divides the difference
  /// The normalised `v`.
  template <class V>
  constexpr float operator()(V v) const noexcept {
    return (static_cast<float>(v) * scale - mean) / stddev;
  }
};

/// Converts a value to `T` as `static_cast` does (`ipu::f16` from a float: rounded to nearest,
/// ties to even). See `cast`.
template <class T>
struct cast_to {
  /// `v` as a `T`.
  template <class V>
  constexpr T operator()(V v) const noexcept {
    return static_cast<T>(v);
  }
};
/// The conversion to `T`, for `views::transform(ipu::data::cast<ipu::f16>)`.
template <class T>
inline constexpr cast_to<T> cast{};

}  // namespace data

/// Feeds a range into an infeed from a thread of its own (`ipu::feed` on a `std::jthread`):
/// the range's views run ahead of the consumer by as many elements as the infeed holds.
///
/// ```
/// ipu::prefetcher feeding(in, batches);   // an lvalue range is referred to, an rvalue moved in
/// engine.run(in, out, steps);
/// ipu::feed_result r = feeding.wait();    // the thread's end: pushed, and how it ended
/// ```
///
/// Destroying it before the range's end requests a stop and joins the thread: the infeed is
/// then aborted with a `channel_error` saying the stream is incomplete (unless the consumer had
/// cancelled it). An exception from the range reaches the consumer through the infeed
/// (`feed_end::failed`); misuse of the channel (fed after it was closed) is rethrown by `wait`.
/// The infeed must outlive the prefetcher.
template <class T, std::size_t Capacity, InputIterable R>
  requires Feedable<iterable_reference_t<R>, T>
class prefetcher {
 public:
  /// Starts feeding `range` into `in`.
  prefetcher(channel<T, Capacity>& in, R&& range)
      : range_(std::forward<R>(range)), thread_([this, &in](std::stop_token stop) {
          try {
            result_ = feed(in, range_, stop);
          } catch (...) {
            error_ = std::current_exception();
          }
        }) {}
  prefetcher(const prefetcher&) = delete;
  prefetcher& operator=(const prefetcher&) = delete;

  /// Waits for the thread to end and returns what `feed` did; rethrows a misuse of the
  /// channel. May be called again: returns the same.
  feed_result wait() {
    if (thread_.joinable()) thread_.join();
    if (error_) std::rethrow_exception(error_);
    return result_;
  }
  /// Asks the thread to stop: it ends at its next wait for a free slot (`feed_end::stopped`).
  void request_stop() noexcept { thread_.request_stop(); }

 private:
  R range_;  // a reference for an lvalue range
  feed_result result_;
  std::exception_ptr error_;
  std::jthread thread_;  // last: stopped and joined before the members it uses are destroyed
};

/// A prefetcher of range `R` (a reference for an lvalue) into a channel of `T`.
template <class T, std::size_t Capacity, class R>
prefetcher(channel<T, Capacity>&, R&&) -> prefetcher<T, Capacity, R>;

}  // namespace ipu
