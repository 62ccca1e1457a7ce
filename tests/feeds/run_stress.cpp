// engine.run with its feeds under interference, for a bounded time (and under ThreadSanitizer
// and AddressSanitizer in `scripts/run-tests`): producers that throw, stop or destroy the
// infeed, a thread that cancels the infeed, consumers that stop reading early or destroy the
// outfeed, consecutive runs of random lengths. Each round checks that the results are the
// batches pushed, each once and in order, that every batch a run took has its result, and that
// each run ended as its scenario says; a round that deadlocks hangs the test (ctest's timeout).
#include <ipu/ipu.hpp>

#include <catch2/catch.hpp>

#include "support/executor_support.hpp"
#include "support/pool_stream.hpp"

#include <range/v3/view/iota.hpp>
#include <range/v3/view/transform.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {
using pool_t = ipu_test::pool::graph_t;
using pool_out = ipu_test::pool::out_t;
using infeed_t = ipu::infeed<pool_t, 3>;
using outfeed_t = ipu::outfeed<pool_t>;
using ipu_test::pool::batch;
using ipu_test::pool::batch_of;
using ipu_test::pool::stream_failure;

// How the producer ends, and how the consumer reads.
enum class producer_kind { closes, throws, feed_throws, stopped, destroys_infeed };
enum class consumer_kind { reads_all, stops_early, destroys_outfeed };
constexpr std::array producer_kinds{producer_kind::closes, producer_kind::throws, producer_kind::feed_throws,
                                    producer_kind::stopped, producer_kind::destroys_infeed};
constexpr std::array consumer_kinds{consumer_kind::reads_all, consumer_kind::stops_early,
                                    consumer_kind::destroys_outfeed};

// How a run ended.
enum class run_end { returned, stream_failure, channel_error, other };

struct scenario {
  producer_kind producer{};
  consumer_kind consumer{};
  bool canceller = false;          // another thread cancels the infeed after `cancel_after_us`
  std::int64_t batches = 0;        // the producer's stream (before a throw, stop or destruction)
  std::int64_t fail_at = 0;        // throws / feed_throws: the batch that fails; destroys_infeed: pushes this many first
  std::int64_t stop_after_us = 0;  // stopped: when the stop is requested
  std::int64_t cancel_after_us = 0;
  std::int64_t consumer_reads = 0;     // stops_early, destroys_outfeed: results read first
  std::vector<std::int64_t> iterations;  // one run each
};

scenario make_scenario(std::mt19937& rng, int round) {
  const auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  scenario s;
  s.producer = producer_kinds[static_cast<std::size_t>(round) % producer_kinds.size()];
  s.consumer = consumer_kinds[static_cast<std::size_t>(round / 5) % consumer_kinds.size()];
  s.canceller = round % 4 == 3;
  s.batches = pick(0, 40);
  s.fail_at = pick(0, s.batches);
  s.stop_after_us = pick(0, 2000);
  s.cancel_after_us = pick(0, 2000);
  s.consumer_reads = pick(0, s.batches);
  // A destroyed channel must not be used again: one run then; otherwise one to three.
  const bool destroys = s.producer == producer_kind::destroys_infeed || s.consumer == consumer_kind::destroys_outfeed;
  const std::int64_t runs = destroys ? 1 : pick(1, 3);
  for (std::int64_t r = 0; r < runs; ++r) s.iterations.push_back(pick(0, 30));
  return s;
}

std::string describe(const scenario& s, unsigned seed) {
  std::string d = "seed " + std::to_string(seed) + ": producer " + std::to_string(static_cast<int>(s.producer)) +
                  ", consumer " + std::to_string(static_cast<int>(s.consumer)) + (s.canceller ? ", cancelled" : "") +
                  ", batches " + std::to_string(s.batches) + ", fail_at " + std::to_string(s.fail_at) +
                  ", consumer_reads " + std::to_string(s.consumer_reads) + ", runs";
  for (std::int64_t n : s.iterations) d += " " + std::to_string(n);
  return d;
}

// What one round observed.
struct outcome {
  std::vector<std::int64_t> results;  // the batches of the results read, consumer's then the rest
  std::int64_t pushed = 0;            // batches the producer pushed
  std::int64_t taken = -1;            // batches the runs took from the infeed (-1: infeed destroyed)
  std::int64_t written = -1;          // results written into the outfeed (-1: outfeed destroyed)
  std::vector<ipu::run_stats> stats;  // of the runs that returned
  run_end end = run_end::returned;    // of the last run
  std::string what;                   // its exception's message
  bool consumer_saw_failure = false;  // the consumer's pop rethrew stream_failure
  bool consumer_saw_channel_error = false;
  bool in_destroyed = false, out_destroyed = false;
};

