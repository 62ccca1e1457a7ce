// ipu::channel: order, capacity, the try_ and timed calls, close, abort, cancel, stop tokens,
// exceptions from the caller's functions, reset, and destruction while in use.
#include <ipu/runtime/channel.hpp>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

namespace {
struct producer_failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Waits (bounded) until `done()`; the tests use it to let another thread reach a blocking call.
template <class F>
bool eventually(F done) {
  for (int i = 0; i < 2000 && !done(); ++i) std::this_thread::sleep_for(1ms);
  return done();
}
}  // namespace

TEST_CASE("channel: first in, first out up to its capacity") {
  ipu::channel<int, 3> c;
  STATIC_REQUIRE(decltype(c)::capacity == 3);
  CHECK(c.empty());
  CHECK(c.try_push(1));
  CHECK(c.try_push(2));
  CHECK(c.try_emplace([](int& slot) { slot = 3; }));
  CHECK(c.size() == 3);
  CHECK_FALSE(c.try_push(4));  // full
  int x = 0;
  CHECK(c.try_pop(x));
  CHECK(x == 1);
  CHECK(c.try_push(4));  // the freed slot is reused
  std::vector<int> seen;
  while (c.try_consume([&](const int& v) { seen.push_back(v); })) {}
  CHECK(seen == std::vector<int>{2, 3, 4});
  CHECK_FALSE(c.try_pop(x));  // empty
  CHECK(c.pushed() == 4);
  CHECK(c.popped() == 4);
}

TEST_CASE("channel: the timed calls give up after their timeout, not before") {
  ipu::channel<int, 1> c;
  REQUIRE(c.try_push(1));
  auto start = std::chrono::steady_clock::now();
  CHECK_FALSE(c.try_push_for(2, 20ms));
  CHECK(std::chrono::steady_clock::now() - start >= 20ms);
  start = std::chrono::steady_clock::now();
  CHECK_FALSE(c.try_emplace_until([](int& s) { s = 2; }, std::chrono::system_clock::now() + 20ms));
  CHECK(std::chrono::steady_clock::now() - start >= 15ms);  // system_clock may step; allow some slack

  int x = 0;
  REQUIRE(c.try_pop(x));
  start = std::chrono::steady_clock::now();
  CHECK_FALSE(c.try_pop_for(x, 20ms));
  CHECK(std::chrono::steady_clock::now() - start >= 20ms);
  CHECK_FALSE(c.try_consume_until([](const int&) {}, std::chrono::steady_clock::now() + 5ms));
  CHECK(c.pushed() == 1);
}

TEST_CASE("channel: the timed pushes take an rvalue, and leave it to the caller when no slot comes") {
  ipu::channel<std::vector<int>, 1> c;
  std::vector<int> a{1, 2, 3}, b{4, 5}, d{6};
  CHECK(c.try_push_until(std::move(a), std::chrono::steady_clock::now() + 10s));
  CHECK_FALSE(c.try_push_until(std::move(b), std::chrono::steady_clock::now() + 5ms));
  CHECK(b == std::vector<int>{4, 5});  // not taken: still the caller's
  CHECK_FALSE(c.try_push_for(std::move(d), 5ms));
  CHECK(d == std::vector<int>{6});
  std::vector<int> out;
  REQUIRE(c.try_pop(out));
  CHECK(out == std::vector<int>{1, 2, 3});
}

TEST_CASE("channel: a timed call succeeds as soon as the other side makes room") {
  ipu::channel<int, 1> c;
  REQUIRE(c.try_push(1));
  std::jthread consumer([&] {
    std::this_thread::sleep_for(10ms);
    int x = 0;
    c.pop(x);
  });
  CHECK(c.try_push_for(2, 10s));
  int x = 0;
  consumer.join();
  CHECK(c.try_pop(x));
  CHECK(x == 2);
}

