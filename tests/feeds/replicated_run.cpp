// replicated_engine: data-parallel inference. Each batch's result names its batch
// (support/pool_stream.hpp), so the order and the share of every replica are checked against
// the stream itself, not against another engine.
#include <ipu/ipu.hpp>

#include <catch2/catch.hpp>

#include "support/executor_support.hpp"
#include "support/pool_stream.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace {
using pool_t = ipu_test::pool::graph_t;
using pool_in = ipu_test::pool::in_t;
using pool_out = ipu_test::pool::out_t;
using ipu_test::pool::batch;
using ipu_test::pool::in_order;
using ipu_test::pool::is_result_of;
using ipu_test::pool::stream_failure;

using three_replicas = ipu::replicated<ipu::system<ipu_test::small_target<16>, 3>, 3>;  // 3 replicas of 1 IPU
using replicated_pool = ipu::replicated_engine<pool_t, three_replicas>;
}  // namespace

TEST_CASE("replicated run: every replica takes the next batch, and the results keep the infeed's order") {
  replicated_pool engine{ipu::weights<pool_t>{}, {.threads = 3}};
  STATIC_REQUIRE(replicated_pool::replicas == 3);
  STATIC_REQUIRE(replicated_pool::batch == 3 * 2);
  STATIC_REQUIRE(std::is_same_v<replicated_pool::replica_type, ipu_test::pool::engine_t>);  // a replica: one engine
  ipu::infeed<pool_t, 4> in;
  ipu::outfeed<pool_t> out;
  std::jthread producer([&] {
    for (std::int64_t i = 0; i < 8; ++i) in.push(batch(i));
    in.close();
  });
  const ipu::run_stats stats = engine.run(in, out, 5);
  CHECK(stats.requested == 15);  // batches: 5 iterations of 3 replicas
  CHECK(stats.iterations == 8);  // two full iterations, then two batches of the third
  CHECK(stats.batch_size == 2);
  CHECK(stats.end_of_stream);
  CHECK(out.closed());
  const std::vector<pool_out> ys = out.drain();
  CHECK(ys.size() == 8);
  CHECK(in_order(ys));
  // batch i on replica i % 3: 3, 3 and 2 batches
  CHECK(engine.replica(0).profile().batches_measured() == 3);
  CHECK(engine.replica(1).profile().batches_measured() == 3);
  CHECK(engine.replica(2).profile().batches_measured() == 2);
  CHECK(engine.replica(0).threads() == 1);
  // the replicas run at once: three iterations take three batches' simulated time
  CHECK(stats.simulated_seconds == Approx(3 * engine.replica(0).profile().simulated_seconds_per_batch()));
  CHECK_THROWS_AS(engine.replica(3), std::out_of_range);
}

TEST_CASE("replicated run: iterations bound each run, and the next run continues the stream") {
  replicated_pool engine{ipu::weights<pool_t>{}};
  ipu::infeed<pool_t, 16> in;
  ipu::outfeed<pool_t> out;
  for (std::int64_t i = 0; i < 10; ++i) in.push(batch(i));
  in.close();
  CHECK(engine.run(in, out, 0).iterations == 0);
  const ipu::run_stats first = engine.run(in, out, 2);
  CHECK(first.iterations == 6);
  CHECK_FALSE(first.end_of_stream);
  CHECK_FALSE(out.closed());
  const ipu::run_stats second = engine.run(in, out, 10);
  CHECK(second.iterations == 4);
  CHECK(second.end_of_stream);
  CHECK(in_order(out.drain()));
  CHECK_THROWS_AS(engine.run(in, out, -1), std::invalid_argument);
}

TEST_CASE("replicated run: a producer's exception reaches the caller after the batches before it") {
  replicated_pool engine{ipu::weights<pool_t>{}};
  ipu::infeed<pool_t, 4> in;
  ipu::outfeed<pool_t> out;
  std::jthread producer([&] { ipu_test::pool::push_until_failure(in, 7); });
  CHECK_THROWS_MATCHES(engine.run(in, out, 100), stream_failure, Catch::Message("the dataset's file 7 is corrupt"));
  const std::vector<pool_out> ys = out.drain();
  CHECK(ys.size() == 7);  // batch 6 ran alone in the third iteration
  CHECK(in_order(ys));
  pool_out y;
  CHECK_THROWS_AS(out.pop(y), stream_failure);
}