template <class Engine>
outcome play(Engine& engine, const scenario& s, std::mt19937& rng) {
  outcome o;
  auto in = std::make_unique<infeed_t>();
  auto out = std::make_unique<outfeed_t>();
  std::mutex owners;  // guards destroying a channel against the other threads' last uses
  infeed_t& in_ref = *in;  // for the runs: taken before another thread may reset `in`
  outfeed_t& out_ref = *out;
  std::atomic<std::int64_t> pushed = 0;
  std::atomic<bool> runs_done = false;
  std::vector<std::int64_t> read;  // the consumer's, read after it is joined
  const std::uint32_t jitter_seed = rng();
  // Waits until `ready()` or the runs are over: a channel is destroyed only while a run holds
  // it or after the last run, never before a run that would then use it.
  const auto wait_for = [&](auto ready) {
    while (!ready() && !runs_done) std::this_thread::sleep_for(std::chrono::microseconds(50));
  };

  std::jthread consumer([&] {
    std::mt19937 jitter(jitter_seed);
    const std::int64_t limit = s.consumer == consumer_kind::reads_all ? -1 : s.consumer_reads;
    pool_out y;
    try {
      while (limit < 0 || static_cast<std::int64_t>(read.size()) < limit) {
        if (!out->pop(y)) break;
        read.push_back(batch_of(y));
        if (jitter() % 8 == 0) std::this_thread::yield();
      }
    } catch (const stream_failure&) {
      o.consumer_saw_failure = true;
    } catch (const ipu::channel_error&) {
      o.consumer_saw_channel_error = true;
    }
    if (s.consumer == consumer_kind::destroys_outfeed) {
      wait_for([&] { return out->in_use(); });
      const std::lock_guard lock(owners);
      out.reset();  // wakes a run that holds it, and waits for it to let go
      o.out_destroyed = true;
    }
  });

  std::jthread producer([&](std::stop_token stop) {
    const std::int64_t end = s.producer == producer_kind::destroys_infeed ? s.fail_at : s.batches;
    switch (s.producer) {
      case producer_kind::feed_throws:
      case producer_kind::stopped: {
        const std::int64_t fail = s.producer == producer_kind::feed_throws ? s.fail_at : -1;
        const auto make = [&, fail](std::int64_t i) {
          if (i == fail) throw stream_failure("batch " + std::to_string(i) + " is corrupt");
          return batch(i);
        };
        const std::int64_t stream = fail >= 0 ? fail + 1 : s.batches;  // feed_throws: the last one throws
        const ipu::feed_result r = ipu::feed(*in, ranges::views::iota(std::int64_t{0}, stream) | ranges::views::transform(make), stop);
        pushed = static_cast<std::int64_t>(r.pushed);
        break;
      }
      default:
        try {
          for (std::int64_t i = 0; i <= end; ++i) {
            if (s.producer == producer_kind::throws && i == s.fail_at) throw stream_failure("batch " + std::to_string(i) + " is corrupt");
            if (i == end) break;
            if (!in->push(batch(i))) return;  // cancelled
            ++pushed;
          }
          if (s.producer == producer_kind::closes) in->close();
        } catch (const stream_failure&) {
          in->abort(std::current_exception());
        }
        if (s.producer == producer_kind::destroys_infeed) {
          // While the run waits for the batch that never comes (or after it).
          wait_for([&] { return in->in_use() && in->empty(); });
          const std::lock_guard lock(owners);
          in.reset();  // wakes a run waiting for its next batch, and waits for it to let go
          o.in_destroyed = true;
        }
    }
  });

  std::jthread canceller;
  if (s.canceller)
    canceller = std::jthread([&] {
      std::this_thread::sleep_for(std::chrono::microseconds(s.cancel_after_us));
      const std::lock_guard lock(owners);
      if (!o.in_destroyed) in->cancel();
    });
  if (s.producer == producer_kind::stopped) {
    std::this_thread::sleep_for(std::chrono::microseconds(s.stop_after_us));
    producer.request_stop();
  }

  // The runs, on this thread, each continuing the stream, until one ends it.
  for (std::int64_t n : s.iterations) {
    try {
      const ipu::run_stats st = engine.run(in_ref, out_ref, n);
      o.stats.push_back(st);
      o.end = run_end::returned;
      if (st.end_of_stream || st.cancelled) break;
    } catch (const stream_failure& e) {
      o.end = run_end::stream_failure, o.what = e.what();
      break;
    } catch (const ipu::channel_error& e) {
      o.end = run_end::channel_error, o.what = e.what();
      break;
    } catch (const std::exception& e) {
      o.end = run_end::other, o.what = e.what();
      break;
    }
  }
  runs_done = true;
  {  // Counts, then let the producer and the consumer go: nothing more will be read or written.
    const std::lock_guard lock(owners);
    if (!o.in_destroyed) {
      o.taken = static_cast<std::int64_t>(in->popped());
      in->cancel();
    }
    if (!o.out_destroyed) {
      o.written = static_cast<std::int64_t>(out->pushed());
      if (!out->closed()) out->close();
    }
  }
  producer.join();
  consumer.join();
  canceller = {};
  o.pushed = pushed;
  o.results = read;
  if (!o.out_destroyed)
    for (const pool_out& y : out->drain()) o.results.push_back(batch_of(y));
  return o;
}

