// Chip constants against the published totals they were derived from.
#include <ipu/target/chip.hpp>
#include <ipu/target/options.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <type_traits>

namespace {
struct tiny {  // a user-defined target: an IPU Model-style Mk2 with 16 tiles
  static constexpr ipu::chip_spec chip = ipu::with_tiles(ipu::mk2::chip, 16);
  static constexpr int ipus = 1;
  static constexpr const char* name = "tiny";
};
}  // namespace

TEST_CASE("chip constants reproduce the published totals", "[target]") {
  // Mk1: 304 MiB of SRAM; 124.5 TFLOPS f16.
  STATIC_REQUIRE(ipu::mk1::chip.bytes_per_ipu() == 304LL * 1024 * 1024);
  constexpr double mk1_tflops = 2.0 * ipu::mk1::chip.tiles * ipu::mk1::chip.f16_macs_per_cycle *
                                static_cast<double>(ipu::mk1::chip.clock_hz) / 1e12;
  REQUIRE(mk1_tflops == Approx(124.5).epsilon(0.001));
  // Mk2: "tiles only have 638976 bytes", ~897 MiB in all, 250 TFLOPS f16, 62.5 TFLOPS f32.
  STATIC_REQUIRE(ipu::mk2::chip.bytes_per_tile == 638'976);
  REQUIRE(static_cast<double>(ipu::mk2::chip.bytes_per_ipu()) / (1024.0 * 1024.0) == Approx(897.0).epsilon(0.001));
  constexpr double mk2_f16 = 2.0 * ipu::mk2::chip.tiles * ipu::mk2::chip.f16_macs_per_cycle *
                             static_cast<double>(ipu::mk2::chip.clock_hz) / 1e12;
  constexpr double mk2_f32 = 2.0 * ipu::mk2::chip.tiles * ipu::mk2::chip.f32_macs_per_cycle *
                             static_cast<double>(ipu::mk2::chip.clock_hz) / 1e12;
  REQUIRE(mk2_f16 == Approx(250.0).epsilon(0.01));
  REQUIRE(mk2_f32 == Approx(62.5).epsilon(0.01));
  STATIC_REQUIRE(ipu::bow::chip.clock_hz == 1'850'000'000);
  STATIC_REQUIRE(ipu::bow::chip.bytes_per_tile == ipu::mk2::chip.bytes_per_tile);
  STATIC_REQUIRE(ipu::mk2::chip.grain(2) == 4);
  STATIC_REQUIRE(ipu::mk2::chip.grain(4) == 2);
}

TEST_CASE("systems and user-defined targets", "[target]") {
  using m2000 = ipu::system<ipu::mk2, 4>;
  STATIC_REQUIRE(ipu::Target<m2000>);
  STATIC_REQUIRE(m2000::ipus == 4);
  STATIC_REQUIRE(m2000::chip == ipu::mk2::chip);
  STATIC_REQUIRE(ipu::Target<ipu::mk1>);
  STATIC_REQUIRE(ipu::Target<tiny>);
  STATIC_REQUIRE(tiny::chip.tiles == 16);
  STATIC_REQUIRE(!ipu::Target<int>);
}

TEST_CASE("options: a structural type with PopLibs' defaults", "[target]") {
  constexpr ipu::options defaults{};
  STATIC_REQUIRE(defaults.available_memory_proportion == ipu::ratio{3, 5});
  STATIC_REQUIRE(defaults.partials == ipu::dtype::f32);
  STATIC_REQUIRE(defaults.io_tiles == 0);
  constexpr ipu::options seed{.available_memory_proportion = {3, 10}};
  STATIC_REQUIRE(seed.available_memory_proportion.of(ipu::mk2::chip.bytes_per_tile) == 191'692);
  STATIC_REQUIRE(seed.available_memory_proportion.valid_proportion());
  STATIC_REQUIRE(!ipu::ratio{3, 0}.valid_proportion());
  STATIC_REQUIRE(!ipu::ratio{6, 5}.valid_proportion());
  // usable as a template argument
  STATIC_REQUIRE([]<ipu::options O>() { return O.available_memory_proportion.num; }.template operator()<seed>() == 3);
}

TEST_CASE("replicated targets: the replicas, and one replica's target", "[target]") {
  using four = ipu::replicated<ipu::system<ipu::mk2, 4>, 2>;
  STATIC_REQUIRE(four::ipus == 2 && ipu::replicas_v<four> == 2 && ipu::replicas_v<ipu::mk2> == 1);
  // One replica is the system's share: the same chip, IPUs and name, so the same plan and types.
  STATIC_REQUIRE(std::is_same_v<ipu::replica_target_t<four>, ipu::system<ipu::mk2, 2>>);
  STATIC_REQUIRE(std::is_same_v<ipu::replica_target_t<ipu::replicated<ipu::system<ipu::mk2, 4>, 4>>, ipu::mk2>);
  STATIC_REQUIRE(std::is_same_v<ipu::replica_target_t<ipu::mk2>, ipu::mk2>);
  using replica = ipu::replica_target_t<four>;
  STATIC_REQUIRE(replica::chip == four::chip && replica::ipus == four::ipus);
  CHECK(std::string(replica::name) == four::name);
}
