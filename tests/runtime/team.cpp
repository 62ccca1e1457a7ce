// ipu::runtime::team: every thread runs each phase, errors reach the caller, a worker that
// cannot start leaves no thread behind, and `run_items` runs every item once, each thread's
// own share first.
#include <ipu/runtime/team.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <ranges>
#include <set>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace {
/// Starts real threads for the first `good` workers, then fails as `std::thread` does when
/// the system has no thread left; counts the threads started and those that have finished.
struct failing_starter {
  int good = 0;
  std::atomic<int>* started = nullptr;
  std::atomic<int>* finished = nullptr;

  std::thread operator()(std::function<void()> body) const {
    if (started->load() == good)
      throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again), "thread");
    ++*started;
    return std::thread([body = std::move(body), finished = finished] {
      body();
      ++*finished;
    });
  }
};
}  // namespace

TEST_CASE("team: every thread runs each phase, the caller as thread 0") {
  ipu::runtime::team team(3);
  REQUIRE(team.size() == 3);
  for (int phase = 0; phase < 3; ++phase) {
    std::mutex mutex;
    std::multiset<unsigned> ran;
    team.run([&](unsigned k) {
      const std::lock_guard lock(mutex);
      ran.insert(k);
    });
    CHECK(ran == std::multiset<unsigned>{0, 1, 2});
  }
  CHECK_THROWS_WITH(team.run([](unsigned k) {
    if (k == 2) throw std::runtime_error("thread 2 failed");
  }),
                    "thread 2 failed");
}

TEST_CASE("team: a worker that cannot start stops and joins the others, then throws") {
  for (int good = 0; good < 4; ++good) {
    CAPTURE(good);
    std::atomic<int> started = 0, finished = 0;
    CHECK_THROWS_AS(ipu::runtime::team(5, failing_starter{good, &started, &finished}), std::system_error);
    CHECK(started == good);
    CHECK(finished == good);  // joined before the constructor threw
  }
}

TEST_CASE("team: a team whose workers all start runs as one started by std::thread") {
  std::atomic<int> started = 0, finished = 0;
  {
    ipu::runtime::team team(4, failing_starter{3, &started, &finished});
    std::atomic<unsigned> sum = 0;
    team.run([&](unsigned k) { sum += k; });
    CHECK(sum == 0 + 1 + 2 + 3);
  }
  CHECK(started == 3);
  CHECK(finished == 3);
}

TEST_CASE("team: a waiting thread polls within libgomp's counts, as long as a wake-up takes") {
  const std::uint32_t spins = ipu::detail::wake_spins();
  CHECK(spins >= ipu::detail::gomp_oversubscribed_spins);
  CHECK(spins <= ipu::detail::gomp_default_spins);
  CHECK(ipu::detail::wake_spins() == spins);  // measured once
}

TEST_CASE("team: phases after the workers have gone to sleep, and with more threads than the machine has") {
  const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
  // `a` has more threads than hardware threads: its waiting threads poll a hundred times,
  // then sleep. Between some phases both teams' workers sleep, so that phases wake them.
  ipu::runtime::team a(hardware + 1), b(3);
  for (int phase = 0; phase < 200; ++phase) {
    std::atomic<unsigned> sum_a = 0, sum_b = 0;
    a.run([&](unsigned k) { sum_a += k + 1; });
    b.run([&](unsigned k) { sum_b += k + 1; });
    REQUIRE(sum_a == (hardware + 1) * (hardware + 2) / 2);
    REQUIRE(sum_b == 6u);
    if (phase % 50 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

TEST_CASE("team: a thread's writes in one phase are visible to every thread in the next") {
  ipu::runtime::team team(3);
  std::vector<int> cells(3, 0);
  std::atomic<int> stale = 0;
  for (int phase = 1; phase <= 1000; ++phase) {
    team.run([&](unsigned k) { cells[k] = phase; });  // plain writes: the end of the phase orders them
    team.run([&](unsigned k) {
      if (cells[(k + 1) % 3] != phase) ++stale;
    });
  }
  CHECK(stale == 0);
}

namespace {
/// The items each thread ran, in the order it ran them, by `team::run_items`.
struct items_by_thread {
  std::mutex mutex;
  std::vector<std::pair<std::thread::id, std::vector<std::int64_t>>> threads;

  void ran(std::int64_t item) {
    const std::lock_guard lock(mutex);
    const auto id = std::this_thread::get_id();
    auto t = std::ranges::find(threads, id, [](const auto& p) { return p.first; });
    if (t == threads.end()) t = threads.insert(t, {id, {}});
    t->second.push_back(item);
  }
  /// Every item run, sorted.
  std::vector<std::int64_t> all() const {
    std::vector<std::int64_t> items;
    for (const auto& [id, list] : threads) items.insert(items.end(), list.begin(), list.end());
    std::ranges::sort(items);
    return items;
  }
};

/// Waits until `done()` holds, for at most 10 seconds; whether it held.
template <class F>
bool wait_for(F&& done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done())
    if (std::chrono::steady_clock::now() > deadline) return false;
  return true;
}
}  // namespace

TEST_CASE("team: run_items runs every item once, a single one on the calling thread") {
  for (const unsigned threads : {1u, 2u, 3u, 5u}) {
    ipu::runtime::team team(threads);
    for (const std::int64_t items : {0, 1, 2, 3, 4, 7, 64, 1001}) {
      CAPTURE(threads, items);
      items_by_thread ran;
      team.run_items(items, [&](std::int64_t i) { ran.ran(i); });
      std::vector<std::int64_t> expected(static_cast<std::size_t>(items));
      for (std::int64_t i = 0; i < items; ++i) expected[static_cast<std::size_t>(i)] = i;
      CHECK(ran.all() == expected);
      if (items == 1) CHECK(ran.threads.front().first == std::this_thread::get_id());
    }
  }
  ipu::runtime::team team(3);
  CHECK_THROWS_WITH(team.run_items(10, [](std::int64_t i) {
    if (i == 7) throw std::runtime_error("item 7 failed");
  }),
                    "item 7 failed");
}

TEST_CASE("team: run_items gives each thread its own share first, then the others' leftovers") {
  // 30 items on 3 threads: shares [0, 10), [10, 20), [20, 30). No first item ends before every
  // thread has taken one, so each thread's first is the first of its own share. Item 10 then
  // waits for all the others: the other two threads take the rest of its share.
  ipu::runtime::team team(3);
  for (int round = 0; round < 20; ++round) {
    items_by_thread ran;
    std::atomic<int> started = 0, finished = 0;
    std::atomic<bool> timed_out = false;
    team.run_items(30, [&](std::int64_t i) {
      ran.ran(i);
      if (i % 10 == 0) {
        ++started;
        if (!wait_for([&] { return started == 3; })) timed_out = true;
      }
      if (i == 10 && !wait_for([&] { return finished == 29; })) timed_out = true;
      ++finished;
    });
    REQUIRE_FALSE(timed_out);
    REQUIRE(ran.threads.size() == 3);
    std::set<std::int64_t> firsts;
    for (const auto& [id, list] : ran.threads) {
      firsts.insert(list.front());
      CHECK(std::ranges::is_sorted(list | std::views::filter([&](std::int64_t i) { return i / 10 == list.front() / 10; })));
      if (list.front() == 10) CHECK(list == std::vector<std::int64_t>{10});
    }
    CHECK(firsts == std::set<std::int64_t>{0, 10, 20});
  }
}