template <ipu::execution_mode Mode>
void stress(std::chrono::milliseconds budget) {
  ipu::engine<pool_t, ipu_test::small_target<16>> engine{ipu::weights<pool_t>{}, {.mode = Mode, .threads = 2}};
  const auto deadline = std::chrono::steady_clock::now() + budget;
  constexpr int min_rounds = 60, max_rounds = 3000;  // at least each scenario twice
  int round = 0;
  for (; round < max_rounds && (round < min_rounds || std::chrono::steady_clock::now() < deadline); ++round) {
    const unsigned seed = 1000u + static_cast<unsigned>(round);
    std::mt19937 rng(seed);
    const scenario s = make_scenario(rng, round);
    INFO(describe(s, seed));
    const outcome o = play(engine, s, rng);
    std::int64_t requested = 0;
    for (std::int64_t n : s.iterations) requested += n;

    // Nothing lost, duplicated or reordered: the results are batches 0, 1, 2, ... in order.
    for (std::size_t k = 0; k < o.results.size(); ++k) REQUIRE(o.results[k] == static_cast<std::int64_t>(k));
    const auto results = static_cast<std::int64_t>(o.results.size());
    REQUIRE(results <= o.pushed);
    REQUIRE(results <= requested);
    // Every batch a run took has its result, and every result was read.
    if (o.taken >= 0 && o.written >= 0) REQUIRE(o.taken == o.written);
    if (o.written >= 0 && !o.out_destroyed) REQUIRE(results == o.written);  // else it dropped the rest
    std::int64_t ran = 0;
    for (const ipu::run_stats& st : o.stats) ran += st.iterations;
    if (o.end == run_end::returned && o.written >= 0) REQUIRE(ran == o.written);
    REQUIRE(o.end != run_end::other);

    // Each scenario's own ending, where nothing else interfered.
    const bool quiet = !s.canceller && s.consumer != consumer_kind::destroys_outfeed;
    if (!quiet) continue;
    switch (s.producer) {
      case producer_kind::closes:
        REQUIRE(o.end == run_end::returned);
        REQUIRE(results == std::min(s.batches, requested));
        REQUIRE(o.stats.back().end_of_stream == (requested > s.batches));
        break;
      case producer_kind::throws:
      case producer_kind::feed_throws:
        REQUIRE(results == std::min(s.fail_at, requested));
        REQUIRE((o.end == run_end::stream_failure) == (requested > s.fail_at));
        if (o.end == run_end::stream_failure && s.consumer == consumer_kind::reads_all) REQUIRE(o.consumer_saw_failure);
        break;
      case producer_kind::stopped:  // the stream ends early with a channel_error, or completes
        REQUIRE((o.end == run_end::channel_error || o.end == run_end::returned));
        if (o.end == run_end::channel_error) REQUIRE(o.what.find("stop") != std::string::npos);
        break;
      case producer_kind::destroys_infeed:  // the run waits for batch fail_at when it is destroyed
        REQUIRE(results == std::min(s.fail_at, requested));
        if (requested > s.fail_at) {
          REQUIRE(o.end == run_end::channel_error);
          REQUIRE(o.what.find("destroyed while in use") != std::string::npos);
        }
        break;
    }
  }
  INFO(round << " rounds");
  CHECK(round >= min_rounds);
}

}  // namespace

TEST_CASE("run stress: producers fail, consumers leave, channels are destroyed, nothing is lost or reordered (fast)") {
  stress<ipu::execution_mode::fast>(std::chrono::milliseconds(2000));
}

TEST_CASE("run stress: producers fail, consumers leave, channels are destroyed, nothing is lost or reordered (faithful)") {
  stress<ipu::execution_mode::faithful>(std::chrono::milliseconds(1000));
}
