// ipu::runtime::team: every thread runs each phase, errors reach the caller, and a worker
// that cannot start leaves no thread behind.
#include <ipu/runtime/team.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
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
