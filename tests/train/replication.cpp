// Data parallelism (ipu/train/replication.hpp, ipu/train/replicated.hpp): replicas on threads
// of their own train as one trainer on all their samples; they keep the same weights bit for
// bit, over a pipeline too; a replica group sums in rank order and stops waiting on abort.

#include <catch2/catch.hpp>

#include "train/train_support.hpp"

#include <ipu/ipu.hpp>

#include <algorithm>
#include <cstdint>
#include <span>
#include <thread>
#include <type_traits>
#include <vector>

namespace nn = ipu::nn;

namespace replication_tests {

using small = ipu_test::small_target<16>;

using replica_net = std::remove_cvref_t<decltype(ipu_test::plain_net<2>)>;
using whole_net = std::remove_cvref_t<decltype(ipu_test::plain_net<4>)>;

template <class A, class B>
bool same_bits(const A& a, const B& b) {
  for (std::size_t l = 0; l < a.size(); ++l)
    for (const ipu::weight_tensor& t : a[l].tensors())
      if (!std::ranges::equal(a[l][t.name], b[l][t.name])) return false;
  return true;
}

TEST_CASE("Two replicas of micro-batch 2 train as one trainer of batch 4, and keep the same weights") {
  using two_replicas = ipu::replicated<ipu::system<small, 2>, 2>;
  static_assert(two_replicas::ipus == 1 && ipu::replicas_v<two_replicas> == 2 && ipu::replicas_v<small> == 1);
  constexpr ipu::train_options opts{.optimizer = ipu::sgd{.learning_rate = 0.05, .momentum = 0.9}, .gradient_accumulation = 2};
  const auto w = ipu::weights<replica_net>::random(3);
  ipu::replicated_trainer<replica_net, two_replicas, opts> replicated(w, {.threads = 2});
  using replicated_t = decltype(replicated);
  static_assert(replicated_t::batch == 8 && replicated_t::replica_batch == 4 && replicated_t::micro_batch == 2);
  // The same samples in one trainer: micro-batches of 4, each two of the replicas' micro-batches.
  ipu::trainer<whole_net, small, opts> whole(ipu_test::weights_as<whole_net>(w));
  constexpr std::size_t sample = 6 * 6 * 3;
  for (int step = 0; step < 3; ++step) {
    const std::vector<float> x = ipu_test::normal_values(8 * sample, 50 + static_cast<std::uint64_t>(step));
    const std::vector<std::int32_t> y = ipu_test::random_labels(8, 4, 60 + static_cast<std::uint64_t>(step));
    // Replica r's micro-batch m is samples 4r + 2m, 4r + 2m + 1; the whole trainer's
    // micro-batch m gathers both replicas' m-th.
    std::vector<float> xw(x.size());
    std::vector<std::int32_t> yw(y.size());
    for (std::size_t m = 0; m < 2; ++m)
      for (std::size_t r = 0; r < 2; ++r)
        for (std::size_t i = 0; i < 2; ++i) {
          const std::size_t from = 4 * r + 2 * m + i, to = 4 * m + 2 * r + i;
          std::copy_n(x.begin() + static_cast<std::ptrdiff_t>(from * sample), sample, xw.begin() + static_cast<std::ptrdiff_t>(to * sample));
          yw[to] = y[from];
        }
    const float lr = replicated.step(x, y), lw = whole.step(xw, yw);
    CHECK(lr == Approx(lw).epsilon(1e-5));
  }
  CHECK(same_bits(replicated.replica(0).weights(), replicated.replica(1).weights()));
  for (std::size_t l = 0; l < w.size(); ++l)
    for (const ipu::weight_tensor& t : w[l].tensors()) {
      const std::span<const float> a = replicated.weights()[l][t.name], b = whole.weights()[l][t.name];
      for (std::size_t i = 0; i < a.size(); ++i) REQUIRE(a[i] == Approx(b[i]).margin(1e-6).epsilon(1e-4));
    }
  CHECK(replicated.steps() == 3);
  CHECK(replicated.batches().to_string() == "micro-batch 2 x gradient accumulation 2 x replicas 2 = 8 samples per step");
  CHECK(replicated.replica(1).batches() == ipu::batch_sizes{2, 2, 2, 1});
  CHECK(ipu::batch_sizes{4, 8, 2, 10}.to_string() ==
        "micro-batch 4 x gradient accumulation 8 x replicas 2 = 64 samples per step, x 10 device iterations = 640 samples per call");
}

// Two stages, pipelined, in each of two replicas: the bits of the sequential schedule's replicas.
using two_stage = std::remove_cvref_t<decltype(ipu::input<float, 2, 6, 6, 3>
                                               | ipu::on<0>(nn::conv<8, 3> | nn::batch_norm | nn::relu)
                                               | ipu::on<1>(nn::global_avg_pool | nn::dropout<0.25> | nn::dense<3>))>;

constexpr ipu::train_options sequential{.optimizer = ipu::adam{.learning_rate = 0.01}, .gradient_accumulation = 4};
constexpr ipu::train_options grouped = [] {
  ipu::train_options o = sequential;
  o.pipeline = ipu::pipeline_schedule::grouped;
  return o;
}();

TEST_CASE("Replicas of a grouped pipeline give the bits of replicas of the sequential schedule") {
  using target = ipu::replicated<ipu::system<small, 4>, 2>;  // two replicas of two IPUs
  const auto w = ipu::weights<two_stage>::random(9);
  ipu::replicated_trainer<two_stage, target, grouped> p(w, {.threads = 2, .seed = 4});
  ipu::replicated_trainer<two_stage, target, sequential> s(w, {.threads = 2, .seed = 4});
  static_assert(decltype(p)::replica_type::pipelined && decltype(p)::batch == 16);
  for (int step = 0; step < 2; ++step) {
    const std::vector<float> x = ipu_test::normal_values(16 * 6 * 6 * 3, 70 + static_cast<std::uint64_t>(step));
    const std::vector<std::int32_t> y = ipu_test::random_labels(16, 3, 80 + static_cast<std::uint64_t>(step));
    REQUIRE(p.step(x, y) == s.step(x, y));
  }
  for (int r = 0; r < 2; ++r) CHECK(same_bits(p.replica(r).weights(), s.replica(r).weights()));
  CHECK(same_bits(p.replica(0).gradients(), p.replica(1).gradients()));
}

TEST_CASE("A replicated trainer refuses a bad step before any replica runs, and trains on") {
  using two_replicas = ipu::replicated<ipu::system<small, 2>, 2>;
  ipu::replicated_trainer<replica_net, two_replicas> t(ipu::weights<replica_net>::random(1));
  const std::vector<float> x(4 * 6 * 6 * 3, 0.25f);
  std::vector<std::int32_t> y(4, 1);
  CHECK_THROWS_WITH(t.step(std::span(x).first(2 * 6 * 6 * 3), y), Catch::Contains("2 replicas take 216 each"));
  y[3] = 9;
  CHECK_THROWS_WITH(t.step(x, y), Catch::Contains("label 3 is 9"));
  y[3] = 0;
  CHECK(std::isfinite(t.step(x, y)));
  CHECK(t.steps() == 1);
}

TEST_CASE("A replica group sums in rank order on every replica, and an abort wakes the waiting ones") {
  ipu::replica_group group(3);
  std::vector<std::vector<float>> values{{1.0f, 1e8f}, {2.0f, -1e8f}, {4.0f, 1.0f}};
  {
    std::vector<std::jthread> threads;
    for (int r = 0; r < 3; ++r) threads.emplace_back([&, r] { group.member(r).sum(values[static_cast<std::size_t>(r)]); });
  }
  for (const auto& v : values) {
    CHECK(v[0] == 7.0f);
    CHECK(v[1] == (1e8f + -1e8f) + 1.0f);  // rank order: 1, not (-1e8 + 1) + 1e8 = 0
  }
  std::vector<double> waiting{1.0};
  bool woken = false;  // Catch's assertions stay on this thread
  std::jthread waiter([&] {
    try {
      group.member(0).sum(waiting);
    } catch (const ipu::replica_group_aborted&) {
      woken = true;
    }
  });
  group.abort();
  waiter.join();
  CHECK(woken);
  CHECK(group.aborted());
  CHECK_THROWS_WITH(ipu::replica_group(0), Catch::Contains("at least 1"));
}

}  // namespace replication_tests
