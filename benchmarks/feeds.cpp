// Throughput of `ipu::channel` (runtime/channel.hpp), the storage of `ipu::infeed`: a producer
// thread against a consumer thread, run beside `boost::lockfree::spsc_queue` and a plain
// `std::memcpy` of the same bytes, so the ratios can be read off one table.
//
//   bench_feeds --benchmark_min_time=1          # steadier figures (benchmark 1.7: no `s`)
//   bench_feeds --benchmark_filter=batch        # the seed's batches only
//
// Two element sizes:
// - small: `std::uint64_t`, 1024 slots, 1<<20 elements per iteration; the consumer checks
//   that it receives 0, 1, 2, ... in order.
// - batch: the seed's input batch `ipu::tensor<ipu::f16, 4, 224, 224, 4>` (802,816 f16
//   values, 1,605,632 bytes), 8 slots (the infeed prefetch depth), 64 batches per iteration.
//   Every variant moves each batch's bytes twice: the producer copies a source batch into the
//   queue, the consumer copies it out into a destination batch, and checks the batch's stamp.
//
// Counters: `elements/s` (integers or batches), and bytes/s for the payload counted once
// (`SetBytesProcessed`), although the batch variants copy it twice.
//
// Each iteration starts its producer `std::jthread` and joins it inside the timed region: a
// thread start and join cost some tens of microseconds, against milliseconds per iteration,
// and keep the code free of a start barrier (which would itself cost a wake-up). The consumer
// is the benchmark thread. The machine should have two idle cores: the spinning variants
// busy-wait on both.

#include <ipu/core/tensor.hpp>
#include <ipu/graph/compose.hpp>
#include <ipu/graph/layers.hpp>
#include <ipu/runtime/channel.hpp>
#include <ipu/runtime/feeds.hpp>

#include <benchmark/benchmark.h>
#include <boost/lockfree/spsc_queue.hpp>

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <numeric>
#include <thread>
#include <type_traits>
#include <vector>

