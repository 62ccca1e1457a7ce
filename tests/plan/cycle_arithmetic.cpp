// The cycle model's integer arithmetic at sizes where bytes x clock x tiles overflows 64 bits:
// a model too large for its target must still reach the fit check and its readable error.
#include <ipu/ipu.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <random>

namespace {
__extension__ using u128 = unsigned __int128;   // the reference: a product that cannot overflow

std::int64_t reference_mul_div_up(std::int64_t a, std::int64_t b, std::int64_t c) {
  const u128 product = static_cast<u128>(a) * static_cast<u128>(b);
  return static_cast<std::int64_t>((product + static_cast<u128>(c) - 1) / static_cast<u128>(c));
}
}  // namespace

TEST_CASE("mul_div_up is ceil(a * b / c) where a * b overflows 64 bits") {
  using ipu::detail::mul_div_up;
  constexpr std::int64_t mk2_clock_tiles = ipu::mk2::chip.clock_hz * ipu::mk2::chip.tiles;
  CHECK(mul_div_up(0, mk2_clock_tiles, ipu::mk2::chip.exchange_bytes_per_s) == 0);
  CHECK(mul_div_up(1, 1, 1) == 1);
  CHECK(mul_div_up(7, 3, 2) == 11);
  CHECK(mul_div_up(6, 3, 2) == 9);

  std::mt19937_64 rng(7);
  for (int i = 0; i < 20000; ++i) {
    // c below 2^54, b below 2^50 (bandwidths, clock x tiles), a up to 2^40 (bytes).
    const std::int64_t c = static_cast<std::int64_t>(rng() >> (10 + rng() % 53)) + 1;
    const std::int64_t b = static_cast<std::int64_t>(rng() >> (14 + rng() % 50));
    const std::int64_t a = static_cast<std::int64_t>(rng() >> (24 + rng() % 40));
    INFO(a << " * " << b << " / " << c);
    REQUIRE(mul_div_up(a, b, c) == reference_mul_div_up(a, b, c));
  }
}

TEST_CASE("exchange cycles of a buffer far larger than a tile are exact") {
  // 64 MiB into one tile of a Mk2: 2.5e20 before division by the bandwidth.
  constexpr std::int64_t bytes = std::int64_t{64} << 20;
  for (const ipu::chip_spec& chip : {ipu::mk1::chip, ipu::mk2::chip, ipu::bow::chip}) {
    const std::int64_t expected =
        reference_mul_div_up(bytes, chip.clock_hz * chip.tiles, chip.exchange_bytes_per_s);
    CHECK(ipu::detail::exchange_cycles(bytes, chip) == expected);
  }
}

TEST_CASE("a batch of 64 ImageNet images is planned to a non-fit, not an overflow") {
  // The convolution's output alone is 1.6 GB of f32, and its steps' buffers reach hundreds of
  // MiB; the plan must still complete and say that the model does not fit
  // (compile_fail/plan_large_model_is_a_fit_error.cpp shows the error that require_fit gives).
  using big_t = decltype(ipu::input<ipu::f32, 64, 224, 224, 3> | ipu::nn::conv<128, 3>
                         | ipu::nn::batch_norm | ipu::nn::relu | ipu::nn::global_avg_pool
                         | ipu::nn::dense<10>);
  STATIC_REQUIRE_FALSE(ipu::fits_v<big_t, ipu::mk2>);
}
