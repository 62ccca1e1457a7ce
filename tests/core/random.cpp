// The weights' random bits: ipu's MT19937-64 gives the standard library's sequence.

#include <ipu/ipu.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <random>

TEST_CASE("MT19937-64 gives std::mt19937_64's sequence for every seed tried") {
  for (const std::uint64_t seed : {std::uint64_t{0}, std::uint64_t{5489}, std::uint64_t{42}, ~std::uint64_t{0},
                                   std::uint64_t{0x9E3779B97F4A7C15}}) {
    ipu::detail::mt19937_64 ours(seed);
    std::mt19937_64 reference(seed);
    int mismatches = 0;
    for (int i = 0; i < 5000; ++i) mismatches += ours() != reference() ? 1 : 0;  // past the 312-word state, many times
    INFO("seed " << seed);
    CHECK(mismatches == 0);
  }
}

TEST_CASE("MT19937-64's 10000th output for seed 5489 is the value the standard requires") {
  ipu::detail::mt19937_64 g(5489);
  for (int i = 1; i < 10000; ++i) g();
  CHECK(g() == 9981545732273789042ull);  // [rand.predef]
}