namespace {

/// One step of a busy-wait, the same for every spinning variant (ipu's and boost's).
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/// Sets the benchmark's rates: `elements` per iteration of `element_bytes` each, as
/// `elements/s` and (the payload counted once) bytes/s.
void report(benchmark::State& state, std::int64_t elements, std::int64_t element_bytes) {
  const std::int64_t total = state.iterations() * elements;
  state.counters["elements/s"] = benchmark::Counter(static_cast<double>(total), benchmark::Counter::kIsRate);
  state.SetBytesProcessed(total * element_bytes);
}

/// Times one transfer per iteration: `produce()` runs on a new thread while `consume()` runs
/// on this one and returns whether every element arrived intact and in order (otherwise the
/// benchmark stops with `failure`); then `report`s.
template <class Produce, class Consume>
void transfer(benchmark::State& state, std::int64_t elements, std::int64_t element_bytes, Produce produce,
              Consume consume, const char* failure) {
  for (auto _ : state) {
    std::jthread producer(produce);
    const bool intact = consume();
    producer.join();
    if (!intact) {
      state.SkipWithError(failure);
      break;
    }
  }
  report(state, elements, element_bytes);
}

/// Retries `attempt()` with `cpu_relax` until it succeeds: the spinning variants' wait.
template <class F>
void spin_until(F attempt) {
  while (!attempt()) cpu_relax();
}

// ---- small elements: std::uint64_t ---------------------------------------------------------

constexpr std::size_t small_capacity = 1024;
constexpr std::uint64_t small_count = std::uint64_t{1} << 20;  // per iteration
constexpr auto small_bytes = static_cast<std::int64_t>(sizeof(std::uint64_t));

/// The consumer's check: it received 0, 1, 2, ..., small_count - 1, in order.
struct sequence_check {
  std::uint64_t next = 0;
  std::uint64_t errors = 0;
  void operator()(std::uint64_t x) noexcept {
    errors += x != next;
    ++next;
  }
  bool ok() const noexcept { return errors == 0 && next == small_count; }
};

/// ipu::channel, blocking: the producer `push`es (a copy into the slot) and `close`s; the
/// consumer `consume`s in place until the end of the stream, then `reset`s the channel for
/// the next iteration. Either side spins, yields, then parks when it must wait.
void small_channel_blocking(benchmark::State& state) {
  ipu::channel<std::uint64_t, small_capacity> c;
  transfer(
      state, small_count, small_bytes,
      [&] {
        for (std::uint64_t i = 0; i < small_count; ++i) c.push(i);
        c.close();
      },
      [&] {
        sequence_check check;
        while (c.consume([&](const std::uint64_t& x) { check(x); })) {}
        c.reset();  // after the producer closed: nobody uses the channel now
        return check.ok();
      },
      "ipu::channel push/consume: the sequence arrived wrong");
}

/// ipu::channel, non-blocking: `try_push` and `try_consume` in place, both retried with
/// `cpu_relax` while full or empty; the consumer stops after `small_count` elements.
void small_channel_try(benchmark::State& state) {
  ipu::channel<std::uint64_t, small_capacity> c;
  transfer(
      state, small_count, small_bytes,
      [&] {
        for (std::uint64_t i = 0; i < small_count; ++i) spin_until([&] { return c.try_push(i); });
      },
      [&] {
        sequence_check check;
        while (check.next < small_count) spin_until([&] { return c.try_consume([&](const std::uint64_t& x) { check(x); }); });
        return check.ok();
      },
      "ipu::channel try_push/try_consume: the sequence arrived wrong");
}

/// boost::lockfree::spsc_queue with a compile-time capacity (Boost 1.74's `capacity<N>` holds
/// N elements: it allocates N + 1 slots): `push` and `pop` into a local, both retried with
/// `cpu_relax`, as `small_channel_try`.
void small_boost(benchmark::State& state) {
  using queue = boost::lockfree::spsc_queue<std::uint64_t, boost::lockfree::capacity<small_capacity>>;
  const auto q = std::make_unique<queue>();  // on the heap, as the channel's slots
  transfer(
      state, small_count, small_bytes,
      [&] {
        for (std::uint64_t i = 0; i < small_count; ++i) spin_until([&] { return q->push(i); });
      },
      [&] {
        sequence_check check;
        for (std::uint64_t x = 0; check.next < small_count; check(x)) spin_until([&] { return q->pop(x); });
        return check.ok();
      },
      "boost spsc_queue push/pop: the sequence arrived wrong");
}

/// One thread, one `std::memcpy` of the same bytes (8 MiB) from a source holding 0, 1, 2, ...
/// to a destination buffer: a reference for the cost of the bytes alone. Unlike the queues,
/// which cycle through an 8 KiB ring, it streams 8 MiB in and 8 MiB out, through the shared L3.
void small_memcpy(benchmark::State& state) {
  std::vector<std::uint64_t> source(small_count), destination(small_count);
  std::iota(source.begin(), source.end(), std::uint64_t{0});
  for (auto _ : state) {
    benchmark::DoNotOptimize(source.data());
    std::memcpy(destination.data(), source.data(), small_count * sizeof(std::uint64_t));
    benchmark::DoNotOptimize(destination.data());
    benchmark::ClobberMemory();
  }
  sequence_check check;
  for (std::uint64_t x : destination) check(x);
  if (!check.ok()) state.SkipWithError("memcpy: the destination is wrong");
  report(state, small_count, small_bytes);
}

// ---- the seed's batches: ipu::tensor<ipu::f16, 4, 224, 224, 4> -----------------------------

using batch = ipu::tensor<ipu::f16, 4, 224, 224, 4>;  // (N,H,W,C)
constexpr std::size_t batch_depth = 8;
constexpr int batch_count = 64;  // per iteration
constexpr std::size_t batch_values = batch::size();
constexpr auto batch_bytes = static_cast<std::size_t>(batch::bytes);
static_assert(batch_values == 802'816 && batch_bytes == 1'605'632);

/// The seed's graph input, as an infeed sees it.
using seed_graph = decltype(ipu::input<ipu::f16, 4, 224, 224, 4> | ipu::nn::relu);
static_assert(std::same_as<ipu::input_tensor_t<seed_graph>, batch>);
static_assert(std::derived_from<ipu::infeed<seed_graph, batch_depth>, ipu::channel<batch, batch_depth>>);

/// A batch as boost's queue stores it by value: the same 802,816 f16 values, inline.
struct raw_batch {
  std::array<ipu::f16, batch_values> values;
};
static_assert(std::is_trivially_copyable_v<raw_batch> && sizeof(raw_batch) == batch_bytes);

/// Every batch's value `i` is `pattern(i)`, except the first and last values, which the
/// producer stamps with the batch's number before copying it; the consumer checks the stamp
/// and a value in the middle, so that a lost, repeated or torn batch fails the benchmark.
ipu::f16 pattern(std::size_t i) { return ipu::f16(static_cast<float>(i % 1000)); }
ipu::f16 stamp_of(int b) { return ipu::f16(static_cast<float>(b)); }  // exact: b < 2048

void fill(ipu::f16* values) {
  for (std::size_t i = 0; i < batch_values; ++i) values[i] = pattern(i);
}
void stamp(ipu::f16* values, int b) { values[0] = values[batch_values - 1] = stamp_of(b); }
bool stamped(const ipu::f16* values, int b) {
  constexpr std::size_t middle = batch_values / 2 + 1;
  return values[0] == stamp_of(b) && values[batch_values - 1] == stamp_of(b) && values[middle] == pattern(middle);
}

/// The source a producer copies from and the destination a consumer copies into, with the
/// count of batches received intact.
template <class Batch>
struct batch_ends {
  std::unique_ptr<Batch> source = std::make_unique<Batch>(), destination = std::make_unique<Batch>();
  int received = 0, intact = 0;

  batch_ends() { fill(data(*source)); }
  static ipu::f16* data(batch& b) { return b.data(); }
  static ipu::f16* data(raw_batch& b) { return b.values.data(); }
  /// Stamps the source with batch `b`'s number.
  Batch& next_source(int b) {
    stamp(data(*source), b);
    return *source;
  }
  /// Checks the destination after it received a batch.
  void received_one() {
    benchmark::DoNotOptimize(data(*destination));
    intact += stamped(data(*destination), received++);
  }
  /// Whether every batch arrived intact (and resets the counts for the next iteration).
  bool all_intact() { return std::exchange(received, 0) == batch_count && std::exchange(intact, 0) == batch_count; }
};

void copy_in(batch& slot, const batch& source) { std::memcpy(slot.data(), source.data(), batch_bytes); }

/// `Channel` (an ipu::channel of batches or an ipu::infeed), blocking, in place: the producer
/// `emplace`s, memcpy-ing the stamped source batch into the slot, then `close`s; the consumer
/// `consume`s, memcpy-ing the slot out into the destination batch, and checks it.
template <class Channel>
void batch_emplace_consume(benchmark::State& state) {
  Channel c;
  batch_ends<batch> ends;
  transfer(
      state, batch_count, static_cast<std::int64_t>(batch_bytes),
      [&] {
        for (int b = 0; b < batch_count; ++b) c.emplace([&](batch& slot) { copy_in(slot, ends.next_source(b)); });
        c.close();
      },
      [&] {
        while (c.consume([&](const batch& x) { copy_in(*ends.destination, x); })) ends.received_one();
        c.reset();
        return ends.all_intact();
      },
      "ipu emplace/consume: a batch arrived wrong");
}

/// ipu::channel, non-blocking, in place: as `batch_emplace_consume` with `try_emplace` and
/// `try_consume` retried with `cpu_relax`; the consumer stops after `batch_count` batches.
void batch_channel_try(benchmark::State& state) {
  ipu::channel<batch, batch_depth> c;
  batch_ends<batch> ends;
  transfer(
      state, batch_count, static_cast<std::int64_t>(batch_bytes),
      [&] {
        for (int b = 0; b < batch_count; ++b)
          spin_until([&] { return c.try_emplace([&](batch& slot) { copy_in(slot, ends.next_source(b)); }); });
      },
      [&] {
        for (int b = 0; b < batch_count; ++b, ends.received_one())
          spin_until([&] { return c.try_consume([&](const batch& x) { copy_in(*ends.destination, x); }); });
        return ends.all_intact();
      },
      "ipu::channel try_emplace/try_consume: a batch arrived wrong");
}

/// ipu::channel, blocking, by copy: the producer `push`es the source batch (the slot is
/// copy-assigned from it), the consumer `pop`s into the destination (copy-assigned from the
/// slot): the same two copies as above, through `ipu::tensor`'s assignment.
void batch_channel_push_pop(benchmark::State& state) {
  ipu::channel<batch, batch_depth> c;
  batch_ends<batch> ends;
  transfer(
      state, batch_count, static_cast<std::int64_t>(batch_bytes),
      [&] {
        for (int b = 0; b < batch_count; ++b) c.push(ends.next_source(b));
        c.close();
      },
      [&] {
        while (c.pop(*ends.destination)) ends.received_one();
        c.reset();
        return ends.all_intact();
      },
      "ipu::channel push/pop: a batch arrived wrong");
}

/// boost::lockfree::spsc_queue of `raw_batch` by value, 8 slots (12.8 MB, so on the heap): the
/// producer `push`es the stamped source (a copy-construction into the slot, i.e. a memcpy),
/// the consumer `pop`s into the destination (a copy-assignment from the slot), both retried
/// with `cpu_relax`.
void batch_boost(benchmark::State& state) {
  using queue = boost::lockfree::spsc_queue<raw_batch, boost::lockfree::capacity<batch_depth>>;
  const auto q = std::make_unique<queue>();
  batch_ends<raw_batch> ends;
  transfer(
      state, batch_count, static_cast<std::int64_t>(batch_bytes),
      [&] {
        for (int b = 0; b < batch_count; ++b) spin_until([&] { return q->push(ends.next_source(b)); });
      },
      [&] {
        for (int b = 0; b < batch_count; ++b, ends.received_one()) spin_until([&] { return q->pop(*ends.destination); });
        return ends.all_intact();
      },
      "boost spsc_queue push/pop: a batch arrived wrong");
}

/// One thread, the same two copies per batch: the stamped source is memcpy-ed into one of
/// `batch_depth` middle batches, taken in turn as the queues' slots are (the same memory
/// footprint), and from there into the destination, which is checked.
void batch_memcpy_twice(benchmark::State& state) {
  std::vector<batch> middle(batch_depth);
  batch_ends<batch> ends;
  for (auto _ : state) {
    for (int b = 0; b < batch_count; ++b) {
      batch& slot = middle[static_cast<std::size_t>(b) % batch_depth];
      copy_in(slot, ends.next_source(b));
      benchmark::DoNotOptimize(slot.data());
      copy_in(*ends.destination, slot);
      ends.received_one();
    }
    if (!ends.all_intact()) {
      state.SkipWithError("memcpy twice: a batch is wrong");
      break;
    }
  }
  report(state, batch_count, static_cast<std::int64_t>(batch_bytes));
}

}  // namespace

BENCHMARK(small_channel_blocking)->Name("small/ipu_channel/push_consume")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(small_channel_try)
    ->Name("small/ipu_channel/try_push_try_consume")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(small_boost)->Name("small/boost_spsc/push_pop")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(small_memcpy)->Name("small/memcpy")->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK(batch_emplace_consume<ipu::channel<batch, batch_depth>>)
    ->Name("batch/ipu_channel/emplace_consume")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(batch_emplace_consume<ipu::infeed<seed_graph, batch_depth>>)
    ->Name("batch/ipu_infeed/emplace_consume")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(batch_channel_try)
    ->Name("batch/ipu_channel/try_emplace_try_consume")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(batch_channel_push_pop)->Name("batch/ipu_channel/push_pop")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(batch_boost)->Name("batch/boost_spsc/push_pop")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(batch_memcpy_twice)->Name("batch/memcpy_twice")->Unit(benchmark::kMillisecond)->UseRealTime();
