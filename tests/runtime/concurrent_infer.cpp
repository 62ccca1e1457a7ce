// Several threads calling infer on one engine: the engine runs their batches one at a time, so
// each call gets its own batch's result, bit for bit as when it runs alone (the ThreadSanitizer
// and AddressSanitizer configurations run this too).

#include <catch2/catch.hpp>

#include "support/executor_support.hpp"

#include <ipu/ipu.hpp>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace {
using net = decltype(ipu_test::grouped_net<ipu::f32>);
using target = ipu_test::small_target<16>;
}  // namespace

TEST_CASE("threads calling infer on one engine each get their own batch's result") {
  const auto mode = GENERATE(ipu::execution_mode::fast, ipu::execution_mode::faithful);
  INFO(ipu::name_of(mode));
  ipu::engine<net, target> e{ipu::weights<net>::random(3), {mode, 2}};
  constexpr int callers = 4, calls = 12;
  std::vector<ipu::input_tensor_t<net>> inputs;
  std::vector<ipu::output_tensor_t<net>> expected;
  for (int k = 0; k < callers; ++k) {
    inputs.push_back(ipu_test::random_input<net>(static_cast<std::uint64_t>(100 + k)));
    expected.push_back(e.infer(inputs.back()));
  }
  REQUIRE_FALSE(ipu_test::same_bits(expected[0], expected[1]));  // the callers' results differ
  std::atomic<int> wrong{0}, done{0};
  std::vector<std::thread> threads;
  for (int k = 0; k < callers; ++k)
    threads.emplace_back([&, k] {
      for (int i = 0; i < calls; ++i) {
        const auto y = e.infer(inputs[static_cast<std::size_t>(k)]);
        if (!ipu_test::same_bits(y, expected[static_cast<std::size_t>(k)])) ++wrong;
        ++done;
      }
    });
  for (std::thread& t : threads) t.join();
  CHECK(done == callers * calls);
  CHECK(wrong == 0);
  CHECK(e.profile().batches_measured() == callers * (calls + 1));
}