TEST_CASE("replicated run: a batch without storage stops the run after the batches before it") {
  replicated_pool engine{ipu::weights<pool_t>{}};
  ipu::infeed<pool_t, 8> in;
  ipu::outfeed<pool_t> out;
  for (int i = 0; i < 6; ++i) {
    pool_in x = batch(i);
    if (i == 4) pool_in discard = std::move(x);  // x has no storage now
    in.push(std::move(x));
  }
  CHECK_THROWS_WITH(engine.run(in, out, 10), Catch::Contains("no storage"));
  CHECK(in.cancelled());
  CHECK(out.pushed() == 4);  // the first iteration's, and batch 3, taken before 4 was refused
  pool_out y;
  for (int i = 0; i < 4; ++i) {
    REQUIRE(out.pop(y));
    CHECK(is_result_of(y, i));
  }
  CHECK_THROWS_WITH(out.pop(y), Catch::Contains("no storage"));
}

TEST_CASE("replicated infer: any number of batches, replicas at a time, as tensors or raw values") {
  replicated_pool engine{ipu::weights<pool_t>{}};
  std::vector<pool_in> xs;
  for (int i = 0; i < 5; ++i) xs.push_back(batch(i));
  const std::vector<pool_out> ys = engine.infer(std::span<const pool_in>(xs));
  REQUIRE(ys.size() == 5);
  CHECK(in_order(ys));

  std::vector<float> raw_in, raw_out(4 * pool_out::size());
  for (int i = 0; i < 4; ++i) raw_in.insert(raw_in.end(), xs[static_cast<std::size_t>(i)].begin(), xs[static_cast<std::size_t>(i)].end());
  engine.infer(std::span<const float>(raw_in), std::span<float>(raw_out));
  for (int i = 0; i < 4; ++i) {
    pool_out y;
    std::copy_n(raw_out.begin() + i * static_cast<int>(pool_out::size()), pool_out::size(), y.begin());
    CHECK(is_result_of(y, i));
  }
  CHECK(engine.replica(0).profile().batches_measured() == 2 + 2);  // batches 0 and 3 of each call

  std::vector<float> short_out(3 * pool_out::size());
  CHECK_THROWS_WITH(engine.infer(std::span<const float>(raw_in), std::span<float>(short_out)),
                    Catch::Contains("not whole batches"));
  std::vector<pool_out> two(2);
  CHECK_THROWS_AS(engine.infer(std::span<const pool_in>(xs), std::span<pool_out>(two)), std::invalid_argument);
}

TEST_CASE("an engine runs a span of batches one after another, as a replicated engine runs them replicas at a time") {
  ipu::engine<pool_t, ipu_test::small_target<16>> engine{ipu::weights<pool_t>{}};
  std::vector<pool_in> xs;
  for (int i = 0; i < 4; ++i) xs.push_back(batch(i));
  std::vector<pool_out> ys(4);
  engine.infer(std::span<const pool_in>(xs), std::span<pool_out>(ys));
  CHECK(in_order(ys));
  CHECK(engine.profile().batches_measured() == 4);
  std::vector<pool_out> three(3);
  CHECK_THROWS_WITH(engine.infer(std::span<const pool_in>(xs), std::span<pool_out>(three)),
                    Catch::Contains("4 input batches and 3 outputs"));
  CHECK(engine.profile().batches_measured() == 4);  // refused before any batch ran
}

TEST_CASE("replicated engine: the batch arithmetic of a run") {
  constexpr ipu::batch_sizes b = replicated_pool::batches(10);
  STATIC_REQUIRE(b.per_step() == 6);
  STATIC_REQUIRE(b.per_call() == 60);
  CHECK(b.to_string() ==
        "micro-batch 2 x gradient accumulation 1 x replicas 3 = 6 samples per step, x 10 device iterations = 60 samples per call");
}

TEST_CASE("replicated run: a replica's error loses its iteration, cancels the infeed and aborts the outfeed") {
  replicated_pool engine{ipu::weights<pool_t>{}, {.check_finite = true}};
  ipu::infeed<pool_t, 8> in;
  ipu::outfeed<pool_t> out;
  for (int i = 0; i < 6; ++i) {
    pool_in x = batch(i);
    if (i == 4) x(1, 0, 0, 2) = std::numeric_limits<float>::quiet_NaN();
    in.push(std::move(x));
  }
  CHECK_THROWS_AS(engine.run(in, out, 10), ipu::non_finite_error);
  CHECK(in.cancelled());
  CHECK(out.pushed() == 3);  // the first iteration's; the second's (3, 4, 5) left the infeed
  CHECK(in_order(out.drain()));
}
