// engine::run(infeed, outfeed, iterations): counts, order, the end of a stream, consecutive
// runs, outfeed modes, errors from the producer and from the engine, destruction in use.
#include <ipu/ipu.hpp>

#include <catch2/catch.hpp>

#include "support/executor_support.hpp"
#include "support/pool_stream.hpp"

#include <atomic>
#include <chrono>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {
namespace nn = ipu::nn;
using pool_t = ipu_test::pool::graph_t;
using pool_in = ipu_test::pool::in_t;
using pool_out = ipu_test::pool::out_t;
using pool_engine = ipu_test::pool::engine_t;
using ipu_test::pool::batch;
using ipu_test::pool::in_order;
using ipu_test::pool::is_result_of;
using ipu_test::pool::stream_failure;
}  // namespace

TEST_CASE("run: a closed stream runs to its last batch, in order, and says so") {
  pool_engine engine{ipu::weights<pool_t>{}};
  ipu::infeed<pool_t, 8> in;
  ipu::outfeed<pool_t, ipu::outfeed_mode::all> out;
  constexpr std::int64_t batches = 3000;
  std::jthread producer([&] {
    for (std::int64_t i = 0; i < batches; ++i) in.push(batch(i));
    in.close();
  });
  const ipu::run_stats stats = engine.run(in, out, 10'000);
  CHECK(stats.requested == 10'000);
  CHECK(stats.iterations == batches);
  CHECK(stats.end_of_stream);
  CHECK_FALSE(stats.cancelled);
  CHECK(out.closed());
  const std::vector<pool_out> ys = out.drain();
  CHECK(ys.size() == batches);
  CHECK(in_order(ys));
  CHECK(engine.profile().batches_measured() == batches);
}

TEST_CASE("run: iterations bound each run, and the next run continues the stream") {
  pool_engine engine{ipu::weights<pool_t>{}};
  ipu::infeed<pool_t, 16> in;
  ipu::outfeed<pool_t> out;  // outfeed_mode::all
  for (std::int64_t i = 0; i < 10; ++i) in.push(batch(i));
  in.close();
  CHECK(engine.run(in, out, 0).iterations == 0);
  ipu::run_stats first = engine.run(in, out, 4);
  CHECK(first.iterations == 4);
  CHECK_FALSE(first.end_of_stream);
  CHECK_FALSE(out.closed());
  CHECK(engine.run(in, out, 4).iterations == 4);
  const ipu::run_stats last = engine.run(in, out, 4);
  CHECK(last.iterations == 2);
  CHECK(last.end_of_stream);
  const std::vector<pool_out> ys = out.drain();
  CHECK(ys.size() == 10);  // nothing lost, nothing duplicated
  CHECK(in_order(ys));
  CHECK_THROWS_AS(engine.run(in, out, -1), std::invalid_argument);
}

TEST_CASE("run: the statistics add up and match the cycle model") {
  pool_engine engine{ipu::weights<pool_t>{}};
  ipu::infeed<pool_t, 4> in;
  ipu::outfeed<pool_t, ipu::outfeed_mode::last> out;
  std::jthread producer([&] {
    for (std::int64_t i = 0; i < 50; ++i) in.push(batch(i));
  });
  const ipu::run_stats stats = engine.run(in, out, 50);
  CHECK(stats.iterations == 50);
  CHECK(stats.batch_size == 2);
  CHECK(stats.seconds > 0);
  CHECK(stats.compute_seconds + stats.infeed_wait_seconds <= stats.seconds);
  CHECK(stats.simulated_seconds == Approx(50 * engine.profile().simulated_seconds_per_batch()));
  CHECK(stats.images_per_second() == Approx(100 / stats.seconds));
  std::ostringstream text;
  text << stats;
  CHECK(text.str().find("50 of 50 iterations (2 images each)") != std::string::npos);
}

TEST_CASE("run: an outfeed that keeps the last result holds the final batch's") {
  pool_engine engine{ipu::weights<pool_t>{}};
  ipu::infeed<pool_t, 4> in;
  ipu::outfeed<pool_t, ipu::outfeed_mode::last> out;
  std::jthread producer([&] {
    for (std::int64_t i = 0; i < 50; ++i) in.push(batch(i));
    in.close();
  });
  CHECK(engine.run(in, out, 100).iterations == 50);
  CHECK(out.pushed() == 50);
  const std::vector<pool_out> ys = out.drain();
  REQUIRE(ys.size() == 1);
  CHECK(is_result_of(ys[0], 49));
  CHECK(out.drain().empty());  // taken
}

TEST_CASE("run: a consumer thread reads results while the run writes them") {
  pool_engine engine{ipu::weights<pool_t>{}};
  ipu::infeed<pool_t, 2> in;
  ipu::outfeed<pool_t> out;
  std::vector<pool_out> seen;
  std::jthread consumer([&] {
    for (pool_out y; out.pop(y);) seen.push_back(y);  // ends when the run closes the outfeed
  });
  std::jthread producer([&] {
    for (std::int64_t i = 0; i < 500; ++i) in.push(batch(i));
    in.close();
  });
  CHECK(engine.run(in, out, 1000).iterations == 500);
  consumer.join();
  CHECK(seen.size() == 500);
  CHECK(in_order(seen));
}

TEST_CASE("run: a producer's exception reaches the caller after the batches before it") {
  pool_engine engine{ipu::weights<pool_t>{}};
  ipu::infeed<pool_t, 4> in;
  ipu::outfeed<pool_t> out;
  std::jthread producer([&] { ipu_test::pool::push_until_failure(in, 7); });
  CHECK_THROWS_MATCHES(engine.run(in, out, 100), stream_failure, Catch::Message("the dataset's file 7 is corrupt"));
  const std::vector<pool_out> ys = out.drain();
  CHECK(ys.size() == 7);
  CHECK(in_order(ys));
  pool_out y;
  CHECK_THROWS_AS(out.pop(y), stream_failure);  // the outfeed was aborted with it
}

TEST_CASE("run: a batch the engine rejects stops the run and releases the producer") {
  pool_engine engine{ipu::weights<pool_t>{}};
  ipu::infeed<pool_t, 1> in;
  ipu::outfeed<pool_t> out;
  int refused_at = -1;
  std::jthread producer([&] {
    for (int i = 0; i < 100; ++i) {
      pool_in x = batch(i);
      if (i == 3) pool_in discard = std::move(x);  // x has no storage now
      if (!in.push(std::move(x))) {
        refused_at = i;
        return;
      }
    }
  });
  CHECK_THROWS_WITH(engine.run(in, out, 100), Catch::Contains("no storage"));
  producer.join();
  CHECK(in.cancelled());
  CHECK(refused_at == 4);  // the producer was waiting to push batch 4, and was let go
  CHECK(in_order(out.drain()));
  CHECK(out.pushed() == 3);
}

TEST_CASE("run: destroying the infeed during a run is diagnosed in the run") {
  pool_engine engine{ipu::weights<pool_t>{}};
  auto in = std::make_unique<ipu::infeed<pool_t, 2>>();
  ipu::outfeed<pool_t> out;
  std::string what;
  std::jthread runner([&, raw = in.get()] {
    try {
      engine.run(*raw, out, 10);  // nothing is pushed: the run waits
    } catch (const ipu::channel_error& e) {
      what = e.what();
    }
  });
  for (int i = 0; i < 5000 && !in->in_use(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  REQUIRE(in->in_use());  // the run holds the infeed
  in.reset();             // wakes the run, waits until it has let go
  runner.join();
  CHECK(what.find("destroyed while in use") != std::string::npos);
  pool_out y;
  CHECK_THROWS_AS(out.pop(y), ipu::channel_error);
}

TEST_CASE("run: destroying the outfeed while the run waits for a batch ends the run at once") {
  pool_engine engine{ipu::weights<pool_t>{}};
  ipu::infeed<pool_t, 2> in;
  auto out = std::make_unique<ipu::outfeed<pool_t>>();
  std::string what;
  std::jthread runner([&, raw = out.get()] {
    try {
      engine.run(in, *raw, 10);  // nothing is pushed: the run waits on the infeed
    } catch (const ipu::channel_error& e) {
      what = e.what();
    }
  });
  for (int i = 0; i < 5000 && !out->in_use(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  REQUIRE(out->in_use());  // the run holds the outfeed
  // This thread is the infeed's producer, and pushes nothing until the outfeed is gone: the
  // destructor must wake the run by itself.
  std::atomic<bool> destroyed = false;
  std::jthread destroyer([&] {
    out.reset();
    destroyed = true;
  });
  for (int i = 0; i < 10'000 && !destroyed; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const bool ended = destroyed;
  if (!ended) in.push(batch(0));  // lets the run end, so that the test fails instead of hanging
  destroyer.join();
  runner.join();
  CHECK(ended);
  CHECK(what.find("destroyed while in use") != std::string::npos);
  CHECK(in.cancelled());  // a producer waiting to push is let go
}

TEST_CASE("run: results equal infer's, batch by batch, for a conv net in both modes") {
  using net_t = decltype(ipu::input<ipu::f32, 2, 8, 8, 4> | nn::conv<8, 3> | nn::batch_norm | nn::relu |
                         nn::residual(nn::conv<8, 3, 1, 4> | nn::batch_norm) | nn::relu | nn::global_avg_pool |
                         nn::dense<5>);
  const auto w = ipu::weights<net_t>::random(3);
  for (const ipu::execution_mode mode : {ipu::execution_mode::fast, ipu::execution_mode::faithful}) {
    const int batches = mode == ipu::execution_mode::fast ? 200 : 10;
    ipu::engine<net_t, ipu_test::small_target<16>> engine{w, {.mode = mode, .threads = 2}};
    ipu::engine<net_t, ipu_test::small_target<16>> reference{w, {.mode = ipu::execution_mode::fast, .threads = 1}};
    ipu::infeed<net_t, 3> in;
    ipu::outfeed<net_t> out;
    std::jthread producer([&] {
      for (int i = 0; i < batches; ++i) in.push(ipu_test::random_input<net_t>(static_cast<std::uint64_t>(i)));
      in.close();
    });
    CHECK(engine.run(in, out, batches).iterations == batches);
    const auto ys = out.drain();
    REQUIRE(ys.size() == static_cast<std::size_t>(batches));
    int differ = 0;
    for (int i = 0; i < batches; ++i)
      differ += ys[static_cast<std::size_t>(i)] != reference.infer(ipu_test::random_input<net_t>(static_cast<std::uint64_t>(i)));
    CHECK(differ == 0);
  }
}

TEST_CASE("run: a new stream after the end of one needs both channels reset") {
  pool_engine engine{ipu::weights<pool_t>{}};
  ipu::infeed<pool_t, 4> in;
  ipu::outfeed<pool_t> out;
  in.push(batch(0));
  in.close();
  CHECK(engine.run(in, out, 5).end_of_stream);
  CHECK(out.closed());

  in.reset();  // a new stream, but the outfeed is still closed
  in.push(batch(1));
  CHECK_THROWS_WITH(engine.run(in, out, 1), Catch::Contains("reset() both channels"));
  CHECK(in.cancelled());  // the failed run let go of the stream

  in.reset();
  out.reset();
  CHECK(out.empty());
  in.push(batch(2));
  CHECK(engine.run(in, out, 1).iterations == 1);
  const std::vector<pool_out> ys = out.drain();
  REQUIRE(ys.size() == 1);
  CHECK(is_result_of(ys[0], 2));
}
