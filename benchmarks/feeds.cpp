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

/// Sets the benchmark's rates: `elements` per iteration, of `element_bytes` each.
void report(benchmark::State& state, std::int64_t elements, std::int64_t element_bytes) {
  const std::int64_t total = state.iterations() * elements;
  state.counters["elements/s"] = benchmark::Counter(static_cast<double>(total), benchmark::Counter::kIsRate);
  state.SetBytesProcessed(total * element_bytes);
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
/// consumer `consume`s in place until the end of the stream. Either side spins, yields, then
/// parks when it must wait, as the channel does.
void small_channel_blocking(benchmark::State& state) {
  ipu::channel<std::uint64_t, small_capacity> c;
  for (auto _ : state) {
    std::jthread producer([&] {
      for (std::uint64_t i = 0; i < small_count; ++i) c.push(i);
      c.close();
    });
    sequence_check check;
    while (c.consume([&](const std::uint64_t& x) { check(x); })) {
    }
    producer.join();
    c.reset();  // reopens the closed channel for the next iteration
    if (!check.ok()) {
      state.SkipWithError("ipu::channel push/consume: the sequence arrived wrong");
      break;
    }
  }
  report(state, small_count, small_bytes);
}

/// ipu::channel, non-blocking: the producer `try_push`es and the consumer `try_consume`s in
/// place, both retrying with `cpu_relax` while full or empty; the consumer stops after
/// `small_count` elements (no `close`, so no reset is needed between iterations).
void small_channel_try(benchmark::State& state) {
  ipu::channel<std::uint64_t, small_capacity> c;
  for (auto _ : state) {
    std::jthread producer([&] {
      for (std::uint64_t i = 0; i < small_count; ++i)
        while (!c.try_push(i)) cpu_relax();
    });
    sequence_check check;
    while (check.next < small_count)
      if (!c.try_consume([&](const std::uint64_t& x) { check(x); })) cpu_relax();
    producer.join();
    if (!check.ok()) {
      state.SkipWithError("ipu::channel try_push/try_consume: the sequence arrived wrong");
      break;
    }
  }
  report(state, small_count, small_bytes);
}

/// boost::lockfree::spsc_queue with a compile-time capacity (Boost 1.74's `capacity<N>` holds
/// N elements: it allocates N + 1 slots): the producer `push`es, the consumer `pop`s into a
/// local, both retrying with `cpu_relax`, as `small_channel_try`.
void small_boost(benchmark::State& state) {
  using queue = boost::lockfree::spsc_queue<std::uint64_t, boost::lockfree::capacity<small_capacity>>;
  const auto q = std::make_unique<queue>();  // on the heap, as the channel's slots
  for (auto _ : state) {
    std::jthread producer([&] {
      for (std::uint64_t i = 0; i < small_count; ++i)
        while (!q->push(i)) cpu_relax();
    });
    sequence_check check;
    std::uint64_t x = 0;
    while (check.next < small_count) {
      if (q->pop(x)) {
        check(x);
      } else {
        cpu_relax();
      }
    }
    producer.join();
    if (!check.ok()) {
      state.SkipWithError("boost spsc_queue push/pop: the sequence arrived wrong");
      break;
    }
  }
  report(state, small_count, small_bytes);
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

/// `Channel` (an ipu::channel of batches or an ipu::infeed), blocking, in place: the producer
/// `emplace`s, memcpy-ing the stamped source batch into the slot, then `close`s; the consumer
/// `consume`s, memcpy-ing the slot out into the destination batch, and checks it.
template <class Channel>
void batch_emplace_consume(benchmark::State& state) {
  Channel c;
  batch source, destination;
  fill(source.data());
  for (auto _ : state) {
    std::jthread producer([&] {
      for (int b = 0; b < batch_count; ++b) {
        stamp(source.data(), b);
        c.emplace([&](batch& slot) { std::memcpy(slot.data(), source.data(), batch_bytes); });
      }
      c.close();
    });
    int received = 0, errors = 0;
    while (c.consume([&](const batch& x) { std::memcpy(destination.data(), x.data(), batch_bytes); })) {
      benchmark::DoNotOptimize(destination.data());
      errors += !stamped(destination.data(), received++);
    }
    producer.join();
    c.reset();
    if (errors != 0 || received != batch_count) {
      state.SkipWithError("ipu emplace/consume: a batch arrived wrong");
      break;
    }
  }
  report(state, batch_count, static_cast<std::int64_t>(batch_bytes));
}

/// ipu::channel, non-blocking, in place: as `batch_emplace_consume` with `try_emplace` and
/// `try_consume` retried with `cpu_relax`; the consumer stops after `batch_count` batches.
void batch_channel_try(benchmark::State& state) {
  ipu::channel<batch, batch_depth> c;
  batch source, destination;
  fill(source.data());
  for (auto _ : state) {
    std::jthread producer([&] {
      for (int b = 0; b < batch_count; ++b) {
        stamp(source.data(), b);
        while (!c.try_emplace([&](batch& slot) { std::memcpy(slot.data(), source.data(), batch_bytes); }))
          cpu_relax();
      }
    });
    int received = 0, errors = 0;
    while (received < batch_count) {
      if (c.try_consume([&](const batch& x) { std::memcpy(destination.data(), x.data(), batch_bytes); })) {
        benchmark::DoNotOptimize(destination.data());
        errors += !stamped(destination.data(), received++);
      } else {
        cpu_relax();
      }
    }
    producer.join();
    if (errors != 0) {
      state.SkipWithError("ipu::channel try_emplace/try_consume: a batch arrived wrong");
      break;
    }
  }
  report(state, batch_count, static_cast<std::int64_t>(batch_bytes));
}

/// ipu::channel, blocking, by copy: the producer `push`es the source batch (the slot is
/// copy-assigned from it), the consumer `pop`s into the destination (copy-assigned from the
/// slot): the same two copies as above, through `ipu::tensor`'s assignment.
void batch_channel_push_pop(benchmark::State& state) {
  ipu::channel<batch, batch_depth> c;
  batch source, destination;
  fill(source.data());
  for (auto _ : state) {
    std::jthread producer([&] {
      for (int b = 0; b < batch_count; ++b) {
        stamp(source.data(), b);
        c.push(source);
      }
      c.close();
    });
    int received = 0, errors = 0;
    while (c.pop(destination)) {
      benchmark::DoNotOptimize(destination.data());
      errors += !stamped(destination.data(), received++);
    }
    producer.join();
    c.reset();
    if (errors != 0 || received != batch_count) {
      state.SkipWithError("ipu::channel push/pop: a batch arrived wrong");
      break;
    }
  }
  report(state, batch_count, static_cast<std::int64_t>(batch_bytes));
}

/// boost::lockfree::spsc_queue of `raw_batch` by value, 8 slots (12.8 MB, so on the heap): the
/// producer `push`es the stamped source (a copy-construction into the slot, i.e. a memcpy),
/// the consumer `pop`s into the destination (a copy-assignment from the slot), both retried
/// with `cpu_relax`.
void batch_boost(benchmark::State& state) {
  using queue = boost::lockfree::spsc_queue<raw_batch, boost::lockfree::capacity<batch_depth>>;
  const auto q = std::make_unique<queue>();
  const auto source = std::make_unique<raw_batch>();
  const auto destination = std::make_unique<raw_batch>();
  fill(source->values.data());
  for (auto _ : state) {
    std::jthread producer([&] {
      for (int b = 0; b < batch_count; ++b) {
        stamp(source->values.data(), b);
        while (!q->push(*source)) cpu_relax();
      }
    });
    int received = 0, errors = 0;
    while (received < batch_count) {
      if (q->pop(*destination)) {
        benchmark::DoNotOptimize(destination->values.data());
        errors += !stamped(destination->values.data(), received++);
      } else {
        cpu_relax();
      }
    }
    producer.join();
    if (errors != 0) {
      state.SkipWithError("boost spsc_queue push/pop: a batch arrived wrong");
      break;
    }
  }
  report(state, batch_count, static_cast<std::int64_t>(batch_bytes));
}

/// One thread, the same two copies per batch: the stamped source is memcpy-ed into one of
/// `batch_depth` middle batches, taken in turn as the queues' slots are (the same memory
/// footprint), and from there into the destination, which is checked.
void batch_memcpy_twice(benchmark::State& state) {
  batch source, destination;
  std::vector<batch> middle(batch_depth);
  fill(source.data());
  for (auto _ : state) {
    int errors = 0;
    for (int b = 0; b < batch_count; ++b) {
      stamp(source.data(), b);
      batch& slot = middle[static_cast<std::size_t>(b) % batch_depth];
      std::memcpy(slot.data(), source.data(), batch_bytes);
      benchmark::DoNotOptimize(slot.data());
      std::memcpy(destination.data(), slot.data(), batch_bytes);
      benchmark::DoNotOptimize(destination.data());
      errors += !stamped(destination.data(), b);
    }
    if (errors != 0) {
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