TEST_CASE("channel: a timeout or a deadline beyond the clock's range waits as if there were none") {
  ipu::channel<int, 1> c;
  // Ends a wait that would never end, so that the test fails instead of hanging.
  std::jthread watchdog([&](std::stop_token stop) {
    const auto until = std::chrono::steady_clock::now() + 20s;
    while (!stop.stop_requested() && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(1ms);
    if (!stop.stop_requested()) c.cancel();
  });
  std::jthread producer([&] {
    for (int i = 1; i <= 4; ++i) {
      std::this_thread::sleep_for(50ms);  // the consumer most likely waits by now
      c.push(i);
    }
  });
  int x = 0;
  CHECK(c.try_pop_for(x, std::chrono::hours::max()));
  CHECK(x == 1);
  CHECK(c.try_pop_for(x, std::chrono::duration<double>(1e300)));
  CHECK(x == 2);
  CHECK(c.try_pop_until(x, std::chrono::time_point<std::chrono::system_clock, std::chrono::hours>::max()));
  CHECK(x == 3);
  CHECK(c.try_consume_until([&](const int& v) { x = v; },
                            std::chrono::time_point<std::chrono::steady_clock, std::chrono::hours>::max()));
  CHECK(x == 4);
  producer.join();

  // The other end of the range: no wait at all.
  const auto start = std::chrono::steady_clock::now();
  CHECK_FALSE(c.try_pop_for(x, std::chrono::hours::min()));
  CHECK_FALSE(c.try_pop_until(x, std::chrono::time_point<std::chrono::system_clock, std::chrono::hours>::min()));
  CHECK_FALSE(c.try_pop_until(x, std::chrono::steady_clock::time_point::min()));
  CHECK_FALSE(c.try_pop_for(x, std::chrono::duration<double>(-1e300)));
  REQUIRE(c.try_push(5));
  CHECK_FALSE(c.try_push_for(6, std::chrono::hours::min()));
  CHECK(std::chrono::steady_clock::now() - start < 5s);
  CHECK_FALSE(c.cancelled());  // the watchdog did not have to step in
}

TEST_CASE("channel: close ends the stream after every element pushed before it") {
  ipu::channel<int, 4> c;
  for (int i = 0; i < 3; ++i) REQUIRE(c.push(i));
  c.close();
  CHECK(c.closed());
  CHECK_THROWS_AS(c.push(9), ipu::channel_error);
  std::vector<int> seen;
  int x = 0;
  while (c.pop(x)) seen.push_back(x);
  CHECK(seen == std::vector<int>{0, 1, 2});
  CHECK_FALSE(c.pop(x));  // stays ended
}

TEST_CASE("channel: close wakes a consumer waiting on an empty channel") {
  ipu::channel<int, 2> c;
  std::atomic<int> result = -1;
  std::jthread consumer([&] {
    int x = 0;
    result = c.pop(x) ? 1 : 0;
  });
  std::this_thread::sleep_for(20ms);  // the consumer is most likely parked by now
  c.close();
  consumer.join();
  CHECK(result == 0);
}

TEST_CASE("channel: abort delivers the elements before it, then the producer's exception") {
  ipu::channel<int, 4> c;
  c.push(1);
  c.push(2);
  try {
    throw producer_failure("disk read failed");
  } catch (...) {
    c.abort(std::current_exception());
  }
  CHECK(c.closed());
  int x = 0;
  CHECK(c.pop(x));
  CHECK(x == 1);
  CHECK(c.pop(x));
  CHECK(x == 2);
  CHECK_THROWS_WITH(c.pop(x), "disk read failed");
  CHECK_THROWS_AS(c.pop(x), producer_failure);  // the error stays
  CHECK_THROWS_AS(c.push(3), ipu::channel_error);
  CHECK_THROWS_AS(c.abort(nullptr), std::invalid_argument);
}

TEST_CASE("channel: cancel releases a producer waiting for room") {
  ipu::channel<int, 1> c;
  REQUIRE(c.push(1));
  std::atomic<int> result = -1;
  std::jthread producer([&] { result = c.push(2) ? 1 : 0; });
  std::this_thread::sleep_for(20ms);
  c.cancel();
  producer.join();
  CHECK(result == 0);
  CHECK(c.cancelled());
  CHECK_FALSE(c.try_push(3));
  int x = 0;
  CHECK_FALSE(c.pop(x));  // the consumer reads no more
  CHECK(c.pushed() == 1);
}

TEST_CASE("channel: a stop request ends a blocking call with false") {
  ipu::channel<int, 1> c;
  REQUIRE(c.push(1));
  std::atomic<int> result = -1;
  {
    std::jthread producer([&](std::stop_token stop) { result = c.push(2, stop) ? 1 : 0; });
    std::this_thread::sleep_for(20ms);
  }  // ~jthread requests stop, then joins
  CHECK(result == 0);
  CHECK(c.size() == 1);

  ipu::channel<int, 1> empty;
  std::stop_source source;
  source.request_stop();
  int x = 0;
  CHECK_FALSE(empty.pop(x, source.get_token()));
}

TEST_CASE("channel: an exception from the caller's function leaves the stream unchanged") {
  ipu::channel<int, 2> c;
  CHECK_THROWS_AS(c.emplace([](int& slot) {
    slot = 7;
    throw std::runtime_error("conversion failed");
  }),
                  std::runtime_error);
  CHECK(c.pushed() == 0);  // nothing published
  REQUIRE(c.push(1));
  CHECK_THROWS_AS(c.consume([](const int&) { throw std::runtime_error("reader failed"); }), std::runtime_error);
  CHECK(c.size() == 1);  // the element stays
  int x = 0;
  CHECK(c.pop(x));
  CHECK(x == 1);
}

TEST_CASE("channel: push by value moves, pop copies and leaves the slot usable") {
  ipu::channel<std::vector<int>, 2> c;
  std::vector<int> v{1, 2, 3};
  REQUIRE(c.push(std::move(v)));
  REQUIRE(c.push(std::vector<int>{4}));
  std::vector<int> out;
  REQUIRE(c.pop(out));
  CHECK(out == std::vector<int>{1, 2, 3});
  REQUIRE(c.emplace([](std::vector<int>& slot) { slot.assign({5, 6}); }));
  REQUIRE(c.pop(out));
  CHECK(out == std::vector<int>{4});
  REQUIRE(c.pop(out));
  CHECK(out == std::vector<int>{5, 6});
}

TEST_CASE("channel: reset reopens a finished stream, and refuses while in use") {
  ipu::channel<int, 2> c;
  c.push(1);
  c.close();
  c.reset();
  CHECK_FALSE(c.closed());
  CHECK(c.empty());
  CHECK(c.pushed() == 0);
  REQUIRE(c.push(5));
  int x = 0;
  REQUIRE(c.pop(x));
  CHECK(x == 5);
  {
    const ipu::channel_use use = c.attach();
    CHECK_THROWS_AS(c.reset(), ipu::channel_error);
  }
  CHECK_NOTHROW(c.reset());
}

TEST_CASE("channel: destroying a channel a thread waits on is diagnosed in that thread") {
  auto c = std::make_unique<ipu::channel<int, 1>>();
  std::atomic<bool> attached = false;
  std::string what;
  std::jthread consumer([&, raw = c.get()] {
    // Attached first, so the channel cannot go before this thread is inside pop() either.
    const ipu::channel_use use = raw->attach();
    attached = true;
    int x = 0;
    try {
      raw->pop(x);  // waits: nothing is ever pushed
      what = "returned";
    } catch (const ipu::channel_error& e) {
      what = e.what();
    }
  });
  REQUIRE(eventually([&] { return attached.load(); }));
  std::this_thread::sleep_for(20ms);  // most likely parked in pop() by now
  c.reset();                          // wakes the consumer, waits until it has let go
  consumer.join();
  CHECK(what.find("destroyed while in use") != std::string::npos);
}

TEST_CASE("channel: destroying a channel an attached user holds waits for it and is diagnosed") {
  auto c = std::make_unique<ipu::channel<int, 4>>();
  std::atomic<bool> attached = false;
  std::string what;
  std::jthread user([&, raw = c.get()] {
    const ipu::channel_use use = raw->attach();  // as engine::run holds its infeed
    attached = true;
    try {
      for (;;) {  // keeps working with the channel until it learns it is being destroyed
        raw->try_push(1);
        std::this_thread::sleep_for(1ms);
      }
    } catch (const ipu::channel_error& e) {
      what = e.what();
    }
  });
  REQUIRE(eventually([&] { return attached.load(); }));
  c.reset();
  user.join();
  CHECK(what.find("destroyed while in use") != std::string::npos);
}

TEST_CASE("channel: destroying a channel during a call that is not waiting waits for the call") {
  auto c = std::make_unique<ipu::channel<std::vector<int>, 1>>();
  std::atomic<bool> inside = false, destroying = false;
  // The call holds the slot while the destructor runs: without waiting for it, the destructor
  // would free the slot under it (AddressSanitizer reports the use after free).
  const auto hold = [&](const std::vector<int>& slot) {
    inside = true;
    while (!destroying) std::this_thread::yield();
    std::this_thread::sleep_for(20ms);  // time enough for a destructor that does not wait
    return std::accumulate(slot.begin(), slot.end(), 0);
  };
  int sum = 0;
  bool done = false;
  std::jthread user;
  SECTION("the consumer's") {
    REQUIRE(c->push(std::vector<int>(1000, 7)));
    user = std::jthread([&, raw = c.get()] { done = raw->consume([&](const std::vector<int>& v) { sum = hold(v); }); });
  }
  SECTION("the producer's") {
    user = std::jthread([&, raw = c.get()] {
      done = raw->emplace([&](std::vector<int>& v) {
        v.assign(1000, 7);
        sum = hold(v);
      });
    });
  }
  REQUIRE(eventually([&] { return inside.load(); }));
  destroying = true;
  c.reset();  // waits until the call has returned
  user.join();
  CHECK(done);
  CHECK(sum == 7000);
}

TEST_CASE("channel: a channel nobody uses is destroyed at once, full or not") {
  auto c = std::make_unique<ipu::channel<std::vector<float>, 2>>();
  c->push(std::vector<float>(1000, 1.0f));
  c.reset();
  SUCCEED("destroyed without waiting");
}
